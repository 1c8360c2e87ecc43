"""WF134: exhausted job for a live run; jobs enqueued by the real package's `world.queue`."""

from __future__ import annotations

from tests import realworld as rw
from tests.checks.conftest import assert_fires


def exhausted_job(world, db) -> str:
    """A live run whose only job used all its attempts."""
    run_id = world.new_run()
    world.ok([rw.queue(rw.WORKFLOW, {"runId": run_id})])
    # graphile sets attempts = max_attempts after the last failed delivery; the harness never
    # starts a runner (no flow route here), so that last step is done by hand.
    with db.connect() as conn:
        conn.execute(
            "UPDATE graphile_worker._private_jobs SET attempts = max_attempts, updated_at = now(),"
            " last_error = 'fetch failed'"
        )
    return run_id


def test_wf134_exhausted_job_for_a_live_run(world, real_world, doctor) -> None:
    run_id = exhausted_job(world, real_world)
    check = assert_fires(doctor, real_world, "WF134", None)
    assert (
        check["samples"][0]["run_id"] == run_id and "fetch failed" in check["samples"][0]["detail"]
    )
    # an exhausted job wakes nothing: the run is stranded too
    assert_fires(doctor, real_world, "WF133", run_id)


def test_wf134_a_re_woken_run_has_history_not_a_finding(world, real_world, doctor) -> None:
    """After a re-wake (a fresh live job for the run, as WF133's repair or a world.start()
    enqueues) the exhausted job is history: doctor is clean for it."""
    run_id = exhausted_job(world, real_world)
    world.ok([rw.queue(rw.WORKFLOW, {"runId": run_id})])  # the re-wake
    status, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF133,WF134")
    assert checks["WF134"]["count"] == 0 and checks["WF133"]["count"] == 0, checks
    assert status == 0


def test_wf134_a_run_that_moved_on_has_history_not_a_finding(world, real_world, doctor) -> None:
    """Re-woken, delivered, and now parked on a hook (no job): its log moved past the job."""
    run_id = exhausted_job(world, real_world)
    world.ok([rw.hook_created(run_id, rw.new_hook_id(), "tok-moved-on")])
    status, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF134")
    assert checks["WF134"]["count"] == 0 and status == 0, checks


def test_wf134_not_applicable_without_graphile(wfctl_world, doctor) -> None:
    status, checks, _ = doctor(wfctl_world, "--only", "WF134")
    assert {c["status"] for c in checks.values()} == {"not_applicable"}
    assert status == 0
