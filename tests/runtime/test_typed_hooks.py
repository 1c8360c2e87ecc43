"""Hooks users can trust, on real worlds of both eras: a deadline (`hook.wait(timeout=)`)
raced durably with the payload, typed payloads refused at `resume_hook`, asyncio timers
refused with a documented error."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.runtime import drivers
from tests.runtime import hookflows as hf
from tests.runtime.drivers import start, types
from wfctl.runtime import (
    ConnectionError,
    DecodeError,
    HookNotFoundError,
    IdempotencyConflictError,
    RunCancelledError,
    WorkflowError,
    replay,
    serde,
)
from wfctl.runtime import executor as ex
from wfctl.runtime.store import Store


def drive(store: Store, run_id: str, *, wait: bool = False, timeout: float = 30) -> ex.Done:
    return drivers.drive(hf.wf, store, run_id, wait=wait, timeout=timeout)


def replays(store: Store, run_id: str) -> None:
    [result] = replay.replay_runs(store.conn, [run_id], hf.wf)
    assert result.ok, result


def test_a_payload_before_the_deadline_wins_and_closes_the_wait(store: Store) -> None:
    run_id = start(store, hf.ship_or_timeout, "o1", 3600)
    assert drive(store, run_id).status == "running"  # parked on the hook
    assert "wait_created" in types(store, run_id)
    store.resume_hook("ship-o1", serde.dumps({"carrier": "ups", "weight": "1.5"}))
    done = drive(store, run_id)
    assert done.status == "completed" and done.output == "ups:2.5"
    log = types(store, run_id)
    assert log.count("wait_completed") == 1  # the deadline is closed, not left waiting
    assert log.index("hook_received") < log.index("wait_completed") < log.index("step_created")
    replays(store, run_id)


def test_the_deadline_first_raises_hook_timeout_and_keeps_the_hook(store: Store) -> None:
    run_id = start(store, hf.ship_or_timeout, "o2", 0.3)
    assert drive(store, run_id).status == "running"
    time.sleep(0.5)
    assert drive(store, run_id).status == "running"  # timed out, now waits without deadline
    log = types(store, run_id)
    assert "wait_completed" in log and "hook_received" not in log
    assert log.count("step_completed") == 1  # the `timed out` step ran
    store.resume_hook("ship-o2", serde.dumps({"carrier": "dhl", "weight": "2"}))
    done = drive(store, run_id)
    assert done.status == "completed" and done.output == "late:dhl:2"
    replays(store, run_id)


def test_asyncio_timers_are_refused_with_a_documented_error(store: Store) -> None:
    run_id = start(store, hf.asyncio_timer)
    done = drive(store, run_id, wait=True)
    assert done.status == "completed" and done.output == "refused"


# --- the client: typed payloads, early deliveries, one decoding path, smaller points -------


@pytest.fixture
def client(world: Any) -> Any:
    from wfctl.runtime import Client

    with Client(world.dsn, allow_node_peer=True) as c:
        yield c


def test_a_malformed_typed_payload_is_refused_at_resume_and_the_run_untouched(
    store: Store, client: Any
) -> None:
    run_id = start(store, hf.typed_hook, "t1")
    assert drive(store, run_id).status == "running"
    before = types(store, run_id)
    for bad in ({"carrier": "ups"}, {"carrier": 5, "weight": "1"}, "a string"):
        with pytest.raises(DecodeError) as refused:
            client.resume_hook("typed-t1", bad)
        assert isinstance(refused.value, WorkflowError)
    assert types(store, run_id) == before  # nothing written
    assert client.resume_hook("typed-t1", {"carrier": "ups", "weight": "2.5"}) == run_id
    done = drive(store, run_id)
    assert done.status == "completed" and done.output == "ups"


def test_a_workflow_meets_an_unvalidated_bad_payload_as_a_workflow_error(store: Store) -> None:
    run_id = start(store, hf.typed_hook, "t2")
    assert drive(store, run_id).status == "running"
    store.resume_hook("typed-t2", serde.dumps({"carrier": "ups"}))  # bypasses the client
    done = drive(store, run_id)
    assert done.status == "completed" and done.output == "undecodable: DecodeError"


def test_a_delivery_before_its_hook_is_kept_and_handed_over_once(store: Store, client: Any) -> None:
    assert client.resume_hook("early-1", {"n": 1}) is None  # no hook yet: kept
    run_id = start(store, hf.plain_hook, "early-1")
    done = drive(store, run_id)
    assert done.status == "completed" and done.output == {"n": 1}
    assert types(store, run_id).count("hook_received") == 1
    left = store.conn.execute("SELECT count(*) FROM wfctl.hook_inbox").fetchone()
    assert left is not None and left[0] == 0
    with pytest.raises(HookNotFoundError):
        client.resume_hook("early-2", {}, keep=False)


def test_a_kept_delivery_expires(store: Store, client: Any) -> None:
    assert client.resume_hook("early-3", {"n": 3}, keep="0.2s") is None
    time.sleep(0.4)
    run_id = start(store, hf.plain_hook, "early-3")
    assert drive(store, run_id).status == "running"  # nothing handed over
    assert "hook_received" not in types(store, run_id)


def test_resume_on_an_ended_run(store: Store, client: Any) -> None:
    run_id = start(store, hf.plain_hook, "ended-1")
    assert drive(store, run_id).status == "running"
    client.cancel(run_id, reason="customer left")
    with pytest.raises(RunCancelledError) as cancelled:
        client.get(run_id).result(timeout=5)
    assert cancelled.value.reason == "customer left"
    with pytest.raises(HookNotFoundError):  # its hook row went with the run's end
        client.resume_hook("ended-1", {}, keep=False)


def test_every_handle_decodes_through_one_path(store: Store, world: Any, client: Any) -> None:
    from decimal import Decimal

    handle = client.enqueue(hf.priced, "o-9", cents=2199)
    assert drive(store, handle.id).status == "completed"
    assert handle.result(timeout=5) == hf.Shipment("o-9", Decimal("21.99"))
    assert client.get(handle.id, hf.priced).result(timeout=5).weight == Decimal("21.99")
    assert client.get(handle.id).result(timeout=5) == {"carrier": "o-9", "weight": "21.99"}

    async def via_async() -> Any:
        from wfctl.runtime import AsyncClient

        async with AsyncClient(world.dsn, allow_node_peer=True) as aclient:
            return await (await aclient.get(handle.id, hf.priced)).result(timeout=5)

    assert asyncio.run(via_async()) == hf.Shipment("o-9", Decimal("21.99"))


def test_an_idempotency_key_with_other_arguments_is_refused(client: Any) -> None:
    first = client.enqueue(hf.priced.options(idempotency_key="k-1"), "o-1", 100)
    assert client.enqueue(hf.priced, "o-1", 100, idempotency_key="k-1").id == first.id
    with pytest.raises(IdempotencyConflictError) as conflict:
        client.enqueue(hf.priced.options(idempotency_key="k-1"), "o-1", 200)
    assert conflict.value.run_id == first.id


def test_smaller_points(store: Store, world: Any, client: Any) -> None:
    with pytest.raises(ValueError, match="not a run status"):
        client.list(status="bogus")
    done = drive(store, start(store, hf.naive_sleep), wait=True)
    assert done.output == "refused: True"
    from wfctl.runtime import Client

    with pytest.raises(ConnectionError) as refused:
        Client("postgresql://nobody@127.0.0.1:1/none").get("wrun_x")
    assert isinstance(refused.value, WorkflowError) and "--dsn" not in str(refused.value)


def test_a_world_shared_with_node_keeps_nothing_by_default(
    store: Store, world: Any, client: Any
) -> None:
    """A token a Node run will create is not wfctl's to hold: with the Node world's queue in
    the database, a delivery is not kept unless `keep=` says so, and a kept one is handed
    only to a hook of a wfctl run."""
    store.conn.execute("CREATE SCHEMA graphile_worker")
    store.conn.execute("CREATE TABLE graphile_worker._private_tasks (id int)")
    with pytest.raises(HookNotFoundError):
        client.resume_hook("node-1", {"n": 1})
    assert client.resume_hook("node-1", {"n": 1}, keep="1m") is None
    node_run = "wrun_01JNODE0000000000000000000"
    store.create_run(node_run, "workflow//node//flow", serde.dumps([]), deployment_id="dpl_n")
    tx = store.tx(node_run)
    tx.create_hook("hook_01JNODE0000000000000000000", "node-1", None)
    tx.flush(commit=True)
    assert store.take_kept(["node-1"]) == []  # a Node run's hook: left to expire
    assert "hook_received" not in types(store, node_run)
    kept = store.conn.execute("SELECT count(*) FROM wfctl.hook_inbox").fetchone()
    assert kept is not None and kept[0] == 1


def test_two_takers_hand_a_kept_delivery_over_once(store: Store, world: Any) -> None:
    import threading

    import psycopg

    run_id = start(store, hf.plain_hook, "race-1")
    assert drive(store, run_id).status == "running"
    store.conn.execute(
        "INSERT INTO wfctl.hook_inbox (token, payload, expires_at)"
        " VALUES ('race-1', %s, now() + interval '1 minute')",
        (serde.dumps({"n": 7}),),
    )
    got: list[list[str]] = []
    barrier = threading.Barrier(4)

    def take() -> None:
        with psycopg.connect(world.dsn, autocommit=True) as conn:
            mine = Store(conn)
            barrier.wait()
            got.append(mine.take_kept(["race-1"]))

    threads = [threading.Thread(target=take) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(len(g) for g in got) == [0, 0, 0, 1]
    assert types(store, run_id).count("hook_received") == 1
    done = drive(store, run_id)
    assert done.status == "completed" and done.output == {"n": 7}


def test_a_hook_row_outliving_its_run_is_run_ended(store: Store, client: Any) -> None:
    """A hook row that outlived its run (slot-era token retention, or a crash between the
    package's run end and its hook delete): `RunEndedError`, nothing written."""
    from wfctl.runtime import RunEndedError

    run_id = start(store, hf.plain_hook, "ended-2")
    assert drive(store, run_id).status == "running"
    store.conn.execute(
        "UPDATE workflow.workflow_runs SET status = 'completed' WHERE id = %s", (run_id,)
    )
    before = types(store, run_id)
    with pytest.raises(RunEndedError) as ended:
        client.resume_hook("ended-2", {})
    assert ended.value.status == "completed" and ended.value.run_id == run_id
    assert types(store, run_id) == before
