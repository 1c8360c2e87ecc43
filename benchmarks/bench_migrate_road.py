"""Writer waits and total time across a release upgrade: the package's migrator vs wfctl's road.

    python benchmarks/bench_migrate_road.py                    # the recorded run: 1M events
    python benchmarks/bench_migrate_road.py --events 100000    # a quick look

On a throwaway PostgreSQL (the `pgserver` wheel, as the tests use), for each source release
(4.3.7, and 4.1.1 where the package's migrator also builds the entity-creation index):

1. The release's own setup (the real npm package, pinned in tests/node4x) makes a template
   world; N events (INSERT ... SELECT generate_series, N/25 runs, 25 events each, unique
   correlation ids) are loaded and VACUUM ANALYZEd. Two clones get one migration each.
2. A separate process inserts events at a steady rate (default 200/s, 4 connections); each
   latency is measured from its scheduled start (a stall counts for every insert behind it).
   It starts 5 s before the migration and stops 5 s after it; the first 5 s are the floor.
   (a) the package's own setup of 5.0.0-beta.29 (`bin/setup.js`: drizzle's migrator, one
       transaction, then graphile-worker's migrate);
   (b) `wfctl --lock-timeout 1000 migrate --online --package <beta.29 install>`.
3. Prints, per run: longest insert wait, p99, p50, the floor's p50, failed inserts, total
   time, and whether the world then equals a fresh beta.29 world (catalog.compare).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_migrate import Traffic, machine, summarise  # noqa: E402
from tests.conftest import (  # noqa: E402
    _package_setup,
    install_real_package,
    install_release_package,
)
from wfctl.world import catalog  # noqa: E402

EVENTS_PER_RUN = 25
TYPES = "ARRAY['step_created','step_started','step_completed','wait_created','run_started']"


def load(dsn: str, events: int) -> float:
    """N events and their runs in a 4.x world (the columns every 4.x release has)."""
    started = time.monotonic()
    runs = max(1, events // EVENTS_PER_RUN)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name) "
            "SELECT 'wrun_' || lpad(g::text, 10, '0'), 'dpl', 'completed', 'wf' "
            "FROM generate_series(1, %s) g",
            (runs,),
        )
        conn.execute(
            "INSERT INTO workflow.workflow_events "
            "(id, type, correlation_id, run_id, payload_cbor, spec_version) "
            f"SELECT 'wevt_' || lpad(g::text, 12, '0'), ({TYPES})[1 + g %% 5], "
            "'step_' || g, 'wrun_' || lpad((1 + g %% %s)::text, 10, '0'), '\\xa0'::bytea, 2 "
            "FROM generate_series(1, %s) g",
            (runs, events),
        )
        conn.execute("VACUUM ANALYZE")
    return time.monotonic() - started


def package_migrator(dsn: str) -> dict[str, Any]:
    _package_setup(install_real_package(), dsn)
    return {}


def wfctl_road(dsn: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    for var in ("WFCTL_DATABASE_URL", "WORKFLOW_POSTGRES_URL", "DATABASE_URL"):
        env.pop(var, None)
    done = subprocess.run(
        [
            sys.executable, "-m", "wfctl", "--dsn", dsn, "--lock-timeout", "1000",
            "--format", "json", "migrate", "--online", "--package", str(install_real_package()),
        ],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"wfctl failed ({done.returncode}): {done.stderr}")
    report = json.loads(done.stdout)
    return {
        "steps": [
            f"{s['migration'][:4]} {s['kind']} {s.get('seconds', 0):.2f}s"
            for s in report["steps"]
            if s["action"] == "ran" and s["kind"] != "record"
        ]
    }


def measure(name: str, dsn: str, action: Any, rate: float, workdir: Path) -> dict[str, Any]:
    with Traffic(dsn, rate, workdir, name) as traffic:
        time.sleep(5)
        t0 = time.monotonic()
        outcome = action(dsn)
        outcome["total_s"] = round(time.monotonic() - t0, 2)
        time.sleep(5)
    results = traffic.results()
    floor = summarise([r for r in results if r["at"] < t0])
    during = summarise([r for r in results if r["at"] >= t0])
    with psycopg.connect(dsn) as conn:
        drift = [d.text for d in catalog.compare(conn, "beta29")]
    return {
        **outcome,
        "floor_p50_ms": floor["p50_ms"],
        "max_ms": during["max_ms"],
        "p99_ms": during["p99_ms"],
        "p50_ms": during["p50_ms"],
        "failed": during["failed"],
        "max_over_floor": round(during["max_ms"] / max(floor["p50_ms"], 0.1), 1),
        "beta29_catalog": "equal" if not drift else f"{len(drift)} differences",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--from", dest="sources", nargs="*", default=["4.3.7", "4.1.1"])
    args = parser.parse_args()
    import pgserver

    workdir = Path(tempfile.mkdtemp(prefix="wfctl-bench-road-"))
    server = pgserver.get_server(str(workdir / "pg"), cleanup_mode="stop")
    admin = str(server.get_uri())
    print(f"machine: {machine()}")
    print(f"events: {args.events:,}; writer {args.rate:.0f} inserts/s; lock timeout 1000 ms")
    try:
        for source in args.sources:
            install_release_package(source)
            template = f"road_{source.replace('.', '_')}"
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f"CREATE DATABASE {template}")
            tdsn = psycopg.conninfo.make_conninfo(admin, dbname=template)
            _package_setup(install_release_package(source), tdsn)
            loaded = load(tdsn, args.events)
            print(f"\n{source} world: loaded in {loaded:.1f} s")
            for name, action in (("package", package_migrator), ("wfctl", wfctl_road)):
                db = f"{template}_{name}"
                with psycopg.connect(admin, autocommit=True) as conn:
                    conn.execute(f"CREATE DATABASE {db} TEMPLATE {template}")
                dsn = psycopg.conninfo.make_conninfo(admin, dbname=db)
                print(f"  load before: {Path('/proc/loadavg').read_text().split()[:3]}")
                result = measure(f"{source}-{name}", dsn, action, args.rate, workdir)
                print(f"  {source} -> 5.0.0-beta.29, {name}: {json.dumps(result)}")
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()
