"""WF134: exhausted job for a live run; jobs enqueued by the real package's `world.queue`."""

from __future__ import annotations

from tests import realworld as rw
from tests.checks.conftest import assert_fires


def test_wf134_exhausted_job_for_a_live_run(world, real_world, doctor) -> None:
    run_id = world.new_run()
    world.ok([rw.queue(rw.WORKFLOW, {"runId": run_id})])
    # graphile sets attempts = max_attempts after the last failed delivery; the harness never
    # starts a runner (no flow route here), so that last step is done by hand.
    with real_world.connect() as conn:
        conn.execute(
            "UPDATE graphile_worker._private_jobs SET attempts = max_attempts,"
            " last_error = 'fetch failed'"
        )
    check = assert_fires(doctor, real_world, "WF134", None)
    assert (
        check["samples"][0]["run_id"] == run_id and "fetch failed" in check["samples"][0]["detail"]
    )
    # an exhausted job wakes nothing: the run is stranded too
    assert_fires(doctor, real_world, "WF133", run_id)


def test_wf134_not_applicable_without_graphile(wfctl_world, doctor) -> None:
    status, checks, _ = doctor(wfctl_world, "--only", "WF134")
    assert {c["status"] for c in checks.values()} == {"not_applicable"}
    assert status == 0
