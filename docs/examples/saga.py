"""A saga with compensation: book a flight and a hotel, charge the card; undo in reverse.

    wfctl run docs/examples/saga.py:trip '["trip-1", 420]' --detach
    wfctl worker docs/examples/saga.py
    wfctl runs cancel wrun_01J... --graceful --reason "customer cancelled"

Each forward step has its compensation; a step that fails for good (`FatalError`, or its
retries used up: `StepFailedError`) and a graceful cancellation (`asyncio.CancelledError`,
a.k.a. `wfctl.runtime.Cancelled`, raised at the workflow's next await) both run the
compensations of what was done, newest first, as durable steps. A failure then fails the
run; a cancellation re-raises, so the run ends `cancelled` after its cleanup.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from wfctl.runtime import Cancelled, FatalError, StepFailedError, Workflows, create_hook

wf = Workflows()
ledger: list[str] = []  # what the "services" did, in order (the tests read it)


@wf.step
def book_flight(trip: str) -> str:
    ledger.append(f"flight booked {trip}")
    return f"FL-{trip}"


@wf.step
def cancel_flight(booking: str) -> None:
    ledger.append(f"flight cancelled {booking}")


@wf.step
def book_hotel(trip: str) -> str:
    ledger.append(f"hotel booked {trip}")
    return f"HT-{trip}"


@wf.step
def cancel_hotel(booking: str) -> None:
    ledger.append(f"hotel cancelled {booking}")


@wf.step(max_retries=2, backoff="0.1s")
def charge(trip: str, amount: int) -> str:
    if amount > 1000:
        raise FatalError(f"card declined for {amount}")  # no retry
    ledger.append(f"charged {amount} for {trip}")
    return f"ch-{trip}"


@wf.step
def refund(receipt: str) -> None:
    ledger.append(f"refunded {receipt}")


@wf.workflow
async def trip(trip_id: str, amount: int) -> dict[str, Any]:
    undo: list[Callable[[], Awaitable[Any]]] = []
    try:
        flight = await book_flight(trip_id)
        undo.append(lambda: cancel_flight(flight))
        hotel = await book_hotel(trip_id)
        undo.append(lambda: cancel_hotel(hotel))
        receipt = await charge(trip_id, amount)
        undo.append(lambda: refund(receipt))
        # The customer confirms (a web handler resumes the hook; see hook_handler.py).
        await create_hook(token=f"confirm-{trip_id}")
        return {"flight": flight, "hotel": hotel, "receipt": receipt}
    except (StepFailedError, Cancelled):
        for compensate in reversed(undo):
            await compensate()
        raise
