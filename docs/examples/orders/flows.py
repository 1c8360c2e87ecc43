"""The order workflows: run them with `wfctl worker docs/examples/orders/flows.py`.

- `place_order(order: Order) -> Receipt`: reserve stock, wait for a manager's approval when
  the order is large (a hook the web side resumes through `Client.resume_hook`; no decision
  within three days rejects the order: `hook.wait(timeout=...)`), charge the
  card once (an idempotency key from `step_context()`, so a retried or re-run charge is not
  charged twice), ship it as a child workflow, and undo the reservation if it is rejected.
- `ship(order_id, address)`: the child: print a label, wait two days for the carrier (a
  durable sleep the tests fast-forward), return the tracking number.
- `hourly_digest(tick)`: a schedule (`0 * * * *`): once an hour, across all workers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from wfctl.runtime import (
    HookTimeoutError,
    RetryableError,
    Workflows,
    create_hook,
    sleep,
    start_child,
    step_context,
)

wf = Workflows()
APPROVAL_LIMIT = Decimal("500")
APPROVAL_WINDOW = "3d"  # a manager decides within three days, or the order is rejected
NO_DECISION = "nobody (no decision in 3 days)"


@dataclass
class Line:
    sku: str
    quantity: int
    unit_price: Decimal


@dataclass
class Order:
    id: str
    customer: str
    address: str
    lines: list[Line] = field(default_factory=list)

    @property
    def total(self) -> Decimal:
        return sum((line.unit_price * line.quantity for line in self.lines), Decimal(0))


@dataclass
class Decision:
    approved: bool
    by: str


@dataclass
class Receipt:
    order_id: str
    status: str  # shipped | rejected
    total: Decimal
    charge_id: str | None = None
    tracking: str | None = None
    approved_by: str | None = None


# --- stand-ins for the services a real deployment calls (the tests inspect them) -----------


class Payments:
    """A payment provider that honours idempotency keys, as real ones do."""

    def __init__(self) -> None:
        self.charges: dict[str, tuple[str, Decimal]] = {}
        self.calls = 0
        self.fail_next = 0  # make the next N calls fail like a flaky network

    def charge(self, key: str, customer: str, amount: Decimal) -> str:
        self.calls += 1
        if self.fail_next:
            self.fail_next -= 1
            raise ConnectionError("payment provider timed out")
        if key not in self.charges:
            self.charges[key] = (f"ch_{len(self.charges) + 1}", amount)
        return self.charges[key][0]


payments = Payments()
stock: dict[str, int] = {}  # sku -> units reserved
digests: list[str] = []


# --- steps ------------------------------------------------------------------------------------


@wf.step
def reserve_stock(order: Order) -> list[str]:
    for line in order.lines:
        stock[line.sku] = stock.get(line.sku, 0) + line.quantity
    return [line.sku for line in order.lines]


@wf.step
def release_stock(order: Order) -> None:
    for line in order.lines:
        stock[line.sku] -= line.quantity


@wf.step(max_retries=5, backoff="2s", max_backoff="1m")
def charge_card(order: Order) -> str:
    ctx = step_context()  # the same run id and step id on every attempt and after a crash
    key = f"{ctx.run_id}/{ctx.step_id}"
    try:
        return payments.charge(key, order.customer, order.total)
    except ConnectionError as exc:
        raise RetryableError(str(exc)) from exc  # backed off (durable), then retried


@wf.step
def print_label(order_id: str, address: str) -> str:
    return f"TRK-{order_id}-{sum(map(ord, address)) % 10_000:04d}"


@wf.step
def send_digest(tick: datetime) -> str:
    line = f"digest {tick:%Y-%m-%d %H:%M}"
    digests.append(line)
    return line


# --- workflows --------------------------------------------------------------------------------


@wf.workflow
async def ship(order_id: str, address: str) -> str:
    tracking = await print_label(order_id, address)
    await sleep("2d")  # the carrier collects; durable, however long
    return tracking


@wf.workflow
async def place_order(order: Order) -> Receipt:
    await reserve_stock(order)
    approved_by = None
    if order.total > APPROVAL_LIMIT:
        approval = create_hook(token=f"approve-{order.id}", payload_type=Decision)
        try:
            decision = await approval.wait(timeout=APPROVAL_WINDOW)
        except HookTimeoutError:  # nobody decided in time: the order is not approved
            decision = Decision(approved=False, by=NO_DECISION)
        if not decision.approved:
            await release_stock(order)
            return Receipt(order.id, "rejected", order.total, approved_by=decision.by)
        approved_by = decision.by
    charge_id = await charge_card(order)
    shipment = await start_child(ship, order.id, order.address)
    tracking = await shipment
    return Receipt(order.id, "shipped", order.total, charge_id, tracking, approved_by)


@wf.workflow(schedule="0 * * * *")
async def hourly_digest(tick: datetime) -> str:
    return await send_digest(tick)
