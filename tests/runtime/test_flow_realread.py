"""Runs with a graceful cancellation (attr_set + compensation + run_cancelled), a parent and
its child, and a retried step with a backoff, read back through the REAL beta.29 package's
read path (`runs.get`, `events.list`, `steps`, `hooks`; its zod schemas), both eras."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.conftest import node_available
from tests.realworld import read_back
from tests.runtime import flow_features as ff
from wfctl.runtime import serde
from wfctl.runtime.executor import Executor, create
from wfctl.runtime.store import CANCEL_ATTRIBUTE

pytestmark = pytest.mark.skipif(not node_available(), reason="node/npm not found")


def payload(value: dict[str, str]) -> Any:
    return serde.loads(base64.b64decode(value["$bytes"]))


def test_flow_runs_read_back_through_the_real_package(world: Any, conn: Any, store: Any) -> None:
    ff.reset()
    ex = Executor(ff.wf, store)
    saga = create(ff.saga, ["rr"], conn=conn).run_id
    ex.drive(saga)
    store.request_cancel(saga, "read back")
    assert ex.drive(saga).status == "cancelled"
    parent = create(ff.parent, [5], conn=conn).run_id
    ex.drive(parent)
    kids = [
        serde.loads(e.data["result"])
        for e in store.read_events(parent)
        if e.type == "step_completed"
    ]
    for kid in kids:
        assert ex.drive(kid).status == "completed"
    assert ex.drive(parent).status == "completed"
    retried = create(ff.retry_default, ["rr"], conn=conn).run_id
    assert ex.drive(retried, wait=True, timeout=30).status == "completed"
    ex.close()

    got = read_back(conn.info.dsn, [saga, parent, retried, *kids])
    assert {k: v for k, v in got.items() if not v["ok"]} == {}

    cancelled = got[saga]
    assert cancelled["run"]["status"] == "cancelled"
    types = [e["eventType"] for e in cancelled["events"]]
    assert types.count("attr_set") == 1 and types[-1] == "run_cancelled"
    attr = next(e for e in cancelled["events"] if e["eventType"] == "attr_set")
    assert attr["eventData"]["changes"] == [{"key": CANCEL_ATTRIBUTE, "value": "read back"}]
    assert cancelled["run"].get("attributes", {}).get(CANCEL_ATTRIBUTE) == "read back"

    assert got[parent]["run"]["status"] == "completed"
    assert payload(got[parent]["run"]["output"])["a"] == 10
    for kid in kids:
        assert got[kid]["run"]["status"] == "completed"
        assert got[kid]["run"]["attributes"]["wfctl.parentRunId"] == parent
    retry = next(e for e in got[retried]["events"] if e["eventType"] == "step_retrying")
    assert "$date" in retry["eventData"]["retryAfter"]
