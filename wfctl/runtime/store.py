"""The runtime's store: every state transition is ONE transaction.

Each transition writes its entity row change and its event together, through the shared
`EventWriter` (the same one repairs use), behind the status guards of reference §3.4:

| transition | statements (one transaction) |
| --- | --- |
| run creation | run row, slot marker (slot era), run_created at slot 1 (or a wevt_ id) |
| first pickup | guard, run row pending -> running, run_started |
| step start | guard, step row (running, attempt 1), step_created + step_started |
| step restart | guard, step row running/attempt+1, step_started |
| step completion / failure / retry | guard, step row, step_completed / _failed / _retrying |
| wait creation / completion | guard, wait row, wait_created / wait_completed |
| hook creation / disposal | guard, hook row insert / delete, hook_created / hook_disposed |
| run end | guard, run row, delete waits and hooks, run_completed / run_failed |

Several transitions may share one transaction (a step's completion and the next step's start
commit together: one commit per sequential step). A `Tx` sends its statements in libpq's
pipeline mode (`wire.py`): `flush(commit=True)` of an unopened transaction sends guard, the
rows and one events INSERT (which also makes the unseen check) in one round trip, as the
pipeline's implicit transaction (no BEGIN/COMMIT statements); `settle()` hands the queued
events to the executor before that (ids allocated here; `created_at` known after, or via `clock()`).
Guards raise inside the server (messages starting `wfctl guard`), so a pipelined transaction
that violates one aborts whole instead of committing half.

External writers (`cancel`, `resume_hook`) lock the run row FOR UPDATE; the runtime's
transactions lock it FOR KEY SHARE, so the two serialise and a run's event ids follow commit
order in both eras.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import psycopg
from psycopg import errors as pgerrors
from psycopg.rows import dict_row

from wfctl import sql
from wfctl.errors import RefusedError
from wfctl.runtime import serde, tracing
from wfctl.runtime.engine import UNSTAMPED, Event
from wfctl.runtime.errors import IdempotencyConflictError
from wfctl.runtime.wire import Pipeline, Result
from wfctl.world import codec, ids
from wfctl.world.writer import (
    GUARD_PREFIX,
    AlreadyExists,
    EventWriter,
    NewEvent,
    PositionTaken,
    classify,
)

SLOT_SPEC = 6  # the first spec version whose runs number their events by slot
SPEC_VERSION = 5  # what beta.29 writes and reads (reference §3.7); see docs/runtime.md
DEPLOYMENT_ID = "wfctl"
IDEMPOTENCY_ATTRIBUTE = "wfctl.idempotencyKey"
CANCEL_ATTRIBUTE = "wfctl.cancelRequested"  # attr_set: the run is asked to cancel itself
ATTRIBUTE_VALUE_BYTES = 256  # the package's bound on one attribute value
TERMINAL = ("completed", "failed", "cancelled")


class GuardError(Exception):
    """A status guard refused the transition (e.g. the run was cancelled meanwhile)."""


class HookTokenTaken(Exception):
    """Another hook holds the token (the transition is aborted; record a hook_conflict)."""


@dataclass
class RunRow:
    id: str
    status: str
    name: str
    deployment_id: str
    spec_version: str | None
    input: bytes | None
    output: bytes | None
    error: bytes | None
    error_code: str | None
    attributes: dict[str, Any]
    created_at: datetime
    completed_at: datetime | None


@dataclass
class Created:
    run_id: str
    status: str
    existing: bool = False


def _utc_naive(when: datetime) -> datetime:
    """A JS-written timestamp column value: UTC wall time, no zone (reference §1.8)."""
    if when.tzinfo is None:
        return when
    return when.astimezone(UTC).replace(tzinfo=None)


def _set_clock(conn: psycopg.Connection[Any]) -> bool:
    """Make the runtime's session write every timestamp column as the package does.

    The rule (docs/runtime.md, Time zones): JS-clock columns (started_at, completed_at,
    updated_at, retry_after, resume_at) are written as `now() AT TIME ZONE 'UTC'` or naive
    UTC parameters, i.e. UTC wall time, which is right for `timestamp` columns. A
    `timestamptz` column (upstream 0026) reads such a value in the session's TimeZone, so on
    a world whose columns are `timestamptz` the session's TimeZone is set to UTC: the UTC
    wall time is then the true instant, and DB defaults (`created_at = now()`) are instants
    whatever the zone. On a `timestamp` world the session keeps the server's zone, because
    the package's `created_at` defaults hold that session's wall time and wfctl must write
    them alike. Returns whether the world's columns are `timestamptz`.
    """
    row = conn.execute(sql.load("runtime/timestamp_type")).fetchone()
    instants = bool(row and row[0])
    if instants:
        conn.execute("SET TimeZone = 'UTC'")
    return instants


class Store:
    """All SQL of the runtime, on one autocommit connection (transactions are explicit)."""

    def __init__(self, conn: psycopg.Connection[Any], *, slots: bool | None = None) -> None:
        self.conn = conn
        if slots is None:
            row = conn.execute(
                "SELECT to_regclass('workflow.workflow_event_slots') IS NOT NULL"
            ).fetchone()
            slots = bool(row and row[0])
        self.slots = slots
        self.writer = EventWriter(slots=slots)
        self.wire = Pipeline(conn)
        # The worker's queue (wfctl revision w0004): hook receipt wakes a queued run and a
        # run's end removes its queue row, each in the transition's own transaction.
        # The hook tables (w0006): kept early deliveries and typed hooks' payload types.
        tables = conn.execute(sql.load("runtime/wfctl_tables")).fetchone()
        self.queued = bool(tables and tables[0])
        self.hook_tables = bool(tables and tables[1])
        self.instants = _set_clock(conn)
        tz_row = conn.execute("SELECT current_setting('TimeZone')").fetchone()
        try:
            self.tz: Any = ZoneInfo(str(tz_row[0])) if tz_row else UTC
        except Exception:  # e.g. 'localtime': treat the DB clock as UTC
            self.tz = UTC
        self._schemes: dict[str, str] = {}

    # -- helpers --------------------------------------------------------------------------

    def aware(self, when: datetime) -> datetime:
        """A DB-default `created_at` (session wall clock) as an aware UTC datetime."""
        if when.tzinfo is not None:
            return when.astimezone(UTC)
        return when.replace(tzinfo=self.tz).astimezone(UTC)

    def scheme(self, run_id: str) -> str:
        """`slot` or `legacy` for a run (cached: a run keeps its scheme for life)."""
        cached = self._schemes.get(run_id)
        if cached is None:
            cached = self.writer.scheme(self.conn, run_id, lock=False)
            if cached == "legacy" and self.slots:
                self._refuse_unmarked(run_id)
            self._schemes[run_id] = cached
        return cached

    def _refuse_unmarked(self, run_id: str) -> None:
        """A spec >= 6 run without a slot marker in a slot-era world: the package's runtime
        (core >= beta.47) refuses it, so wfctl must not number it with wevt_ ids either
        (that would make it a legacy run for good). Older runs stay legacy runs."""
        row = self.conn.execute(sql.load("runtime/read_run"), {"run_id": run_id}).fetchone()
        spec = _spec(row[4]) if row is not None else None  # spec_version
        if spec is not None and spec >= SLOT_SPEC:
            raise _unmarked(run_id, spec)

    def _refuse_unmarked_locked(
        self, conn: psycopg.Connection[Any], run_id: str, spec: int | None
    ) -> None:
        """`_refuse_unmarked` for the external writers (cancel, hook receipt), which append
        through `EventWriter.append` in their own transaction, with the run row locked and
        its spec version read: the same run is refused by them as by the runtime. Costs a
        query only for a spec >= 6 run in a slot-era world (wfctl's own runs are spec 5)."""
        if not (self.slots and spec is not None and spec >= SLOT_SPEC):
            return
        if self.writer.scheme(conn, run_id) == "legacy":
            raise _unmarked(run_id, spec)

    @contextmanager
    def _transaction(self) -> Iterator[psycopg.Connection[Any]]:
        self.conn.execute("BEGIN")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        else:
            self.conn.execute("COMMIT")

    # -- run creation -----------------------------------------------------------------------

    def create_run(
        self,
        run_id: str,
        name: str,
        input_bytes: bytes,
        *,
        idempotency_key: str | None = None,
        deployment_id: str = DEPLOYMENT_ID,
        queue: str | None = None,
        trace_carrier: dict[str, str] | None = None,
    ) -> Created:
        """Run row + slot marker (slot era) + run_created at its first position: one tx.
        With `queue`, the run is also handed to that queue's workers in the same tx.
        `trace_carrier` (tracing.enqueue): kept in executionContext.traceCarrier."""
        attributes = {IDEMPOTENCY_ATTRIBUTE: idempotency_key} if idempotency_key else {}
        context: dict[str, Any] = {"workflowCoreVersion": "wfctl"}
        if trace_carrier:
            context["traceCarrier"] = trace_carrier
        event_data: dict[str, Any] = {
            "deploymentId": deployment_id,
            "workflowName": name,
            "input": input_bytes,
            "executionContext": context,
        }
        if attributes:
            event_data["attributes"] = attributes
        if not idempotency_key:
            return self._create_pipelined(run_id, name, queue, event_data)
        with self._transaction() as conn:
            if idempotency_key:
                conn.execute(sql.load("runtime/idempotency_lock"), {"key": idempotency_key})
                row = conn.execute(
                    sql.load("runtime/find_idempotent_run"), {"key": idempotency_key}
                ).fetchone()
                if row is not None:
                    _same_request(idempotency_key, row, name, input_bytes)
                    return Created(str(row[0]), str(row[1]), existing=True)
            conn.execute(sql.load("runtime/insert_run"), _run_row(run_id, name, event_data))
            first = NewEvent("run_created", None, event_data, SPEC_VERSION)
            if self.slots:
                conn.execute(sql.load("runtime/insert_marker"), {"run_id": run_id})
                self.writer.append_batch(
                    conn, run_id, [first], scheme="slot", first_slot=True
                ).result()
                self._schemes[run_id] = "slot"
            else:
                self.writer.append_batch(conn, run_id, [first], scheme="legacy").result()
                self._schemes[run_id] = "legacy"
            if queue is not None:
                self.enqueue(run_id, name, queue)
        return Created(run_id, "pending")

    def _create_pipelined(
        self,
        run_id: str,
        name: str,
        queue: str | None,
        event_data: dict[str, Any],
    ) -> Created:
        """`create_run` without an idempotency key (nothing to read first): the same
        statements in ONE round trip, the pipeline's implicit transaction (the first error
        rolls it back whole). The client's `enqueue` latency is mostly round trips."""
        if queue is not None and not self.queued:
            raise LookupError("this database has no worker queue (wfctl bootstrap adds it)")
        scheme = "slot" if self.slots else "legacy"
        batch: list[tuple[str | bytes, dict[str, Any] | None]] = [
            ("runtime/insert_run", _run_row(run_id, name, event_data))
        ]
        if self.slots:
            batch.append(("runtime/insert_marker", {"run_id": run_id}))
        first = NewEvent("run_created", None, event_data, SPEC_VERSION)
        statement = self.writer.batch_statement(
            run_id, [first], scheme=scheme, first_slot=self.slots
        )
        batch.append((statement.sql_name, statement.params))
        if queue is not None:
            batch.append(("worker/enqueue", {"run_id": run_id, "queue": queue, "name": name}))
        try:
            self.wire.run(batch)
        except psycopg.Error:
            if not self.conn.closed and (
                self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
            ):
                self.conn.execute("ROLLBACK")
            raise  # as the statement-by-statement path raises it (e.g. a taken run id)
        self._schemes[run_id] = scheme
        return Created(run_id, "pending")

    # -- reads ----------------------------------------------------------------------------

    def read_run(self, run_id: str) -> RunRow | None:
        with self.conn.cursor(row_factory=dict_row) as cur:
            r = cur.execute(sql.load("runtime/read_run"), {"run_id": run_id}).fetchone()
        if r is None:
            return None
        return RunRow(
            id=r["id"],
            status=r["status"],
            name=r["name"],
            deployment_id=r["deployment_id"],
            spec_version=r["spec_version"],
            input=codec.decode(r["input_cbor"]),
            output=codec.decode(r["output_cbor"]),
            error=codec.decode(r["error_cbor"]),
            error_code=r["error_code"],
            attributes=r["attributes"] or {},
            created_at=self.aware(r["created_at"]),
            completed_at=r["completed_at"],
        )

    def read_events(self, run_id: str, after: str | None = None) -> list[Event]:
        rows = self.conn.execute(
            sql.load("runtime/read_events"), {"run_id": run_id, "after": after}
        ).fetchall()
        return [
            Event(str(r[0]), str(r[1]), r[2], codec.decode(r[3]), self.aware(r[4])) for r in rows
        ]

    def try_lock_run(self, run_id: str) -> bool:
        row = self.conn.execute(sql.load("runtime/run_lock"), {"run_id": run_id}).fetchone()
        return bool(row and row[0])

    def unlock_run(self, run_id: str) -> None:
        self.conn.execute(sql.load("runtime/run_unlock"), {"run_id": run_id})

    # -- transitions ------------------------------------------------------------------------

    def tx(self, run_id: str, floor: str | None = None) -> Tx:
        """A new transaction for transitions of one run; `floor`: newest event id known."""
        return Tx(self, run_id, self.scheme(run_id), floor)

    def enqueue(self, run_id: str, name: str, queue: str) -> None:
        """Hand a run to a queue's workers (inside the caller's transaction, if any)."""
        if not self.queued:
            raise LookupError("this database has no worker queue (wfctl bootstrap adds it)")
        self.conn.execute(
            sql.load("worker/enqueue"), {"run_id": run_id, "queue": queue, "name": name}
        )

    # -- external writers -------------------------------------------------------------------

    def cancel(self, run_id: str, reason: str | None) -> str:
        """run_cancelled: row, waits, hooks and event in one transaction. Returns the status
        found ('cancelled' when it was already cancelled: nothing is written then)."""
        with self._transaction():
            status, _ = self.cancel_in_transaction(run_id, reason)
        return status

    def cancel_in_transaction(self, run_id: str, reason: str | None) -> tuple[str, str | None]:
        """The cancel's statements in the caller's open transaction (bulk cancel adds its
        guards, job removal and audit row to the same one). Returns the status found and the
        run_cancelled event id (None when the run had already ended: nothing written)."""
        conn = self.conn
        row = conn.execute(sql.load("runtime/lock_run"), {"run_id": run_id}).fetchone()
        if row is None:
            raise LookupError(f"no run {run_id}")
        status = str(row[1])
        if status in TERMINAL:
            return status, None
        self._refuse_unmarked_locked(conn, run_id, _spec(row[3]))
        conn.execute(
            sql.load("runtime/finish_run"),
            {
                "run_id": run_id,
                "status": "cancelled",
                "output_cbor": None,
                "error_cbor": None,
            },
        )
        self._delete_children(conn, run_id)
        if self.queued:
            conn.execute(sql.load("worker/dequeue"), {"run_id": run_id})
        data = {"cancelReason": reason[:512]} if reason else None
        written = self.writer.append(conn, run_id, "run_cancelled", None, data, _spec(row[3]))
        return status, written.id

    def request_cancel(self, run_id: str, reason: str | None) -> str:
        """Ask a run to cancel itself (docs/runtime.md, Cancellation): an `attr_set` event
        setting `wfctl.cancelRequested` and the run row's attributes, one transaction, and a
        wake-up of its queue row. The workflow sees it at its next await as
        `asyncio.CancelledError` (`wfctl.runtime.Cancelled`), may run cleanup steps, and the
        run ends `cancelled` when the workflow lets the error out. Returns the status found,
        or `requested` when the request was already recorded (nothing written then)."""
        with self._transaction() as conn:
            row = conn.execute(sql.load("runtime/lock_run"), {"run_id": run_id}).fetchone()
            if row is None:
                raise LookupError(f"no run {run_id}")
            status = str(row[1])
            if status in TERMINAL:
                return status
            self._refuse_unmarked_locked(conn, run_id, _spec(row[3]))
            attrs = conn.execute(sql.load("runtime/run_attributes"), {"run_id": run_id}).fetchone()
            if attrs is not None and CANCEL_ATTRIBUTE in (attrs[0] or {}):
                return "requested"
            value = _attribute_value(reason or "cancellation requested")
            conn.execute(
                sql.load("runtime/set_attribute"),
                {"run_id": run_id, "key": CANCEL_ATTRIBUTE, "value": value},
            )
            self.writer.append(
                conn,
                run_id,
                "attr_set",
                ids.prefixed("attr"),
                {
                    "changes": [{"key": CANCEL_ATTRIBUTE, "value": value}],
                    "writer": {"type": "workflow"},
                },
                _spec(row[3]),
            )
            if self.queued:
                conn.execute(sql.load("worker/wake"), {"run_id": run_id})
        return status

    def resume_hook(
        self,
        token: str,
        payload: bytes,
        then: Callable[[psycopg.Connection[Any], str], object] | None = None,
    ) -> tuple[str, str]:
        """hook_received for the hook holding `token`, in one transaction that locks the run
        row (as the world does); `then(conn, run_id)` runs in that transaction after it (the
        package's wake-up job on a package-driven world). Returns (run_id, hook_id)."""
        with self._transaction() as conn:
            received = self._hook_received(conn, token, payload, once=False)
            assert received is not None  # once=False raises instead
            if then is not None:
                then(conn, received[0])
        return received

    def hook_type(self, token: str) -> str | None:
        """The payload type (`module:qualname`) the active hook holding `token` recorded, or
        None (untyped, unknown token, or a database without the hook tables)."""
        if not self.hook_tables:
            return None
        row = self.conn.execute(sql.load("runtime/hook_type_by_token"), {"token": token}).fetchone()
        return None if row is None else str(row[0])

    def keep_delivery(self, token: str, payload: bytes, keep_seconds: float) -> datetime | None:
        """Keep a delivery for a hook that does not exist yet (its own transaction), then
        hand it over at once if the hook appeared meanwhile (`take_kept`). Returns when the
        kept delivery expires, or None if it was handed over already. With the creator's
        check after its hook's commit (`take_kept` too), one of the two always sees the
        other: the delivery is never stranded while both live, and never delivered twice."""
        if not self.hook_tables:
            raise LookupError("this database has no hook inbox (wfctl bootstrap adds it)")
        with self._transaction() as conn:
            row = conn.execute(
                sql.load("runtime/inbox_keep"),
                {"token": token, "payload": payload, "keep_seconds": keep_seconds},
            ).fetchone()
        assert row is not None
        if self.take_kept([token]):
            return None
        expires: datetime = row[0]
        return expires

    def take_kept(self, tokens: list[str]) -> list[str]:
        """Hand the kept deliveries of `tokens` to their hooks (wfctl runs' hooks only):
        per token ONE transaction deletes the kept rows and appends their hook_received
        events in order. Returns the run ids delivered to. A cheap existence check first:
        a hook creation pays one query when nothing is kept."""
        if not self.hook_tables or not tokens:
            return []
        found = self.conn.execute(sql.load("runtime/inbox_waiting"), {"tokens": tokens}).fetchone()
        if not (found and found[0]):
            return []
        delivered: list[str] = []
        for token in tokens:
            try:
                with self._transaction() as conn:
                    rows = conn.execute(sql.load("runtime/inbox_take"), {"token": token}).fetchall()
                    for _, payload in sorted(rows, key=lambda r: int(r[0])):
                        received = self._hook_received(conn, token, bytes(payload), once=False)
                        assert received is not None
                        delivered.append(received[0])
            except (LookupError, GuardError):
                continue  # the hook or its run went away meanwhile: the rows stay kept
        return delivered

    def deliver_hook_once(self, token: str, payload: bytes) -> str | None:
        """hook_received for the hook holding `token` unless it has received one already
        (a child's end, delivered by its driver and by the workers' sweep: children.py).
        One transaction, the parent's run row locked FOR UPDATE as `resume_hook` does.
        Returns the run id it was delivered to, or None (no such hook, run over, or done)."""
        with self._transaction() as conn:
            received = self._hook_received(conn, token, payload, once=True)
        return None if received is None else received[0]

    def _hook_received(
        self, conn: psycopg.Connection[Any], token: str, payload: bytes, *, once: bool
    ) -> tuple[str, str] | None:
        """Lock the run of the hook holding `token`, append its hook_received and wake its
        queue row: (run_id, hook_id). With `once`, nothing to deliver (no such hook, run over,
        a hook_received already there) is None; without, the first two raise."""
        hook = conn.execute(sql.load("runtime/hook_by_token"), {"token": token}).fetchone()
        if hook is None:
            if once:
                return None
            raise LookupError(f"no active hook with token {token!r}")
        hook_id, run_id = str(hook[0]), str(hook[1])
        run = conn.execute(sql.load("runtime/lock_run"), {"run_id": run_id}).fetchone()
        if run is None or str(run[1]) in TERMINAL:
            if once:
                return None
            raise GuardError(f"run {run_id} is {run[1] if run else 'missing'}")
        if once:
            done = conn.execute(
                sql.load("runtime/hook_received_exists"), {"run_id": run_id, "hook_id": hook_id}
            ).fetchone()
            if done is not None and done[0]:
                return None
        self._refuse_unmarked_locked(conn, run_id, _spec(run[3]))
        self.writer.append(
            conn,
            run_id,
            "hook_received",
            hook_id,
            {"token": token, "payload": payload},
            _spec(run[3]),
        )
        if self.queued:
            conn.execute(sql.load("worker/wake"), {"run_id": run_id})
        return run_id, hook_id

    def _delete_children(self, conn: psycopg.Connection[Any], run_id: str) -> None:
        conn.execute(sql.load("runtime/delete_run_waits"), {"run_id": run_id})
        hooks = "runtime/delete_run_hooks_slot" if self.slots else "runtime/delete_run_hooks"
        conn.execute(sql.load(hooks), {"run_id": run_id})
        if self.hook_tables:
            conn.execute(sql.load("runtime/delete_hook_types"), {"run_id": run_id})


def _same_request(key: str, row: tuple[Any, ...], name: str, input_bytes: bytes) -> None:
    """An idempotency key names one request: the same workflow with the same arguments
    (compared as decoded values: the bytes of an equal input may differ between versions).
    Anything else is `IdempotencyConflictError` (returning the first run would be a lie)."""
    run_id, _, stored_name, stored_input = row
    if stored_name != name:
        raise IdempotencyConflictError(
            f"idempotency key {key!r} belongs to run {run_id} of workflow {stored_name},"
            f" not {name}",
            run_id=str(run_id),
        )
    try:
        same = serde.loads(codec.decode(stored_input)) == serde.loads(input_bytes)
    except ValueError:
        same = codec.decode(stored_input) == input_bytes
    if not same:
        raise IdempotencyConflictError(
            f"idempotency key {key!r} belongs to run {run_id}, started with other arguments"
            " (same key, same arguments returns that run; use a new key for new arguments)",
            run_id=str(run_id),
        )


def _attribute_value(text: str) -> str:
    """An attribute value as the package bounds it: at most 256 UTF-8 bytes."""
    data = text.encode()[:ATTRIBUTE_VALUE_BYTES]
    return data.decode(errors="ignore")


def _unmarked(run_id: str, spec: int) -> RefusedError:
    return RefusedError(
        f"run {run_id} is at spec {spec} but has no slot marker (WF121):"
        " wfctl will not give it wevt_ ids",
        hint="restore its marker first: wfctl repair --only WF121 --allow-rewrite",
    )


def _spec(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


@dataclass
class Tx:
    """One open runtime transaction for one run; statements are pipelined.

    Events get their ids from the client (`EventWriter.next_event_id`, continuing from
    `floor`, the newest event the caller has seen): the transaction's guard locks the run row
    and its unseen-event check proves nothing newer exists, and the insert refuses if that
    changed. `settle()` hands back the queued events as they will be written, without a
    round trip, so the executor can feed a step's completion to the workflow and queue what
    follows; the whole transaction (guard, rows, one events INSERT that also makes the
    unseen check; an implicit transaction) then goes out in one round trip. The events'
    `created_at` is the transaction's now(), returned by the guard; a workflow that reads
    the clock before that asks `clock()`, which opens the transaction first (one more round
    trip).
    """

    store: Store
    run_id: str
    scheme: str
    floor: str | None
    _ops: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    _events: list[NewEvent] = field(default_factory=list)
    _ids: list[str] = field(default_factory=list)  # ids of _events[:len(_ids)]
    _now: datetime | None = None  # the transaction's created_at, once it is open
    _now_naive: datetime | None = None  # the same, as the column holds it
    _now_text: str | None = None  # the same, as the server sent it (compared, not parsed)
    _failure: Exception | None = None  # kept by clock(), raised by check()
    _base: str | None = None  # `floor` when the first queued event got its id
    _begun: bool = False
    _explicit: bool = True  # opened with BEGIN (else one implicit transaction per batch)
    _closed: bool = False
    written: list[Event] = field(default_factory=list)

    # -- queueing transitions --

    def _event(self, type_: str, corr: str | None, data: dict[str, Any] | None) -> None:
        self._events.append(NewEvent(type_, corr, data, SPEC_VERSION))

    def run_started(self) -> None:
        self._ops.append(("runtime/run_started", {"run_id": self.run_id}))
        self._event("run_started", None, None)

    def start_new_step(self, step_id: str, name: str, input_bytes: bytes) -> None:
        self._ops.append(
            (
                "runtime/insert_step",
                {
                    "run_id": self.run_id,
                    "step_id": step_id,
                    "step_name": name,
                    "input_cbor": codec.encode(input_bytes),
                    "spec_version": SPEC_VERSION,
                },
            )
        )
        self._event("step_created", step_id, {"stepName": name, "input": input_bytes})
        self._event("step_started", step_id, {"stepName": name, "attempt": 1})

    def restart_step(self, step_id: str, name: str, attempt: int) -> None:
        self._ops.append(("runtime/restart_step", {"step_id": step_id}))
        self._event("step_started", step_id, {"stepName": name, "attempt": attempt})

    def complete_step(self, step_id: str, name: str, result: bytes) -> None:
        self._ops.append(
            ("runtime/complete_step", {"step_id": step_id, "output_cbor": codec.encode(result)})
        )
        self._event("step_completed", step_id, {"stepName": name, "result": result})

    def fail_step(self, step_id: str, name: str, error: bytes) -> None:
        self._ops.append(
            ("runtime/fail_step", {"step_id": step_id, "error_cbor": codec.encode(error)})
        )
        self._event("step_failed", step_id, {"stepName": name, "error": error})

    def retry_step(
        self, step_id: str, name: str, error: bytes, retry_after: datetime | None
    ) -> None:
        self._ops.append(
            (
                "runtime/retry_step",
                {
                    "step_id": step_id,
                    "error_cbor": codec.encode(error),
                    "retry_after": _utc_naive(retry_after) if retry_after else None,
                },
            )
        )
        data: dict[str, Any] = {"stepName": name, "error": error}
        if retry_after is not None:
            data["retryAfter"] = retry_after
        self._event("step_retrying", step_id, data)

    def create_wait(self, corr: str, resume_at: datetime) -> None:
        self._ops.append(
            (
                "runtime/insert_wait",
                {
                    "wait_id": ids.wait_row_key(self.run_id, corr),
                    "run_id": self.run_id,
                    "resume_at": _utc_naive(resume_at),
                    "spec_version": SPEC_VERSION,
                },
            )
        )
        self._event("wait_created", corr, {"resumeAt": resume_at})

    def complete_wait(self, corr: str, resume_at: datetime) -> None:
        self._ops.append(
            ("runtime/complete_wait", {"wait_id": ids.wait_row_key(self.run_id, corr)})
        )
        self._event("wait_completed", corr, {"resumeAt": resume_at})

    def create_hook(
        self, corr: str, token: str, metadata: bytes | None, type_ref: str | None = None
    ) -> None:
        if type_ref is not None and self.store.hook_tables:
            self._ops.append(
                (
                    "runtime/insert_hook_type",
                    {"run_id": self.run_id, "hook_id": corr, "type_ref": type_ref},
                )
            )
        self._ops.append(
            (
                "runtime/insert_hook",
                {
                    "run_id": self.run_id,
                    "hook_id": corr,
                    "token": token,
                    "metadata_cbor": codec.encode(metadata) if metadata is not None else None,
                    "spec_version": SPEC_VERSION,
                },
            )
        )
        data: dict[str, Any] = {"token": token, "isWebhook": False}
        if metadata is not None:
            data["metadata"] = metadata
        self._event("hook_created", corr, data)

    def hook_conflict(self, corr: str, token: str, other_run: str | None) -> None:
        data: dict[str, Any] = {"token": token}
        if other_run:
            data["conflictingRunId"] = other_run
        self._event("hook_conflict", corr, data)

    def dispose_hook(self, corr: str, token: str) -> None:
        self._ops.append(("runtime/dispose_hook", {"hook_id": corr}))
        self._event("hook_disposed", corr, {"token": token})

    def create_child_run(
        self, child_id: str, name: str, input_bytes: bytes, attributes: dict[str, str], queue: str
    ) -> None:
        """A child run created inside its parent's transaction (children.py): run row,
        slot marker (slot era), run_created at its first position, queue row. The parent's
        record of it (a step) is queued by the caller in the same transaction."""
        store = self.store
        if not store.queued:
            raise LookupError("child workflows need the worker queue (wfctl bootstrap adds it)")
        context: dict[str, Any] = {"workflowCoreVersion": "wfctl"}
        carrier = tracing.current_carrier()  # the parent's drive span, when one is current
        if carrier is not None:
            context["traceCarrier"] = carrier
        self._ops.append(
            (
                "runtime/insert_run",
                {
                    "run_id": child_id,
                    "deployment_id": DEPLOYMENT_ID,
                    "name": name,
                    "input_cbor": codec.encode(input_bytes),
                    "execution_context_cbor": codec.encode(context),
                    "spec_version": str(SPEC_VERSION),
                    "attributes": json.dumps(attributes),
                },
            )
        )
        created = NewEvent(
            "run_created",
            None,
            {
                "deploymentId": DEPLOYMENT_ID,
                "workflowName": name,
                "input": input_bytes,
                "executionContext": context,
                "attributes": attributes,
            },
            SPEC_VERSION,
        )
        if store.slots:
            self._ops.append(("runtime/insert_marker", {"run_id": child_id}))
            statement = store.writer.batch_statement(
                child_id, [created], scheme="slot", first_slot=True
            )
        else:
            statement = store.writer.batch_statement(child_id, [created], scheme="legacy")
        self._ops.append((statement.sql_name, statement.params))
        self._ops.append(("worker/enqueue", {"run_id": child_id, "queue": queue, "name": name}))

    def cancel_run(self, reason: str | None) -> None:
        """The run ends cancelled from inside (its workflow let `CancelledError` out)."""
        self._finish("cancelled")
        self._event("run_cancelled", None, {"cancelReason": reason[:512]} if reason else None)

    def complete_run(self, output: bytes) -> None:
        self._finish("completed", output=output)
        self._event("run_completed", None, {"output": output})

    def fail_run(self, error: bytes, code: str) -> None:
        self._finish("failed", error=error, code=code)
        self._event("run_failed", None, {"error": error, "errorCode": code})

    def _finish(
        self,
        status: str,
        *,
        output: bytes | None = None,
        error: bytes | None = None,
        code: str | None = None,
    ) -> None:
        self._ops.append(
            (
                "runtime/finish_run",
                {
                    "run_id": self.run_id,
                    "status": status,
                    "output_cbor": codec.encode(output) if output is not None else None,
                    "error_cbor": codec.encode(error) if error is not None else None,
                },
            )
        )
        if code is not None:  # apart: 4.x worlds have no error_code column
            self._ops.append(
                ("runtime/set_run_error_code", {"run_id": self.run_id, "error_code": code})
            )
        self._ops.append(("runtime/delete_run_waits", {"run_id": self.run_id}))
        hooks = "runtime/delete_run_hooks_slot" if self.store.slots else "runtime/delete_run_hooks"
        self._ops.append((hooks, {"run_id": self.run_id}))
        if self.store.hook_tables:
            self._ops.append(("runtime/delete_hook_types", {"run_id": self.run_id}))
        if self.store.queued:
            self._ops.append(("worker/dequeue", {"run_id": self.run_id}))

    # -- sending --

    @property
    def empty(self) -> bool:
        return not self._ops and not self._events

    def _begin_batch(
        self, *, explicit: bool = True, unseen: bool = True
    ) -> list[tuple[str | bytes, dict[str, Any] | None]]:
        """The statements that open the transaction: [BEGIN,] guard (turning seqscan off in
        a beta.29-shaped world), unseen check. Without `explicit` (a whole transaction sent
        in one batch) there is no BEGIN and no COMMIT: the statements of one pipeline Sync
        run as ONE implicit transaction (the extended protocol's rule), which an error rolls
        back whole and the Sync commits, two statements fewer per step. Without `unseen` the
        events INSERT of the same batch makes the unseen check itself (see `flush`)."""
        batch: list[tuple[str | bytes, dict[str, Any] | None]] = (
            [(b"BEGIN", None)] if explicit else []
        )
        self._explicit = explicit
        # A beta.29-shaped world has no (run_id, id) index on events, so "an event of this
        # run after id X" reads a short window of the primary key from X (the *_windowed
        # SQL). A prepared statement keeps the plan made at its 6th run; in a young world the
        # table was tiny then and that plan a sequential scan, which then grew with every
        # event. Every statement of a runtime transaction is an index lookup or an insert, so
        # plans made inside one never want a scan: the guard turns enable_seqscan off for
        # the rest of the transaction (`seqscan_off`; it was a SET LOCAL statement of its own).
        # Both eras: the guard also forces generic plans for the rest of the transaction
        # (sql/runtime/guard_run.sql), which must not be made as sequential scans.
        batch.append(("runtime/guard_run", {"run_id": self.run_id, "seqscan_off": True}))
        seen = self._seen
        if unseen and seen is not None:
            check = (
                "runtime/unseen_events" if self.store.slots else "runtime/unseen_events_windowed"
            )
            batch.append((check, {"run_id": self.run_id, "floor": seen}))
        return batch

    @property
    def _seen(self) -> str | None:
        """The newest event id the executor had fed when this transaction's ids were chosen
        (`floor` moves on to the ids `settle()` assigns; an event of another writer between
        the two must still count as unseen)."""
        return self._base if self._ids else self.floor

    def _send(self, batch: list[tuple[str | bytes, dict[str, Any] | None]]) -> list[Result]:
        self._begun = True
        try:
            return self.store.wire.run(batch)
        except psycopg.Error as exc:
            self._abort()
            raise _map_error(exc) from exc
        except BaseException:
            self._abort()
            raise

    def _assign(self) -> None:
        """Give every queued event without one its id (continuing from `floor`)."""
        writer = self.store.writer
        if not self._ids:
            self._base = self.floor
        for _ in range(len(self._ids), len(self._events)):
            self.floor = writer.next_event_id(self.scheme, self.floor)
            self._ids.append(self.floor)

    def _take_now(self, results: list[Result]) -> None:
        """The guard's row (second statement of the opening batch) carries the
        transaction's now(): the `created_at` of every event of this transaction."""
        rows = results[1 if self._explicit else 0].rows  # [BEGIN,] guard, ...
        if not rows:  # no run row: the statements that follow the guard refuse instead
            return
        self._now_text = rows[0][1]
        self._now_naive = datetime.fromisoformat(str(self._now_text))
        self._now = self.store.aware(self._now_naive)

    @property
    def now(self) -> datetime | None:
        """The transaction's `created_at` (aware UTC), once it is open."""
        return self._now

    def clock(self) -> datetime:
        """The transaction's `created_at`, opening the transaction if needed (one round
        trip). Called from inside workflow code (through the engine's `now()`), so it never
        raises a database error there: the failure is kept, the transaction rolled back,
        and `check()` raises it in the executor."""
        if self._now is None and self._failure is None:
            try:
                self._take_now(self._send(self._begin_batch()))
            except Exception as exc:  # raised by check(), outside the workflow
                self._failure = exc
        return self._now or datetime.now(UTC)

    def check(self) -> None:
        """Raise the failure `clock()` kept, if any."""
        if self._failure is not None:
            raise self._failure

    def settle(self) -> list[Event]:
        """Return the events queued since the last settle/flush as they will be written,
        without sending anything: ids final; `created_at` final if the transaction is open
        (`now` is set), else unknown until the next `flush` (or `clock()`). They are sent
        with the next `flush`; if that fails, none of them exists."""
        self.check()
        assert not self._closed, "transaction already ended"
        if self.floor is None:
            # No known log position (not the executor's case): let the server place them.
            return self.flush()
        first = len(self._ids)
        self._assign()
        stamp = self._now or UNSTAMPED
        settled = [
            Event(eid, e.type, e.correlation_id, e.event_data, stamp)
            for eid, e in zip(self._ids[first:], self._events[first:], strict=True)
        ]
        self.written += settled
        return settled

    def flush(self, *, commit: bool = False) -> list[Event]:
        """Send the queued statements (one round trip); with `commit`, end the transaction.
        An unopened transaction is opened in the same round trip (guard first; BEGIN and the
        unseen check unless `commit` makes it one implicit transaction whose events INSERT
        checks), and `now` is set.

        Returns the events written by this flush that `settle()` had not returned yet, in
        log order. On any failure the whole transaction is rolled back and the error
        re-raised, mapped to AlreadyExists, PositionTaken, HookTokenTaken or GuardError
        where it is one of those.
        """
        self.check()
        assert not self._closed, "transaction already ended"
        opening = not self._begun
        # A whole transaction in one batch with events whose ids follow a known floor: the
        # events INSERT's guard checks "no event of the run after the floor" itself, under the
        # guard's row lock and with a snapshot taken after it (a later statement), which is
        # exactly the unseen check: one statement fewer per step. An unseen event then
        # raises PositionTaken instead of Unseen; the executor replays on both.
        fold = opening and commit and bool(self._events) and self.floor is not None
        batch = self._begin_batch(explicit=not commit, unseen=not fold) if opening else []
        batch.extend(self._ops)
        events = self._events
        settled = len(self._ids)
        at = -1
        if events:
            if self.floor is None:  # no known position: ids placed by the writer's statement
                statement = self.store.writer.batch_statement(
                    self.run_id, events, scheme=self.scheme
                )
            else:
                self._assign()
                statement = self.store.writer.batch_statement(
                    self.run_id,
                    events,
                    scheme=self.scheme,
                    new_ids=self._ids,
                    after=self._base if fold else None,
                )
            at = len(batch)
            batch.append((statement.sql_name, statement.params))
        if commit and self._explicit:
            batch.append((b"COMMIT", None))
        results = self._send(batch) if batch else []
        if opening:
            self._take_now(results)
        # (id, created_at) rows; ids are unique, so sorting the tuples sorts by id
        rows = sorted(results[at].rows) if at >= 0 else []
        ok = len(rows) == len(events)
        if ok and self._ids:
            ok = [r[0] for r in rows] == self._ids
        now_text = self._now_text
        if ok and self._now is not None:
            # every created_at is the guard's now(): the same text (no parsing per event)
            stamp, aware_of = self._now, self.store.aware
            ok = all(
                r[1] == now_text or aware_of(datetime.fromisoformat(str(r[1]))) == stamp
                for r in rows
            )
        if not ok:
            # The statements raise instead; defensive. After a COMMIT nothing can be undone:
            # the caller rebuilds from the log, which is the truth.
            self._abort()
            raise PositionTaken(f"batch wrote {[r[0] for r in rows]}, expected {self._ids}")
        aware = self.store.aware
        written = [
            Event(
                str(row[0]),
                e.type,
                e.correlation_id,
                e.event_data,
                self._now
                if now_text is not None and row[1] == now_text and self._now is not None
                else aware(datetime.fromisoformat(str(row[1]))),
            )
            for row, e in zip(rows[settled:], events[settled:], strict=True)
        ]
        self._ops, self._events, self._ids = [], [], []
        if commit:
            self._closed = True
        if written:
            self.floor = written[-1].id
        self.written += written
        return written

    def commit(self) -> list[Event]:
        return self.flush(commit=True)

    def rollback(self) -> None:
        if self._begun and not self._closed:
            self._abort()

    def _abort(self) -> None:
        self._closed = True
        conn = self.store.conn
        if not conn.closed and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            conn.execute("ROLLBACK")


def _map_error(exc: psycopg.Error) -> BaseException:
    mapped = classify(exc)
    if mapped is not exc:
        return mapped
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if isinstance(exc, pgerrors.InvalidTextRepresentation) and GUARD_PREFIX in text:
        if "hook token held" in text:
            return HookTokenTaken(text)
        return GuardError(text.split('"', 1)[-1].rstrip('"') if '"' in text else text)
    if isinstance(exc, pgerrors.UniqueViolation):
        return AlreadyExists(exc.diag.constraint_name)
    return exc


def _run_row(run_id: str, name: str, event_data: dict[str, Any]) -> dict[str, Any]:
    """sql/runtime/insert_run.sql's parameters: the run row, from its run_created payload."""
    return {
        "run_id": run_id,
        "deployment_id": event_data["deploymentId"],
        "name": name,
        "input_cbor": codec.encode(event_data["input"]),
        "execution_context_cbor": codec.encode(event_data["executionContext"]),
        "spec_version": str(SPEC_VERSION),
        "attributes": json.dumps(event_data.get("attributes", {})),
    }


__all__ = [
    "AlreadyExists",
    "Created",
    "GuardError",
    "HookTokenTaken",
    "PositionTaken",
    "RunRow",
    "Store",
    "Tx",
]
