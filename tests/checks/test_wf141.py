"""WF141: event logs no replay can consume."""

from __future__ import annotations

import threading
import time

from tests import realworld as rw
from tests.checks.conftest import assert_fires, assert_in_flight
from wfctl.world import ids


def test_hook_received_after_hook_disposed_via_the_real_race(world, real_world, doctor) -> None:
    """#2781: hook_received validates the hook, then waits for the run row lock; meanwhile the
    non-transactional hook_disposed deletes the hook and journals; the receipt then mints
    its id after the lock, so it sorts after the disposal."""
    run_id, hook_id = world.new_run(), rw.new_hook_id()
    token = f"tok-{hook_id[-8:]}"
    world.ok([rw.hook_created(run_id, hook_id, token)])
    with real_world.connect() as holder:
        holder.autocommit = False
        holder.execute("SELECT 1 FROM workflow.workflow_runs WHERE id = %s FOR UPDATE", (run_id,))
        receiver = world.spawn([rw.hook_received(run_id, hook_id, rw.devl('["hi"]'), token)])
        deadline = time.time() + 10
        while time.time() < deadline:  # wait until the receipt blocks on the run row
            waiting = holder.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                " AND query ILIKE '%%workflow_runs%%'"
            ).fetchone()[0]
            if waiting:
                break
            time.sleep(0.05)
        done = threading.Event()
        results = []

        def dispose() -> None:
            results.extend(world.ops([rw.hook_disposed(run_id, hook_id, token)]))
            done.set()

        thread = threading.Thread(target=dispose)
        thread.start()
        assert done.wait(30)
        holder.rollback()
    thread.join()
    received = world.collect(receiver)
    assert results[0]["ok"] and received[0]["ok"], (results, received)
    check = assert_fires(doctor, real_world, "WF141", hook_id)
    assert "hook_received after hook_disposed" in check["samples"][0]["detail"]
    assert_in_flight(doctor, real_world, "WF141")


def test_duplicate_terminal_events_and_run_created(wfctl_world, doctor) -> None:
    """The race a careless repair loses (a duplicate completion) is not reproducible on demand
    through the package, so these rows are written by hand."""
    run_id, step_id = rw.new_run_id(), rw.new_step_id()
    with wfctl_world.connect() as conn:
        conn.execute(
            "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name, spec_version)"
            " VALUES (%s, 'postgres', 'running', %s, '5')",
            (run_id, rw.WORKFLOW),
        )
        clock = ids.MonotonicUlid()
        for kind, corr in [
            ("run_created", None),
            ("run_created", None),
            ("step_created", step_id),
            ("step_started", step_id),
            ("step_completed", step_id),
            ("step_completed", step_id),
            ("step_started", step_id),
        ]:
            conn.execute(
                "INSERT INTO workflow.workflow_events (id, type, correlation_id, run_id)"
                " VALUES (%s, %s, %s, %s)",
                ("wevt_" + clock.next(), kind, corr, run_id),
            )
    check = assert_fires(doctor, wfctl_world, "WF141", None)
    details = " | ".join(s["detail"] for s in check["samples"])
    assert "2 terminal events for one step" in details
    assert "step_started after the step's terminal event" in details
    assert "2 run_created events" in details
