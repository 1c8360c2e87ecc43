"""Python runs and a REAL Node deployment sharing one world (issue 6, docs/runtime.md "Sharing a
world with a Node deployment").

The Node side is the judge's runtime process (tests/judge.py: `workflow`/`@workflow/core`
5.0.0-beta.39 on `@workflow/world-postgres` 5.0.0-beta.29, npm-installed into
.cache/node-runtime): `world.start()` (graphile runner + startup recovery, reference §5.4) and
the compiled flow route, whose bundle holds the judge's TypeScript workflows only, as any Node
deployment's bundle lacks the Python ones. The world is made by the package's own bootstrap
(graphile_worker installed) and adopted by wfctl.

What these tests pin down (observed, then asserted; docs/runtime.md has the details):
- a Node process's startup recovery enqueues one key-less `workflow_flows` job per
  pending/running run, Python runs included; its flow route answers each `{"ok":true}` after
  writing `run_started` (pending runs) and `run_failed` (RUNTIME_ERROR, a gzip-compressed
  WorkflowNotRegisteredError naming the Python workflow); the run's waits and hooks are
  deleted; a step wfctl is executing stays `running`. Completed runs are not touched.
- then the Node process dies (exit 1): the replay it began for a Python run leaves an
  unconsumed-event check whose ReplayDivergenceError nobody handles. Races of that crash are
  accepted: jobs left locked by the dead process, a run not reached (the next start, as a
  process manager would do it, fails it), a run failed without its `run_failed` event, and
  under load a start that dies before any of its failures lands: a liveness bound of 8
  starts for every active run, not a run failed by every start.
- a failed run is final; wfctl reads the gzip-compressed Error the Node runtime wrote
  (`run --id --wait` and a live driver report `failed` with its message; a worker drops the
  run's queue row); `hooks resume`: no active hook.
- while a Node process is up, Python runs started after its start are not touched (wfctl
  enqueues nothing in graphile_worker), and a wfctl worker does not touch Node runs.
- the refusal guard of `wfctl run` / `wfctl worker`, and `--allow-node-peer`.

Only node/npm missing skips the Node tests (first use installs the runtime, ~1 min).
"""

from __future__ import annotations

import gzip
import json
import logging
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests import judge
from tests.conftest import Db
from tests.judge import Runtime, wait_for_status, wait_until
from wfctl.runtime import Workflows
from wfctl.runtime.executor import Done, Executor, create
from wfctl.runtime.store import Store
from wfctl.world import codec
from wfctl.world.bootstrap import bootstrap

pytestmark = pytest.mark.skipif(
    not judge.available(),
    reason="node/npm not found: the real workflow runtime cannot be npm-installed",
)

logger = logging.getLogger("wfctl.nodepeer")  # observations: -o log_cli=true --log-cli-level=INFO
ROOT = Path(__file__).resolve().parent.parent.parent
FLOWS = "tests.runtime.flows"
ALLOW = "--allow-node-peer"

# A workflow whose step is still executing (in a wfctl driver) when the Node process starts.
peer = Workflows()


@peer.step(max_retries=0)
def slow(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


@peer.workflow
async def busy(seconds: float) -> float:
    return await slow(seconds)


# --- fixtures --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runtime_folder() -> Path:
    folder, _ = judge.build_runtime()
    return folder


@pytest.fixture
def db(real_world: Db) -> Db:
    """A world made by the package's own bootstrap (graphile_worker installed), adopted by
    wfctl (schema wfctl: audit log, worker queue)."""
    with real_world.connect() as conn:
        bootstrap(conn, "beta29")
    return real_world


@pytest.fixture
def node(db: Db, tmp_path: Path, runtime_folder: Path) -> Iterator[Callable[..., Runtime]]:
    """node(**env) -> a started Node runtime on `db`; stopped at teardown, log printed."""
    started: list[Runtime] = []

    def start(**env: str) -> Runtime:
        rt = Runtime(db.dsn, tmp_path, env, name="node", folder=runtime_folder)
        started.append(rt)
        return rt.start()

    yield start
    for rt in started:
        rt.stop()
        print(rt.log_tail(6000))


@pytest.fixture
def wfctl(run_cli: Any, db: Db) -> Callable[..., tuple[int, Any, str]]:
    """wfctl(*args) -> (exit status, parsed JSON stdout or None, stderr), against `db`."""

    def run(*args: str) -> tuple[int, Any, str]:
        status, out, err = run_cli("--dsn", db.dsn, "--format", "json", *args)
        return status, json.loads(out) if out.strip() else None, err

    return run


# --- reading the world -----------------------------------------------------------------------


def snapshot(db: Db, run_id: str) -> dict[str, Any]:
    """Run row, events (type, correlation, decoded data), steps, waits, hooks of one run."""
    with db.connect() as conn:
        status, error, code, completed_at = conn.execute(
            "SELECT status::text, error_cbor, error_code, completed_at"
            " FROM workflow.workflow_runs WHERE id = %s",
            (run_id,),
        ).fetchone()  # type: ignore[misc]
        events = conn.execute(
            "SELECT id, type, correlation_id, payload_cbor FROM workflow.workflow_events"
            " WHERE run_id = %s ORDER BY id",
            (run_id,),
        ).fetchall()
        steps = conn.execute(
            "SELECT step_id, status::text, attempt FROM workflow.workflow_steps"
            " WHERE run_id = %s ORDER BY step_id",
            (run_id,),
        ).fetchall()
        waits = conn.execute(
            "SELECT wait_id, status::text FROM workflow.workflow_waits WHERE run_id = %s",
            (run_id,),
        ).fetchall()
        hooks = conn.execute(
            "SELECT hook_id, token FROM workflow.workflow_hooks WHERE run_id = %s", (run_id,)
        ).fetchall()
    return {
        "status": status,
        "error": codec.decode(error) if error is not None else None,
        "error_code": code,
        "completed_at": completed_at,
        "events": [(e[0], e[1], e[2]) for e in events],
        "data": {e[0]: codec.decode(e[3]) if e[3] is not None else None for e in events},
        "steps": [tuple(s) for s in steps],
        "waits": [tuple(w) for w in waits],
        "hooks": [tuple(h) for h in hooks],
    }


def types(snap: dict[str, Any]) -> list[str]:
    return [e[1] for e in snap["events"]]


def error_text(raw: bytes) -> str:
    """A run error the Node runtime wrote: `gzip` + a gzip stream of `devl` + devalue text
    (an `Error` reduced by the runtime's serializer, which wfctl's devalue subset does not
    revive): returned as text."""
    raw = bytes(raw)
    assert raw[:4] == b"gzip", raw[:16]
    inner = gzip.decompress(raw[4:])
    assert inner[:4] == b"devl", inner[:16]
    return inner[4:].decode()


def jobs(db: Db) -> list[dict[str, Any]]:
    """graphile_worker jobs, payload decoded (the `jobs` view has no payload column)."""
    with db.connect() as conn:
        rows = conn.execute(
            "SELECT t.identifier, j.key, j.attempts, j.last_error, j.locked_at,"
            " convert_from(decode(j.payload->>'data', 'base64'), 'UTF8')::jsonb"
            " FROM graphile_worker._private_jobs j"
            " JOIN graphile_worker._private_tasks t ON t.id = j.task_id ORDER BY j.id"
        ).fetchall()
    return [
        {"task": r[0], "key": r[1], "attempts": r[2], "last_error": r[3], "locked": r[4], **r[5]}
        for r in rows
    ]


# --- 1. a Node process starts on a world holding Python runs --------------------------------


def test_node_startup_recovery_fails_every_active_python_run(
    db: Db, node: Callable[..., Runtime], wfctl: Callable[..., tuple[int, Any, str]]
) -> None:
    runs: dict[str, str] = {}
    status, out, _ = wfctl("run", f"{FLOWS}:sequential", "[3]", ALLOW)
    assert (status, out["status"]) == (0, "completed")
    runs["completed"] = out["run_id"]
    status, out, _ = wfctl("run", f"{FLOWS}:sleeper", "[3600]", ALLOW)  # an hour's sleep
    assert (status, out["status"]) == (0, "running")
    runs["sleeping"] = out["run_id"]
    status, out, _ = wfctl("run", f"{FLOWS}:approval", '["np"]', ALLOW)  # parked on a hook
    assert (status, out["status"]) == (0, "running")
    runs["hooked"] = out["run_id"]
    status, out, _ = wfctl("run", f"{FLOWS}:sequential", "[2]", "--detach", ALLOW)
    assert (status, out["status"]) == (0, "pending")  # handed to wfctl workers; none runs
    runs["pending"] = out["run_id"]

    # A run whose step is executing in a wfctl driver (this process) when Node starts.
    live: dict[str, Any] = {}
    lconn = psycopg.connect(db.dsn, autocommit=True)
    runs["live"] = create(busy, [15.0], conn=lconn).run_id

    def drive() -> None:
        executor = Executor(peer, Store(lconn))
        try:
            live["done"] = executor.drive(runs["live"], wait=True, timeout=30)
        except Exception as exc:  # what the driver meets when Node fails its run
            live["exc"] = exc
        finally:
            executor.close()
            lconn.close()

    driver = threading.Thread(target=drive)
    driver.start()
    wait_until(
        lambda: snapshot(db, runs["live"])["steps"][:1] and True, 10, "the live step started"
    )
    before = {k: snapshot(db, v) for k, v in runs.items()}
    assert types(before["live"])[-1] == "step_started"
    assert jobs(db) == []  # wfctl enqueues nothing in the Node world's queue

    # Start the Node deployment; it dies on its own (exit 1, see below); a process manager
    # would start it again, so do that until no Python run is left active. A liveness bound:
    # the crash races the failures' writes, so on a loaded machine a start may die before
    # any lands (observed); each start makes progress or crashes, and 8 starts suffice.
    active = [k for k in runs if k != "completed"]
    ids = {runs[k] for k in active}
    starts: list[dict[str, Any]] = []
    for _ in range(8):
        still = [k for k in active if snapshot(db, runs[k])["status"] != "failed"]
        if not still:
            break
        rt = node()

        def settled(rt: Runtime = rt, still: list[str] = still) -> bool:
            return not rt.alive or all(snapshot(db, runs[k])["status"] == "failed" for k in still)

        wait_until(settled, 30, "the Node process exits or fails every active run")
        if rt.alive:
            time.sleep(1.5)  # the crash comes ~0.1 s after the failures
        assert rt.proc is not None
        exit_code = rt.proc.poll()
        rt.stop()
        log = rt.log_text()
        failed_now = [k for k in still if snapshot(db, runs[k])["status"] == "failed"]
        starts.append(
            {"active": still, "failed": failed_now, "exit": exit_code, "jobs_left": len(jobs(db))}
        )
        # Startup recovery: one key-less job per active run, Python runs included.
        assert f"Re-enqueued {len(still)} active run(s) on startup" in log
        assert sorted(delivered(rt)) == sorted(runs[k] for k in still)
        assert log.count("WorkflowNotRegisteredError") >= len(failed_now)
        for key in still:  # answered `{"ok":true}` (job done) unless the process died first
            answers = [(f["status"], f["out"]) for f in rt.flow_lines(runs[key])]
            assert answers in ([(200, '{"ok":true}')], []), (key, answers)
        if exit_code is not None:
            # It died of an unhandled ReplayDivergenceError from the replay it began for a
            # Python run (an event it could not consume: a step, wait or hook of Python code).
            assert exit_code == 1, rt.log_tail()
            assert "ReplayDivergenceError: Replay could not consume event" in log
        # A start that failed nothing must have died of that crash (else it wedged).
        assert failed_now or exit_code == 1, ("a live start failed no active run", starts)
    logger.info("Node starts: %s", starts)
    assert starts[0]["exit"] == 1, starts  # the first start found runs at a step/wait/hook
    assert all(snapshot(db, runs[k])["status"] == "failed" for k in active), starts
    driver.join(30)

    # No retry and no failed job: graphile completes jobs in batches, and the jobs not yet
    # marked done when a process died stay locked by it (attempts 1, no error) until
    # graphile's 4-hour stale-lock sweep hands them to a live Node process.
    for job in jobs(db):
        assert job["task"] == "workflow_flows" and job["runId"] in ids, job
        assert job["key"].startswith("msg_") and "stepId" not in job, job
        assert (job["attempts"], job["last_error"]) == (1, None), job
        assert job["locked"] is not None, job

    # Every active Python run: failed by the Node runtime, for good. Its `run_failed` is the
    # beta.29 write path's last, separate statement: when the process died between the run
    # UPDATE and that insert, the run is failed without the event (WF113).
    no_event = []
    for key in active:
        snap = snapshot(db, runs[key])
        added = types(snap)[len(before[key]["events"]) :]
        assert snap["events"][: len(before[key]["events"])] == before[key]["events"], key
        head = ["run_started"] if key == "pending" else []
        assert added in ([*head, "run_failed"], head), (key, added)
        assert (snap["status"], snap["error_code"]) == ("failed", "RUNTIME_ERROR"), key
        assert snap["completed_at"] is not None
        error = error_text(snap["error"])
        assert "WorkflowNotRegisteredError" in error, error
        assert payload_name(db, runs[key]) in error, error
        if added[-1:] != ["run_failed"]:
            no_event.append(key)
            continue
        failed = snap["data"][snap["events"][-1][0]]
        assert failed["errorCode"] == "RUNTIME_ERROR"
        assert error_text(failed["error"]) == error
        assert snap["waits"] == [] and snap["hooks"] == []  # deleted with the run's end
    logger.info("failed without a run_failed event (the process died in between): %s", no_event)
    logger.info("error value: %s", error)
    assert before["sleeping"]["waits"] and before["hooked"]["hooks"]  # (deleted above)
    # The step wfctl was executing stays `running` in a failed run; its result never lands.
    assert snapshot(db, runs["live"])["steps"] == [(before["live"]["steps"][0][0], "running", 1)]
    # The wfctl driver of that run sees the run end under it: its step's result never lands,
    # and it reports the failure the Node runtime wrote (a gzip-compressed Error value).
    outcome = live.get("done") or live.get("exc")
    assert isinstance(outcome, Done) and outcome.status == "failed", outcome
    assert "not registered" in (outcome.error or ""), outcome

    # The completed run: untouched.
    assert snapshot(db, runs["completed"]) == before["completed"]

    # Afterwards the runs are final: wfctl cannot resume them, and says why.
    status, out, err = wfctl("run", f"{FLOWS}:sleeper", "--id", runs["sleeping"], "--wait", ALLOW)
    logger.info("wfctl run --id on a run the Node peer failed: %s %s %s", status, out, err)
    assert status == 2 and out is not None and out["status"] == "failed", (out, err)
    assert "not registered" in str(out.get("error")), out
    status, out, err = wfctl("hooks", "resume", "approve-np", '{"ok": true}')
    assert status == 3 and "no active hook with token 'approve-np'" in err, err
    # The --detach run's wfctl queue row: a wfctl worker finds the run over and drops it.
    pending = runs["pending"]
    out_text = worker_for(
        db,
        10,
        lambda: not db.scalar("SELECT count(*) FROM wfctl.run_queue WHERE run_id = %s", (pending,)),
    )
    logger.info("wfctl worker beside the failed runs: %s", out_text.strip())
    assert "retry in" not in out_text, out_text
    assert db.scalar("SELECT count(*) FROM wfctl.run_queue WHERE run_id = %s", (pending,)) == 0


def worker_for(db: Db, seconds: float, until: Callable[[], bool] | None = None) -> str:
    """Run `wfctl worker tests.runtime.flows --allow-node-peer` (a real process) until
    `until()` holds (bounded by `seconds`), then SIGTERM it; its output."""
    worker = subprocess.Popen(
        [sys.executable, "-m", "wfctl", "--dsn", db.dsn, "worker", FLOWS, ALLOW, "--poll", "0.1s"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not (until and until()):
            time.sleep(0.1)
    finally:
        worker.send_signal(signal.SIGTERM)
        out = worker.communicate(timeout=30)[0].decode()
    assert worker.returncode == 0, out
    return out


def delivered(rt: Runtime) -> list[str]:
    """Run ids of the flow deliveries the Node process received, in order."""
    return [
        json.loads(line)["delivery"]["runId"]
        for line in rt.log_text().splitlines()
        if line.startswith('{"t"') and '"delivery":' in line
    ]


def payload_name(db: Db, run_id: str) -> str:
    return str(db.scalar("SELECT name FROM workflow.workflow_runs WHERE id = %s", (run_id,)))


# --- 2. a Node process already up; and the reverse ------------------------------------------


def test_python_runs_started_after_node_and_node_runs_under_a_wfctl_worker(
    db: Db, node: Callable[..., Runtime], wfctl: Callable[..., tuple[int, Any, str]]
) -> None:
    rt = node()
    assert "Re-enqueued" not in rt.log_text()  # nothing active yet

    # Python runs started while Node is up: driven by wfctl, never seen by Node.
    status, out, _ = wfctl("run", f"{FLOWS}:sleeper", "[0.3]", "--wait", ALLOW)
    assert (status, out["status"]) == (0, "completed")
    done = out["run_id"]
    status, out, _ = wfctl("run", f"{FLOWS}:approval", '["up"]', ALLOW)
    parked = out["run_id"]
    time.sleep(2.0)  # several graphile polls (500 ms)
    assert rt.flow_lines(done) == [] and rt.flow_lines(parked) == []
    assert snapshot(db, parked)["status"] == "running"

    # A Node run left active (the process stops while its run waits on a 1 s sleep).
    node_run = rt.start_run("sleeper", [1])
    wait_until(lambda: "wait_created" in types(snapshot(db, node_run)), 30, "the Node run sleeps")
    rt.stop()
    node_before = snapshot(db, node_run)
    jobs_before = jobs(db)
    assert node_before["status"] == "running"

    # A wfctl worker serving tests.runtime.flows for a few seconds: it finishes a Python run
    # handed to it and leaves the Node run and its wake-up job alone.
    status, out, _ = wfctl("run", f"{FLOWS}:sequential", "[3]", "--detach", ALLOW)
    detached = out["run_id"]
    worker_for(db, 30, until=lambda: snapshot(db, detached)["status"] == "completed")
    assert snapshot(db, detached)["status"] == "completed"
    time.sleep(1.0)
    assert snapshot(db, node_run) == node_before
    assert jobs(db) == jobs_before

    # The Python run parked on a hook is finished before Node restarts (else Node fails it).
    status, _, _ = wfctl("hooks", "resume", "approve-up", '"yes"')
    assert status == 0
    status, out, _ = wfctl("run", f"{FLOWS}:approval", "--id", parked, "--wait", ALLOW)
    assert (status, out["status"]) == (0, "completed")

    # Node again: its recovery resumes its own run, which completes.
    rt2 = node()
    wait_for_status(db.dsn, node_run, {"completed"}, timeout=60)
    assert rt2.run_info(node_run)["returnValue"] == {"a": 2, "b": 12}
    assert "WorkflowNotRegisteredError" not in rt2.log_text()


# --- 3. the guard ----------------------------------------------------------------------------


def test_run_and_worker_refuse_a_world_with_the_node_queue_unless_allowed(
    db: Db, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for args in (
        ["run", f"{FLOWS}:sequential", "[1]"],
        ["run", f"{FLOWS}:sequential", "[1]", "--detach"],
        ["worker", FLOWS],
    ):
        status, out, err = run_cli("--dsn", db.dsn, *args)
        assert status == 2, (args, out, err)
        assert out == ""
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert "startup recovery would fail" in lines[0], lines[0]
        assert "--allow-node-peer" in lines[0]
    assert db.scalar("SELECT count(*) FROM workflow.workflow_runs") == 0  # nothing written

    status, out, err = run_cli(
        "--dsn", db.dsn, "--format", "json", "run", f"{FLOWS}:sequential", "[2]", ALLOW
    )
    assert status == 0 and json.loads(out)["status"] == "completed", err
    monkeypatch.setenv("WFCTL_ALLOW_NODE_PEER", "1")
    status, out, err = run_cli(
        "--dsn", db.dsn, "--format", "json", "run", f"{FLOWS}:sequential", "[2]"
    )
    assert status == 0 and json.loads(out)["status"] == "completed", err


def test_a_world_without_the_node_queue_is_not_refused(wfctl_world: Db, run_cli: Any) -> None:
    status, out, err = run_cli(
        "--dsn", wfctl_world.dsn, "--format", "json", "run", f"{FLOWS}:sequential", "[2]"
    )
    assert status == 0 and json.loads(out)["output"] == 1, err
