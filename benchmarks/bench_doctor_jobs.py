"""Benchmark a full `wfctl doctor --all` against the scans it cannot beat, at --jobs 1..N.

Figures per world, all warm (each reference is run once to warm the cache, then timed):
`count(*)` of the events (PostgreSQL answers it from an index), the same count forced onto
the heap (a parallel sequential scan, then a single-process one), the grouping floor (every
event's (run_id, correlation_id) key hashed once: what a check that compares an entity's
events must at least do), then `doctor --all` at each --jobs value (whole process, the
report's duration, every check's seconds) and whether every variant found exactly the same
findings (every finding, `--limit 1000000`, with status, count and in-flight per check).

    python benchmarks/bench_doctor_jobs.py --pgdata /tmp/wfctl-ops-bench/pgdata \\
        --db world_1m --jobs 1 --jobs 2

One big statement at a time: the doctor runs alone, after the reference scans. The load
average is sampled every 10 s while the script runs (other work on the machine skews every
figure; it is printed beside them).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_doctor_incremental import doctor  # noqa: E402
from benchmarks.gen_world import DEFAULT_PGDATA, db_dsn, start_server  # noqa: E402
from wfctl.doctor.runner import DoctorOptions  # noqa: E402

COUNT = "SELECT count(*) FROM workflow.workflow_events"
GROUP = (
    "SELECT count(*) FROM (SELECT run_id, correlation_id, count(*)"
    " FROM workflow.workflow_events GROUP BY 1, 2) g"
)


class LoadSampler:
    """The 1-minute load average every 10 s, in a daemon thread."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append(os.getloadavg()[0])
            self._stop.wait(10)

    def take(self) -> tuple[float, float]:
        """(min, max) since the last take, and start again."""
        got, self.samples = self.samples or [os.getloadavg()[0]], []
        return min(got), max(got)


def warm_timed(conn: psycopg.Connection[Any], query: str) -> float:
    conn.execute(query).fetchall()
    started = time.perf_counter()
    conn.execute(query).fetchall()
    return time.perf_counter() - started


def references(dsn: str, floor: bool) -> dict[str, float]:
    """The scans `--all` is measured against (seconds, warm)."""
    out: dict[str, float] = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        out["count"] = warm_timed(conn, COUNT)
        for setting in ("enable_indexonlyscan", "enable_indexscan", "enable_bitmapscan"):
            conn.execute(f"SET {setting} = off")
        out["heap_scan_parallel"] = warm_timed(conn, COUNT)
        conn.execute("SET max_parallel_workers_per_gather = 0")
        out["heap_scan_single"] = warm_timed(conn, COUNT)
        conn.execute("RESET ALL")
        if floor:
            conn.execute("SELECT set_config('work_mem', %s, false)", (DoctorOptions().work_mem,))
            started = time.perf_counter()
            conn.execute(GROUP).fetchall()
            out["grouping_floor"] = time.perf_counter() - started
    return {k: round(v, 3) for k, v in out.items()}


def outcome(report: dict[str, Any]) -> tuple[list[tuple[Any, ...]], set[tuple[Any, ...]]]:
    """What must not change with --jobs: per-check status and counts, and every finding
    (not its detail text: some details state an age in minutes, which moves between runs)."""
    per_check = [(c["code"], c["status"], c["count"], c["in_flight"]) for c in report["checks"]]
    found = {
        (c["code"], s["run_id"], s["entity_id"], s["in_flight"], s.get("severity"))
        for c in report["checks"]
        for s in c["samples"]
    }
    return per_check, found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dsn", help="admin DSN of an existing server (default: the embedded one)")
    p.add_argument("--pgdata", type=Path, default=DEFAULT_PGDATA)
    p.add_argument("--db", action="append", required=True, help="a world (repeatable)")
    p.add_argument("--jobs", type=int, action="append", help="--jobs values (default 1, 2)")
    p.add_argument("--no-floor", action="store_true", help="skip the grouping floor")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    jobs = args.jobs or [1, 2]
    admin = args.dsn or start_server(args.pgdata)
    load = LoadSampler()
    figures: list[dict[str, Any]] = []
    for db in args.db:
        dsn = db_dsn(admin, db)
        ref = references(dsn, not args.no_floor)
        fig: dict[str, Any] = {"db": db, "references": ref, "references_load": load.take()}
        print(f"== {db}: {ref} (load {fig['references_load']})", flush=True)
        first: tuple[list[tuple[Any, ...]], set[tuple[Any, ...]]] | None = None
        for n in jobs:
            wall, report, _ = doctor(dsn, "--all", "--jobs", str(n))
            got = outcome(report)
            first = first or got
            run = {
                "jobs": n,
                "wall_seconds": round(wall, 2),
                "checks_seconds": report["duration_seconds"],
                "over_heap_scan_parallel": round(wall / ref["heap_scan_parallel"], 1),
                "over_heap_scan_single": round(wall / ref["heap_scan_single"], 1),
                "over_count": round(wall / ref["count"], 1),
                "findings": len(got[1]),
                "same_as_first": got == first,
                "per_check": {c["code"]: c["seconds"] for c in report["checks"]},
                "load": load.take(),
            }
            if "grouping_floor" in ref:
                run["over_grouping_floor"] = round(wall / ref["grouping_floor"], 2)
            fig.setdefault("runs", []).append(run)
            slow = sorted(run["per_check"].items(), key=lambda kv: -float(kv[1] or 0))[:8]
            print(
                f"   --all --jobs {n}: wall {wall:.2f} s (checks {report['duration_seconds']} s),"
                f" {run['over_heap_scan_parallel']}x the parallel heap scan,"
                f" {run['over_heap_scan_single']}x the single-process one;"
                f" {run['findings']} findings, same as --jobs {jobs[0]}: {run['same_as_first']};"
                f" load {run['load']}; slowest {slow}",
                flush=True,
            )
        figures.append(fig)
    text = json.dumps(figures, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
