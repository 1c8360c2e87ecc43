"""Bulk actions on runs chosen by a filter: cancel, and wake (redrive) dead-lettered runs.

Guard rails, as operators of other engines learnt them: an empty filter is refused (it
would select every live run), the count and a sample come first, then each run is acted on
in its OWN transaction that locks the run row, re-checks that the run still matches, acts,
and writes an audit row. A run that ended meanwhile or stopped matching is skipped; one
another session holds is left for a rerun. Batches only pace the progress line and the
time budget.

- cancel: the run row, waits and hooks and `run_cancelled` through the runtime store's own
  cancel (the shared event writer), plus the run's unlocked queue jobs, in one transaction;
- wake: the run's spent graphile jobs get their deliveries back (`reschedule_jobs`: attempts
  0, due now, payload untouched).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg import errors as pgerrors
from psycopg.rows import dict_row

from wfctl import sql
from wfctl.durations import parse_duration
from wfctl.errors import RefusedError, UsageError
from wfctl.ops import audit, flight
from wfctl.runtime.store import Store
from wfctl.world.model import World
from wfctl.world.queue_locks import GRAPHILE_LOCK_RESET

LIVE = ("pending", "running")
KEYS = ("workflow", "status", "older-than", "newer-than", "error-code", "error")


@dataclass(frozen=True)
class RunFilter:
    """The terms of `--where KEY=VALUE` (repeatable; terms AND together)."""

    workflow: str | None = None  # a LIKE pattern (from a glob)
    statuses: tuple[str, ...] = ()
    older_than: timedelta | None = None
    newer_than: timedelta | None = None
    error_code: str | None = None
    error: str | None = None  # wake only: substring of the spent jobs' last_error
    text: tuple[str, ...] = ()  # the terms as typed, for the audit log

    @property
    def empty(self) -> bool:
        return not self.text

    def params(self, run_ids: Sequence[str] | None = None) -> dict[str, Any]:
        return {
            "run_ids": list(run_ids) if run_ids is not None else None,
            "statuses": list(self.statuses) or None,
            "workflow": self.workflow,
            "older_than": self.older_than,
            "newer_than": self.newer_than,
            "error_code": self.error_code,
            "error": self.error,
        }


def parse_where(terms: Sequence[str], *, allow_error: bool) -> RunFilter:
    """`workflow=checkout*`, `status=running`, `older-than=2h`, `newer-than=1d`,
    `error-code=USER_ERROR`, and for wake `error=ECONNREFUSED`. Bad terms are usage errors."""
    values: dict[str, Any] = {}
    statuses: list[str] = []
    typed: list[str] = []
    for term in terms:
        key, sep, value = term.partition("=")
        key, value = key.strip().lower().replace("_", "-"), value.strip()
        if not sep or not value:
            raise UsageError(f"--where {term!r}: expected KEY=VALUE", hint=_keys_hint(allow_error))
        if key not in KEYS or (key == "error" and not allow_error):
            raise UsageError(f"--where: unknown key {key!r}", hint=_keys_hint(allow_error))
        typed.append(f"{key}={value}")
        if key == "status":
            for status in value.split(","):
                if status not in LIVE:
                    raise UsageError(
                        f"--where status={status}: only live runs can be acted on",
                        hint="use status=pending or status=running",
                    )
                statuses.append(status)
        elif key in ("older-than", "newer-than"):
            values[key.replace("-", "_")] = parse_duration(value, f"--where {key}")
        elif key == "workflow":
            values["workflow"] = _like(value)
        else:
            values[key.replace("-", "_")] = value
    return RunFilter(statuses=tuple(statuses), text=tuple(typed), **values)


def _keys_hint(allow_error: bool) -> str:
    keys = [k for k in KEYS if allow_error or k != "error"]
    return "keys: " + ", ".join(keys) + " (e.g. --where workflow=checkout* --where older-than=2h)"


def _like(glob: str) -> str:
    """A shell-style glob (`*`, `?`) as a LIKE pattern, LIKE's own wildcards escaped."""
    escaped = glob.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped.replace("*", "%").replace("?", "_")


@dataclass(frozen=True)
class Selected:
    run_id: str
    status: str
    name: str
    created_at: datetime
    detail: str = ""


@dataclass
class Outcome:
    run_id: str
    outcome: str  # cancelled | redriven | ended | no_longer_matches | busy | refused
    event_id: str | None = None
    audit_id: int | None = None
    detail: str = ""


@dataclass
class BulkReport:
    action: str
    applied: bool
    filter: tuple[str, ...]
    matched: list[Selected]
    outcomes: list[Outcome] = field(default_factory=list)
    stopped: str = ""
    seconds: float = 0.0

    @property
    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for o in self.outcomes:
            out[o.outcome] = out.get(o.outcome, 0) + 1
        return out

    @property
    def complete(self) -> bool:
        """Every matched run handled (acted on, or found ended / no longer matching)."""
        return not self.stopped and not any(o.outcome in ("busy", "refused") for o in self.outcomes)

    def as_dict(self, sample: int) -> dict[str, Any]:
        return {
            "action": self.action,
            "applied": self.applied,
            "complete": self.complete,
            "stopped": self.stopped or None,
            "filter": list(self.filter),
            "matched": len(self.matched),
            "sample": [
                {
                    "run_id": s.run_id,
                    "status": s.status,
                    "workflow": s.name,
                    "created_at": s.created_at.isoformat(),
                    "detail": s.detail or None,
                }
                for s in self.matched[:sample]
            ],
            "counts": self.counts,
            "runs": [vars(o) for o in self.outcomes],
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class BulkOptions:
    batch: int = 100
    max_time: timedelta | None = None
    job_prefix: str = "workflow_"

    @property
    def task(self) -> str:
        return f"{self.job_prefix}flows"


class Action:
    """One bulk action: how to select runs, and what to do to one run under its lock."""

    name = ""
    select_sql = ""

    def params(self, flt: RunFilter, options: BulkOptions, run_ids: Sequence[str] | None) -> Any:
        return {**flt.params(run_ids), "task": options.task}

    def detail(self, row: dict[str, Any]) -> str:
        return ""

    def act(self, ctx: _RunContext, row: dict[str, Any]) -> Outcome:
        raise NotImplementedError


@dataclass
class _RunContext:
    conn: psycopg.Connection[Any]
    world: World
    store: Store
    options: BulkOptions
    reason: str
    flt: RunFilter


def select(
    conn: psycopg.Connection[Any],
    action: Action,
    flt: RunFilter,
    options: BulkOptions,
    run_ids: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(sql.load(action.select_sql), action.params(flt, options, run_ids))
        return rows.fetchall()


def matched(
    conn: psycopg.Connection[Any], action: Action, flt: RunFilter, options: BulkOptions
) -> list[Selected]:
    """Every run the filter selects now (the count and the sample shown before acting)."""
    if flt.empty:
        raise UsageError(
            f"refusing an empty filter: it would {action.name} every live run",
            hint="say what you mean, e.g. --where status=running (see --help for the keys)",
        )
    return [
        Selected(r["id"], r["status"], r["name"], r["created_at"], action.detail(r))
        for r in select(conn, action, flt, options)
    ]


def apply(
    conn: psycopg.Connection[Any],
    world: World,
    action: Action,
    flt: RunFilter,
    options: BulkOptions,
    runs: list[Selected],
    *,
    reason: str,
    on_batch: Callable[[BulkReport], None] | None = None,
) -> BulkReport:
    """Act on `runs`, each in its own guarded transaction, under the bulk single flight."""
    audit.require(conn)
    report = BulkReport(action.name, True, flt.text, runs)
    started = time.perf_counter()
    deadline = None if options.max_time is None else started + options.max_time.total_seconds()
    with flight.single_flight(conn, flight.BULK, "wfctl bulk action"):
        ctx = _RunContext(
            conn, world, Store(conn, slots=world.has_event_slots), options, reason, flt
        )
        for first in range(0, len(runs), options.batch):
            if deadline is not None and time.perf_counter() >= deadline:
                report.stopped = "time budget (--max-time) reached; rerun to continue"
                break
            for selected in runs[first : first + options.batch]:
                report.outcomes.append(_one(ctx, action, selected.run_id))
            report.seconds = time.perf_counter() - started
            if on_batch:
                on_batch(report)
    report.seconds = time.perf_counter() - started
    return report


def _one(ctx: _RunContext, action: Action, run_id: str) -> Outcome:
    """Lock the run, re-check the filter on it, act and audit: one transaction."""
    try:
        with ctx.conn.transaction():
            row = ctx.conn.execute(sql.load("runtime/lock_run"), {"run_id": run_id}).fetchone()
            if row is None or str(row[1]) not in LIVE:
                return Outcome(run_id, "ended", detail=str(row[1]) if row else "gone")
            again = select(ctx.conn, action, ctx.flt, ctx.options, [run_id])
            if not again:
                return Outcome(run_id, "no_longer_matches")
            return action.act(ctx, again[0])
    except pgerrors.LockNotAvailable:
        return Outcome(run_id, "busy", detail="lock timeout: another session holds the run")
    except _Refused as exc:
        return Outcome(run_id, "busy", detail=str(exc))
    except RefusedError as exc:  # e.g. an unmarked spec >= 6 run in a slot-era world (WF121)
        hint = f"; {exc.hint}" if exc.hint else ""
        return Outcome(run_id, "refused", detail=f"{exc}{hint}")


class _Refused(Exception):
    """Roll the run's transaction back and report it busy."""


def _audit(
    ctx: _RunContext, action: str, run_id: str, details: dict[str, Any], events: list[str]
) -> int:
    return audit.record(
        ctx.conn,
        action=action,
        run_id=run_id,
        reason=ctx.reason,
        details={"filter": list(ctx.flt.text), **details},
        event_ids=events,
    )


class Cancel(Action):
    name = "cancel"
    select_sql = "bulk/select_cancel"

    def act(self, ctx: _RunContext, row: dict[str, Any]) -> Outcome:
        before, event_id = ctx.store.cancel_in_transaction(row["id"], ctx.reason)
        if event_id is None:  # unreachable under the lock held since _one, kept as a guard
            return Outcome(row["id"], "ended", detail=before)
        jobs = 0
        if ctx.world.has_graphile:
            found = ctx.conn.execute(
                sql.load("gc/delete_jobs"),
                {
                    "run_ids": [row["id"]],
                    "task": ctx.options.task,
                    "lock_reset": GRAPHILE_LOCK_RESET,
                },
            ).fetchone()
            jobs = int(found[0]) if found else 0
        details = {"status_before": before, "jobs_deleted": jobs}
        audit_id = _audit(ctx, "cancel", row["id"], details, [event_id])
        return Outcome(row["id"], "cancelled", event_id, audit_id, f"{jobs} queue jobs removed")


class Wake(Action):
    name = "wake"
    select_sql = "bulk/select_wake"

    def detail(self, row: dict[str, Any]) -> str:
        return f"jobs {row['job_ids']}: {row['last_error'] or 'no error recorded'}"

    def act(self, ctx: _RunContext, row: dict[str, Any]) -> Outcome:
        job_ids = [int(j) for j in row["job_ids"]]
        got = ctx.conn.execute(sql.load("bulk/redrive_jobs"), {"job_ids": job_ids}).fetchall()
        if len(got) != len(job_ids):
            raise _Refused("a spent job was locked meanwhile")
        details = {"job_ids": job_ids, "last_error": row["last_error"]}
        audit_id = _audit(ctx, "wake", row["id"], details, [])
        return Outcome(row["id"], "redriven", None, audit_id, f"jobs {job_ids} due now")


ACTIONS: dict[str, Action] = {"cancel": Cancel(), "wake": Wake()}


def cancel_one(store: Store, run_id: str, reason: str) -> tuple[str, int | None]:
    """`runs cancel RUN_ID`: the cancel and its audit row in one transaction, as each run of
    a `--where` cancel. Returns the status found and the audit row id (None: the run had
    already ended, nothing written). LookupError when there is no such run."""
    audit.require(store.conn)
    with store.conn.transaction():
        before, event_id = store.cancel_in_transaction(run_id, reason or None)
        if event_id is None:
            return before, None
        audit_id = audit.record(
            store.conn,
            action="cancel",
            run_id=run_id,
            reason=reason,
            details={"status_before": before, "single_run": True},
            event_ids=[event_id],
        )
    return before, audit_id
