"""The replay engine: pure (no I/O, no database), deterministic, incremental.

Given a workflow function and its input, the engine runs the workflow coroutine on a private,
I/O-free event loop (`DeterministicLoop`: only `call_soon`, no timers, no selectors) and is
fed the run's events one at a time, in log order. After each event it runs the workflow until
every task is blocked again, then reports where the run stands (`outcome()`):

- `Pending(commands)`: what the workflow waits for and what must happen next: start a step
  (new or an unfinished one found in the log), create a wait or await its due time, create a
  hook or await its payload, dispose a hook;
- `Completed(output)` / `Failed(error, code)`: the run's terminal command;
- `Diverged`: the code asked for something other than what the log recorded at that point
  (a different step name, another kind of entity, or an entity the code no longer asks for);
  the run must fail with `REPLAY_DIVERGENCE`, naming the first diverging event.

The same feeding path serves a fresh replay (a process picks a run up: feed its whole log)
and live execution (the executor feeds the events it just wrote), so the coroutine stays
alive between steps and replay happens only when a process picks a run up fresh.

Determinism inside workflows: correlation ids are ULIDs sharing the run id's timestamp, with
a random part derived from the run id plus a counter (so they sort in request order);
`now()` is the `created_at` of the last event fed; `random()` is a PRNG seeded by the run id.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import functools
import hashlib
import random as _random
import re
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from ulid import ULID

from wfctl.runtime import errors, serde
from wfctl.runtime.errors import WorkflowError
from wfctl.world.ids import ulid_text

# --- the deterministic loop -----------------------------------------------------------------


class DeterministicLoop:
    """Just enough of an event loop for futures, tasks, gather and wait: a FIFO of callbacks.

    Timers (`asyncio.sleep(n > 0)`, `wait_for`) and I/O are refused: a workflow sleeps with
    wfctl's durable `sleep()`.
    """

    def __init__(self) -> None:
        self._ready: collections.deque[asyncio.Handle] = collections.deque()
        self._exceptions: list[dict[str, Any]] = []

    def call_soon(
        self,
        callback: Callable[..., object],
        *args: Any,
        context: contextvars.Context | None = None,
    ) -> asyncio.Handle:
        handle = asyncio.Handle(callback, args, self.as_loop(), context)
        self._ready.append(handle)
        return handle

    def call_later(self, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        raise errors.DeterminismError(
            "asyncio timers (asyncio.sleep(n > 0), asyncio.wait_for, asyncio.timeout) are not"
            " available inside a workflow (a replay could not reproduce when they fired): use"
            " wfctl.runtime.sleep() for a durable sleep, `await hook.wait(timeout=...)` for a"
            " hook with a deadline, and a step's timeout= for time-bound work"
        )

    call_at = call_later

    def as_loop(self) -> asyncio.AbstractEventLoop:
        """This object where asyncio's types want an event loop (duck-typed at run time)."""
        return cast(asyncio.AbstractEventLoop, self)

    def get_debug(self) -> bool:
        return False

    def is_running(self) -> bool:
        return True

    def is_closed(self) -> bool:
        return False

    def time(self) -> float:
        return 0.0

    def create_future(self) -> asyncio.Future[Any]:
        return asyncio.Future(loop=self.as_loop())

    def create_task(
        self,
        coro: Coroutine[Any, Any, Any],
        *,
        name: str | None = None,
        context: contextvars.Context | None = None,
    ) -> asyncio.Task[Any]:
        return asyncio.Task(coro, loop=self.as_loop(), name=name, context=context)

    def call_exception_handler(self, context: dict[str, Any]) -> None:
        self._exceptions.append(context)

    def run_until_blocked(self) -> int:
        """Run callbacks until none is ready; returns how many ran."""
        previous = asyncio.events._get_running_loop()
        asyncio.events._set_running_loop(self.as_loop())
        count = 0
        try:
            while self._ready:
                handle = self._ready.popleft()
                if not handle.cancelled():
                    handle._run()
                count += 1
        finally:
            asyncio.events._set_running_loop(previous)
        return count


# --- events and commands --------------------------------------------------------------------


# The created_at of an event fed with `Engine.feed_unstamped` (not known yet, never read).
UNSTAMPED = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Event:
    """One row of the log, payload decoded from CBOR (byte payloads stay bytes)."""

    id: str
    type: str
    correlation_id: str | None
    data: dict[str, Any] | None
    created_at: datetime  # aware (UTC)


@dataclass(frozen=True)
class StartStep:
    correlation_id: str
    step_name: str
    input: bytes
    new: bool  # no step_created yet: create the row and both events
    attempts: int  # step_started events so far
    retry_after: datetime | None
    max_retries: int


@dataclass(frozen=True)
class CreateWait:
    correlation_id: str
    resume_at: datetime


@dataclass(frozen=True)
class AwaitWait:
    correlation_id: str
    resume_at: datetime


@dataclass(frozen=True)
class ReleaseWait:
    """Complete a hook deadline's wait now: its hook's payload came first (its row must not
    stay `waiting` past its due time)."""

    correlation_id: str
    resume_at: datetime


@dataclass(frozen=True)
class CreateHook:
    correlation_id: str
    token: str
    metadata: bytes | None
    type_ref: str | None = None  # create_hook(payload_type=...): `module:qualname`


@dataclass(frozen=True)
class AwaitHook:
    correlation_id: str
    token: str


@dataclass(frozen=True)
class DisposeHook:
    correlation_id: str
    token: str


@dataclass(frozen=True)
class StartChild:
    """Create a child run and record it as this step (children.py), in one transaction."""

    correlation_id: str
    record: bytes  # the step's input in the parent's log: {workflow, args, queue}
    workflow_name: str
    input: bytes  # the child run's input
    queue: str
    hook_token: str


Command = (
    StartStep
    | CreateWait
    | AwaitWait
    | ReleaseWait
    | CreateHook
    | AwaitHook
    | DisposeHook
    | StartChild
)


@dataclass(frozen=True)
class Pending:
    commands: tuple[Command, ...]


@dataclass(frozen=True)
class Completed:
    output: bytes


@dataclass(frozen=True)
class Failed:
    error: bytes
    code: str
    message: str


@dataclass(frozen=True)
class Diverged:
    event_id: str | None
    message: str

    @property
    def code(self) -> str:
        return DIVERGENCE_CODE


@dataclass(frozen=True)
class CancelledRun:
    """The workflow let `asyncio.CancelledError` out (after a cancellation request, or by
    raising it): the run ends `cancelled` (run_cancelled, written by the driver)."""

    reason: str | None


@dataclass(frozen=True)
class Finished:
    """The log already holds the run's terminal event."""

    status: str


Outcome = Pending | Completed | Failed | Diverged | Finished | CancelledRun
CANCEL_ATTRIBUTE = "wfctl.cancelRequested"  # store.CANCEL_ATTRIBUTE (no import: engine is pure)
CHILD_STEP = "step//wfctl//start_child"  # the step name a child's creation is recorded under
DIVERGENCE_CODE = "REPLAY_DIVERGENCE"


def short_name(step_name: str) -> str:
    """`step//py:shop.flows//charge` -> `shop.flows.charge` (workflows alike): for messages
    and tables, which already say "step" (the full name stays in the data: its identity)."""
    kind, sep, rest = step_name.partition("//")
    if not sep or kind not in ("step", "workflow"):
        return step_name
    module, sep, function = rest.rpartition("//")
    module = module.removeprefix("py:")
    return f"{module}.{function}" if sep and module else rest


class StepFailedError(WorkflowError):
    """Raised inside a workflow when a step failed for good (its error is carried along)."""

    def __init__(self, step_name: str, error: Any) -> None:
        detail = error if not isinstance(error, dict) else error.get("message", error)
        name = error.get("name", "Error") if isinstance(error, dict) else "Error"
        super().__init__(f"step {short_name(step_name)} failed: {name}: {detail}")
        self.step_name = step_name
        self.error = error


HookConflictError = errors.HookConflictError  # re-exported (registry, api)


# --- per-entity state -----------------------------------------------------------------------


@dataclass
class _Request:
    kind: str  # step | wait | hook | dispose
    correlation_id: str
    name: str = ""  # step name or hook token
    input: bytes = b""
    max_retries: int = 0
    aliases: tuple[str, ...] = ()  # steps: older names of this step a log may hold
    resume_at: datetime | None = None
    metadata: bytes | None = None
    future: asyncio.Future[Any] | None = None
    created: bool = False
    attempts: int = 0
    retry_after: datetime | None = None
    done: bool = False
    # hooks: payloads received but not yet awaited, and awaiting futures
    payloads: collections.deque[Any] = field(default_factory=collections.deque)
    getters: collections.deque[asyncio.Future[Any]] = field(default_factory=collections.deque)
    awaited: bool = False
    released: bool = False  # waits: a hook deadline whose hook won (next_payload_until)
    type_ref: str | None = None  # hooks: the payload type recorded for resume_hook
    # child: (workflow name, the child's input, queue, the token of the hook its end resumes)
    child: tuple[str, bytes, str, str] | None = None


_CURRENT: contextvars.ContextVar[Engine] = contextvars.ContextVar("wfctl_engine")


def current() -> Engine:
    """The engine running the calling workflow code; RuntimeError outside a workflow."""
    try:
        return _CURRENT.get()
    except LookupError:
        raise RuntimeError("not inside a wfctl workflow") from None


PATCH_MARKER_PREFIX = "step//py:wfctl.patched//"  # patching.py: the marker step's names


_CHANGE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


def _is_marker(step_name: object) -> bool:
    return isinstance(step_name, str) and step_name.startswith(PATCH_MARKER_PREFIX)


def patch_marker_name(change_id: str) -> str:
    """The marker step's name for a change id (validated: it is part of a step name)."""
    if not isinstance(change_id, str) or not _CHANGE_ID.match(change_id):
        raise ValueError(
            f"patched({change_id!r}): a change id is 1-128 letters, digits, '.', '_', ':' "
            "or '-', starting with a letter or digit"
        )
    return PATCH_MARKER_PREFIX + change_id


def patch_marker_correlation(run_id: str, change_id: str) -> str:
    """`step_<ULID>` with the run's time prefix and a random part from (run, change) only:
    no counter, so asking patched() or not shifts no other id."""
    millis, _ = _ulid_basis(run_id)
    digest = hashlib.sha256(f"{run_id}\x00patched\x00{change_id}".encode()).digest()
    return "step_" + str(ULID.from_int((millis << 80) | int.from_bytes(digest[:10], "big")))


def in_workflow() -> bool:
    return _CURRENT.get(None) is not None


def correlation_ulid(run_id: str, counter: int) -> str:
    """Deterministic per run: the run id's timestamp, random part = hash(run id) + counter."""
    millis, seed = _ulid_basis(run_id)
    rand = (seed + counter) % (1 << 80)
    # ids.ulid_text is python-ulid's str(ULID.from_int(...)) without the object (per step)
    return ulid_text((millis << 80) | rand)


@functools.lru_cache(maxsize=1024)
def _ulid_basis(run_id: str) -> tuple[int, int]:
    """The run id's ULID timestamp and the hash seed of its correlation ids (per run)."""
    body = run_id.partition("_")[2]
    millis = ULID.from_str(body).milliseconds if len(body) == 26 else 0
    seed = int.from_bytes(hashlib.sha256(run_id.encode()).digest()[:10], "big") >> 1
    return millis, seed


class Engine:
    """One run's workflow, replayed and advanced by feeding events."""

    def __init__(
        self,
        run_id: str,
        workflow: Callable[..., Coroutine[Any, Any, Any]],
        args: list[Any],
    ) -> None:
        self.run_id = run_id
        self._workflow = workflow
        self._args = args
        self._loop = DeterministicLoop()
        self._task: asyncio.Task[Any] | None = None
        self._counter = 0
        self._by_corr: dict[str, _Request] = {}
        self._order: list[_Request] = []
        self._clock: datetime | None = None
        self._clock_source: Callable[[], datetime] | None = None  # see feed_unstamped
        self._random = _random.Random(hashlib.sha256(run_id.encode()).digest())
        self._diverged: Diverged | None = None
        self._terminal: str | None = None
        self.fed = 0
        self.last_event_id: str | None = None
        self.cancel_reason: str | None = None  # set once a cancellation request was fed

    # -- the workflow-side API (called from workflow code through wfctl.runtime.api) --

    def now(self) -> datetime:
        if self._clock_source is not None:
            source, self._clock_source = self._clock_source, None
            self._advance_clock(source())
        return self._clock or datetime.now(UTC)

    def random(self) -> float:
        return self._random.random()

    def _next_corr(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}_{correlation_ulid(self.run_id, self._counter)}"

    def _register(self, req: _Request) -> _Request:
        self._by_corr[req.correlation_id] = req
        self._order.append(req)
        return req

    def call_step(
        self, name: str, input_bytes: bytes, max_retries: int, aliases: tuple[str, ...] = ()
    ) -> asyncio.Future[Any]:
        corr = self._next_corr("step")
        fut = self._loop.create_future()
        self._register(_Request("step", corr, name, input_bytes, max_retries, aliases, future=fut))
        return fut

    def sleep_until(self, resume_at: datetime) -> asyncio.Future[Any]:
        future = self._wait_request(resume_at).future
        assert future is not None
        return future

    def _wait_request(self, resume_at: datetime) -> _Request:
        corr = self._next_corr("wait")
        fut = self._loop.create_future()
        resume_at = resume_at.astimezone(UTC)
        # The world stores milliseconds (a JS Date); keep the same precision on both paths,
        # rounding up: a sleep may end late, never before the instant the code asked for.
        resume_at += timedelta(microseconds=-resume_at.microsecond % 1000)
        return self._register(_Request("wait", corr, resume_at=resume_at, future=fut))

    def start_child(
        self, workflow_name: str, record: bytes, child_input: bytes, queue: str
    ) -> tuple[str, str]:
        """A child run (children.py): recorded as a step of this run named CHILD_STEP
        (step_created with `record` as input, step_started, step_completed with the child's
        run id, in the transaction that creates the child), and a hook the child's end
        resumes. Returns (step correlation id, hook correlation id)."""
        corr = self._next_corr("step")
        token = f"wfctl:child:{self.run_id}:{corr}"
        fut = self._loop.create_future()
        req = _Request("child", corr, CHILD_STEP, record, future=fut)
        req.child = (workflow_name, child_input, queue, token)
        self._register(req)
        return corr, self.create_hook(token, None)

    def child_future(self, corr: str) -> asyncio.Future[Any]:
        future = self._by_corr[corr].future
        assert future is not None
        return future

    def create_hook(
        self, token: str | None, metadata: bytes | None, type_ref: str | None = None
    ) -> str:
        corr = self._next_corr("hook")
        if token is None:
            token = "wfh_" + correlation_ulid(self.run_id, self._counter).lower()
        req = self._register(_Request("hook", corr, token, metadata=metadata))
        req.type_ref = type_ref
        return corr

    def hook_token(self, corr: str) -> str:
        return self._by_corr[corr].name

    def next_payload(self, corr: str) -> asyncio.Future[Any]:
        req = self._by_corr[corr]
        req.awaited = True
        fut = self._loop.create_future()
        if req.payloads:
            item = req.payloads.popleft()
            if isinstance(item, BaseException):
                fut.set_exception(item)
            else:
                fut.set_result(item)
        else:
            req.getters.append(fut)
        return fut

    def next_payload_until(
        self, corr: str, resume_at: datetime, timeout: float
    ) -> asyncio.Future[Any]:
        """The hook's next payload, or `HookTimeoutError` at `resume_at`: a durable race.

        The deadline is an ordinary wait of the run (wait_created, a wait row; its
        correlation id is taken whatever happens, so ids stay deterministic). Whichever of
        the hook's `hook_received` and the wait's `wait_completed` the log holds first wins,
        on replay as live. A payload first releases the wait (it is completed at once, so no
        overdue wait row stays behind); the deadline first withdraws this call's claim on
        the hook (a later payload stays for the next await)."""
        req = self._by_corr[corr]
        req.awaited = True
        result = self._loop.create_future()
        if req.payloads:  # already here: no deadline needed (the same on replay)
            self._next_corr("wait")
            item = req.payloads.popleft()
            if isinstance(item, BaseException):
                result.set_exception(item)
            else:
                result.set_result(item)
            return result
        getter = self._loop.create_future()
        req.getters.append(getter)
        wait = self._wait_request(resume_at)
        timer = wait.future
        assert timer is not None

        def payload_first(fut: asyncio.Future[Any]) -> None:
            if result.done() or fut.cancelled():
                return
            self._release_wait(wait)
            exc = fut.exception()
            if exc is not None:
                result.set_exception(exc)
            else:
                result.set_result(fut.result())

        def deadline_first(fut: asyncio.Future[Any]) -> None:
            if result.done() or fut.cancelled() or getter.done():
                return
            req.getters = collections.deque(g for g in req.getters if g is not getter)
            getter.cancel()
            result.set_exception(errors.HookTimeoutError(req.name, timeout))

        def abandoned(fut: asyncio.Future[Any]) -> None:  # a cancellation request
            if fut.cancelled():
                getter.cancel()
                timer.cancel()

        getter.add_done_callback(payload_first)
        timer.add_done_callback(deadline_first)
        result.add_done_callback(abandoned)
        return result

    def _release_wait(self, wait: _Request) -> None:
        """A deadline no one waits for any more: completed at once if its row exists
        (`ReleaseWait`), forgotten if it was never written."""
        if wait.done:
            return
        wait.released = True
        if not wait.created:
            wait.done = True

    def dispose_hook(self, corr: str) -> None:
        hook = self._by_corr[corr]
        req = _Request("dispose", corr, hook.name)
        # A disposal has no correlation id of its own: key it by hook id + "#dispose".
        self._by_corr[corr + "#dispose"] = req
        self._order.append(req)

    # -- safe code changes (patching.py) ---------------------------------------------------

    # The run's whole log when the engine is fed from it (`feed_all`, or set by a replayer
    # that holds back the terminal event); None: no log (every patched() call is fresh).
    history: list[Event] | None = None
    _patches: dict[str, bool] | None = None
    _markers: frozenset[str] | None = None

    def patched(self, change_id: str) -> bool:
        """True if this run takes change `change_id`'s new path (see patching.py)."""
        name = patch_marker_name(change_id)
        if self._patches is None:
            self._patches = {}
        decided = self._patches.get(change_id)
        if decided is not None:
            return decided
        history = self.history
        if history is not None and self.fed < len(history):  # still replaying the log
            if self._markers is None:
                self._markers = frozenset(
                    str(e.data.get("stepName"))
                    for e in history
                    if e.type == "step_created" and e.data and _is_marker(e.data.get("stepName"))
                )
            decided = name in self._markers
        else:
            decided = True
        self._patches[change_id] = decided
        if decided:
            corr = patch_marker_correlation(self.run_id, change_id)
            req = _Request("step", corr, name, serde.dumps([], "a patch marker"), 3)
            req.future = self._loop.create_future()
            self._register(req)
        return decided

    def _unwritten_markers(self) -> tuple[Command, ...]:
        return tuple(
            StartStep(r.correlation_id, r.name, r.input, not r.created, r.attempts, None, 3)
            for r in self._order
            if r.kind == "step" and not r.done and _is_marker(r.name)
        )

    # -- driving ------------------------------------------------------------------------

    def _ensure_started(self) -> None:
        if self._task is None:
            ctx = contextvars.copy_context()
            ctx.run(_CURRENT.set, self)
            self._task = self._loop.create_task(self._workflow(*self._args), context=ctx)

    def feed_all(
        self, events: list[Event], *, before_last: Callable[[], None] | None = None
    ) -> Outcome:
        """Feed a log read whole. `before_last` is called before its last event: the code
        that event wakes runs for the first time; what earlier events wake is a replay of
        what a previous drive ran (the executor's logging context tells them apart)."""
        if self.history is None:
            self.history = events  # patched(): where the log ends and which markers it holds
        last = len(events) - 1
        for index, event in enumerate(events):
            if index == last and before_last is not None:
                before_last()
            self.feed(event)
        return self.outcome()

    def feed(self, event: Event) -> None:
        """Apply one event of the log (in log order) and run the workflow until blocked."""
        self._apply(event, event.created_at)

    def feed_unstamped(self, event: Event, clock: Callable[[], datetime]) -> None:
        """Apply an event whose `created_at` is not known yet: the executor's own, fed before
        it is sent (its `created_at` is its transaction's start). `clock()` returns that
        time; it is called only if the workflow reads the clock (`now()`, `sleep()`) before
        `stamp()` says it, so the workflow sees exactly what a replay of the log will see.
        `event.created_at` is ignored."""
        self._clock_source = clock
        self._apply(event, None)

    def stamp(self, created_at: datetime) -> None:
        """The `created_at` of the events fed by `feed_unstamped`, once known."""
        self._clock_source = None
        self._advance_clock(created_at)

    def _advance_clock(self, created_at: datetime) -> None:
        if self._clock is None or created_at > self._clock:
            self._clock = created_at

    def _apply(self, event: Event, created_at: datetime | None) -> None:
        if self._diverged is not None or self._terminal is not None:
            if event.type in ("run_completed", "run_failed", "run_cancelled"):
                self._terminal = event.type
            return
        self.fed += 1
        self.last_event_id = event.id
        if created_at is not None:
            self._advance_clock(created_at)
        handler = getattr(self, "_on_" + event.type, None)
        if handler is not None:
            handler(event)
        self._run()

    def _run(self) -> None:
        if self._diverged is not None or self._terminal is not None:
            return
        if self._task is None:
            self._ensure_started()
        # Most events settle nothing (a step_created or step_started fed after the flush):
        # no callback is ready, so there is nothing to run (and no running-loop swap).
        if self._loop._ready:
            self._loop.run_until_blocked()

    def _diverge(self, event: Event | None, message: str) -> None:
        if self._diverged is None:
            where = f"event {event.id} ({event.type} {event.correlation_id})" if event else ""
            self._diverged = Diverged(event.id if event else None, f"{message} {where}".strip())

    def _req(self, event: Event, kind: str) -> _Request | None:
        key = event.correlation_id or ""
        req = self._by_corr.get(key)
        if req is None:
            if kind == "step" and _is_marker((event.data or {}).get("stepName")):
                return None  # a patch marker the code no longer asks about (patching.py)
            self._diverge(event, f"the log has a {kind} the workflow code did not ask for:")
            return None
        if req.kind != kind:
            if req.kind == "child" and kind == "step":
                return req  # a child's creation is recorded as a step (children.py)
            self._diverge(event, f"the code asked for a {req.kind} where the log recorded:")
            return None
        return req

    # -- event handlers (log order) ------------------------------------------------------

    def _on_run_created(self, event: Event) -> None:
        pass

    def _on_run_started(self, event: Event) -> None:
        pass

    def _on_run_completed(self, event: Event) -> None:
        self._terminal = event.type

    _on_run_failed = _on_run_completed
    _on_run_cancelled = _on_run_completed

    def _on_attr_set(self, event: Event) -> None:
        """A cancellation request (store.request_cancel) is delivered to the workflow as
        `asyncio.CancelledError` at the await it is blocked on; what it no longer awaits is
        dropped (docs/runtime.md, Cancellation). Other attributes do not concern replay."""
        for change in (event.data or {}).get("changes") or ():
            if not isinstance(change, dict) or change.get("key") != CANCEL_ATTRIBUTE:
                continue
            if self.cancel_reason is not None or change.get("value") is None:
                return
            self.cancel_reason = str(change["value"])
            self._ensure_started()
            assert self._task is not None
            if not self._task.done():
                self._task.cancel(self.cancel_reason)
                self._loop.run_until_blocked()
                self._drop_cancelled()
            return

    def _drop_cancelled(self) -> None:
        """Requests whose futures the cancellation cancelled are not asked for any more (a
        step started but not finished keeps its row as a run cancelled from outside does)."""
        for req in self._order:
            if req.kind == "hook":
                if any(f.cancelled() for f in req.getters):
                    req.getters = collections.deque(f for f in req.getters if not f.cancelled())
            elif req.future is not None and req.future.cancelled() and not req.done:
                req.done = True

    def _on_step_created(self, event: Event) -> None:
        req = self._req(event, "step")
        if req is None:
            return
        name = (event.data or {}).get("stepName")
        if name in req.aliases:
            req.name = name  # a run logged under an older name keeps it (its step row has it)
        elif name != req.name:
            self._diverge(
                event, f"the code asked for step {req.name!r} where the log recorded {name!r}:"
            )
            return
        req.created = True

    def _on_step_started(self, event: Event) -> None:
        req = self._req(event, "step")
        if req is not None:
            req.created = True  # a lazy start carries the creation in the same transaction
            req.attempts += 1
            req.retry_after = None

    def _on_step_retrying(self, event: Event) -> None:
        req = self._req(event, "step")
        if req is not None:
            when = (event.data or {}).get("retryAfter")
            req.retry_after = when if isinstance(when, datetime) else None

    def _terminal_step(self, event: Event) -> tuple[_Request, asyncio.Future[Any]] | None:
        """The step a completion/failure settles, or None (unknown, or already settled: a
        second terminal event for one step diverges)."""
        req = self._req(event, "step")
        if req is None or req.future is None:
            return None
        if req.done:
            self._diverge(event, "a second terminal event for one step:")
            return None
        req.done = True
        return req, req.future

    def _on_step_completed(self, event: Event) -> None:
        settled = self._terminal_step(event)
        if settled is None:
            return
        _, future = settled
        try:
            value = serde.loads((event.data or {}).get("result"))
        except ValueError as exc:
            future.set_exception(exc)
            return
        future.set_result(value)

    def _on_step_failed(self, event: Event) -> None:
        settled = self._terminal_step(event)
        if settled is None:
            return
        req, future = settled
        try:
            error = serde.loads((event.data or {}).get("error"))
        except ValueError:
            error = {"message": "undecodable error payload"}
        future.set_exception(StepFailedError(req.name, error))

    def _on_wait_created(self, event: Event) -> None:
        req = self._req(event, "wait")
        if req is None:
            return
        if req.done and req.released:  # released before its row: replay keeps the row
            req.done = False
        recorded = (event.data or {}).get("resumeAt")
        if isinstance(recorded, datetime) and req.resume_at is not None:
            delta = abs((recorded.astimezone(UTC) - req.resume_at).total_seconds())
            if delta > 0.001:
                self._diverge(
                    event, f"the code sleeps until {req.resume_at.isoformat()} where the log has:"
                )
                return
        req.created = True

    def _on_wait_completed(self, event: Event) -> None:
        req = self._req(event, "wait")
        if req is None or req.future is None:
            return
        if req.done:
            self._diverge(event, "a second wait_completed for one wait:")
            return
        req.done = True
        if req.released or req.future.done():
            return  # a released hook deadline: its completion only closes the row
        req.future.set_result(None)

    def _on_hook_created(self, event: Event) -> None:
        req = self._req(event, "hook")
        if req is None:
            return
        if (event.data or {}).get("token") != req.name:
            self._diverge(event, f"the code created hook token {req.name!r} where the log has:")
            return
        req.created = True

    def _deliver(self, req: _Request, item: Any) -> None:
        while req.getters and req.getters[0].done():  # withdrawn (a deadline, a cancel)
            req.getters.popleft()
        if req.getters:
            fut = req.getters.popleft()
            if isinstance(item, BaseException):
                fut.set_exception(item)
            else:
                fut.set_result(item)
        else:
            req.payloads.append(item)

    def _on_hook_received(self, event: Event) -> None:
        req = self._req(event, "hook")
        if req is None:
            return
        try:
            value = serde.loads((event.data or {}).get("payload"))
        except ValueError as exc:
            value = exc
        self._deliver(req, value)

    def _on_hook_conflict(self, event: Event) -> None:
        req = self._req(event, "hook")
        if req is None:
            return
        req.created = True
        req.done = True
        other = (event.data or {}).get("conflictingRunId")
        self._deliver(req, HookConflictError(f"hook token {req.name!r} is used by run {other}"))

    def _on_hook_disposed(self, event: Event) -> None:
        req = self._by_corr.get((event.correlation_id or "") + "#dispose")
        if req is None:
            self._diverge(event, "the log disposes a hook the code did not dispose:")
            return
        req.done = True
        hook = self._by_corr.get(event.correlation_id or "")
        if hook is not None:
            hook.done = True

    # -- where the run stands --------------------------------------------------------------

    def outcome(self) -> Outcome:
        """Where the run stands after the events fed so far (runs the workflow first)."""
        self._run()
        if self._terminal is not None:
            return Finished(self._terminal.removeprefix("run_"))
        if self._diverged is not None:
            return self._diverged
        assert self._task is not None
        if self._task.done():
            if self._patches:  # patch markers are written before the run ends (patching.py)
                markers = self._unwritten_markers()
                if markers:
                    return Pending(markers)
            if self._task.cancelled():  # CancelledError let out: the run ends cancelled
                return CancelledRun(self.cancel_reason)
            exc = self._task.exception()
            if exc is None:
                try:
                    return Completed(serde.dumps(self._task.result(), "the workflow's result"))
                except serde.SerializationError as ser:
                    return Failed(serde.error_bytes(ser), "SERIALIZATION_ERROR", str(ser))
            code = (
                "SERIALIZATION_ERROR"
                if isinstance(exc, serde.SerializationError)
                else ("USER_ERROR")
            )
            return Failed(serde.error_bytes(exc), code, f"{type(exc).__name__}: {exc}")
        commands: list[Command] = []
        # Settled requests never ask for anything again: drop them, so this scan costs the
        # number of open requests, not the number of steps done so far.
        self._order = [req for req in self._order if not req.done]
        for req in self._order:
            if req.kind == "step":
                commands.append(
                    StartStep(
                        req.correlation_id,
                        req.name,
                        req.input,
                        not req.created,
                        req.attempts,
                        req.retry_after,
                        req.max_retries,
                    )
                )
            elif req.kind == "wait":
                assert req.resume_at is not None
                if req.released:
                    commands.append(ReleaseWait(req.correlation_id, req.resume_at))
                    continue
                cls = AwaitWait if req.created else CreateWait
                commands.append(cls(req.correlation_id, req.resume_at))
            elif req.kind == "hook":
                if not req.created:
                    commands.append(
                        CreateHook(req.correlation_id, req.name, req.metadata, req.type_ref)
                    )
                elif req.getters:
                    commands.append(AwaitHook(req.correlation_id, req.name))
            elif req.kind == "dispose":
                commands.append(DisposeHook(req.correlation_id, req.name))
            elif req.kind == "child" and not req.created:
                assert req.child is not None
                commands.append(StartChild(req.correlation_id, req.input, *req.child))
        return Pending(tuple(commands))

    def pending_disposals(self) -> list[DisposeHook]:
        """Hook disposals the workflow asked for and the log does not hold yet (written with
        the run's terminal event when the workflow ends right after disposing)."""
        return [
            DisposeHook(r.correlation_id, r.name)
            for r in self._order
            if r.kind == "dispose" and not r.done
        ]

    def close(self) -> None:
        """Drop the coroutine (a finished or abandoned run)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            self._loop.run_until_blocked()
