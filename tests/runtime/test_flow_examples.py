"""The examples in docs/examples/ (saga, hook handler, scheduled job), run as written."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest

from tests.runtime.conftest import doctor_clean
from wfctl.cli.commands.run import load_target
from wfctl.runtime import executor as ex
from wfctl.runtime.store import Store
from wfctl.worker.scheduler import Scheduler


def example(spec: str) -> Any:
    return load_target(f"docs/examples/{spec}")


def drive(store: Store, wdef: Any, run_id: str) -> ex.Done:
    runner = ex.Executor(wdef.registry, store)
    try:
        return runner.drive(run_id, wait=True, timeout=0.5)
    finally:
        runner.close()


@pytest.fixture
def saga() -> Iterator[Any]:
    trip = example("saga.py:trip")
    module = __import__(trip.fn.__module__, fromlist=["ledger"])
    module.ledger.clear()
    yield trip, module.ledger


def test_saga_compensates_a_failed_charge(store: Store, saga: Any) -> None:
    trip, ledger = saga
    run_id = ex.create(trip, ["t1", 5000], conn=store.conn).run_id
    done = drive(store, trip, run_id)
    assert done.status == "failed" and "card declined" in (done.error or "")
    assert ledger == [
        "flight booked t1",
        "hotel booked t1",
        "hotel cancelled HT-t1",
        "flight cancelled FL-t1",
    ]


def test_saga_cancelled_while_waiting_undoes_everything(
    store: Store, saga: Any, world: Any, run_cli: Any
) -> None:
    trip, ledger = saga
    run_id = ex.create(trip, ["t2", 300], conn=store.conn).run_id
    assert drive(store, trip, run_id).status == "running"  # waits for confirm-t2
    store.request_cancel(run_id, "customer cancelled")
    assert drive(store, trip, run_id).status == "cancelled"
    assert ledger[-3:] == ["refunded ch-t2", "hotel cancelled HT-t2", "flight cancelled FL-t2"]
    doctor_clean(run_cli, world.dsn)


def test_saga_confirmed(store: Store, saga: Any) -> None:
    from wfctl.runtime import serde

    trip, ledger = saga
    run_id = ex.create(trip, ["t3", 10], conn=store.conn).run_id
    drive(store, trip, run_id)
    store.resume_hook("confirm-t3", serde.dumps({"ok": True}))
    done = drive(store, trip, run_id)
    assert done.status == "completed" and done.output["receipt"] == "ch-t3"
    assert not any("cancelled" in line for line in ledger)


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


def test_a_web_handler_resumes_the_hook(
    store: Store, world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    expense = example("hook_handler.py:expense")
    module = __import__(expense.fn.__module__, fromlist=["app"])
    for var in ("WORKFLOW_POSTGRES_URL", "DATABASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("WFCTL_DATABASE_URL", world.dsn)
    run_id = ex.create(expense, ["exp-7", 120], conn=store.conn, queue="default").run_id
    assert drive(store, expense, run_id).status == "running"
    server = make_server("127.0.0.1", 0, module.app, handler_class=_Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_port}/expenses/exp-7/decision"

    def post(body: bytes) -> tuple[int, bytes]:
        request = urllib.request.Request(url, data=body, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    try:
        assert post(b"not json")[0] == 400
        status, body = post(b'{"approved": "yes"}')  # not a Decision: refused, nothing written
        assert status == 400 and b"approved" in body
        assert "hook_received" not in [e.type for e in store.read_events(run_id)]
        status, body = post(json.dumps({"approved": True, "by": "ana"}).encode())
        assert status == 202 and json.loads(body) == {"run_id": run_id}
        # The resume woke the queued run in the same transaction.
        ready = store.conn.execute(
            "SELECT ready_at IS NOT NULL, wake_seq FROM wfctl.run_queue WHERE run_id = %s",
            (run_id,),
        ).fetchone()
        assert ready is not None and ready[0] and ready[1] >= 1
        done = drive(store, expense, run_id)
        assert done.status == "completed"
        assert done.output == {"expense": "exp-7", "status": "paid 120 for exp-7"}
        # Nothing waits any more: the run's end took its hook row, so a late decision is
        # kept (as one arriving before its hook is) and expires unless a run asks for it.
        status, body = post(b'{"approved": false}')
        assert status == 202 and json.loads(body) == {"run_id": None}
    finally:
        server.shutdown()


def test_the_scheduled_report_runs_once_per_tick(store: Store, world: Any) -> None:
    report = example("scheduled_report.py:quarter_hour_report")
    module = __import__(report.fn.__module__, fromlist=["sent"])
    module.sent.clear()
    now = [datetime(2026, 3, 2, 10, 7, tzinfo=UTC)]
    stop = threading.Event()

    def scheduler() -> Scheduler:
        return Scheduler(report.registry, world.connect, "default", stop, clock=lambda: now[0])

    first, second = scheduler(), scheduler()  # two workers
    first.look(store)
    assert first.started == []  # a new schedule starts with the next tick, not a past one
    now[0] = datetime(2026, 3, 2, 10, 15, 1, tzinfo=UTC)
    first.look(store)
    second.since = dict(first.since)
    second.since[report.name] = datetime(2026, 3, 2, 10, 7, tzinfo=UTC)
    second.look(store)  # the same tick: no second run
    assert [t for _, t, _ in first.started] == [datetime(2026, 3, 2, 10, 15, tzinfo=UTC)]
    assert second.started == []
    # A restart at 10:52 (since unknown): 10:30 and 10:45 are caught up.
    now[0] = datetime(2026, 3, 2, 10, 52, tzinfo=UTC)
    third = scheduler()
    third.look(store)
    ticks = [t for _, t, _ in third.started]
    assert ticks == [
        datetime(2026, 3, 2, 10, 30, tzinfo=UTC),
        datetime(2026, 3, 2, 10, 45, tzinfo=UTC),
    ]
    for _, _, run_id in first.started + third.started:
        assert drive(store, report, run_id).status == "completed"
    assert module.sent == [
        "2026-03-02T10:15:00+00:00: 42 orders",
        "2026-03-02T10:30:00+00:00: 42 orders",
        "2026-03-02T10:45:00+00:00: 42 orders",
    ]
    assert timedelta(0) < now[0] - ticks[-1] < timedelta(minutes=15)
