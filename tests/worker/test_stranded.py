"""No stranded runs: a run driven in the process that started it (`wfctl run --wait`) holds a
lease on its queue row; SIGKILLed mid-step, doctor reports it (WF136, "lease expired") and a
`wfctl worker` adopts and completes it. A run in no queue (started by a process that ended)
is reported "not queued" and `repair --apply` hands it to the workers. A run some session
drives (holding its run lock) or one parked on a hook is never reported."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.worker import clientflows as cf
from tests.worker.conftest import ROOT, effects, prepare, statuses, wait_until
from tests.worker.flows import open_gate
from wfctl.runtime import executor as ex
from wfctl.runtime.store import Store


def wf136(run_cli: Any, dsn: str) -> tuple[int, list[dict[str, Any]]]:
    status, out, err = run_cli(
        "--dsn", dsn, "--format", "json", "doctor", "--only", "WF136", "--min-age", "0s"
    )
    assert out, err
    report = json.loads(out)
    (check,) = [c for c in report["checks"] if c["code"] == "WF136"]
    return status, check["samples"]


def lease_expired(conn: Any, run_id: str, bound: float) -> None:
    """Wait (at most `bound` seconds) until the run's lease in wfctl.run_queue has run out."""
    wait_until(
        lambda: bool(
            conn.execute(
                "SELECT lease_until < now() FROM wfctl.run_queue WHERE run_id = %s", (run_id,)
            ).fetchone()[0]
        ),
        bound,
        "the lease to expire",
    )


def test_sigkilled_run_wait_is_reported_and_adopted_by_a_worker(
    world: Any, cworkers: Any, run_cli: Any, tmp_path: Path
) -> None:
    prepare(world)
    env = {**os.environ, "WFCTL_EFFECTS_DSN": world.dsn, "PYTHONUNBUFFERED": "1"}
    for var in ("WFCTL_DATABASE_URL", "WORKFLOW_POSTGRES_URL", "DATABASE_URL"):
        env.pop(var, None)
    log = tmp_path / "run.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "wfctl", "--dsn", world.dsn, "run",
             "tests.worker.clientflows:gate", '["k-1", 2]', "--wait", "--lease", "1s"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err,
        )  # fmt: skip
    try:
        with world.connect() as conn:
            wait_until(lambda: bool(effects(conn, "k-1")), 30, "the gated step to start")
            (run_id,) = [
                str(r[0]) for r in conn.execute("SELECT id FROM workflow.workflow_runs").fetchall()
            ]
            owner = conn.execute(
                "SELECT lease_owner FROM wfctl.run_queue WHERE run_id = %s", (run_id,)
            ).fetchone()
            assert owner is not None and ":drv_" in str(owner[0]), log.read_text()
            # Driven (run lock held, lease live): not reported.
            assert wf136(run_cli, world.dsn) == (0, [])
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
            lease_expired(conn, run_id, 30)
            status, samples = wf136(run_cli, world.dsn)
            assert status == 1, samples
            assert [(s["run_id"], s["entity_id"]) for s in samples] == [(run_id, "lease expired")]
            assert "ran out" in samples[0]["detail"]
            # A worker's recovery adopts it; the gated step runs again and the run completes.
            cworkers(world.dsn).worker_id()
            open_gate(conn, "k-1")
            wait_until(lambda: statuses(conn, [run_id]) == {run_id: "completed"}, 60, "completion")
            assert conn.execute(
                "SELECT count(*) FROM wfctl.run_queue WHERE run_id = %s", (run_id,)
            ).fetchone() == (0,)
        assert wf136(run_cli, world.dsn) == (0, [])
    finally:
        if proc.poll() is None:
            proc.kill()


def test_unqueued_run_is_reported_and_repair_hands_it_to_workers(
    world: Any, cworkers: Any, run_cli: Any
) -> None:
    prepare(world)
    with world.connect() as conn:
        run_id = ex.create(cf.doubled, [4], conn=conn).run_id  # no queue, nobody drives it
        # A session holding the run lock is driving it: not reported.
        store = Store(conn)
        assert store.try_lock_run(run_id)
        assert wf136(run_cli, world.dsn) == (0, [])
        store.unlock_run(run_id)
        status, samples = wf136(run_cli, world.dsn)
        assert status == 1 and [(s["run_id"], s["entity_id"]) for s in samples] == [
            (run_id, "not queued")
        ]
        # Dry run: the plan, nothing written.
        _, out, err = run_cli(
            "--dsn", world.dsn, "--format", "json", "repair", "--only", "WF136",
            "--min-age", "0s", "--force-min-age",
        )  # fmt: skip
        plan = json.loads(out)
        assert [i["outcome"] for i in plan["items"]] == ["planned"], out + err
        assert conn.execute("SELECT count(*) FROM wfctl.run_queue").fetchone() == (0,)
        _code, out, err = run_cli(
            "--dsn", world.dsn, "--format", "json", "repair", "--only", "WF136", "--apply",
            "--yes", "--reason", "adopt", "--min-age", "0s", "--force-min-age",
        )  # fmt: skip
        report = json.loads(out)
        # One apply converges: it re-detects after writing, finds the run now 'unserved'
        # (ready, but no worker serves it) and refuses that, so its exit is doctor's.
        assert [(i["entity_id"], i["outcome"]) for i in report["items"]] == [
            ("not queued", "applied"),
            ("unserved", "refused"),
        ], out + err
        row = conn.execute(
            "SELECT queue, lease_owner FROM wfctl.run_queue WHERE run_id = %s", (run_id,)
        ).fetchone()
        assert row == ("default", None)
        # No worker yet: now reported as ready in a queue no worker serves (report only).
        status, samples = wf136(run_cli, world.dsn)
        assert [s["entity_id"] for s in samples] == ["unserved"]
        cworkers(world.dsn).worker_id()
        wait_until(lambda: statuses(conn, [run_id]) == {run_id: "completed"}, 60, "completion")
    assert wf136(run_cli, world.dsn) == (0, [])


def test_run_without_wait_hands_a_parked_run_back_unreported(
    world: Any, cworkers: Any, run_cli: Any
) -> None:
    """`wfctl run` (no --wait) leaves a run blocked on a hook parked in the queue (ready_at
    NULL): waiting on purpose, not reported; a worker takes it once the hook is resumed."""
    prepare(world)
    status, out, err = run_cli(
        "--dsn", world.dsn, "--format", "json", "run", "tests.worker.clientflows:waiting",
        '["tok-park"]',
    )  # fmt: skip
    assert status == 0, out + err
    run_id = json.loads(out)["run_id"]
    with world.connect() as conn:
        row = conn.execute(
            "SELECT lease_owner, ready_at FROM wfctl.run_queue WHERE run_id = %s", (run_id,)
        ).fetchone()
        assert row == (None, None)
        assert wf136(run_cli, world.dsn) == (0, [])
        cworkers(world.dsn).worker_id()
        status, out, err = run_cli("--dsn", world.dsn, "hooks", "resume", "tok-park", '{"ok": 1}')
        assert status == 0, out + err
        wait_until(lambda: statuses(conn, [run_id]) == {run_id: "completed"}, 60, "completion")


def test_repair_clears_an_expired_lease_and_refuses_an_unserved_run(
    world: Any, run_cli: Any
) -> None:
    """'lease expired' with no worker to recover it: the repair clears the lease (ready now,
    as a worker's recovery would); the run is then 'unserved', which needs a worker, not a
    write: refused, nothing written."""
    from wfctl.runtime import lease

    prepare(world)
    with world.connect() as conn:
        run_id = ex.create(cf.doubled, [1], conn=conn).run_id
        held = lease.hold(conn, run_id, cf.doubled.name, lease=0.3)
        assert held.held
        lease_expired(conn, run_id, 10)
        _, samples = wf136(run_cli, world.dsn)
        assert [s["entity_id"] for s in samples] == ["lease expired"]
        apply = ("repair", "--only", "WF136", "--apply", "--yes", "--reason", "t",
                 "--min-age", "0s", "--force-min-age")  # fmt: skip
        _, out, err = run_cli("--dsn", world.dsn, "--format", "json", *apply)
        # The same apply re-detects and refuses the run now 'unserved' (one apply converges).
        assert [(i["entity_id"], i["outcome"]) for i in json.loads(out)["items"]] == [
            ("lease expired", "applied"),
            ("unserved", "refused"),
        ], out + err
        row = conn.execute(
            "SELECT lease_owner, ready_at <= now(), recoveries FROM wfctl.run_queue"
            " WHERE run_id = %s",
            (run_id,),
        ).fetchone()
        assert row == (None, True, 1)
        _, samples = wf136(run_cli, world.dsn)
        assert [s["entity_id"] for s in samples] == ["unserved"]
        _, out, err = run_cli("--dsn", world.dsn, "--format", "json", *apply)
        items = json.loads(out)["items"]
        assert [i["outcome"] for i in items] == ["refused"], out + err
        assert "start a `wfctl worker`" in items[0]["reason"]
