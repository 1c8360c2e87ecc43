"""Workflows for the retry, cancellation and child-workflow tests (module-level, so a
`wfctl worker tests.runtime.flow_features` process serves them too)."""

from __future__ import annotations

import time
from typing import Any

from wfctl.runtime import (
    Cancelled,
    ChildWorkflowError,
    Workflows,
    cancel_requested,
    create_hook,
    sleep,
    start,
    start_child,
)

wf = Workflows()
calls: dict[str, int] = {}


def reset() -> None:
    calls.clear()


def _count(key: str) -> int:
    calls[key] = calls.get(key, 0) + 1
    return calls[key]


# --- retries ---------------------------------------------------------------------------------


@wf.step(max_retries=3, backoff="0.2s")
def always_fails(key: str) -> str:
    _count(f"always:{key}")
    raise ValueError("the dependency is down")


@wf.step(max_retries=2)
def fails_once(key: str) -> int:
    n = _count(f"once:{key}")
    if n == 1:
        raise ConnectionError("first attempt fails")
    return n


@wf.step(max_retries=5, backoff="10s", max_backoff="0.3s", jitter=0)
def capped(key: str) -> str:
    _count(f"capped:{key}")
    raise ValueError("still down")


@wf.workflow
async def retrying(key: str) -> str:
    return await always_fails(key)


@wf.workflow
async def retry_default(key: str) -> int:
    return await fails_once(key)


@wf.workflow
async def retry_capped(key: str) -> str:
    return await capped(key)


# --- cancellation ----------------------------------------------------------------------------


@wf.step
def reserve(key: str) -> str:
    _count(f"reserve:{key}")
    return f"r-{key}"


@wf.step
def release(key: str, reservation: str) -> str:
    _count(f"release:{key}")
    return f"released {reservation}"


@wf.step
def slow(key: str, seconds: float) -> str:
    _count(f"slow:{key}")
    time.sleep(seconds)
    return "slow done"


@wf.workflow
async def saga(key: str) -> str:
    reservation = await reserve(key)
    try:
        await create_hook(token=f"confirm-{key}")
    except Cancelled:
        await release(key, reservation)  # compensation, then the run ends cancelled
        raise
    return "confirmed"


@wf.workflow
async def sleeper(key: str) -> str:
    await sleep("1h")
    return "woke"


@wf.workflow
async def absorbs(key: str) -> str:
    try:
        await sleep("1h")
    except Cancelled:
        return f"stopped: {cancel_requested()}"
    return "woke"


@wf.workflow
async def busy(key: str, seconds: float) -> str:
    try:
        await slow(key, seconds)
        await reserve(key)
    except Cancelled:
        await release(key, "busy")
        raise
    return "done"


# --- children --------------------------------------------------------------------------------


@wf.step
def double(x: int) -> int:
    _count("double")
    return 2 * x


@wf.workflow
async def child_double(x: int) -> int:
    return await double(x)


@wf.workflow
async def child_fails(x: int) -> int:
    raise ValueError(f"bad {x}")


@wf.workflow
async def child_waits(token: str) -> Any:
    return await create_hook(token=token)


@wf.workflow
async def parent(x: int) -> dict[str, Any]:
    first = await start_child(child_double, x)
    second = await start_child(child_double, x + 1)
    return {"a": await first, "b": await second, "ids": [first.run_id, second.run_id]}


@wf.workflow
async def parent_catches(x: int) -> dict[str, Any]:
    child = await start_child(child_fails, x)
    try:
        await child
    except ChildWorkflowError as exc:
        return {"status": exc.status, "error": exc.error, "code": exc.error_code}
    return {"status": "completed"}


@wf.workflow
async def parent_of_waiter(token: str) -> Any:
    child = await start_child(child_waits, token)
    return await child


@wf.workflow
async def starts_inside() -> str:
    await start(child_double, 1)
    return "unreachable"
