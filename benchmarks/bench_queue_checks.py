"""Time the queue checks' SQL (WF131-WF135) at a git revision against the working tree.

Why: WF131/WF133/WF134 gained correlated look-ups (the wait row, the run's hooks and waits,
later jobs and events) to stop misreading healthy runs; this shows what they cost on a world
made by gen_world.py. Each query runs 7 times as doctor's default scope; the median is
printed with the row count (which must match the planted findings + in-flight rows).

    python benchmarks/bench_queue_checks.py --dsn "host=/tmp/wfctl-bench/pgdata dbname=world_100k"
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from pathlib import Path

import psycopg

from wfctl.doctor.runner import DoctorOptions

CODES = ("WF131", "WF132", "WF133", "WF134", "WF135")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", required=True, help="the generated world (user postgres)")
    parser.add_argument("--baseline-rev", default="f556ca6", help="git revision to compare")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    params = DoctorOptions().params()
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        for code in CODES:
            versions = {"tree": Path(f"sql/checks/{code}.sql").read_text()}
            old = subprocess.run(
                ["git", "show", f"{args.baseline_rev}:sql/checks/{code}.sql"],
                capture_output=True,
                text=True,
                check=False,
            )
            if old.returncode == 0:
                versions = {args.baseline_rev: old.stdout, **versions}
            for rev, text in versions.items():
                times, rows = [], 0
                for _ in range(args.repeat):
                    t = time.perf_counter()
                    rows = len(conn.execute(text, params).fetchall())
                    times.append(time.perf_counter() - t)
                median = statistics.median(times) * 1000
                print(f"{code} {rev:9} rows {rows:4} median {median:7.1f} ms")
    print("load average", Path("/proc/loadavg").read_text().split()[:3])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
