"""Benchmark the slot-log rewrite (`repair --apply --allow-rewrite`) and `wfctl info`'s
per-spec-version counts.

    python benchmarks/bench_slot_rewrite.py --runs 1000 --events 100 --bulk-events 2000000

World: `wfctl bootstrap --era slot` on a throwaway embedded server. `--runs` poisoned-tail
runs (WF122), each `--events` long: the first half slot-numbered, the second half `wevt_`
ids (the #3656 damage), written set-based. Then `--bulk-events` healthy slot events in
1,000-event runs (spec 7 and 9), so `wfctl info`'s table scans have something to count.
Prints: the world, the repair's wall time and per-run transaction time (lock_run to
commit: how long a run's row, events and jobs stay locked), and `wfctl info`'s wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import throwaway_server, wfctl  # noqa: E402
from wfctl.world.bootstrap import bootstrap  # noqa: E402

# Poisoned runs: slots 1..half (run_created first), then wevt_ ids for the rest; the wevt_
# ULID bodies are digits-and-letters that sort in write order (a fixed time prefix + a counter).
POISONED = """
INSERT INTO workflow.workflow_runs (id, deployment_id, status, name, spec_version, created_at)
SELECT 'wrun_BENCH' || lpad(r::text, 21, '0'), 'postgres', 'running', 'workflow//bench', '7',
       localtimestamp - interval '2 hours'
FROM generate_series(1, %(runs)s) r;
INSERT INTO workflow.workflow_event_slots (run_id)
SELECT 'wrun_BENCH' || lpad(r::text, 21, '0') FROM generate_series(1, %(runs)s) r;
INSERT INTO workflow.workflow_events (id, type, correlation_id, run_id, payload_cbor,
                                     spec_version, created_at)
SELECT CASE WHEN n <= %(half)s THEN 'evnt_' || lpad(n::text, 26, '0')
            ELSE 'wevt_01M8ZQ' || lpad(n::text, 20, '0') END,
       CASE WHEN n = 1 THEN 'run_created' ELSE 'step_completed' END,
       CASE WHEN n = 1 THEN NULL ELSE 'step_' || n END,
       'wrun_BENCH' || lpad(r::text, 21, '0'),
       decode(repeat('ab', 64), 'hex'), 7,
       localtimestamp - interval '4 hours' + make_interval(secs => n / 10.0)
FROM generate_series(1, %(runs)s) r, generate_series(1, %(events)s) n;
"""
BULK = """
INSERT INTO workflow.workflow_runs (id, deployment_id, status, name, spec_version)
SELECT 'wrun_BULK' || lpad(r::text, 22, '0'), 'postgres', 'completed', 'workflow//bench',
       CASE WHEN r %% 2 = 0 THEN '7' ELSE '9' END
FROM generate_series(1, %(runs)s) r;
INSERT INTO workflow.workflow_events (id, type, run_id, spec_version)
SELECT 'evnt_' || lpad(n::text, 26, '0'), 'step_completed',
       'wrun_BULK' || lpad(r::text, 22, '0'), CASE WHEN r %% 2 = 0 THEN 7 ELSE 9 END
FROM generate_series(1, %(runs)s) r, generate_series(1, 1000) n;
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000, help="poisoned runs")
    parser.add_argument("--events", type=int, default=100, help="events per poisoned run")
    parser.add_argument("--bulk-events", type=int, default=2_000_000)
    parser.add_argument("--jobs", type=int, default=4)
    args = parser.parse_args()

    with throwaway_server("wfctl-bench-slot-") as server:
        dsn, version = server.dsn, server.version
        t0 = time.perf_counter()
        with psycopg.connect(dsn, autocommit=True) as conn:
            bootstrap(conn, "slot")
            half = max(1, args.events // 2)
            params = {"runs": args.runs, "events": args.events, "half": half}
            for statement in POISONED.split(";")[:-1]:
                conn.execute(statement, params)
            for statement in BULK.split(";")[:-1]:
                conn.execute(statement, {"runs": max(1, args.bulk_events // 1000)})
            conn.execute("VACUUM ANALYZE")
            events = conn.execute("SELECT count(*) FROM workflow.workflow_events").fetchone()
        print(f"server: PostgreSQL {version}; load average {os.getloadavg()[0]:.2f}")
        print(
            f"world: {args.runs} poisoned runs x {args.events} events ({half} evnt_ + "
            f"{args.events - half} wevt_), {events[0] if events else 0:,} events in all, "
            f"built in {time.perf_counter() - t0:.1f} s"
        )

        seconds, done = wfctl(
            dsn, "repair", "--apply", "--yes", "--reason", "bench", "--allow-rewrite",
            "--only", "WF122", "--limit", str(args.runs * 2), "--jobs", str(args.jobs),
        )  # fmt: skip
        report = json.loads(done.stdout)
        applied = sum(1 for i in report["items"] if i["outcome"] == "applied")
        for reason in sorted({i["reason"] for i in report["items"] if i["outcome"] != "applied"}):
            print(f"not applied: {reason}")
        if not applied:
            return
        hold = report["lock_hold_ms"]
        moved = applied * (args.events - half)
        print(
            f"repair --allow-rewrite: exit {done.returncode}, {applied} runs rewritten "
            f"({moved:,} ids moved) in {seconds:.2f} s ({applied / seconds:.0f} runs/s, "
            f"--jobs {args.jobs}); per-run transaction p50 {hold['p50']:.1f} ms, "
            f"p99 {hold['p99']:.1f} ms, max {hold['max']:.1f} ms"
        )
        seconds, again = wfctl(dsn, "repair", "--apply", "--yes", "--reason", "bench",
                               "--allow-rewrite", "--only", "WF122")  # fmt: skip
        left = json.loads(again.stdout)["items"]
        print(f"second apply: exit {again.returncode}, {len(left)} items, {seconds:.2f} s")

        seconds, info = wfctl(dsn, "info")
        versions = {
            v["spec_version"]: v["events"] for v in json.loads(info.stdout)["spec_versions"]
        }
        print(f"wfctl info: {seconds:.2f} s wall (process start included); events {versions}")


if __name__ == "__main__":
    main()
