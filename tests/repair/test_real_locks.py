# ruff: noqa: F811 - the judge fixtures are imported from test_real_judge by name
"""Dead workers' locks on a world driven by the REAL runtime: the killed worker's lock is
released by age, the live worker's lock never is, and the wedge behind it is then repaired.

1. runtime "crash" is SIGKILLed inside the `wait_completed` INSERT of a `sleeper` run (the F4
   wedge: the wait row completed, its event never written), so the continuation job it was
   delivering stays locked by a dead worker (graphile frees it only after 4 hours);
2. runtime "live" delivers a `pair` run whose `step_completed` INSERT is held by a trigger, so
   its job is locked by a worker that is alive and working;
3. the dead lock is aged by one hour (the only hand edit: the time an operator waits before
   calling it dead; `locked_at` moves, nothing else);
4. `repair` refuses the wedge while the lock stands and names the holder; the dry run of
   `--unlock-older-than 30m` lists the dead lock only and writes nothing; the apply releases it,
   audited, repairs WF112 in the same call, and leaves the live lock exactly as it was;
5. the live runtime, which never restarted, takes the released job and finishes the run.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from tests import judge
from tests import realworld as rw
from tests.faults import drop_faults, slow_insert, terminate, wait_for_sleeper
from tests.judge import wait_for_status, wait_until
from tests.repair.test_real_judge import (  # noqa: F401 - fixtures
    FORCE,
    crash_inside_event_insert,
    db,
    events,
    findings,
    runtime_folder,
    runtimes,
    wfctl,
)

log = logging.getLogger("wfctl.judge")
T0 = [0.0]


def mark(what: str) -> None:
    log.info("%6.1fs %s", time.monotonic() - T0[0], what)


pytestmark = pytest.mark.skipif(
    not judge.available(),
    reason="node/npm not found: the real workflow runtime cannot be npm-installed",
)


def job_locks(db: Any) -> dict[str, tuple[Any, ...]]:
    """{run id: (job id, locked_by, locked_at)} for every locked job."""
    with db.connect() as conn:
        rows = conn.execute(
            "SELECT convert_from(decode(payload ->> 'data', 'base64'), 'UTF8')::jsonb ->> 'runId',"
            " id, locked_by, locked_at FROM graphile_worker._private_jobs"
            " WHERE locked_at IS NOT NULL"
        ).fetchall()
    return {r[0]: tuple(r[1:]) for r in rows}


def test_unlock_older_than_frees_the_dead_worker_never_the_live_one(db, runtimes, wfctl) -> None:
    T0[0] = time.monotonic()
    dead_run = rw.new_run_id()
    crash_inside_event_insert(db, runtimes("crash"), dead_run, "wait_completed", "sleeper", [5])
    locks = job_locks(db)
    assert list(locks) == [dead_run], locks  # the killed delivery's job, and only it
    dead_job, dead_worker, _ = locks[dead_run]

    mark('live = runtimes("live"')
    live = runtimes("live", JUDGE_REENQUEUE="0")
    live_run = rw.new_run_id()
    with db.connect() as conn:
        slow_insert(conn, "workflow_events", live_run, "step_completed", seconds=300)
        live.start_run("pair", [5], live_run)
        sleeper = wait_for_sleeper(conn, timeout=20)
        wait_until(lambda: live_run in job_locks(db), 10, "the live delivery's lock")
        live_lock = job_locks(db)[live_run]
        assert live_lock[1] != dead_worker
        # an hour after the crash (the one hand edit: the time an operator waits)
        conn.execute(
            "UPDATE graphile_worker._private_jobs SET locked_at = locked_at - interval '1 hour'"
            " WHERE id = %s",
            (dead_job,),
        )
    mark("try:")
    try:
        found = findings(wfctl, dead_run)
        assert "WF112" in found and str(dead_job) in found["WF135"]

        status, report = wfctl("repair", "--apply", "--yes", "--reason", "t", *FORCE,
                               "--only", "WF112")  # fmt: skip
        [item] = report["items"]
        assert status == 2 and item["outcome"] == "refused"
        assert f"locked by {dead_worker} since" in item["reason"]
        assert "--unlock-older-than AGE" in item["reason"] and report["unlock_older_than"] == "60m"

        mark('status, report = wfctl("repair')
        status, report = wfctl("repair", *FORCE, "--unlock-older-than", "30m", "--only", "WF112")
        released = [i for i in report["items"] if i["code"] == "WF135"]
        assert [(i["entity_id"], i["outcome"]) for i in released] == [(str(dead_job), "planned")]
        assert job_locks(db)[dead_run][0] == dead_job  # the dry run wrote nothing

        status, report = wfctl("repair", "--apply", "--yes", "--reason", "worker OOM-killed",
                               *FORCE, "--unlock-older-than", "30m", "--only", "WF112")  # fmt: skip
        outcomes = {(i["code"], i["entity_id"]): i["outcome"] for i in report["items"]}
        assert status == 0, [(i["code"], i["outcome"], i["reason"]) for i in report["items"]]
        assert outcomes[("WF135", str(dead_job))] == "applied"
        assert outcomes[("WF112", next(iter(found["WF112"])))] == "applied"
        with db.connect() as conn:  # one transaction: no worker could take the job in between
            writers = conn.execute(
                "SELECT code, xmin::text FROM wfctl.repair_log WHERE run_id = %s", (dead_run,)
            ).fetchall()
        assert {code for code, _ in writers} == {"WF135", "WF112"}, writers
        assert len({xid for _, xid in writers}) == 1, writers
        assert ("WF135", str(live_lock[0])) not in outcomes
        assert job_locks(db).get(live_run) == live_lock  # the live lock, untouched

        mark("# the live runtime takes")
        # the live runtime takes the released continuation and finishes the wedged run
        assert wait_for_status(db.dsn, dead_run, {"completed", "failed"}, timeout=30) == "completed"
        assert live.run_info(dead_run)["returnValue"] == {"a": 6, "b": 16}
        assert [t for t, _ in events(db, dead_run)].count("wait_completed") == 1
        assert job_locks(db).get(live_run) == live_lock
        mark("done")
    finally:
        with db.connect() as conn:
            terminate(conn, sleeper)  # first: DROP TRIGGER waits for the sleeping INSERT
            drop_faults(conn)
