"""The one event writer: id allocation per era, payload encoding, the guarded insert.

Repairs and the runtime's store both append events through `EventWriter.append`, inside a
transaction the caller owns (so the entity row and its event commit together). The writer:
- numbers the event the way the run numbers its log: the next slot for a marked run
  (computed inside the INSERT, retried on conflict like the slot-era world), a `wevt_`
  ULID newer than every id of the run otherwise; it refuses to mix schemes;
- encodes eventData as CBOR (`payload_cbor`), never the legacy JSON column;
- treats the creation unique index as "already exists" (`AlreadyExists`), never as an error
  to retry: a creation event is written at most once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from psycopg import errors as pgerrors
from psycopg.rows import dict_row

from wfctl import sql
from wfctl.errors import RefusedError
from wfctl.world import codec, ids

CREATION_TYPES = frozenset({"step_created", "hook_created", "wait_created", "attr_set"})
MAX_ID_ATTEMPTS = 40  # the slot-era world's own bound (slots); a taken legacy id is drawn again
CREATION_INDEX = "workflow_events_entity_creation_unique"
GUARD_PREFIX = "wfctl guard"


class AlreadyExists(Exception):
    """The creation event for this entity already exists (creation unique index)."""

    def __init__(self, event_id: str | None) -> None:
        super().__init__(event_id)
        self.event_id = event_id


class PositionTaken(Exception):
    """A batch lost its position to a concurrent writer (slot taken, or a newer legacy id
    exists). The caller's transaction is aborted; re-read and retry it whole."""


@dataclass(frozen=True)
class Written:
    id: str
    created_at: datetime
    scheme: str  # "slot" or "legacy"


@dataclass(frozen=True)
class NewEvent:
    """One event of a batch: type, correlation id, eventData (CBOR-encoded by the writer)."""

    type: str
    correlation_id: str | None
    event_data: dict[str, Any] | None
    spec_version: int | None


class PendingBatch:
    """A batch INSERT sent to the server; `result()` reads its ids (in the order given).

    In pipeline mode the statement is only queued until the pipeline syncs, so several
    statements of one transaction travel in one round trip.
    """

    def __init__(self, cursor: psycopg.Cursor[Any], scheme: str, count: int) -> None:
        self._cursor = cursor
        self._scheme = scheme
        self._count = count

    def result(self) -> list[Written]:
        rows = self._cursor.fetchall()
        if len(rows) != self._count:  # the statements raise instead; defensive
            raise PositionTaken(f"batch wrote {len(rows)} of {self._count} events")
        written = [Written(str(r[0]), r[1], self._scheme) for r in rows]
        written.sort(key=lambda w: w.id)
        return written


@dataclass(frozen=True)
class BatchStatement:
    """One batch INSERT of events: the SQL file (under `sql/`), its parameters, the run's
    scheme and how many rows it returns."""

    sql_name: str
    params: dict[str, Any]
    scheme: str
    count: int


def classify(exc: BaseException) -> BaseException:
    """Map a database error from a batch insert to AlreadyExists / PositionTaken (or itself).

    Both mean the caller's transaction is aborted and must be rolled back.
    """
    if isinstance(exc, pgerrors.UniqueViolation):
        constraint = exc.diag.constraint_name or ""
        if constraint == CREATION_INDEX:
            return AlreadyExists(None)
        if constraint.startswith("workflow_events_"):
            return PositionTaken(constraint)
    if isinstance(exc, pgerrors.InvalidTextRepresentation) and GUARD_PREFIX in str(exc):
        text = str(exc)
        if "already has event" in text:
            return PositionTaken(text.splitlines()[0])
    return exc


@dataclass(frozen=True)
class EventWriter:
    """Appends events for one world; `slots` says whether the world has slot markers."""

    slots: bool
    # The process-wide generator: writers of different slots/threads must never mint one id
    # twice (ids.MonotonicUlid, "Uniqueness"). Tests may pass their own.
    clock: ids.MonotonicUlid = field(default=ids.EVENT_ULIDS)

    def scheme(self, conn: psycopg.Connection[Any], run_id: str, *, lock: bool = True) -> str:
        """`slot` or `legacy` for this run, read (and the marker share-locked) in the tx.

        `lock=False` is for read-only planning, where row locks are not allowed.
        """
        return self._read_scheme(conn, run_id, lock)[0]

    def _read_scheme(
        self, conn: psycopg.Connection[Any], run_id: str, lock: bool
    ) -> tuple[str, str | None]:
        """The scheme and the run's newest legacy id (the floor for a new wevt_ id)."""
        marker_sql = sql.load("writer/run_marker_for_share" if lock else "writer/run_marker")
        with conn.cursor(row_factory=dict_row) as cur:
            marked = self.slots and (
                cur.execute(marker_sql, {"run_id": run_id}).fetchone() is not None
            )
            used = cur.execute(sql.load("writer/run_id_schemes"), {"run_id": run_id}).fetchone()
        assert used is not None
        if marked and used["has_legacy_ids"]:
            raise RefusedError(
                f"run {run_id} numbers its events by slot but holds wevt_ ids (WF122)",
                hint="renumber it first: wfctl repair --only WF122 --allow-rewrite",
            )
        if not marked and used["has_slot_ids"]:
            raise RefusedError(
                f"run {run_id} has evnt_ events but no slot marker (WF121)",
                hint="restore its marker first: wfctl repair --only WF121",
            )
        return ("slot" if marked else "legacy"), used["newest_legacy_id"]

    def append(
        self,
        conn: psycopg.Connection[Any],
        run_id: str,
        event_type: str,
        correlation_id: str | None,
        event_data: dict[str, Any] | None,
        spec_version: int | None,
        *,
        first_slot: bool = False,
        between: tuple[str | None, str] | None = None,
        created_at: datetime | None = None,
    ) -> Written:
        """Insert one event in the caller's transaction; `AlreadyExists` for a duplicate creation.

        `first_slot` writes the literal slot 1 (a run's run_created, right after its marker);
        `between` places an event of a legacy run strictly between two of its ids (a restored
        run_created before the run's first event: `(None, first)`; a restored completion
        before the first event that depended on it), a fresh random id drawn again when taken
        (ids.legacy_id_between), with `created_at` between its neighbours' (the replay clock
        reads it), else the database's now().
        """
        scheme, newest = ("slot", None) if first_slot else self._read_scheme(conn, run_id, True)
        if between is not None and scheme != "legacy":
            raise RefusedError(f"run {run_id} is slot-numbered: no legacy id may be chosen")
        params: dict[str, Any] = {
            "run_id": run_id,
            "type": event_type,
            "correlation_id": correlation_id,
            "payload_cbor": codec.encode(event_data) if event_data is not None else None,
            "spec_version": spec_version,
        }
        attempts = 1 if first_slot else MAX_ID_ATTEMPTS
        for _ in range(attempts):
            legacy_id: str | None = None
            if between is not None:
                try:
                    legacy_id = ids.legacy_id_between(*between)
                except ValueError as exc:
                    raise RefusedError(f"run {run_id}: {exc}") from None
            elif scheme == "legacy":
                floor = newest[5:] if newest else None
                legacy_id = ids.LEGACY_EVENT_PREFIX + self.clock.next(after=floor)
            row = self._insert(conn, scheme, params, first_slot, legacy_id, created_at)
            if row is not None:
                return Written(row[0], row[1], scheme)
            if event_type in CREATION_TYPES:
                existing = self._creation(conn, params)
                if existing is not None:
                    raise AlreadyExists(existing)
        raise RefusedError(
            f"could not allocate an event id for run {run_id} after {attempts} attempt(s)",
            hint="another writer is appending to this run; retry",
        )

    def append_batch(
        self,
        conn: psycopg.Connection[Any],
        run_id: str,
        events: Sequence[NewEvent],
        *,
        scheme: str,
        first_slot: bool = False,
        floor: str | None = None,
    ) -> PendingBatch:
        """Queue ONE INSERT of several events, in order, in the caller's transaction.

        For callers that already know the run's scheme (the runtime's store: it created the
        run, and a run keeps its scheme for life), so no read precedes the insert and the
        statement can be pipelined with the entity writes of the same transaction.
        - `scheme="slot"`: positions after the run's highest slot, computed in the INSERT;
          `first_slot=True` writes slots 1..n of a run whose marker the same transaction
          just inserted (run creation).
        - `scheme="legacy"`: `wevt_` ULIDs minted in order, newer than `floor` (the newest id
          the caller knows); the statement refuses if the run holds a newer id.
        Nothing is absorbed: a duplicate creation or a lost position raises at `result()`
        (map it with `classify`) and the whole transaction must be rolled back.
        """
        statement = self.batch_statement(
            run_id, events, scheme=scheme, first_slot=first_slot, floor=floor
        )
        cursor = conn.cursor()
        cursor.execute(sql.load(statement.sql_name), statement.params)
        return PendingBatch(cursor, statement.scheme, statement.count)

    def batch_statement(
        self,
        run_id: str,
        events: Sequence[NewEvent],
        *,
        scheme: str,
        first_slot: bool = False,
        floor: str | None = None,
        new_ids: Sequence[str] | None = None,
        after: str | None = None,
    ) -> BatchStatement:
        """The statement `append_batch` sends (SQL file and parameters), for a caller that
        sends it itself (the runtime's lean pipeline). Same ids, same payload bytes; its rows
        are (id, created_at) in the order given.

        `new_ids`: ids the caller already allocated with `next_event_id` (one per event, in
        order, continuing the run's log from the newest id the caller knows). The statement
        then inserts exactly those ids and raises (aborting the transaction) if the run
        holds any id at or after the first of them, in both schemes. With `after` (the newest
        id the caller has seen, before `new_ids[0]`), it raises if the run holds any id after
        `after`: the caller's unseen-event check, made by the INSERT itself."""
        if scheme not in ("slot", "legacy"):
            raise ValueError(f"unknown event id scheme {scheme!r}")
        if first_slot and scheme != "slot":
            raise ValueError("first_slot applies to slot-numbered runs only")
        params: dict[str, Any] = {
            "run_id": run_id,
            "types": [e.type for e in events],
            "correlation_ids": [e.correlation_id for e in events],
            "payloads": [
                codec.encode(e.event_data) if e.event_data is not None else None for e in events
            ],
            "spec_versions": [e.spec_version for e in events],
        }
        if new_ids is not None:
            if len(new_ids) != len(events) or not new_ids:
                raise ValueError("new_ids must give one id per event")
            # A world without slot markers is beta.29-shaped: no (run_id, id) index, so the
            # guard reads the ids after min_id from the primary key (a short window) instead
            # of every event of the run (which grew with the run's length).
            return BatchStatement(
                "writer/insert_events_with_ids"
                if self.slots
                else "writer/insert_events_with_ids_windowed",
                {**params, "ids": list(new_ids), "min_id": self._successor(after, new_ids[0])},
                scheme,
                len(events),
            )
        if scheme == "slot" and not first_slot:
            return BatchStatement("writer/insert_events_at_next_slots", params, "slot", len(events))
        # A freshly marked run's log starts at slot 1; a legacy run's continues after floor.
        new_ids = []
        after = None if first_slot else floor
        for _ in events:
            after = self.next_event_id(scheme, after)
            new_ids.append(after)
        return BatchStatement(
            "writer/insert_events_with_ids",
            {**params, "ids": new_ids, "min_id": new_ids[0]},
            scheme,
            len(events),
        )

    @staticmethod
    def _successor(after: str | None, first: str) -> str:
        """The smallest id of `after`'s scheme that sorts after `after` (so "an id >= it" is
        "an id after `after`"), or `first` when `after` is not given."""
        if after is None:
            return first
        slot = ids.event_slot(after)
        if slot is not None:
            return ids.slot_event_id(slot + 1)
        if ids.is_legacy_event_id(after):
            return ids.LEGACY_EVENT_PREFIX + ids.ulid_text(ids.ulid_value(after[5:]) + 1)
        raise ValueError(f"{after!r} is not an event id")

    def next_event_id(self, scheme: str, after: str | None) -> str:
        """The id of the event that follows `after` (the run's newest event id) in a run's log:
        the next slot for a slot-numbered run (what `insert_events_at_next_slots` computes
        when `after` is the run's highest slot), a `wevt_` ULID minted after `after` for a
        legacy run. For `batch_statement(new_ids=...)`."""
        if scheme == "slot":
            slot = ids.event_slot(after) if after else None
            if after and slot is None:
                raise ValueError(f"{after!r} is not a slot event id")
            return ids.slot_event_id((slot or 0) + 1)
        if scheme != "legacy":
            raise ValueError(f"unknown event id scheme {scheme!r}")
        # `next` validates the floor (and skips parsing it when it is its own last id).
        prev = after[5:] if after and after.startswith(ids.LEGACY_EVENT_PREFIX) else None
        return ids.LEGACY_EVENT_PREFIX + self.clock.next(after=prev)

    def insert_at_slot(
        self,
        conn: psycopg.Connection[Any],
        run_id: str,
        slot: int,
        event_type: str,
        event_data: dict[str, Any] | None,
        spec_version: int | None,
    ) -> Written:
        """Insert one event at a chosen, free slot of a slot-numbered run: a rebuilt
        run_created at slot 1 or a `noop` filler in a hole (the slot-log rewrite of
        wfctl.repair.slotlog, which has already made the position free). `PositionTaken` if
        a concurrent writer holds it."""
        params = {
            "run_id": run_id,
            "id": ids.slot_event_id(slot),
            "type": event_type,
            "correlation_id": None,
            "payload_cbor": codec.encode(event_data) if event_data is not None else None,
            "spec_version": spec_version,
        }
        row = conn.execute(sql.load("writer/insert_event_with_id"), params).fetchone()
        if row is None:
            raise PositionTaken(f"slot {slot} of run {run_id} is taken")
        return Written(str(row[0]), row[1], "slot")

    def _insert(
        self,
        conn: psycopg.Connection[Any],
        scheme: str,
        params: dict[str, Any],
        first: bool,
        legacy_id: str | None,
        created_at: datetime | None = None,
    ) -> tuple[str, datetime] | None:
        if scheme == "slot" and not first:
            row = conn.execute(sql.load("writer/insert_event_at_next_slot"), params).fetchone()
        elif created_at is not None and legacy_id is not None:
            row = conn.execute(
                sql.load("writer/insert_event_with_id_at"),
                {**params, "id": legacy_id, "created_at": created_at},
            ).fetchone()
        else:
            event_id = ids.slot_event_id(1) if first else legacy_id
            row = conn.execute(
                sql.load("writer/insert_event_with_id"), {**params, "id": event_id}
            ).fetchone()
        return None if row is None else (str(row[0]), row[1])

    def _creation(self, conn: psycopg.Connection[Any], params: dict[str, Any]) -> str | None:
        row = conn.execute(sql.load("writer/creation_event"), params).fetchone()
        return None if row is None else str(row[0])
