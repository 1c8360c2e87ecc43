"""A throwaway world for tests: a fresh database per test, a fake clock, `run_to_end`, and a
replay check of every run the test finished (docs/testing.md).

The fake clock moves both clocks a run reads: the executor's (when a sleep or a retry is due)
and the database's (the `created_at` of events, hence the workflow's `now()`): the test
database's `now()` is `wfctl_testclock.now()` (the real one plus the clock's shift, found
first on the database's search_path, and in the column defaults), so a 30-day sleep ends
in milliseconds and a workflow that loops `while now() < deadline` sees time pass.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import psycopg
from typing_extensions import ParamSpec, TypeVar

from wfctl.runtime import children
from wfctl.runtime import executor as ex
from wfctl.runtime.registry import WorkflowDef, Workflows, parse_duration
from wfctl.runtime.replay import NondeterminismError, ReplayResult, replay_one
from wfctl.runtime.schedule import tick_run_id
from wfctl.runtime.store import TERMINAL, Store

CLOCK_SCHEMA = "wfctl_testclock"
_CLOCK_SQL = f"""
CREATE SCHEMA {CLOCK_SCHEMA};
CREATE TABLE {CLOCK_SCHEMA}.clock (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    shift interval NOT NULL DEFAULT '0'
);
INSERT INTO {CLOCK_SCHEMA}.clock DEFAULT VALUES;
CREATE FUNCTION {CLOCK_SCHEMA}.now() RETURNS timestamptz LANGUAGE sql STABLE
    AS $$ SELECT pg_catalog.now() + shift FROM {CLOCK_SCHEMA}.clock $$;
"""
_MAX_DRIVES = 10_000
P = ParamSpec("P", default=...)
R = TypeVar("R", default=Any)


class RunFailed(AssertionError):
    """`run_to_end`: the run failed or was cancelled (`status`, `error`, `error_code`)."""

    def __init__(self, run_id: str, status: str, error: str | None, code: str | None) -> None:
        super().__init__(f"run {run_id} {status}: {error} ({code})")
        self.run_id, self.status, self.error, self.error_code = run_id, status, error, code


class RunBlocked(AssertionError):
    """`run_to_end`: the run waits on a hook nothing will resume (its tokens are listed)."""

    def __init__(self, run_id: str, tokens: list[str]) -> None:
        super().__init__(
            f"run {run_id} waits on hook(s) {', '.join(tokens) or '(none active)'}: resume "
            f"one (world.resume_hook(token, payload)) and call world.finish({run_id!r})"
        )
        self.run_id, self.tokens = run_id, tokens


# --- the clock ------------------------------------------------------------------------------


class _Shift:
    """The process-wide shift of the executor's clock (one fake clock at a time)."""

    lock = threading.Lock()
    delta = timedelta(0)


class _RealInstances(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, datetime)


class _FakeDatetime(datetime, metaclass=_RealInstances):
    """`datetime` whose now() is shifted: swapped in for the executor module's `datetime`
    (isinstance checks against it still accept every datetime)."""

    @classmethod
    def now(cls, tz: Any = None) -> Any:
        return datetime.now(tz) + _Shift.delta


class FakeClock:
    """The test world's clock. `advance("30d")`, `advance_to(when)`, `now()`. A durable
    sleep or a retry delay ends when the clock passes it; `run_to_end` advances the clock
    to the next one by itself whenever a run has nothing else to do."""

    def __init__(self, world: World) -> None:
        self._world = world

    @property
    def shift(self) -> timedelta:
        return _Shift.delta

    def now(self) -> datetime:
        return datetime.now(UTC) + _Shift.delta

    def advance(self, delta: str | float | timedelta) -> datetime:
        step = parse_duration(delta)
        if step < timedelta(0):
            raise ValueError("the clock only moves forward")
        with _Shift.lock:
            _Shift.delta += step
            with self._world.connect() as conn:
                conn.execute(f"UPDATE {CLOCK_SCHEMA}.clock SET shift = %s", (_Shift.delta,))
        return self.now()

    def advance_to(self, when: datetime) -> datetime:
        """Move the clock to `when` (aware), if it is ahead."""
        ahead = when - self.now()
        if ahead > timedelta(0):
            self.advance(ahead + timedelta(milliseconds=1))
        return self.now()

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        # The executor reads the time as `datetime.now(UTC)` through its module's
        # `datetime` name (due sleeps and retries): swap that name, costing it nothing.
        previous = vars(ex)["datetime"]
        setattr(ex, "datetime", _FakeDatetime)  # noqa: B010
        try:
            yield
        finally:
            setattr(ex, "datetime", previous)  # noqa: B010
            _Shift.delta = timedelta(0)


# --- the world ------------------------------------------------------------------------------


@dataclass
class World:
    """One test's database (`dsn`) with its fake clock; drives runs in this process."""

    dsn: str
    registries: list[Workflows] = field(default_factory=list)
    replay_on_teardown: bool = True
    clock: FakeClock = field(init=False)

    def __post_init__(self) -> None:
        self.clock = FakeClock(self)

    def connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self.dsn, autocommit=True)

    def use(self, registry: Workflows | WorkflowDef) -> None:
        """Serve (and replay at teardown) this registry's workflows."""
        reg = registry.registry if isinstance(registry, WorkflowDef) else registry
        if all(r is not reg for r in self.registries):
            self.registries.append(reg)

    # -- runs --

    def start(self, workflow: WorkflowDef[P, R], *args: P.args, **kwargs: P.kwargs) -> str:
        """Create a run (not driven yet); its id. Options as for `start()`:
        `world.start(flow.options(run_id=..., idempotency_key=...), *args)`, or those
        keywords when the workflow has no parameter of that name."""
        self.use(workflow)
        options, rest = workflow.split_options(dict(kwargs))
        with self.connect() as conn:
            created = ex.create(
                workflow,
                list(args),
                kwargs=rest or None,
                run_id=options.run_id,
                idempotency_key=options.idempotency_key,
                conn=conn,
                traceparent=options.traceparent,
                tracestate=options.tracestate,
            )
        return created.run_id

    def drive(self, run_id: str) -> ex.Done:
        """Advance the run as far as it goes now (no clock change)."""
        with self.connect() as conn:
            store = Store(conn)
            row = store.read_run(run_id)
            registry = self._registry_for(row.name if row else "")
            executor = ex.Executor(registry, store)
            try:
                return executor.drive(run_id)
            finally:
                executor.close()

    def finish(self, run_id: str) -> Any:
        """Drive the run to its end, advancing the clock through sleeps, retry delays and
        hook timeouts (`hook.wait(timeout=...)`: a run parked on such a hook times out
        here); its output (decoded to the workflow's return annotation). Raises `RunFailed`,
        or `RunBlocked` when the run waits on a hook without a timeout that nothing has
        resumed (resume it with `world.resume_hook`, then call `finish` again)."""
        for _ in range(_MAX_DRIVES):
            done = self.drive(run_id)
            if done.status in TERMINAL:
                if done.status != "completed":
                    raise RunFailed(run_id, done.status, done.error, done.error_code)
                return self._decode_output(run_id, done.output)
            if done.status == "busy":
                raise RuntimeError(f"run {run_id} is driven by another process")
            if done.next_due is None:
                if self._finish_children(run_id):  # parked on children: run them here
                    continue
                raise RunBlocked(run_id, self._tokens(run_id))
            self.clock.advance_to(done.next_due)
        raise RuntimeError(f"run {run_id}: not finished after {_MAX_DRIVES} drives")

    def run_until(self, run_id: str, when: datetime | str | float | timedelta) -> ex.Done:
        """Move the clock to `when` (an aware datetime, or a duration from now) with the run
        following it: every sleep, retry delay and hook timeout due by then fires in order
        and the run is driven after each, its children too; the clock ends at `when`.
        Where the run stands (`.status`; `.next_due`: its next timer, if any). For a
        hook-or-timeout path: `run_until(run_id, "1h")`, then `resume_hook` or not."""
        target = when if isinstance(when, datetime) else self.clock.now() + parse_duration(when)
        if target.tzinfo is None:
            raise ValueError("run_until: an aware datetime (or a duration), not a naive one")
        done = self.drive(run_id)
        for _ in range(_MAX_DRIVES):
            if done.status in TERMINAL or done.status == "busy":
                break
            if done.next_due is None or done.next_due > target:
                if not self._finish_children(run_id, until=target):
                    break
            else:
                self.clock.advance_to(done.next_due)
            done = self.drive(run_id)
        self.clock.advance_to(target)
        return done

    def time_out_hook(self, run_id: str, token: str | None = None) -> ex.Done:
        """Let the run's hook wait time out (`await hook.wait(timeout=...)` in the
        workflow): the run is driven to its hook, the clock moves to its next timer (the
        hook's deadline when the run waits on nothing else) and the run is driven again, so
        the workflow meets `HookTimeoutError`; where it stands then. `token`: the hook it
        must be waiting on (`LookupError` if it is not). `RunBlocked` when the run waits
        without a timer (a hook awaited without a timeout)."""
        done = self.drive(run_id)
        if done.status in TERMINAL or done.status == "busy":
            return done
        tokens = self._tokens(run_id)
        if token is not None and token not in tokens:
            raise LookupError(f"run {run_id} holds no hook {token!r} (its hooks: {tokens})")
        if done.next_due is None:
            raise RunBlocked(run_id, tokens)
        self.clock.advance_to(done.next_due)
        return self.drive(run_id)

    def tick(self, workflow: WorkflowDef, at: datetime | None = None) -> str:
        """Fire a scheduled workflow's tick (`@wf.workflow(schedule=...)`) as a worker's
        scheduler does: the run of the latest tick at or before `at` (aware; default the
        clock's now), with the id every worker would give it, so a second call for the same
        tick returns the same run. Created, not driven: `world.finish(run_id)`."""
        plan = workflow.schedule
        if plan is None:
            raise ValueError(f"workflow {workflow.name} has no schedule")
        moment = self.clock.now() if at is None else at
        if moment.tzinfo is None:
            raise ValueError("tick: an aware datetime, not a naive one")
        tick = plan.ticks_back(moment)[-1]
        self.use(workflow)
        run_id = tick_run_id(workflow.name, tick)
        with self.connect() as conn:
            created = ex.create(workflow, plan.args(workflow.fn, tick), run_id=run_id, conn=conn)
        return created.run_id

    def _finish_children(self, run_id: str, until: datetime | None = None) -> bool:
        """Drive the children `run_id` waits for (start_child: workers would run them), to
        their ends or up to `until`; whether any end was delivered, so the parent can go on."""
        with self.connect() as conn:
            store = Store(conn)
            waiting = children.waiting_for(store, run_id)
        moved = False
        for child in waiting:
            with contextlib.suppress(RunFailed):  # the parent gets ChildWorkflowError
                if until is None:
                    self.finish(child)
                else:
                    self.run_until(child, until)
            with self.connect() as conn:  # delivered by the child's driver; or by the sweep
                store = Store(conn)
                row = store.read_run(child)
                if row is not None and row.status in TERMINAL:
                    children.deliver(store, row)
                    moved = True
        return moved

    def run_to_end(self, workflow: WorkflowDef[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """Start a run of `workflow` and drive it to its end (see `finish`); its output,
        typed as the workflow's return annotation."""
        return cast(R, self.finish(self.start(workflow, *args, **kwargs)))

    def resume_hook(
        self, token: str, payload: Any = None, *, keep: str | float | timedelta | bool | None = True
    ) -> str | None:
        """Deliver a hook payload as `Client.resume_hook` does (a typed hook validates it:
        `DecodeError`, nothing written; a token no hook holds yet: the delivery is kept for
        the hook, None returned); the run's id."""
        from wfctl.runtime.client import Client

        with Client(connect=self.connect, allow_node_peer=True) as client:
            return client.resume_hook(token, payload, keep=keep)

    def status(self, run_id: str) -> str | None:
        with self.connect() as conn:
            row = Store(conn).read_run(run_id)
        return None if row is None else row.status

    # -- replay --

    def replay(self, run_id: str, workflow: WorkflowDef | Workflows | None = None) -> ReplayResult:
        """Replay a run against the current code, writing nothing; raises
        `NondeterminismError` unless it replays."""
        with self.connect() as conn:
            conn.execute("BEGIN READ ONLY")
            try:
                store = Store(conn)
                if workflow is None:
                    row = store.read_run(run_id)
                    workflow = self._registry_for(row.name if row else "")
                result = replay_one(store, run_id, workflow)
            finally:
                conn.execute("ROLLBACK")
        if not result.ok:
            raise NondeterminismError(result)
        return result

    def replay_finished(self) -> list[ReplayResult]:
        """Replay every finished run of the workflows this world served; the failures."""
        names = {n for r in self.registries for n in r.served_names()}
        if not names:
            return []
        with self.connect() as conn:
            rows = conn.execute(
                "SELECT id FROM workflow.workflow_runs WHERE name = ANY(%s)"
                " AND status::text IN ('completed', 'failed') ORDER BY id",
                (sorted(names),),
            ).fetchall()
        failures = []
        for (run_id,) in rows:
            try:
                self.replay(str(run_id))
            except NondeterminismError as exc:
                failures.append(exc.result)
        return failures

    # -- helpers --

    def _registry_for(self, name: str) -> Workflows:
        for reg in self.registries:
            if reg.by_name(name) is not None:
                return reg
        raise LookupError(f"no workflow {name!r} in this world (world.use(registry) first)")

    def _decode_output(self, run_id: str, output: Any) -> Any:
        with self.connect() as conn:
            row = Store(conn).read_run(run_id)
        wdef = self._registry_for(row.name).by_name(row.name) if row else None
        return output if wdef is None else wdef.decode_output(output)

    def _tokens(self, run_id: str) -> list[str]:
        with self.connect() as conn:
            rows = conn.execute(
                "SELECT token FROM workflow.workflow_hooks WHERE run_id = %s ORDER BY token",
                (run_id,),
            ).fetchall()
        return [str(r[0]) for r in rows]


# --- servers and databases --------------------------------------------------------------------


@dataclass
class Server:
    """The session's PostgreSQL: `WFCTL_TEST_DSN`, else a throwaway embedded server."""

    admin_dsn: str
    _stop: Any = None

    def execute(self, statement: str) -> None:
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(statement)

    def dsn(self, dbname: str) -> str:
        return psycopg.conninfo.make_conninfo(self.admin_dsn, dbname=dbname)

    def close(self) -> None:
        if self._stop is not None:
            self._stop()


def start_server() -> Server:
    """`WFCTL_TEST_DSN` (its role may create databases), else pgserver in a temp dir."""
    dsn = os.environ.get("WFCTL_TEST_DSN")
    if dsn:
        return Server(dsn)
    import pgserver

    data_dir = Path(tempfile.mkdtemp(prefix="wfctl-testing-pg-"))
    server = pgserver.get_server(str(data_dir), cleanup_mode="stop")  # type: ignore[attr-defined]

    def stop() -> None:
        server.cleanup()
        shutil.rmtree(data_dir, ignore_errors=True)

    return Server(str(server.get_uri()), stop)


_serial = iter(range(1, 1 << 30))


def _name(prefix: str) -> str:
    return f"{prefix}_{os.getpid()}_{next(_serial)}"


def make_template(server: Server, era: str = "beta29") -> str:
    """A bootstrapped world with the test clock, to clone per test; its database name."""
    from wfctl.world.bootstrap import bootstrap

    name = _name("wfctl_testing_tmpl")
    server.execute(f'CREATE DATABASE "{name}"')
    with psycopg.connect(server.dsn(name), autocommit=True) as conn:
        bootstrap(conn, era)
        conn.execute(_CLOCK_SQL)
        defaults = conn.execute(
            "SELECT table_schema, table_name, column_name, column_default"
            " FROM information_schema.columns"
            " WHERE column_default LIKE '%%now()%%' AND table_schema <> %s",
            (CLOCK_SCHEMA,),
        ).fetchall()
        for schema, table, column, default in defaults:
            moved = str(default).replace("now()", f"{CLOCK_SCHEMA}.now()")
            conn.execute(
                f'ALTER TABLE "{schema}"."{table}" ALTER COLUMN "{column}" SET DEFAULT {moved}'
            )
    return name


def make_world_db(server: Server, template: str) -> str:
    name = _name("wfctl_testing")
    server.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    server.execute(
        f'ALTER DATABASE "{name}" SET search_path = {CLOCK_SCHEMA}, pg_catalog, "$user", public'
    )
    return name


def drop_db(server: Server, name: str) -> None:
    server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# --- the current world (module-level helpers) -------------------------------------------------

_current: list[World] = []


@contextlib.contextmanager
def activate(world: World) -> Iterator[World]:
    """Make `world` the one `start()`/`RunHandle.result()` and `run_to_end` use."""
    previous = ex._connect
    ex.configure(world.connect)
    _current.append(world)
    try:
        with world.clock.installed():
            yield world
    finally:
        _current.remove(world)
        ex._connect = previous


def current_world() -> World:
    if not _current:
        raise RuntimeError("no wfctl test world is active: use the `world` fixture")
    return _current[-1]


def run_to_end(workflow: WorkflowDef[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """`world.run_to_end` on the active test world (the `world` fixture)."""
    return current_world().run_to_end(workflow, *args, **kwargs)


def replay(run: Any, workflow: WorkflowDef | Workflows | None = None) -> ReplayResult:
    """Replay a run (an id or a handle with `.id`) of the active test world against the
    current code, writing nothing; raises `NondeterminismError` unless it replays. Outside
    a test world, give `dsn=` through `replay_at`."""
    run_id = run if isinstance(run, str) else str(run.id)
    return current_world().replay(run_id, workflow)


def replay_at(
    dsn: str, run_ids: list[str], workflow: WorkflowDef | Workflows
) -> list[ReplayResult]:
    """Replay runs of any database (a staging copy, CI) against `workflow`: the verdicts."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("BEGIN READ ONLY")
        try:
            store = Store(conn)
            return [replay_one(store, run_id, workflow) for run_id in run_ids]
        finally:
            conn.execute("ROLLBACK")
