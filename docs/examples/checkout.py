"""An example durable workflow: `wfctl run docs/examples/checkout.py:checkout '["order-1"]'`.

Three steps, one retried, a parallel pair, a short durable sleep. Every step's row and
event commit together; `wfctl runs show <run id>` shows the log afterwards.
"""

from __future__ import annotations

import asyncio

from wfctl.runtime import RetryableError, Workflows, now, sleep

wf = Workflows()
_flaky_calls: dict[str, int] = {}


@wf.step
def reserve(order_id: str) -> dict[str, object]:
    return {"order": order_id, "reserved": True}


@wf.step(max_retries=3)
def charge(order_id: str, amount: int) -> str:
    # Fails once per process to show a retry (step_retrying, then step_started again).
    _flaky_calls[order_id] = _flaky_calls.get(order_id, 0) + 1
    if _flaky_calls[order_id] == 1:
        raise RetryableError("payment gateway busy", retry_after=0.2)
    return f"ch_{order_id}_{amount}"


@wf.step
async def notify(channel: str, order_id: str) -> str:
    await asyncio.sleep(0.01)
    return f"{channel}:{order_id}"


@wf.workflow
async def checkout(order_id: str, amount: int = 42) -> dict[str, object]:
    reservation = await reserve(order_id)
    charge_id = await charge(order_id, amount)
    await sleep("1s")
    sent = await asyncio.gather(notify("email", order_id), notify("sms", order_id))
    return {
        "reservation": reservation,
        "charge": charge_id,
        "notified": list(sent),
        "finished_at": now().isoformat(),
    }
