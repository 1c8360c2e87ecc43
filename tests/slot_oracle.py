"""A test oracle for slot-numbered runs: a small port of the slot-era package, tests only.

No slot-era release of @workflow/world-postgres is on the registry reachable here, so this
ports, from the storage specification (world-postgres 5.0.0-beta.32 `slot-identity.ts` and
`storage.ts`, as described in the reference's sections on slot ids and slot-era writes) and
from the text of the slot-identity PR (#3305):

- the World side: `allocateEventId` (a plain read of the run's marker: marker present -> the
  slot expression computed inside the INSERT; absent -> a fresh `wevt_` ULID), and
  `insertEventRow` (`INSERT ... ON CONFLICT (run_id, id) DO NOTHING RETURNING`, retried up to
  40 times, the first 8 at once, then a jittered backoff, then "Could not allocate an event
  slot ... after 40 attempts");
- the runtime side: `requireEventSlot` ("Event id is not slot-numbered: <id>. This World
  allocates event positions the runtime cannot read.") on every event of a run whose persisted
  spec version is >= 6 (`SPEC_VERSION_SLOT_IDENTITY`: the mode is read from the run, never
  from the build), and `findEventSlotGap` (a dense log holds exactly `maxSlot` events; a gap
  fails the run). A `noop` filler holds its position from spec 7 (sealed log) on; a spec 6
  reader does not know the type (an inference from the spec-version table: `noop` arrives
  with spec 7).

`check_run` raises `OracleError` with the package's message when the real runtime would
refuse the run, or when the World's next allocation for it would fail.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

import psycopg
from ulid import ULID

SLOT_IDENTITY = 6  # SPEC_VERSION_SUPPORTS_SLOT_IDENTITY
SEALED_LOG = 7  # SPEC_VERSION_SUPPORTS_SEALED_LOG: `noop` fillers
SLOT_ID_WIDTH = 26
MAX_EVENT_SLOT = 2**53 - 1
MAX_ATTEMPTS = 40
IMMEDIATE_ATTEMPTS = 8

# The slot expression of the slot-era storage.ts, evaluated inside the INSERT (reference
# section 3.6), with the shipped conflict target (run_id, id).
INSERT_AT_SLOT = """
INSERT INTO workflow.workflow_events (id, type, correlation_id, run_id, payload_cbor, spec_version)
VALUES ('evnt_' || lpad((coalesce((SELECT cast(substring(prev.id from 6) AS bigint)
            FROM workflow.workflow_events prev WHERE prev.run_id = %(run_id)s
            ORDER BY prev.id DESC LIMIT 1), 0) + 1)::text, 26, '0'),
        %(type)s, %(correlation_id)s, %(run_id)s, %(payload)s, %(spec)s)
ON CONFLICT (run_id, id) DO NOTHING
RETURNING id, created_at
"""
INSERT_LITERAL = """
INSERT INTO workflow.workflow_events (id, type, correlation_id, run_id, payload_cbor, spec_version)
VALUES (%(id)s, %(type)s, %(correlation_id)s, %(run_id)s, %(payload)s, %(spec)s)
ON CONFLICT (run_id, id) DO NOTHING
RETURNING id, created_at
"""


class OracleError(Exception):
    """What the package would answer: a refused log, or a failed allocation."""


def is_slot_body(body: str) -> bool:
    """`isSlotBody`: 26 characters, the first 10 `0`, the rest digits."""
    return len(body) == SLOT_ID_WIDTH and body[:10] == "0" * 10 and body.isdigit()


def event_id_to_slot(event_id: str) -> int | None:
    """`eventIdToSlot`: the slot of an `evnt_` id, None for anything else."""
    if not event_id.startswith("evnt_") or not is_slot_body(event_id[5:]):
        return None
    slot = int(event_id[5:])
    return slot if 1 <= slot <= MAX_EVENT_SLOT else None


def require_event_slot(event_id: str) -> int:
    """`requireEventSlot`: the runtime's refusal, word for word."""
    slot = event_id_to_slot(event_id)
    if slot is None:
        raise OracleError(
            f"Event id is not slot-numbered: {event_id}. This World allocates event "
            "positions the runtime cannot read."
        )
    return slot


def find_event_slot_gap(slots: list[int]) -> int | None:
    """`findEventSlotGap`: the first position missing from a log read in id order (dense
    means the log holds exactly `maxSlot` events, slot 1 first), or None."""
    for expected, slot in enumerate(slots, start=1):
        if slot != expected:
            return expected
    return None


@dataclass(frozen=True)
class OracleEvent:
    id: str
    type: str
    correlation_id: str | None
    payload_cbor: bytes | None


def _spec(text: Any) -> int | None:
    return int(text) if isinstance(text, str) and text.isdigit() else None


def read_run(conn: psycopg.Connection[Any], run_id: str) -> tuple[int | None, list[OracleEvent]]:
    """The run's persisted spec version and its log as `events.list` returns it (id order)."""
    row = conn.execute(
        "SELECT spec_version FROM workflow.workflow_runs WHERE id = %s", (run_id,)
    ).fetchone()
    if row is None:
        raise OracleError(f"run {run_id} not found")
    rows = conn.execute(
        "SELECT id, type, correlation_id, payload_cbor FROM workflow.workflow_events"
        " WHERE run_id = %s ORDER BY id",
        (run_id,),
    ).fetchall()
    return _spec(row[0]), [OracleEvent(r[0], r[1], r[2], r[3]) for r in rows]


def replay(conn: psycopg.Connection[Any], run_id: str) -> list[OracleEvent]:
    """Load the run's log the way a slot-aware runtime does; OracleError when it refuses."""
    spec, events = read_run(conn, run_id)
    if not events or events[0].type != "run_created":
        raise OracleError(f"run {run_id}: the log does not start with run_created")
    if spec is not None and spec >= SLOT_IDENTITY:
        slots = [require_event_slot(e.id) for e in events]
        gap = find_event_slot_gap(slots)
        if gap is not None:
            raise OracleError(f"run {run_id}: a gap in the event numbering at slot {gap}")
        if spec < SEALED_LOG and any(e.type == "noop" for e in events):
            raise OracleError(f"run {run_id}: a spec {spec} log cannot hold noop events")
    elif len({e.id[:5] for e in events}) > 1:
        raise OracleError(f"run {run_id}: a legacy-mode log mixing id schemes")
    return events


def replay_refusal(conn: psycopg.Connection[Any], run_id: str) -> str:
    """The refusal `replay` raises for this run, or "" when the runtime would read it."""
    try:
        replay(conn, run_id)
    except OracleError as exc:
        return str(exc)
    return ""


def allocate_event_id(conn: psycopg.Connection[Any], run_id: str) -> str | None:
    """`allocateEventId`: None means "the slot expression" (marker present, plain read)."""
    marked = conn.execute(
        "SELECT run_id FROM workflow.workflow_event_slots WHERE run_id = %s", (run_id,)
    ).fetchone()
    return None if marked else f"wevt_{ULID()}"


def create_event(
    conn: psycopg.Connection[Any],
    run_id: str,
    event_type: str,
    correlation_id: str | None = None,
    payload: bytes | None = None,
    spec: int = SEALED_LOG,
) -> str:
    """`events.create`'s tail insert (`insertEventRow`): allocate, insert, retry on conflict.

    Each attempt is its own READ COMMITTED statement (autocommit), as the package runs it.
    Raises the database error (22P02 for a poisoned run) or OracleError after 40 attempts.
    """
    literal = allocate_event_id(conn, run_id)
    params = {"run_id": run_id, "type": event_type, "correlation_id": correlation_id,
              "payload": payload, "spec": spec}  # fmt: skip
    for attempt in range(1, MAX_ATTEMPTS + 1):
        if literal is None:
            row = conn.execute(INSERT_AT_SLOT, params).fetchone()
        else:
            row = conn.execute(INSERT_LITERAL, {**params, "id": literal}).fetchone()
            if row is None:
                raise OracleError(f"event id {literal} already exists")
        if row is not None:
            return str(row[0])
        if attempt > IMMEDIATE_ATTEMPTS:
            time.sleep(random.random() * min(40, 2 * 2 ** (attempt - IMMEDIATE_ATTEMPTS)) / 1000)
    raise OracleError(f"Could not allocate an event slot for run {run_id} after 40 attempts")


def check_run(conn: psycopg.Connection[Any], run_id: str) -> None:
    """The whole verdict: the runtime reads the log, and the World can append to it (the
    probe event is written and then deleted again, in a transaction that rolls back)."""
    spec, _ = read_run(conn, run_id)
    replay(conn, run_id)
    with conn.transaction(force_rollback=True):
        new_id = create_event(conn, run_id, "run_started")
        if spec is not None and spec >= SLOT_IDENTITY:
            require_event_slot(new_id)
            replay(conn, run_id)
