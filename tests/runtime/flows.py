"""Workflows the runtime tests drive (module-level, so `wfctl run tests.runtime.flows:X` works)."""

from __future__ import annotations

import asyncio
from typing import Any

from wfctl.runtime import (
    FatalError,
    RetryableError,
    Workflows,
    create_hook,
    now,
    random,
    sleep,
)

wf = Workflows()
calls: dict[str, int] = {}


def reset() -> None:
    calls.clear()


def _count(key: str) -> int:
    calls[key] = calls.get(key, 0) + 1
    return calls[key]


@wf.step
def add(a: int, b: int) -> int:
    _count("add")
    return a + b


@wf.step
async def slow_double(x: int, delay: float) -> int:
    await asyncio.sleep(delay)
    return 2 * x


@wf.step(max_retries=2)
def flaky(key: str, failures: int) -> str:
    n = _count(f"flaky:{key}")
    if n <= failures:
        raise RetryableError(f"attempt {n} failed", retry_after=0.05)
    return f"ok after {n}"


@wf.step(max_retries=5)
def fatal(key: str) -> str:
    _count(f"fatal:{key}")
    raise FatalError("no retry for this")


@wf.step
def unserialisable() -> Any:
    return object()


@wf.workflow
async def sequential(n: int) -> int:
    total = 0
    for i in range(n):
        total = await add(total, i)
    return total


@wf.workflow
async def parallel(values: list[int]) -> list[int]:
    # later values finish first: results still come back in gather's order
    return list(
        await asyncio.gather(
            *(slow_double(v, 0.01 * (len(values) - i)) for i, v in enumerate(values))
        )
    )


@wf.workflow
async def retrying(key: str, failures: int) -> str:
    return await flaky(key, failures)


@wf.workflow
async def failing(key: str) -> str:
    return await fatal(key)


@wf.workflow
async def bad_result() -> Any:
    return await unserialisable()


@wf.workflow
async def sleeper(seconds: float) -> dict[str, Any]:
    before = now()
    await sleep(seconds)
    after = now()
    return {"slept": (after - before).total_seconds(), "r": random()}


@wf.workflow
async def approval(order: str) -> dict[str, Any]:
    first = await add(1, 2)
    hook = create_hook(token=f"approve-{order}")
    decision = await hook
    hook.dispose()
    second = await add(first, 10)
    return {"decision": decision, "sum": second}


@wf.workflow
async def everything(order: str) -> dict[str, Any]:
    """One run that exercises every transition kind (for fault injection and read-back)."""
    a = await add(1, 1)
    b = await flaky(order, 1)
    c, d = await asyncio.gather(slow_double(a, 0.01), slow_double(a, 0.0))
    await sleep(0.05)
    hook = create_hook(token=f"all-{order}")
    got = await hook
    hook.dispose()
    return {"a": a, "b": b, "cd": [c, d], "hook": got}


@wf.workflow
async def not_json(x: Any) -> Any:
    return x


@wf.workflow
async def clocked(n: int) -> list[str]:
    """Reads the clock right after each step (before that transaction's INSERTs are sent)."""
    seen = []
    for i in range(n):
        await add(i, 1)
        seen.append(now().isoformat())
    return seen


@wf.workflow
async def dozing(key: str, seconds: float) -> int:
    """A step, a retried step and a sleep: every JS-clock column the runtime writes
    (started_at, completed_at, updated_at, retry_after, resume_at) on runs, steps and waits."""
    a = await add(1, 2)
    await flaky(key, 1)
    await sleep(seconds)
    return a
