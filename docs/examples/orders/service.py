"""What the web side of the order service calls (any framework): it never drives a run, it
hands runs to the workers and talks to them through `Client`. Typed end to end: `enqueue`
checks `place_order`'s arguments, and `result()` returns a `Receipt` (decoded from the
stored output to the workflow's return annotation), for mypy and pyright alike."""

from __future__ import annotations

from typing import Any

from wfctl.runtime import Client, SyncRunHandle

from .flows import Order, Receipt, place_order


def place(client: Client, order: Order) -> str:
    """Start the order's workflow on the workers; one run per order id, however often the
    customer clicks (the idempotency key; the same order again returns the same run)."""
    handle: SyncRunHandle[Receipt] = client.enqueue(
        place_order.options(idempotency_key=f"order-{order.id}"), order
    )
    return handle.id


def approve(client: Client, order_id: str, by: str, approved: bool = True) -> str | None:
    """A manager's decision, delivered to the waiting run: the run's id, or None when the
    run has not reached its approval yet (the decision is kept and handed over then). A
    decision that is not a `Decision` raises `DecodeError` and writes nothing."""
    return client.resume_hook(f"approve-{order_id}", {"approved": approved, "by": by})


def receipt(client: Client, run_id: str, timeout: float | None = None) -> Receipt:
    """The order's receipt once its run ends (`RunFailedError`, `RunCancelledError`...)."""
    return client.get(run_id, place_order).result(timeout=timeout)


def status(client: Client, run_id: str) -> dict[str, Any]:
    handle = client.get(run_id, place_order)
    return {"status": handle.status, "output": handle.output, "error": handle.error}
