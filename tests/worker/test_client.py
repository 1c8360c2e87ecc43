"""The Python client against real `wfctl worker` processes on a real PostgreSQL: enqueue hands
the run to workers, `result()` waits for its end through LISTEN/NOTIFY (completed, failed,
cancelled, timed out), hooks are resumed from the client, runs are listed page by page, and a
handle from `start()` waits for a worker that drives the run instead of failing `busy`."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.worker import clientflows as cf
from tests.worker.conftest import effects, prepare, wait_until
from wfctl.runtime import (
    AsyncClient,
    Client,
    RunCancelledError,
    RunFailedError,
    RunHandle,
    RunNotFoundError,
    RunTimeoutError,
    WorkflowError,
)
from wfctl.runtime.errors import HookNotFoundError


def test_enqueue_hands_the_run_to_a_worker_and_result_waits(world: Any, cworkers: Any) -> None:
    prepare(world)
    client = Client(world.dsn)
    handle = client.enqueue(cf.doubled, 21)
    assert handle.id.startswith("wrun_") and handle.status == "pending"
    with world.connect() as conn:  # committed and queued before enqueue returned
        row = conn.execute(
            "SELECT queue, lease_owner FROM wfctl.run_queue WHERE run_id = %s", (handle.id,)
        ).fetchone()
    assert row == ("default", None)
    w = cworkers(world.dsn)
    w.worker_id()
    assert handle.result(timeout=30) == {"x": 21, "doubled": 42}
    assert handle.status == "completed" and handle.output == {"x": 21, "doubled": 42}
    again = client.get(handle.id)
    assert again.status == "completed" and again.output == {"x": 21, "doubled": 42}
    assert again.result() == {"x": 21, "doubled": 42}  # an ended run answers at once
    # Idempotency: the same key is the same run.
    first = client.enqueue(cf.doubled, 1, idempotency_key="k-1")
    assert client.enqueue(cf.doubled, 1, idempotency_key="k-1").id == first.id
    assert first.result(timeout=30) == {"x": 1, "doubled": 2}
    # By stored name, without the workflow's code.
    by_name = client.enqueue(cf.doubled.name, 5)
    assert by_name.result(timeout=30) == {"x": 5, "doubled": 10}
    client.close()


def test_typed_errors(world: Any, cworkers: Any) -> None:
    prepare(world)
    client = Client(world.dsn)
    parked = client.enqueue(cf.waiting, "tok-cancel")
    with pytest.raises(RunTimeoutError) as timed:  # no worker yet: the run goes on
        parked.result(timeout=0.3)
    assert timed.value.run_id == parked.id and isinstance(timed.value, TimeoutError)
    cworkers(world.dsn).worker_id()
    failing = client.enqueue(cf.failing, "card declined")
    with pytest.raises(RunFailedError) as failed:
        failing.result(timeout=30)
    assert failed.value.error_code == "USER_ERROR", failed.value
    assert "card declined" in str(failed.value) and failing.error_code == "USER_ERROR"
    assert isinstance(failed.value, WorkflowError)
    wait_until(lambda: client.get(parked.id).status == "running", 30, "the hook run to start")
    assert client.cancel(parked.id, reason="duplicate").status == "cancelled"
    with pytest.raises(RunCancelledError):
        parked.result(timeout=30)
    with pytest.raises(RunNotFoundError):
        client.get("wrun_01J00000000000000000000000")
    with pytest.raises(HookNotFoundError):
        client.resume_hook("no-such-token", {}, keep=False)
    assert client.resume_hook("kept-token", {}) is None  # kept for a hook to come
    client.close()


def test_resume_hook_and_list_pages(world: Any, cworkers: Any) -> None:
    prepare(world)
    client = Client(world.dsn)
    cworkers(world.dsn).worker_id()
    handle = client.enqueue(cf.waiting, "tok-1")

    def parked() -> bool:
        try:
            client.resume_hook("tok-1", {"approved": True})
        except HookNotFoundError:
            return False
        return True

    wait_until(parked, 30, "the hook to exist")
    assert handle.result(timeout=30) == {"got": {"approved": True}}
    made = [client.enqueue(cf.doubled, i).id for i in range(5)]
    for rid in made:
        client.get(rid).result(timeout=30)
    seen: list[str] = []
    page = client.list(workflow=cf.doubled, limit=2)
    while True:
        seen += [h.id for h in page]
        assert all(h.status == "completed" for h in page)
        if page.next_cursor is None:
            break
        page = client.list(workflow=cf.doubled, limit=2, after=page.next_cursor)
    assert sorted(seen) == sorted(made) and len(seen) == len(set(seen))
    assert [h.id for h in client.list(status="completed", workflow=cf.waiting)] == [handle.id]
    assert client.list(status="failed") == []
    client.close()


def test_async_client(world: Any, cworkers: Any) -> None:
    prepare(world)
    cworkers(world.dsn).worker_id()

    async def main() -> tuple[Any, Any, str]:
        async with AsyncClient(world.dsn) as client:
            handles = [await client.enqueue(cf.doubled, i) for i in range(3)]
            outputs = await asyncio.gather(*(h.result(timeout=30) for h in handles))
            hooked = await client.enqueue(cf.waiting, "tok-async")
            while True:
                try:
                    await client.resume_hook("tok-async", [1, 2])
                    break
                except HookNotFoundError:
                    await asyncio.sleep(0.05)
            got = await hooked.result(timeout=30)
            listed = await client.list(workflow=cf.doubled)
            return outputs, got, listed[0].status

    outputs, got, status = asyncio.run(main())
    assert outputs == [{"x": i, "doubled": 2 * i} for i in range(3)]
    assert got == {"got": [1, 2]} and status == "completed"


def test_start_handle_waits_for_the_worker_that_drives_the_run(world: Any, cworkers: Any) -> None:
    """`RunHandle.result()` on a run a worker holds waits for it (it used to fail `busy`)."""
    prepare(world)
    client = Client(world.dsn)
    cworkers(world.dsn).worker_id()
    held = client.enqueue(cf.gate, "g-start", 1)
    with world.connect() as conn:
        wait_until(lambda: bool(effects(conn, "g-start")), 30, "the gated step to start")
        from wfctl.runtime import executor as ex

        ex.configure(lambda: world.connect())
        try:
            handle = RunHandle(held.id, cf.gate, "running", drive=True)

            async def waiter() -> Any:
                task = asyncio.create_task(handle.result(timeout=30))
                await asyncio.sleep(0.5)
                assert not task.done()  # waiting, not failed busy
                cf_open(conn)
                return await task

            assert asyncio.run(waiter()) == 1
        finally:
            ex._connect = None
    client.close()


def cf_open(conn: Any) -> None:
    from tests.worker.flows import open_gate

    open_gate(conn, "g-start")


def test_step_context_run_step_and_attempt(world: Any, cworkers: Any) -> None:
    prepare(world)
    cworkers(world.dsn).worker_id()
    client = Client(world.dsn)
    handle = client.enqueue(cf.located, "ctx-1")
    out = handle.result(timeout=30)
    assert out["run_id"] == handle.id and out["attempt"] == 2
    assert out["step_id"].startswith("step_") and out["step_name"] == cf.where.name
    with world.connect() as conn:
        assert [s for s, _ in effects(conn, "ctx-1")] == ["where-1", "where-2"]
        step_ids = conn.execute(
            "SELECT step_id FROM workflow.workflow_steps WHERE run_id = %s", (handle.id,)
        ).fetchall()
    assert [r[0] for r in step_ids] == [out["step_id"]]
    client.close()


def test_result_notification_arrives_without_polling(world: Any, cworkers: Any) -> None:
    """The wait is woken by the terminal transaction's NOTIFY, well before the fallback
    re-read (`FALLBACK_SECONDS`, made 60 s here: without the NOTIFY, the 30 s wait would
    raise RunTimeoutError)."""
    from wfctl.runtime import client as client_mod

    prepare(world)
    cworkers(world.dsn).worker_id()
    client = Client(world.dsn)
    old = client_mod.FALLBACK_SECONDS
    client_mod.FALLBACK_SECONDS = 60.0
    try:
        handle = client.enqueue(cf.gate, "g-notify", 1)
        with world.connect() as conn:
            wait_until(lambda: bool(effects(conn, "g-notify")), 30, "the gated step to start")
            from tests.worker.flows import open_gate

            open_gate(conn, "g-notify")
            assert handle.result(timeout=30) == 1
    finally:
        client_mod.FALLBACK_SECONDS = old
        client.close()
