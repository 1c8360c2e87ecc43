"""`step_context()`: which run, step and attempt the calling step body belongs to.

For idempotency keys towards other systems (a payment provider's `Idempotency-Key:
{run_id}-{step_id}` survives a retry and a crash, since a step keeps its id) and for logs.
The executor sets a context variable around each step body call (one `ContextVar.set` and
`reset`: no I/O, nothing per step beyond that); a sync body run on the step thread pool gets
it set in that thread.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StepContext:
    """The step being executed: `run_id`, `step_id` (its correlation id, stable across
    attempts and crashes), `step_name` and `attempt` (1 for the first)."""

    run_id: str
    step_id: str
    step_name: str
    attempt: int


_CURRENT: ContextVar[StepContext | None] = ContextVar("wfctl_step_context", default=None)


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
