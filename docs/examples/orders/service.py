"""What the web side of the order service calls (any framework): it never drives a run, it
hands runs to the workers and talks to them through `Client`."""

from __future__ import annotations

from typing import Any

from wfctl.runtime import Client

from .flows import Order, place_order


def place(client: Client, order: Order) -> str:
    """Start the order's workflow on the workers; one run per order id, however often the
    customer clicks (the idempotency key)."""
    return client.enqueue(place_order, order, idempotency_key=f"order-{order.id}").id


def approve(client: Client, order_id: str, by: str, approved: bool = True) -> str:
    """A manager's decision, delivered to the waiting run; the run's id."""
    return client.resume_hook(f"approve-{order_id}", {"approved": approved, "by": by})


def status(client: Client, run_id: str) -> dict[str, Any]:
    handle = client.get(run_id)
    return {"status": handle.status, "output": handle.output, "error": handle.error}
