"""Hooks users can trust, on real worlds of both eras: a deadline (`hook.wait(timeout=)`)
raced durably with the payload, typed payloads refused at `resume_hook`, asyncio timers
refused with a documented error."""

from __future__ import annotations

import time
from typing import Any

from tests.runtime import hookflows as hf
from wfctl.runtime import executor as ex
from wfctl.runtime import replay, serde
from wfctl.runtime.store import Store


def start(store: Store, wdef: Any, *args: Any) -> str:
    return ex.create(wdef, list(args), conn=store.conn).run_id


def drive(store: Store, run_id: str, *, wait: bool = False, timeout: float = 30) -> ex.Done:
    runner = ex.Executor(hf.wf, store)
    try:
        return runner.drive(run_id, wait=wait, timeout=timeout if wait else None)
    finally:
        runner.close()


def types(store: Store, run_id: str) -> list[str]:
    return [e.type for e in store.read_events(run_id)]


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
