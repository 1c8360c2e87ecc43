"""Per-step overhead of wfctl's runtime against the commit floor, interleaved on one server.

    python benchmarks/bench_runtime.py [--steps 200] [--repeat 7] [--dsn DSN] [--no-dbos]

On one local server (a throwaway pgserver unless --dsn), in one process, REPEAT rounds, each:
- the package-rows floor (benchmarks/floor.py), per era: the rows one step must write in the
  world's format (the completed step's row update, the next step's row, three events) in one
  transaction of prepared statements sent in one round trip by pgbench (one client; psycopg's
  pipeline when pgbench is not installed), on worlds of its own; `x_rows_floor` = wfctl's
  median step / that floor's median (same era, same round): THE ratio of this script;
- the floor, one-round-trip form (the strict one): an autocommit single-row INSERT on a
  logged table (one statement, one round trip, one fsync'd commit), 200 times; and the
  three-round-trip form (BEGIN, INSERT, COMMIT sent separately: what this script called the
  floor before; it flatters every ratio) as a second column;
- wfctl runtime, beta.29-shape and slot-era worlds: one new run of STEPS trivial sequential
  steps; per step the time from one step body's start to the next one's, median / p90 /
  p99, first-50 vs last-50 medians, commits per step (pg_stat_database.xact_commit), and
  CPU per step of this process (the client: engine, serde, wire) and of the run's server
  backend (/proc/<pid>/stat; local servers only).
- paired: one run per era whose step bodies each run one floor INSERT (timed) on their own
  connection, so steps and floor samples alternate one by one; a step's own overhead = the
  gap between step bodies minus that body's INSERT, and x_floor = its median / the floor's.
Ratios are taken inside a round (wfctl median / that round's one-trip floor), so a disk or
CPU burst from other work on the machine hits both sides; the summary gives min / median /
max over the rounds, with the load average before and after. DBOS Transact 3.4 (the
`bench` extra) runs the same workflow once at the end when installed.
Prints a JSON report.
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

import itertools

import floor as rows_floor  # benchmarks/floor.py

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


# The paired measurement: each step body runs one floor INSERT (timed) on a connection of
# its own, so floor and step share every moment's load; overhead = gap - that INSERT.
FLOOR: dict[str, Any] = {"conn": None, "times": []}


@wf.step
def with_floor(i: int) -> int:
    STAMPS.append(time.perf_counter())
    t0 = time.perf_counter()
    FLOOR["conn"].execute("INSERT INTO t (a, b) VALUES (%s, %s)", ("x", b"y"))
    FLOOR["times"].append((time.perf_counter() - t0) * 1000)
    return i


@wf.workflow
async def paired_steps(n: int) -> int:
    total = 0
    for i in range(n):
        total += await with_floor(i)
    return total


def bench_paired(dsn: str, floor_dsn: str, steps: int) -> dict[str, Any]:
    """Steps and floor INSERTs alternating: step i's body runs floor INSERT i. Returns the
    medians of the floor, of the gap minus the floor (the step's own overhead), and their
    ratio."""
    with (
        psycopg.connect(dsn, autocommit=True) as conn,
        psycopg.connect(floor_dsn, autocommit=True) as floor_conn,
    ):
        for _ in range(10):
            floor_conn.execute("INSERT INTO t (a, b) VALUES (%s, %s)", ("x", b"y"))
        FLOOR["conn"], FLOOR["times"] = floor_conn, []
        run_id = create(paired_steps, [steps], conn=conn).run_id
        ex = Executor(wf, Store(conn))
        STAMPS.clear()
        done = ex.drive(run_id)
        ex.close()
    assert done.status == "completed", done
    times = FLOOR["times"]
    own = [(b - a) * 1000 - f for (a, b), f in zip(itertools.pairwise(STAMPS), times, strict=False)]
    floor_ms = statistics.median(times)
    return {
        "floor_median_ms": round(floor_ms, 3),
        "step_median_ms": round(statistics.median(own), 3),
        "x_floor": round(statistics.median(own) / floor_ms, 2),
    }


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


def backend_cpu_ms(conn: psycopg.Connection[Any]) -> float | None:
    """CPU time (user + system) the connection's server backend has used so far, from
    /proc (the server must run on this machine); None when it cannot be read."""
    try:
        fields = Path(f"/proc/{conn.info.backend_pid}/stat").read_text().rsplit(")", 1)[1]
    except OSError:
        return None
    parts = fields.split()
    ticks = int(parts[11]) + int(parts[12])  # utime, stime (fields 14, 15 of stat)
    return ticks * 1000 / os.sysconf("SC_CLK_TCK")


def per_step(before: float | None, after: float | None, n: int) -> float | None:
    return None if before is None or after is None else round((after - before) / n, 3)


SESSION_OPTIONS: dict[str, str] = {}  # --no-sync: synchronous_commit=off on every session


def make_db(admin: str, name: str) -> str:
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        c.execute(f'CREATE DATABASE "{name}"')
    return psycopg.conninfo.make_conninfo(admin, dbname=name, **SESSION_OPTIONS)


def make_world(admin: str, era: str) -> str:
    dsn = make_db(admin, f"bench_runtime_{era}")
    with psycopg.connect(dsn, autocommit=True) as c:
        bootstrap(c, era)
    return dsn


def bench_wfctl(dsn: str, steps: int) -> dict[str, Any]:
    """One new run of `steps` steps, driven in this process on one connection."""
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
        server0 = backend_cpu_ms(conn)
        cpu0 = time.process_time()
        t0 = time.perf_counter()
        done = ex.drive(run_id)
        total = time.perf_counter() - t0
        cpu1 = time.process_time()
        server1 = backend_cpu_ms(conn)
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
        "client_cpu_ms_per_step": round((cpu1 - cpu0) * 1000 / steps, 3),
        "server_cpu_ms_per_step": per_step(server0, server1, steps),
        "total_s": round(total, 3),
    }


def floor_db(admin: str) -> str:
    dsn = make_db(admin, "bench_runtime_floor")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (id bigserial PRIMARY KEY, a text, b bytea)")
    return dsn


def bench_floor(dsn: str, n: int, *, trips: int) -> dict[str, Any]:
    """`trips=1`: one autocommit INSERT (one statement, one round trip, one commit), the
    strict floor of a durable step. `trips=3`: BEGIN, INSERT, COMMIT as three round trips."""
    insert = "INSERT INTO t (a, b) VALUES (%s, %s)"
    with psycopg.connect(dsn, autocommit=True) as conn:
        for _ in range(10):  # prepared (psycopg prepares after 5 runs) and warm
            conn.execute(insert, ("x", b"y"))
        times = []
        server0 = backend_cpu_ms(conn)
        cpu0 = time.process_time()
        for _ in range(n):
            t0 = time.perf_counter()
            if trips == 1:
                conn.execute(insert, ("x", b"y"))
            else:
                conn.execute("BEGIN")
                conn.execute(insert, ("x", b"y"))
                conn.execute("COMMIT")
            times.append((time.perf_counter() - t0) * 1000)
        cpu1 = time.process_time()
        server1 = backend_cpu_ms(conn)
    return {
        "median_ms": round(statistics.median(times), 3),
        "p90_ms": round(percentile(times, 0.9), 3),
        "client_cpu_ms": round((cpu1 - cpu0) * 1000 / n, 3),
        "server_cpu_ms": per_step(server0, server1, n),
    }


def spread(values: list[float]) -> dict[str, float]:
    return {
        "min": round(min(values), 3),
        "median": round(statistics.median(values), 3),
        "max": round(max(values), 3),
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
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--dsn", help="admin DSN of an existing server (default: pgserver)")
    parser.add_argument("--no-dbos", action="store_true")
    parser.add_argument(
        "--no-paired", action="store_true", help="skip the paired runs (faster rounds)"
    )
    parser.add_argument(
        "--no-sync",
        action="store_true",
        help="synchronous_commit=off for the floor and wfctl sessions: the commits skip the "
        "WAL flush wait, so the ratio shows the CPU/round-trip part without the disk "
        "(not the durable floor; a diagnostic when other work saturates the disk)",
    )
    args = parser.parse_args()
    if args.no_sync:
        SESSION_OPTIONS["options"] = "-c synchronous_commit=off"
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
            "synchronous_commit_off": args.no_sync,
            "load_average_before": [round(x, 2) for x in os.getloadavg()],
        }
        floor = floor_db(admin)
        worlds = {era: make_world(admin, era) for era in ("beta29", "slot")}
        floor_worlds = {  # --no-sync applies to the floor's sessions too
            era: psycopg.conninfo.make_conninfo(
                rows_floor.make_world(admin, era, f"bench_runtime_rows_{era}"), **SESSION_OPTIONS
            )
            for era in worlds
        }
        report["rows_floor_client"] = "pgbench" if rows_floor.PGBENCH else "psycopg pipeline"
        rounds: list[dict[str, Any]] = []
        for _ in range(args.repeat):
            one = bench_floor(floor, args.steps, trips=1)
            three = bench_floor(floor, args.steps, trips=3)
            rnd: dict[str, Any] = {
                "load_average": round(os.getloadavg()[0], 2),
                "floor_one_trip": one,
                "floor_three_trips": three,
            }
            for era, dsn in worlds.items():
                if not args.no_paired:
                    rnd[f"paired_{era}"] = bench_paired(dsn, floor, args.steps)
                rows = rows_floor.sequential(floor_worlds[era], era, args.steps)
                rnd[f"rows_floor_{era}"] = rows
                rnd[f"wfctl_{era}"] = res = bench_wfctl(dsn, args.steps)
                res["x_rows_floor"] = round(res["median_ms"] / rows["median_ms"], 2)
                res["x_floor_one_trip"] = round(res["median_ms"] / one["median_ms"], 2)
                res["x_floor_three_trips"] = round(res["median_ms"] / three["median_ms"], 2)
            rounds.append(rnd)
            print(
                f"round {len(rounds)} (load {rnd['load_average']}): "
                + "; ".join(
                    f"{era} step {rnd[f'wfctl_{era}']['median_ms']} ms, rows floor "
                    f"{rnd[f'rows_floor_{era}']['median_ms']} ms, "
                    f"x{rnd[f'wfctl_{era}']['x_rows_floor']}"
                    for era in worlds
                ),
                file=sys.stderr,
            )
        report["rounds"] = rounds
        report["summary"] = {
            **{
                f"rows_floor_{era}_ms": spread(
                    [r[f"rows_floor_{era}"]["median_ms"] for r in rounds]
                )
                for era in worlds
            },
            "floor_one_trip_ms": spread([r["floor_one_trip"]["median_ms"] for r in rounds]),
            "floor_three_trips_ms": spread([r["floor_three_trips"]["median_ms"] for r in rounds]),
            **{
                f"wfctl_{era}": {
                    key: spread([r[f"wfctl_{era}"][key] for r in rounds])
                    for key in (
                        "median_ms",
                        "x_rows_floor",
                        "x_floor_one_trip",
                        "x_floor_three_trips",
                        "client_cpu_ms_per_step",
                        "server_cpu_ms_per_step",
                        "commits_per_step",
                    )
                    if all(r[f"wfctl_{era}"][key] is not None for r in rounds)
                }
                for era in worlds
            },
            **{
                f"paired_{era}": {
                    key: spread([r[f"paired_{era}"][key] for r in rounds])
                    for key in ("floor_median_ms", "step_median_ms", "x_floor")
                }
                for era in worlds
                if not args.no_paired
            },
        }
        if not args.no_dbos:
            try:
                report["dbos"] = bench_dbos(admin, args.steps)
            except Exception as exc:  # report, do not lose the other figures
                report["dbos"] = f"failed: {type(exc).__name__}: {exc}"
        report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    finally:
        if server is not None:
            server.cleanup()
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
