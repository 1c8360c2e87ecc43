"""Runs written by the runtime read back through the REAL package's read path (beta.29):
`createWorld().runs.get`, `events.list`, `steps.list/get`, `hooks.list/get/getByToken`, all
validated by the package's own zod schemas. Both eras: the beta.29 package's read path does
not touch the event key or the marker table, so it reads a slot world too."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.conftest import node_available
from tests.realworld import read_back
from tests.runtime import flows
from wfctl.runtime import serde
from wfctl.runtime.executor import Executor, create

pytestmark = pytest.mark.skipif(not node_available(), reason="node/npm not found")


def payload(value: dict[str, str]) -> Any:
    return serde.loads(base64.b64decode(value["$bytes"]))


def test_runtime_runs_read_back_through_the_real_package(world, conn, store) -> None:
    runs: dict[str, str] = {}
    ex = Executor(flows.wf, store)
    runs["sequential"] = create(flows.sequential, [4], conn=conn).run_id
    runs["parallel"] = create(flows.parallel, [[1, 2]], conn=conn).run_id
    runs["retrying"] = create(flows.retrying, ["rb", 1], conn=conn).run_id
    runs["failing"] = create(flows.failing, ["rb"], conn=conn).run_id
    runs["approval"] = create(flows.approval, ["rb"], conn=conn).run_id  # parked on its hook
    runs["sleeper"] = create(flows.sleeper, [600], conn=conn).run_id  # parked on a wait
    runs["cancelled"] = create(flows.approval, ["rc"], conn=conn).run_id
    runs["pending"] = create(flows.sequential, [1], conn=conn).run_id  # never driven
    for key, run_id in runs.items():
        if key != "pending":
            ex.drive(run_id, wait=key == "retrying", timeout=10)
    store.cancel(runs["cancelled"], "read-back test")
    ex.close()

    got = read_back(conn.info.dsn, list(runs.values()))
    failures = {k: got[v] for k, v in runs.items() if not got[v]["ok"]}
    assert failures == {}

    seq = got[runs["sequential"]]
    assert seq["run"]["status"] == "completed"
    assert seq["run"]["workflowName"] == flows.sequential.name
    assert payload(seq["run"]["output"]) == 6 and payload(seq["run"]["input"]) == [4]
    types = [e["eventType"] for e in seq["events"]]
    assert types[0] == "run_created" and types[-1] == "run_completed"
    assert [
        payload(e["eventData"]["result"])
        for e in seq["events"]
        if e["eventType"] == "step_completed"
    ] == [0, 1, 3, 6]
    assert len(seq["steps"]) == 4 and {s["status"] for s in seq["steps"]} == {"completed"}

    failed = got[runs["failing"]]
    assert failed["run"]["status"] == "failed"
    assert got[runs["retrying"]]["run"]["status"] == "completed"
    hooked = got[runs["approval"]]
    assert hooked["run"]["status"] == "running"
    assert [h["token"] for h in hooked["hooks"]] == ["approve-rb"]
    slept = got[runs["sleeper"]]
    wait_created = next(e for e in slept["events"] if e["eventType"] == "wait_created")
    assert "$date" in wait_created["eventData"]["resumeAt"]
    assert got[runs["cancelled"]]["run"]["status"] == "cancelled"
    assert got[runs["pending"]]["run"]["status"] == "pending"
    ids_ = [e["eventId"] for e in seq["events"]]
    assert all(i.startswith("evnt_" if store.slots else "wevt_") for i in ids_)
