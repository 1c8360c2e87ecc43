"""Workflows for the wfctl.testing tests."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from wfctl.runtime import (
    FatalError,
    HookTimeoutError,
    Workflows,
    create_hook,
    now,
    sleep,
    start_child,
)

wf = Workflows()
CALLS: list[str] = []


@dataclass
class Invoice:
    customer: str
    cents: int


@wf.step
def charge(invoice: Invoice) -> str:
    CALLS.append(f"charge {invoice.customer}")
    return f"ch_{invoice.customer}_{invoice.cents}"


@wf.step(max_retries=0)
def explode() -> None:
    raise FatalError("no")


@wf.workflow
async def monthly(invoice: Invoice) -> dict:
    first = now()
    await sleep("30d")
    receipt = await charge(invoice)
    return {"receipt": receipt, "days": (now() - first).days}


@wf.workflow
async def poll_until(days: int) -> int:
    deadline = now() + timedelta(days=days)
    loops = 0
    while now() < deadline:
        await sleep("1d")
        loops += 1
    return loops


@wf.workflow
async def approval(order: str) -> str:
    decision = await create_hook(token=f"approve-{order}")
    return f"{order}: {decision['answer']}"


@wf.workflow
async def failing() -> None:
    await explode()


# --- the timeline of `wfctl runs show` (test_timeline.py) -------------------------------------

FLAKY: dict[str, int] = {}


@wf.step(max_retries=3, backoff="10s")
def flaky(key: str) -> str:
    FLAKY[key] = FLAKY.get(key, 0) + 1
    if FLAKY[key] < 3:
        raise ConnectionError(f"provider down ({FLAKY[key]})")
    return f"ok {key}"


@wf.workflow
async def courier(key: str) -> str:
    await sleep("1h")
    return f"picked {key}"


@wf.workflow
async def busy_day(key: str) -> str:
    charged = await flaky(key)
    decision = await create_hook(token=f"ok-{key}")
    await sleep("2h")
    child = await start_child(courier, key)
    picked = await child
    return f"{charged}, {decision['answer']}, {picked}"


# --- the public testing API (test_public_api.py) ----------------------------------------------


@dataclass
class Shipment:
    carrier: str
    tracking: str


@wf.workflow
async def await_shipment(order: str) -> str:
    hook = create_hook(token=f"ship-{order}", payload_type=Shipment)
    try:
        shipment = await hook.wait(timeout="2d")
    except HookTimeoutError:
        return f"{order}: no shipment after 2 days"
    return f"{order}: {shipment.carrier} {shipment.tracking}"


@wf.workflow
async def reminders(order: str) -> list[str]:
    sent = []
    for day in (1, 2, 3):
        await sleep("1d")
        sent.append(f"{order} day {day} at {now():%d %H}")
    return sent


TICKS: list[str] = []


@wf.step
def report(tick: datetime) -> str:
    TICKS.append(f"{tick:%H:%M}")
    return f"report {tick:%Y-%m-%d %H:%M}"


@wf.workflow(schedule="*/15 * * * *")
async def quarter_hourly(tick: datetime) -> str:
    return await report(tick)
