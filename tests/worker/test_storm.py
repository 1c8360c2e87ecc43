"""Crash storm: mixed workflows on several worker processes, SIGKILLed at random moments and
restarted; every run must end as expected, doctor must be clean, no entity may end twice,
and every step body must have run at least once and never more than its attempt budget.

Scale by environment: WFCTL_STORM_RUNS (default 36), WFCTL_STORM_KILLS (6),
WFCTL_STORM_WORKERS (3), WFCTL_STORM_SEED. The benchmark runs it large.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tests.worker import flows
from tests.worker.conftest import (
    WorkerProc,
    doctor_clean,
    double_terminals,
    prepare,
    resume,
    start,
    statuses,
)
from wfctl import sql
from wfctl.runtime import serde
from wfctl.runtime.store import TERMINAL

BUDGET = {"work": 4, "flaky": 4, "bouncy": 4, "fan": 4, "slowpoke": 3, "suicide": 2}


@dataclass
class Planned:
    run_id: str
    key: str
    kind: str
    expected: str
    output: Any = None


@dataclass
class StormResult:
    runs: int
    kills: int
    self_kills: int
    seconds: float
    statuses: Counter[str] = field(default_factory=Counter)
    # runs that failed instead of their expected status because kills used up a step's
    # attempts, by workflow kind
    exhausted: Counter[str] = field(default_factory=Counter)


def plan_runs(conn: Any, n: int, rng: random.Random, prefix: str = "s") -> list[Planned]:
    kinds = ["chain", "chain", "retrying", "sleepy", "hooked", "parallel", "timed"]
    planned: list[Planned] = []
    for i in range(n):
        key = f"{prefix}{i}"
        kind = "doomed" if i % 20 == 7 else rng.choice(kinds)
        if kind == "chain":
            p = Planned(start(conn, flows.chain, key, 5), key, kind, "completed", 10)
        elif kind == "retrying":
            p = Planned(start(conn, flows.retrying, key, 1), key, kind, "completed")
        elif kind == "sleepy":
            p = Planned(start(conn, flows.sleepy, key, 0.3), key, kind, "completed", 1)
        elif kind == "hooked":
            p = Planned(start(conn, flows.hooked, key), key, kind, "completed", {"key": key})
        elif kind == "parallel":
            p = Planned(start(conn, flows.parallel, key, 3), key, kind, "completed", 5)
        elif kind == "timed":
            p = Planned(start(conn, flows.timed, key), key, kind, "completed")
        else:
            p = Planned(start(conn, flows.doomed, key), key, kind, "failed")
        planned.append(p)
    return planned


def run_storm(
    db: Any,
    run_cli: Any,
    workers: Any,
    *,
    runs: int,
    kills: int,
    nworkers: int,
    seed: int,
    lease: str = "2s",
    timeout: float = 240,
    kill_gap: tuple[float, float] = (0.2, 1.2),
    refill: bool = False,
) -> StormResult:
    """`refill`: when every run has ended before all kills were made, start another batch
    (the benchmark's long storms)."""
    prepare(db)
    rng = random.Random(seed)
    began = time.monotonic()
    with db.connect() as conn:
        planned = plan_runs(conn, runs, rng)
        procs: list[WorkerProc] = [
            workers(db.dsn, "--concurrency", "4", "--lease", lease, "--poll", "0.5s")
            for _ in range(nworkers)
        ]
        run_ids = [p.run_id for p in planned]
        hooks = {f"hook-{p.key}": p for p in planned if p.kind == "hooked"}
        killed = 0
        next_kill = time.monotonic() + rng.uniform(0.3, 1.5)
        deadline = time.monotonic() + timeout
        while True:
            now = time.monotonic()
            assert now < deadline, f"storm timed out: {Counter(statuses(conn, run_ids).values())}"
            for w in procs:  # restart whatever died (our kills and the doomed steps' own)
                if not w.alive():
                    w.start()
            if killed < kills and now >= next_kill:
                victim = rng.choice(procs)
                if victim.alive():
                    victim.kill()
                    killed += 1
                next_kill = now + rng.uniform(*kill_gap)
            for token, p in list(hooks.items()):
                if resume(conn, token, serde.dumps({"key": p.key}, "a hook payload")):
                    del hooks[token]
            found = statuses(conn, run_ids)
            if all(s in TERMINAL for s in found.values()) and not hooks:
                if not (refill and killed < kills):
                    break
                batch = plan_runs(conn, runs, rng, prefix=f"b{len(planned)}-")
                planned += batch
                run_ids += [p.run_id for p in batch]
                hooks.update({f"hook-{p.key}": p for p in batch if p.kind == "hooked"})
            time.sleep(0.1)
        # The last kill may land in the very iteration that found every run ended, and a
        # worker restarted in it may still be importing (no SIGTERM handler yet): restart
        # whatever is dead and let every worker come up before asking them to stop.
        for w in procs:
            if not w.alive():
                w.start()
        for w in procs:
            w.worker_id(timeout=120)
        for w in procs:
            code = w.term(60)
            assert code == 0, f"exit status {code}\n" + w.log()[-3000:]
        seconds = time.monotonic() - began
        self_kills = sum(w.starts for w in procs) - nworkers - killed
        exhausted = check_outcome(conn, planned)
        assert double_terminals(conn) == []
        assert conn.execute("SELECT count(*) FROM wfctl.run_queue").fetchone() == (0,)
        # Graceful exits removed their rows; SIGKILLed workers' rows wait for recovery (run by
        # any live worker) and are no longer shown as live.
        assert conn.execute(sql.load("worker/status_workers")).fetchall() == []
        result = StormResult(len(planned), killed, self_kills, seconds)
        result.statuses.update(statuses(conn, run_ids).values())
        result.exhausted.update(exhausted)
    doctor_clean(run_cli, db.dsn)
    return result


def check_outcome(conn: Any, planned: list[Planned]) -> list[str]:
    """Asserts every run's outcome; returns the kinds of the runs whose attempts kills used up."""
    runs = {
        str(r[0]): (str(r[1]), r[2], r[3])
        for r in conn.execute(
            "SELECT id, status::text, output_cbor, error_code FROM workflow.workflow_runs"
        ).fetchall()
    }
    counts: dict[tuple[str, str], int] = {}
    for key, step, n in conn.execute(
        "SELECT key, step, count(*) FROM public.effects GROUP BY 1, 2"
    ).fetchall():
        counts[(str(key), str(step))] = int(n)
    exhausted = {
        str(r[0])
        for r in conn.execute(
            "SELECT run_id FROM workflow.workflow_steps WHERE status = 'failed'"
        ).fetchall()
    }
    exhausted_kinds: list[str] = []
    for p in planned:
        status = runs[p.run_id][0]
        mine = {step: n for (key, step), n in counts.items() if key == p.key}
        for step, n in mine.items():
            budget = BUDGET[step.split("-")[0]]
            assert 1 <= n <= budget, f"{p.kind} {p.key}: step {step} ran {n} times (max {budget})"
        if status != p.expected:
            # Legitimate only when kills used up a step's attempts: counted, then failed.
            assert status == "failed" and p.run_id in exhausted, (p, status)
            exhausted_kinds.append(p.kind)
            continue
        if p.kind == "doomed":
            # Two attempts, each killing its worker; an outside SIGKILL that lands between an
            # attempt's step_started and the body's effect leaves one effect fewer.
            assert set(mine) <= {"suicide"}, mine
        if p.output is not None:
            from wfctl.world import codec

            assert serde.loads(codec.decode(runs[p.run_id][1])) == p.output, p
        if status == "completed":
            expected_steps = {
                "chain": {f"work-{i}" for i in range(5)},
                "retrying": {"flaky", "bouncy"},
                "sleepy": {"work-0", "work-1"},
                "hooked": {"work-0", "work-1"},
                "parallel": {"fan-0", "fan-1", "fan-2"},
                "timed": {"slowpoke"},
            }[p.kind]
            assert set(mine) == expected_steps, (p, mine)
    return exhausted_kinds


def test_crash_storm(beta_world: Any, run_cli: Any, workers: Any) -> None:
    result = run_storm(
        beta_world,
        run_cli,
        workers,
        runs=int(os.environ.get("WFCTL_STORM_RUNS", "36")),
        kills=int(os.environ.get("WFCTL_STORM_KILLS", "6")),
        nworkers=int(os.environ.get("WFCTL_STORM_WORKERS", "3")),
        seed=int(os.environ.get("WFCTL_STORM_SEED", "7")),
    )
    assert result.kills == int(os.environ.get("WFCTL_STORM_KILLS", "6"))


def test_crash_storm_slot_era(slot_world: Any, run_cli: Any, workers: Any) -> None:
    run_storm(slot_world, run_cli, workers, runs=10, kills=2, nworkers=2, seed=11)
