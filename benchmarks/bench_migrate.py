"""Insert latency during the event-key swap: package-style vs `wfctl migrate --online --swap`.

    python benchmarks/bench_migrate.py                      # the recorded run: 10M events
    python benchmarks/bench_migrate.py --events 200000      # a quick look

What it does, on a throwaway PostgreSQL (the `pgserver` wheel, as the tests use):

1. `wfctl bootstrap` (beta.29 shape) into a template database, then N generated events
   (INSERT ... SELECT generate_series; the key and indexes are dropped for the load and
   recreated with their exact definitions, checked against the beta.29 catalog), VACUUM
   ANALYZE. Two clones (CREATE DATABASE ... TEMPLATE, STRATEGY FILE_COPY) get one run each.
2. For each run a separate process inserts events at a steady rate (default 200/s) through
   4 connections; every insert's latency is measured from its *scheduled* start, so a stall
   counts for every insert queued behind it (no coordinated omission). It starts 5 s before
   the migration and stops 5 s after it.
   (a) package-style: the package migrator's algorithm (drizzle: every pending statement
       of the `guarded` fixture package, i.e. DROP CONSTRAINT + ADD PRIMARY KEY (run_id, id)
       building the index under ACCESS EXCLUSIVE, in ONE transaction, plus the bookkeeping
       rows);
   (b) `wfctl migrate --online --swap --package tests/fixtures/packages/shipped`.
3. Prints max/p99/p50 latency, failed inserts, the build and total times and the ratio.

Server settings are pgserver's defaults (maintenance_work_mem 64MB, max_parallel_maintenance_
workers 2); both runs use the same ones.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from wfctl.migrate import package as package_mod  # noqa: E402
from wfctl.world import catalog  # noqa: E402
from wfctl.world.bootstrap import bootstrap  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "packages"
EVENTS_PER_RUN = 25


# ----------------------------------------------------------------------------- world


def generate(dsn: str, events: int) -> float:
    """Bootstrap a beta.29 world and load `events` generated events; returns seconds."""
    started = time.monotonic()
    with psycopg.connect(dsn, autocommit=True) as conn:
        bootstrap(conn, "beta29")
        conn.execute("SET maintenance_work_mem = '512MB'")  # load only; not the measured runs
        # The key and the plain indexes are rebuilt after the load (same definitions); the
        # partial unique index stays (pg_get_indexdef would not round-trip it byte for byte).
        conn.execute("SET synchronous_commit = off")
        defs = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'workflow'"
            " AND tablename = 'workflow_events' AND indexname NOT IN"
            " ('workflow_events_pkey', 'workflow_events_entity_creation_unique')"
        ).fetchall()
        for name, _ in defs:
            conn.execute(f"DROP INDEX workflow.{name}")
        conn.execute("ALTER TABLE workflow.workflow_events DROP CONSTRAINT workflow_events_pkey")
        runs = max(1, events // EVENTS_PER_RUN)
        step = 2_000_000
        for lo in range(1, events + 1, step):
            hi = min(events, lo + step - 1)
            # Time-ordered event ids (like ULIDs), runs interleaved, one correlation id per
            # step event, a small CBOR payload.
            conn.execute(
                """
                INSERT INTO workflow.workflow_events
                    (id, type, correlation_id, created_at, run_id, payload_cbor, spec_version)
                SELECT 'wevt_' || lpad(upper(to_hex(g)), 10, '0')
                           || upper(substr(md5(g::text), 1, 16)),
                       (ARRAY['step_created','step_started','step_completed','wait_created',
                              'hook_created'])[1 + g %% 5],
                       'step_' || upper(substr(md5('c' || g), 1, 26)),
                       timestamp '2026-01-01' + g * interval '1 millisecond',
                       'wrun_' || upper(substr(md5((g %% %(runs)s)::text), 1, 26)),
                       '\\xa264646174614568656c6c6f6474797065657374657073'::bytea,
                       2
                FROM generate_series(%(lo)s, %(hi)s) g
                """,
                {"lo": lo, "hi": hi, "runs": runs},
            )
            print(f"  loaded {hi:,} events", flush=True)
        conn.execute(
            "ALTER TABLE workflow.workflow_events ADD CONSTRAINT workflow_events_pkey"
            " PRIMARY KEY (id)"
        )
        for _, definition in defs:
            conn.execute(definition)
        conn.execute("VACUUM (ANALYZE) workflow.workflow_events")
        drift = catalog.diff(catalog.expected("beta29"), catalog.describe(conn))
        assert drift == [], drift
    return time.monotonic() - started


# ----------------------------------------------------------------------------- writer


def writer_process(dsn: str, rate: float, stop_file: str, out_file: str, workers: int) -> None:
    """Insert events at `rate`/s until `stop_file` exists; write latencies to `out_file`."""
    jobs: queue.Queue[tuple[int, float] | None] = queue.Queue()
    results: list[tuple[float, float, bool, str]] = []
    lock = threading.Lock()

    def work() -> None:
        with psycopg.connect(dsn, autocommit=True, application_name="bench-writer") as conn:
            while True:
                job = jobs.get()
                if job is None:
                    return
                n, scheduled = job
                error = ""
                try:
                    conn.execute(
                        "INSERT INTO workflow.workflow_events"
                        " (id, type, correlation_id, run_id, payload_cbor, spec_version)"
                        " VALUES (%s, 'step_started', %s, %s, '\\xa0'::bytea, 2)",
                        (f"wevt_bench{n:012d}", f"step_bench{n}", f"wrun_bench{n % 100}"),
                    )
                    ok = True
                except psycopg.Error as exc:
                    ok, error = False, str(exc).splitlines()[0]
                done = time.monotonic()
                with lock:
                    results.append((scheduled, done - scheduled, ok, error))

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for t in threads:
        t.start()
    start = time.monotonic()
    n = 0
    while not os.path.exists(stop_file):
        scheduled = start + n / rate
        delay = scheduled - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        jobs.put((n, scheduled))
        n += 1
    for _ in threads:
        jobs.put(None)
    for t in threads:
        t.join()
    # `at` is time.monotonic() (system-wide on Linux), comparable with the phase marks.
    Path(out_file).write_text(
        json.dumps([{"at": s, "latency": lat, "ok": ok, "error": e} for s, lat, ok, e in results])
    )


class Traffic:
    """The writer process around one migration."""

    def __init__(self, dsn: str, rate: float, workdir: Path, name: str, workers: int = 4) -> None:
        self.stop_file = workdir / f"{name}.stop"
        self.out_file = workdir / f"{name}.json"
        self.proc = mp.get_context("spawn").Process(
            target=writer_process,
            args=(dsn, rate, str(self.stop_file), str(self.out_file), workers),
        )

    def __enter__(self) -> Traffic:
        self.proc.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_file.touch()
        self.proc.join(timeout=600)

    def results(self) -> list[dict[str, Any]]:
        data: list[dict[str, Any]] = json.loads(self.out_file.read_text())
        return data


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    latencies = sorted(r["latency"] for r in results if r["ok"])
    failed = [r for r in results if not r["ok"]]

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] if latencies else 0.0

    return {
        "inserts": len(results),
        "failed": len(failed),
        "errors": sorted({r["error"] for r in failed})[:3],
        "p50_ms": round(pct(0.50) * 1000, 1),
        "p99_ms": round(pct(0.99) * 1000, 1),
        "max_ms": round(latencies[-1] * 1000, 1) if latencies else 0.0,
        "mean_ms": round(statistics.fmean(latencies) * 1000, 2) if latencies else 0.0,
    }


# ----------------------------------------------------------------------------- migrations


def package_style(dsn: str, marks: list[tuple[float, str]]) -> dict[str, Any]:
    """drizzle's algorithm over the `guarded` fixture: all pending statements, ONE transaction."""
    pkg = package_mod.load(FIXTURES / "guarded")
    with psycopg.connect(dsn) as conn:
        floor = conn.execute(
            "SELECT max(created_at) FROM workflow_drizzle.workflow_migrations"
        ).fetchone()
        pending = [pkg.migration(e) for e in pkg.pending(floor[0] if floor else None)]
        started = time.monotonic()
        marks.append((started, "migrator transaction"))
        with conn.transaction():
            for m in pending:
                for chunk in m.chunks():
                    conn.execute(chunk.encode())
                conn.execute(
                    "INSERT INTO workflow_drizzle.workflow_migrations (hash, created_at)"
                    " VALUES (%s, %s)",
                    (m.sha256, m.when),
                )
        seconds = time.monotonic() - started
    marks.append((time.monotonic(), "after the migration"))
    return {"transaction_seconds": round(seconds, 2), "migrations": [m.tag for m in pending]}


def wfctl_online(dsn: str, marks: list[tuple[float, str]]) -> dict[str, Any]:
    """Run wfctl; stamp each phase as its `[n/9] name:` line reaches stderr."""
    started = time.monotonic()
    marks.append((started, "wfctl start-up"))
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "wfctl", "--dsn", dsn, "--format", "json", "migrate",
            "--online", "--swap", "--package", str(FIXTURES / "shipped"),
        ],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert proc.stderr is not None and proc.stdout is not None
    err_lines = []
    for line in proc.stderr:
        err_lines.append(line)
        head = line.split(":", 1)[0]
        if head.startswith("[") and "] " in head:
            marks.append((time.monotonic(), head.split("] ", 1)[1]))
    out = proc.stdout.read()
    proc.wait()
    seconds = time.monotonic() - started
    marks.append((time.monotonic(), "after the migration"))
    if proc.returncode != 0:
        raise SystemExit(f"wfctl failed ({proc.returncode}): {''.join(err_lines)}")
    report = json.loads(out)
    steps = {s["name"]: s for s in report["steps"]}
    return {
        "total_seconds": round(seconds, 2),
        "build_seconds": steps["build-index"].get("seconds"),
        "swap_seconds": steps["swap-key"].get("seconds"),
        "swap_attempts": steps["swap-key"].get("attempts"),
        "catalog_drift": report["catalog_drift"],
    }


def run_one(name: str, dsn: str, action: Any, rate: float, workdir: Path) -> dict[str, Any]:
    marks: list[tuple[float, str]] = []
    with Traffic(dsn, rate, workdir, name) as traffic:
        time.sleep(5)
        t0 = time.monotonic()
        outcome = action(dsn, marks)
        outcome["wall_seconds"] = round(time.monotonic() - t0, 2)
        time.sleep(5)
    results = traffic.results()
    worst = sorted((r for r in results if r["ok"]), key=lambda r: -r["latency"])[:5]
    outcome["worst"] = [
        f"{r['latency'] * 1000:.0f} ms at t={r['at'] - t0:+.2f} s ({phase_at(marks, r['at'])})"
        for r in worst
    ]
    per_phase: dict[str, float] = {}
    for r in results:
        if r["ok"]:
            phase = phase_at(marks, r["at"])
            per_phase[phase] = max(per_phase.get(phase, 0.0), r["latency"] * 1000)
    outcome["max_ms_by_phase"] = {k: round(v, 1) for k, v in per_phase.items()}
    return {**outcome, **summarise(results)}


def phase_at(marks: list[tuple[float, str]], at: float) -> str:
    """The phase running when an insert was scheduled."""
    current = "before the migration"
    for t, name in marks:
        if t <= at:
            current = name
    return current


# ----------------------------------------------------------------------------- main


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} cores ({model}), {mem:.0f} GiB RAM, {platform.platform()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000_000, help="events to generate")
    parser.add_argument("--rate", type=float, default=200.0, help="inserts per second")
    parser.add_argument("--data-dir", type=Path, help="server data dir (default: a temp dir)")
    args = parser.parse_args()

    import pgserver

    workdir = Path(tempfile.mkdtemp(prefix="wfctl-bench-"))
    data_dir = args.data_dir or workdir / "pgdata"
    server = pgserver.get_server(str(data_dir), cleanup_mode="stop")
    admin = str(server.get_uri())
    try:
        with psycopg.connect(admin, autocommit=True) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]
            settings = dict(
                conn.execute(
                    "SELECT name, setting || coalesce(unit, '') FROM pg_settings WHERE name IN"
                    " ('shared_buffers','maintenance_work_mem','max_parallel_maintenance_workers',"
                    " 'max_wal_size','synchronous_commit')"
                ).fetchall()
            )

        def dsn(db: str) -> str:
            return psycopg.conninfo.make_conninfo(admin, dbname=db)

        def sql(statement: str) -> None:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(statement)

        print(f"machine: {machine()}\nPostgreSQL {version}, {settings}", flush=True)
        sql("CREATE DATABASE bench_template")
        load_s = generate(dsn("bench_template"), args.events)
        with psycopg.connect(dsn("bench_template")) as conn:
            size = conn.execute(
                "SELECT pg_size_pretty(pg_total_relation_size('workflow.workflow_events'))"
            ).fetchone()[0]
        print(f"generated {args.events:,} events in {load_s:.0f} s (workflow_events {size})")
        for db in ("bench_a", "bench_b"):
            t = time.monotonic()
            sql(f"CREATE DATABASE {db} TEMPLATE bench_template STRATEGY FILE_COPY")
            print(f"cloned {db} in {time.monotonic() - t:.0f} s", flush=True)
        sql("DROP DATABASE bench_template")

        print("(a) package-style in-transaction swap ...", flush=True)
        a = run_one("a", dsn("bench_a"), package_style, args.rate, workdir)
        print(json.dumps(a, indent=1), flush=True)
        sql("DROP DATABASE bench_a")
        print("(b) wfctl migrate --online --swap ...", flush=True)
        b = run_one("b", dsn("bench_b"), wfctl_online, args.rate, workdir)
        print(json.dumps(b, indent=1), flush=True)

        ratio = a["max_ms"] / b["max_ms"] if b["max_ms"] else float("inf")
        print("\nscenario                     inserts failed   p50 ms   p99 ms    max ms   time s")
        for label, r, secs in (
            ("(a) package-style", a, a["transaction_seconds"]),
            ("(b) wfctl --online --swap", b, b["total_seconds"]),
        ):
            print(
                f"{label:<28} {r['inserts']:>7} {r['failed']:>6} {r['p50_ms']:>8} "
                f"{r['p99_ms']:>8} {r['max_ms']:>9} {secs:>8}"
            )
        print(
            f"\nworst stall (a)/(b) = {ratio:.0f}x (goal >= 50x); (b) build {b['build_seconds']} s,"
            f" swap statement {b['swap_seconds']} s in {b['swap_attempts']} attempt(s)"
        )
    finally:
        server.cleanup()
        if not args.data_dir:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
