"""Workflows of the client tests (`wfctl worker tests.worker.clientflows`): the outcomes a
client waits for (completed, failed, cancelled, parked on a hook), `step_context()`, and a
gated run to SIGKILL an in-process driver in the middle of."""

from __future__ import annotations

import logging
from typing import Any

from tests.worker.flows import effect, gated_step
from wfctl.runtime import FatalError, RetryableError, Workflows, create_hook, step_context

wf = Workflows()
wf.steps[gated_step.name] = gated_step  # shared with tests.worker.flows: served here too


@wf.step
def double(x: int) -> int:
    return 2 * x


@wf.step
def broken(message: str) -> str:
    raise FatalError(message)


@wf.step(max_retries=2)
def where(key: str) -> dict[str, Any]:
    ctx = step_context()
    effect(key, f"where-{ctx.attempt}")
    if ctx.attempt == 1:
        raise RetryableError("first attempt fails", retry_after=0.01)
    return {"run_id": ctx.run_id, "step_id": ctx.step_id, "attempt": ctx.attempt,
            "step_name": ctx.step_name}  # fmt: skip


@wf.workflow
async def doubled(x: int) -> dict[str, Any]:
    return {"x": x, "doubled": await double(x)}


@wf.workflow
async def failing(message: str) -> str:
    return await broken(message)


@wf.workflow
async def waiting(token: str) -> Any:
    hook = create_hook(token=token)
    payload = await hook
    hook.dispose()
    return {"got": payload}


@wf.workflow
async def located(key: str) -> dict[str, Any]:
    return await where(key)


@wf.workflow
async def gate(key: str, n: int) -> int:
    for _ in range(n):
        await gated_step(key)
    return n


# --- user logging (test_observability.py) -------------------------------------------------

log = logging.getLogger("shop.orders")


@wf.step(max_retries=2)
def noisy(key: str) -> str:
    log.info("charging %s", key)
    if step_context().attempt == 1:
        log.warning("provider down for %s", key)
        raise RetryableError("provider down", retry_after=0.01)
    return key


@wf.workflow
async def logged(key: str) -> str:
    log.info("order %s placed", key)  # once, though the retry's drive replays this line
    out = await noisy(key)
    log.info("order %s done", key)
    return out
