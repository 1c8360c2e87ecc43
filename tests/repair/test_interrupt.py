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
import pty
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from tests import realworld as rw
from tests.checks.test_wf101 import orphan_step
from tests.checks.test_wf135 import lock
from tests.conftest import ROOT, Db
from tests.corpus.snapshot import digests
from tests.repair.conftest import FORCE

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
    assert report["interrupted_during"] == "repair" and report["exit_code"] == 130
    line = err.strip().splitlines()[-1]
    assert line.startswith(
        "wfctl: interrupted during the repair of runs: stopped starting runs;"
        f" {len(applied)} finding(s) repaired before the signal, listed above"
    )


# A signal before any run is repaired: during detection (doctor's read-only pass), during the
# release of stale queue locks, during a dry run, at the confirmation prompt. Each still ends
# with the report (or one line) saying what was written, and exit 130.


def wfctl(db: Db, *args: str, **popen: Any) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("DATABASE_URL")}
    defaults: dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    return subprocess.Popen(
        [sys.executable, "-m", "wfctl", "--dsn", db.dsn, *args],
        text=True, cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"},
        **{**defaults, **popen},
    )  # fmt: skip


def until(done: Callable[[], bool], proc: subprocess.Popen[str]) -> None:
    """Poll `done` (not a guessed delay) while wfctl runs; liveness bound only."""
    deadline = time.monotonic() + BOUND
    while not done():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "wfctl never got there"
        time.sleep(0.05)


def waits_on_a_lock(db: Db, kind: str = "relation", who: str = "wfctl/%") -> bool:
    """A session of `who` waits for a heavyweight lock of `kind` (a table another session
    holds: "relation"; an advisory lock: "advisory")."""
    return bool(
        db.scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND application_name LIKE %s AND wait_event_type = 'Lock' AND wait_event = %s",
            (who, kind),
        )
    )


STEPS_LOCKED = "LOCK TABLE workflow.workflow_steps IN ACCESS EXCLUSIVE MODE"
APPLY = ("--apply", "--yes", "--reason", "t", *FORCE)


def held_in_transaction(db: Db, statement: str) -> psycopg.Connection[Any]:
    """A session holding `statement`'s lock until it is closed (the caller closes it)."""
    conn = psycopg.connect(db.dsn, application_name=HOLDER)  # the lock lasts the transaction
    conn.execute(statement)
    return conn


HOLDER = "test-holder"


def signalled_while_blocked(
    db: Db, statement: str, *args: str, signum: int = signal.SIGINT, kind: str = "relation"
) -> tuple[int, str, str]:
    """`wfctl --lock-timeout 0 ARGS` blocked behind the lock `statement` takes in another
    session (a wait of `kind`), then sent `signum`: (exit status, stdout, stderr)."""
    holder = held_in_transaction(db, statement)
    try:
        proc = wfctl(db, "--lock-timeout", "0", *args)
        until(lambda: waits_on_a_lock(db, kind), proc)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=BOUND)
    finally:
        holder.close()
    return proc.returncode, out, err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_detection_prints_a_report_and_writes_nothing(
    world, real_world, signum: int
) -> None:
    run_id, _ = orphan_step(world, real_world)  # something the apply would repair
    before = digests(real_world.dsn)
    status, out, err = signalled_while_blocked(  # doctor's WF101 query waits
        real_world, STEPS_LOCKED, "--format", "json", "repair", *APPLY, signum=signum
    )
    assert status == 130, (out, err)
    assert "Traceback" not in err and "internal error" not in err, err
    report = json.loads(out)
    assert report["interrupted"] is True and report["interrupted_during"] == "detection"
    assert report["applied"] is True and report["items"] == [] and report["exit_code"] == 130
    # the one line, nothing else (no driver warning, no traceback)
    assert err.strip().splitlines() == ["wfctl: interrupted during detection: nothing written"]
    assert digests(real_world.dsn) == before  # no audit row, no event, nothing
    assert run_id not in healed(real_world)


def test_a_signal_during_detection_on_a_world_wfctl_never_saw(real_world) -> None:
    """On a world without schema `wfctl` the apply creates its audit log first (one committed
    transaction, before detection): the line says so, and nothing else was written."""
    before = digests(real_world.dsn)
    status, out, err = signalled_while_blocked(
        real_world, STEPS_LOCKED, "--format", "json", "repair", *APPLY
    )
    assert status == 130, (out, err)
    report = json.loads(out)
    assert report["interrupted_during"] == "detection" and report["items"] == []
    assert "created schema `wfctl` for the repair audit log" in err
    assert err.strip().splitlines()[-1] == (
        "wfctl: interrupted during detection: nothing written but the empty audit log"
        " (schema `wfctl`), created first"
    )
    after = digests(real_world.dsn)
    assert after["wfctl.repair_log"] == "0:"  # empty
    assert {k: v for k, v in after.items() if not k.startswith(("wfctl.", "<"))} == {
        k: v for k, v in before.items() if not k.startswith("<")
    }


def test_a_signal_during_detection_in_text_says_so(world, real_world) -> None:
    """In text, and with -v: a signal is not a failure, so no traceback either."""
    orphan_step(world, real_world)
    status, out, err = signalled_while_blocked(real_world, STEPS_LOCKED, "-v", "repair", *APPLY)
    assert status == 130, (out, err)
    assert "nothing to repair" not in out  # not a verdict: detection never finished
    assert "interrupted during detection" in out and "Traceback" not in err
    assert err.strip().splitlines()[-1] == "wfctl: interrupted during detection: nothing written"


LOCKS = 6
GATE = 4242  # advisory lock key the test holds to stop an audit insert where it wants


def gate_audit(db: Db, after: int) -> None:
    """From the `after`-th audit row on (committed rows only: each insert sees those), the
    audit insert waits for the advisory lock GATE: a transaction of wfctl's stops in flight,
    deterministically, where the test holds the gate."""
    with db.connect() as conn:
        conn.execute(
            "CREATE FUNCTION wfctl.gated_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            f" IF (SELECT count(*) FROM wfctl.repair_log) >= {after} THEN"
            f" PERFORM pg_advisory_xact_lock({GATE}); END IF; RETURN NEW; END $$"
        )
        conn.execute(
            "CREATE TRIGGER gated_audit BEFORE INSERT ON wfctl.repair_log"
            " FOR EACH ROW EXECUTE FUNCTION wfctl.gated_audit()"
        )


def dead_workers_locks(world: rw.RealWorld, db: Db) -> set[str]:
    """LOCKS healthy runs whose queue job a dead worker locked 40 minutes ago; job ids."""
    runs = [world.new_run() for _ in range(LOCKS)]
    world.ok([rw.queue(rw.WORKFLOW, {"runId": run_id}) for run_id in runs])
    return {str(lock(db, run_id, "worker-dead", 40)) for run_id in runs}


def released_and_audited(db: Db) -> tuple[set[str], set[str]]:
    with db.connect() as conn:
        free = conn.execute(
            "SELECT id::text FROM graphile_worker._private_jobs WHERE locked_by IS NULL"
        ).fetchall()
        audit = conn.execute(
            "SELECT entity_id FROM wfctl.repair_log WHERE code = 'WF135'"
        ).fetchall()
    return {r[0] for r in free}, {r[0] for r in audit}


def read_until(proc: subprocess.Popen[str], text: str) -> str:
    """wfctl's stderr up to `text` (liveness bound only)."""
    assert proc.stderr is not None
    seen, deadline = "", time.monotonic() + BOUND
    while text not in seen:
        ready, _, _ = select.select([proc.stderr], [], [], 1.0)
        assert time.monotonic() < deadline, seen
        if ready:
            chunk = os.read(proc.stderr.fileno(), 4096).decode()
            assert chunk, seen
            seen += chunk
    return seen


@pytest.mark.parametrize(
    ("signum", "twice"), [(signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGINT, True)]
)
def test_a_signal_during_the_release_of_stale_locks_reports_the_released_ones(
    world, real_world, signum: int, twice: bool
) -> None:
    """The first lock released (committed), the second in flight (its audit insert waits on
    the gate), then the signal: the second release commits and nothing starts after it; a
    second signal instead rolls the second release back at once. Either way the report lists
    exactly what the database shows released and audited, and no run is repaired."""
    jobs = dead_workers_locks(world, real_world)
    gate_audit(real_world, after=1)
    gate = held_in_transaction(real_world, f"SELECT pg_advisory_xact_lock({GATE})")
    try:
        proc = wfctl(real_world, "--lock-timeout", "0", "--format", "json", "repair", "--apply",
                     "--yes", "--reason", "t", *FORCE, "--unlock-older-than", "30m")  # fmt: skip
        until(lambda: waits_on_a_lock(real_world, "advisory"), proc)  # the second release
        proc.send_signal(signum)
        seen = read_until(proc, "stopping once the transaction in flight ends")
        if twice:
            proc.send_signal(signum)
        else:
            gate.close()
        out, err = proc.communicate(timeout=BOUND)
        err = seen + err
    finally:
        gate.close()
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err and "internal error" not in err, err
    report = json.loads(out)
    assert report["interrupted"] is True and report["interrupted_during"] == "unlock"
    applied = [i for i in report["items"] if i["outcome"] == "applied"]
    assert {i["code"] for i in applied} == {"WF135"}  # no run repaired
    reported = {i["entity_id"] for i in applied}
    free, audit = released_and_audited(real_world)
    # the report lists exactly the locks the database shows released and audited
    assert reported == free & jobs == audit, (reported, free, audit)
    assert len(reported) == (1 if twice else 2), reported  # none started after the signal
    assert len(report["items"]) == len(applied) and None not in {i["audit_id"] for i in applied}
    assert err.strip().splitlines()[-1] == (
        f"wfctl: interrupted during the release of stale locks: {len(reported)} lock(s) "
        "released, listed above; no run repaired"
    )


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_a_dry_run_interrupted_writes_nothing(world, real_world, fmt: str) -> None:
    orphan_step(world, real_world)
    before = digests(real_world.dsn)
    status, out, err = signalled_while_blocked(
        real_world, STEPS_LOCKED, "--format", fmt, "repair", *FORCE
    )
    assert status == 130, (out, err)
    assert "Traceback" not in err and "internal error" not in err, err
    assert err.strip().splitlines() == ["wfctl: interrupted: dry run, nothing written"]
    if fmt == "json":
        report = json.loads(out)
        assert report["applied"] is False and report["interrupted"] is True
        assert report["interrupted_during"] == "detection" and report["items"] == []
        assert report["exit_code"] == 130
    assert digests(real_world.dsn) == before


def test_ctrl_c_at_the_prompt_writes_nothing(world, real_world) -> None:
    run_id, _ = orphan_step(world, real_world)
    before = digests(real_world.dsn)
    primary, secondary = pty.openpty()
    try:
        proc = wfctl(real_world, "repair", "--apply", "--reason", "t", *FORCE, stdin=secondary)
        assert proc.stderr is not None
        seen = ""
        while "[y/N]" not in seen:  # the question (no newline after it): read what comes
            chunk = os.read(proc.stderr.fileno(), 4096).decode()
            assert chunk, seen
            seen += chunk
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=BOUND)
    finally:
        os.close(primary)
        os.close(secondary)
    assert proc.returncode == 130, (out, seen + err)
    assert f"WF101 run {run_id}" in seen  # the plan was shown
    assert "Traceback" not in err and "Aborted" not in err
    assert err.strip().splitlines()[-1] == (
        "wfctl: interrupted at the confirmation prompt: nothing written"
    )
    assert digests(real_world.dsn) == before


def test_a_signal_during_the_detection_after_a_round_lists_what_the_round_wrote(
    world, real_world
) -> None:
    """The apply's second detection (after a round that wrote) is interrupted: the report
    lists the round's repair, and says nothing else was written. Made deterministic with
    locks: the round's audit insert waits on an advisory lock the test holds; meanwhile the
    test queues LOCK TABLE workflow_events behind the round's transaction, then lets it
    commit: the lock is granted at that commit, before the next detection reads the table."""
    run_id, _ = orphan_step(world, real_world)
    gate_audit(real_world, after=0)
    gate = held_in_transaction(real_world, f"SELECT pg_advisory_xact_lock({GATE})")
    events_lock = psycopg.connect(real_world.dsn, application_name=HOLDER)
    queued = threading.Thread(
        target=events_lock.execute,
        args=("LOCK TABLE workflow.workflow_events IN ACCESS EXCLUSIVE MODE",),
    )
    try:
        proc = wfctl(real_world, "--lock-timeout", "0", "--format", "json", "repair",
                     "--apply", "--yes", "--reason", "t", *FORCE, "--only", "WF101")  # fmt: skip
        until(lambda: waits_on_a_lock(real_world, "advisory"), proc)  # the round's audit row
        queued.start()
        until(lambda: waits_on_a_lock(real_world, "relation", HOLDER), proc)
        gate.close()  # the round commits; the table lock is granted
        until(lambda: waits_on_a_lock(real_world), proc)  # the next detection waits
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=BOUND)
    finally:
        gate.close()
        queued.join(BOUND)
        events_lock.close()
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err and "internal error" not in err, err
    report = json.loads(out)
    assert report["interrupted"] is True and report["interrupted_during"] == "detection"
    assert [(i["code"], i["run_id"], i["outcome"]) for i in report["items"]] == [
        ("WF101", run_id, "applied")
    ]
    assert report["rounds"] == 1 and report["after"] == {}
    assert audited(real_world) == healed(real_world) == {run_id}
    assert err.strip().splitlines()[-1] == (
        "wfctl: interrupted during detection: 1 finding(s) repaired before the signal, listed"
        " above; nothing else written"
    )


def test_a_signal_while_creating_the_audit_schema_writes_nothing(real_world) -> None:
    """A world wfctl never saw: the apply first creates schema `wfctl` (its audit log), in
    one transaction under wfctl's schema lock, before any detection. A signal while it waits
    for that lock (another wfctl holds it): nothing written, and said so."""
    before = digests(real_world.dsn)
    assert "wfctl" not in before["<schemas>"].split(",")
    status, out, err = signalled_while_blocked(
        real_world, "SELECT pg_advisory_xact_lock(2003199860, 1935894637)",  # wfctl's schema lock
        "--format", "json", "repair", *APPLY, signum=signal.SIGTERM, kind="advisory",
    )  # fmt: skip
    assert status == 130, (out, err)
    assert out == "" and "Traceback" not in err and "internal error" not in err, err
    assert err.strip().splitlines()[-1] == (
        "wfctl: interrupted while creating schema `wfctl` for the repair audit log: nothing written"
    )
    assert digests(real_world.dsn) == before


def blocked_in_the_plan(
    db: Db, proc_args: tuple[str, ...], **popen: Any
) -> tuple[subprocess.Popen[str], psycopg.Connection[Any]]:
    """wfctl started with `proc_args`, left waiting in the plan (after detection): the dry run
    rehearses the apply, whose lock of the step row waits behind a session holding it (FOR
    UPDATE). The caller closes the returned session (it holds the row)."""
    steps = held_in_transaction(db, "SELECT 1 FROM workflow.workflow_steps FOR UPDATE")
    proc = wfctl(db, "--lock-timeout", "0", *proc_args, **popen)
    try:
        until(lambda: waits_on_a_lock(db, "transactionid"), proc)  # the plan, on the step row
    except BaseException:
        proc.kill()
        raise
    return proc, steps


def test_a_dry_run_interrupted_while_planning_prints_the_plan_so_far(world, real_world) -> None:
    orphan_step(world, real_world)
    before = digests(real_world.dsn)
    proc, steps = blocked_in_the_plan(real_world, ("--format", "json", "repair", *FORCE))
    try:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=BOUND)
    finally:
        steps.close()
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err and "internal error" not in err, err
    report = json.loads(out)
    assert report["interrupted"] is True and report["interrupted_during"] == "plan"
    assert report["applied"] is False and report["items"] == []  # its only run was in planning
    assert err.strip().splitlines()[-1] == "wfctl: interrupted: dry run, nothing written"
    assert digests(real_world.dsn) == before


def test_ctrl_c_while_the_prompt_s_plan_is_computed_writes_nothing(world, real_world) -> None:
    orphan_step(world, real_world)
    before = digests(real_world.dsn)
    primary, secondary = pty.openpty()
    try:
        proc, steps = blocked_in_the_plan(
            real_world, ("repair", "--apply", "--reason", "t", *FORCE), stdin=secondary
        )
        try:
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=BOUND)
        finally:
            steps.close()
    finally:
        os.close(primary)
        os.close(secondary)
    assert proc.returncode == 130, (out, err)
    assert out == "" and "Traceback" not in err and "[y/N]" not in err, err
    assert err.strip().splitlines()[-1] == (
        "wfctl: interrupted while planning, before the question: nothing written"
    )
    assert digests(real_world.dsn) == before
