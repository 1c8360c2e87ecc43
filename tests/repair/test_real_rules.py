"""WF149 and WF152 with the REAL runtime (core beta.39 on world-postgres beta.29).

- WF149: a workflow's second setAttributes() loses its attr_set event (a trigger fails every
  later insert, as a database that keeps refusing it would): each delivery UPDATEs the row and
  fails, the operator cancels the run, the row stays ahead of the log. doctor names it, the
  repair sets the row to the log's fold, and the package reads that back.
- WF152: a sleeping run whose wait_completed carries another resumeAt than its wait_created
  (1 ms off, written through the package, which accepts any): the runtime's replay fails the
  run (CORRUPTED_EVENT_LOG, the sleep consumer's divergence), as the check says; the same
  completion with the exact resumeAt lets it finish.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from tests import judge
from tests import realworld as rw
from tests.checks.test_wf149 import attributes
from tests.conftest import Db
from tests.faults import fail_insert
from tests.judge import Runtime, wait_for_status, wait_until
from tests.repair.test_real_judge import (  # noqa: F401  (fixtures)
    FORCE,
    TERMINAL,
    db,
    runtime_folder,
    runtimes,
    wfctl,
)
from wfctl.doctor.resume_at import resume_at
from wfctl.world import codec

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not judge.available(), reason="node/npm not found: no real runtime"),
]


def found(cli: Callable[..., tuple[int, Any]], code: str) -> dict[str, str]:
    """{run id: detail} of one check over every run."""
    _, report = cli("doctor", "--all", "--min-age", "0s", "--only", code)
    [check] = report["checks"]
    return {s["run_id"]: s["detail"] for s in check["samples"]}


def event_types(database: Db, run_id: str) -> list[str]:
    with database.connect() as conn:
        rows = conn.execute(
            "SELECT type FROM workflow.workflow_events WHERE run_id = %s ORDER BY id", (run_id,)
        ).fetchall()
    return [r[0] for r in rows]


def test_wf149_torn_set_attributes_then_cancelled(real_world, world, runtimes, wfctl) -> None:  # noqa: F811
    run_id = rw.new_run_id()
    rt = runtimes("tagged")
    with (
        real_world.connect() as conn,
        fail_insert(conn, "workflow_events", run_id, "attr_set", times=None, skip=1) as fault,
    ):
        rt.start_run("tagged", [5], run_id, module="rules")
        wait_until(lambda: fault.matches() >= 3, 60, "the second attr_set refused 2 times")
        assert attributes(real_world, run_id) == {"phase": "done"}  # the row moved each time
        rt.cancel(run_id)
        assert wait_for_status(real_world.dsn, run_id, TERMINAL, 30) == "cancelled"
    rt.stop()
    assert event_types(real_world, run_id).count("attr_set") == 1
    assert "'phase': 'done' on the row, 'init' by the log" in found(wfctl, "WF149")[run_id]

    status, report = wfctl(
        "repair", "--all", "--apply", "--yes", "--reason", "test", *FORCE, "--only", "WF149"
    )
    assert status == 0 and [i["outcome"] for i in report["items"]] == ["applied"], report
    assert attributes(real_world, run_id) == {"phase": "init", "tmp": "x"}
    assert found(wfctl, "WF149") == {}
    [read] = rw.read_back(real_world.dsn, [run_id]).values()
    assert read["ok"] and read["run"]["attributes"] == {"phase": "init", "tmp": "x"}, read


def _parked(real_world: Db, rt: Runtime, x: int) -> tuple[str, str, Any]:
    """A `nap(x, 3600)` run parked on its sleep: (run id, wait id, wait_created's resumeAt)."""
    run_id = rt.start_run("nap", [x, 3600], module="corpus")
    with real_world.connect() as conn:

        def created() -> Any:
            return conn.execute(
                "SELECT correlation_id, payload_cbor FROM workflow.workflow_events"
                " WHERE run_id = %s AND type = 'wait_created'",
                (run_id,),
            ).fetchone()

        wait_until(created, 60, "the run's wait_created")
        wait_id, payload = created()
    return run_id, wait_id, resume_at(payload)


def test_wf152_the_runtime_rejects_a_moved_deadline(real_world, world, runtimes, wfctl) -> None:  # noqa: F811
    rt = runtimes("nap")
    moved, moved_wait, deadline = _parked(real_world, rt, 1)
    exact, exact_wait, exact_deadline = _parked(real_world, rt, 2)
    rt.stop()
    world.ok(
        [
            rw.wait_completed(moved, moved_wait, deadline + timedelta(milliseconds=1)),
            rw.wait_completed(exact, exact_wait, exact_deadline),
            rw.queue(judge.workflow_id("nap", "corpus"), {"runId": moved}),
            rw.queue(judge.workflow_id("nap", "corpus"), {"runId": exact}),
        ]
    )
    assert set(found(wfctl, "WF152")) == {moved}
    runtimes("replay", JUDGE_REENQUEUE="0")
    assert wait_for_status(real_world.dsn, exact, TERMINAL, 60) == "completed"
    assert wait_for_status(real_world.dsn, moved, TERMINAL, 60) == "failed"
    with real_world.connect() as conn:
        [(code, error)] = conn.execute(
            "SELECT error_code, error_cbor FROM workflow.workflow_runs WHERE id = %s", (moved,)
        ).fetchall()
    body = codec.decode(error)
    assert code == "CORRUPTED_EVENT_LOG" and body[:4] == b"gzip", (code, body[:4])
    assert b"has resumeAt" in gzip.decompress(body[4:])  # the sleep consumer's divergence
