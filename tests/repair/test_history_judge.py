"""History judges: repairs that rewrite or place events, judged by the REAL runtime.

1. Placement (WF111): a restored step_completed must sort before the hook the workflow
   created after that step returned; the runtime replays the repaired run and finishes it,
   while the same completion appended at the tail makes it fail the run.
2. The revival (WF141, --allow-revive): a run the REAL runtime failed because a late
step_started sorts after its step's completion, revived by wfctl, finished by the runtime.

The shape comes from a clock-skewed second worker re-running a live step (a booting peer):
its step_started is journaled while the step runs, but with an id minted on a clock ahead,
so it sorts after the step's step_completed (beta29-fault-behaviour). The peer's start is
written here by SQL, because the step body (`add`) runs for microseconds and a second
process cannot be made to start it inside that window through the package: it is the row
state that peer leaves (the step's attempt raised, a step_started copied from the step's own
start, its id one second ahead of the completion's clock). Everything else is the real
runtime: it writes the run, replays the log on the next delivery, diverges at the late start
and fails the run itself (its run_failed, its error code, its deleted wait row).
Then `wfctl repair --apply --all --only WF141 --allow-revive` re-mints the start before the
completion, drops the run_failed, reopens the run, restores the wait row the failure deleted,
enqueues a wake-up; the runtime (without its startup recovery) must finish the run.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest

from tests import judge
from tests import realworld as rw
from tests.faults import slow_insert, wait_for_sleeper
from tests.judge import wait_for_status, wait_until
from tests.repair.test_real_judge import (  # noqa: F401  (fixtures)
    FORCE,
    TERMINAL,
    db,
    events,
    findings,
    judge_completion,
    release_dead_workers,
    runtime_folder,
    runtimes,
    wfctl,
)
from wfctl.world import ids

log = logging.getLogger("wfctl.judge")

pytestmark = pytest.mark.skipif(not judge.available(), reason="node/npm not found: no real runtime")


def test_wf141_revived_run_is_finished_by_the_runtime(db, runtimes, wfctl) -> None:  # noqa: F811
    run_id = rw.new_run_id()
    rt = runtimes("first")
    # Hold the sleep's wait row insert: step 1 has completed, the wait is not created yet.
    with db.connect() as conn, slow_insert(conn, "workflow_waits", run_id, None, seconds=3):
        rt.start_run("sleeper", [5], run_id)
        wait_for_sleeper(conn, timeout=20)
        [(step_id,)] = conn.execute(
            "SELECT step_id FROM workflow.workflow_steps WHERE run_id = %s", (run_id,)
        ).fetchall()
        late_id = ids.legacy_event_id(datetime.now(UTC) + timedelta(seconds=1))
        conn.execute(
            "UPDATE workflow.workflow_steps SET attempt = attempt + 1 WHERE step_id = %s",
            (step_id,),
        )
        conn.execute(
            "INSERT INTO workflow.workflow_events"
            " (id, type, correlation_id, run_id, payload_cbor, spec_version)"
            " SELECT %s, type, correlation_id, run_id, payload_cbor, spec_version"
            " FROM workflow.workflow_events WHERE run_id = %s AND correlation_id = %s"
            " AND type = 'step_started'",
            (late_id, run_id, step_id),
        )
    mine = [t for t, c in events(db, run_id) if c == step_id]
    assert mine[-2:] == ["step_completed", "step_started"], mine  # the late start sorts last
    # the runtime replays the log on its next delivery and fails the run itself
    assert wait_for_status(db.dsn, run_id, TERMINAL, timeout=90) == "failed", rt.log_tail()
    rt.stop()
    with db.connect() as conn:
        code = conn.execute(
            "SELECT error_code FROM workflow.workflow_runs WHERE id = %s", (run_id,)
        ).fetchone()[0]
    assert code in ("CORRUPTED_EVENT_LOG", "REPLAY_DIVERGENCE")
    log.info("the runtime failed %s with %s", run_id, code)
    assert findings(wfctl, run_id).get("WF141") == {step_id}

    release_dead_workers(db)
    # without the opt-in: reported, never rewritten
    status, report = wfctl("repair", "--apply", "--yes", "--reason", "judge", *FORCE, "--all")
    mine = [i for i in report["items"] if i["run_id"] == run_id]
    assert {i["outcome"] for i in mine} == {"skipped"}, report
    # the run is still failed over its log: the verdict is doctor's, critical
    assert status == 2 and report["after"].get("WF141") == 1, report
    status, report = wfctl(
        "repair", "--apply", "--yes", "--reason", "judge", *FORCE, "--all",
        "--only", "WF141", "--allow-revive",
    )  # fmt: skip
    [item] = [i for i in report["items"] if i["run_id"] == run_id]
    assert status == 0 and item["outcome"] == "applied", report
    assert any(a.startswith("reopen_failed_run") for a in item["actions"])
    assert item["audit_id"] is not None

    judge_completion(db, wfctl, runtimes, run_id, {"a": 6, "b": 16})
    final = events(db, run_id)
    assert [t for t, c in final if c == step_id] == [
        "step_created",
        "step_started",
        "step_started",
        "step_completed",
    ]
    assert [t for t, _ in final].count("run_failed") == 0
    assert final[-1] == ("run_completed", None)


def _parked_on_the_hook_without_the_step_completed(
    database, rt, run_id: str, x: int
) -> tuple[str, bytes]:
    """`approval(x)` runs to its hook and parks; then its step's step_completed is taken out
    of the log (by SQL: the real runtime writes that completion before it creates the hook,
    in one process, so no fault of its own leaves this order; the row state is exactly the
    torn beta.29 step_completed, row completed and no event). Returns the step id and the
    event's payload."""
    rt.start_run("approval", [x], run_id)
    wait_until(
        lambda: ("hook_created" in [t for t, _ in events(database, run_id)]) or None,
        30,
        "the run to park on its hook",
    )
    with database.connect() as conn:
        [(step_id, payload)] = conn.execute(
            "DELETE FROM workflow.workflow_events WHERE run_id = %s AND type = 'step_completed'"
            " RETURNING correlation_id, payload_cbor",
            (run_id,),
        ).fetchall()
    return str(step_id), bytes(payload)


def test_wf111_completion_placed_before_the_later_hook(db, runtimes, wfctl) -> None:  # noqa: F811
    placed, tail = rw.new_run_id(), rw.new_run_id()
    rt = runtimes("first")
    step_placed, _ = _parked_on_the_hook_without_the_step_completed(db, rt, placed, 41)
    step_tail, payload = _parked_on_the_hook_without_the_step_completed(db, rt, tail, 42)
    rt.stop()
    assert findings(wfctl, placed).get("WF111") == {step_placed}
    release_dead_workers(db)

    # the control: the completion appended at the tail, as the repair used to place it
    with db.connect() as conn:
        conn.execute(
            "INSERT INTO workflow.workflow_events"
            " (id, type, correlation_id, run_id, payload_cbor, spec_version)"
            " SELECT %s, 'step_completed', step_id, run_id, %s, spec_version"
            " FROM workflow.workflow_steps WHERE step_id = %s",
            (ids.legacy_event_id(), payload, step_tail),
        )
    status, report = wfctl(
        "repair", "--apply", "--yes", "--reason", "judge", *FORCE, "--only", "WF111"
    )
    [item] = [i for i in report["items"] if i["run_id"] == placed]
    assert status == 0 and item["outcome"] == "applied", report
    assert any("placed before hook_created" in a for a in item["actions"]), item
    mine = [(t, c) for t, c in events(db, placed)]
    assert mine.index(("step_completed", step_placed)) < [t for t, _ in mine].index("hook_created")

    rt = runtimes("after-repair", JUDGE_REENQUEUE="0")
    assert rt.resume_hook("approve-41", {"ok": True}) == placed
    assert rt.resume_hook("approve-42", {"ok": True}) == tail
    assert wait_for_status(db.dsn, placed, TERMINAL, timeout=60) == "completed", rt.log_tail()
    info = rt.run_info(placed)
    assert info["returnValue"] == {"a": 42, "b": 52, "decision": {"ok": True}}, info
    assert wait_for_status(db.dsn, tail, TERMINAL, timeout=90) == "failed", rt.log_tail()
    rt.stop()
    assert findings(wfctl, placed) == {}
