"""The doctor runner: every selected check inside one READ ONLY transaction.

Read-only by construction: the transaction is `READ ONLY`, so the server refuses any write.
Each check runs in its own savepoint, so a check that fails (no privilege on the queue
schema, a statement timeout) is reported UNKNOWN and the others still run. Rows stream
from a plain query (`cursor.stream`), not a server-side cursor: memory stays flat however large
the history is, and the server may plan the query in parallel (a cursor is planned for its
first 10 % of rows and never in parallel: 1.6x slower on a 20M-event `--all`).

With helper sessions (`doctor --jobs N`) the checks are shared out over N sessions that read
one exported snapshot (`pg_export_snapshot` / `SET TRANSACTION SNAPSHOT`, REPEATABLE READ
READ ONLY): every check sees exactly the world the first one saw, as in one session, while
the history checks' scans and aggregates use more than one core.
"""

from __future__ import annotations

import contextlib
import dataclasses
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg import errors as pgerrors
from psycopg import sql as pgsql

from wfctl import __version__, sql
from wfctl.clock import timestamp
from wfctl.doctor.base import Check, CheckResult, Finding, Needs, Severity, Status
from wfctl.errors import ExitStatus
from wfctl.world.model import World
from wfctl.world.queue_locks import GRAPHILE_LOCK_RESET

REPORT_SCHEMA_VERSION = 1
FETCH_SIZE = 2000
# With helper sessions, the checks that read all history start first (longest first, as
# measured on 20M-event worlds) so no session is left with one long check at the end.
LONGEST_FIRST = (
    "WF141", "WF123", "WF111", "WF101", "WF121", "WF113", "WF122",
    "WF148", "WF146", "WF143", "WF147", "WF145", "WF142",
)  # fmt: skip
Conn = psycopg.Connection[Any]


@dataclass(frozen=True)
class DoctorOptions:
    """Scope and thresholds; the defaults are what cron should run every minute."""

    min_age: timedelta = timedelta(minutes=10)
    all_runs: bool = False
    run_ids: tuple[str, ...] = ()
    since: timedelta | None = None
    limit: int = 5
    attempt_threshold: int = 100
    job_prefix: str = "workflow_"
    # Transaction-local work_mem: history checks hash millions of (run, entity) keys; at the
    # server's stock 4MB they spill to disk in hundreds of batches. None keeps the server's.
    work_mem: str | None = "64MB"
    # Transaction-local random_page_cost ceiling where the scope is a few runs (live, --run):
    # their events are read by index (sql/doctor/session_settings.sql). None keeps the server's.
    random_page_cost: float | None = 1.1
    # Sessions the checks are shared out over (one snapshot); 1: the caller's session alone.
    jobs: int = 1

    @property
    def narrow(self) -> bool:
        """A scope of a few runs (the live ones, or those --run names), not all history."""
        return not self.all_runs and self.since is None

    def settings(self) -> dict[str, Any]:
        """The transaction's own settings (sql/doctor/session_settings.sql)."""
        return {
            "work_mem": self.work_mem,
            "random_page_cost": self.random_page_cost if self.narrow else None,
        }

    def params(self) -> dict[str, Any]:
        """The parameters every check SQL accepts (unused ones are ignored)."""
        return {
            # --run names runs explicitly: whatever their status, they are in scope.
            "live_only": not (self.all_runs or self.run_ids),
            "run_ids": list(self.run_ids) or None,
            "since": self.since,
            "min_age": self.min_age,
            "attempt_threshold": self.attempt_threshold,
            "task": f"{self.job_prefix}flows",
            "own_pids": None,  # the doctor's sessions (runner.run fills it in)
            "lock_reset": GRAPHILE_LOCK_RESET,  # graphile's lock reset window (WF135)
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "min_age_seconds": self.min_age.total_seconds(),
            "scope": "all" if self.all_runs else ("runs" if self.run_ids else "live"),
            "run_ids": list(self.run_ids),
            "since_seconds": self.since.total_seconds() if self.since else None,
            "limit": self.limit,
            "attempt_threshold": self.attempt_threshold,
            "job_prefix": self.job_prefix,
            "work_mem": self.work_mem,
            "random_page_cost": self.settings()["random_page_cost"],
            "jobs": self.jobs,
        }


@dataclass
class Report:
    world: World
    options: DoctorOptions
    results: list[CheckResult] = field(default_factory=list)
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    seconds: float = 0.0

    @property
    def status(self) -> Status:
        """Worst first: critical, unknown, warning; otherwise ok. A world wfctl does not know
        whole is at least unknown (docs/cli.md, 'A world wfctl does not know')."""
        statuses = {r.status for r in self.results}
        if self.world.unknowable:
            statuses.add(Status.UNKNOWN)
        for status in (Status.CRITICAL, Status.UNKNOWN, Status.WARNING):
            if status in statuses:
                return status
        return Status.OK

    @property
    def exit_status(self) -> ExitStatus:
        return {
            Status.CRITICAL: ExitStatus.CRITICAL,
            Status.UNKNOWN: ExitStatus.UNKNOWN,
            Status.WARNING: ExitStatus.WARNING,
        }.get(self.status, ExitStatus.OK)

    def findings(self) -> Iterator[Finding]:
        for result in self.results:
            yield from result.samples

    def as_dict(self) -> dict[str, Any]:
        """The versioned JSON report (schema: docs/schemas/doctor-report.v1.json)."""
        return {
            "schema_version": REPORT_SCHEMA_VERSION,
            "tool": {"name": "wfctl", "version": __version__},
            "generated_at": timestamp(self.started_at),
            "duration_seconds": round(self.seconds, 4),
            "database": {
                "name": self.world.database,
                "user": self.world.user,
                "server_version": self.world.server_version,
                "standby": self.world.standby,
                "era": self.world.era,
                "release": self.world.release.name if self.world.release else None,
                "unknown": self.world.unknowable or None,
                "graphile_worker": self.world.has_graphile,
            },
            "options": self.options.as_dict(),
            "summary": {
                "status": self.status.value,
                "exit_code": int(self.exit_status),
                "findings": sum(r.count for r in self.results),
                "in_flight": sum(r.in_flight for r in self.results),
            },
            "checks": [r.as_dict() for r in self.results],
        }


def sql_era(world: World) -> str:
    """Which SQL variant fits: slot-era SQL needs the marker table; every other release
    numbers events with wevt_ ids (the beta.29 variants)."""
    return "slot" if world.has_event_slots else world.release_or_default.sql_variant


def run(
    conn: Conn,
    world: World,
    checks: list[Check],
    options: DoctorOptions,
    on_check: Callable[[Check], None] | None = None,
    on_finding: Callable[[Finding], None] | None = None,
    helpers: Sequence[Conn] = (),
) -> Report:
    """Run `checks` and return the report (results in the order of `checks`).

    The caller opens the transaction (`with db.read_only(conn):`) around both the world
    introspection and this call, so the whole diagnosis sees one write-proof session. With
    `helpers` (idle sessions, no open transaction), the caller's transaction must be
    REPEATABLE READ (`db.read_only(conn, snapshot=True)`): the helpers import its snapshot.
    """
    report = Report(world, options)
    started = time.perf_counter()
    sessions = [conn, *helpers]
    params = {
        **options.params(),
        "own_pids": [s.info.backend_pid for s in sessions],
    }
    era = sql_era(world)
    with _joined(conn, helpers):
        for session in sessions:
            session.execute(sql.load("doctor/session_settings"), options.settings())
        if not helpers:
            for check in checks:
                if on_check:
                    on_check(check)
                report.results.append(
                    _run_one(conn, world, check, era, params, options.limit, on_finding)
                )
        else:
            report.results = _run_shared(
                sessions, world, checks, era, params, options.limit, on_check, on_finding
            )
    report.seconds = time.perf_counter() - started
    return report


@contextlib.contextmanager
def _joined(conn: Conn, helpers: Sequence[Conn]) -> Iterator[None]:
    """Open each helper's READ ONLY transaction on the snapshot of `conn`'s transaction."""
    if not helpers:
        yield
        return
    row = conn.execute("SELECT pg_export_snapshot()").fetchone()
    assert row is not None
    take = pgsql.SQL("SET TRANSACTION SNAPSHOT {}").format(pgsql.Literal(str(row[0])))
    with contextlib.ExitStack() as stack:
        for helper in helpers:
            stack.enter_context(helper.transaction())
            helper.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            helper.execute(take)
        yield


def _run_shared(
    sessions: list[Conn],
    world: World,
    checks: list[Check],
    era: str,
    params: dict[str, Any],
    limit: int,
    on_check: Callable[[Check], None] | None,
    on_finding: Callable[[Finding], None] | None,
) -> list[CheckResult]:
    """One thread per session takes the next check (longest first); callbacks serialised."""
    rank = {code: i for i, code in enumerate(LONGEST_FIRST)}
    order = sorted(range(len(checks)), key=lambda i: (rank.get(checks[i].code, len(rank)), i))
    todo: queue.SimpleQueue[int] = queue.SimpleQueue()
    for index in order:
        todo.put(index)
    results: list[CheckResult | None] = [None] * len(checks)
    lock = threading.Lock()
    failures: list[BaseException] = []

    def found(finding: Finding) -> None:
        if on_finding:
            with lock:
                on_finding(finding)

    def work(session: Conn) -> None:
        try:
            while True:
                try:
                    index = todo.get_nowait()
                except queue.Empty:
                    return
                if on_check:
                    with lock:
                        on_check(checks[index])
                results[index] = _run_one(session, world, checks[index], era, params, limit, found)
        except BaseException as exc:  # a lost session: re-raised in the caller's thread
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(s,), daemon=True) for s in sessions]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join()
    except BaseException:  # Ctrl-C: stop the other sessions' statements too
        for session in sessions:
            with contextlib.suppress(psycopg.Error):
                session.cancel()
        raise
    if failures:
        raise failures[0]
    return [r for r in results if r is not None]


def _run_one(
    conn: Conn,
    world: World,
    check: Check,
    era: str,
    params: dict[str, Any],
    limit: int,
    on_finding: Callable[[Finding], None] | None = None,
) -> CheckResult:
    result = CheckResult(check)
    missing = _missing_needs(check, world)
    if missing:
        result.status, result.message = Status.NOT_APPLICABLE, missing
        return result
    unreadable = _unreadable(check, world)
    if unreadable:
        result.status, result.message = Status.UNKNOWN, unreadable
        return result
    started = time.perf_counter()
    try:
        with conn.transaction():  # a savepoint: a failing check leaves the others intact
            with conn.cursor() as cur:
                for row in cur.stream(sql.load(check.sql_name(era)), params, size=FETCH_SIZE):
                    finding = check.finding(row)
                    if finding is None:
                        continue
                    finding = weigh(finding, world, check.severity)
                    result.add(finding, limit)
                    if on_finding:
                        on_finding(finding)
            for finding in check.extra_findings(conn, world.release_or_default):
                finding = weigh(finding, world, check.severity)
                result.add(finding, limit)
                if on_finding:
                    on_finding(finding)
    except pgerrors.InsufficientPrivilege as exc:
        result.status = Status.UNKNOWN
        result.message = f"insufficient privilege: {_first_line(exc)}"
    except pgerrors.QueryCanceled as exc:
        result.status = Status.UNKNOWN
        result.message = f"statement timeout: {_first_line(exc)} (raise --statement-timeout)"
    except psycopg.Error as exc:
        result.status = Status.UNKNOWN
        result.message = f"{type(exc).__name__}: {_first_line(exc)}"
    result.seconds = time.perf_counter() - started
    result.settle()
    return result


def empty_result(check: Check, world: World) -> CheckResult:
    """A check's result over no runs at all (an incremental pass with nothing to look at)."""
    result = CheckResult(check)
    missing = _missing_needs(check, world)
    if missing:
        result.status, result.message = Status.NOT_APPLICABLE, missing
    elif _unreadable(check, world):
        result.status, result.message = Status.UNKNOWN, _unreadable(check, world)
    result.settle()
    return result


def weigh(finding: Finding, world: World, own: Severity) -> Finding:
    """The finding's weight on this world's release: what that runtime does next (a 4.1.x
    hook row without hook_created fails the run; on 4.3.x the next replay heals it). Where the
    world can be several versions, the worst case among them (`own`: the check's weight)."""
    rule = world.release_or_default.weight(finding.code, own)
    if rule is None or finding.severity is not None:
        return finding
    release = world.release_or_default.package
    return dataclasses.replace(
        finding, severity=rule.severity, detail=f"{finding.detail} ({release}: {rule.why})"
    )


def _missing_needs(check: Check, world: World) -> str:
    if Needs.SLOTS in check.needs and not world.has_event_slots:
        return "slot-era worlds only"
    if check.needs_known_world and world.unknowable:
        return f"what this world should hold cannot be known: {world.unknowable}"
    release = world.release_or_default
    if check.code in release.not_applicable:
        return f"{release.name}: {release.not_applicable[check.code]}"
    lacking = sorted(c for c in check.needs_columns if not release.has_column(c))
    if lacking:
        return f"{release.name} has no {', '.join(lacking)}"
    if Needs.QUEUE in check.needs and not world.has_graphile:
        return "graphile_worker not installed"
    if Needs.RUN_QUEUE in check.needs and not world.has_run_queue:
        return "wfctl's worker queue not installed (wfctl bootstrap adds it)"
    return ""


def _unreadable(check: Check, world: World) -> str:
    """Why this check would read a queue this role cannot see (UNKNOWN, never a guess)."""
    if Needs.QUEUE in check.needs and world.queue_unreadable:
        return (
            f"cannot read the queue: {world.queue_unreadable} (docs/cli.md, 'Roles': a policy "
            "for the doctor role, or run as the queue's owner)"
        )
    return ""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
