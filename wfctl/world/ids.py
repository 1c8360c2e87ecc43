"""Identifier formats of the world (reference §2), with strict parsing.

Run, step, wait and hook ids are `<prefix>_<ULID>`. Events are numbered one of two ways
for a run's whole life: `wevt_<ULID>` (legacy, beta.29) or `evnt_` + 26 zero-padded digits
(a slot position, slot era). A wait's row key is `<run_id>-<correlation_id>`.
"""

from __future__ import annotations

import re
import threading
from datetime import datetime

from ulid import ULID

MAX_EVENT_SLOT = 2**53 - 1  # JS Number.MAX_SAFE_INTEGER, the runtime's bound
SLOT_PREFIX = "evnt_"
LEGACY_EVENT_PREFIX = "wevt_"
_SLOT_BODY = re.compile(r"0{10}[0-9]{16}")
_ULID_BODY = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")


def new_ulid(when: datetime | None = None) -> str:
    """A fresh ULID string (upper-case Crockford base32), optionally at a given time."""
    return str(ULID.from_datetime(when) if when else ULID())


def is_ulid(text: str) -> bool:
    """Strict: 26 upper-case Crockford characters whose time part fits in 48 bits."""
    return bool(_ULID_BODY.fullmatch(text)) and text[0] <= "7"


def prefixed(prefix: str, ulid: str | None = None) -> str:
    """`<prefix>_<ULID>`; e.g. `prefixed('step')`."""
    return f"{prefix}_{ulid or new_ulid()}"


def ulid_time(prefixed_id: str) -> datetime | None:
    """The timestamp inside a `<prefix>_<ULID>` id, or None when it carries no ULID."""
    _, _, body = prefixed_id.partition("_")
    if not is_ulid(body):
        return None
    return ULID.from_str(body).datetime


def legacy_event_id(when: datetime | None = None) -> str:
    """A `wevt_<ULID>` id (callers needing monotonic order use `MonotonicUlid`)."""
    return LEGACY_EVENT_PREFIX + new_ulid(when)


def is_legacy_event_id(event_id: str) -> bool:
    return event_id.startswith(LEGACY_EVENT_PREFIX) and is_ulid(event_id[5:])


def slot_event_id(slot: int) -> str:
    """`evnt_` + the slot zero-padded to 26 digits; slots are 1 .. 2^53-1."""
    if not 1 <= slot <= MAX_EVENT_SLOT:
        raise ValueError(f"event slot out of range: {slot}")
    return f"{SLOT_PREFIX}{slot:026d}"


def event_slot(event_id: str) -> int | None:
    """The slot number of an `evnt_` id, or None if it is not a valid slot id."""
    if not event_id.startswith(SLOT_PREFIX):
        return None
    body = event_id[len(SLOT_PREFIX) :]
    if not _SLOT_BODY.fullmatch(body):
        return None
    slot = int(body)
    return slot if 1 <= slot <= MAX_EVENT_SLOT else None


def wait_row_key(run_id: str, correlation_id: str) -> str:
    """The `workflow_waits.wait_id` for a wait correlation id."""
    return f"{run_id}-{correlation_id}"


def wait_correlation_id(run_id: str, wait_id: str) -> str:
    """Inverse of `wait_row_key` (the reference's `wait_corr(w)`)."""
    prefix = f"{run_id}-"
    if not wait_id.startswith(prefix):
        raise ValueError(f"wait id {wait_id!r} does not belong to run {run_id!r}")
    return wait_id[len(prefix) :]


class MonotonicUlid:
    """ULIDs strictly increasing within one process, like the package's `monotonicFactory`.

    A legacy run's log is read in id order, so an appended event must sort after every
    existing id; `after` lets a caller force that.
    """

    def __init__(self) -> None:
        self._last: int = 0
        self._lock = threading.Lock()  # repairs run on several threads

    def next(self, after: str | None = None) -> str:
        value = int(ULID())
        with self._lock:
            floor = self._last
            if after and is_ulid(after):
                floor = max(floor, int(ULID.from_str(after)))
            if value <= floor:
                value = floor + 1
            self._last = value
        return str(ULID.from_int(value))
