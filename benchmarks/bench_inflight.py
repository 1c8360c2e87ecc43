"""Benchmark the runs-in-flight plan and carry (wfctl/migrate/inflight.py) across 4.x -> beta.29.

A beta.29-shaped world (`wfctl bootstrap`) holding N sleepers in the 4.x shape (spec 3: run
row with started_at, run_created, run_started, step_created/started/completed, wait_created,
their step and wait rows) whose ids the 4.x rule minted (computed with wfctl/world/nodeids.py,
as the 4.1.1 runtime mints them), and N/10 runs whose ids no rule minted (the plan's worst
case: the whole 256-draw search). Prints:
- `assess` (the plan) in seconds and ms per run, beside its read floor: the same two queries
  per run (the active runs once, each run's log) without the id derivation;
- `carry` of every carryable run (one transaction each, audited), ms per run.

    python benchmarks/bench_inflight.py --runs 5000

The world has no graphile_worker schema (no job reads); a world with a queue adds one scan
of the queue to the plan and one per carried run (inflight_lock_jobs).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import throwaway_server  # noqa: E402
from wfctl import sql  # noqa: E402
from wfctl.migrate import inflight  # noqa: E402
from wfctl.world import ids, nodeids  # noqa: E402
from wfctl.world.bootstrap import bootstrap  # noqa: E402

NAME = "workflow//./workflows/corpus//nap"
STARTED_MS = 1796538791341


def fill(conn: psycopg.Connection[Any], runs: int, foreign: int) -> None:
    """Sleepers minted by the 4.x rule, then runs whose ids no rule minted."""
    started = "to_timestamp(%s / 1000.0) AT TIME ZONE 'UTC'"
    for k in range(runs + foreign):
        run_id = ids.prefixed("wrun")
        first = nodeids.first_random(f"{run_id}:{NAME}:{STARTED_MS}")
        if k < runs:
            step = "step_" + nodeids.correlation_body(STARTED_MS, first, 0)
            wait = "wait_" + nodeids.correlation_body(STARTED_MS, first, 1)
        else:
            # ids of the 4.x time, but a random part no draw of the run's seed gives
            step = "step_" + nodeids.encode_time(STARTED_MS) + "YYYYYY" + nodeids.base32_text(k, 10)
            wait = "wait_" + nodeids.encode_time(STARTED_MS) + "ZZZZZZ" + nodeids.base32_text(k, 10)
        conn.execute(
            "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name, started_at,"
            f" spec_version) VALUES (%s, 'postgres', 'running', %s, {started}, '3')",
            (run_id, NAME, STARTED_MS),
        )
        events = [
            ("run_created", None),
            ("run_started", None),
            ("step_created", step),
            ("step_started", step),
            ("step_completed", step),
            ("wait_created", wait),
        ]
        for etype, corr in events:
            conn.execute(
                "INSERT INTO workflow.workflow_events (id, type, correlation_id, run_id,"
                " spec_version) VALUES (%s, %s, %s, %s, 3)",
                (ids.legacy_event_id(), etype, corr, run_id),
            )
        conn.execute(
            "INSERT INTO workflow.workflow_steps (run_id, step_id, step_name, status, attempt)"
            " VALUES (%s, %s, 'step//./workflows/corpus//inc', 'completed', 1)",
            (run_id, step),
        )
        conn.execute(
            "INSERT INTO workflow.workflow_waits (wait_id, run_id, status, resume_at)"
            " VALUES (%s, %s, 'waiting', now() + interval '1 hour')",
            (ids.wait_row_key(run_id, wait), run_id),
        )
    conn.execute("ANALYZE")


def floor_seconds(conn: psycopg.Connection[Any]) -> float:
    """The plan's reads alone: the active runs, then each run's log."""
    started = time.perf_counter()
    runs = conn.execute(sql.load("migrate/inflight_active_runs"), {"run_ids": None}).fetchall()
    for run in runs:
        conn.execute(sql.load("migrate/inflight_run_log"), {"run_id": run[0]}).fetchall()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5000)
    args = parser.parse_args()
    foreign = args.runs // 10
    with throwaway_server("wfctl-bench-inflight-") as server:
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            bootstrap(conn, "beta29")
            with conn.transaction():
                fill(conn, args.runs, foreign)
            floor = floor_seconds(conn)
            started = time.perf_counter()
            fates = inflight.assess(conn, "4.1.1", "5.0.0-beta.29")
            plan = time.perf_counter() - started
            carried = [f.run_id for f in fates if f.fate == "carried"]
            inflight.carry(conn, [], "4.1.1", "5.0.0-beta.29", reason="bench")  # audit schema
            started = time.perf_counter()
            done = inflight.carry(conn, carried, "4.1.1", "5.0.0-beta.29", reason="bench")
            carry = time.perf_counter() - started
        total = args.runs + foreign
        load = Path("/proc/loadavg").read_text().split()[:3]
        print(
            json.dumps(
                {
                    "server": server.version,
                    "runs": total,
                    "fates": Counter(f.fate for f in fates),
                    "assess_s": round(plan, 2),
                    "assess_ms_per_run": round(1000 * plan / total, 2),
                    "read_floor_s": round(floor, 2),
                    "assess_to_floor": round(plan / floor, 1),
                    "carry_s": round(carry, 2),
                    "carry_ms_per_run": round(1000 * carry / max(len(carried), 1), 2),
                    "carried": Counter(c.outcome for c in done),
                    "loadavg": load,
                }
            )
        )


if __name__ == "__main__":
    main()
