"""The repair runner: detect, then one short guarded transaction per run.

For each run with findings, on --apply:
1. lock the run row (FOR UPDATE, bounded by the session's lock_timeout); refuse the whole
   run while a queue job for it is locked (a live writer may be about to insert the same
   event; the locked jobs are read as a snapshot at most a second old, see LockedJobs);
2. per finding, in a savepoint: let the repair lock and read its entity row, re-run the very
   check SQL doctor used, scoped to this run, and refuse ("state moved", "too young") unless
   the finding still holds past --min-age; then append through the shared EventWriter, act on
   the queue, and write the audit row; a refusal rolls back only that finding.
A dry run does the same reads in a READ ONLY transaction (no locks, no writes) and prints
the plan. Runs are independent, so several are repaired at once, each on its own connection
(`workers`): a repair is latency-bound (one commit per run), not CPU-bound.
"""

from __future__ import annotations

import contextlib
import json
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import groupby
from typing import Any

import psycopg
from psycopg import errors as pgerrors
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from wfctl import __version__, sql
from wfctl.clock import timestamp
from wfctl.connection.db import read_only
from wfctl.doctor import registry as checks_registry
from wfctl.doctor import runner as doctor
from wfctl.doctor.base import Finding
from wfctl.durations import format_duration
from wfctl.errors import ExitStatus, RefusedError
from wfctl.repair import registry, slotlog, verdict, wf135
from wfctl.repair.base import Action, Context, Refused, Repair, Superseded, for_release
from wfctl.world import ids, queue_locks
from wfctl.world.model import World
from wfctl.world.writer import AlreadyExists, EventWriter


@dataclass(frozen=True)
class RepairOptions:
    min_age: timedelta = timedelta(minutes=10)
    only: tuple[str, ...] = ()
    run_ids: tuple[str, ...] = ()
    all_runs: bool = False
    limit: int = 1000
    job_prefix: str = "workflow_"
    workers: int = 4  # runs repaired in parallel, one connection each
    allow_rewrite: bool = False  # slot-log rewrites (renumbering) may run
    allow_revive: bool = False  # opt-in rewrites of a failed run's history (registry.REVIVALS)

    @property
    def task(self) -> str:
        return f"{self.job_prefix}flows"


@dataclass
class Item:
    """One finding and what happened to it."""

    finding: Finding
    outcome: str  # planned | applied | refused | skipped
    reason: str = ""
    actions: list[str] = field(default_factory=list)
    event_ids: list[str] = field(default_factory=list)
    audit_id: int | None = None
    # Refused for a queue lock held this many whole minutes (floored at --unlock-older-than's
    # floor): the report suggests ONE age that covers every such lock (`unlock_hint`).
    locked_minutes: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "code": self.finding.code,
            "run_id": self.finding.run_id,
            "entity_id": self.finding.entity_id,
            "outcome": self.outcome,
            "reason": self.reason,
            "actions": self.actions,
            "event_ids": self.event_ids,
            "audit_id": self.audit_id,
        }


@dataclass
class RepairReport:
    applied: bool
    items: list[Item] = field(default_factory=list)
    before: dict[str, int] = field(default_factory=dict)
    after: dict[str, int] = field(default_factory=dict)
    # Wall time of each run's transaction, lock_run to commit: how long locks were held.
    lock_hold_ms: list[float] = field(default_factory=list)
    # After an apply: the exit status of doctor in the same scope, run right after (`after`
    # holds its counts); None for a dry run, or when interrupted before it could run.
    after_exit: int | None = None
    rounds: int = 0  # detect-and-repair rounds of the apply (see verdict.converge)
    unfinished: str = ""  # what the apply could not finish within its rounds, in words
    interrupted: bool = False  # stopped by SIGINT/SIGTERM: runs not started were left alone
    # Where the signal landed (INTERRUPTED_DURING); None when not interrupted.
    interrupted_during: str | None = None

    @property
    def unlock_hint(self) -> str | None:
        """One `--unlock-older-than` age that covers every lock the items were refused for:
        the youngest lock's (an age per lock left the younger ones held when copied)."""
        held = [i.locked_minutes for i in self.items if i.locked_minutes is not None]
        return f"{min(held)}m" if held else None

    @property
    def ok(self) -> bool:
        """Nothing refused and, after an apply, doctor in the same scope finds nothing."""
        return self.exit_status == ExitStatus.OK

    @property
    def exit_status(self) -> ExitStatus:
        """What `doctor` in the same scope would exit right after (0 none, 1 warnings only,
        2 critical, 3 a check could not run), and at least 2 when any finding was refused
        (dry run: when the plan refuses any); 130 after a signal."""
        return verdict.exit_status(self)

    def as_dict(self) -> dict[str, Any]:
        return {
            "applied": self.applied,
            "ok": self.ok,
            "exit_code": int(self.exit_status),
            "interrupted": self.interrupted,
            "interrupted_during": self.interrupted_during,
            "rounds": self.rounds,
            "unfinished": self.unfinished,
            "items": [i.as_dict() for i in self.items],
            "unlock_older_than": self.unlock_hint,
            "before": self.before,
            "after": self.after,
            "transactions": len(self.lock_hold_ms),
            "lock_hold_ms": _quantiles(self.lock_hold_ms),
        }


# Where a signal can land, in order: doctor's read-only pass (first, or after a round that
# wrote something), the dry run's read-only plan of each run, the release of stale queue locks
# (each its own committed transaction), the runs' repair transactions.
INTERRUPTED_DURING = ("detection", "plan", "unlock", "repair")


def interrupted(report: RepairReport, during: str) -> RepairReport:
    """Mark `report` stopped by a signal `during` a phase (INTERRUPTED_DURING); its items are
    what was committed (or planned) before the signal."""
    report.interrupted, report.interrupted_during = True, during
    return report


def _quantiles(values: list[float]) -> dict[str, float]:
    """p50 / p99 / max of the per-run transaction times (nearest rank)."""
    if not values:
        return {}
    ordered = sorted(values)

    def rank(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)

    return {"p50": rank(0.5), "p99": rank(0.99), "max": round(ordered[-1], 3)}


def detect(conn: psycopg.Connection[Any], world: World, options: RepairOptions) -> list[Finding]:
    """Doctor's findings for the repairable (or reportable) codes, in repair order."""
    return ordered(diagnose(conn, world, options))


def diagnose(conn: psycopg.Connection[Any], world: World, options: RepairOptions) -> doctor.Report:
    """Doctor's report in the repair's scope: what `wfctl doctor` with the same --only, --run,
    --all, --min-age and --limit would say now."""
    codes = set(options.only) or set(registry.BY_CODE) | set(registry.REPORT_ONLY)
    checks = [c for c in checks_registry.CHECKS if c.code in codes]
    opts = doctor.DoctorOptions(
        min_age=options.min_age,
        all_runs=options.all_runs,
        run_ids=options.run_ids,
        limit=options.limit,
        job_prefix=options.job_prefix,
    )
    with read_only(conn):
        return doctor.run(conn, world, checks, opts)


def ordered(report: doctor.Report) -> list[Finding]:
    """A report's findings a repair acts on or reports, in repair order."""
    order = {r.code: n for n, r in enumerate(registry.ORDER)}
    found = [f for f in report.findings() if f.run_id is not None or f.code in registry.REPORT_ONLY]
    return sorted(found, key=lambda f: (f.run_id or "", order.get(f.code, 99)))


def counts(findings: list[Finding]) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in findings:
        if not f.in_flight:
            out[f.code] = out.get(f.code, 0) + 1
    return out


def repair(
    conn: psycopg.Connection[Any],
    world: World,
    options: RepairOptions,
    *,
    apply: bool,
    reason: str = "",
    connect: Callable[[], psycopg.Connection[Any]] | None = None,
    unlock: wf135.Unlock | None = None,
) -> RepairReport:
    """Plan (dry run) or apply repairs for every finding; see the module docstring.

    `connect` opens more sessions for parallel applies (`options.workers`); without it,
    everything runs on `conn`. `unlock` first lists (dry run) or releases the dead workers'
    locks it selects (WF135), so the repairs of those runs are no longer refused.
    """
    if not apply:
        report = RepairReport(applied=False)
        try:
            detected = diagnose(conn, world, options)
        except KeyboardInterrupt:  # psycopg cancelled the query; the read-only transaction
            return interrupted(report, "detection")  # rolled back: nothing to undo
        _round(conn, world, options, report, detected, apply=False, unlock=unlock)
        return report
    return verdict.converge(
        conn, world, options, reason=reason, connect=connect, unlock=unlock, one_round=_round
    )


def _round(
    conn: psycopg.Connection[Any],
    world: World,
    options: RepairOptions,
    report: RepairReport,
    detected: doctor.Report,
    *,
    apply: bool,
    reason: str = "",
    connect: Callable[[], psycopg.Connection[Any]] | None = None,
    unlock: wf135.Unlock | None = None,
    attempted: set[tuple[str, str | None, str | None]] | None = None,
    stop: threading.Event | None = None,
) -> list[Item]:
    """One detect-and-repair pass over `detected`: the stale locks `unlock` selects, then each
    run's findings not in `attempted` (the keys are added). Items are appended to `report`
    (and returned); a dry run plans instead of writing.

    A signal (KeyboardInterrupt) ends the round with `report` marked interrupted and where:
    while reading (detection, plan) at once; while writing (unlock, repair) the transaction in
    flight commits or rolls back whole first (`_stop_on_signal`), so the items are exactly
    what was committed."""
    try:
        locks = wf135.stale(conn, options.task, unlock, options.run_ids) if unlock else []
    except KeyboardInterrupt:
        interrupted(report, "detection")
        return []
    handled = {str(held["id"]) for held in locks}
    seen = attempted if attempted is not None else set()
    findings = [  # a young lock is a live delivery's: not even worth a "skipped" line
        f
        for f in ordered(detected)
        if not (f.code == wf135.CODE and (f.in_flight or f.entity_id in handled))
        and _key(f) not in seen
    ]
    seen.update(_key(f) for f in findings)
    if not report.before and not report.items:
        report.before = counts(findings)
    start = len(report.items)
    writer = EventWriter(slots=world.has_event_slots)
    batches: list[tuple[str, list[Finding]]] = []
    for run_id, group in groupby(findings, key=lambda f: f.run_id):
        todo = []
        for finding in group:
            skip = _skip_reason(finding, world, options)
            if skip:
                report.items.append(Item(finding, "skipped", skip))
            else:
                todo.append(finding)
        if todo and run_id:
            batches.append((run_id, todo))
    if not apply:
        report.items[start:start] = [_item(wf135.planned(held)) for held in locks]
        releasing = {str(held["id"]) for held in locks}
        locked_jobs = LockedJobs(unreadable=world.queue_unreadable)
        try:
            for run_id, todo in batches:
                report.items += _plan_run(
                    conn, world, writer, options, run_id, todo, locked_jobs, releasing
                )
        except KeyboardInterrupt:  # the plan so far; each run's read-only transaction is gone
            interrupted(report, "plan")
        return report.items[start:]

    # A stale lock of a run with something to heal is released in that run's transaction;
    # the others at once, each on its own.
    healing = {run_id for run_id, _ in batches}
    with_run: dict[str, list[dict[str, Any]]] = {}
    for held in locks:
        if held["run_id"] in healing:
            with_run.setdefault(held["run_id"], []).append(held)
    alone = [held for held in locks if held["run_id"] not in healing]

    def one(session: psycopg.Connection[Any], run_id: str, todo: list[Finding]) -> None:
        started = time.perf_counter()
        stale = _Stale(unlock, with_run.get(run_id, [])) if unlock is not None else None
        items = _apply_run(
            session, world, writer, options, run_id, todo, reason, locked_jobs, stale
        )
        with lock:
            report.items.extend(items)
            report.lock_hold_ms.append((time.perf_counter() - started) * 1000)

    lock = threading.Lock()
    locked_jobs = LockedJobs(unreadable=world.queue_unreadable)
    stop = stop or threading.Event()
    during = "unlock" if unlock is not None and alone else "repair"
    try:
        with _stop_on_signal(stop):
            # Each lock released alone commits on its own: listed as it commits, in front of
            # this round's other items; no release starts after the signal.
            releases = wf135.release(conn, alone, unlock, reason) if unlock else iter(())
            for n, release in enumerate(releases):
                report.items.insert(start + n, _item(release))
                if stop.is_set():
                    break
            if not stop.is_set():
                during = "repair"
                if connect is None or options.workers <= 1 or len(batches) < 2:
                    for run_id, todo in batches:
                        if stop.is_set():
                            break
                        one(conn, run_id, todo)
                else:
                    _in_parallel(batches, one, connect, min(options.workers, len(batches)), stop)
    except KeyboardInterrupt:
        # A second signal (or SIGTERM/SIGINT outside the main thread's handler): the
        # transaction in flight on this thread was rolled back; report what was written.
        stop.set()
    if stop.is_set():
        interrupted(report, during)
    return report.items[start:]


@contextlib.contextmanager
def _stop_on_signal(stop: threading.Event) -> Iterator[None]:
    """While an apply writes: the first SIGINT/SIGTERM sets `stop` instead of raising, so the
    transaction in flight (a lock release, a run's repair: milliseconds, bounded by
    lock_timeout) commits or rolls back whole and its items are reported as they are (a
    KeyboardInterrupt during a COMMIT would lose whether it committed); nothing starts after.
    A second signal raises KeyboardInterrupt at once: the transaction in flight rolls back.
    Outside the main thread (an embedding application) signals are left alone."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(_signum: int, _frame: object) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        sys.stderr.write(
            "wfctl: stopping once the transaction in flight ends (signal again to roll it back)\n"
        )

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            if old is not None:
                signal.signal(sig, old)


def _item(release: wf135.Release) -> Item:
    return Item(
        release.finding,
        release.outcome,
        release.reason,
        actions=[release.action],
        audit_id=release.audit_id,
    )


@dataclass(frozen=True)
class _Stale:
    """A run's stale queue locks, released in its repair transaction (wf135)."""

    unlock: wf135.Unlock
    locks: list[dict[str, Any]]


def _in_parallel(
    batches: list[tuple[str, list[Finding]]],
    one: Callable[[psycopg.Connection[Any], str, list[Finding]], None],
    connect: Callable[[], psycopg.Connection[Any]],
    workers: int,
    stop: threading.Event,
) -> None:
    """Each worker thread takes runs from a shared queue, on its own connection, until the
    queue is empty or `stop` is set. A signal reaches the main thread only (Python delivers
    it there): it sets `stop`, so each worker finishes the run it holds (a transaction of
    milliseconds) and starts no other; the main thread waits for them, then re-raises."""
    pending: queue.SimpleQueue[tuple[str, list[Finding]]] = queue.SimpleQueue()
    for batch in batches:
        pending.put(batch)

    def work() -> None:
        with connect() as session:
            while not stop.is_set():
                try:
                    run_id, todo = pending.get_nowait()
                except queue.Empty:
                    return
                one(session, run_id, todo)

    pool = ThreadPoolExecutor(max_workers=workers)
    futures = [pool.submit(work) for _ in range(workers)]
    try:
        for future in futures:
            while True:
                try:
                    future.result(timeout=0.1)  # short waits: the signal is seen at once
                    break
                except TimeoutError:
                    continue
    except KeyboardInterrupt:
        stop.set()
        pool.shutdown(wait=True)
        raise
    pool.shutdown(wait=True)


def _key(finding: Finding) -> tuple[str, str | None, str | None]:
    return finding.code, finding.run_id, finding.entity_id


def _skip_reason(finding: Finding, world: World, options: RepairOptions) -> str:
    revivable = options.allow_revive and finding.code in registry.REVIVALS
    if finding.code in registry.REPORT_ONLY and not revivable:
        return registry.REPORT_ONLY[finding.code]
    if finding.in_flight:
        return "too young: younger than --min-age, its original write may still be landing"
    if finding.code in ("WF131", "WF132", "WF133") and not world.has_graphile:
        return "graphile_worker not installed"
    return ""


def _context(
    conn: psycopg.Connection[Any],
    world: World,
    writer: EventWriter,
    options: RepairOptions,
    run_id: str,
    lock: bool,
) -> Context:
    query = sql.load("repair/lock_run" if lock else "repair/read_run")
    with conn.cursor(row_factory=dict_row) as cur:
        run = cur.execute(query, {"run_id": run_id}).fetchone()
    if run is None:
        raise Refused("state moved: the run row is gone")
    return Context(conn, lock, world, writer, options.task, run, options.allow_rewrite)


def _plan_run(
    conn: psycopg.Connection[Any],
    world: World,
    writer: EventWriter,
    options: RepairOptions,
    run_id: str,
    findings: list[Finding],
    locked_jobs: LockedJobs,
    releasing: set[str],
) -> list[Item]:
    """The dry run of one run: the same guards as the apply (`_run_guard`, `_decide`), read
    only, so it predicts the apply's refusals; a lock the apply would release first
    (`releasing`: --unlock-older-than) is not held against the run."""
    items = []
    with read_only(conn):
        try:
            ctx = _context(conn, world, writer, options, run_id, lock=False)
            if world.has_graphile:
                _run_guard(conn, options, run_id, locked_jobs, releasing)
        except Refused as exc:
            return [_refused(f, exc) for f in findings]
        for finding in findings:
            try:
                action = _decide(ctx, options, finding)
                scheme = ""
                if action.events:
                    rewritten = f"slot (after the {ctx.rewritten} rewrite)" if ctx.rewritten else ""
                    scheme = rewritten or writer.scheme(conn, run_id, lock=False)
                guards = _guards(finding, world)
                lines = action.describe() + ([f"id scheme: {scheme}"] if scheme else []) + guards
                items.append(Item(finding, "planned", actions=lines))
            except Superseded as exc:
                items.append(Item(finding, "skipped", str(exc)))
            except (Refused, RefusedError) as exc:
                items.append(Item(finding, "refused", str(exc)))
    return items


def _guards(finding: Finding, world: World) -> list[str]:
    out = [
        "guard: lock run row and entity row (FOR UPDATE, lock_timeout)",
        f"guard: re-run {finding.code} for this run under lock; refuse if moved or too young",
    ]
    if world.has_graphile:
        out.append("guard: refuse while a queue job for the run is locked")
    return out


class LockedJobs:
    """Which runs have a queue job locked right now: one snapshot shared by all workers,
    refreshed when older than `max_age` seconds (negative: read at every call, in the caller's
    transaction). A job locked within that last second may be missed; the age gate (--min-age)
    is the guard that covers the original writer's window."""

    def __init__(self, max_age: float = 1.0, unreadable: str = "") -> None:
        self.max_age = max_age
        # Why the queue's rows cannot be read (row-level security): every run is refused.
        self.unreadable = unreadable
        self._lock = threading.Lock()
        self._taken = -1.0
        self._by_run: dict[str, list[dict[str, Any]]] = {}

    def holder(
        self, conn: psycopg.Connection[Any], task: str, run_id: str, skip: set[str] | None = None
    ) -> dict[str, Any] | None:
        """A lock on one of the run's jobs (not one of `skip`, job ids), or None."""
        with self._lock:
            if self.max_age < 0 or time.monotonic() - self._taken > self.max_age:
                params = {"task": task, "lock_reset": queue_locks.GRAPHILE_LOCK_RESET}
                with conn.cursor(row_factory=dict_row) as cur:
                    rows = cur.execute(sql.load("repair/locked_jobs"), params).fetchall()
                self._by_run = {}
                for row in rows:
                    self._by_run.setdefault(row["run_id"], []).append(row)
                self._taken = time.monotonic()
            held = self._by_run.get(run_id, [])
            return next((r for r in held if str(r["id"]) not in (skip or ())), None)


def _apply_run(
    conn: psycopg.Connection[Any],
    world: World,
    writer: EventWriter,
    options: RepairOptions,
    run_id: str,
    findings: list[Finding],
    reason: str,
    locked_jobs: LockedJobs,
    stale: _Stale | None = None,
) -> list[Item]:
    """One run's repairs in one transaction, under its row locks. Its stale queue locks
    (`stale`) are released first in the same transaction, so no worker can take the job
    before the heal commits; if the run's repair is refused, they are released on their
    own afterwards, as the operator asked."""
    items: list[Item] = []
    released: list[Item] = []
    try:
        with conn.transaction():
            ctx = _context(conn, world, writer, options, run_id, lock=True)
            if stale and stale.locks:
                released = [
                    _item(wf135.release_one(conn, held, stale.unlock, reason))
                    for held in stale.locks
                ]
            if world.has_graphile:
                fresh = (
                    LockedJobs(max_age=-1.0, unreadable=world.queue_unreadable)
                    if released
                    else locked_jobs
                )
                _run_guard(conn, options, run_id, fresh, set())
            for finding in findings:
                items.append(_apply_one(ctx, options, finding, reason, len(findings) > 1))
    except Refused as exc:
        done = {id(i.finding) for i in items}
        items = [_refused(f, exc) for f in findings if id(f) not in done] + [
            _refused(i.finding, exc) for i in items
        ]
        released = _release_alone(conn, stale, reason)
    except pgerrors.LockNotAvailable:
        items = [
            Item(f, "refused", "lock timeout: another session holds the run") for f in findings
        ]
        released = _release_alone(conn, stale, reason)
    return released + items


def _run_guard(
    conn: psycopg.Connection[Any],
    options: RepairOptions,
    run_id: str,
    locked_jobs: LockedJobs,
    releasing: set[str],
) -> None:
    """The run-level guard of both the dry run and the apply: refuse the run while a queue job
    for it is locked within graphile's reset window (queue_locks.GRAPHILE_LOCK_RESET), unless
    it is one of the locks being released first (`releasing`, job ids)."""
    if locked_jobs.unreadable:
        raise Refused(
            f"cannot evaluate the guard 'no queue job of the run is locked': "
            f"{locked_jobs.unreadable}; refused rather than skipped (docs/cli.md, 'Roles')"
        )
    holder = locked_jobs.holder(conn, options.task, run_id, skip=releasing)
    if holder is not None:
        raise Locked(_locked_message(holder), _held_minutes(holder))


def _decide(ctx: Context, options: RepairOptions, finding: Finding) -> Action:
    """What to write for one finding, or Refused/Superseded: the one decision the dry run
    prints and the apply executes (the row-heal rule, the repair's own plan and its
    refusals, and the re-check with doctor's SQL and --min-age)."""
    ctx.refuse_row_heal(finding.code)
    action = _repair(options, finding).plan(ctx, finding)
    action = for_release(action, ctx.world.release_or_default)
    _recheck(ctx, options, finding)
    return action


def _release_alone(conn: psycopg.Connection[Any], stale: _Stale | None, reason: str) -> list[Item]:
    if not stale or not stale.locks:
        return []
    return [_item(r) for r in wf135.release(conn, stale.locks, stale.unlock, reason)]


class Locked(Refused):
    """Refused because a queue job of the run is locked; `minutes`: how long, whole."""

    def __init__(self, message: str, minutes: int) -> None:
        super().__init__(message)
        self.minutes = minutes


def _refused(finding: Finding, exc: Refused) -> Item:
    return Item(finding, "refused", str(exc), locked_minutes=getattr(exc, "minutes", None))


def _held_minutes(job: dict[str, Any]) -> int:
    held = datetime.now(UTC) - job["locked_at"]
    return max(int(held.total_seconds() // 60), int(wf135.UNLOCK_FLOOR.total_seconds() // 60))


def _locked_message(job: dict[str, Any]) -> str:
    """Name the holder, since when, and the way out when that worker is gone (WF135); the
    age to give is the report's one `unlock_hint`, which covers every lock listed."""
    held = datetime.now(UTC) - job["locked_at"]
    return (
        f"a queue job for the run (job {job['id']}) is locked by {job['locked_by']} since "
        f"{timestamp(job['locked_at'])} ({format_duration(held)}): a live writer may still "
        "append the same event; if that worker is gone (graphile frees its jobs after 4 h), "
        "`wfctl repair --unlock-older-than AGE` shows the locks it would release, then add "
        "--apply (the AGE that covers every lock listed is given at the end)"
    )


def _apply_one(
    ctx: Context, options: RepairOptions, finding: Finding, reason: str, savepoint: bool
) -> Item:
    """One finding; with others in the same run, in a savepoint so a refusal undoes only it."""
    scope = ctx.conn.transaction() if savepoint else contextlib.nullcontext()
    try:
        with scope:
            action = _decide(ctx, options, finding)
            written = _execute(ctx, action)
            audit = _audit(ctx, finding, reason, action, written)
            return Item(
                finding, "applied", actions=action.describe(), event_ids=written, audit_id=audit
            )
    except Superseded as exc:
        return Item(finding, "skipped", str(exc))
    except (Refused, RefusedError) as exc:  # RefusedError: the writer met a mixed-scheme log
        return Item(finding, "refused", str(exc))
    except AlreadyExists as exc:
        return Item(finding, "refused", f"state moved: the event exists now ({exc.event_id})")


def _repair(options: RepairOptions, finding: Finding) -> Repair:
    found = registry.repair_for(finding.code, options.allow_revive)
    assert found is not None, finding.code  # _skip_reason let only repairable codes through
    return found


def _recheck(ctx: Context, options: RepairOptions, finding: Finding) -> None:
    """Re-run the doctor check on this run, under the locks now held."""
    check = checks_registry.BY_CODE[finding.code]
    params = doctor.DoctorOptions(
        min_age=options.min_age, run_ids=(ctx.run["id"],), job_prefix=options.job_prefix
    ).params()
    rows = ctx.conn.execute(sql.load(check.sql_name(doctor.sql_era(ctx.world))), params)
    found = (check.finding(r) for r in rows.fetchall())
    same = [f for f in found if f is not None and f.entity_id == finding.entity_id]
    if not same:
        raise Refused("state moved: the finding no longer holds")
    if same[0].in_flight:
        raise Refused("too young: the entity changed within --min-age")


def _execute(ctx: Context, action: Action) -> list[str]:
    run_id = ctx.run["id"]
    written: list[str] = action.rewrite.apply(ctx) if action.rewrite else []
    if action.marker:
        slotlog.insert_marker(ctx)
    for event in action.events:
        result = ctx.writer.append(
            ctx.conn,
            run_id,
            event.type,
            event.correlation_id,
            event.data,
            event.spec_version,
            first_slot=event.first_slot,
            between=event.between,
            created_at=event.created_at,
        )
        written.append(result.id)
    for name, params in action.row_changes:
        changed = ctx.conn.execute(sql.load(name), {"run_id": run_id, **params}).fetchall()
        verb = name.rpartition("/")[2]
        if len(changed) != 1:
            raise Refused(f"state moved: {verb} changed {len(changed)} rows")
        written.append(f"row:{changed[0][0]}:{verb}")
    if action.fail_jobs:
        failed = ctx.conn.execute(
            sql.load("repair/fail_jobs"),
            {"job_ids": action.fail_jobs, "message": action.fail_message},
        ).fetchall()
        if len(failed) != len(action.fail_jobs):
            raise Refused("a job to stop was locked meanwhile")
        written += [f"job:{row[0]}:failed" for row in failed]
    if action.wake_up:
        message_id = ids.prefixed("msg")
        body = json.dumps({"runId": run_id, "requestedAt": datetime.now(UTC).isoformat()})
        job = ctx.conn.execute(
            sql.load("repair/add_wakeup_job"),
            {
                "task": ctx.task,
                "message_id": message_id,
                "workflow_name": ctx.run["name"],
                "body": body,
                "max_attempts": ctx.world.release_or_default.max_attempts,
            },
        ).fetchone()
        assert job is not None
        written.append(f"job:{job[0]}:added")
    return written


def _audit(ctx: Context, finding: Finding, reason: str, action: Action, written: list[str]) -> int:
    row = ctx.conn.execute(
        sql.load("repair/audit"),
        {
            "version": __version__,
            "reason": reason,
            "code": finding.code,
            "run_id": ctx.run["id"],
            "entity_id": finding.entity_id,
            "event_ids": [w for w in written if not w.startswith(("job:", "row:"))],
            "details": Jsonb(
                {"actions": action.describe(), "written": written, "finding": finding.detail}
            ),
        },
    ).fetchone()
    assert row is not None
    return int(row[0])
