"""Workflows with rich arguments and results (tests/runtime/test_values.py). String
annotations on purpose (`from __future__ import annotations`): they are resolved once."""

from __future__ import annotations

import asyncio
import enum
import uuid
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from decimal import Decimal

from wfctl.runtime import Workflows, create_hook

wf = Workflows()


class Tier(enum.Enum):
    GOLD = "gold"
    SILVER = "silver"


@dataclass
class Line:
    sku: str
    price: Decimal
    qty: int = 1


@dataclass
class Order:
    id: uuid.UUID
    placed: date
    cutoff: time
    tier: Tier
    lines: list[Line]
    tags: frozenset[str] = field(default_factory=frozenset)
    blob: bytes = b""
    at: datetime = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class Receipt:
    order: uuid.UUID
    total: Decimal
    skus: set[str]
    pair: tuple[int, str]


SEEN: list[object] = []


@wf.step
def price(order: Order) -> Receipt:
    SEEN.append(order)
    total = sum((line.price * line.qty for line in order.lines), Decimal(0))
    return Receipt(order.id, total, {line.sku for line in order.lines}, (len(order.lines), "n"))


@wf.step
def echo_bytes(data: bytes) -> bytes:
    return data[::-1]


@wf.workflow
async def checkout(order: Order) -> Receipt:
    SEEN.append(order)
    receipt = await price(order)
    SEEN.append(receipt)
    assert isinstance(receipt.total, Decimal) and isinstance(receipt.skus, set)
    assert await echo_bytes(order.blob) == order.blob[::-1]
    return receipt


@wf.workflow
async def fan(order: Order) -> list[Receipt]:
    # typed step results composed with gather (the awaitables are not futures)
    first, second = await asyncio.gather(price(order), price(order))
    return [first, second]


@wf.workflow
async def untyped(value):  # type: ignore[no-untyped-def]
    return value


@dataclass
class Decision:
    approved: bool
    limit: Decimal
    by: uuid.UUID | None = None


@wf.workflow
async def approve(order: Order) -> str:
    decision = await create_hook(token=f"approve-{order.id}", payload_type=Decision)
    assert isinstance(decision, Decision) and isinstance(decision.limit, Decimal)
    return f"{order.tier.value}: {decision.approved} up to {decision.limit}"


def sample() -> Order:
    return Order(
        id=uuid.UUID("12345678-1234-5678-1234-567812345678"),
        placed=date(2026, 12, 4),
        cutoff=time(17, 30),
        tier=Tier.GOLD,
        lines=[Line("a", Decimal("1.10"), 2), Line("b", Decimal("0.05"))],
        tags=frozenset({"x", "y"}),
        blob=b"\x00\xffwf",
    )
