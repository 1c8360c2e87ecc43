"""`wfctl gc` on real PostgreSQL: a world written by the real package (read back by it
afterwards), and both wfctl eras for the slot marker and hook token retention."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from tests import realworld as rw
from tests.conftest import Db, node_available
from tests.ops.support import age_run, jobs_of, rows_of, status_of
from tests.runtime.test_realread import read_back
from wfctl.ops import flight

needs_node = pytest.mark.skipif(not node_available(), reason="node/npm not found")


def _gc(run_cli, db: Db, *args: str) -> tuple[int, dict, str]:
    status, out, err = run_cli("--dsn", db.dsn, "--format", "json", "gc", *args)
    return status, (json.loads(out) if out.strip() else {}), err


def _stream_chunk(db: Db, run_id: str) -> None:
    """A stream chunk as the world's streamer writes it (reference §6)."""
    with db.connect() as conn:
        conn.execute(
            "INSERT INTO workflow.workflow_stream_chunks (id, stream_id, data, eof, run_id)"
            " VALUES ('chnk_' || %(r)s, 'out', '\\x01', false, %(r)s)",
            {"r": run_id},
        )


@needs_node
def test_gc_deletes_old_terminal_runs_of_a_real_world_and_the_package_still_reads(
    real_world: Db, run_cli
) -> None:
    real = rw.RealWorld(real_world.dsn)
    old_done, ops = rw.completed_run_ops(n_steps=2)
    old_failed, failed_ops = rw.new_run_ops()
    old_cancelled, cancelled_ops = rw.new_run_ops()
    recent_done, recent_ops = rw.completed_run_ops(n_steps=1)
    late_done, late_ops = rw.completed_run_ops(n_steps=1)  # created long ago, ended now
    sleeping, sleep_ops = rw.sleeping_run_ops()
    waiting, hook_ops = rw.hook_waiting_run_ops()
    real.ok(
        ops
        + failed_ops
        + [rw.run_failed(old_failed)]
        + cancelled_ops
        + [rw.run_cancelled(old_cancelled, "test")]
        + recent_ops
        + late_ops
        + sleep_ops
        + hook_ops
        + [rw.queue(rw.WORKFLOW, {"runId": old_done})]
    )
    _stream_chunk(real_world, old_done)
    for run_id in (old_done, old_failed, old_cancelled):
        age_run(real_world, run_id, completed_days=40, created_days=41)
    age_run(real_world, late_done, created_days=60)
    for run_id in (sleeping, waiting):  # live runs, however old, are never garbage
        age_run(real_world, run_id, created_days=90)
    assert jobs_of(real_world, old_done) == 1

    # dry run: counts, writes nothing (and needs no wfctl schema)
    status, plan, _ = _gc(run_cli, real_world, "--older-than", "30d")
    assert status == 0 and plan["applied"] is False
    assert plan["would_delete"]["runs"] == 3
    assert plan["candidates_by_status"] == {"completed": 1, "failed": 1, "cancelled": 1}
    assert plan["would_delete"]["events"] == 9 + 3 + 3  # 2 steps x3 + created, started, end; 3 each
    assert plan["would_delete"]["steps"] == 2
    assert plan["would_delete"]["stream_chunks"] == 1 and plan["would_delete"]["jobs"] == 1
    assert rows_of(real_world, old_done)["workflow_events"] == 9

    # the world was never bootstrapped by wfctl: the apply creates its audit schema first
    assert real_world.scalar("SELECT to_regnamespace('wfctl')::text") is None
    status, done, err = _gc(
        run_cli, real_world, "--older-than", "30d", "--apply", "--reason", "retention", "--yes",
        "--batch", "2",
    )  # fmt: skip
    assert status == 0, err
    assert done["deleted"]["runs"] == 3 and done["complete"] is True
    assert done["deleted"]["events"] == plan["would_delete"]["events"]
    assert done["deleted"]["jobs"] == 1 and done["batches"] == 2
    for run_id in (old_done, old_failed, old_cancelled):
        assert set(rows_of(real_world, run_id).values()) == {0}
    assert jobs_of(real_world, old_done) == 0
    survivors = [recent_done, late_done, sleeping, waiting]
    assert [status_of(real_world, r) for r in survivors] == [
        "completed", "completed", "running", "running",
    ]  # fmt: skip

    # the real package still reads every survivor, and finds nothing of a collected run
    got = read_back(real_world.dsn, [*survivors, old_done])
    assert all(got[r]["ok"] for r in survivors), got
    assert got[recent_done]["events"][-1]["eventType"] == "run_completed"
    assert got[old_done]["ok"] is False and got[old_done]["stage"] == "runs.get"

    # audited: one row per batch, naming the runs
    log = real_world.scalar(
        "SELECT json_agg(details ORDER BY id) FROM wfctl.repair_log WHERE code = 'gc'"
    )
    assert sorted(r for entry in log for r in entry["run_ids"]) == sorted(
        [old_done, old_failed, old_cancelled]
    )
    assert real_world.scalar("SELECT DISTINCT reason FROM wfctl.repair_log") == "retention"

    # idempotent: a second gc finds nothing
    status, again, _ = _gc(
        run_cli, real_world, "--older-than", "30d", "--apply", "--reason", "r", "--yes"
    )
    assert status == 0 and again["candidates"] == 0 and again["deleted"]["runs"] == 0


def _python_runs(db: Db, n: int) -> list[str]:
    """`n` completed runs of the Python runtime (either era), each with one hook disposed."""
    import psycopg

    from tests.runtime import flows
    from wfctl.runtime.executor import Executor, create
    from wfctl.runtime.store import Store

    with psycopg.connect(db.dsn, autocommit=True) as conn:
        flows.reset()
        store = Store(conn)
        ex = Executor(flows.wf, store)
        ids = [create(flows.sequential, [2], conn=conn).run_id for _ in range(n)]
        for run_id in ids:
            ex.drive(run_id, timeout=10)
        ex.close()
    return ids


def test_gc_slot_era_markers_and_retained_hook_tokens(slot_world: Db, run_cli) -> None:
    runs = _python_runs(slot_world, 3)
    kept = runs[0]
    with slot_world.connect() as conn:  # a hook row the world keeps past the run's end
        conn.execute(
            "INSERT INTO workflow.workflow_hooks (run_id, hook_id, token, owner_id, project_id,"
            " environment, token_retention_until) VALUES (%s, 'hook_X', 'tok', '', '', '',"
            " now() + interval '1 day')",
            (kept,),
        )
    for run_id in runs:
        age_run(slot_world, run_id, completed_days=10)
    assert slot_world.scalar("SELECT count(*) FROM workflow.workflow_event_slots") == 3
    status, plan, _ = _gc(run_cli, slot_world, "--older-than", "7d")
    assert plan["would_delete"]["runs"] == 3 and plan["deferred"]["hook_token_retained"] == 1
    assert plan["would_delete"]["slot_markers"] == 3

    status, done, err = _gc(
        run_cli, slot_world, "--older-than", "7d", "--apply", "--reason", "r", "--yes"
    )
    assert status == 0, err
    assert done["deleted"]["runs"] == 2 and done["deleted"]["slot_markers"] == 2
    assert done["deferred"]["hook_token_retained"] == 1
    assert status_of(slot_world, kept) == "completed"
    assert slot_world.scalar("SELECT count(*) FROM workflow.workflow_event_slots") == 1
    assert rows_of(slot_world, kept)["workflow_events"] > 0

    # once the retention has ended, the run goes
    with slot_world.connect() as conn:
        conn.execute("UPDATE workflow.workflow_hooks SET token_retention_until = now()")
    status, done, _ = _gc(
        run_cli, slot_world, "--older-than", "7d", "--apply", "--reason", "r", "--yes"
    )
    assert status == 0 and done["deleted"]["runs"] == 1 and done["deleted"]["hooks"] == 1
    assert set(rows_of(slot_world, kept).values()) == {0}


def test_gc_single_flight_time_budget_and_bad_input(wfctl_world: Db, run_cli) -> None:
    runs = _python_runs(wfctl_world, 4)
    for run_id in runs:
        age_run(wfctl_world, run_id, completed_days=2)

    # another gc holds the lock: refused, named, nothing deleted
    with wfctl_world.connect() as holder:
        holder.execute("SELECT pg_advisory_lock(2003199860, %s)", (flight.GC,))
        status, _, err = _gc(
            run_cli, wfctl_world, "--older-than", "1d", "--apply", "--reason", "r", "--yes"
        )
        assert status == 2 and "another wfctl gc is running: pid" in err
    assert [status_of(wfctl_world, r) for r in runs] == ["completed"] * 4

    # without a terminal, an apply needs --yes: the count is shown, nothing deleted
    status, _, err = _gc(run_cli, wfctl_world, "--older-than", "1d", "--apply", "--reason", "r")
    assert status == 64 and "4 terminal runs" in err and "--yes" in err
    assert [status_of(wfctl_world, r) for r in runs] == ["completed"] * 4

    # a zero time budget starts no batch: exit 1, resumable
    status, out, _ = _gc(
        run_cli, wfctl_world, "--older-than", "1d", "--apply", "--reason", "r", "--yes",
        "--max-time", "0s",
    )  # fmt: skip
    assert status == 1 and out["complete"] is False and out["candidates"] == 4
    status, out, _ = _gc(
        run_cli, wfctl_world, "--older-than", "1d", "--apply", "--reason", "r", "--yes",
        "--batch", "3",
    )  # fmt: skip
    assert status == 0 and out["deleted"]["runs"] == 4 and out["batches"] == 2

    for args, needle in (
        (("--apply",), "--reason"),
        (("--apply", "--dry-run", "--reason", "x"), "exclude"),
        (("--older-than", "soon"), "--older-than"),
        (("--older-than", "0s"), "longer than 0"),
    ):
        status, _, err = _gc(run_cli, wfctl_world, *args)
        assert status == 64 and needle in err, (args, err)


def test_gc_never_deletes_a_run_that_turned_non_terminal_under_its_lock(
    wfctl_world: Db, run_cli
) -> None:
    """The candidate list is read first; a run that is no longer terminal when its batch
    locks it (here: a status rewritten by hand, as a confused operator might) is kept."""
    import psycopg

    from wfctl.ops import gc
    from wfctl.world import model

    runs = _python_runs(wfctl_world, 2)
    for run_id in runs:
        age_run(wfctl_world, run_id, completed_days=2)
    with psycopg.connect(wfctl_world.dsn, autocommit=True) as conn:
        world = model.inspect(conn, with_drift=False)

        def flip(report: gc.GcReport) -> None:
            with wfctl_world.connect() as other:
                other.execute(
                    "UPDATE workflow.workflow_runs SET status = 'running' WHERE id = %s",
                    (runs[0],),
                )

        report = gc.collect(
            conn, world, gc.GcOptions(older_than=timedelta(days=1)), reason="r", on_start=flip
        )
    assert report.candidates == 2 and report.counts["runs"] == 1
    assert report.deferred["busy_or_changed"] == 1
    assert status_of(wfctl_world, runs[0]) == "running"
    assert rows_of(wfctl_world, runs[0])["workflow_events"] > 0


def test_gc_killed_mid_run_leaves_whole_runs_and_resumes(wfctl_world: Db) -> None:
    """SIGKILL while batches commit: every run is either whole (row and all its events) or
    entirely gone, never a log without its run; a second gc finishes the work."""
    import os
    import signal
    import subprocess
    import sys
    import time

    runs, per_run = 3000, 10
    with wfctl_world.connect() as conn:  # old terminal history, set-based (fixture data)
        conn.execute(
            "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name, completed_at,"
            " updated_at, created_at) SELECT 'wrun_H' || lpad(i::text, 8, '0'), 'postgres',"
            " 'completed', 'workflow//history', now() - interval '40 days',"
            " now() - interval '40 days', now() - interval '41 days'"
            " FROM generate_series(1, %s) i",
            (runs,),
        )
        conn.execute(
            "INSERT INTO workflow.workflow_events (id, type, run_id)"
            " SELECT 'wevt_H' || lpad(i::text, 8, '0') || lpad(k::text, 3, '0'), 'attr_set',"
            " 'wrun_H' || lpad(i::text, 8, '0')"
            " FROM generate_series(1, %s) i, generate_series(1, %s) k",
            (runs, per_run),
        )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = [sys.executable, "-m", "wfctl", "--dsn", wfctl_world.dsn, "gc", "--older-than",
            "30d", "--apply", "--reason", "kill test", "--yes", "--batch", "20",
            "--pause", "20ms"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": root}
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while wfctl_world.scalar("SELECT count(*) FROM wfctl.repair_log") < 5:
        assert time.monotonic() < deadline and proc.poll() is None, "gc did not start batches"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)

    left = wfctl_world.scalar("SELECT count(*) FROM workflow.workflow_runs")
    assert 0 < left < runs  # killed in the middle
    orphans = wfctl_world.scalar(
        "SELECT count(*) FROM workflow.workflow_events e WHERE NOT EXISTS"
        " (SELECT 1 FROM workflow.workflow_runs r WHERE r.id = e.run_id)"
    )
    partial = wfctl_world.scalar(
        "SELECT count(*) FROM (SELECT r.id FROM workflow.workflow_runs r"
        " LEFT JOIN workflow.workflow_events e ON e.run_id = r.id"
        " GROUP BY r.id HAVING count(e.id) <> %s) x",
        (per_run,),
    )
    assert orphans == 0 and partial == 0
    audited = wfctl_world.scalar(
        "SELECT sum((details->'deleted'->>'runs')::int) FROM wfctl.repair_log WHERE code = 'gc'"
    )
    assert audited == runs - left  # every committed batch has its audit row, and only those

    done = subprocess.run([*args[:-4]], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert wfctl_world.scalar("SELECT count(*) FROM workflow.workflow_runs") == 0
    assert wfctl_world.scalar("SELECT count(*) FROM workflow.workflow_events") == 0


def test_gc_interrupted_reports_what_it_deleted(wfctl_world: Db) -> None:
    """SIGINT while batches commit: the batch in flight ends whole, the report counts exactly
    the committed batches (as their audit rows do), exit 130, and the last line says so."""
    import os
    import signal
    import subprocess
    import sys
    import time

    runs = 1000
    with wfctl_world.connect() as conn:
        conn.execute(
            "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name, completed_at,"
            " updated_at, created_at) SELECT 'wrun_I' || lpad(i::text, 8, '0'), 'postgres',"
            " 'completed', 'workflow//history', now() - interval '40 days',"
            " now() - interval '40 days', now() - interval '41 days'"
            " FROM generate_series(1, %s) i",
            (runs,),
        )
        conn.execute(
            "INSERT INTO workflow.workflow_events (id, type, run_id)"
            " SELECT 'wevt_I' || lpad(i::text, 8, '0'), 'attr_set', 'wrun_I' || lpad(i::text, 8,"
            " '0') FROM generate_series(1, %s) i",
            (runs,),
        )
    import wfctl

    root = os.path.dirname(os.path.dirname(os.path.abspath(wfctl.__file__)))  # this wfctl
    args = [sys.executable, "-m", "wfctl", "--dsn", wfctl_world.dsn, "--format", "json", "gc",
            "--older-than", "30d", "--apply", "--reason", "sigint test", "--yes", "--batch",
            "10", "--pause", "50ms"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": root}
    proc = subprocess.Popen(
        args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 60
    while wfctl_world.scalar("SELECT count(*) FROM wfctl.repair_log") < 3:
        assert time.monotonic() < deadline and proc.poll() is None, "gc did not start batches"
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    audited = wfctl_world.scalar(
        "SELECT sum((details->'deleted'->>'runs')::int) FROM wfctl.repair_log WHERE code = 'gc'"
    )
    left = wfctl_world.scalar("SELECT count(*) FROM workflow.workflow_runs")
    assert 0 < left < runs and audited == runs - left
    report = json.loads(out)
    assert report["interrupted"] is True and report["deleted"]["runs"] == audited
    assert report["deleted"]["events"] == audited and len(report["audit_ids"]) == report["batches"]
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"wfctl: interrupted during gc: {audited:,} of {runs:,} runs"), err
    assert "Traceback" not in err and "already in progress" not in err
