"""`step_context()`: which run, step and attempt the calling step body belongs to.

For idempotency keys towards other systems (a payment provider's `Idempotency-Key:
{run_id}-{step_id}` survives a retry and a crash, since a step keeps its id) and for logs.
The executor sets a context variable around each step body call (one `ContextVar.set` and
`reset`: no I/O, nothing per step beyond that); a sync body run on the step thread pool gets
it set in that thread.

`LogContext`, a `logging.Filter` that `wfctl worker` and `wfctl run` put on the root logger's
handlers, reads the same variables when (and only when) a record is logged: a record logged
in a step body carries `run_id`, `workflow`, `step`, `step_id` and `attempt`; one logged in
workflow code carries `run_id` and `workflow`, and is dropped while a drive replays the log
(the workflow's code runs again over what it already did, and logged it then). The runtime
pays nothing for it while nobody logs: a run's variable is set once per drive.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StepContext:
    """The step being executed: `run_id`, `step_id` (its correlation id, stable across
    attempts and crashes), `step_name`, `attempt` (1 for the first) and `workflow_name`."""

    run_id: str
    step_id: str
    step_name: str
    attempt: int
    workflow_name: str = ""


@dataclass
class RunContext:
    """The run a drive advances (for logs from workflow code); `replaying` while the drive
    feeds the log it found, when the workflow's code re-runs what it already did."""

    run_id: str
    workflow_name: str
    replaying: bool = False

    def live(self) -> None:
        self.replaying = False


_CURRENT: ContextVar[StepContext | None] = ContextVar("wfctl_step_context", default=None)
_RUN: ContextVar[RunContext | None] = ContextVar("wfctl_run_context", default=None)


@contextmanager
def driving(run_id: str, workflow_name: str) -> Iterator[RunContext]:
    """The run this thread drives, for the records its workflow code logs."""
    run = RunContext(run_id, workflow_name)
    token = _RUN.set(run)
    try:
        yield run
    finally:
        _RUN.reset(token)


def _short(name: str) -> str:
    from wfctl.runtime.engine import short_name

    return short_name(name)


class LogContext(logging.Filter):
    """Adds the run, workflow, step and attempt to records logged inside a run; drops the
    records workflow code logs while its drive replays (they were logged the first time)."""

    def filter(self, record: logging.LogRecord) -> bool:
        step = _CURRENT.get()
        if step is not None:
            record.run_id = step.run_id
            if step.workflow_name:
                record.workflow = _short(step.workflow_name)
            record.step = _short(step.step_name)
            record.step_id = step.step_id
            record.attempt = step.attempt
            return True
        run = _RUN.get()
        if run is None:
            return True
        if run.replaying:
            return False
        record.run_id = run.run_id
        record.workflow = _short(run.workflow_name)
        return True


def step_context() -> StepContext:
    """The context of the step body calling this; RuntimeError outside a step body."""
    ctx = _CURRENT.get()
    if ctx is None:
        raise RuntimeError("step_context() is only available inside a step body run by wfctl")
    return ctx


def call(ctx: StepContext, fn: Callable[[list[Any]], Any], args: list[Any]) -> Any:
    """`fn(args)` with `ctx` current (a sync body: the value; an async one: its coroutine,
    which is created here and so keeps the context when the caller awaits it in its task)."""
    token = _CURRENT.set(ctx)
    try:
        return fn(args)
    finally:
        _CURRENT.reset(token)


async def call_async(ctx: StepContext, fn: Callable[[list[Any]], Any], args: list[Any]) -> Any:
    """Await an async body with `ctx` current for its whole run."""
    token = _CURRENT.set(ctx)
    try:
        return await fn(args)
    finally:
        _CURRENT.reset(token)
