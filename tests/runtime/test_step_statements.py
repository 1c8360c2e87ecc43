"""What a sequential step sends, and why its guard is a statement of its own.

A step's transaction is one implicit transaction of four prepared statements in one round
trip: the guard (FOR KEY SHARE on the run row), the step completion, the next step's row and
one events INSERT (which also refuses unseen events). Folding the three after the guard into
one data-modifying CTE, or all four, was measured and dropped (docs/benchmarks.md, "Folding a
step's statements into one statement"); the lock test below is why the guard could not be
folded in.
"""

from __future__ import annotations

import threading
from typing import Any

import psycopg

from tests.runtime import flows
from wfctl import sql
from wfctl.runtime import serde, wire
from wfctl.runtime.executor import Executor, create
from wfctl.runtime.store import PositionTaken, Store


def _executions(conn: psycopg.Connection[Any]) -> dict[str, int]:
    """How often this session ran each of the runtime's prepared statements (by label)."""
    rows = conn.execute(
        "SELECT name, generic_plans + custom_plans FROM pg_prepared_statements"
        " WHERE name LIKE 'wfctl\\_%'"
    ).fetchall()
    return {str(name): int(n) for name, n in rows}


def _label(sql_name: str) -> str:
    return wire.prepared(sql_name).name.decode()


def test_a_sequential_step_sends_four_statements_one_guard_per_transaction(
    conn: psycopg.Connection[Any], store: Store
) -> None:
    steps = 40
    run_id = create(flows.sequential, [steps], conn=conn).run_id
    # The run's creation is one pipelined batch of prepared statements on this session too:
    # counted out, this test is about the steps.
    created = _executions(conn)
    ex = Executor(flows.wf, store)
    try:
        assert ex.drive(run_id).status == "completed"
    finally:
        ex.close()
    ran = {name: n - created.get(name, 0) for name, n in _executions(conn).items()}
    events = (
        "writer/insert_events_with_ids" if store.slots else "writer/insert_events_with_ids_windowed"
    )
    # run_started + the first step, one transaction per later step, the run's end
    assert ran[_label("runtime/guard_run")] == steps + 1
    assert ran[_label(events)] == steps + 1
    assert ran[_label("runtime/insert_step")] == steps
    assert ran[_label("runtime/complete_step")] == steps
    assert sum(ran.values()) / steps < 4.3, ran  # 4 per step + the run's first and last


def test_an_event_committed_while_the_step_waits_for_the_run_lock_is_seen(
    conn: psycopg.Connection[Any], store: Store, world: Any
) -> None:
    """`hooks resume` locks the run row FOR UPDATE, appends hook_received and leaves the row
    unchanged. A step transaction that waited for that lock must not write past the event:
    its events INSERT's snapshot is taken after the guard's lock was granted, because the
    guard is a statement of its own (a statement's snapshot is taken when it starts; with the
    guard folded into one statement, a beta.29 world's step committed here, its wevt_ ids
    not colliding with the hook's)."""
    run_id = create(flows.sequential, [2], conn=conn).run_id
    tx = store.tx(run_id, store.read_events(run_id)[-1].id)
    tx.run_started()
    tx.start_new_step("step_a", "add", serde.dumps([0, 1]))
    floor = tx.commit()[-1].id
    outcome: list[BaseException | None] = []

    def step() -> None:
        try:
            tx = store.tx(run_id, floor)
            tx.complete_step("step_a", "add", serde.dumps(1))
            tx.start_new_step("step_b", "add", serde.dumps([1, 2]))
            tx.commit()
            outcome.append(None)
        except BaseException as exc:  # asserted below
            outcome.append(exc)

    with psycopg.connect(world.dsn, autocommit=True) as other:
        other.execute("BEGIN")
        other.execute(sql.load("runtime/lock_run"), {"run_id": run_id})
        Store(other).writer.append(
            other, run_id, "hook_received", "hook_x", {"token": "t", "payload": b"x"}, 5
        )
        thread = threading.Thread(target=step)
        thread.start()
        # commit only once the step's backend waits for the run row's lock
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
    steps = conn.execute(
        "SELECT string_agg(step_id || ':' || status, ',' ORDER BY step_id)"
        " FROM workflow.workflow_steps WHERE run_id = %s",
        (run_id,),
    ).fetchone()
    assert steps == ("step_a:running",)
