# ruff: noqa: F841, B018  (deliberately wrong code for the type checkers)
"""Calls a type checker must refuse (each line marked `# error`), and the correct ones it must
accept: tests/runtime/test_typing.py runs mypy --strict and pyright on this file."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from decimal import Decimal

from wfctl.runtime import (
    AsyncClient,
    Client,
    RunHandle,
    SyncRunHandle,
    Workflows,
    create_hook,
    start,
    start_child,
)

wf = Workflows()


@dataclass
class Receipt:
    order_id: str
    total: Decimal


@wf.step(max_retries=2)
def charge(order_id: str, cents: int) -> Receipt:
    return Receipt(order_id, Decimal(cents) / 100)


@wf.step
async def lookup(order_id: str) -> int:
    return len(order_id)


@wf.workflow
async def child(n: int) -> str:
    return str(n)


@wf.workflow
async def checkout(order_id: str, cents: int = 0) -> Receipt:
    receipt = await charge(order_id, cents)
    count: int = await lookup(order_id)
    kid = await start_child(child, count)
    label: str = await kid
    await charge(order_id, "12")  # error
    await lookup(42)  # error
    bad: str = await charge(order_id, 1)  # error
    await start_child(child, "x")  # error
    hook = create_hook(token=label)
    await hook.wait(timeout="1h")
    typed = create_hook(token=label, payload_type=Receipt)
    paid: Receipt = await typed.wait(timeout="1h")
    late: Receipt = await typed
    (await typed).missing  # error
    count = await typed  # error
    return paid if late else receipt


@wf.workflow(name="named", schedule=None)
async def named(flag: bool) -> bool:
    return flag


def sync_side(client: Client) -> None:
    handle: SyncRunHandle[Receipt] = client.enqueue(checkout, "o-1", cents=5)
    total: Decimal = handle.result(timeout=5).total
    keyed = client.enqueue(checkout.options(idempotency_key="k"), "o-1")
    keyed.result().order_id.upper()
    client.enqueue(checkout, 1)  # error
    client.enqueue(checkout, "o-1", cents="5")  # error
    client.enqueue(named)  # error
    handle.result().missing  # error
    wrong: int = handle.result()  # error
    client.get("wrun_x", checkout).result().total.quantize(Decimal(1))
    print(total)


async def async_side(client: AsyncClient) -> None:
    handle: RunHandle[Receipt] = await client.enqueue(checkout, "o-1")
    receipt: Receipt = await handle.result()
    started = await start(checkout, "o-2", 7)
    (await started.result()).total.quantize(Decimal(1))
    await client.enqueue(checkout, b"o-1")  # error
    await start(named, "yes")  # error
    text: str = await handle.result()  # error
    print(receipt)


asyncio.run(async_side(AsyncClient()))
