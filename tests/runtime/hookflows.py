"""Workflows for the typed-hook, hook-deadline and early-delivery tests (module-level, so a
`wfctl worker tests.runtime.hookflows` process could serve them too)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from wfctl.runtime import (
    DecodeError,
    DeterminismError,
    HookTimeoutError,
    Workflows,
    create_hook,
)

wf = Workflows()


@dataclass
class Shipment:
    carrier: str
    weight: Decimal


@wf.step
def note(text: str) -> str:
    return text


@wf.workflow
async def ship_or_timeout(order: str, seconds: float) -> str:
    """Waits for a shipment with a deadline; after a timeout, waits again (no deadline)."""
    hook = create_hook(token=f"ship-{order}", payload_type=Shipment)
    try:
        shipment = await hook.wait(timeout=timedelta(seconds=seconds))
    except HookTimeoutError:
        await note("timed out")
        late = await hook
        return f"late:{late.carrier}:{late.weight}"
    return await note(f"{shipment.carrier}:{shipment.weight + 1}")


@wf.workflow
async def typed_hook(order: str) -> str:
    hook = create_hook(token=f"typed-{order}", payload_type=Shipment)
    try:
        shipment = await hook
    except DecodeError as exc:
        return f"undecodable: {type(exc).__name__}"
    return shipment.carrier


@wf.workflow
async def asyncio_timer() -> str:
    try:
        async with asyncio.timeout(5):
            await note("inside")
    except DeterminismError:
        return "refused"
    return "ran"


@wf.workflow
async def plain_hook(token: str) -> object:
    return await create_hook(token=token)


@wf.workflow
async def priced(order: str, cents: int) -> Shipment:
    """A rich return type: every handle decodes it the same way (one decoding path)."""
    return Shipment(await note(order), Decimal(cents) / 100)


@wf.workflow
async def naive_sleep() -> str:
    from datetime import datetime

    try:
        await __import__("wfctl.runtime", fromlist=["sleep"]).sleep(until=datetime(2030, 1, 1))
    except ValueError as exc:
        return f"refused: {'naive' in str(exc)}"
    return "slept"
