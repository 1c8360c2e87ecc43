"""Ctrl-C and SIGTERM stop a repair: with the default --jobs 4, at the signal no run is started,
the runs in flight finish or roll back whole, the report of what was written is printed, exit 130.

Judged on the report and on what the database holds (every run is either repaired and audited
or untouched; the report lists exactly the audited ones), never on timing beyond a generous
bound. Each repaired run is slowed by a trigger (pg_sleep on the audit insert) so the signal
lands while most runs are still to do, on any machine.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests import realworld as rw
from tests.conftest import ROOT, Db

RUNS = 60
SLOW = 0.15  # seconds per repaired run's audit insert (4 sessions: ~2.3 s for all)
BOUND = 60.0  # liveness only: the machine is shared


def orphan_steps(world: rw.RealWorld, db: Db) -> list[str]:
    """RUNS running runs whose step row lost its step_created (WF101), through the package."""
    ops, run_ids = [], []
    for _ in range(RUNS):
        run_id, more = rw.new_run_ops()
        ops += [*more, rw.step_created(run_id, rw.new_step_id(), rw.STEP, rw.devl("[1]"))]
        ops.append(rw.queue(rw.WORKFLOW, {"runId": run_id}))
        run_ids.append(run_id)
    world.ok(ops)
    with db.connect() as conn:
        conn.execute("DELETE FROM workflow.workflow_events WHERE type = 'step_created'")
        conn.execute(
            "CREATE FUNCTION wfctl.slow_audit() RETURNS trigger LANGUAGE plpgsql AS"
            f" $$ BEGIN PERFORM pg_sleep({SLOW}); RETURN NEW; END $$"
        )
        conn.execute(
            "CREATE TRIGGER slow_audit BEFORE INSERT ON wfctl.repair_log"
            " FOR EACH ROW EXECUTE FUNCTION wfctl.slow_audit()"
        )
    return run_ids


def audited(db: Db) -> set[str]:
    with db.connect() as conn:
        rows = conn.execute("SELECT run_id FROM wfctl.repair_log WHERE code = 'WF101'").fetchall()
    return {r[0] for r in rows}


def healed(db: Db) -> set[str]:
    with db.connect() as conn:
        rows = conn.execute(
            "SELECT DISTINCT run_id FROM workflow.workflow_events WHERE type = 'step_created'"
        ).fetchall()
    return {r[0] for r in rows}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_repair_and_prints_what_was_written(
    world, real_world, signum: int
) -> None:
    run_ids = orphan_steps(world, real_world)
    env = {k: v for k, v in os.environ.items() if not k.endswith("DATABASE_URL")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "wfctl", "--dsn", real_world.dsn, "--format", "json", "repair",
         "--apply", "--yes", "--reason", "t", "--min-age", "0s", "--force-min-age",
         "--only", "WF101"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    deadline = time.monotonic() + BOUND
    while not audited(real_world) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=BOUND)
    assert proc.returncode == 130, (out, err)
    assert "interrupted" in err and "Traceback" not in err
    report = json.loads(out)
    assert report["interrupted"] is True
    applied = {i["run_id"] for i in report["items"] if i["outcome"] == "applied"}
    # what the report says was written is exactly what the database holds, run by run
    assert applied == audited(real_world) == healed(real_world)
    assert 0 < len(applied) < RUNS, len(applied)  # it stopped; the rest were never started
    assert {i["run_id"] for i in report["items"]} <= set(run_ids)
