"""repair's verdict is doctor's: its exit and `after` agree with a `doctor` run right after it
(same scope), one apply converges, and the dry run predicts the apply's refusals.

Worlds are written through the real package (tests/realworld.py); queue locks are set the way
graphile-worker 0.16.6 records a claim, as in test_wf135_locks.py.
"""

from __future__ import annotations

import re
from typing import Any

from tests import realworld as rw
from tests.checks.conftest import hand_written_log
from tests.checks.test_wf101 import orphan_step
from tests.conftest import Db
from tests.corpus.snapshot import digests
from tests.faults import ROW_LOCK, held
from tests.repair.conftest import FORCE, outcomes


def doctor_verdict(doctor_json: Any, db: Db, *args: str) -> tuple[int, dict[str, int]]:
    report = doctor_json(db, *args)
    counts = {c["code"]: c["count"] for c in report["checks"] if c["count"]}
    return report["summary"]["exit_code"], counts


def late_start_run(db: Db) -> str:
    """A run the runtime failed over a step_started after its completion (WF141, report only
    without --allow-revive)."""
    run_id, step_id = rw.new_run_id(), rw.new_step_id()
    hand_written_log(
        db,
        run_id,
        [
            ("run_created", None),
            ("step_created", step_id),
            ("step_started", step_id),
            ("step_completed", step_id),
            ("step_started", step_id),
        ],
    )
    return run_id


def test_after_and_exit_agree_with_doctor_right_after(world, real_world, apply, doctor_json):
    """Left behind by the apply: a WF141 (report only), a WF151 (catalog drift, report only)
    and a WF101 whose run another session holds (refused). Before: `after: none`, exit 0."""
    healed, _ = orphan_step(world, real_world)
    busy, _ = orphan_step(world, real_world)
    late_start_run(real_world)
    with real_world.connect() as conn:
        conn.execute("ALTER TABLE workflow.workflow_runs ADD COLUMN wfctl_extra integer")
    with held(real_world.dsn, ROW_LOCK, (busy,)):
        status, report = apply(real_world, "--all", "--lock-timeout", "200")
    assert outcomes(report)["WF101"].count("applied") == 1, report
    assert outcomes(report)["WF101"].count("refused") == 1
    doctor_status, doctor_counts = doctor_verdict(doctor_json, real_world, "--all")
    assert report["after"] == doctor_counts, (report["after"], doctor_counts)
    assert {"WF101", "WF141", "WF151"} <= set(report["after"])
    assert status == report["exit_code"] == doctor_status == 2
    # once the other session is gone, a second apply heals the busy run; the report-only
    # findings remain, and the verdict still agrees with doctor
    status, report = apply(real_world, "--all")
    assert outcomes(report)["WF101"] == ["applied"]
    doctor_status, doctor_counts = doctor_verdict(doctor_json, real_world, "--all")
    assert report["after"] == doctor_counts and "WF101" not in doctor_counts
    assert status == doctor_status == 2  # WF141 is critical
    # scoped to the healed run: nothing left of it; the catalog drift is world-wide (a
    # warning), and the verdict is doctor's in that scope (exit 1)
    status, report = apply(real_world, "--run", healed)
    doctor_status, doctor_counts = doctor_verdict(doctor_json, real_world, "--run", healed)
    assert report["after"] == doctor_counts == {"WF151": 1}
    assert status == doctor_status == 1


def two_recovery_jobs_one_held_by_a_dead_worker(world: rw.RealWorld, db: Db) -> tuple[str, int]:
    """A crashed runtime's shape: the run's key-less recovery job was being delivered when the
    worker was SIGKILLed (locked 40 min ago), and the next process start enqueued another.
    WF132 cannot see the pile-up while the first is locked (it skips locked jobs)."""
    run_id = world.new_run()
    world.ok([rw.queue(rw.WORKFLOW, {"runId": run_id}), rw.queue(rw.WORKFLOW, {"runId": run_id})])
    with db.connect() as conn:
        row = conn.execute(
            "UPDATE graphile_worker._private_jobs SET locked_by = 'worker-dead',"
            " locked_at = now() - interval '40 minutes', attempts = attempts + 1"
            " WHERE id = (SELECT min(id) FROM graphile_worker._private_jobs"
            "   WHERE convert_from(decode(payload ->> 'data', 'base64'), 'UTF8')::jsonb"
            "   ->> 'runId' = %s) RETURNING id",
            (run_id,),
        ).fetchone()
    assert row is not None
    return run_id, int(row[0])


def test_one_apply_converges_when_a_released_lock_uncovers_findings(
    world, real_world, repair, apply, doctor_json
):
    """`--unlock-older-than` releases the dead worker's lock; that uncovers WF132 (two
    pending key-less jobs for one run), which the same apply repairs: a second apply then
    writes nothing, and doctor right after agrees with the first apply's verdict."""
    run_id, dead_job = two_recovery_jobs_one_held_by_a_dead_worker(world, real_world)
    orphan_step(world, real_world)  # something else to heal in the same apply
    _, before = doctor_verdict(doctor_json, real_world)
    assert "WF132" not in before and "WF135" in before
    # the dry run rehearses the apply: the same rounds, the released lock, the WF132 it uncovers
    dry_status, dry = repair(real_world, *FORCE, "--unlock-older-than", "30m")
    status, report = apply(real_world, "--unlock-older-than", "30m")
    assert (dry_status, dry["rounds"], dry["after"]) == (status, report["rounds"], report["after"])
    assert [(i["code"], i["entity_id"]) for i in dry["items"]] == [
        (i["code"], i["entity_id"]) for i in report["items"]
    ]
    assert {i["outcome"] for i in dry["items"]} == {"planned"}, dry
    got = outcomes(report)
    assert got["WF135"] == ["applied"] and got.get("WF132") == ["applied"], report
    by_code = {i["code"]: i for i in report["items"]}
    assert by_code["WF135"]["entity_id"] == str(dead_job)
    assert by_code["WF132"]["run_id"] == run_id
    assert got["WF101"] == ["applied"]
    assert report["rounds"] >= 2 and report["unfinished"] == ""
    doctor_status, doctor_counts = doctor_verdict(doctor_json, real_world)
    assert report["after"] == doctor_counts == {} and status == doctor_status == 0
    snapshot = digests(real_world.dsn)
    status, again = apply(real_world, "--unlock-older-than", "30m")
    assert status == 0 and [i for i in again["items"] if i["outcome"] == "applied"] == []
    assert digests(real_world.dsn) == {**snapshot, "wfctl.repair_log": snapshot["wfctl.repair_log"]}


def test_the_dry_run_predicts_the_apply_refusals(world, real_world, repair, apply):
    """A run whose job a live worker took 2 minutes ago is refused by the apply (a live
    writer may append the same event): the dry run says so, with the same reason; with
    --unlock-older-than covering a dead worker's lock, both say the run is repaired."""
    live_run, _ = orphan_step(world, real_world)
    world.ok([rw.queue(rw.WORKFLOW, {"runId": live_run})])
    with real_world.connect() as conn:
        conn.execute(
            "UPDATE graphile_worker._private_jobs SET locked_by = 'worker-live',"
            " locked_at = now() - interval '2 minutes'"
        )
    _, plan = repair(real_world, "--min-age", "0s", "--force-min-age", "--only", "WF101")
    status, done = apply(real_world, "--only", "WF101")

    def verdicts(report: dict[str, Any]) -> list[tuple[str, str, str]]:
        return [(i["code"], i["outcome"], i["reason"]) for i in report["items"]]

    assert verdicts(plan) == verdicts(done) and done["items"][0]["outcome"] == "refused"
    assert "locked by worker-live" in plan["items"][0]["reason"] and status == 2
    # the dead-worker case: the dry run does not hold a lock it would release against the run
    with real_world.connect() as conn:
        conn.execute(
            "UPDATE graphile_worker._private_jobs SET locked_by = 'worker-dead',"
            " locked_at = now() - interval '40 minutes'"
        )
    args = ("--only", "WF101", "--unlock-older-than", "30m")
    _, plan = repair(real_world, "--min-age", "0s", "--force-min-age", *args)
    status, done = apply(real_world, *args)
    assert [(c, o) for c, o, _ in verdicts(plan)] == [("WF135", "planned"), ("WF101", "planned")]
    assert [(c, o) for c, o, _ in verdicts(done)] == [("WF135", "applied"), ("WF101", "applied")]
    assert status == 0


def test_a_dead_lock_on_an_ended_runs_job_is_info(world, real_world, doctor_json):
    run_id, ops = rw.completed_run_ops(n_steps=1)
    world.ok([*ops, rw.queue(rw.WORKFLOW, {"runId": run_id})])
    with real_world.connect() as conn:
        conn.execute(
            "UPDATE graphile_worker._private_jobs SET locked_by = 'worker-dead',"
            " locked_at = now() - interval '40 minutes'"
        )
    report = doctor_json(real_world, "--all", "--only", "WF135")
    [check] = report["checks"]
    assert check["status"] == "info" and check["samples"][0]["severity"] == "info"
    assert "the run has ended" in check["samples"][0]["detail"]
    assert report["summary"]["exit_code"] == 0


def test_explain_wf141_names_allow_revive(run_cli) -> None:
    status, out, _ = run_cli("doctor", "--explain", "WF141")
    assert status == 0 and "--allow-revive" in out


def test_the_prompt_shows_the_plan_and_no_writes_nothing(world, real_world) -> None:
    """At a terminal, without --yes: the plan on stderr, then the question; "n" exits 0 and
    writes nothing (not 130: nobody was interrupted)."""
    import os
    import pty
    import subprocess
    import sys

    from tests.conftest import ROOT

    run_id, _ = orphan_step(world, real_world)
    before = digests(real_world.dsn)
    primary, secondary = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.endswith("DATABASE_URL")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "wfctl", "--dsn", real_world.dsn, "repair", "--apply",
         "--reason", "t", "--min-age", "0s", "--force-min-age"],
        stdin=secondary, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    os.write(primary, b"n\n")
    out, err = proc.communicate(timeout=120)
    os.close(primary)
    os.close(secondary)
    assert proc.returncode == 0, (out, err)
    assert f"WF101 run {run_id}" in err and "planned" in err  # the plan, before the question
    assert re.search(r"Apply \d+ planned repair\(s\) to database", err)
    assert err.rstrip().endswith("not applied: nothing written")
    assert digests(real_world.dsn) == before
