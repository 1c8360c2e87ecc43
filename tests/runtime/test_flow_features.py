"""Retries with backoff, the graceful cancellation request and child workflows, on real
worlds of both eras, driven in-process (tests/worker/test_flow_workers.py runs them on
worker processes with crashes)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.runtime import drivers
from tests.runtime import flow_features as ff
from tests.runtime.conftest import doctor_clean
from tests.runtime.drivers import start, types
from wfctl.runtime import children, serde
from wfctl.runtime import executor as ex
from wfctl.runtime.retries import DEFAULT_POLICY, RetryPolicy
from wfctl.runtime.store import CANCEL_ATTRIBUTE, Store


@pytest.fixture(autouse=True)
def _reset() -> None:
    ff.reset()


def drive(store: Store, run_id: str, *, wait: bool = False, timeout: float = 30) -> ex.Done:
    return drivers.drive(ff.wf, store, run_id, wait=wait, timeout=timeout)


# --- retries ---------------------------------------------------------------------------------


def test_the_policy_doubles_caps_and_jitters() -> None:
    policy = RetryPolicy(backoff=1.0, max_backoff=5.0, jitter=0.5)
    assert [policy.ceiling(n) for n in range(1, 6)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    for attempt in range(1, 8):
        for _ in range(200):
            d = policy.delay(attempt)
            assert policy.ceiling(attempt) * 0.5 <= d <= policy.ceiling(attempt)
    assert len({round(policy.delay(3), 6) for _ in range(50)}) > 10  # not in lockstep
    assert RetryPolicy(backoff=0).delay(3) == 0  # backoff=0: at once, as before
    assert DEFAULT_POLICY.backoff == 1.0 and DEFAULT_POLICY.max_backoff == 60.0
    assert ff.capped.retry == RetryPolicy(10.0, 0.3, 0.0)
    with pytest.raises(ValueError):
        RetryPolicy(jitter=2)


def test_default_retries_back_off_durably(store: Store) -> None:
    """A failing step's retry is recorded (step_retrying retryAfter, the row's retry_after)
    0.5-1 s after the failure by default; a fresh driver (a restart) does not run it early."""
    run_id = start(store, ff.retry_default, "d1")
    done = drive(store, run_id)
    assert done.status == "running" and ff.calls["once:d1"] == 1
    retrying = [e for e in store.read_events(run_id) if e.type == "step_retrying"]
    assert len(retrying) == 1
    after = retrying[0].data["retryAfter"]  # type: ignore[index]
    delay = (after - retrying[0].created_at).total_seconds()
    assert 0.4 <= delay <= 1.1, delay
    assert done.next_due is not None and abs((done.next_due - after).total_seconds()) < 0.01
    row = store.conn.execute(
        "SELECT retry_after FROM workflow.workflow_steps WHERE run_id = %s", (run_id,)
    ).fetchone()
    assert row is not None and row[0] is not None
    # A restarted driver before the due time: nothing runs, the same due time is reported.
    again = drive(store, run_id)
    assert again.status == "running" and ff.calls["once:d1"] == 1
    assert again.next_due is not None and abs((again.next_due - after).total_seconds()) < 0.01
    final = drive(store, run_id, wait=True)
    assert final.status == "completed" and final.output == 2
    started = [e for e in store.read_events(run_id) if e.type == "step_started"]
    assert started[1].created_at >= after


def test_backoff_doubles_per_attempt_and_fails_in_the_end(
    store: Store, world: Any, run_cli: Any
) -> None:
    run_id = start(store, ff.retrying, "r1")
    t0 = time.monotonic()
    done = drive(store, run_id, wait=True)
    elapsed = time.monotonic() - t0
    assert done.status == "failed" and ff.calls["always:r1"] == 4
    events = store.read_events(run_id)
    gaps = [
        (e.data["retryAfter"] - e.created_at).total_seconds()  # type: ignore[index]
        for e in events
        if e.type == "step_retrying"
    ]
    assert len(gaps) == 3
    for n, gap in enumerate(gaps, start=1):  # 0.2 s doubled, less up to half of it
        ceiling = 0.2 * 2 ** (n - 1)
        assert ceiling * 0.5 - 0.01 <= gap <= ceiling + 0.01, (n, gaps)
    assert elapsed >= sum(0.2 * 2 ** (n - 1) * 0.5 for n in range(1, 4)) - 0.05
    doctor_clean(run_cli, world.dsn)


def test_max_backoff_caps_every_delay(store: Store) -> None:
    run_id = start(store, ff.retry_capped, "c1")
    done = drive(store, run_id, wait=True)
    assert done.status == "failed" and ff.calls["capped:c1"] == 6
    gaps = [
        (e.data["retryAfter"] - e.created_at).total_seconds()  # type: ignore[index]
        for e in store.read_events(run_id)
        if e.type == "step_retrying"
    ]
    assert len(gaps) == 5 and all(0.29 <= g <= 0.31 for g in gaps), gaps


# --- cancellation ----------------------------------------------------------------------------


def test_a_cancelled_saga_compensates_then_ends_cancelled(
    store: Store, world: Any, run_cli: Any
) -> None:
    run_id = start(store, ff.saga, "s1")
    assert drive(store, run_id).status == "running"  # parked on its hook
    assert store.request_cancel(run_id, "customer changed their mind") == "running"
    row = store.read_run(run_id)
    assert row is not None and row.status == "running"
    assert row.attributes[CANCEL_ATTRIBUTE] == "customer changed their mind"
    assert store.request_cancel(run_id, "again") == "requested"  # recorded once
    done = drive(store, run_id)
    assert done.status == "cancelled"
    assert ff.calls == {"reserve:s1": 1, "release:s1": 1}
    log = types(store, run_id)
    assert log.index("attr_set") < log.index("run_cancelled")
    assert log[-4:] == ["step_created", "step_started", "step_completed", "run_cancelled"]
    assert log.count("attr_set") == 1
    cancelled = store.read_events(run_id)[-1]
    assert cancelled.data == {"cancelReason": "customer changed their mind"}
    # The hook is gone with the run's end; nothing is left for doctor.
    assert not store.conn.execute(
        "SELECT 1 FROM workflow.workflow_hooks WHERE run_id = %s", (run_id,)
    ).fetchall()
    doctor_clean(run_cli, world.dsn)
    # A replay of the whole log agrees (the request is at the same place).
    assert drive(store, run_id).status == "cancelled"


def test_an_uncaught_request_cancels_at_the_next_await(
    store: Store, world: Any, run_cli: Any
) -> None:
    run_id = start(store, ff.sleeper, "z1")
    assert drive(store, run_id).status == "running"
    store.request_cancel(run_id, None)
    assert drive(store, run_id).status == "cancelled"
    assert store.read_events(run_id)[-1].data == {"cancelReason": "cancellation requested"}
    assert not store.conn.execute(
        "SELECT 1 FROM workflow.workflow_waits WHERE run_id = %s", (run_id,)
    ).fetchall()
    doctor_clean(run_cli, world.dsn)


def test_a_workflow_may_absorb_the_request(store: Store) -> None:
    run_id = start(store, ff.absorbs, "a1")
    drive(store, run_id)
    store.request_cancel(run_id, "stop")
    done = drive(store, run_id)
    assert done.status == "completed" and done.output == "stopped: stop"


def test_a_request_during_a_step_is_seen_after_it(store: Store, world: Any, run_cli: Any) -> None:
    """The step in flight finishes; its transaction is refused (an unseen event), the run is
    replayed with the request at its place, the workflow compensates and ends cancelled."""
    run_id = start(store, ff.busy, "b1", 1.0)
    result: dict[str, ex.Done] = {}
    conn2 = store.conn.__class__.connect(world.dsn, autocommit=True)
    other = Store(conn2)
    thread = threading.Thread(target=lambda: result.update(done=drive(other, run_id)))
    thread.start()
    deadline = time.monotonic() + 10
    while ff.calls.get("slow:b1") is None and time.monotonic() < deadline:
        time.sleep(0.01)
    store.request_cancel(run_id, "mid-step")
    thread.join(30)
    conn2.close()
    assert result["done"].status == "cancelled"
    assert ff.calls.get("reserve:b1") is None and ff.calls["release:b1"] == 1
    doctor_clean(run_cli, world.dsn)


def test_cancel_graceful_from_the_cli(store: Store, world: Any, run_cli: Any) -> None:
    run_id = start(store, ff.saga, "g1")
    drive(store, run_id)
    status, out, err = run_cli(
        "--dsn", world.dsn, "--format", "json", "runs", "cancel", run_id, "--graceful",
        "--reason", "ops",
    )  # fmt: skip
    assert status == 0, err
    assert '"requested": true' in out
    assert drive(store, run_id).status == "cancelled"
    status, out, _ = run_cli("--dsn", world.dsn, "runs", "cancel", run_id, "--graceful")
    assert status == 2 and "already cancelled" in out
    status, _, err = run_cli(
        "--dsn", world.dsn, "runs", "cancel", "--where", "status=running", "--graceful"
    )
    assert status == 64


# --- children --------------------------------------------------------------------------------


def _children_of(store: Store, run_id: str) -> list[str]:
    return [
        serde.loads(e.data["result"])  # type: ignore[index]
        for e in store.read_events(run_id)
        if e.type == "step_completed"
        and e.data
        and e.data.get("stepName") == "step//wfctl//start_child"
    ]


def test_a_parent_awaits_its_children(store: Store, world: Any, run_cli: Any) -> None:
    run_id = start(store, ff.parent, 20)
    assert drive(store, run_id).status == "running"  # both children started, parked on a hook
    first, second = _children_of(store, run_id)
    child = store.read_run(first)
    assert child is not None and child.status == "pending"
    assert child.attributes[children.PARENT_RUN] == run_id
    queued = store.conn.execute(
        "SELECT queue FROM wfctl.run_queue WHERE run_id = %s", (first,)
    ).fetchone()
    assert queued == ("default",)
    # The child's creation and the parent's record are one transaction: same created_at.
    created = {e.type: e.created_at for e in store.read_events(first)}
    recorded = [e for e in store.read_events(run_id) if e.type == "step_completed"]
    assert created["run_created"] == recorded[0].created_at
    # Replaying the parent creates no other child.
    assert drive(store, run_id).status == "running"
    assert _children_of(store, run_id) == [first, second]
    assert drive(store, second).status == "completed"  # delivers to the parent
    assert drive(store, run_id).status == "running"  # still awaits the first
    assert drive(store, first).status == "completed"
    done = drive(store, run_id)
    assert done.status == "completed"
    assert done.output == {"a": 40, "b": 42, "ids": [first, second]}
    doctor_clean(run_cli, world.dsn)


def test_a_failed_child_raises_in_the_parent(store: Store) -> None:
    run_id = start(store, ff.parent_catches, 3)
    drive(store, run_id)
    (child,) = _children_of(store, run_id)
    assert drive(store, child).status == "failed"
    done = drive(store, run_id)
    assert done.status == "completed"
    assert done.output["status"] == "failed" and "bad 3" in done.output["error"]
    assert done.output["code"] == "USER_ERROR"


def test_a_lost_delivery_is_made_by_the_sweep(
    store: Store, world: Any, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child's end and its delivery are two transactions: a crash between them (here:
    no delivery), and a child cancelled from outside, are found by `reconcile`."""
    run_id = start(store, ff.parent, 1)
    drive(store, run_id)
    first, second = _children_of(store, run_id)
    with monkeypatch.context() as m:
        m.setattr(children, "deliver", lambda _store, _row: None)
        assert drive(store, first).status == "completed"
    assert drive(store, run_id).status == "running"  # still waiting
    assert children.reconcile(store) == 1
    assert children.reconcile(store) == 0  # once
    store.cancel(second, "ops")  # from outside: no driver delivers
    assert children.reconcile(store) == 1
    done = drive(store, run_id)
    assert done.status == "failed" and "cancelled" in (done.error or "")
    doctor_clean(run_cli, world.dsn)


def test_a_cancelled_parent_stops_waiting(store: Store, world: Any, run_cli: Any) -> None:
    run_id = start(store, ff.parent_of_waiter, "pw-1")
    drive(store, run_id)
    (child,) = _children_of(store, run_id)
    drive(store, child)
    store.request_cancel(run_id, "parent cancelled")
    assert drive(store, run_id).status == "cancelled"
    store.conn.execute("SELECT 1")
    # The child goes on (children outlive a cancelled parent); its end is not delivered.
    store.resume_hook("pw-1", serde.dumps("payload"))
    assert drive(store, child).status == "completed"
    doctor_clean(run_cli, world.dsn)


def test_start_inside_a_workflow_points_to_start_child(store: Store) -> None:
    run_id = start(store, ff.starts_inside)
    done = drive(store, run_id)
    assert done.status == "failed"
    assert "start_child" in (done.error or "") and "run_in_executor" not in (done.error or "")


def test_wfctl_run_says_which_child_a_parent_waits_for(world: Any, run_cli: Any) -> None:
    status, _out, err = run_cli(
        "--dsn", world.dsn, "run", "tests.runtime.flow_features:parent_catches", "[4]"
    )
    assert status == 0, err
    assert "waits for its child run wrun_" in err and "wfctl worker" in err
    assert "wfctl:child:" not in err  # not offered as a hook to resume by hand
