"""Per-step overhead of wfctl's runtime: 200 trivial sequential steps in one workflow.

    python benchmarks/bench_runtime.py [--steps 200] [--repeat 3] [--dsn DSN] [--no-dbos]

On one local server (a throwaway pgserver unless --dsn), in one process:
- wfctl runtime, beta.29-shape and slot-era worlds: the time from one step body's start to
  the next step body's start (what the reference measured for the Node runtime: 56-59 ms),
  median / p90 / p99, the median of the first 50 vs the last 50 steps (growth with the
  number of steps done), and commits per step (pg_stat_database.xact_commit delta);
- the floor: one bare single-row INSERT + COMMIT round trip from psycopg on that server;
- DBOS Transact 3.4 (`pip install -e '.[bench]'`) running the same 200-step workflow, when
  it is installed.
Prints a JSON report and a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import itertools

from wfctl.runtime import Workflows
from wfctl.runtime.executor import Executor, create
from wfctl.runtime.store import Store
from wfctl.world.bootstrap import bootstrap

STAMPS: list[float] = []

wf = Workflows()


@wf.step
def trivial(i: int) -> int:
    STAMPS.append(time.perf_counter())
    return i


@wf.workflow
async def many_steps(n: int) -> int:
    total = 0
    for i in range(n):
        total += await trivial(i)
    return total


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(gaps_ms: list[float]) -> dict[str, float]:
    return {
        "median_ms": round(statistics.median(gaps_ms), 3),
        "p90_ms": round(percentile(gaps_ms, 0.90), 3),
        "p99_ms": round(percentile(gaps_ms, 0.99), 3),
        "first50_median_ms": round(statistics.median(gaps_ms[:50]), 3),
        "last50_median_ms": round(statistics.median(gaps_ms[-50:]), 3),
    }


def commits(conn: psycopg.Connection[Any]) -> int:
    conn.execute("SELECT pg_stat_clear_snapshot()")
    row = conn.execute(
        "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
    ).fetchone()
    assert row is not None
    return int(row[0])


def flush_stats(conn: psycopg.Connection[Any]) -> None:
    conn.execute("SELECT pg_stat_force_next_flush()")
    conn.execute("SELECT 1")


def make_db(admin: str, name: str) -> str:
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        c.execute(f'CREATE DATABASE "{name}"')
    return psycopg.conninfo.make_conninfo(admin, dbname=name)


def bench_wfctl(admin: str, era: str, steps: int) -> dict[str, Any]:
    dsn = make_db(admin, f"bench_runtime_{era}")
    with psycopg.connect(dsn, autocommit=True) as c:
        bootstrap(c, era)
    with (
        psycopg.connect(dsn, autocommit=True) as conn,
        psycopg.connect(dsn, autocommit=True) as stats,
    ):
        store = Store(conn)
        run_id = create(many_steps, [steps], conn=conn).run_id
        ex = Executor(wf, store)
        STAMPS.clear()
        flush_stats(conn)
        time.sleep(0.1)
        before = commits(stats)
        t0 = time.perf_counter()
        done = ex.drive(run_id)
        total = time.perf_counter() - t0
        flush_stats(conn)
        time.sleep(0.1)
        after = commits(stats)
        ex.close()
    assert done.status == "completed", done
    gaps = [(b - a) * 1000 for a, b in itertools.pairwise(STAMPS)]
    # reads by this script between the two counters: 2 flush statements + 1 read
    return {
        **summary(gaps),
        "commits": after - before,
        "commits_per_step": round((after - before) / steps, 3),
        "total_s": round(total, 3),
    }


def bench_floor(admin: str, n: int = 500) -> dict[str, Any]:
    dsn = make_db(admin, "bench_runtime_floor")
    with psycopg.connect(dsn) as conn:
        conn.execute("CREATE TABLE t (id bigserial PRIMARY KEY, a text, b bytea)")
        conn.commit()
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            conn.execute("INSERT INTO t (a, b) VALUES (%s, %s)", ("x", b"y"))
            conn.commit()
            times.append((time.perf_counter() - t0) * 1000)
    return {
        "median_ms": round(statistics.median(times), 3),
        "p90_ms": round(percentile(times, 0.9), 3),
    }


def bench_dbos(admin: str, steps: int) -> dict[str, Any] | str:
    try:
        from dbos import DBOS
    except ImportError:
        return "not installed (pip install -e '.[bench]')"
    dsn = make_db(admin, "bench_runtime_dbos")
    url = _url(dsn)
    stamps: list[float] = []

    @DBOS.step()
    def dbos_trivial(i: int) -> int:
        stamps.append(time.perf_counter())
        return i

    @DBOS.workflow()
    def dbos_many(n: int) -> int:
        return sum(dbos_trivial(i) for i in range(n))

    DBOS(config={"name": "wfctl-bench", "system_database_url": url})
    DBOS.launch()
    try:
        dbos_many(5)  # warm up
        stamps.clear()
        with psycopg.connect(dsn, autocommit=True) as stats:
            time.sleep(1.1)  # let DBOS' backends flush their counters
            before = commits(stats)
            t0 = time.perf_counter()
            dbos_many(steps)
            total = time.perf_counter() - t0
            time.sleep(1.1)
            after = commits(stats)
    finally:
        DBOS.destroy()
    gaps = [(b - a) * 1000 for a, b in itertools.pairwise(stamps)]
    return {
        **summary(gaps),
        "commits": after - before,
        "commits_per_step": round((after - before) / steps, 3),
        "total_s": round(total, 3),
        "note": "commit count includes DBOS background activity during the run",
    }


def _url(dsn: str) -> str:
    parts = psycopg.conninfo.conninfo_to_dict(dsn)
    host = str(parts.get("host", "localhost"))
    user = parts.get("user", "postgres")
    port = parts.get("port", 5432)
    db = parts.get("dbname")
    if host.startswith("/"):
        return f"postgresql://{user}@/{db}?host={host}&port={port}"
    return f"postgresql://{user}@{host}:{port}/{db}"


def machine() -> dict[str, Any]:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "os": platform.platform(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dsn", help="admin DSN of an existing server (default: pgserver)")
    parser.add_argument("--no-dbos", action="store_true")
    args = parser.parse_args()
    tmp = None
    server = None
    if args.dsn:
        admin = args.dsn
    else:
        import pgserver

        tmp = tempfile.mkdtemp(prefix="wfctl-bench-rt-")
        server = pgserver.get_server(tmp, cleanup_mode="stop")
        admin = str(server.get_uri())
    try:
        with psycopg.connect(admin, autocommit=True) as c:
            settings = {
                k: c.execute(f"SHOW {k}").fetchone()[0]  # type: ignore[index]
                for k in ("server_version", "fsync", "synchronous_commit", "wal_sync_method")
            }
        report: dict[str, Any] = {
            "machine": machine(),
            "server": settings,
            "steps": args.steps,
            "load_average_before": [round(x, 2) for x in os.getloadavg()],
        }
        report["floor_insert_commit"] = bench_floor(admin)
        for era in ("beta29", "slot"):
            report[f"wfctl_{era}"] = [
                bench_wfctl(admin, era, args.steps) for _ in range(args.repeat)
            ]
        if not args.no_dbos:
            try:
                report["dbos"] = bench_dbos(admin, args.steps)
            except Exception as exc:  # report, do not lose the other figures
                report["dbos"] = f"failed: {type(exc).__name__}: {exc}"
        report["floor_insert_commit_after"] = bench_floor(admin)
        report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    finally:
        if server is not None:
            server.cleanup()
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
