"""`wfctl runs fork`: a Python run forked from a step replays the copied steps and re-runs
the rest (both eras); a Node run (written by the real package) is rerun from the start under
the same job prefix; what cannot be copied is refused."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from tests import realworld as rw
from tests.conftest import Db, node_available
from tests.runtime import flows
from tests.runtime.test_realread import read_back
from wfctl.runtime import serde
from wfctl.runtime.executor import Executor, create
from wfctl.runtime.store import Store
from wfctl.world.bootstrap import ensure_worker_schema


def _fork(run_cli, db: Db, *args: str) -> tuple[int, dict[str, Any], str]:
    status, out, err = run_cli("--dsn", db.dsn, "--format", "json", "runs", "fork", *args)
    return status, (json.loads(out) if out.strip() else {}), err


@pytest.mark.parametrize("era", ["beta29", "slot"])
def test_python_run_forked_from_a_step(era: str, request, run_cli) -> None:
    db: Db = request.getfixturevalue("wfctl_world" if era == "beta29" else "slot_world")
    with psycopg.connect(db.dsn, autocommit=True) as conn:
        ensure_worker_schema(conn)
        flows.reset()
        ex = Executor(flows.wf, Store(conn))
        source = create(flows.sequential, [4], conn=conn, queue="payments").run_id
        assert ex.drive(source, timeout=10).output == 6
        assert flows.calls["add"] == 4

        status, plan, _ = _fork(run_cli, db, source, "--from-step", "3", "--dry-run")
        assert status == 0 and plan["applied"] is False and plan["copied_steps"] == 2
        runs_before = db.scalar("SELECT count(*) FROM workflow.workflow_runs")
        status, plan, _ = _fork(run_cli, db, source, "--from-step", "3")  # dry run by default
        assert status == 0 and plan["applied"] is False and plan["audit_id"] is None
        assert db.scalar("SELECT count(*) FROM workflow.workflow_runs") == runs_before
        assert plan["queue"] == "default"  # the source ended: its queue row is gone
        status, out, err = _fork(
            run_cli,
            db,
            source,
            "--from-step",
            "3",
            "--queue",
            "payments",
            "--apply",
            "--reason",
            "redo",
        )
        assert status == 0, err
        fork = out["run_id"]
        assert conn.execute(
            "SELECT queue FROM wfctl.run_queue WHERE run_id = %s", (fork,)
        ).fetchone() == ("payments",)
        flows.reset()
        done = ex.drive(fork, timeout=10)
        ex.close()
    assert done.status == "completed" and done.output == 6
    assert flows.calls["add"] == 2  # steps 1 and 2 replayed from the copy, 3 and 4 ran again
    status, doctor, _ = run_cli("--dsn", db.dsn, "doctor", "--all", "--min-age", "0s")
    assert status == 0, doctor
    assert (
        db.scalar("SELECT details->>'source_run_id' FROM wfctl.repair_log WHERE code = 'fork'")
        == source
    )

    for args, code, needle in (
        (("--from-step", "9", "--apply", "--reason", "r"), 64, "has 4 steps"),
        (("--from-step", "step_NOPE", "--reason", "r"), 64, "no such step"),
        (("--from-step", "1", "--apply"), 64, "--reason"),
        (("--apply", "--dry-run", "--reason", "r"), 64, "exclude"),
    ):
        status, _, err = _fork(run_cli, db, source, *args)
        assert status == code and needle in err, (args, err)


def test_fork_refuses_hooks_in_the_prefix(wfctl_world: Db, run_cli) -> None:
    """approval: step 1, a hook, step 2. From step 2, the prefix holds the hook: refused."""
    with psycopg.connect(wfctl_world.dsn, autocommit=True) as conn:
        flows.reset()
        store = Store(conn)
        ex = Executor(flows.wf, store)
        source = create(flows.approval, ["k"], conn=conn).run_id
        ex.drive(source, timeout=10)
        store.resume_hook("approve-k", serde.dumps("yes", "the payload"))
        assert ex.drive(source, timeout=10).status == "completed"
        ex.close()
    status, _, err = _fork(
        run_cli, wfctl_world, source, "--from-step", "2", "--apply", "--reason", "r"
    )
    assert status == 2 and "hook" in err, err
    status, out, err = _fork(
        run_cli, wfctl_world, source, "--from-step", "1", "--apply", "--reason", "r"
    )
    assert status == 0 and out["copied_steps"] == 0, err


@pytest.mark.skipif(not node_available(), reason="node/npm not found")
def test_node_run_rerun_from_the_start(real_world: Db, run_cli) -> None:
    real = rw.RealWorld(real_world.dsn)
    source = real.complete_run_with_steps(2)
    assert run_cli("--dsn", real_world.dsn, "bootstrap")[0] == 0
    status, _, err = _fork(
        run_cli, real_world, source, "--from-step", "1", "--apply", "--reason", "r"
    )
    assert status == 2 and "Node run" in err
    status, out, err = _fork(run_cli, real_world, source, "--apply", "--reason", "rerun")
    assert status == 0, err
    fork = out["run_id"]
    assert out["runtime"] == "node" and out["queue"] == "workflow_flows"
    job = real_world.scalar(
        "SELECT json_build_object('id', j.payload->>'id', 'attempts', j.max_attempts)"
        " FROM graphile_worker._private_jobs j"
        " WHERE convert_from(decode(j.payload->>'data','base64'),'UTF8')::jsonb->>'runId' = %s",
        (fork,),
    )
    assert job == {"id": rw.WORKFLOW, "attempts": 3}
    got = read_back(real_world.dsn, [fork])[fork]
    assert got["ok"], got
    assert got["run"]["status"] == "pending" and got["run"]["workflowName"] == rw.WORKFLOW
    assert [e["eventType"] for e in got["events"]] == ["run_created"]
    assert got["run"]["input"] == read_back(real_world.dsn, [source])[source]["run"]["input"]
