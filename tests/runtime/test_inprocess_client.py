"""`start()` handles and the in-process lease, on a real PostgreSQL (both eras): the driving
process leases the run's queue row while it drives (holder `…:drv_…`, renewed by its
heartbeat), the run's end removes the row, a blocked run is handed back parked or at its
timer, outcomes raise the typed errors, and `step_context()` outside a step is refused."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import psycopg
import pytest

from tests.runtime import flows
from wfctl.runtime import (
    Client,
    RunFailedError,
    RunTimeoutError,
    StepFailedError,
    WorkflowError,
    lease,
    start,
    step_context,
)
from wfctl.runtime import executor as ex


@pytest.fixture
def connected(world: Any) -> Any:
    flows.reset()
    ex.configure(lambda: psycopg.connect(world.dsn, autocommit=True))
    yield world
    ex._connect = None


def _queue_row(world: Any, run_id: str) -> Any:
    with world.connect() as conn:
        return conn.execute(
            "SELECT lease_owner, ready_at IS NULL FROM wfctl.run_queue WHERE run_id = %s",
            (run_id,),
        ).fetchone()


def test_start_result_drives_under_a_lease(connected: Any) -> None:
    world = connected
    handle = asyncio.run(start(flows.approval, "o-lease"))
    seen: list[Any] = []

    def watch_then_resume() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            row = _queue_row(world, handle.id)
            if row is not None and row[0] is not None:
                seen.append(row)
                with world.connect() as conn:
                    hook = conn.execute(
                        "SELECT token FROM workflow.workflow_hooks WHERE run_id = %s",
                        (handle.id,),
                    ).fetchone()
                if hook is not None:
                    Client(world.dsn).resume_hook(hook[0], {"ok": True})
                    return
            time.sleep(0.02)

    watcher = threading.Thread(target=watch_then_resume)
    watcher.start()
    out = asyncio.run(handle.result(timeout=30))
    watcher.join(10)
    assert out == {"decision": {"ok": True}, "sum": 13}
    assert handle.status == "completed" and handle.output == out
    assert seen and ":drv_" in seen[0][0]  # leased by this process while it drove
    assert _queue_row(world, handle.id) is None  # the terminal transaction removed it


def test_outcomes_raise_typed_errors(connected: Any) -> None:
    failing = asyncio.run(start(flows.failing, "k"))
    with pytest.raises(RunFailedError) as failed:
        asyncio.run(failing.result(timeout=30))
    assert failed.value.error_code == "USER_ERROR" and isinstance(failed.value, WorkflowError)
    # A run blocked on a hook: the wait times out, the run is handed back parked.
    parked = asyncio.run(start(flows.approval, "o-timeout"))
    with pytest.raises(RunTimeoutError):
        asyncio.run(parked.result(timeout=0.5))
    row = _queue_row(connected, parked.id)
    assert row is not None and row[0] is None  # no lease left behind: ready for a worker
    assert issubclass(StepFailedError, WorkflowError)


def test_a_held_lease_is_not_taken(connected: Any) -> None:
    with connected.connect() as conn:
        run_id = ex.create(flows.sequential, [2], conn=conn).run_id
        mine = lease.hold(conn, run_id, flows.sequential.name)
        assert mine.held
        other = lease.hold(conn, run_id, flows.sequential.name)
        assert not other.held  # another owner's live lease
        done = ex.drive_to_end(flows.wf, run_id, 5, name=flows.sequential.name)
        assert done.status == "busy"
        lease.release(conn, mine, None)
    assert ex.drive_to_end(flows.wf, run_id, 10).status == "completed"


def test_step_context_outside_a_step() -> None:
    with pytest.raises(RuntimeError, match="only available inside a step"):
        step_context()


def test_client_refuses_to_enqueue_into_a_node_world(real_world: Any) -> None:
    """As `wfctl run`: a world with the Node world's queue would see its Python runs failed by
    a Node process's startup recovery; the client refuses unless told otherwise."""
    from wfctl.world.bootstrap import bootstrap

    with real_world.connect() as conn:
        bootstrap(conn, "beta29")  # adopted: wfctl's schema and queue added
    with Client(real_world.dsn) as client, pytest.raises(WorkflowError, match="Node world"):
        client.enqueue(flows.sequential, 1)
    with Client(real_world.dsn, allow_node_peer=True) as client:
        assert client.enqueue(flows.sequential, 1).status == "pending"
