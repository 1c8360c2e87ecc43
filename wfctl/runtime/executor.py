"""Drive runs in-process: the engine decides, the store writes, steps execute here.

One `Executor` drives one run at a time on one connection. It replays the log once when it
picks a run up, then keeps the workflow coroutine alive: each step's completion is fed to the
same engine, never by replaying the log again, so per-step cost does not grow with the number
of steps done.

Transactions per sequential step: ONE, in ONE round trip. The step's completion is fed to the
engine with its final event id before anything is sent; the workflow advances to its next
step; then the guard, the completion, the next step's creation and start and one events
INSERT (which also refuses events this executor has not seen) go out together as one
implicit transaction. The events' `created_at` is that transaction's now():
the engine gets it after the round trip (`stamp`), or, if the workflow reads the clock first,
from `Tx.clock()`, which opens the transaction before the workflow continues (one more round
trip). The completion is durable before the next step's code runs; nothing is ever committed
in part (see store.py).

A session advisory lock makes one process the driver of a run at a time. Transactions that
find an event they have not seen (a hook payload, a cancellation) abort; the executor feeds
what it missed and rebuilds the transaction, so the live order equals the replay order.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from wfctl.runtime import children, context, serde, tracing
from wfctl.runtime import engine as eng
from wfctl.runtime.errors import WorkflowError
from wfctl.runtime.registry import FatalError, RetryableError, StepDef, WorkflowDef, Workflows
from wfctl.runtime.retries import DEFAULT_POLICY
from wfctl.runtime.store import (
    TERMINAL,
    AlreadyExists,
    Created,
    GuardError,
    PositionTaken,
    Store,
    Tx,
)
from wfctl.world import ids

POLL_SECONDS = 0.2
MAX_REBUILDS = 50


@dataclass
class Done:
    """Where a drive left the run."""

    run_id: str
    status: str  # completed | failed | cancelled | running | pending | busy
    output: Any = None
    error: str | None = None
    error_code: str | None = None
    next_due: datetime | None = None  # blocked run: its next timer (None: a hook, or nothing)


@dataclass
class _Result:
    cmd: eng.StartStep
    attempt: int
    value: bytes | None = None
    exc: BaseException | None = None
    finished: int = 0
    started: int = field(default_factory=time.monotonic_ns)


CHILD_TOKEN_PREFIX = "wfctl:child:"  # a child's end hook (children.py): never kept early


class Unseen(Exception):
    """The run holds events this executor has not fed yet."""


class StepTimeoutError(Exception):
    """A step attempt ran longer than its `timeout` (retried like any other error)."""


# The default connection for the authoring API's `start()` / `RunHandle.result()`.
_connect: Callable[[], psycopg.Connection[Any]] | None = None


def configure(connect: Callable[[], psycopg.Connection[Any]]) -> None:
    """Set how `start()` and `RunHandle.result()` connect (the CLI and tests call this)."""
    global _connect
    _connect = connect


def _default_connection(registry: Workflows | None = None) -> psycopg.Connection[Any]:
    if _connect is not None:
        return _connect()
    from wfctl.connection.db import Target, connect
    from wfctl.connection.dsn import resolve_dsn

    target = Target(resolve_dsn(registry.dsn if registry else None))
    return connect(target, autocommit=True)


def create(
    workflow: WorkflowDef,
    args: list[Any],
    *,
    kwargs: dict[str, Any] | None = None,
    run_id: str | None = None,
    idempotency_key: str | None = None,
    conn: psycopg.Connection[Any] | None = None,
    queue: str | None = None,
    traceparent: str | None = None,
    tracestate: str | None = None,
) -> Created:
    """Start a run: one transaction (run row, slot marker, run_created[, queue row]).

    The arguments are bound to the workflow's signature first (`ArgumentsError`, nothing
    written); an existing `run_id` of the same workflow is returned as it is. The trace
    context (tracing.enqueue: the current span, else `traceparent`) is stored with the run."""
    own = conn is None
    conn = conn or _default_connection(workflow.registry)
    try:
        store = Store(conn)
        run_id = run_id or ids.prefixed("wrun")
        existing = store.read_run(run_id)
        if existing is not None:
            if existing.name != workflow.name and existing.name not in workflow.aliases:
                raise ValueError(f"run {run_id} exists and belongs to workflow {existing.name}")
            return Created(run_id, existing.status, existing=True)
        data = workflow.encode_input(args, kwargs)
        with tracing.enqueue(
            workflow.name, traceparent=traceparent, tracestate=tracestate, queue=queue
        ) as traced:
            created = store.create_run(
                run_id,
                workflow.name,
                data,
                idempotency_key=idempotency_key,
                queue=queue,
                trace_carrier=traced.carrier,
            )
            traced.created(created.run_id)
        return created
    finally:
        if own:
            conn.close()


def drive_to_end(
    registry: Workflows,
    run_id: str,
    timeout: float | None = None,
    *,
    name: str | None = None,
    queue: str = "default",
) -> Done:
    """Drive a run until it ends (sleeping through durable sleeps); for `RunHandle.result`.

    The drive holds the run's lease (runtime/lease.py) where the database has the worker's
    tables: if this process dies, a `wfctl worker` of `queue` adopts the run."""
    from wfctl.runtime import lease

    conn = _default_connection(registry)
    try:
        store = Store(conn)
        if name is None:
            row = store.read_run(run_id)
            name = row.name if row is not None else ""
        runner = Executor(registry, store)
        try:
            with lease.driving(
                conn,
                lambda: _default_connection(registry),
                run_id,
                name,
                queue=queue,
                enabled=store.queued and bool(name),
            ) as (finish, held):
                if store.queued and name and not held.held:
                    return Done(run_id, "busy", error="another process holds the run's lease")
                done = runner.drive(run_id, wait=True, timeout=timeout)
                finish(done)
                return done
        finally:
            runner.close()
    finally:
        conn.close()


class Executor:
    """Drives runs of the workflows in `registry` on one store."""

    def __init__(
        self,
        registry: Workflows,
        store: Store,
        *,
        log: Callable[[str], None] | None = None,
        stop: Callable[[], bool] | None = None,
        on_blocked: Callable[[str], None] | None = None,
        on_step: Callable[[float, bool, str, str], None] | None = None,
    ) -> None:
        self.registry = registry
        # Told each step attempt's body wall time, whether it returned, and the workflow and
        # step names (worker metrics' labels).
        self.on_step = on_step
        self.store = store
        self.log = log or (lambda _m: None)
        # Told each time the run blocks on a sleep, a hook or a retry delay, with nothing
        # uncommitted (`wfctl run` says what the run waits on and how to continue it).
        self.on_blocked = on_blocked
        # Asked between steps (a worker shutting down): commit what is done, start nothing
        # new, and return the run as `running` (next_due = now) for another driver.
        self.stop = stop
        self.run_id = ""  # the run being driven (for step_context())
        self.workflow_name = ""
        self._new_tokens: list[str] = []  # hooks created by the open drive's last commit
        self._pool: ThreadPoolExecutor | None = None
        self._aloop: asyncio.AbstractEventLoop | None = None
        # Steps run inline (sync, no timeout), by name: looked up once, not per step.
        self._plain_steps: dict[str, StepDef] = {}

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
        if self._aloop is not None:
            self._aloop.close()

    # -- driving ------------------------------------------------------------------------

    def drive(self, run_id: str, *, wait: bool = False, timeout: float | None = None) -> Done:
        """Advance the run as far as possible (to its end with `wait`)."""
        if not self.store.try_lock_run(run_id):
            return Done(run_id, "busy", error="another process is driving this run")
        try:
            deadline = None if timeout is None else time.monotonic() + timeout
            parent = None
            if tracing.enabled():  # continue the trace the run was enqueued in
                parent = tracing.parent_of(tracing.stored_carrier(self.store.conn, run_id))
            with tracing.span(
                "wfctl.run.drive", parent=parent, **{"wfctl.run_id": run_id}
            ) as current:
                for _ in range(MAX_REBUILDS):
                    try:
                        done = self._drive(run_id, wait, deadline)
                        if current is not None:
                            current.set_attribute("wfctl.run_status", done.status)
                        return done
                    except (Unseen, PositionTaken, GuardError, AlreadyExists) as exc:
                        # Someone else wrote to the run: start over from the log.
                        self.log(f"{run_id}: {type(exc).__name__}: {exc}; replaying")
                raise WorkflowError(
                    f"run {run_id}: gave up after {MAX_REBUILDS} conflicting writes", run_id=run_id
                )
        finally:
            self.store.unlock_run(run_id)

    def _finished(self, run_id: str) -> Done:
        row = self.store.read_run(run_id)
        assert row is not None
        if children.PARENT_HOOK in row.attributes:  # a child: tell its parent (once)
            children.deliver(self.store, row)
        output = serde.loads(row.output) if row.status == "completed" else None
        error = None
        if row.error is not None:
            try:
                error = serde.error_message(serde.loads(row.error))
            except serde.PayloadUnreadable as exc:
                error = str(exc)
        return Done(run_id, row.status, output, error, row.error_code)

    def _drive(self, run_id: str, wait: bool, deadline: float | None) -> Done:
        row = self.store.read_run(run_id)
        if row is None:
            raise LookupError(f"no run {run_id}")
        if row.status in TERMINAL:
            return self._finished(run_id)
        wdef = self.registry.by_name(row.name)
        if wdef is None:
            raise LookupError(f"run {run_id} is workflow {row.name}, not in this registry")
        self.run_id = run_id  # hook: step_context() of the steps this drive runs
        self.workflow_name = row.name  # hook: the worker metrics' workflow label
        tracing.annotate("wfctl.workflow", row.name)  # hook: once per drive
        args = serde.loads(row.input) or []
        # The run's context (logs from workflow code, context.LogContext): set before the
        # engine starts the workflow's task, which copies it.
        with context.driving(run_id, row.name) as running:
            engine = eng.Engine(run_id, wdef.entry, list(args))  # entry: typed arguments
            try:
                return self._loop(engine, row.status, wait, deadline, running)
            finally:
                engine.close()

    def _loop(
        self,
        engine: eng.Engine,
        status: str,
        wait: bool,
        deadline: float | None,
        running: context.RunContext,
    ) -> Done:
        run_id = engine.run_id
        self._new_tokens = []
        events = self.store.read_events(run_id)
        # The workflow's code re-runs what a previous drive ran (and logged), up to the code
        # the last event wakes, which runs for the first time.
        running.replaying = True
        try:
            engine.feed_all(events, before_last=running.live)
        finally:
            running.replaying = False
        floor = events[-1].id if events else None
        started = status != "pending"
        results: list[_Result] = []
        tx: Tx | None = None
        while True:
            if tx is None:
                tx = self.store.tx(run_id, floor)
            if not started:
                tx.run_started()
                started = True
            if results:
                # Completions first, fed inside the open transaction (settle: round trip 1
                # opens it; the completions' INSERTs go out with the COMMIT).
                for res in results:
                    self._queue_result(tx, res)
                results = []
                floor = self._settle(tx, engine)
                continue
            outcome = engine.outcome()
            if isinstance(outcome, eng.Finished):
                tx.rollback()
                return self._finished(run_id)
            if isinstance(outcome, eng.Completed | eng.Failed | eng.Diverged | eng.CancelledRun):
                if not isinstance(outcome, eng.Diverged):
                    for disposal in engine.pending_disposals():
                        tx.dispose_hook(disposal.correlation_id, disposal.token)
                self._queue_terminal(tx, outcome)
                floor = self._flush(tx, engine, commit=True)
                return self._finished(run_id)
            if self.stop is not None and self.stop():
                if not tx.empty or tx.written:
                    self._flush(tx, engine, commit=True)
                else:
                    tx.rollback()
                return Done(run_id, "running", next_due=datetime.now(UTC))
            to_run, resolving, next_due = self._queue_commands(tx, outcome.commands)
            if resolving:  # due waits completed: feed and look again before committing
                floor = self._settle(tx, engine)
                continue
            if not tx.empty or tx.written:
                floor = self._flush(tx, engine, commit=True)
            else:
                tx.rollback()
            tx = None
            if self._new_tokens:  # deliveries kept before these hooks existed: hand over
                tokens, self._new_tokens = self._new_tokens, []
                if self.store.take_kept(tokens):
                    for event in self.store.read_events(run_id, after=floor):
                        engine.feed(event)
                        floor = event.id
                    if not to_run:
                        continue
            if to_run:
                results = self._execute(to_run)
                continue
            # Blocked on a wait, a hook or a retry delay.
            if self.on_blocked is not None:
                self.on_blocked(run_id)
            if not wait:
                return Done(run_id, "running", next_due=next_due)
            if deadline is not None and time.monotonic() >= deadline:
                return Done(run_id, "running", error="timed out waiting")
            pause = POLL_SECONDS
            if next_due is not None:
                pause = max(0.0, min(pause, (next_due - datetime.now(UTC)).total_seconds()))
            if deadline is not None:
                pause = min(pause, max(0.0, deadline - time.monotonic()))
            time.sleep(pause)
            fresh = self.store.read_events(run_id, after=floor)
            for event in fresh:
                engine.feed(event)
                floor = event.id

    def _flush(self, tx: Tx, engine: eng.Engine, *, commit: bool = False) -> str | None:
        try:
            written = tx.flush(commit=commit)
        except GuardError as exc:
            if "unseen event" in str(exc):
                raise Unseen(str(exc)) from None
            raise
        if tx.now is not None:
            engine.stamp(tx.now)
        for event in written:
            engine.feed(event)
        return tx.floor

    def _settle(self, tx: Tx, engine: eng.Engine) -> str | None:
        """Feed the transaction's queued events (final ids) before they are sent: they are
        written with the transaction's COMMIT, or the run is rebuilt from the log. Their
        created_at (the transaction's now()) is stamped after the flush, or fetched first
        if the workflow reads the clock (Tx.clock)."""
        try:
            settled = tx.settle()
            for event in settled:
                if tx.now is None:
                    engine.feed_unstamped(event, tx.clock)
                else:
                    engine.feed(event)
            tx.check()
        except GuardError as exc:
            if "unseen event" in str(exc):
                raise Unseen(str(exc)) from None
            raise
        return tx.floor

    def _queue_terminal(
        self, tx: Tx, outcome: eng.Completed | eng.Failed | eng.Diverged | eng.CancelledRun
    ) -> None:
        if isinstance(outcome, eng.Completed):
            tx.complete_run(outcome.output)
        elif isinstance(outcome, eng.Failed):
            tx.fail_run(outcome.error, outcome.code)
        elif isinstance(outcome, eng.CancelledRun):  # the workflow let CancelledError out
            tx.cancel_run(outcome.reason)
        else:
            value = {"name": "ReplayDivergenceError", "message": outcome.message}
            if outcome.event_id:
                value["eventId"] = outcome.event_id
            tx.fail_run(serde.dumps(value, "an error"), outcome.code)

    def _queue_commands(
        self, tx: Tx, commands: tuple[eng.Command, ...]
    ) -> tuple[list[tuple[eng.StartStep, int]], bool, datetime | None]:
        now = datetime.now(UTC)
        to_run: list[tuple[eng.StartStep, int]] = []
        resolving = False
        next_due: datetime | None = None
        for cmd in commands:
            if isinstance(cmd, eng.StartStep):
                if cmd.new:
                    tx.start_new_step(cmd.correlation_id, cmd.step_name, cmd.input)
                    to_run.append((cmd, 1))
                elif cmd.retry_after is not None and cmd.retry_after > now:
                    next_due = _earliest(next_due, cmd.retry_after)
                elif cmd.attempts > cmd.max_retries:
                    # Found unfinished after its last allowed attempt (a crash mid-step).
                    error = serde.dumps(
                        {
                            "name": "MaxRetriesExceeded",
                            "message": f"step {cmd.step_name} did not finish after "
                            f"{cmd.attempts} attempt(s)",
                        },
                        "an error",
                    )
                    tx.fail_step(cmd.correlation_id, cmd.step_name, error)
                    resolving = True
                else:
                    tx.restart_step(cmd.correlation_id, cmd.step_name, cmd.attempts + 1)
                    to_run.append((cmd, cmd.attempts + 1))
            elif isinstance(cmd, eng.CreateWait):
                tx.create_wait(cmd.correlation_id, cmd.resume_at)
                next_due = _earliest(next_due, cmd.resume_at)
            elif isinstance(cmd, eng.AwaitWait):
                if cmd.resume_at <= now:
                    tx.complete_wait(cmd.correlation_id, cmd.resume_at)
                    resolving = True
                else:
                    next_due = _earliest(next_due, cmd.resume_at)
            elif isinstance(cmd, eng.ReleaseWait):  # a hook deadline its payload beat
                tx.complete_wait(cmd.correlation_id, cmd.resume_at)
            elif isinstance(cmd, eng.CreateHook):
                tx.create_hook(cmd.correlation_id, cmd.token, cmd.metadata, cmd.type_ref)
                if not cmd.token.startswith(CHILD_TOKEN_PREFIX):
                    self._new_tokens.append(cmd.token)
            elif isinstance(cmd, eng.DisposeHook):
                tx.dispose_hook(cmd.correlation_id, cmd.token)
            elif isinstance(cmd, eng.StartChild):  # created and recorded in this transaction
                children.queue_start(tx, cmd)
                resolving = True
            # AwaitHook: nothing to write; a hook_received arrives from outside.
        return to_run, resolving, next_due

    def _queue_result(self, tx: Tx, res: _Result) -> None:
        cmd = res.cmd
        if res.exc is None:
            assert res.value is not None
            tx.complete_step(cmd.correlation_id, cmd.step_name, res.value)
            return
        error = serde.error_bytes(res.exc)
        fatal = isinstance(res.exc, FatalError | serde.SerializationError)
        if fatal or res.attempt > cmd.max_retries:
            tx.fail_step(cmd.correlation_id, cmd.step_name, error)
            return
        retry_after: datetime | None = None
        if isinstance(res.exc, RetryableError) and res.exc.retry_after is not None:
            ra = res.exc.retry_after
            if isinstance(ra, datetime):
                retry_after = ra if ra.tzinfo else ra.replace(tzinfo=UTC)
            else:
                delta = ra if isinstance(ra, timedelta) else timedelta(seconds=float(ra))
                retry_after = datetime.now(UTC) + delta
        else:
            # Exponential backoff with jitter, capped (retries.py): a durable timer.
            step = self.registry.step_by_name(cmd.step_name)
            delay = (step.retry if step is not None else DEFAULT_POLICY).delay(res.attempt)
            if delay > 0:
                retry_after = datetime.now(UTC) + timedelta(seconds=delay)
        tx.retry_step(cmd.correlation_id, cmd.step_name, error, retry_after)

    # -- step execution -------------------------------------------------------------------

    def _execute(self, to_run: list[tuple[eng.StartStep, int]]) -> list[_Result]:
        """Run the started steps (concurrently when several); results in finish order."""
        if len(to_run) == 1:
            cmd, attempt = to_run[0]
            step = self._plain_steps.get(cmd.step_name)
            if step is None:
                step = self.registry.step_by_name(cmd.step_name)
                if step is not None and not step.is_async and step.timeout is None:
                    self._plain_steps[cmd.step_name] = step  # sync, no timeout: run inline
                else:
                    step = None
            if step is not None:
                if tracing.enabled():
                    return self._observed([self._run_sync(cmd, attempt)])
                return self._observed([self._run_sync_body(cmd, attempt, step)])
        loop = self._aloop or asyncio.new_event_loop()
        self._aloop = loop

        async def run_all() -> list[_Result]:
            return list(
                await asyncio.gather(*(self._run_async(cmd, attempt) for cmd, attempt in to_run))
            )

        results = loop.run_until_complete(run_all())
        return self._observed(sorted(results, key=lambda r: r.finished))

    def _observed(self, results: list[_Result]) -> list[_Result]:
        if self.on_step is not None:
            for res in results:
                seconds = (res.finished - res.started) / 1e9
                self.on_step(seconds, res.exc is None, self.workflow_name, res.cmd.step_name)
        return results

    def _step_args(self, cmd: eng.StartStep) -> list[Any]:
        args = serde.loads(cmd.input)
        return list(args) if isinstance(args, list) else [args]

    def _run_sync(self, cmd: eng.StartStep, attempt: int) -> _Result:
        with _step_span(cmd, attempt) as current:
            res = self._run_sync_body(cmd, attempt)
            if res.exc is not None:
                tracing.failed(current, res.exc)
            return res

    def _run_sync_body(
        self, cmd: eng.StartStep, attempt: int, step: StepDef | None = None
    ) -> _Result:
        res = _Result(cmd, attempt)
        if step is None:
            step = self.registry.step_by_name(cmd.step_name)
        try:
            if step is None:
                raise FatalError(f"step {cmd.step_name} is not registered in this process")
            ctx = context.StepContext(
                self.run_id, cmd.correlation_id, cmd.step_name, attempt, self.workflow_name
            )
            value = context.call(ctx, step.invoke, self._step_args(cmd))
            if inspect.isawaitable(value):
                raise FatalError(f"step {cmd.step_name} returned an awaitable")
            res.value = serde.dumps(value, f"the result of step {cmd.step_name}")
        except Exception as exc:
            res.exc = exc
        res.finished = time.monotonic_ns()
        return res

    async def _run_async(self, cmd: eng.StartStep, attempt: int) -> _Result:
        with _step_span(cmd, attempt) as current:
            res = await self._run_async_body(cmd, attempt)
            if res.exc is not None:
                tracing.failed(current, res.exc)
            return res

    async def _run_async_body(self, cmd: eng.StartStep, attempt: int) -> _Result:
        res = _Result(cmd, attempt)
        step = self.registry.step_by_name(cmd.step_name)
        try:
            if step is None:
                raise FatalError(f"step {cmd.step_name} is not registered in this process")
            ctx = context.StepContext(
                self.run_id, cmd.correlation_id, cmd.step_name, attempt, self.workflow_name
            )
            body: Any
            if step.is_async:
                body = context.call_async(ctx, step.invoke, self._step_args(cmd))
            else:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="wfctl-step")
                loop = asyncio.get_running_loop()
                body = loop.run_in_executor(
                    self._pool, context.call, ctx, step.invoke, self._step_args(cmd)
                )
            if step.timeout is None:
                value = await body
            else:
                # A sync body that overruns keeps its thread until it returns (Python cannot
                # kill a thread); its late result is ignored.
                try:
                    value = await asyncio.wait_for(body, step.timeout)
                except TimeoutError:
                    raise StepTimeoutError(
                        f"step {cmd.step_name} attempt {attempt} ran longer than {step.timeout:g}s"
                    ) from None
            res.value = serde.dumps(value, f"the result of step {cmd.step_name}")
        except Exception as exc:
            res.exc = exc
        res.finished = time.monotonic_ns()
        return res


def _step_span(cmd: eng.StartStep, attempt: int) -> Any:
    return tracing.span(
        "wfctl.step",
        **{
            "wfctl.step_name": cmd.step_name,
            "wfctl.correlation_id": cmd.correlation_id,
            "wfctl.attempt": attempt,
        },
    )


def _earliest(a: datetime | None, b: datetime) -> datetime:
    return b if a is None or b < a else a
