"""WF145: a hook event after the hook's hook_disposed (#2781 / vw#3645)."""

from __future__ import annotations

import threading
import time

from tests import realworld as rw
from tests.checks.conftest import assert_fires, assert_in_flight, hand_written_log


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
    check = assert_fires(doctor, real_world, "WF145", hook_id)
    assert "after hook_disposed" in check["samples"][0]["detail"]
    assert_in_flight(doctor, real_world, "WF145")
    # one family, one code: WF141 (duplicates, restarts) stays silent
    _, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF141")
    assert checks["WF141"]["count"] == 0


def test_second_hook_disposed(wfctl_world, doctor) -> None:
    """beta.29 refuses a second disposal (its DELETE finds no row), so no package path writes
    two; the rows are written by hand to pin the rule (hook.dispose-once)."""
    run_id, hook_id = rw.new_run_id(), rw.new_hook_id()
    hand_written_log(
        wfctl_world,
        run_id,
        [
            ("run_created", None),
            ("hook_created", hook_id),
            ("hook_disposed", hook_id),
            ("hook_disposed", hook_id),
        ],
    )
    check = assert_fires(doctor, wfctl_world, "WF145", hook_id)
    assert "2 hook_disposed events for one hook" in check["samples"][0]["detail"]
