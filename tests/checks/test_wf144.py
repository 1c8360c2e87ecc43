"""WF144: one hook token owned by several live runs, produced by the real race (vw#4173)."""

from __future__ import annotations

from tests import realworld as rw
from tests.checks.conftest import assert_fires, assert_in_flight
from tests.faults import slow_insert, wait_for_sleeper


def test_two_runs_win_one_token_through_the_real_race(world, real_world, doctor) -> None:
    """beta.29's hook_created reads the hook by token, then inserts the row in a later
    autocommit. Run A's row insert is held in the window while run B creates the same token;
    both succeed, neither gets hook_conflict, and two live runs own the token."""
    run_a, run_b = world.new_run(), world.new_run()
    hook_a, hook_b = rw.new_hook_id(), rw.new_hook_id()
    token = f"shared-{hook_a[-8:]}"
    with (
        real_world.connect() as conn,
        slow_insert(conn, "workflow_hooks", run_a, None, seconds=3),
    ):
        racer = world.spawn([rw.hook_created(run_a, hook_a, token)])
        wait_for_sleeper(conn)
        world.ok([rw.hook_created(run_b, hook_b, token)])
        results = world.collect(racer)
    assert results[0]["ok"], results
    with real_world.connect() as conn:
        owners = conn.execute(
            "SELECT count(DISTINCT run_id) FROM workflow.workflow_hooks WHERE token = %s",
            (token,),
        ).fetchone()[0]
    assert owners == 2
    check = assert_fires(doctor, real_world, "WF144", hook_a)
    assert {s["entity_id"] for s in check["samples"]} == {hook_a, hook_b}
    assert "held by 2 live runs" in check["samples"][0]["detail"]
    assert_in_flight(doctor, real_world, "WF144")
    # --run narrows to that run's row; a token held once is never reported
    _, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF144", "--run", run_b)
    assert {s["entity_id"] for s in checks["WF144"]["samples"]} == {hook_b}
    # once one owner is over, the token has one live owner again
    world.ok([rw.run_completed(run_a)])
    _, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF144")
    assert checks["WF144"]["count"] == 0
