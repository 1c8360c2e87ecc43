"""Where a sequential step's time goes: cProfile of a drive, calls per step, and the round
trip timed alone (wall and this process's CPU inside it).

    python benchmarks/profile_step.py --dsn ADMIN_DSN [--steps 2000] [--era slot] [--top 25]

One run of STEPS trivial steps (bench_runtime's workflow) driven in-process; prints the
Python function calls per step (cProfile), the top functions by own time, and the split of
a step's wall time into the exchange (`Pipeline.run`: wall, client CPU inside it) and the
rest (client CPU outside it).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_runtime as br

from wfctl.runtime import wire
from wfctl.runtime.executor import Executor, create
from wfctl.runtime.store import Store

SPLIT: dict[str, float] = {}


def wal(conn: psycopg.Connection[Any]) -> tuple[float, float]:
    """(WAL sync ms so far, WAL write ms so far) of the server (pg_stat_wal)."""
    conn.execute("SELECT pg_stat_force_next_flush()")
    row = conn.execute("SELECT wal_sync_time, wal_write_time FROM pg_stat_wal").fetchone()
    assert row is not None
    return float(row[0]), float(row[1])


def drive(dsn: str, steps: int, profile: bool) -> tuple[float, float, cProfile.Profile | None]:
    # track_wal_io_timing on this session: the committing backend flushes the WAL itself
    timed_dsn = psycopg.conninfo.make_conninfo(dsn, options="-c track_wal_io_timing=on")
    with psycopg.connect(timed_dsn, autocommit=True) as conn:
        run_id = create(br.many_steps, [steps], conn=conn).run_id
        ex = Executor(br.wf, Store(conn))
        prof = cProfile.Profile(time.process_time) if profile else None
        server0, wal0 = br.backend_cpu_ms(conn), wal(conn)
        c0, t0 = time.process_time(), time.perf_counter()
        if prof:
            prof.enable()
        done = ex.drive(run_id)
        if prof:
            prof.disable()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        server1, wal1 = br.backend_cpu_ms(conn), wal(conn)
        if server0 is not None and server1 is not None:
            SPLIT["server_cpu_ms"] = (server1 - server0) / steps
        SPLIT["wal_sync_ms"] = (wal1[0] - wal0[0]) / steps
        SPLIT["wal_write_ms"] = (wal1[1] - wal0[1]) / steps
        ex.close()
    assert done.status == "completed"
    return wall, cpu, prof


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--era", default="slot", choices=["slot", "beta29"])
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    dsn = br.make_world(args.dsn, args.era)
    drive(dsn, 50, False)  # warm: prepared statements, caches

    # the exchange alone: wall and CPU inside Pipeline.run
    inside = {"wall": 0.0, "cpu": 0.0, "n": 0}
    original = wire.Pipeline.run

    def timed(self: Any, batch: Any) -> Any:
        c0, t0 = time.process_time(), time.perf_counter()
        try:
            return original(self, batch)
        finally:
            inside["wall"] += time.perf_counter() - t0
            inside["cpu"] += time.process_time() - c0
            inside["n"] += 1

    wire.Pipeline.run = timed  # type: ignore[method-assign]
    wall, cpu, _ = drive(dsn, args.steps, False)
    wire.Pipeline.run = original  # type: ignore[method-assign]
    n = args.steps
    print(
        f"{args.era}: {wall * 1000 / n:.3f} ms/step wall, client CPU {cpu * 1000 / n:.3f} ms/step;"
        f" exchanges {inside['n'] / n:.2f}/step: wall {inside['wall'] * 1000 / n:.3f} ms,"
        f" client CPU inside {inside['cpu'] * 1000 / n:.3f} ms;"
        f" client CPU outside {(cpu - inside['cpu']) * 1000 / n:.3f} ms;"
        f" server backend CPU {SPLIT.get('server_cpu_ms', float('nan')):.3f} ms (/proc, 10 ms"
        f" ticks); WAL sync {SPLIT['wal_sync_ms']:.3f} ms, WAL write {SPLIT['wal_write_ms']:.3f} ms"
    )
    _, _, prof = drive(dsn, args.steps, True)
    assert prof is not None
    stats = pstats.Stats(prof)
    calls = sum(v[1] for v in stats.stats.values())  # type: ignore[attr-defined]
    print(f"Python calls per step (cProfile, all functions): {calls / n:.0f}")
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(args.top)
    print(out.getvalue())


if __name__ == "__main__":
    main()
