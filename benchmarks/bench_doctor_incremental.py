"""Benchmark `wfctl doctor --incremental` on a large world (built by gen_world.py).

Figures: a sequential scan of the events (the physical floor), the first incremental pass
(a full `--all` that also records the watermark), then --new-events events written as the
world writes them (runs of --events-per-run events each, wevt_ ULID ids minted now, with
their run and step rows), and the second pass, which checks only the touched runs. With
--compare, a full `doctor --all` afterwards and a check that both found the same.

    python benchmarks/bench_doctor_incremental.py --db world_1m --new-events 10000

The watermark tables (wfctl.doctor_watermark / doctor_flagged) are dropped first so the
first pass is a full one; the new runs stay in the world (rerun gen_world.py to reset it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.common import wfctl  # noqa: E402
from benchmarks.gen_world import DEFAULT_PGDATA, db_dsn, start_server  # noqa: E402
from wfctl.world import ids  # noqa: E402


def doctor(dsn: str, *args: str) -> tuple[float, dict[str, Any], str]:
    seconds, done = wfctl(dsn, "--statement-timeout", "0", "doctor", "--limit", "1000000", *args)
    if done.returncode not in (0, 1, 2):
        raise SystemExit(f"doctor failed ({done.returncode}): {done.stderr}")
    return seconds, json.loads(done.stdout), done.stderr.strip()


def findings(report: dict[str, Any]) -> set[tuple[Any, ...]]:
    return {
        (c["code"], s["run_id"], s["entity_id"], s["in_flight"])
        for c in report["checks"]
        for s in c["samples"]
    }


def write_new_events(dsn: str, total: int, per_run: int) -> float:
    """`total` events in runs of `per_run`: run row, steps, events with wevt_ ULIDs of now."""
    runs = max(1, total // per_run)
    started = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as conn:
        clock = ids.MonotonicUlid()
        for _ in range(runs):
            run_id = ids.prefixed("wrun")
            with conn.transaction():
                conn.execute(
                    "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name,"
                    " spec_version)"
                    " VALUES (%s, 'postgres', 'running', 'workflow//bench//new', '5')",
                    (run_id,),
                )
                types = ["run_created", "run_started"]
                steps = []
                while len(types) < per_run:
                    step = ids.prefixed("step")
                    steps.append(step)
                    types += ["step_created", "step_started", "step_completed"]
                types = types[:per_run]
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO workflow.workflow_steps (run_id, step_id, step_name, status,"
                        " attempt) VALUES (%s, %s, 'step//bench', 'completed', 1)",
                        [(run_id, s) for s in steps],
                    )
                    cur.executemany(
                        "INSERT INTO workflow.workflow_events (id, type, correlation_id, run_id,"
                        " spec_version) VALUES (%s, %s, %s, %s, 5)",
                        [
                            (
                                ids.LEGACY_EVENT_PREFIX + clock.next(),
                                t,
                                None if t.startswith("run_") else steps[(i - 2) // 3],
                                run_id,
                            )
                            for i, t in enumerate(types)
                        ],
                    )
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dsn", help="admin DSN of an existing server (default: the embedded one)")
    p.add_argument("--pgdata", type=Path, default=DEFAULT_PGDATA)
    p.add_argument("--db", default="world_1m")
    p.add_argument("--new-events", type=int, default=10_000)
    p.add_argument("--events-per-run", type=int, default=20)
    p.add_argument("--compare", action="store_true", help="also run --all and compare")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    admin = args.dsn or start_server(args.pgdata)
    dsn = db_dsn(admin, args.db)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS wfctl.doctor_watermark, wfctl.doctor_flagged")
        conn.execute("SELECT count(*) FROM workflow.workflow_events")  # warm the cache once
        started = time.perf_counter()
        row = conn.execute("SELECT count(*) FROM workflow.workflow_events").fetchone()
        scan = time.perf_counter() - started
    events = int(row[0]) if row else 0
    print(f"seq scan: {events:,} events in {scan:.2f} s", flush=True)
    first, _, err1 = doctor(dsn, "--incremental")
    print(f"first pass (full): {first:.2f} s ({first / scan:.1f}x the scan); {err1}", flush=True)
    write = write_new_events(dsn, args.new_events, args.events_per_run)
    print(f"wrote {args.new_events:,} events in {write:.1f} s", flush=True)
    second, report2, err2 = doctor(dsn, "--incremental")
    slowest = sorted(((c["seconds"] or 0.0, c["code"]) for c in report2["checks"]), reverse=True)[
        :3
    ]
    print(
        f"second pass: {second:.2f} s wall (doctor's own {report2['duration_seconds']} s,"
        f" slowest checks {slowest}); {err2}"
    )
    figures: dict[str, Any] = {
        "db": args.db,
        "events": events,
        "seq_scan_seconds": round(scan, 3),
        "first_pass_seconds": round(first, 2),
        "first_pass_over_scan": round(first / scan, 2),
        "new_events": args.new_events,
        "second_pass_seconds": round(second, 3),
        "second_pass_checks_seconds": report2["duration_seconds"],
        "second_pass_message": err2,
        "second_pass_slowest_checks": slowest,
        "loadavg": os.getloadavg(),
    }
    if args.compare:
        full, report3, _ = doctor(dsn, "--all")
        figures["all_seconds"] = round(full, 2)
        figures["equal_to_all"] = findings(report2) == findings(report3)
        print(f"--all: {full:.2f} s; incremental == --all: {figures['equal_to_all']}")
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
