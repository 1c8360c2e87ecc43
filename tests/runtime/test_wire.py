"""The runtime's lean pipeline (wfctl/runtime/wire.py) and the events it settles early."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg
import pytest

from tests.runtime import flows
from wfctl.runtime import wire
from wfctl.runtime.executor import Executor, create
from wfctl.runtime.store import GuardError, PositionTaken, Store, Tx
from wfctl.world.writer import EventWriter, NewEvent

VALUES = [
    ("plain", "text"),
    ('quote " and backslash \\ and unicode é€', "text"),
    ("", "text"),
    (b"\x00\x01\xffbytes", "bytea"),
    (7, "int"),
    (2**40, "bigint"),
    (True, "boolean"),
    (datetime(2026, 12, 3, 10, 27, 0, 123456), "timestamp"),
    (["a", None, 'b"\\c', ""], "varchar[]"),
    ([b"\x00\xff", None, b""], "bytea[]"),
    ([5, None, 1], "int[]"),
]


@pytest.mark.parametrize(("value", "cast"), VALUES)
def test_parameters_reach_the_server_as_psycopg_sends_them(
    conn: psycopg.Connection[Any], value: Any, cast: str
) -> None:
    data, fmt, oid = wire.encode(value)
    res = conn.pgconn.exec_params(
        f"SELECT ($1::{cast})::text".encode(), [data], [oid], [fmt], result_format=0
    )
    assert res.status == psycopg.pq.ExecStatus.TUPLES_OK, res.error_message
    ours = res.get_value(0, 0)
    theirs = conn.execute(f"SELECT (%s::{cast})::text", (value,)).fetchone()
    assert theirs is not None
    assert (None if ours is None else bytes(ours).decode()) == theirs[0]


def test_aware_datetimes_are_refused() -> None:
    with pytest.raises(TypeError, match="naive"):
        wire.encode(datetime.now().astimezone())


def test_statement_errors_are_psycopg_errors_and_the_batch_lands_whole_or_not_at_all(
    conn: psycopg.Connection[Any], store: Store
) -> None:
    run_id = create(flows.sequential, [1], conn=conn).run_id
    store.cancel(run_id, None)
    first = ("runtime/insert_marker", {"run_id": "wrun_x"}) if store.slots else (b"SELECT 1", None)
    with pytest.raises(psycopg.errors.InvalidTextRepresentation, match="is cancelled"):
        store.wire.run(
            [
                (b"BEGIN", None),
                first,
                ("runtime/guard_run", {"run_id": run_id, "seqscan_off": False}),
                ("runtime/unseen_events", {"run_id": run_id, "floor": ""}),
                (b"COMMIT", None),
            ]
        )
    assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
    conn.execute("ROLLBACK")
    if store.slots:
        assert conn.execute(
            "SELECT count(*) FROM workflow.workflow_event_slots WHERE run_id = 'wrun_x'"
        ).fetchone() == (0,)
    # the connection is usable afterwards, in both APIs
    assert store.wire.run([("runtime/read_run", {"run_id": run_id})])[0].rows[0][1] == "cancelled"
    assert conn.execute("SELECT 1").fetchone() == (1,)


def test_two_stores_share_the_connections_prepared_statements(
    conn: psycopg.Connection[Any],
) -> None:
    a, b = Store(conn), Store(conn)
    for s in (a, b, a):
        s.wire.run([("runtime/read_run", {"run_id": "wrun_none"})])


def test_events_fed_before_they_are_sent_are_the_events_written(
    conn: psycopg.Connection[Any], store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The executor feeds a step's completion (id and created_at) before its INSERT is sent;
    what it fed must be exactly what the log holds, or a replay would differ."""
    settled: list[Any] = []
    original = Tx.settle

    def recording(tx: Tx) -> list[Any]:
        out = original(tx)
        settled.extend(out)
        return out

    monkeypatch.setattr(Tx, "settle", recording)
    run_id = create(flows.sequential, [6], conn=conn).run_id
    ex = Executor(flows.wf, store)
    try:
        assert ex.drive(run_id).status == "completed"
    finally:
        ex.close()
    log = {e.id: e for e in store.read_events(run_id)}
    assert len(settled) >= 6
    for event in settled:
        assert event.id in log, event
        written = log[event.id]
        assert (written.type, written.correlation_id, written.data) == (
            event.type,
            event.correlation_id,
            event.data,
        )
    assert {e.type for e in settled} == {"step_completed"}


def test_the_clock_read_right_after_a_step_is_that_completions_created_at(
    conn: psycopg.Connection[Any], store: Store
) -> None:
    """The completion is fed before its transaction opens; a workflow reading now() then
    makes the executor open it first, so it sees what a replay of the log will see."""
    run_id = create(flows.clocked, [4], conn=conn).run_id
    ex = Executor(flows.wf, store)
    try:
        done = ex.drive(run_id)
    finally:
        ex.close()
    assert done.status == "completed"
    completed = [
        e.created_at.isoformat() for e in store.read_events(run_id) if e.type == "step_completed"
    ]
    assert done.output == completed
    # and a fresh replay of the log agrees
    from wfctl.runtime import engine as eng
    from wfctl.runtime import serde

    row = store.read_run(run_id)
    assert row is not None
    replay = eng.Engine(run_id, flows.clocked.fn, list(serde.loads(row.input)))
    outcome = replay.feed_all([e for e in store.read_events(run_id) if e.type != "run_completed"])
    assert isinstance(outcome, eng.Completed)
    assert serde.loads(outcome.output) == completed


def test_the_per_step_event_checks_never_scan_all_events(
    conn: psycopg.Connection[Any], store: Store
) -> None:
    """The unseen-event check and the events INSERT's guard must cost the same at step 2,000
    as at step 2 (issue 6: flat over the step index). Checked on the generic plans, the ones
    prepared statements keep, in an empty world (where a scan is cheapest to a planner)."""
    run_id = create(flows.sequential, [1], conn=conn).run_id
    new_ids = [store.writer.next_event_id(store.scheme(run_id), None)]
    if store.scheme(run_id) == "legacy":
        new_ids = ["wevt_" + store.writer.clock.next()]
    statement = store.writer.batch_statement(
        run_id,
        [NewEvent("step_started", "step_x", None, 5)],
        scheme=store.scheme(run_id),
        new_ids=new_ids,
    )
    unseen = "runtime/unseen_events" if store.slots else "runtime/unseen_events_windowed"
    index = "workflow_events_run_id_id_pk" if store.slots else "workflow_events_pkey"
    conn.execute("BEGIN")
    try:
        # The guard opens every runtime transaction; in such worlds it turns seqscan off.
        store.wire.run([("runtime/guard_run", {"run_id": run_id, "seqscan_off": not store.slots})])
        seqscan = conn.execute("SELECT current_setting('enable_seqscan')").fetchone()
        assert seqscan == ("on" if store.slots else "off",)
        for name in (unseen, statement.sql_name):
            text = wire.prepared(name).text.decode()
            plan = "\n".join(
                r[0] for r in conn.execute("EXPLAIN (GENERIC_PLAN) " + text).fetchall()
            )
            assert "Seq Scan on workflow_events" not in plan, plan
            assert index in plan, plan
    finally:
        conn.execute("ROLLBACK")


def test_the_guard_forces_index_only_generic_plans_for_the_step_statements(
    conn: psycopg.Connection[Any], store: Store
) -> None:
    """After the guard, a runtime transaction's statements use their generic plans (made
    once per session and kept), with seqscan off in both eras: in an empty world (where a
    scan is cheapest to a planner) every per-step statement's generic plan reads by index."""
    run_id = create(flows.sequential, [1], conn=conn).run_id
    tx = store.tx(run_id, None)
    conn.execute("BEGIN")
    try:
        store.wire.run([tx._begin_batch(explicit=False)[0]])
        settings = conn.execute(
            "SELECT current_setting('plan_cache_mode'), current_setting('enable_seqscan')"
        ).fetchone()
        assert settings == ("force_generic_plan", "off")
        for name in ("runtime/complete_step", "runtime/restart_step", "runtime/guard_run"):
            text = wire.prepared(name).text.decode()
            plan = "\n".join(
                r[0] for r in conn.execute("EXPLAIN (GENERIC_PLAN) " + text).fetchall()
            )
            assert "Seq Scan" not in plan, plan
    finally:
        conn.execute("ROLLBACK")
    # outside a runtime transaction the session's own settings are back
    assert conn.execute("SELECT current_setting('plan_cache_mode')").fetchone() == ("auto",)


def test_statements_dropped_by_the_session_are_prepared_again(
    conn: psycopg.Connection[Any], store: Store
) -> None:
    store.wire.run([("runtime/read_run", {"run_id": "wrun_none"})])
    conn.execute("DEALLOCATE ALL")
    with pytest.raises(psycopg.errors.InvalidSqlStatementName):
        store.wire.run([("runtime/read_run", {"run_id": "wrun_none"})])
    assert store.wire.run([("runtime/read_run", {"run_id": "wrun_none"})])[0].rows == []


def test_psycopg_statements_and_rollbacks_leave_the_runtimes_prepared_statements(
    conn: psycopg.Connection[Any], store: Store
) -> None:
    """psycopg clears its own prepared statements after a ROLLBACK with `DEALLOCATE ALL`,
    which dropped the runtime's too (a worker slot then failed and its run waited out the
    lease). The runtime's sessions keep psycopg from preparing anything."""
    store.wire.run([("runtime/read_run", {"run_id": "wrun_none"})])
    for _ in range(10):  # well past psycopg's default prepare threshold (5)
        conn.execute("SELECT %s::int", (1,))
    conn.execute("BEGIN")
    conn.execute("ROLLBACK")
    conn.execute("SELECT %s::int", (1,))  # psycopg would send its DEALLOCATE ALL here
    assert store.wire.run([("runtime/read_run", {"run_id": "wrun_none"})])[0].rows == []


def test_an_event_written_between_settle_and_flush_is_never_overtaken(
    conn: psycopg.Connection[Any], store: Store, world: Any
) -> None:
    """Another writer (`hooks resume`, `runs cancel` take the run row FOR UPDATE; here a
    repair-style append) adds an event after the executor chose its ids and before it sends
    them. In a legacy run that event's ULID can sort between the executor's floor and its
    first new id: the transaction must still refuse (the workflow never saw that event), not
    commit after it. It used to: the unseen check read the floor `settle()` had already
    moved past its own ids, and the INSERT's guard only looked at ids from its first one."""
    run_id = create(flows.sequential, [1], conn=conn).run_id
    (created,) = store.read_events(run_id)
    tx = store.tx(run_id, created.id)
    tx.run_started()
    (mine,) = tx.settle()
    with psycopg.connect(world.dsn, autocommit=True) as other:
        between = None
        if store.scheme(run_id) == "legacy":  # just after the floor, before the new id
            between = (created.id, mine.id)
            assert created.id < mine.id
        with other.transaction():
            EventWriter(slots=store.slots).append(
                other, run_id, "run_cancelled", None, None, 5, between=between
            )
    with pytest.raises((PositionTaken, GuardError)):
        tx.flush(commit=True)
    assert [e.type for e in store.read_events(run_id)] == ["run_created", "run_cancelled"]
