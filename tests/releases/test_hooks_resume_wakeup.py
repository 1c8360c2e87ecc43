"""`hooks resume` wakes a run the package drives, as the package's own resumeHook() does: a
flows job in its message format, in the transaction that writes hook_received. wfctl's own
runs (deployment `wfctl`) get none."""

from __future__ import annotations

from tests import realworld as rw


def _wakeups(db, run_id: str) -> list[str]:
    with db.connect() as conn:
        rows = conn.execute(
            "SELECT t.identifier FROM graphile_worker._private_jobs j"
            " JOIN graphile_worker._private_tasks t ON t.id = j.task_id"
            " WHERE convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')::jsonb"
            " ->> 'runId' = %s",
            (run_id,),
        ).fetchall()
    return [r[0] for r in rows]


def test_beta29_package_run_is_woken(real_world, run_cli) -> None:
    world = rw.RealWorld(real_world.dsn)
    run_id, ops = rw.hook_waiting_run_ops(token="wake-me")
    world.ok(ops)
    assert _wakeups(real_world, run_id) == []
    status, out, err = run_cli("--dsn", real_world.dsn, "hooks", "resume", "wake-me", "1")
    assert status == 0, err
    assert "wake-up job" in out
    assert _wakeups(real_world, run_id) == ["workflow_flows"]


def test_wfctls_own_run_gets_no_package_job(real_world, run_cli) -> None:
    world = rw.RealWorld(real_world.dsn)
    run_id, ops = rw.hook_waiting_run_ops(token="mine")
    world.ok(ops)
    with real_world.connect() as conn:
        conn.execute(
            "UPDATE workflow.workflow_runs SET deployment_id = 'wfctl' WHERE id = %s", (run_id,)
        )
    status, out, err = run_cli("--dsn", real_world.dsn, "hooks", "resume", "mine", "1")
    assert status == 0, err
    assert "wake-up job" not in out
    assert _wakeups(real_world, run_id) == []
