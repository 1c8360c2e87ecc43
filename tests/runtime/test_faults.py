"""Fault injection: a trigger raises at each statement of each transition. Every transition
lands whole or not at all: doctor finds nothing, and the run then completes normally."""

from __future__ import annotations

import time
from typing import Any

import psycopg
import pytest

from tests import faults
from tests.runtime import flows
from tests.runtime.conftest import doctor_clean
from wfctl.runtime import serde
from wfctl.runtime.executor import Executor, create
from wfctl.runtime.store import Store
from wfctl.world import ids

# (table, event_type, on, status): the statement that raises
CASES = [
    ("workflow_runs", None, "INSERT", None),  # run creation: row
    ("workflow_events", "run_created", "INSERT", None),  # run creation: first event
    ("workflow_runs", None, "UPDATE", "running"),  # pickup: row
    ("workflow_events", "run_started", "INSERT", None),
    ("workflow_steps", None, "INSERT", None),  # step start: row
    ("workflow_events", "step_created", "INSERT", None),
    ("workflow_events", "step_started", "INSERT", None),
    ("workflow_steps", None, "UPDATE", "pending"),  # retry: row
    ("workflow_events", "step_retrying", "INSERT", None),
    ("workflow_steps", None, "UPDATE", "completed"),  # completion: row
    ("workflow_events", "step_completed", "INSERT", None),
    ("workflow_waits", None, "INSERT", None),
    ("workflow_events", "wait_created", "INSERT", None),
    ("workflow_waits", None, "UPDATE", "completed"),
    ("workflow_events", "wait_completed", "INSERT", None),
    ("workflow_hooks", None, "INSERT", None),
    ("workflow_events", "hook_created", "INSERT", None),
    ("workflow_events", "hook_received", "INSERT", None),
    ("workflow_events", "hook_disposed", "INSERT", None),
    ("workflow_runs", None, "UPDATE", "completed"),  # run end: row
    ("workflow_events", "run_completed", "INSERT", None),
]


def _advance(store: Store, run_id: str, order: str) -> str:
    ex = Executor(flows.wf, store)
    try:
        for _ in range(60):
            done = ex.drive(run_id)
            if done.status in ("completed", "failed", "cancelled"):
                return done.status
            try:
                store.resume_hook(f"all-{order}", serde.dumps({"n": 1}))
            except LookupError:
                time.sleep(0.03)
        return done.status
    finally:
        ex.close()


def _fingerprint(conn: Any, run_id: str) -> tuple[Any, ...]:
    q = "SELECT count(*) FROM workflow.{} WHERE {} = %s"
    return tuple(
        conn.execute(q.format(t, c), (run_id,)).fetchone()[0]
        for t, c in (
            ("workflow_runs", "id"),
            ("workflow_events", "run_id"),
            ("workflow_steps", "run_id"),
            ("workflow_waits", "run_id"),
            ("workflow_hooks", "run_id"),
        )
    )


@pytest.mark.parametrize(("table", "event_type", "on", "status"), CASES)
def test_transition_lands_whole_or_not_at_all(
    world, conn, store, run_cli, table, event_type, on, status
) -> None:
    run_id = ids.prefixed("wrun")
    order = run_id[-6:]
    with psycopg.connect(world.dsn, autocommit=True) as admin:
        fault = faults.fail_insert(
            admin, table, run_id, event_type, times=None, status=status, on=on
        )
        with fault:
            with pytest.raises(psycopg.Error, match="wfctl_fault"):
                create(flows.everything, [order], run_id=run_id, conn=conn)
                _advance(store, run_id, order)
            assert fault.matches() >= 1
            # the failed transaction left nothing behind
            before = _fingerprint(conn, run_id)
            doctor_clean(run_cli, world.dsn)
            assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        faults.drop_faults(admin)
        assert faults.installed_faults(admin) == []
    if before[0] == 0:
        assert before == (0, 0, 0, 0, 0)
        create(flows.everything, [order], run_id=run_id, conn=conn)
    assert _advance(store, run_id, order) == "completed"
    doctor_clean(run_cli, world.dsn)
