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
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import re
from collections.abc import AsyncIterator, Callable, Coroutine, Generator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from wfctl.runtime import engine, serde

DEFAULT_MAX_RETRIES = 3
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}


class FatalError(Exception):
    """Raise from a step to fail it at once (no retry)."""


class RetryableError(Exception):
    """Raise from a step to retry it after `retry_after` (seconds, timedelta or datetime)."""

    def __init__(
        self, message: str = "", *, retry_after: float | timedelta | datetime | None = None
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after


SerializationError = serde.SerializationError
StepFailedError = engine.StepFailedError
HookConflictError = engine.HookConflictError


def parse_duration(value: str | float | timedelta) -> timedelta:
    """`"10m"`, `"1.5s"`, `"250ms"`, `"2h"`, `"1d"`, a number of seconds, or a timedelta."""
    if isinstance(value, timedelta):
        return value
    if isinstance(value, int | float):
        return timedelta(seconds=float(value))
    m = _DURATION.match(value)
    if not m:
        raise ValueError(f"not a duration: {value!r} (try 10s, 5m, 2h, 1d, 250ms)")
    return timedelta(seconds=float(m.group(1)) * _UNITS[m.group(2)])


def _qualified(fn: Callable[..., Any], kind: str) -> str:
    return f"{kind}//py:{fn.__module__}//{fn.__qualname__}"


@dataclass
class StepDef:
    """A registered step. Called inside a workflow: a durable, awaited call."""

    fn: Callable[..., Any]
    name: str
    max_retries: int
    timeout: float | None = None  # seconds; an attempt that runs longer fails (and retries)
    backoff: float | None = None  # seconds: retry n waits backoff * 2**(n-1) (durable timer)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not engine.in_workflow():
            return self.fn(*args, **kwargs)
        positional = _positional(self.fn, args, kwargs, self.name)
        data = serde.dumps(positional, f"the input of step {self.name}")
        return engine.current().call_step(self.name, data, self.max_retries)

    def invoke(self, args: list[Any]) -> Any:
        """Run the body (executor side): returns a value or a coroutine."""
        return self.fn(*args)

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.fn)


@dataclass
class WorkflowDef:
    """A registered workflow."""

    fn: Callable[..., Coroutine[Any, Any, Any]]
    name: str
    registry: Workflows

    def __call__(self, *args: Any, **kwargs: Any) -> Coroutine[Any, Any, Any]:
        return self.fn(*args, **kwargs)

    def encode_input(self, args: list[Any], kwargs: dict[str, Any] | None = None) -> bytes:
        positional = _positional(self.fn, tuple(args), kwargs or {}, self.name)
        return serde.dumps(positional, f"the input of workflow {self.name}")


def _positional(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], name: str
) -> list[Any]:
    """Arguments as one positional list (the log stores an array, as the DevKit does)."""
    if not kwargs:
        return list(args)
    bound = inspect.signature(fn).bind(*args, **kwargs)
    if bound.kwargs:
        raise TypeError(f"{name}: keyword-only arguments cannot be recorded; pass them by position")
    return list(bound.args)


class Workflows:
    """A registry of workflows and steps; `wfctl run module:attr` finds workflows here."""

    def __init__(self, dsn: str | None = None) -> None:
        self.dsn = dsn
        self.workflows: dict[str, WorkflowDef] = {}
        self.steps: dict[str, StepDef] = {}

    def workflow(
        self, fn: Callable[..., Coroutine[Any, Any, Any]] | None = None, *, name: str | None = None
    ) -> Any:
        def register(f: Callable[..., Coroutine[Any, Any, Any]]) -> WorkflowDef:
            if not inspect.iscoroutinefunction(f):
                raise TypeError(f"@workflow needs an `async def` function, got {f!r}")
            wdef = WorkflowDef(f, name or _qualified(f, "workflow"), self)
            functools.update_wrapper(wdef, f)
            self.workflows[wdef.name] = wdef
            return wdef

        return register(fn) if fn is not None else register

    def step(
        self,
        fn: Callable[..., Any] | None = None,
        *,
        max_retries: int = DEFAULT_MAX_RETRIES,
        name: str | None = None,
        timeout: str | float | timedelta | None = None,
        backoff: str | float | timedelta | None = None,
    ) -> Any:
        limit = None if timeout is None else parse_duration(timeout).total_seconds()
        base = None if backoff is None else parse_duration(backoff).total_seconds()

        def register(f: Callable[..., Any]) -> StepDef:
            sdef = StepDef(f, name or _qualified(f, "step"), max(0, max_retries), limit, base)
            functools.update_wrapper(sdef, f)
            self.steps[sdef.name] = sdef
            return sdef

        return register(fn) if fn is not None else register

    def find(self, attr: str) -> WorkflowDef:
        """A workflow by function name, qualified name or full workflow name."""
        for wdef in self.workflows.values():
            if attr in (wdef.name, wdef.fn.__name__, wdef.fn.__qualname__):
                return wdef
        known = ", ".join(sorted(w.fn.__name__ for w in self.workflows.values())) or "none"
        raise LookupError(f"no workflow {attr!r} in this registry (known: {known})")

    def by_name(self, name: str) -> WorkflowDef | None:
        return self.workflows.get(name)


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
    """A durable sleep: `await sleep("10m")` or `await sleep(until=datetime)`."""
    eng = engine.current()
    if until is None:
        if duration is None:
            raise TypeError("sleep() needs a duration or until=")
        until = eng.now() + parse_duration(duration)
    elif until.tzinfo is None:
        until = until.replace(tzinfo=UTC)
    return eng.sleep_until(until)


class Hook:
    """A hook created inside a workflow: `await hook` for the next payload, or
    `async for payload in hook`. Resumed from outside with `wfctl hooks resume TOKEN JSON`."""

    def __init__(self, correlation_id: str) -> None:
        self.correlation_id = correlation_id

    @property
    def token(self) -> str:
        return engine.current().hook_token(self.correlation_id)

    def __await__(self) -> Generator[Any, None, Any]:
        return engine.current().next_payload(self.correlation_id).__await__()

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Any]:
        while True:
            yield await self

    def dispose(self) -> None:
        """Release the token (a `hook_disposed` event); later resumes are refused."""
        engine.current().dispose_hook(self.correlation_id)


def create_hook(token: str | None = None, *, metadata: Any = None) -> Hook:
    """Create a hook; `token` defaults to a deterministic one (see `hook.token`)."""
    eng = engine.current()
    meta = None if metadata is None else serde.dumps(metadata, "hook metadata")
    return Hook(eng.create_hook(token, meta))


# --- starting runs -------------------------------------------------------------------------


@dataclass
class RunHandle:
    """A started run: its id, and (after `result()`) its status and output."""

    id: str
    workflow: WorkflowDef
    status: str = "pending"
    output: Any = None
    error: str | None = None

    async def result(self, timeout: float | None = None) -> Any:
        """Drive the run in this process until it ends; its output (or an exception)."""
        from wfctl.runtime.executor import drive_to_end

        done = await asyncio.to_thread(drive_to_end, self.workflow.registry, self.id, timeout)
        self.status, self.output, self.error = done.status, done.output, done.error
        if done.status != "completed":
            raise RuntimeError(f"run {self.id} {done.status}: {done.error}")
        return done.output


async def start(
    workflow: WorkflowDef,
    *args: Any,
    run_id: str | None = None,
    idempotency_key: str | None = None,
) -> RunHandle:
    """Start a run (one transaction: run row, slot marker, run_created) and return its handle."""
    from wfctl.runtime.executor import create

    created = await asyncio.to_thread(
        create, workflow, list(args), run_id=run_id, idempotency_key=idempotency_key
    )
    return RunHandle(created.run_id, workflow, created.status)
