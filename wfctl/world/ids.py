"""Identifier formats of the world (reference §2), with strict parsing.

Run, step, wait and hook ids are `<prefix>_<ULID>`. Events are numbered one of two ways
for a run's whole life: `wevt_<ULID>` (legacy, beta.29) or `evnt_` + 26 zero-padded digits
(a slot position, slot era). A wait's row key is `<run_id>-<correlation_id>`.
"""

from __future__ import annotations

import os
import random
import re
import secrets
import threading
import time
import weakref
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
    body = event_id[5:]  # len(SLOT_PREFIX)
    # the regex's rule (ten zeros, then 16 ASCII digits), without the regex: this runs for
    # every event a slot-era run writes
    if not (len(body) == 26 and body.startswith("0000000000") and body.isascii()):
        return None
    if not body.isdigit():
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


_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
# Ten bits per table entry: a 128-bit ULID is 13 lookups (the top entry carries 8 bits).
_PAIRS = tuple(a + b for a in _CROCKFORD for b in _CROCKFORD)
_PAIR_VALUES = {pair: i for i, pair in enumerate(_PAIRS)}
_SHIFTS = tuple(range(120, -1, -10))
_MAX_ULID = (1 << 128) - 1
_RANDOM_BITS = 80
# A fallback id is `floor + 1 + r`, r uniform below 2**_STEP_BITS (see MonotonicUlid).
_STEP_BITS = 64


def ulid_text(value: int) -> str:
    """The 26-character Crockford text of a 128-bit ULID value (python-ulid's `str(ULID)`,
    without building a ULID object: minting is on the runtime's per-step path)."""
    return "".join([_PAIRS[(value >> shift) & 1023] for shift in _SHIFTS])


def ulid_value(text: str) -> int:
    """Inverse of `ulid_text`; `text` must be a valid ULID (`is_ulid`)."""
    value = 0
    for i in range(0, 26, 2):
        value = (value << 10) | _PAIR_VALUES[text[i : i + 2]]
    return value


def legacy_gap(before: str | None, after: str) -> tuple[int, int]:
    """The ULID values bounding the gap between two legacy ids (`before` None: -1);
    ValueError when no id fits strictly between."""
    high = ulid_value(after[len(LEGACY_EVENT_PREFIX) :])
    low = -1 if before is None else ulid_value(before[len(LEGACY_EVENT_PREFIX) :])
    if high - low < 2:
        raise ValueError(f"no wevt_ id is free between {before} and {after}")
    return low, high


def legacy_id_between(before: str | None, after: str) -> str:
    """A random `wevt_` id sorting strictly between two legacy ids (`before` None: anything
    below `after`); ValueError when none is free. For an event placed inside a legacy run.

    Never `before + 1` or `after - 1`: the package's `monotonicFactory` mints `+1` within a
    millisecond, so those values are often another run's events (beta.29's key is the id
    alone). The pick is uniform among the 2**64 values next to `before` (or, first in a
    run, next to `after`), and the writer draws again if the insert still meets a taken id.
    """
    low, high = legacy_gap(before, after)
    width = min(high - low - 1, 1 << _STEP_BITS)
    offset = secrets.randbelow(width)
    value = high - 1 - offset if before is None else low + 1 + offset
    return LEGACY_EVENT_PREFIX + ulid_text(value)


class MonotonicUlid:
    """ULIDs strictly increasing within one process, like the package's `monotonicFactory`.

    A legacy run's log is read in id order, so an appended event must sort after every
    existing id; `after` lets a caller force that.

    Uniqueness. Use the ONE process-wide instance, `EVENT_ULIDS` (every `EventWriter` does):
    its ids strictly increase under a lock, so no two ids minted in a process can be equal,
    however many threads or runs mint at once. (Each worker slot used to hold a generator
    of its own whose `floor + 1` fallback landed on ids another slot minted in the same
    millisecond: python-ulid's own `ULID()` is monotonic per process, +1 per call.)

    Across processes (several `wfctl worker`s, hosts, repairs beside a worker) nothing is
    shared, so uniqueness is probabilistic, as for any ULID: a fresh id has 80 random bits,
    and when the clock has not passed the floor (same millisecond, or a floor minted on a
    host whose clock runs ahead) the id is `floor + 1 + r` with r drawn from 64 random bits,
    not `floor + 1`, so two processes continuing from one floor (a run handed from one
    worker to another) do not meet either. Two ids of different processes are equal with
    probability about 2**-64 per pair minted in the same millisecond; a collision would be
    refused by the events' primary key and the transaction replayed.

    The random bits come from a generator of this instance's own, seeded from `os.urandom`
    (and seeded again in a forked child, which must not repeat its parent's sequence), not
    from `os.urandom` per id: `os.urandom` releases the GIL for its system call, and with a
    worker's 16 slots minting three ids per step each of those releases was one more GIL
    hand-off between threads, a cost paid in CPU by the whole process (see benchmarks.md,
    "The worker's CPU per step"). Ids need to be unpredictable only enough not to meet,
    which a well-seeded Mersenne Twister is.
    """

    def __init__(self) -> None:
        self._last: int = 0
        self._last_text: str = ""
        self._lock = threading.Lock()  # slots, repairs and heartbeats run on many threads
        self._random = random.Random(os.urandom(32))
        _reseed_after_fork.add(self)

    def reseed(self) -> None:
        """New random state (a forked child: its ids must not follow its parent's)."""
        self._random.seed(os.urandom(32))

    def next(self, after: str | None = None) -> str:
        """A ULID greater than every one minted before and than `after` (a ULID text)."""
        now_ms = time.time_ns() // 1_000_000
        with self._lock:
            floor = self._last
            # Texts of equal length compare like their values: a floor this process already
            # passed (the usual case: a run's newest id was minted here) needs no parsing.
            if after and after > self._last_text and is_ulid(after):
                floor = max(floor, ulid_value(after))  # a lower-case text compares above
            value = now_ms << _RANDOM_BITS | self._random.getrandbits(_RANDOM_BITS)
            if value <= floor:
                value = floor + 1 + self._random.getrandbits(_STEP_BITS)
                if value > _MAX_ULID:
                    value = floor + 1
                    if value > _MAX_ULID:
                        raise ValueError("ULID space exhausted after " + ulid_text(floor))
            text = ulid_text(value)
            self._last, self._last_text = value, text
        return text


_reseed_after_fork: weakref.WeakSet[MonotonicUlid] = weakref.WeakSet()


def _reseed_all() -> None:
    for generator in list(_reseed_after_fork):
        generator.reseed()


os.register_at_fork(after_in_child=_reseed_all)

EVENT_ULIDS = MonotonicUlid()
"""The process's one generator of event ULIDs (see MonotonicUlid: uniqueness)."""
