"""Benchmark `wfctl gc --apply` on a large world while an insert load runs beside it.

Measures what an operator asks before turning retention on: rows deleted per second, and how
much the collection stalls the application's own inserts (latency of single-row event
inserts, each its own commit, as the world writes them), before and during the gc.

    python benchmarks/gen_world.py --runs 1000000 --dbname world_1m   # once
    python benchmarks/bench_gc.py --source world_1m --older-than 30d --max-time 120

The source world is cloned first (CREATE DATABASE ... TEMPLATE), so it stays intact; the
clone is dropped at the end unless --keep. The gc runs as a subprocess (`python -m wfctl`),
the load in this process on its own connection at --insert-rate inserts per second.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.gen_world import DEFAULT_PGDATA, db_dsn, start_server  # noqa: E402
from wfctl.world import ids  # noqa: E402


class Load(threading.Thread):
    """Single-row event inserts at a fixed rate; records (start time, latency) per insert."""

    def __init__(self, dsn: str, rate: float) -> None:
        super().__init__(daemon=True)
        self.dsn = dsn
        self.period = 1.0 / rate
        self.samples: list[tuple[float, float]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            run_id = ids.prefixed("wrun")
            conn.execute(
                "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name)"
                " VALUES (%s, 'postgres', 'running', 'workflow//bench//load')",
                (run_id,),
            )
            next_at = time.perf_counter()
            while not self.stop.is_set():
                started = time.perf_counter()
                conn.execute(
                    "INSERT INTO workflow.workflow_events (id, type, correlation_id, run_id,"
                    " payload_cbor, spec_version) VALUES (%s, 'step_created', %s, %s,"
                    " '\\xa0', 5)",
                    (ids.prefixed("wevt"), ids.prefixed("step"), run_id),
                )
                self.samples.append((started, time.perf_counter() - started))
                next_at += self.period
                delay = next_at - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                else:
                    next_at = time.perf_counter()

    def window(self, start: float, end: float) -> dict[str, Any]:
        lat = sorted(ms * 1000 for t, ms in self.samples if start <= t < end)
        if not lat:
            return {}
        return {
            "inserts": len(lat),
            "per_second": round(len(lat) / (end - start), 1),
            "p50_ms": round(statistics.median(lat), 2),
            "p99_ms": round(lat[min(len(lat) - 1, int(0.99 * len(lat)))], 2),
            "max_ms": round(lat[-1], 2),
            "over_100ms": sum(1 for x in lat if x > 100),
        }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dsn", help="admin DSN of an existing server (default: the embedded one)")
    p.add_argument("--pgdata", type=Path, default=DEFAULT_PGDATA)
    p.add_argument("--source", default="world_1m", help="world to clone (left intact)")
    p.add_argument("--dbname", default=None, help="clone name (default <source>_gc)")
    p.add_argument("--older-than", default="30d")
    p.add_argument("--batch", type=int, default=500)
    p.add_argument("--max-time", default="120s")
    p.add_argument("--pause", default="0s")
    p.add_argument("--insert-rate", type=float, default=200.0)
    p.add_argument("--baseline", type=float, default=20.0, help="seconds of load before gc")
    p.add_argument("--keep", action="store_true", help="keep the clone")
    p.add_argument("--json", type=Path, help="also write the figures here")
    args = p.parse_args(argv)
    admin = args.dsn or start_server(args.pgdata)
    clone = args.dbname or f"{args.source}_gc"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(clone))
        )
        t0 = time.perf_counter()
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY").format(
                sql.Identifier(clone), sql.Identifier(args.source)
            )
        )
        print(f"cloned {args.source} -> {clone} in {time.perf_counter() - t0:.1f} s", flush=True)
    dsn = db_dsn(admin, clone)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) workflow.workflow_runs")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    wfctl = [sys.executable, "-m", "wfctl", "--dsn", dsn, "--format", "json",
             "--statement-timeout", "0", "gc", "--older-than", args.older_than]  # fmt: skip
    t0 = time.perf_counter()
    plan = json.loads(subprocess.run(wfctl, env=env, capture_output=True, text=True).stdout)
    plan_seconds = time.perf_counter() - t0
    print(f"dry run: {plan['would_delete']} in {plan_seconds:.1f} s", flush=True)
    load = Load(dsn, args.insert_rate)
    load.start()
    time.sleep(args.baseline)
    gc_start = time.perf_counter()
    done = subprocess.run(
        [
            *wfctl,
            "--apply",
            "--reason",
            "bench_gc",
            "--yes",
            "--batch",
            str(args.batch),
            "--max-time",
            args.max_time,
            "--pause",
            args.pause,
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    gc_end = time.perf_counter()
    time.sleep(2)
    load.stop.set()
    load.join()
    if done.returncode not in (0, 1):
        print(done.stderr, file=sys.stderr)
        return done.returncode
    report = json.loads(done.stdout)
    figures = {
        "source": args.source,
        "older_than": args.older_than,
        "batch": args.batch,
        "dry_run_seconds": round(plan_seconds, 2),
        "would_delete": plan["would_delete"],
        "gc_exit": done.returncode,
        "gc": {
            k: report[k]
            for k in ("candidates", "deleted", "batches", "seconds", "rows_per_second", "complete")
        },
        "runs_per_second": round(report["deleted"]["runs"] / report["seconds"], 1)
        if report["seconds"]
        else 0,
        "wall_seconds": round(gc_end - gc_start, 2),
        "inserts_baseline": load.window(gc_start - args.baseline, gc_start),
        "inserts_during_gc": load.window(gc_start, gc_end),
        "loadavg": os.getloadavg(),
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    if not args.keep:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(clone))
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
