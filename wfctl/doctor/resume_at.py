"""The decoded `resumeAt` of a wait event, in whole milliseconds (how the runtime compares).

Shared by WF152 (wait_completed against wait_created) and WF153 (the wait row against
wait_created), and by WF153's repair, which writes the event's instant into the row.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from wfctl.world import codec


def resume_at(payload: bytes | None) -> datetime | None:
    """The payload's resumeAt as an aware UTC datetime, or None when absent or not a date."""
    data = codec.decode(payload)
    value = data.get("resumeAt") if isinstance(data, dict) else None
    return to_utc(value) if isinstance(value, datetime) else None


def to_utc(value: datetime) -> datetime:
    """Naive values are UTC wall time (the package's `timestamp` columns)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def millis(value: datetime) -> int:
    """Whole epoch milliseconds, rounded: a JS Date's getTime(). CBOR stores the instant as
    float64 seconds, so a decoded value may sit a fraction of a microsecond off the ms."""
    return round(to_utc(value).timestamp() * 1000)


def iso(value: Any) -> str:
    """A JS-style ISO instant (ms, Z) for details."""
    if not isinstance(value, datetime):
        return repr(value)
    ms = millis(value)
    return (
        datetime.fromtimestamp(ms / 1000, UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )
