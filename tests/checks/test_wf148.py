"""WF148: a step row's attempt differs from its step_started events."""

from __future__ import annotations

from tests import realworld as rw
from tests.checks.conftest import assert_fires


def test_attempt_edited_apart_from_the_log(world, real_world, doctor) -> None:
    """Every package start raises attempt and journals step_started in one transaction, so
    only a hand edit (here: the row's attempt, as a manual 'retry budget reset' does) makes
    them differ."""
    run_id, step_id = world.new_run(), rw.new_step_id()
    lazy = rw.new_step_id()
    world.ok(
        [
            rw.step_created(run_id, step_id),
            rw.step_started(run_id, step_id),
            rw.step_started_lazy(run_id, lazy),
        ]
    )
    status, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF148")
    assert checks["WF148"]["count"] == 0 and status == 0  # plain and lazy starts agree
    with real_world.connect() as conn:
        conn.execute(
            "UPDATE workflow.workflow_steps SET attempt = 0 WHERE step_id = %s", (step_id,)
        )
    check = assert_fires(doctor, real_world, "WF148", step_id)
    assert "attempt 0, 1 step_started" in check["samples"][0]["detail"]
