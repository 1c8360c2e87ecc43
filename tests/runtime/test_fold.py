"""A sequential step's transaction is two statements: the guard, then ONE data-modifying CTE
(sql/runtime/commit_step.sql) that completes the step, starts the next one and writes their
events through the event writer's own INSERT. Same rows, same events, same refusals as the
three statements it replaces (sent when `_FOLDS` is empty, as below)."""

from __future__ import annotations

import threading
from typing import Any

import psycopg
import pytest

from tests.runtime import flows
from wfctl import sql
from wfctl.runtime import serde
from wfctl.runtime import store as store_module
from wfctl.runtime.executor import Executor, create
from wfctl.runtime.store import AlreadyExists, GuardError, PositionTaken, Store

FOLDED = ("runtime/commit_step", "runtime/commit_step_windowed")
WRITERS = ("writer/insert_events_with_ids", "writer/insert_events_with_ids_windowed")


def _executions(conn: psycopg.Connection[Any]) -> dict[str, int]:
    """How often this session ran each of the runtime's prepared statements (by SQL name)."""
    rows = conn.execute(
        "SELECT name, generic_plans + custom_plans FROM pg_prepared_statements"
        " WHERE name LIKE 'wfctl\\_%'"
    ).fetchall()
    return {str(name): int(n) for name, n in rows}


def _label(sql_name: str) -> str:
    from wfctl.runtime import wire

    return wire.prepared(sql_name).name.decode()


def test_a_sequential_step_sends_the_guard_and_the_folded_statement(
    conn: psycopg.Connection[Any], store: Store
) -> None:
    steps = 40
    run_id = create(flows.sequential, [steps], conn=conn).run_id
    ex = Executor(flows.wf, store)
    try:
        assert ex.drive(run_id).status == "completed"
    finally:
        ex.close()
    ran = _executions(conn)
    folded = FOLDED[0] if store.slots else FOLDED[1]
    writer = WRITERS[0] if store.slots else WRITERS[1]
    # every step but the first (run_started + its start) and the last (run end) is folded
    assert ran[_label(folded)] == steps - 1
    assert ran.get(_label("runtime/insert_step"), 0) == 1
    assert ran.get(_label("runtime/complete_step"), 0) == 1
    assert ran.get(_label(writer), 0) == 2
    per_step = sum(ran.values()) / steps
    assert ran[_label("runtime/guard_run")] == steps + 1  # one per transaction
    assert per_step < 2.3, ran  # was 4 (guard, complete_step, insert_step, events)
    # what the run wrote is what the unfolded statements write (same log, same rows)
    events = store.read_events(run_id)
    assert [e.type for e in events].count("step_completed") == steps
    assert conn.execute(
        "SELECT count(*) FILTER (WHERE status = 'completed' AND output_cbor IS NOT NULL"
        " AND completed_at IS NOT NULL AND started_at IS NOT NULL AND attempt = 1),"
        " count(*) FROM workflow.workflow_steps WHERE run_id = %s",
        (run_id,),
    ).fetchone() == (steps, steps)


def test_the_folded_statement_embeds_the_writers_insert_as_it_is() -> None:
    """One event writer: the folded statement includes the writer's SQL file by name, it
    does not hold a copy of it."""
    for folded, writer in zip(FOLDED, WRITERS, strict=True):
        body = sql.load(writer).rstrip().removesuffix(";").rstrip()
        assert body in sql.load(folded)
    raw = (sql.SQL_DIR / "runtime" / "commit_step.sql").read_text()
    assert "INSERT INTO workflow.workflow_events" not in raw
    assert "{{writer/insert_events_with_ids}}" in raw


def _two_steps(store: Store, run_id: str) -> str:
    """run_started + step_a started, committed; returns the newest event id."""
    tx = store.tx(run_id, store.read_events(run_id)[-1].id)
    tx.run_started()
    tx.start_new_step("step_a", "add", serde.dumps([0, 1]))
    return tx.commit()[-1].id


def _complete_a_start_b(store: Store, run_id: str, floor: str) -> list[Any]:
    tx = store.tx(run_id, floor)
    tx.complete_step("step_a", "add", serde.dumps(1))
    tx.start_new_step("step_b", "add", serde.dumps([1, 2]))
    return tx.commit()


def _fingerprint(conn: psycopg.Connection[Any], run_id: str) -> tuple[Any, ...]:
    row = conn.execute(
        "SELECT (SELECT count(*) FROM workflow.workflow_events WHERE run_id = %(r)s),"
        " (SELECT string_agg(step_id || ':' || status, ',' ORDER BY step_id)"
        "  FROM workflow.workflow_steps WHERE run_id = %(r)s)",
        {"r": run_id},
    ).fetchone()
    assert row is not None
    return tuple(row)


@pytest.fixture(params=["folded", "separate"])
def form(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each refusal below, through the folded statement and through the three it replaces."""
    if request.param == "separate":
        monkeypatch.setattr(store_module, "_FOLDS", {})
    return str(request.param)


def _sent_folded(conn: psycopg.Connection[Any]) -> int:
    return sum(n for name, n in _executions(conn).items() if name in {_label(f) for f in FOLDED})


def test_a_step_is_written_alike_in_both_forms(
    conn: psycopg.Connection[Any], store: Store, form: str
) -> None:
    run_id = create(flows.sequential, [2], conn=conn).run_id
    floor = _two_steps(store, run_id)
    written = _complete_a_start_b(store, run_id, floor)
    assert [(e.type, e.correlation_id) for e in written] == [
        ("step_completed", "step_a"),
        ("step_created", "step_b"),
        ("step_started", "step_b"),
    ]
    assert [e.id for e in written] == [e.id for e in store.read_events(run_id)[-3:]]
    assert _fingerprint(conn, run_id)[1] == "step_a:completed,step_b:running"
    assert _sent_folded(conn) == (1 if form == "folded" else 0)


def test_a_terminal_step_is_refused_and_nothing_lands(
    conn: psycopg.Connection[Any], store: Store, form: str
) -> None:
    run_id = create(flows.sequential, [2], conn=conn).run_id
    floor = _two_steps(store, run_id)
    conn.execute("UPDATE workflow.workflow_steps SET status = 'failed' WHERE step_id = 'step_a'")
    before = _fingerprint(conn, run_id)
    with pytest.raises(GuardError, match="step step_a is missing or terminal"):
        _complete_a_start_b(store, run_id, floor)
    assert _fingerprint(conn, run_id) == before
    assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


def test_a_cancelled_run_is_refused(conn: psycopg.Connection[Any], store: Store, form: str) -> None:
    run_id = create(flows.sequential, [2], conn=conn).run_id
    floor = _two_steps(store, run_id)
    store.cancel(run_id, "stop")
    before = _fingerprint(conn, run_id)
    with pytest.raises(GuardError, match="is cancelled"):
        _complete_a_start_b(store, run_id, floor)
    assert _fingerprint(conn, run_id) == before


def test_a_step_created_twice_is_refused(
    conn: psycopg.Connection[Any], store: Store, form: str
) -> None:
    run_id = create(flows.sequential, [2], conn=conn).run_id
    floor = _two_steps(store, run_id)
    tx = store.tx(run_id, floor)
    tx.complete_step("step_a", "add", serde.dumps(1))
    tx.start_new_step("step_a", "add", serde.dumps([1, 2]))  # its row exists
    before = _fingerprint(conn, run_id)
    with pytest.raises(AlreadyExists, match="workflow_steps_pkey"):
        tx.commit()
    assert _fingerprint(conn, run_id) == before


def test_an_unseen_event_is_refused(
    conn: psycopg.Connection[Any], store: Store, form: str, world: Any
) -> None:
    """An event another writer committed after the executor's floor: the transaction is
    refused whole (PositionTaken; the executor replays), never written past it."""
    run_id = create(flows.sequential, [2], conn=conn).run_id
    floor = _two_steps(store, run_id)
    with psycopg.connect(world.dsn, autocommit=True) as other:
        Store(other).cancel(run_id, None)  # run_cancelled after the floor...
        other.execute(  # ...and the run running again, so only the unseen event refuses
            "UPDATE workflow.workflow_runs SET status = 'running' WHERE id = %s", (run_id,)
        )
    before = _fingerprint(conn, run_id)
    with pytest.raises(PositionTaken):
        _complete_a_start_b(store, run_id, floor)
    assert _fingerprint(conn, run_id) == before


def test_an_event_committed_while_the_step_waits_for_the_run_lock_is_seen(
    conn: psycopg.Connection[Any], store: Store, form: str, world: Any
) -> None:
    """`hooks resume` locks the run row FOR UPDATE, appends hook_received and leaves the row
    unchanged. A step transaction that waited for that lock must see the event (the events
    INSERT's snapshot is taken after the guard's lock: the guard is its own statement)."""
    run_id = create(flows.sequential, [2], conn=conn).run_id
    floor = _two_steps(store, run_id)
    outcome: list[BaseException | None] = []
    with psycopg.connect(world.dsn, autocommit=True) as other:
        other.execute("BEGIN")
        other.execute(sql.load("runtime/lock_run"), {"run_id": run_id})
        Store(other).writer.append(
            other, run_id, "hook_received", "hook_x", {"token": "t", "payload": b"x"}, 5
        )

        def step() -> None:
            try:
                _complete_a_start_b(store, run_id, floor)
                outcome.append(None)
            except BaseException as exc:  # reported below
                outcome.append(exc)

        thread = threading.Thread(target=step)
        thread.start()
        pid = conn.info.backend_pid
        with psycopg.connect(world.dsn, autocommit=True) as watch:
            while not thread.join(0.01) and watch.execute(
                "SELECT wait_event_type IS DISTINCT FROM 'Lock' FROM pg_stat_activity"
                " WHERE pid = %s",
                (pid,),
            ).fetchone() == (True,):
                pass
        other.execute("COMMIT")
        thread.join()
    assert len(outcome) == 1
    assert isinstance(outcome[0], PositionTaken), outcome
    assert [e.type for e in store.read_events(run_id)][-1] == "hook_received"


def test_the_folded_statement_never_scans_all_events(
    conn: psycopg.Connection[Any], store: Store
) -> None:
    """As the writer's own INSERT (test_wire): its generic plan reads the events by index,
    in an empty world and after the guard (which turns seqscan off in beta.29 worlds)."""
    run_id = create(flows.sequential, [1], conn=conn).run_id
    folded = FOLDED[0] if store.slots else FOLDED[1]
    index = "workflow_events_run_id_id_pk" if store.slots else "workflow_events_pkey"
    from wfctl.runtime import wire

    conn.execute("BEGIN")
    try:
        store.wire.run([("runtime/guard_run", {"run_id": run_id, "seqscan_off": not store.slots})])
        plan = "\n".join(
            r[0]
            for r in conn.execute(
                "EXPLAIN (GENERIC_PLAN) " + wire.prepared(folded).text.decode()
            ).fetchall()
        )
        assert "Seq Scan on workflow_events" not in plan, plan
        assert index in plan, plan
        assert "One-Time Filter" in plan, plan  # the step checks run before the events CTE
    finally:
        conn.execute("ROLLBACK")


def test_includes_rename_parameters_and_fragments(tmp_path: Any, monkeypatch: Any) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "a.sql").write_text("-- a\nSELECT %(x)s AS a;\n")
    (tmp_path / "t" / "b.sql").write_text("-- b\nSELECT %(x)s AS b;\n")
    (tmp_path / "t" / "outer.sql").write_text("WITH q AS ({{t/a x=y}}) SELECT * FROM q;\n")
    (tmp_path / "t" / "variant.sql").write_text("{{t/outer t/a=t/b}}\n")
    (tmp_path / "t" / "loop.sql").write_text("{{t/loop}}\n")
    monkeypatch.setattr(sql, "SQL_DIR", tmp_path)
    assert (
        sql._expand("t/outer", (), ()) == "WITH q AS (-- a\nSELECT %(y)s AS a\n) SELECT * FROM q;\n"
    )
    assert "SELECT %(y)s AS b" in sql._expand("t/variant", (), ())
    with pytest.raises(ValueError, match="cycle"):
        sql._expand("t/loop", (), ())
