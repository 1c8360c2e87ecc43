"""WF146 (step_started after the run's end) and WF147 (other events after the run's end),
produced through the real package's write path, with the benign cases as controls."""

from __future__ import annotations

from tests import realworld as rw
from tests.checks.conftest import assert_fires


def test_running_step_started_again_after_the_run_was_cancelled(world, real_world, doctor):
    """vw#3457: beta.29 validates a plain step_started against the step only, so a running
    step of a cancelled run starts again (a redelivered step message re-executes the body)."""
    run_id, step_id = world.new_run(), rw.new_step_id()
    results = world.ok(
        [
            rw.step_created(run_id, step_id),
            rw.step_started(run_id, step_id),
            rw.run_cancelled(run_id),
            rw.step_started(run_id, step_id, attempt=2),
        ]
    )
    assert len(results) == 4
    _, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF146")
    assert checks["WF146"]["count"] == 0  # the run is over: --all speaks
    check = assert_fires(doctor, real_world, "WF146", step_id, "--all")
    assert "step_started after run_cancelled" in check["samples"][0]["detail"]
    # the restart is WF146's, not WF147's
    _, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF147", "--run", run_id)
    assert checks["WF147"]["count"] == 0


def test_a_step_that_never_ran_completes_after_the_run_ended(world, real_world, doctor):
    """step_completed skips the run check in beta.29 and is accepted from `pending`: a step
    created but never started completes after run_completed."""
    run_id, step_id = world.new_run(), rw.new_step_id()
    world.ok(
        [
            rw.step_created(run_id, step_id),
            rw.run_completed(run_id),
            rw.step_completed(run_id, step_id),
        ]
    )
    check = assert_fires(doctor, real_world, "WF147", run_id, "--all")
    assert f"step_completed({step_id})" in check["samples"][0]["detail"]


def test_benign_events_after_the_end_are_not_reported(world, real_world, doctor):
    """A running step closing out after the run ended, and a repeated cancel (the world
    records each one), are documented as benign."""
    closing, step_id = world.new_run(), rw.new_step_id()
    cancelled = world.new_run()
    world.ok(
        [
            rw.step_created(closing, step_id),
            rw.step_started(closing, step_id),
            rw.run_cancelled(closing),
            rw.step_completed(closing, step_id),
            rw.run_cancelled(cancelled),
            rw.run_cancelled(cancelled),
        ]
    )
    for code in ("WF146", "WF147"):
        status, checks, _ = doctor(real_world, "--min-age", "0s", "--only", code, "--all")
        assert checks[code]["count"] == 0, checks[code]
        assert status == 0
