"""The authoring API: `Workflows`, `@wf.workflow`, `@wf.step`, `sleep`, hooks, `start`.

Modelled on the official Python SDK (`vercel-workflow`):

    from wfctl.runtime import Workflows, sleep, create_hook, now, FatalError

    wf = Workflows()

    @wf.step(max_retries=3)
    def charge(order_id: str) -> dict: ...

    @wf.workflow
    async def checkout(order_id: str) -> dict:
        receipt = await charge(order_id)
        await sleep("10m")
        approval = create_hook(token=f"approve-{order_id}")
        decision = await approval
        return {"receipt": receipt, "decision": decision}

Inside a workflow, calling a step returns an awaitable recorded in the run's log; outside a
workflow a step is a plain function. Workflow code must be deterministic: use `now()` and
`random()` from here, durable `sleep()`, and do I/O in steps.

The definitions (`Workflows`, `WorkflowDef`, `StepDef`, the errors) live in `registry.py`,
which does no I/O; this module adds the workflow-side calls and `start()`/`RunHandle`, which
drive runs through the executor.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Awaitable, Generator
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, overload

from typing_extensions import ParamSpec, TypeVar

from wfctl.runtime import engine, executor, serde, values
from wfctl.runtime.children import ChildWorkflowError
from wfctl.runtime.client import AsyncClient, Client, RunHandle, RunPage, SyncRunHandle
from wfctl.runtime.context import StepContext, step_context
from wfctl.runtime.errors import (
    ConnectionError,
    DecodeError,
    DeterminismError,
    HookNotFoundError,
    HookTimeoutError,
    IdempotencyConflictError,
    RunCancelledError,
    RunEndedError,
    RunFailedError,
    RunNotFoundError,
    RunTimeoutError,
    WorkflowError,
)
from wfctl.runtime.registry import (
    DEFAULT_MAX_RETRIES,
    ArgumentsError,
    FatalError,
    HookConflictError,
    RetryableError,
    SerializationError,
    StepDef,
    StepFailedError,
    WorkflowDef,
    Workflows,
    parse_duration,
)
from wfctl.runtime.values import register_codec

P = ParamSpec("P", default=...)
R = TypeVar("R", default=Any)
T = TypeVar("T", default=Any)

# --- inside workflows ----------------------------------------------------------------------


def now() -> datetime:
    """Deterministic time inside a workflow (the log's clock); wall time outside."""
    return engine.current().now() if engine.in_workflow() else datetime.now(UTC)


def random() -> float:
    """Deterministic random number in [0, 1) inside a workflow (seeded by the run id)."""
    if engine.in_workflow():
        return engine.current().random()
    import random as _r

    return _r.random()


def sleep(
    duration: str | float | timedelta | None = None, *, until: datetime | None = None
) -> asyncio.Future[Any]:
    """A durable sleep: `await sleep("10m")` or `await sleep(until=datetime)` (an aware
    datetime: a naive one is refused with `ValueError`, as workflow arguments refuse it)."""
    eng = engine.current()
    if until is None:
        if duration is None:
            raise TypeError("sleep() needs a duration or until=")
        until = eng.now() + parse_duration(duration)
    elif until.tzinfo is None or until.utcoffset() is None:
        # As arguments refuse them: a naive time means a different instant on each host.
        raise ValueError(
            f"sleep(until={until.isoformat()}): a naive datetime; give it a time zone"
            " (e.g. datetime(..., tzinfo=UTC))"
        )
    return eng.sleep_until(until)


def patched(change_id: str) -> bool:
    """Whether this run takes change `change_id`'s new code path: True for runs that reach
    the call fresh, False for runs replaying history recorded before the change (they keep
    the old path). Deterministic on replay; see docs/runtime.md, "Changing workflow code".
    Outside a workflow (a workflow function called directly): True."""
    if not engine.in_workflow():
        return True
    return engine.current().patched(change_id)


class Hook(Generic[T]):
    """A hook created inside a workflow: `await hook` for the next payload, or
    `async for payload in hook`. Resumed from outside with `Client.resume_hook` or `wfctl
    hooks resume TOKEN JSON`. Generic in its payload type (`create_hook(payload_type=X)`
    makes a `Hook[X]`, so `await hook` is an `X` to type checkers too)."""

    def __init__(self, correlation_id: str, decode: values.Decoder | None = None) -> None:
        self.correlation_id = correlation_id
        self._decode = decode  # create_hook(payload_type=...): payloads decoded to it

    @property
    def token(self) -> str:
        return engine.current().hook_token(self.correlation_id)

    def __await__(self) -> Generator[Any, None, T]:
        future = engine.current().next_payload(self.correlation_id)
        if self._decode is None:
            return future.__await__()
        return values.Typed(future, self._decode).__await__()

    def wait(self, timeout: str | float | timedelta | None = None) -> Awaitable[T]:
        """The next payload, or `HookTimeoutError` once `timeout` (a duration, as `sleep`
        takes) has passed without one. Durable: the deadline is a wait of the run (a wait
        row and wait_created), raced with the hook in the log, so a replay takes the same
        branch; a payload that arrives after the deadline stays for the next await.
        `timeout=None` waits as `await hook` does."""
        if timeout is None:
            return self
        eng = engine.current()
        delta = parse_duration(timeout)
        future = eng.next_payload_until(
            self.correlation_id, eng.now() + delta, delta.total_seconds()
        )
        return future if self._decode is None else values.Typed(future, self._decode)

    def __aiter__(self) -> AsyncIterator[T]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[T]:
        while True:
            yield await self

    def dispose(self) -> None:
        """Release the token (a `hook_disposed` event); later resumes are refused."""
        engine.current().dispose_hook(self.correlation_id)


@overload
def create_hook(
    token: str | None = None, *, metadata: Any = None, payload_type: type[T]
) -> Hook[T]: ...


@overload
def create_hook(
    token: str | None = None, *, metadata: Any = None, payload_type: Any = None
) -> Hook[Any]: ...


def create_hook(
    token: str | None = None, *, metadata: Any = None, payload_type: Any = None
) -> Hook[Any]:
    """Create a hook; `token` defaults to a deterministic one (see `hook.token`).
    `payload_type` (a dataclass, a pydantic model, `dict[str, Decimal]`...) decodes each
    payload to that type, as annotations do for arguments (docs/runtime.md). A class is
    also recorded with the hook, so `Client.resume_hook` refuses a payload that does not
    fit it (`DecodeError`, nothing written) where the class's module is imported."""
    eng = engine.current()
    meta = None if metadata is None else serde.dumps(metadata, "hook metadata")
    decode: values.Decoder | None = None
    ref = None
    if payload_type is not None and values.decoder(payload_type) is not None:
        decode = functools.partial(values.validate, payload_type)
        ref = values.type_ref(payload_type)
    return Hook(eng.create_hook(token, meta, ref), decode)


# Raised inside a workflow at its next await when the run is asked to cancel (`wfctl runs
# cancel RUN --graceful`, `request_cancel`): catch it to run cleanup steps, then re-raise (the
# run ends `cancelled`). It IS `asyncio.CancelledError`, so either name catches it.
Cancelled = asyncio.CancelledError


def cancel_requested() -> str | None:
    """Inside a workflow: the reason of the cancellation request fed so far, or None."""
    return engine.current().cancel_reason


class ChildRun(Generic[R]):
    """A child run started by `start_child`: its `run_id`; `await child` for its output,
    decoded to the child workflow's return annotation (or `ChildWorkflowError` if it failed
    or was cancelled)."""

    def __init__(self, run_id: str, workflow: WorkflowDef[Any, R], hook_corr: str) -> None:
        self.run_id = run_id
        self.workflow = workflow
        self._hook = hook_corr
        self._end: dict[str, Any] | None = None

    def __await__(self) -> Generator[Any, None, R]:
        return self._result().__await__()

    async def _result(self) -> R:
        if self._end is None:
            end = await engine.current().next_payload(self._hook)
            self._end = end if isinstance(end, dict) else {"status": "failed", "error": repr(end)}
        end = self._end
        if end.get("status") == "completed":
            return self.workflow.decode_output(end.get("output"))  # the child's return type
        raise ChildWorkflowError(
            self.run_id, str(end.get("status")), end.get("error"), end.get("errorCode")
        )


async def start_child(
    workflow: WorkflowDef[P, R], *args: P.args, **kwargs: P.kwargs
) -> ChildRun[R]:
    """Start a child run from workflow code; `await` the returned `ChildRun` for its result.

    Durable and exactly once: the child's creation and the parent's record of it are one
    transaction; the parent waits on a hook the child's end resumes (children.py). The child
    is driven by `wfctl worker`s of its queue: `start_child(child.options(queue="q"), ...)`
    (default "default"; `queue=` as a keyword too, unless the child has such a parameter)."""
    if not engine.in_workflow():
        raise RuntimeError("start_child() is for workflow code; outside one use start()")
    options, own = workflow.split_options(dict(kwargs))
    queue = options.queue or "default"
    positional = workflow.bind(args, own)
    child_input = workflow.encode_input(list(args), own)
    record = serde.dumps(
        {"workflow": workflow.name, "args": positional, "queue": queue},
        f"the input of workflow {workflow.name}",
    )
    eng = engine.current()
    corr, hook = eng.start_child(workflow.name, record, child_input, queue)
    run_id = await eng.child_future(corr)
    return ChildRun(str(run_id), workflow, hook)


# --- starting runs -------------------------------------------------------------------------


async def start(workflow: WorkflowDef[P, R], *args: P.args, **kwargs: P.kwargs) -> RunHandle[R]:
    """Start a run (one transaction: run row, slot marker, run_created) and return its handle,
    generic in the workflow's return type; `await handle.result()` drives it in this process
    (under a lease: a worker adopts it if this process dies) and returns the output decoded
    to the return annotation. Options: `start(flow.options(run_id=..., idempotency_key=...),
    *args)` (or those keywords, unless the workflow has such a parameter). To hand a run to
    workers instead, use `Client.enqueue`."""
    if engine.in_workflow():
        raise DeterminismError(
            "start() cannot be called inside a workflow (it does I/O and would start a new run"
            " on every replay): use `child = await start_child(workflow, *args)`, then"
            " `await child` for its result"
        )
    options, rest = workflow.split_options(dict(kwargs))
    created = await asyncio.to_thread(
        executor.create,
        workflow,
        list(args),
        kwargs=rest or None,
        run_id=options.run_id,
        idempotency_key=options.idempotency_key,
        traceparent=options.traceparent,
        tracestate=options.tracestate,
    )
    return RunHandle(created.run_id, workflow, created.status, drive=True)


__all__ = [
    "DEFAULT_MAX_RETRIES",
    "ArgumentsError",
    "AsyncClient",
    "Cancelled",
    "ChildRun",
    "ChildWorkflowError",
    "Client",
    "ConnectionError",
    "DecodeError",
    "DeterminismError",
    "FatalError",
    "Hook",
    "HookConflictError",
    "HookNotFoundError",
    "HookTimeoutError",
    "IdempotencyConflictError",
    "RetryableError",
    "RunCancelledError",
    "RunEndedError",
    "RunFailedError",
    "RunHandle",
    "RunNotFoundError",
    "RunPage",
    "RunTimeoutError",
    "SerializationError",
    "StepContext",
    "StepDef",
    "StepFailedError",
    "SyncRunHandle",
    "WorkflowDef",
    "WorkflowError",
    "Workflows",
    "cancel_requested",
    "create_hook",
    "now",
    "parse_duration",
    "patched",
    "random",
    "register_codec",
    "sleep",
    "start",
    "start_child",
    "step_context",
]
