"""The real judge: a run wedged by the REAL runtime, repaired by wfctl, completed by the runtime.

For WF112, WF101 and WF111 each test
1. drives a real workflow (`tests/node/runtime/workflows/judge.ts`, compiled by `wf build`)
   with the real runtime (tests/judge.py) on a world made by the package's own bootstrap, and
   crashes it inside the non-atomic window the seed reports describe: a trigger makes the
   event INSERT sleep, the node process is SIGKILLed and the sleeping backend terminated, so
   the entity write is committed and its event never is (beta29-fault-behaviour.md);
2. restarts the runtime (its startup recovery re-enqueues the run) and shows the wedge the
   way the reference describes it, while doctor reports the code for that entity;
3. stops the runtime, releases the job the killed worker still holds (the operator's step
   after a crash; graphile itself waits 4 hours, and wfctl refuses while a job is locked),
   runs `wfctl repair --apply --only <CODE>` (plus WF133 when doctor says the run has no
   wake-up left);
4. starts the runtime WITHOUT its startup recovery, so only what is in the database (the
   repaired log and the queued jobs) can drive the run, and requires `completed` with the
   right return value (hydrated by the SDK), no duplicate event, and a clean doctor.

Only node/npm missing skips this module (the runtime is npm-installed on first use into
.cache/node-runtime, ~1 minute with a cold npm cache, plus ~12 s for `wf build`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import judge
from tests import realworld as rw
from tests.conftest import Db
from tests.faults import drop_faults, slow_insert, terminate, wait_for_sleeper
from tests.judge import Runtime, stays, wait_for_status, wait_until

pytestmark = pytest.mark.skipif(
    not judge.available(),
    reason="node/npm not found: the real workflow runtime cannot be npm-installed",
)

TERMINAL = {"completed", "failed", "cancelled"}
log = logging.getLogger("wfctl.judge")  # timings and wedge evidence: -o log_cli=true
FORCE = ("--min-age", "0s", "--force-min-age")


# --- fixtures ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runtime_folder() -> Path:
    folder, timings = judge.build_runtime()
    for name, seconds in timings.items():
        log.info("%s %.1fs", name, seconds)
    return folder


@pytest.fixture
def db(world: rw.RealWorld, real_world: Db) -> Db:
    """The real-package world, adopted by wfctl (audit schema); faults dropped afterwards."""
    return real_world


@pytest.fixture
def runtimes(db: Db, tmp_path: Path, runtime_folder: Path) -> Iterator[Callable[..., Runtime]]:
    """start(name, **env) -> a started Runtime on `db`; every one is stopped at teardown and
    its log printed (pytest shows it when the test fails)."""
    started: list[Runtime] = []

    def start(name: str, **env: str) -> Runtime:
        rt = Runtime(db.dsn, tmp_path, env, name=name, folder=runtime_folder)
        started.append(rt)
        return rt.start()

    yield start
    for rt in started:
        rt.stop()
        print(rt.log_tail(4000))


@pytest.fixture
def wfctl(run_cli: Any, db: Db) -> Callable[..., tuple[int, Any]]:
    """wfctl(*args) -> (exit status, parsed JSON output), against `db`."""

    def run(*args: str) -> tuple[int, Any]:
        status, out, err = run_cli("--dsn", db.dsn, "--format", "json", *args)
        assert out, err
        return status, json.loads(out)

    return run


# --- helpers -------------------------------------------------------------------------------------


def findings(wfctl: Callable[..., tuple[int, Any]], run_id: str) -> dict[str, set[str]]:
    """`doctor --all --min-age 0s`, for one run: {code: {entity ids}} (the test database
    holds that run only, so the 5 samples a check keeps are all of them)."""
    _, report = wfctl("doctor", "--all", "--min-age", "0s")
    found: dict[str, set[str]] = {}
    for check in report["checks"]:
        for sample in check["samples"]:
            if sample.get("run_id") == run_id:
                found.setdefault(check["code"], set()).add(sample["entity_id"])
    return found


def events(db: Db, run_id: str) -> list[tuple[str, str | None]]:
    """(type, correlation_id) in log order."""
    with db.connect() as conn:
        rows = conn.execute(
            "SELECT type, correlation_id FROM workflow.workflow_events WHERE run_id = %s"
            " ORDER BY id",
            (run_id,),
        ).fetchall()
    return [(r[0], r[1]) for r in rows]


def crash_inside_event_insert(
    db: Db, rt: Runtime, run_id: str, event_type: str, workflow: str, args: list[Any]
) -> None:
    """Start `workflow` as `run_id`; when its first `event_type` INSERT is in flight, SIGKILL
    the runtime and terminate that backend: the entity write before it stays committed."""
    with db.connect() as conn:
        slow_insert(conn, "workflow_events", run_id, event_type, seconds=60)
        rt.start_run(workflow, args, run_id)
        pid = wait_for_sleeper(conn, timeout=20)
        rt.kill()
        terminate(conn, pid)
        drop_faults(conn)
        wait_until(
            lambda: (
                not conn.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
            ),
            5,
            "the terminated backend to exit",
        )


def release_dead_workers(db: Db) -> list[str]:
    """Every runtime we started is stopped: a job still locked is held by a worker we killed.
    Release it with graphile-worker's own admin function (what an operator does after a
    crash instead of waiting graphile's 4-hour lock expiry)."""
    with db.connect() as conn:
        dead = [
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT locked_by FROM graphile_worker._private_jobs"
                " WHERE locked_by IS NOT NULL"
            ).fetchall()
        ]
        if dead:
            conn.execute("SELECT graphile_worker.force_unlock_workers(%s::text[])", (dead,))
    return dead


def repair(wfctl: Callable[..., tuple[int, Any]], run_id: str, code: str) -> dict[str, Any]:
    """`repair --apply` for `code` (+ WF133 when the run has no wake-up); all applied."""
    codes = [code]
    if "WF133" in findings(wfctl, run_id):
        codes.append("WF133")
    status, report = wfctl(
        "repair", "--apply", "--yes", "--reason", "judge", *FORCE, "--only", ",".join(codes)
    )
    mine = [i for i in report["items"] if i["run_id"] == run_id]
    assert status == 0, report
    assert sorted(i["code"] for i in mine) == sorted(codes), report
    assert {i["outcome"] for i in mine} == {"applied"}, report
    return report


def judge_completion(
    db: Db,
    wfctl: Callable[..., tuple[int, Any]],
    runtimes: Callable[..., Runtime],
    run_id: str,
    expected: Any,
) -> Runtime:
    """Start the runtime without its startup recovery; the run must complete, return
    `expected`, and leave doctor clean for the run."""
    rt = runtimes("after-repair", JUDGE_REENQUEUE="0")
    t0 = time.monotonic()
    status = wait_for_status(db.dsn, run_id, TERMINAL, timeout=30)
    assert status == "completed", rt.log_tail()
    log.info("%s completed %.1fs after the restart", run_id, time.monotonic() - t0)
    info = rt.run_info(run_id)
    assert info["status"] == "completed" and info["returnValue"] == expected, info
    rt.stop()
    assert findings(wfctl, run_id) == {}
    status, report = wfctl("doctor", "--all", "--min-age", "0s")
    log.info(
        "doctor after: exit %s, %s",
        status,
        {c["code"]: c["count"] for c in report["checks"] if c["count"]},
    )
    assert status == 0, report  # the database holds this run only: nothing at all
    return rt


# --- the judges ---------------------------------------------------------------------------------


def test_wf112_repaired_wait_lets_the_runtime_finish_the_run(db, runtimes, wfctl) -> None:
    """A wait completed without `wait_completed`: after a crash and restart the runtime calls
    the flow once a second forever; after the repair it finishes the run."""
    run_id = rw.new_run_id()
    crash_inside_event_insert(db, runtimes("crash"), run_id, "wait_completed", "sleeper", [5])
    with db.connect() as conn:
        [(wait_id, wait_status)] = conn.execute(
            "SELECT split_part(wait_id, '-', 2), status::text FROM workflow.workflow_waits"
            " WHERE run_id = %s",
            (run_id,),
        ).fetchall()
    assert wait_status == "completed"
    assert ("wait_completed", wait_id) not in events(db, run_id)

    # the wedge: the restarted runtime replays the run about once a second, gets nowhere
    rt = runtimes("wedged")
    log_before = events(db, run_id)
    wait_until(lambda: rt.deliveries(run_id)[1] >= 4, 10, "4 answered flow deliveries")
    stays(db.dsn, run_id, "running", 1.0)
    assert events(db, run_id) == log_before  # no progress, no error event
    flows = rt.flow_lines(run_id)
    assert {f["status"] for f in flows} == {200}  # and no error anywhere
    log.info("WF112 wedge: %d flow deliveries answered 200, the log unchanged", len(flows))
    assert findings(wfctl, run_id).get("WF112") == {wait_id}
    # the loop's continuations are the real runtime's own jobs (wait_<id>:<unix second>),
    # enqueued after the wait fell due: a runaway chain (WF131)
    wait_until(lambda: "WF131" in findings(wfctl, run_id), 20, "WF131 on the real loop")
    assert findings(wfctl, run_id)["WF131"] == {wait_id}
    rt.stop()

    release_dead_workers(db)
    status, report = wfctl(
        "repair", "--apply", "--yes", "--reason", "judge", *FORCE, "--only", "WF112,WF131"
    )
    assert status == 0, report
    assert {(i["code"], i["outcome"]) for i in report["items"]} == {
        ("WF112", "applied"),
        ("WF131", "applied"),
    }, report
    judge_completion(db, wfctl, runtimes, run_id, {"a": 6, "b": 16})
    assert [e for e in events(db, run_id) if e == ("wait_completed", wait_id)] == [
        ("wait_completed", wait_id)
    ]


def test_wf101_repaired_step_created_lets_the_runtime_finish_the_run(db, runtimes, wfctl) -> None:
    """An explicit step_created (the fan-out branch past the inline slice; beta.39 awaits it
    before it starts the inline ones, so it is the run's first step_created) whose event never
    landed: a worker restarted with WORKFLOW_MAX_INLINE_STEPS=4 puts the orphan in the
    lazy-start slice, whose start is refused ("already created") in a hot replay loop that
    holds its job; after the repair the runtime runs the step and finishes the run."""
    run_id = rw.new_run_id()
    crash_inside_event_insert(db, runtimes("crash"), run_id, "step_created", "fanout", [5])
    with db.connect() as conn:
        [(step_id,)] = conn.execute(
            "SELECT step_id FROM workflow.workflow_steps WHERE run_id = %s", (run_id,)
        ).fetchall()
    assert not [e for e in events(db, run_id) if e[1] == step_id]

    rt = runtimes("wedged", WORKFLOW_MAX_INLINE_STEPS="4")
    # its three siblings are created lazily and complete; the orphan never starts
    wait_until(
        lambda: [e[0] for e in events(db, run_id)].count("step_completed") == 3,
        15,
        "the three siblings to complete",
    )
    cpu0, started0 = rt.cpu_seconds(), rt.deliveries(run_id)
    stays(db.dsn, run_id, "running", 3.0)
    started, answered = rt.deliveries(run_id)
    assert started > answered  # a delivery that never returns: the replay loop holds it
    busy = (rt.cpu_seconds() - cpu0) / 3.0
    log.info(
        "WF101 wedge: deliveries %s -> %s, runtime cpu %.0f%%",
        started0,
        (started, answered),
        100 * busy,
    )
    assert not [e for e in events(db, run_id) if e[1] == step_id]
    assert findings(wfctl, run_id).get("WF101") == {step_id}
    rt.stop()

    release_dead_workers(db)
    repair(wfctl, run_id, "WF101")
    judge_completion(db, wfctl, runtimes, run_id, {"parts": [6, 7, 8, 9], "total": 30})
    assert [e for e in events(db, run_id) if e == ("step_created", step_id)] == [
        ("step_created", step_id)
    ]


def test_wf111_repaired_step_completed_lets_the_runtime_finish_the_run(db, runtimes, wfctl) -> None:
    """A step row completed without `step_completed`: after a crash the runtime waits for the
    inline-ownership backstop (860 s; 2 s here), its re-sent step_started is refused (terminal
    step) and the run sits `running` silently; after the repair the runtime finishes it."""
    run_id = rw.new_run_id()
    crash_inside_event_insert(db, runtimes("crash"), run_id, "step_completed", "pair", [5])
    with db.connect() as conn:
        [(step_id, step_status)] = conn.execute(
            "SELECT step_id, status::text FROM workflow.workflow_steps WHERE run_id = %s",
            (run_id,),
        ).fetchall()
    assert step_status == "completed"
    assert ("step_completed", step_id) not in events(db, run_id)

    rt = runtimes("wedged", WORKFLOW_INLINE_OWNERSHIP_LEASE_SECONDS="2")

    # the recovery delivery, then the step's backstop delivery: both answered, then silence
    def backstop_answered() -> bool:
        started, answered = rt.deliveries(run_id)
        stepped = any(f["stepId"] == step_id for f in rt.flow_lines(run_id))
        return stepped and started == answered

    wait_until(backstop_answered, 15, "the recovery and backstop deliveries")
    settled, log_before = rt.deliveries(run_id), events(db, run_id)
    stays(db.dsn, run_id, "running", 3.0)
    assert rt.deliveries(run_id) == settled  # nothing more is delivered: silent
    log.info("WF111 wedge: deliveries %s, then none for 3 s, the log unchanged", settled)
    assert events(db, run_id) == log_before
    assert findings(wfctl, run_id).get("WF111") == {step_id}
    rt.stop()

    release_dead_workers(db)
    repair(wfctl, run_id, "WF111")
    judge_completion(db, wfctl, runtimes, run_id, {"a": 6, "b": 16})
    assert [e for e in events(db, run_id) if e == ("step_completed", step_id)] == [
        ("step_completed", step_id)
    ]


def test_wf133_wake_up_job_is_taken_by_the_runtime(db, runtimes, wfctl) -> None:
    """A run whose only job used its 3 attempts while the flow route was down (503) stays
    pending with no job (WF133, WF134) until some process restarts; the wake-up wfctl enqueues
    in the package's format is then the only thing that can drive it, and the runtime takes
    it and finishes the run."""
    down = runtimes("flow-down", JUDGE_FLOW_DOWN="1")
    run_id = down.start_run("pair", [5])
    wait_until(lambda: down.deliveries(run_id)[1] >= 3, 20, "3 failed deliveries")
    with db.connect() as conn:
        wait_until(
            lambda: conn.execute(
                "SELECT bool_and(attempts >= max_attempts AND locked_at IS NULL)"
                " FROM graphile_worker._private_jobs"
            ).fetchone()[0],
            10,
            "the job to be exhausted",
        )
    down.stop()
    # the route is back (a healthy worker that is not restarting): nothing delivers the run
    rt = runtimes("stranded", JUDGE_REENQUEUE="0")
    stays(db.dsn, run_id, "pending", 2.0)
    assert rt.deliveries(run_id) == (0, 0)
    assert set(findings(wfctl, run_id)) == {"WF133", "WF134"}
    rt.stop()

    status, report = wfctl(
        "repair", "--apply", "--yes", "--reason", "judge", *FORCE, "--only", "WF133"
    )
    assert status == 0 and [i["outcome"] for i in report["items"]] == ["applied"], report
    assert findings(wfctl, run_id) == {}  # re-woken: the exhausted job is history (no WF134)
    judge_completion(db, wfctl, runtimes, run_id, {"a": 6, "b": 16})
