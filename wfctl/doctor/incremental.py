"""`doctor --incremental`: check only the runs touched since the last verified pass.

The first pass is a full `--all`. It records a watermark (wfctl.doctor_watermark, created on
first use: only this option ever writes) and the runs that had a finding. Each later pass
checks, with the `--all` semantics:
- the history checks (every run-scoped check) on the runs touched since the watermark
  (touched_runs.sql: any event, any run / step / wait / hook row created or updated; rows,
  and on slot-era worlds events, are looked for among the runs created since, live now, or
  live or holding an open step at the last pass, which the world's guards make sufficient;
  index-driven in both eras) plus every run flagged last time (a finding can clear without
  a write, e.g. by a deletion, or leave the in-flight window by mere age);
- the queue checks (graphile's and wfctl's own: WF136) and the catalog check in full (they
  read small tables, and their state changes with time, job rows, leases and live sessions,
  not with run rows).
A run with no finding last time and no change since cannot have one now: every check is a
function of the run's rows and events, and of age only through the in-flight split, which
only flagged runs can cross. So the report equals a full `--all` on the same world
(tests/test_doctor_incremental.py). The watermark is taken before anything is read and
never later than the oldest open transaction's start, so a write committing during the
pass is seen by the next one. A pass where a history check could not run (UNKNOWN) keeps
the old watermark: its runs are checked again next time. On a hot standby the pass reads
the watermark the primary's passes recorded (replicated with the rest) and `save` is not
called: the standby holds every write that committed before that watermark was saved, so
the argument above holds there, and nothing is written.

Clocks: DB-default columns are compared with the watermark in the session clock; JS-written
columns (updated_at, ULID ids) with it in UTC minus the clock skew tolerated between the
application hosts and the database (`--clock-skew`, default SKEW).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from wfctl import __version__, sql
from wfctl.clock import timestamp
from wfctl.doctor import runner
from wfctl.doctor.base import Check, Finding, Needs, Status
from wfctl.world import ids
from wfctl.world.model import World

SCOPE = "all"
SKEW = timedelta(minutes=5)
FULL_ALWAYS = ("WF151",)  # catalog drift: not about runs
RUN_PREFIX = "wrun"  # run ids are wrun_<ULID>: time-ordered, so new runs are a key range


@dataclass(frozen=True)
class Mark:
    verified_to: datetime
    verified_to_utc: datetime


@dataclass
class Pass:
    """What an incremental pass did, beside the report."""

    full: bool  # no watermark yet: a full --all pass
    previous: Mark | None
    mark: Mark
    touched: int = 0  # runs in the incremental scope (touched + flagged)
    touched_seconds: float = 0.0  # finding them (touched_runs.sql)
    flagged: set[str] = field(default_factory=set)
    live: list[str] = field(default_factory=list)  # pending/running when the pass began
    saved: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "full_pass": self.full,
            "since": timestamp(self.previous.verified_to_utc) if self.previous else None,
            "watermark": timestamp(self.mark.verified_to_utc),
            "runs_checked": None if self.full else self.touched,
            "touched_seconds": round(self.touched_seconds, 3),
            "runs_flagged": len(self.flagged),
            "watermark_saved": self.saved,
        }


def is_history(check: Check) -> bool:
    """Run-scoped checks, restricted to the touched runs; the rest run in full."""
    queues = (Needs.QUEUE, Needs.RUN_QUEUE)  # WF136: leases and drivers age without a write
    return not any(n in check.needs for n in queues) and check.code not in FULL_ALWAYS


def run(
    conn: psycopg.Connection[Any],
    world: World,
    checks: list[Check],
    options: runner.DoctorOptions,
    skew: timedelta = SKEW,
    helpers: Sequence[runner.Conn] = (),
) -> tuple[runner.Report, Pass]:
    """The pass, inside the caller's READ ONLY transaction; `save` records it afterwards.

    `helpers` share the full first pass (see runner.run); a touched-runs pass is small and
    runs in the caller's session alone."""
    previous, flagged, was_live = _read(conn)
    row = conn.execute(sql.load("doctor/watermark_now")).fetchone()
    assert row is not None
    done = Pass(full=previous is None, previous=previous, mark=Mark(row[0], row[1]))
    full_options = replace(options, all_runs=True, run_ids=(), since=None)

    history_codes = {c.code for c in checks if is_history(c)}

    def flag(finding: Finding) -> None:
        """Runs with a history finding are re-checked next pass (the rest run in full)."""
        if finding.run_id is not None and finding.code in history_codes:
            done.flagged.add(finding.run_id)

    if previous is None:
        done.live = _open_runs(conn, full=True, carry=[])
        report = runner.run(conn, world, checks, full_options, on_finding=flag, helpers=helpers)
        return report, done
    started = time.perf_counter()
    scope = _touched(conn, world, previous, skew, was_live) | flagged
    done.live = _open_runs(conn, full=False, carry=sorted(scope.union(was_live)))
    done.touched_seconds = time.perf_counter() - started
    done.touched = len(scope)
    history = [c for c in checks if is_history(c)]
    others = [c for c in checks if not is_history(c)]
    parts: dict[str, Any] = {}
    if history and scope:
        scoped = replace(full_options, run_ids=tuple(sorted(scope)))
        # A few hundred named runs are index probes: a parallel plan (chosen when the planner
        # overrates the per-run event probes) scans every run in each worker instead.
        conn.execute("SELECT set_config('max_parallel_workers_per_gather', '0', true)")
        part = runner.run(conn, world, history, scoped, on_finding=flag)
        parts.update({r.check.code: r for r in part.results})
    else:  # nothing touched, nothing flagged: the history checks have nothing to find
        parts.update({c.code: runner.empty_result(c, world) for c in history})
    if others:
        part = runner.run(conn, world, others, full_options)
        parts.update({r.check.code: r for r in part.results})
    report = runner.Report(world, full_options)
    report.results = [parts[c.code] for c in checks]
    report.seconds = sum(r.seconds for r in report.results)
    return report, done


def save(conn: psycopg.Connection[Any], report: runner.Report, done: Pass) -> None:
    """Record the pass (own transaction), unless a history check could not run."""
    if any(r.status is Status.UNKNOWN and is_history(r.check) for r in report.results):
        return
    from wfctl.world.bootstrap import ensure_audit_schema  # alembic: only when saving

    ensure_audit_schema(conn)  # schema `wfctl` as wfctl manages it (revision w0001)
    with conn.transaction():
        conn.execute(sql.load("doctor/watermark_ddl"))
        conn.execute(
            sql.load("doctor/watermark_write"),
            {
                "scope": SCOPE,
                "verified_to": done.mark.verified_to,
                "verified_to_utc": done.mark.verified_to_utc,
                "full_pass": done.full,
                "version": __version__,
            },
        )
        for kind, run_ids in (("finding", sorted(done.flagged)), ("live", done.live)):
            params = {"scope": SCOPE, "kind": kind, "run_ids": run_ids}
            conn.execute(sql.load("doctor/flagged_clear"), params)
            conn.execute(sql.load("doctor/flagged_insert"), params)
    done.saved = True


def _read(conn: psycopg.Connection[Any]) -> tuple[Mark | None, set[str], list[str]]:
    """The last pass's watermark, flagged runs and live runs (None: no pass recorded)."""
    present = conn.execute(sql.load("doctor/watermark_exists")).fetchone()
    if not (present and present[0]):
        return None, set(), []
    row = conn.execute(sql.load("doctor/watermark_read"), {"scope": SCOPE}).fetchone()
    if row is None:
        return None, set(), []
    return Mark(row[0], row[1]), {str(r) for r in row[3]}, [str(r) for r in row[4]]


def _open_runs(conn: psycopg.Connection[Any], full: bool, carry: list[str]) -> list[str]:
    """The runs the next pass must look at for writes (live_runs.sql); legacy-spec runs are
    found by a scan of the runs at a full pass, then carried (and new ones added)."""
    rows = conn.execute(sql.load("doctor/live_runs"), {"full": full, "carry": carry})
    return [str(r[0]) for r in rows]


def _touched(
    conn: psycopg.Connection[Any], world: World, mark: Mark, skew: timedelta, was_live: list[str]
) -> set[str]:
    since = ids.new_ulid(mark.verified_to_utc.replace(tzinfo=UTC) - skew)[:10]  # JS clock
    floor = None
    if not world.has_event_slots:  # beta.29: every event id is wevt_<ULID>, time-ordered
        floor = ids.LEGACY_EVENT_PREFIX + since
    rows = conn.execute(
        sql.load("doctor/touched_runs"),
        {
            "verified_to": mark.verified_to,
            "verified_to_utc": mark.verified_to_utc,
            "skew": skew,
            "event_id_floor": floor,
            "run_id_floor": f"{RUN_PREFIX}_{since}",
            "was_live": was_live,
        },
    )
    return {str(r[0]) for r in rows}
