"""WF104: rows a finished run still holds, produced by the real race of hook_created with the
run's end (and WF147 sees the hook_created journaled after run_completed)."""

from __future__ import annotations

from tests import realworld as rw
from tests.checks.conftest import assert_fires, assert_in_flight
from tests.faults import slow_insert, wait_for_sleeper


def hook_row_outlives_its_run(world: rw.RealWorld, conn) -> tuple[str, str]:
    """beta.29's hook_created checks the run, then inserts the hook row and its event in later
    autocommits. Held in that window while the run completes (its DELETE of the run's hooks
    finds nothing yet), the row and the event land after the run's end."""
    run_id, hook_id = world.new_run(), rw.new_hook_id()
    with slow_insert(conn, "workflow_hooks", run_id, None, seconds=3):
        racer = world.spawn([rw.hook_created(run_id, hook_id, f"late-{hook_id[-8:]}")])
        wait_for_sleeper(conn)
        world.ok([rw.run_completed(run_id)])
        assert world.collect(racer)[0]["ok"]
    return run_id, hook_id


def test_hook_row_written_after_the_run_ended(world, real_world, doctor) -> None:
    with real_world.connect() as conn:
        run_id, hook_id = hook_row_outlives_its_run(world, conn)
        status = conn.execute(
            "SELECT status::text FROM workflow.workflow_runs WHERE id = %s", (run_id,)
        ).fetchone()[0]
    assert status == "completed"
    # a stuck token hurts live runs: reported in the default scope too
    check = assert_fires(doctor, real_world, "WF104", hook_id)
    assert check["samples"][0]["detail"].startswith("hook row")
    assert_in_flight(doctor, real_world, "WF104")
    late = assert_fires(doctor, real_world, "WF147", run_id, "--all")
    assert f"hook_created({hook_id})" in late["samples"][0]["detail"]


def test_rows_of_live_runs_and_cleanly_ended_runs_are_not_reported(world, real_world, doctor):
    live, hook_id = world.new_run(), rw.new_hook_id()
    ended = world.new_run()
    ended_hook, wait_id = rw.new_hook_id(), rw.new_wait_id()
    world.ok(
        [
            rw.hook_created(live, hook_id, "tok-live"),
            rw.hook_created(ended, ended_hook, "tok-ended"),
            rw.wait_created(ended, wait_id, rw.utcnow()),
            rw.run_completed(ended),  # deletes its hooks and waits
        ]
    )
    status, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF104", "--all")
    assert checks["WF104"]["count"] == 0 and status == 0
