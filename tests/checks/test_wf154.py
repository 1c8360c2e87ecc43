"""WF154: a completed run's row lacks the output its run_completed carries."""

from __future__ import annotations

from tests import realworld as rw
from tests.checks.conftest import assert_fires
from tests.conftest import Db


def output_lost(world: rw.RealWorld, db: Db) -> str:
    """A run completed by the package, whose row then lost its output (the package sets
    status and output in one UPDATE, so a hand edit or a partial copy of the row does it)."""
    run_id = world.new_run()
    world.ok([rw.run_completed(run_id, rw.devl('[{"total":1},42]'))])
    with db.connect() as conn:
        conn.execute(
            "UPDATE workflow.workflow_runs SET output_cbor = NULL WHERE id = %s", (run_id,)
        )
    return run_id


def test_completed_row_without_its_output(world, real_world, doctor) -> None:
    run_id = output_lost(world, real_world)
    status, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF154")
    assert checks["WF154"]["count"] == 0 and status == 0  # live scope: no completed runs
    check = assert_fires(doctor, real_world, "WF154", "output", "--all")
    [sample] = check["samples"]
    assert sample["run_id"] == run_id
    assert "run_completed carries devl [{" in sample["detail"]
    assert_fires(doctor, real_world, "WF154", "output", "--run", run_id)


def test_completed_runs_with_outputs_are_silent(world, real_world, doctor) -> None:
    """Package-completed runs (a void workflow's output is still bytes: devl undefined)."""
    world.complete_run_with_steps(1)
    run_id = world.new_run()
    world.ok([rw.run_completed(run_id, rw.devl("[-1]"))])
    world.clean_world()
    status, checks, _ = doctor(real_world, "--min-age", "0s", "--all", "--only", "WF154")
    assert checks["WF154"]["count"] == 0 and checks["WF154"]["in_flight"] == 0
    assert status == 0
