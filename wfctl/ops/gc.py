"""Retention: delete terminal runs whose completion is older than a cutoff, with everything
that belongs to them (events, steps, waits, hooks, stream chunks, slot marker, queue jobs).

The lessons of other Postgres-backed engines, applied:
- the cutoff is on completion time, not creation (a run created 40 days ago may have ended
  a minute ago) and is fixed once per collection;
- one batch = one transaction, and inside it the events go first and the run row last, so
  an interrupted gc can never leave a log without its run (which a reused run id would
  replay as its own past);
- each batch locks its run rows FOR UPDATE SKIP LOCKED and re-checks "terminal and past the
  cutoff" on the locked row: a non-terminal run is never deleted, a busy one is skipped;
- one collector at a time (advisory lock); a run whose hook token is still retained
  (`token_retention_until`, slot era) or whose queue job a worker holds is kept for later;
- resumable: every committed batch is final and the next gc recomputes the candidates, so
  stopping (Ctrl-C, `--max-time`) loses at most the batch in flight.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import psycopg

from wfctl import sql
from wfctl.clock import timestamp
from wfctl.connection.db import read_only
from wfctl.ops import audit, flight
from wfctl.signals import stop_on_signal
from wfctl.world.model import World
from wfctl.world.queue_locks import GRAPHILE_LOCK_RESET

CURSOR = "wfctl_gc_candidates"
TABLES = (
    "runs",
    "events",
    "steps",
    "waits",
    "hooks",
    "stream_chunks",
    "slot_markers",
    "jobs",
    "queue_rows",
)


@dataclass(frozen=True)
class GcOptions:
    older_than: timedelta
    batch: int = 500
    max_time: timedelta | None = None
    pause: float = 0.0  # seconds between batches: lets a busy primary breathe
    job_prefix: str = "workflow_"

    @property
    def task(self) -> str:
        return f"{self.job_prefix}flows"


@dataclass
class GcReport:
    """What a gc found (dry run) or did (apply)."""

    applied: bool
    cutoff: datetime
    older_than: timedelta
    candidates: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    deferred: dict[str, int] = field(
        default_factory=lambda: {"hook_token_retained": 0, "job_locked": 0, "busy_or_changed": 0}
    )
    by_status: dict[str, int] = field(default_factory=dict)  # dry run: candidates by status
    oldest: datetime | None = None
    newest: datetime | None = None
    batches: int = 0
    seconds: float = 0.0
    stopped: str = ""  # why an apply stopped before the end ("time budget")
    # Stopped by SIGINT/SIGTERM: the counts are the batches committed before it (wfctl.signals).
    interrupted: bool = False
    audit_ids: list[int] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return sum(self.counts.values())

    @property
    def complete(self) -> bool:
        return not self.stopped

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "applied": self.applied,
            "complete": self.complete,
            "interrupted": self.interrupted,
            "stopped": self.stopped or None,
            "cutoff_utc": timestamp(self.cutoff),
            "older_than_seconds": self.older_than.total_seconds(),
            "candidates": self.candidates,
            "candidates_by_status": self.by_status or None,
            "oldest_completion_utc": timestamp(self.oldest),
            "newest_completion_utc": timestamp(self.newest),
            ("deleted" if self.applied else "would_delete"): self.counts,
            # a dry run knows the retained tokens; locks and jobs are seen at apply time
            "deferred": self.deferred,
            "batches": self.batches,
            "seconds": round(self.seconds, 3),
            "rows_per_second": round(self.rows_per_second, 1),
            "audit_ids": self.audit_ids,
        }


def cutoff(conn: psycopg.Connection[Any], older_than: timedelta) -> datetime:
    row = conn.execute(sql.load("gc/cutoff"), {"older_than": older_than}).fetchone()
    assert row is not None
    value: datetime = row[0]
    return value


def plan(conn: psycopg.Connection[Any], world: World, options: GcOptions) -> GcReport:
    """The dry run: count what would go, in one READ ONLY transaction, writing nothing."""
    started = time.perf_counter()
    with read_only(conn):
        report = GcReport(False, cutoff(conn, options.older_than), options.older_than)
        params = {"cutoff": report.cutoff, "task": options.task}
        row = conn.execute(sql.load("gc/plan"), params).fetchone()
        assert row is not None
        (runs, completed, failed, cancelled, report.oldest, report.newest, *children) = row
        report.candidates = runs
        report.by_status = {"completed": completed, "failed": failed, "cancelled": cancelled}
        report.counts.update(
            runs=runs,
            **dict(
                zip(("events", "steps", "waits", "hooks", "stream_chunks"), children, strict=True)
            ),
        )
        if world.has_event_slots:
            report.counts["slot_markers"] = _scalar(conn, "gc/plan_slot_markers", params)
        if world.has_graphile:
            jobs = {**params, "lock_reset": GRAPHILE_LOCK_RESET}
            report.counts["jobs"] = _scalar(conn, "gc/plan_jobs", jobs)
        if _extras(conn).token_retention:
            kept = _scalar(conn, "gc/plan_retained", params)
            report.deferred["hook_token_retained"] = kept
    report.seconds = time.perf_counter() - started
    return report


def collect(
    conn: psycopg.Connection[Any],
    world: World,
    options: GcOptions,
    *,
    reason: str,
    on_start: Callable[[GcReport], None] | None = None,
    on_batch: Callable[[GcReport], None] | None = None,
) -> GcReport:
    """Delete the candidates batch by batch (see the module docstring). `conn` must be in
    autocommit mode: each batch is its own transaction. `on_start` sees the candidate count
    before anything is deleted (and before the audit schema is created where missing: a
    refusal there writes nothing); `on_batch` sees the report after every committed batch.

    A signal once batches are deleted ends the collection after the batch in flight (committed
    or rolled back whole: wfctl.signals), and the report, marked `interrupted`, counts exactly
    the batches committed; a second signal rolls the batch in flight back at once."""
    started = time.perf_counter()
    report = GcReport(True, cutoff(conn, options.older_than), options.older_than)
    stop = threading.Event()
    try:
        with flight.single_flight(conn, flight.GC, "wfctl gc"):
            _collect(conn, world, options, report, reason, on_start, on_batch, started, stop)
    except KeyboardInterrupt:
        if not report.batches:
            raise  # nothing deleted: the plain interruption
        stop.set()  # a second signal: the batch in flight rolled back
    report.interrupted = stop.is_set()
    report.seconds = time.perf_counter() - started
    return report


def _collect(
    conn: psycopg.Connection[Any],
    world: World,
    options: GcOptions,
    report: GcReport,
    reason: str,
    on_start: Callable[[GcReport], None] | None,
    on_batch: Callable[[GcReport], None] | None,
    started: float,
    stop: threading.Event,
) -> None:
    """The collection proper, under the single-flight lock (see `collect`)."""
    deadline = None if options.max_time is None else started + options.max_time.total_seconds()
    extras = _extras(conn)
    with conn.cursor(name=CURSOR, withhold=True, scrollable=True) as cur:
        cur.execute(sql.load("gc/candidates"), {"cutoff": report.cutoff})
        report.candidates = _count_and_rewind(conn)
        if on_start:
            on_start(report)
        if report.candidates:
            audit.require(conn)
        with stop_on_signal(stop):
            while not stop.is_set():
                if deadline is not None and time.perf_counter() >= deadline:
                    report.stopped = "time budget (--max-time) reached; rerun to continue"
                    break
                ids = [str(r[0]) for r in cur.fetchmany(options.batch)]
                if not ids:
                    break
                _batch(conn, world, options, report, ids, extras, reason)
                report.seconds = time.perf_counter() - started
                if on_batch:
                    on_batch(report)
                if options.pause and not stop.is_set():
                    stop.wait(options.pause)
        if stop.is_set():
            report.stopped = "interrupted (SIGINT/SIGTERM); rerun to continue"


@dataclass(frozen=True)
class _Extras:
    """Which optional parts this database has (checked once per gc)."""

    token_retention: bool
    run_queue: bool


def _extras(conn: psycopg.Connection[Any]) -> _Extras:
    def present(name: str) -> bool:
        row = conn.execute(sql.load(name)).fetchone()
        return bool(row and row[0])

    return _Extras(present("gc/has_token_retention"), present("ops/has_run_queue"))


def _count_and_rewind(conn: psycopg.Connection[Any]) -> int:
    """Size of the materialised candidate cursor, then back to its start (it is SCROLL)."""
    cur = conn.execute(f"MOVE FORWARD ALL IN {CURSOR}")
    count = max(cur.rowcount, 0)
    conn.execute(f"MOVE ABSOLUTE 0 IN {CURSOR}")
    return count


def _batch(
    conn: psycopg.Connection[Any],
    world: World,
    options: GcOptions,
    report: GcReport,
    ids: list[str],
    extras: _Extras,
    reason: str,
) -> None:
    """One transaction: lock, defer what must stay, delete children then runs, audit."""
    with conn.transaction():
        locked = [
            str(r[0])
            for r in conn.execute(
                sql.load("gc/lock_batch"), {"run_ids": ids, "cutoff": report.cutoff}
            )
        ]
        report.deferred["busy_or_changed"] += len(ids) - len(locked)
        keep: set[str] = set()
        if extras.token_retention and locked:
            retained = conn.execute(sql.load("gc/retained_hooks"), {"run_ids": locked})
            held = {str(r[0]) for r in retained}
            report.deferred["hook_token_retained"] += len(held)
            keep |= held
        if world.has_graphile and locked:
            params = {"task": options.task, "lock_reset": GRAPHILE_LOCK_RESET}
            rows = conn.execute(sql.load("repair/locked_jobs"), params)
            busy = {str(r[0]) for r in rows} & (set(locked) - keep)
            report.deferred["job_locked"] += len(busy)
            keep |= busy
        todo = [run_id for run_id in locked if run_id not in keep]
        if not todo:
            return
        params = {"run_ids": todo, "task": options.task}
        counts = {"events": _scalar(conn, "gc/delete_events", params)}
        row = conn.execute(sql.load("gc/delete_entities"), params).fetchone()
        assert row is not None
        counts.update(zip(("steps", "waits", "hooks", "stream_chunks"), map(int, row), strict=True))
        if world.has_event_slots:
            counts["slot_markers"] = _scalar(conn, "gc/delete_slot_markers", params)
        if world.has_graphile:
            jobs = {**params, "lock_reset": GRAPHILE_LOCK_RESET}
            counts["jobs"] = _scalar(conn, "gc/delete_jobs", jobs)
        if extras.run_queue:
            counts["queue_rows"] = _scalar(conn, "gc/delete_queue_rows", params)
        counts["runs"] = _scalar(conn, "gc/delete_runs", params)
        audit_id = audit.record(
            conn,
            action="gc",
            run_id="*",
            reason=reason,
            details={
                "cutoff_utc": timestamp(report.cutoff),
                "older_than_seconds": options.older_than.total_seconds(),
                "deleted": counts,
                "run_ids": todo,
            },
        )
    for name, n in counts.items():
        report.counts[name] += n
    report.batches += 1
    report.audit_ids.append(audit_id)


def _scalar(conn: psycopg.Connection[Any], name: str, params: dict[str, Any]) -> int:
    row = conn.execute(sql.load(name), params).fetchone()
    return int(row[0]) if row else 0
