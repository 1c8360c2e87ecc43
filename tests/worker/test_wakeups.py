"""Wake-ups with the polling fallback switched off (`--poll 1h`): every hook resumed from
outside, every run created and every durable timer must still reach an idle worker, through
the NOTIFY or the slot's sleep until the queue's next `ready_at`. A lost wake-up would leave a
run waiting for an hour; the waits below give up long before that. (Liveness, not speed:
latency is measured by benchmarks/bench_worker.py --wake.)"""

from __future__ import annotations

from typing import Any

from tests.worker import flows
from tests.worker.conftest import effects, prepare, resume, start, statuses, wait_until
from wfctl.runtime import serde

NO_POLL = ("--poll", "1h")


def parked(conn: Any, run_ids: list[str]) -> bool:
    """Every run waits on its hook and no worker holds it."""
    rows = conn.execute(
        "SELECT count(*) FROM wfctl.run_queue"
        " WHERE run_id = ANY(%s) AND ready_at IS NULL AND lease_owner IS NULL",
        (run_ids,),
    ).fetchone()
    return bool(rows and rows[0] == len(run_ids))


def completed(conn: Any, run_ids: list[str]) -> bool:
    return set(statuses(conn, run_ids).values()) == {"completed"}


def test_hooks_and_creations_wake_an_idle_worker_without_polling(
    beta_world: Any, workers: Any
) -> None:
    prepare(beta_world)
    with beta_world.connect() as conn:
        w = workers(beta_world.dsn, *NO_POLL, "--concurrency", "3")
        w.worker_id()
        # One at a time: the worker is idle (every slot asleep) at each creation and resume.
        for i in range(15):
            key = f"one{i}"
            run_id = start(conn, flows.hooked, key)
            wait_until(lambda r=run_id: parked(conn, [r]), 60, f"{key} parked")
            assert resume(conn, f"hook-{key}", serde.dumps({"key": key}, "payload"))
            wait_until(lambda r=run_id: completed(conn, [r]), 60, f"{key} completed")
        # A burst: more runs made ready at once than the worker has slots.
        keys = [f"burst{i}" for i in range(8)]
        run_ids = [start(conn, flows.hooked, key) for key in keys]
        wait_until(lambda: parked(conn, run_ids), 60, "the burst parked")
        for key in keys:
            assert resume(conn, f"hook-{key}", serde.dumps({"key": key}, "payload"))
        wait_until(lambda: completed(conn, run_ids), 60, "the burst completed")
        assert w.term() == 0, w.log()[-3000:]


def test_timers_wake_an_idle_worker_without_polling(beta_world: Any, workers: Any) -> None:
    prepare(beta_world)
    with beta_world.connect() as conn:
        w = workers(beta_world.dsn, *NO_POLL, "--concurrency", "2")
        w.worker_id()
        for i in range(5):
            run_id = start(conn, flows.sleepy, f"one{i}", 0.2)
            wait_until(lambda r=run_id: completed(conn, [r]), 60, f"sleepy run {i}")
        # More sleeping runs than slots, due at different moments.
        run_ids = [start(conn, flows.sleepy, f"many{i}", 0.1 * (i % 4)) for i in range(8)]
        wait_until(lambda: completed(conn, run_ids), 60, "the sleeping runs")
        assert w.term() == 0, w.log()[-3000:]


def test_runs_recovered_together_reach_as_many_idle_slots(beta_world: Any, workers: Any) -> None:
    """Recovery makes several runs ready in one transaction, whose NOTIFY the server delivers
    once: a worker woken by it must pass the other runs on to its other idle slots (each claim
    reads whether another run is ready). Before, one slot took one run and the rest waited for
    the poll fallback (an hour here): the three held steps below never ran side by side."""
    prepare(beta_world)
    keys = [f"held{i}" for i in range(3)]
    with beta_world.connect() as conn:
        a = workers(beta_world.dsn, "--lease", "1.5s", "--concurrency", "3")
        a.worker_id()
        run_ids = [start(conn, flows.gated, key, 1) for key in keys]
        wait_until(
            lambda: all(any(pid == a.pid for _, pid in effects(conn, k)) for k in keys),
            60,
            "worker A in every run's step",
        )
        b = workers(beta_world.dsn, *NO_POLL, "--lease", "1.5s", "--concurrency", "3")
        b.worker_id()
        a.kill()  # its leases expire; B's heartbeat recovers all three at once
        wait_until(
            lambda: all(any(pid == b.pid for _, pid in effects(conn, k)) for k in keys),
            60,
            "worker B in every run's step at once",
        )
        for key in keys:
            flows.open_gate(conn, key)
        wait_until(lambda: completed(conn, run_ids), 60, "the recovered runs")
        assert "3 run(s) past their lease made ready" in b.log()
        assert b.term() == 0, b.log()[-3000:]
