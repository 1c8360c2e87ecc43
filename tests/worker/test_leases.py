"""Leases with real processes: a booting worker never takes a live lease, a killed worker's
runs resume elsewhere within lease timeout + margin, SIGTERM hands runs back and exits 0,
cancellation stops a held run at its next step, per-workflow limits hold across workers."""

from __future__ import annotations

import json
import time
from typing import Any

from tests.worker import flows
from tests.worker.conftest import (
    doctor_clean,
    effects,
    lease_owner,
    prepare,
    start,
    statuses,
    wait_until,
)

LEASE = 1.5
# Recovery runs every lease/3, so an idle machine resumes within LEASE + 0.5 s; the bound is
# a liveness bound (a stuck recovery fails it), loose enough for a loaded 2-core CI box.
MARGIN = 15.0


def test_booting_worker_never_takes_a_live_lease(beta_world: Any, workers: Any) -> None:
    prepare(beta_world)
    with beta_world.connect() as conn:
        # The run holds A's lease in its first step until the gate opens, however long B
        # takes to boot on a loaded machine (a run of timed steps could end before B is up).
        run_id = start(conn, flows.gated, "boot", 8)
        a = workers(beta_world.dsn, "--lease", f"{LEASE}s", "--concurrency", "1")
        a_id = a.worker_id()
        wait_until(lambda: lease_owner(conn, run_id) == a_id, 15, "worker A's lease")
        b = workers(beta_world.dsn, "--lease", f"{LEASE}s", "--concurrency", "2")
        b.worker_id()
        owners = set()
        # B is serving: watch it claim while the step outlives several leases (A renews), then
        # let the run go. The window is not asserted on; it only gives B chances to steal.
        watch_until = time.monotonic() + 3 * LEASE
        while time.monotonic() < watch_until:
            owners.add(lease_owner(conn, run_id))
            time.sleep(0.02)
        flows.open_gate(conn, "boot")
        while statuses(conn, [run_id])[run_id] not in ("completed", "failed"):
            owners.add(lease_owner(conn, run_id))
            time.sleep(0.02)
        owners.discard(None)  # the row goes with the terminal event
        assert owners == {a_id}
        assert {pid for _, pid in effects(conn, "boot")} == {a.pid}
        assert len(effects(conn, "boot")) == 8
        assert statuses(conn, [run_id])[run_id] == "completed"
        assert a.term() == 0 and b.term() == 0


def test_killed_worker_runs_resume_elsewhere(beta_world: Any, workers: Any, run_cli: Any) -> None:
    prepare(beta_world)
    with beta_world.connect() as conn:
        # Each run holds in its first step until its gate opens: A cannot finish them before
        # B is up and A is killed, however slow the machine.
        runs = [start(conn, flows.gated, f"kill{i}", 6) for i in range(2)]
        a = workers(beta_world.dsn, "--lease", f"{LEASE}s", "--concurrency", "2")
        a_id = a.worker_id()
        wait_until(
            lambda: all(lease_owner(conn, r) == a_id for r in runs), 15, "A holding both runs"
        )
        b = workers(beta_world.dsn, "--lease", f"{LEASE}s", "--concurrency", "2")
        b_id = b.worker_id()
        a.kill()
        took = wait_until(
            lambda: all(lease_owner(conn, r) == b_id for r in runs), LEASE + MARGIN, "B"
        )
        assert took <= LEASE + MARGIN
        for i in range(2):
            flows.open_gate(conn, f"kill{i}")
        wait_until(lambda: set(statuses(conn, runs).values()) == {"completed"}, 20, "the end")
        for i in range(2):
            pids = [pid for _, pid in effects(conn, f"kill{i}")]
            assert a.pid in pids and b.pid in pids and 6 <= len(pids) <= 7
        assert b.term() == 0
    doctor_clean(run_cli, beta_world.dsn)


def test_sigterm_finishes_the_step_hands_the_run_back_and_exits_0(
    beta_world: Any, workers: Any, run_cli: Any
) -> None:
    prepare(beta_world)
    with beta_world.connect() as conn:
        run_id = start(conn, flows.slow, "term", 1.0, 3)
        a = workers(beta_world.dsn, "--lease", f"{LEASE}s", "--concurrency", "1")
        a_id = a.worker_id()
        wait_until(lambda: len(effects(conn, "term")) == 1, 15, "the first step to start")
        assert a.term(10) == 0
        assert len(effects(conn, "term")) == 1  # the step finished, nothing new started
        steps = conn.execute(
            "SELECT status::text FROM workflow.workflow_steps WHERE run_id = %s", (run_id,)
        ).fetchall()
        assert steps == [("completed",)]
        row = conn.execute(
            "SELECT lease_owner, ready_at <= now() FROM wfctl.run_queue WHERE run_id = %s",
            (run_id,),
        ).fetchone()
        assert row == (None, True)
        assert conn.execute(
            "SELECT count(*) FROM wfctl.workers WHERE worker_id = %s", (a_id,)
        ).fetchone() == (0,)
        assert "SIGTERM" in a.log()
        workers(beta_world.dsn, "--lease", f"{LEASE}s")
        wait_until(lambda: statuses(conn, [run_id])[run_id] == "completed", 20, "completion")
        assert len(effects(conn, "term")) == 3
    doctor_clean(run_cli, beta_world.dsn)


def test_cancel_stops_a_held_run_at_its_next_step(world: Any, workers: Any, run_cli: Any) -> None:
    prepare(world)
    with world.connect() as conn:
        run_id = start(conn, flows.slow, "cancel", 0.2, 100)
        w = workers(world.dsn, "--lease", f"{LEASE}s", "--concurrency", "1")
        w_id = w.worker_id()
        wait_until(lambda: len(effects(conn, "cancel")) >= 2, 15, "a few steps")
        assert lease_owner(conn, run_id) == w_id
        status, _, err = run_cli("--dsn", world.dsn, "runs", "cancel", run_id, "--reason", "t")
        assert status == 0, err
        time.sleep(0.6)
        done = len(effects(conn, "cancel"))
        time.sleep(0.6)
        assert len(effects(conn, "cancel")) == done < 100  # stopped at the next boundary
        assert statuses(conn, [run_id])[run_id] == "cancelled"
        assert conn.execute(
            "SELECT count(*) FROM wfctl.run_queue WHERE run_id = %s", (run_id,)
        ).fetchone() == (0,)
        assert w.alive() and w.term() == 0
    doctor_clean(run_cli, world.dsn)


def test_per_workflow_limit_across_workers(beta_world: Any, workers: Any) -> None:
    prepare(beta_world)
    with beta_world.connect() as conn:
        runs = [start(conn, flows.slow, f"lim{i}", 0.15, 2) for i in range(4)]
        others = [start(conn, flows.chain, f"free{i}", 2) for i in range(3)]
        args = ("--lease", f"{LEASE}s", "--concurrency", "3", "--limit", "slow=1")
        ws = [workers(beta_world.dsn, *args), workers(beta_world.dsn, *args)]
        most = 0
        while set(statuses(conn, runs + others).values()) != {"completed"}:
            row = conn.execute(
                "SELECT count(*) FROM wfctl.run_queue WHERE workflow_name = %s"
                " AND lease_owner IS NOT NULL",
                (flows.slow.name,),
            ).fetchone()
            most = max(most, int(row[0]) if row else 0)
            time.sleep(0.01)
        assert most == 1
        assert all(w.term() == 0 for w in ws)


def test_status_shows_workers_and_queues(beta_world: Any, workers: Any, run_cli: Any) -> None:
    prepare(beta_world)
    with beta_world.connect() as conn:
        run_id = start(conn, flows.slow, "st", 1.0, 2)
        waiting = start(conn, flows.hooked, "st-hook")
        w = workers(beta_world.dsn, "--lease", "3s", "--concurrency", "2")
        w_id = w.worker_id()
        wait_until(lambda: lease_owner(conn, run_id) == w_id, 15, "the lease")
        wait_until(
            lambda: (
                conn.execute(
                    "SELECT ready_at IS NULL AND lease_owner IS NULL FROM wfctl.run_queue"
                    " WHERE run_id = %s",
                    (waiting,),
                ).fetchone()
                == (True,)
            ),
            15,
            "the hooked run to park",
        )
        status, out, err = run_cli("--dsn", beta_world.dsn, "--format", "json", "worker", "status")
        assert status == 0, err
        report = json.loads(out)
        (me,) = report["workers"]
        assert me["worker_id"] == w_id and me["pid"] == w.pid and me["held"] == 1
        (queue,) = report["queues"]
        assert queue["queue"] == "default" and queue["leased"] == 1 and queue["parked"] == 1
        assert report["past_lease"] == []
        status, out, _ = run_cli("--dsn", beta_world.dsn, "worker", "status")
        assert status == 0 and "live workers" in out and str(w.pid) in out
        assert w.term() == 0


def test_detach_hands_the_run_to_workers_and_adds_the_tables_where_missing(
    beta_world: Any, workers: Any, run_cli: Any
) -> None:
    prepare(beta_world)
    with beta_world.connect() as conn:  # a database bootstrapped before the worker revision
        conn.execute("DROP TABLE wfctl.run_queue, wfctl.workers, wfctl.hook_inbox")
        conn.execute("DROP TABLE wfctl.hook_types")
        conn.execute("DELETE FROM wfctl.alembic_version WHERE version_num LIKE 'w000%%_wfctl_%%'")
    status, out, err = run_cli(
        "--dsn",
        beta_world.dsn,
        "--format",
        "json",
        "run",
        "tests.worker.flows:wf.chain",
        '["det", 3]',
        "--detach",
    )
    assert status == 0, err
    assert "worker's queue tables" in err
    run_id = json.loads(out)["run_id"]
    with beta_world.connect() as conn:
        versions = {r[0] for r in conn.execute("SELECT version_num FROM wfctl.alembic_version")}
        assert versions == {"w0002_world_beta29", "w0006_wfctl_hooks"}
        w = workers(beta_world.dsn, "--lease", f"{LEASE}s")
        wait_until(lambda: statuses(conn, [run_id])[run_id] == "completed", 15, "completion")
        assert w.term() == 0
    status, out, _ = run_cli("--dsn", beta_world.dsn, "--format", "json", "bootstrap")
    assert status == 0 and json.loads(out)["action"] == "unchanged"


def test_a_database_at_w0004_gets_the_served_names_column(
    beta_world: Any, workers: Any, run_cli: Any
) -> None:
    """A database a wfctl before w0005 set up: the next `wfctl worker` adds
    `wfctl.workers.workflows` (wfctl's branch only) and records the names it serves."""
    with beta_world.connect() as conn:
        conn.execute("ALTER TABLE wfctl.workers DROP COLUMN workflows")
        conn.execute("DROP TABLE wfctl.hook_inbox, wfctl.hook_types")  # w0006's
        conn.execute(
            "UPDATE wfctl.alembic_version SET version_num = 'w0004_wfctl_worker'"
            " WHERE version_num = 'w0006_wfctl_hooks'"
        )
        status, out, err = run_cli("--dsn", beta_world.dsn, "--format", "json", "worker", "status")
        assert status == 0, err
        assert json.loads(out)["unserved"] is None  # the names are not recorded yet
        w = workers(beta_world.dsn)
        w.worker_id()
        assert "worker's queue tables" in w.log()
        versions = {r[0] for r in conn.execute("SELECT version_num FROM wfctl.alembic_version")}
        assert versions == {"w0002_world_beta29", "w0006_wfctl_hooks"}
        row = conn.execute("SELECT workflows FROM wfctl.workers").fetchone()
        assert row is not None and "workflow//py:tests.worker.flows//chain" in row[0]
        assert w.term() == 0
