"""A rewritten run is finished by a runtime: wfctl's own (slot-aware, on the same schema).

Each run starts life through wfctl's runtime (run row, marker and slot-1 run_created in one
transaction); the #3656 damage is then written by SQL, as the foreign writer left it. The
runtime refuses the damaged log (its writer will not mix schemes), `repair --allow-rewrite`
heals it, and the same runtime then drives the run to completion with the right output, a
dense log the slot oracle accepts, and a clean doctor.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from tests import slot_oracle as oracle
from tests.runtime import flows
from tests.runtime.conftest import doctor_clean
from wfctl.errors import RefusedError
from wfctl.runtime.executor import Executor, create
from wfctl.runtime.store import Store
from wfctl.world import ids


def _drive(conn: psycopg.Connection[Any], run_id: str) -> Any:
    executor = Executor(flows.wf, Store(conn))
    try:
        return executor.drive(run_id)
    finally:
        executor.close()


def _foreign_run_started(conn: psycopg.Connection[Any], run_id: str) -> None:
    """The peer that read the run before its marker: `allocateEventId`'s legacy branch."""
    conn.execute(
        "INSERT INTO workflow.workflow_events (id, type, run_id, spec_version)"
        " VALUES (%s, 'run_started', %s, 5)",
        (ids.legacy_event_id(), run_id),
    )
    conn.execute("UPDATE workflow.workflow_runs SET status = 'running' WHERE id = %s", (run_id,))


def _ids(conn: psycopg.Connection[Any], run_id: str) -> list[str]:
    rows = conn.execute(
        "SELECT id FROM workflow.workflow_events WHERE run_id = %s ORDER BY id", (run_id,)
    ).fetchall()
    return [r[0] for r in rows]


@pytest.mark.parametrize("shape", ["poisoned", "restart-spec7", "restart-spec5"])
def test_runtime_finishes_a_rewritten_run(slot_world, apply, run_cli, shape) -> None:
    flows.reset()
    with psycopg.connect(slot_world.dsn, autocommit=True) as conn:
        run_id = create(flows.sequential, [4], conn=conn).run_id
        if shape != "poisoned":
            # The process died after the run row: no marker, no run_created (by SQL).
            conn.execute("DELETE FROM workflow.workflow_events WHERE run_id = %s", (run_id,))
            conn.execute("DELETE FROM workflow.workflow_event_slots WHERE run_id = %s", (run_id,))
            if shape == "restart-spec7":
                conn.execute(
                    "UPDATE workflow.workflow_runs SET spec_version = '7' WHERE id = %s", (run_id,)
                )
        _foreign_run_started(conn, run_id)
        if shape == "poisoned":
            with pytest.raises(RefusedError):
                _drive(conn, run_id)  # the damaged log is refused, nothing written
        # (A restart-shape run has no marker, so a writer, the package's or wfctl's, would
        # still number it legacy: the slot-aware JS runtime is what refuses a spec-7 one.)
        assert oracle.replay_refusal(conn, run_id)  # a slot-aware (or any) reader refuses it
    # --only: the run is driven in this process below, so WF136 (nothing drives it) is moot.
    status, report = apply(
        slot_world, "--allow-rewrite", "--run", run_id, "--only", "WF121,WF122,WF123"
    )
    assert status == 0, report
    with psycopg.connect(slot_world.dsn, autocommit=True) as conn:
        done = _drive(conn, run_id)
        assert done.status == "completed" and done.output == 0 + 1 + 2 + 3
        log = _ids(conn, run_id)
        if shape == "restart-spec5":  # the evidence rule: a spec < 6 run stays legacy
            assert all(ids.is_legacy_event_id(i) for i in log)
        else:
            assert log == [ids.slot_event_id(n) for n in range(1, len(log) + 1)]
        oracle.replay(conn, run_id)
    doctor_clean(run_cli, slot_world.dsn)
