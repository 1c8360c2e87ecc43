"""The repair runner decides: detect, then one short guarded transaction per run, in rounds.

For each run with findings, on --apply:
1. lock the run row (FOR UPDATE, bounded by the session's lock_timeout); refuse the whole
   run while a queue job for it is locked (a live writer may be about to insert the same
   event; the locked jobs are read as a snapshot at most a second old, see LockedJobs);
   wait for the other transactions' open writes to the events table (one may be appending
   the same event: its row is invisible until it commits; `_await_event_writers`);
2. per finding, in a savepoint: let the repair lock and read its entity row, re-run the very
   check SQL doctor used, scoped to this run, and refuse ("state moved", "too young") unless
   the finding still holds past --min-age; then append through the shared EventWriter, act on
   the queue, and write the audit row; a refusal rolls back only that finding;
3. before committing, wait for the event writers that opened meanwhile and roll the run back
   if one committed a copy of an appended event (`_refuse_concurrent_copies`).
The dry run is the apply rehearsed in one transaction that is rolled back (`repair`), so it
shows what the apply writes, rounds included; on a standby it plans read-only (`_plan_run`).
Runs are independent, so several are repaired at once, each on its own connection
(`workers`): a repair is latency-bound (one commit per run), not CPU-bound. What the result
says (items, verdict) is wfctl.repair.verdict's, which imports nothing from here.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import groupby
from typing import Any

import psycopg
from psycopg import errors as pgerrors
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from wfctl import __version__, sql
from wfctl.clock import timestamp
from wfctl.connection.db import read_only
from wfctl.doctor import registry as checks_registry
from wfctl.doctor import runner as doctor
from wfctl.doctor.base import Finding
from wfctl.durations import format_duration
from wfctl.errors import RefusedError
from wfctl.ops import wakeup
from wfctl.repair import registry, slotlog, wf135
from wfctl.repair.base import Action, Context, Refused, Repair, Superseded, for_release
from wfctl.repair.verdict import (
    Item,
    RepairReport,
    counts,
    interrupted,
    settle,
)
from wfctl.signals import stop_on_signal
from wfctl.world import queue_locks
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
    if conn.info.transaction_status != TransactionStatus.IDLE:  # inside the rehearsal: it
        with conn.transaction():  # must see its own writes, and may not turn read-only
            return doctor.run(conn, world, checks, opts)
    with read_only(conn):
        return doctor.run(conn, world, checks, opts)


def ordered(report: doctor.Report) -> list[Finding]:
    """A report's findings a repair acts on or reports, in repair order."""
    order = {r.code: n for n, r in enumerate(registry.ORDER)}
    found = [f for f in report.findings() if f.run_id is not None or f.code in registry.REPORT_ONLY]
    return sorted(found, key=lambda f: (f.run_id or "", order.get(f.code, 99)))


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
    """Apply repairs for every finding, or rehearse the apply (the dry run); see the module
    docstring.

    The dry run is the apply itself, run in one transaction that is rolled back: the same
    rounds, guards, released locks and writes, so it shows exactly what the apply will write
    and exits as it will (what it cannot show: a session that writes between the two). It
    takes the apply's row locks while it runs; it writes no audit row. On a read-only standby,
    where no write can even be tried, it plans read-only (`RepairReport.read_only_plan`).

    `connect` opens more sessions for parallel applies (`options.workers`); without it,
    everything runs on `conn`. `unlock` first lists (dry run) or releases the dead workers'
    locks it selects (WF135), so the repairs of those runs are no longer refused.
    """
    if apply:
        return converge(conn, world, options, reason=reason, connect=connect, unlock=unlock)
    if world.standby:
        return _read_only_plan(conn, world, options, unlock)
    try:
        with conn.transaction(force_rollback=True):
            conn.execute(sql.load("repair/transaction_name"), {"name": REPAIRING})
            report = converge(conn, world, options, reason=reason, unlock=unlock, rehearse=True)
    except KeyboardInterrupt:  # the rehearsal rolled back: nothing written, nothing to show
        return interrupted(RepairReport(applied=False), "plan")
    for item in report.items:
        if item.outcome == "applied":
            item.outcome, item.event_ids, item.audit_id = "planned", [], None
    if report.interrupted and report.interrupted_during != "detection":
        report.interrupted_during = "plan"  # its writes were rehearsals, rolled back
    return report


def _read_only_plan(
    conn: psycopg.Connection[Any],
    world: World,
    options: RepairOptions,
    unlock: wf135.Unlock | None,
) -> RepairReport:
    """The dry run where nothing can be rehearsed (a standby): each run planned in a READ
    ONLY transaction with the apply's guards and decisions (`_plan_run`), one round."""
    report = RepairReport(applied=False, read_only_plan="the server is a read-only standby")
    try:
        detected = diagnose(conn, world, options)
    except KeyboardInterrupt:  # psycopg cancelled the query; the read-only transaction
        return interrupted(report, "detection")  # rolled back: nothing to undo
    report.rounds = 1
    _round(conn, world, options, report, detected, apply=False, unlock=unlock)
    return report


# Rounds of one apply. Each round after the first needs a finding no earlier round saw that a
# repair of the previous round uncovered; chains are short (release -> WF132, heal -> WF133).
MAX_ROUNDS = 4


def converge(
    conn: psycopg.Connection[Any],
    world: World,
    options: RepairOptions,
    *,
    reason: str,
    connect: Callable[[], psycopg.Connection[Any]] | None = None,
    unlock: wf135.Unlock | None = None,
    rehearse: bool = False,
) -> RepairReport:
    """Apply in rounds until doctor finds nothing new to attempt, then give doctor's verdict
    (verdict.settle). Each round repairs what doctor found and no round attempted yet; then
    doctor runs again in the repair's scope. A step can uncover findings the previous
    detection could not see: a released dead worker's lock turns its run's duplicate recovery
    jobs into a WF132 (the check skips locked jobs), a healed wait can leave a run with no
    wake-up (WF133). So while a round applied something and the new detection holds findings
    no round attempted, another round runs, up to MAX_ROUNDS; what is then left is said in
    `unfinished`.

    A signal during a detection (the first, or one after a round) ends the apply there: the
    report lists what earlier rounds wrote, `interrupted_during` is "detection", and no
    verdict is given; one during a round is handled by the round."""
    report = RepairReport(applied=not rehearse)
    stop = threading.Event()
    attempted: set[tuple[str, str | None, str | None]] = set()
    try:
        detected = diagnose(conn, world, options)
        while True:
            report.rounds += 1
            items = _round(
                conn, world, options, report, detected, apply=True, reason=reason,
                connect=None if rehearse else connect, unlock=unlock, attempted=attempted,
                stop=stop, rehearse=rehearse,
            )  # fmt: skip
            if report.interrupted:
                return report  # what was written is in the items; no verdict after a signal
            if not any(i.outcome == "applied" for i in items):
                if any(i.outcome == "refused" for i in items):  # moved under it: whoever
                    detected = diagnose(conn, world, options)  # moved it, doctor's verdict now
                break  # else nothing moved: the detection this round acted on is doctor's
            detected = diagnose(conn, world, options)
            new = _unattempted(detected, attempted)
            if not new:
                break
            if report.rounds == MAX_ROUNDS:
                report.unfinished = (
                    f"{len(new)} finding(s) uncovered by the last of {MAX_ROUNDS} rounds were "
                    f"not attempted ({', '.join(sorted({code for code, _, _ in new}))}): run "
                    "the apply again"
                )
                break
    except KeyboardInterrupt:  # psycopg cancelled doctor's query; its read-only transaction
        return interrupted(report, "detection")  # rolled back: nothing of this pass written
    return settle(report, detected)


def _unattempted(
    detected: doctor.Report, attempted: set[tuple[str, str | None, str | None]]
) -> list[tuple[str, str | None, str | None]]:
    """Actionable findings (not in flight) no round has attempted yet."""
    return [key for f in ordered(detected) if not f.in_flight and (key := _key(f)) not in attempted]


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
    rehearse: bool = False,
) -> list[Item]:
    """One detect-and-repair pass over `detected`: the stale locks `unlock` selects, then each
    run's findings not in `attempted` (the keys are added). Items are appended to `report`
    (and returned); a read-only plan (`apply` False) plans instead of writing; a rehearsal
    writes as the apply does, without audit rows, in the caller's transaction.

    A signal (KeyboardInterrupt) ends the round with `report` marked interrupted and where:
    while reading (detection, plan) at once; while writing (unlock, repair) the transaction in
    flight commits or rolls back whole first (wfctl.signals), so the items are exactly
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
        if locks:  # the stale locks this round releases were findings before it too
            report.before[wf135.CODE] = report.before.get(wf135.CODE, 0) + len(locks)
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
            session, world, writer, options, run_id, todo, reason, locked_jobs, stale,
            rehearse=rehearse,
        )  # fmt: skip
        with lock:
            report.items.extend(items)
            report.lock_hold_ms.append((time.perf_counter() - started) * 1000)

    lock = threading.Lock()
    locked_jobs = LockedJobs(unreadable=world.queue_unreadable)
    stop = stop or threading.Event()
    during = "unlock" if unlock is not None and alone else "repair"
    try:
        # A rehearsal stops at the first signal: all of it rolls back, nothing to finish.
        with contextlib.nullcontext() if rehearse else stop_on_signal(stop):
            # Each lock released alone commits on its own: listed as it commits, in front of
            # this round's other items; no release starts after the signal.
            releases = (
                wf135.release(conn, alone, unlock, reason, audit=not rehearse)
                if unlock
                else iter(())
            )
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
                    workers = min(options.workers, len(batches))
                    _in_parallel(world, batches, one, connect, workers, stop)
    except KeyboardInterrupt:
        # A second signal (or SIGTERM/SIGINT outside the main thread's handler): the
        # transaction in flight on this thread was rolled back; report what was written.
        stop.set()
    if stop.is_set():
        interrupted(report, during)
    return report.items[start:]


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
    world: World,
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
            world.guard(session)
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
                items.append(Item(finding, "planned", actions=_plan_lines(ctx, finding, action)))
            except Superseded as exc:
                items.append(Item(finding, "skipped", str(exc)))
            except (Refused, RefusedError) as exc:
                items.append(Item(finding, "refused", str(exc)))
    return items


def _plan_lines(ctx: Context, finding: Finding, action: Action) -> list[str]:
    """What a dry run shows of one decided finding: the writes, the id scheme of appended
    events, and the guards the apply re-checks."""
    scheme = ""
    if action.events:
        rewritten = f"slot (after the {ctx.rewritten} rewrite)" if ctx.rewritten else ""
        scheme = rewritten or ctx.writer.scheme(ctx.conn, ctx.run["id"], lock=False)
    guards = _guards(finding, ctx.world)
    return action.describe() + ([f"id scheme: {scheme}"] if scheme else []) + guards


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
    *,
    rehearse: bool = False,
) -> list[Item]:
    """One run's repairs in one transaction, under its row locks. Its stale queue locks
    (`stale`) are released first in the same transaction, so no worker can take the job
    before the heal commits; if the run's repair is refused, they are released on their
    own afterwards, as the operator asked. Before its first write, the transaction waits
    for the other sessions' open writes to the events table (`_await_event_writers`): one
    may be appending the very event this repair would. `rehearse`: no audit rows (the
    caller rolls everything back)."""
    items: list[Item] = []
    released: list[Item] = []
    try:
        with conn.transaction():
            conn.execute(sql.load("repair/transaction_name"), {"name": REPAIRING})
            ctx = _context(conn, world, writer, options, run_id, lock=True)
            if stale and stale.locks:
                released = [
                    _item(wf135.release_one(conn, held, stale.unlock, reason, not rehearse))
                    for held in stale.locks
                ]
            if world.has_graphile:
                fresh = (
                    LockedJobs(max_age=-1.0, unreadable=world.queue_unreadable)
                    if released
                    else locked_jobs
                )
                _run_guard(conn, options, run_id, fresh, set())
            _await_event_writers(conn)
            for finding in findings:
                items.append(_apply_one(ctx, options, finding, reason, len(findings) > 1, rehearse))
            appended = [e for i in items if i.outcome == "applied" for e in i.event_ids]
            if appended and _await_event_writers(conn):  # opened while this one wrote
                _refuse_concurrent_copies(conn, run_id, appended)
    except Refused as exc:
        done = {id(i.finding) for i in items}
        items = [_refused(f, exc) for f in findings if id(f) not in done] + [
            _refused(i.finding, exc) for i in items
        ]
        released = _release_alone(conn, stale, reason, rehearse)
    except pgerrors.LockNotAvailable:
        items = [
            Item(f, "refused", "lock timeout: another session holds the run") for f in findings
        ]
        released = _release_alone(conn, stale, reason, rehearse)
    return released + items


# A repair's transaction (and a dry run's rehearsal) names itself for the transaction: other
# repairs do not wait for its writes (sql/repair/transaction_name.sql, open_event_writers.sql).
REPAIRING = f"wfctl/{__version__} repair"
# With no lock_timeout set (0), the longest wait for another session's open event writes.
WRITERS_WAIT_S = 30.0


def _await_event_writers(conn: psycopg.Connection[Any]) -> bool:
    """Wait for the transactions that have written to the events table and are still open
    when the run's transaction is about to write (up to the session's lock_timeout): one may
    be appending the very event this repair would append, and its row is invisible until it
    commits. Once they ended, the re-check under lock (`_recheck`, a new statement) sees what
    they committed. One still open past the limit refuses the run. Called before the run's
    first write, so two repairs never wait on each other, and again just before it commits
    (`_refuse_concurrent_copies`). What remains: a writer whose insert starts after that last
    look and commits after this transaction (one round trip). Whether it waited."""
    query = sql.load("repair/open_event_writers")
    rows = conn.execute(query, {"repairing": REPAIRING}).fetchall()
    if not rows:
        return False
    waiting = {(pid, vxid) for pid, vxid, _ in rows}
    limit = float(rows[0][2]) or WRITERS_WAIT_S
    deadline = time.monotonic() + limit
    while waiting:
        if time.monotonic() > deadline:
            pid = sorted(waiting, key=lambda w: (w[0] is None, w))[0][0]
            raise Refused(
                f"another transaction (pid {pid}) has written to workflow.workflow_events and "
                f"is still open after {format_duration(timedelta(seconds=limit))}: it may be "
                "appending this very event; nothing written for the run (retry once it ended)"
            )
        time.sleep(0.005)
        rows = conn.execute(query, {"repairing": REPAIRING}).fetchall()
        waiting &= {(pid, vxid) for pid, vxid, _ in rows}
    return True


def _refuse_concurrent_copies(conn: psycopg.Connection[Any], run_id: str, ids: list[str]) -> None:
    """Before committing, after waiting for the writers that opened while this repair wrote:
    refuse (the run's repair rolls back) if one of them committed a copy of an event this
    repair appended: the original writer landed after all, and two would be a duplicate."""
    params = {"run_id": run_id, "ids": ids}
    copies = conn.execute(sql.load("repair/concurrent_copies"), params).fetchall()
    if copies:
        mine, kind, entity, other = copies[0]
        raise Refused(
            f"state moved: another session committed {kind} {other} for {entity or run_id} "
            f"while this repair appended {mine}: rolled back (no duplicate)"
        )


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


def _release_alone(
    conn: psycopg.Connection[Any], stale: _Stale | None, reason: str, rehearse: bool
) -> list[Item]:
    if not stale or not stale.locks:
        return []
    released = wf135.release(conn, stale.locks, stale.unlock, reason, audit=not rehearse)
    return [_item(r) for r in released]


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
    ctx: Context,
    options: RepairOptions,
    finding: Finding,
    reason: str,
    savepoint: bool,
    rehearse: bool = False,
) -> Item:
    """One finding; with others in the same run, in a savepoint so a refusal undoes only it."""
    scope = ctx.conn.transaction() if savepoint else contextlib.nullcontext()
    try:
        with scope:
            action = _decide(ctx, options, finding)
            lines = _plan_lines(ctx, finding, action) if rehearse else action.describe()
            written = _execute(ctx, action)
            audit = None if rehearse else _audit(ctx, finding, reason, action, written)
            return Item(finding, "applied", actions=lines, event_ids=written, audit_id=audit)
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
        job = wakeup.add_job(
            ctx.conn,
            ctx.task,
            run_id,
            ctx.run["name"],
            ctx.world.release_or_default.max_attempts,
        )
        written.append(f"job:{job}:added")
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
