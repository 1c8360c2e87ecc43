"""Child workflows and schedules on real `wfctl worker` processes, with SIGKILLs and
restarts (tests/runtime/test_flow_features.py covers the same features in-process)."""

from __future__ import annotations

import itertools
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

from tests.worker import flow_jobs
from tests.worker.conftest import (
    WorkerProc,
    doctor_clean,
    double_terminals,
    effects,
    prepare,
    start,
    statuses,
    wait_until,
)
from wfctl.runtime.schedule import Schedule, due_ticks, tick_run_id


def worker(dsn: str, tmp_path: Path, n: int, *args: str) -> WorkerProc:
    return WorkerProc(
        dsn, tmp_path / f"w{n}.log", ["tests.worker.flow_jobs", "--lease", "2s", *args]
    ).start()


def test_children_survive_a_worker_killed_mid_child(
    beta_world: Any, tmp_path: Path, run_cli: Any
) -> None:
    prepare(beta_world)
    procs = [worker(beta_world.dsn, tmp_path, i, "-c", "4") for i in range(2)]
    try:
        with beta_world.connect() as conn:
            parents = [start(conn, flow_jobs.parent_job, f"k{i}") for i in range(3)]
            # Kill whichever worker runs a child step, in the step.
            wait_until(
                lambda: any(s == "child_work" for i in range(3) for s, _ in effects(conn, f"k{i}")),
                30,
                "a child step",
            )
            pid = next(p for i in range(3) for s, p in effects(conn, f"k{i}") if s == "child_work")
            victim = next(w for w in procs if w.pid == pid)
            victim.kill()
            victim.start()
            wait_until(
                lambda: set(statuses(conn, parents).values()) == {"completed"}, 60, "parents"
            )
            children = conn.execute(
                "SELECT id, status::text FROM workflow.workflow_runs WHERE name = %s",
                (flow_jobs.child_job.name,),
            ).fetchall()
            assert len(children) == 3 and {s for _, s in children} == {"completed"}
            for i in range(3):
                ran = [s for s, _ in effects(conn, f"k{i}")]
                assert ran.count("parent_note") == 1 and 1 <= ran.count("child_work") <= 2
            assert not double_terminals(conn)
            assert conn.execute("SELECT count(*) FROM wfctl.run_queue").fetchone() == (0,)
    finally:
        for w in procs:
            if w.alive():
                w.term()
    doctor_clean(run_cli, beta_world.dsn)


def _ticks(conn: psycopg.Connection[Any]) -> list[tuple[str, str]]:
    rows = conn.execute(
        "SELECT id, status::text FROM workflow.workflow_runs WHERE name = %s ORDER BY id",
        (flow_jobs.every_two_seconds.name,),
    ).fetchall()
    return [(str(r[0]), str(r[1])) for r in rows]


def test_a_schedule_runs_once_per_tick_across_workers_and_restarts(
    beta_world: Any, tmp_path: Path, run_cli: Any
) -> None:
    """Three workers serve a 2-second schedule; all are stopped for ~5 s (two or three ticks
    with no worker) and started again: every tick from the first to the last has exactly one
    run, every run completed, and the missed ticks were caught up."""
    prepare(beta_world)
    name = flow_jobs.every_two_seconds.name
    plan = flow_jobs.every_two_seconds.schedule
    procs = [worker(beta_world.dsn, tmp_path, i) for i in range(3)]
    with beta_world.connect() as conn:
        wait_until(lambda: len(_ticks(conn)) >= 3, 30, "three ticks")
        for w in procs:
            w.term()
        stopped = datetime.now(UTC)
        time.sleep(5)
        procs = [worker(beta_world.dsn, tmp_path, 10 + i) for i in range(2)]
        try:
            wait_until(
                lambda: len(_ticks(conn)) >= 7 and {s for _, s in _ticks(conn)} == {"completed"},
                40,
                "more ticks",
            )
        finally:
            for w in procs:
                w.term()
        runs = _ticks(conn)
        assert {s for _, s in runs} == {"completed"}
        # Exactly the tick run ids, contiguous: no tick missed, none twice.
        first = conn.execute(
            "SELECT min(created_at) FROM workflow.workflow_runs WHERE name = %s", (name,)
        ).fetchone()
        ids = [rid for rid, _ in runs]
        tick_of = {tick_run_id(name, t): t for t in _range(plan, ids, name)}
        assert set(ids) <= set(tick_of), "a run id that is no tick's"
        expected = sorted(tick_of[i] for i in ids)
        for a, b in itertools.pairwise(expected):
            assert b - a == timedelta(seconds=2), (a, b)
        assert any(stopped < t < stopped + timedelta(seconds=5) for t in expected), "no catch-up"
        ran = [s for s, _ in effects(conn, "tick")]
        assert len(ran) == len(set(ran)) == len(runs)  # one body per tick
        assert first is not None
    doctor_clean(run_cli, beta_world.dsn)


def _range(plan: Schedule, ids: list[str], name: str) -> list[datetime]:
    """Every tick between the first and the last run's tick (run ids carry the tick time)."""
    from ulid import ULID

    times = [ULID.from_str(i[5:]).datetime for i in ids]
    tick, last, out = min(times) - timedelta(seconds=1), max(times), []
    while True:
        tick = plan.next_after(tick)
        if tick > last:
            return out
        out.append(tick)


def test_due_ticks_catch_up_within_the_window_and_never_before_the_first() -> None:
    plan = Schedule.parse("*/5 * * * *", timedelta(hours=1))
    now = datetime(2026, 1, 1, 12, 3, tzinfo=UTC)
    made: set[str] = set()
    # First start: nothing in range, nothing past is started.
    assert due_ticks(plan, "w", now, made.__contains__, None) == []
    # A run at 11:20, restart at 12:03: 11:25 .. 12:00 (8 ticks) caught up.
    made.add(tick_run_id("w", datetime(2026, 1, 1, 11, 20, tzinfo=UTC)))
    due = due_ticks(plan, "w", now, made.__contains__, None)
    assert due[0] == datetime(2026, 1, 1, 11, 25, tzinfo=UTC) and len(due) == 8
    # Down longer than the window: only ticks inside it.
    made = {tick_run_id("w", datetime(2026, 1, 1, 10, 0, tzinfo=UTC))}
    assert due_ticks(plan, "w", now, made.__contains__, None) == []
    hourly = Schedule.parse("@hourly", timedelta(hours=1))
    made = {tick_run_id("w", datetime(2026, 1, 1, 11, 0, tzinfo=UTC))}
    later = datetime(2026, 1, 1, 12, 30, tzinfo=UTC)  # the 12:00 tick is due (anchor 11:00)
    assert due_ticks(hourly, "w", later, made.__contains__, None) == [
        datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    ]
    # Running: every tick after the last look.
    assert due_ticks(plan, "w", now, made.__contains__, now - timedelta(minutes=11)) == [
        datetime(2026, 1, 1, 11, 55, tzinfo=UTC),
        datetime(2026, 1, 1, 12, 0, tzinfo=UTC),
    ]
    # A scheduler that stalled for 3 hours starts only the ticks of the last hour.
    stalled = due_ticks(plan, "w", now, made.__contains__, now - timedelta(hours=3))
    assert len(stalled) == 12 and stalled[0] == datetime(2026, 1, 1, 11, 5, tzinfo=UTC)
    assert tick_run_id("w", now) == tick_run_id("w", now) != tick_run_id("v", now)


def test_bad_schedules_are_refused_at_definition() -> None:
    import pytest

    from wfctl.runtime import Workflows

    wf = Workflows()
    with pytest.raises(ValueError, match="not a valid cron"):
        wf.workflow(schedule="61 * * * *")(_nothing)
    with pytest.raises(ValueError, match="five cron fields"):
        wf.workflow(schedule="every 5 minutes please")(_nothing)
    with pytest.raises(TypeError, match="at most one parameter"):
        wf.workflow(schedule="@hourly")(_two)
    with pytest.raises(TypeError, match="catchup= needs schedule="):
        wf.workflow(catchup="1h")(_nothing)
    ok = wf.workflow(schedule="0 9 * * 1-5")(_nothing)
    assert ok.schedule.next_after(datetime(2026, 1, 2, 9, 0, tzinfo=UTC)) == datetime(
        2026, 1, 5, 9, 0, tzinfo=UTC
    )  # Friday 9:00 -> Monday 9:00 (UTC)
    assert ok.schedule.args(ok.fn, datetime.now(UTC)) == []


async def _nothing() -> None:
    return None


async def _two(a: int, b: int) -> None:
    return None


def test_a_graceful_cancel_through_the_client_reaches_a_worker(
    beta_world: Any, tmp_path: Path, run_cli: Any
) -> None:
    """Client.cancel(graceful=True) on a run a worker parked on its hook: the worker is woken,
    the saga compensates, the run ends cancelled and `result()` raises RunCancelledError."""
    import pytest

    from tests.runtime import flow_features as ff
    from wfctl.runtime import Client, RunCancelledError

    prepare(beta_world)
    proc = WorkerProc(
        beta_world.dsn, tmp_path / "wc.log", ["tests.runtime.flow_features", "--poll", "1h"]
    ).start()
    try:
        with Client(beta_world.dsn) as client, beta_world.connect() as conn:
            handle = client.enqueue(ff.saga, "gc-1")
            wait_until(
                lambda: (
                    conn.execute(
                        "SELECT 1 FROM workflow.workflow_hooks WHERE token = 'confirm-gc-1'"
                    ).fetchone()
                    is not None
                ),
                30,
                "the saga parked on its hook",
            )
            client.cancel(handle.id, "changed my mind", graceful=True)
            with pytest.raises(RunCancelledError):
                handle.result(timeout=30)
            names = [
                (r[0], r[1])
                for r in conn.execute(
                    "SELECT type, payload_cbor IS NOT NULL FROM workflow.workflow_events"
                    " WHERE run_id = %s ORDER BY id",
                    (handle.id,),
                ).fetchall()
            ]
            types = [t for t, _ in names]
            assert types.index("attr_set") < types.index("run_cancelled")
            released = conn.execute(
                "SELECT status::text FROM workflow.workflow_steps WHERE run_id = %s"
                " AND step_name LIKE '%%release'",
                (handle.id,),
            ).fetchone()
            assert released == ("completed",)
    finally:
        proc.term()
    doctor_clean(run_cli, beta_world.dsn)
