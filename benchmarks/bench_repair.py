"""Benchmark `wfctl repair --apply` on many findings while inserts load the same table.

Issue 4 asks: 10,000 WF112/WF101 findings repaired, total time (goal <= 30 s) and the p99
time a repair transaction holds its locks (goal <= 50 ms), measured while an insert load
runs against workflow_events.

    python benchmarks/bench_repair.py --findings 10000 --insert-rate 500

World: the real package's bootstrap (graphile_worker included) when node/npm exist, else
`wfctl bootstrap`; then half the runs carry an orphan step row (WF101), half a completed
wait without wait_completed (WF112), all an hour old; plus one queue job per run, so the
locked-job guard has a realistic queue to search.
"""

from __future__ import annotations

import argparse
import base64
import json
import multiprocessing as mp
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import throwaway_server, wfctl  # noqa: E402
from tests.conftest import node_available, real_bootstrap  # noqa: E402
from wfctl.world import codec, ids  # noqa: E402
from wfctl.world.bootstrap import bootstrap  # noqa: E402


def build_world(dsn: str, findings: int) -> None:
    if node_available():
        real_bootstrap(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        bootstrap(conn, "beta29")
        hour_ago = datetime.now(UTC).replace(tzinfo=None) - timedelta(hours=1)
        clock = ids.MonotonicUlid()
        resume = codec.encode({"resumeAt": datetime.now(UTC) - timedelta(hours=1)})
        with conn.cursor() as cur:
            with cur.copy(
                "COPY workflow.workflow_runs (id, deployment_id, status, name, spec_version,"
                " input_cbor, created_at, updated_at) FROM STDIN"
            ) as copy:
                runs = [ids.prefixed("wrun") for _ in range(findings)]
                for run in runs:
                    copy.write_row(
                        (
                            run,
                            "postgres",
                            "running",
                            "workflow//bench",
                            "5",
                            codec.encode(b"devl[]"),
                            hour_ago,
                            hour_ago,
                        )
                    )
            with cur.copy(
                "COPY workflow.workflow_events (id, type, correlation_id, run_id, payload_cbor,"
                " spec_version, created_at) FROM STDIN"
            ) as copy:
                for n, run in enumerate(runs):
                    copy.write_row(
                        ("wevt_" + clock.next(), "run_created", None, run, None, 5, hour_ago)
                    )
                    copy.write_row(
                        ("wevt_" + clock.next(), "run_started", None, run, None, 5, hour_ago)
                    )
                    if n % 2:
                        copy.write_row(
                            (
                                "wevt_" + clock.next(),
                                "wait_created",
                                f"wait_{run[5:]}",
                                run,
                                resume,
                                5,
                                hour_ago,
                            )
                        )
            with cur.copy(
                "COPY workflow.workflow_steps (run_id, step_id, step_name, status, attempt,"
                " input_cbor, spec_version, created_at, updated_at) FROM STDIN"
            ) as copy:
                for run in runs[0::2]:
                    copy.write_row(
                        (
                            run,
                            f"step_{run[5:]}",
                            "step//bench",
                            "pending",
                            0,
                            codec.encode(b"devl[1]"),
                            5,
                            hour_ago,
                            hour_ago,
                        )
                    )
            with cur.copy(
                "COPY workflow.workflow_waits (wait_id, run_id, status, resume_at, completed_at,"
                " created_at, updated_at, spec_version) FROM STDIN"
            ) as copy:
                for run in runs[1::2]:
                    copy.write_row(
                        (
                            f"{run}-wait_{run[5:]}",
                            run,
                            "completed",
                            hour_ago,
                            hour_ago,
                            hour_ago,
                            hour_ago,
                            5,
                        )
                    )
        if node_available():
            for run in runs:
                body = base64.b64encode(json.dumps({"runId": run}).encode()).decode()
                conn.execute(
                    "SELECT graphile_worker.add_job('workflow_flows', %s::json,"
                    " run_at => now() + interval '1 day', max_attempts => 3)",
                    (
                        json.dumps(
                            {
                                "attempt": 1,
                                "messageId": ids.prefixed("msg"),
                                "id": "workflow//bench",
                                "data": body,
                            }
                        ),
                    ),
                )
        conn.execute("ANALYZE")


def insert_load(dsn: str, rate: float, stop: mp.Event, out: mp.Queue) -> None:  # type: ignore[type-arg]
    """Insert events for unrelated runs at a steady rate; report each insert's latency."""
    latencies: list[float] = []
    errors = 0
    clock = ids.MonotonicUlid()
    run = ids.prefixed("wrun")
    with psycopg.connect(dsn, autocommit=True) as conn:
        nxt = time.perf_counter()
        while not stop.is_set():
            started = time.perf_counter()
            try:
                conn.execute(
                    "INSERT INTO workflow.workflow_events (id, type, run_id, spec_version)"
                    " VALUES (%s, 'step_started', %s, 5)",
                    ("wevt_" + clock.next(), run),
                )
            except psycopg.Error:
                errors += 1
            latencies.append((time.perf_counter() - started) * 1000)
            nxt += 1 / rate
            time.sleep(max(0.0, nxt - time.perf_counter()))
    out.put((latencies, errors))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--findings", type=int, default=10_000)
    parser.add_argument("--insert-rate", type=float, default=500.0, help="inserts per second")
    args = parser.parse_args()

    with throwaway_server("wfctl-bench-repair-") as server:
        dsn, version, fsync = server.dsn, server.version, server.fsync
        t0 = time.perf_counter()
        build_world(dsn, args.findings)
        print(f"world: {args.findings} findings built in {time.perf_counter() - t0:.1f} s")

        stop, out = mp.Event(), mp.Queue()
        loader = mp.Process(target=insert_load, args=(dsn, args.insert_rate, stop, out))
        loader.start()
        time.sleep(1.0)
        total, done = wfctl(
            dsn, "repair", "--apply", "--yes", "--reason", "bench",
            "--limit", str(args.findings * 2), "--only", "WF101,WF112",
        )  # fmt: skip
        stop.set()
        latencies, errors = out.get(timeout=30)
        loader.join()
        report = json.loads(done.stdout)
        applied = sum(1 for i in report["items"] if i["outcome"] == "applied")
        hold = report["lock_hold_ms"]
        print(f"server: PostgreSQL {version}, fsync={fsync}")
        print(f"repair exit {done.returncode}: {applied} applied of {len(report['items'])}")
        print(f"total wall time: {total:.2f} s ({applied / total:.0f} repairs/s)")
        print(
            f"lock hold per run transaction: p50 {hold['p50']:.2f} ms, "
            f"p99 {hold['p99']:.2f} ms, max {hold['max']:.2f} ms"
        )
        print(
            f"concurrent inserts: {len(latencies)} at {args.insert_rate:.0f}/s, "
            f"{errors} failed, p50 {statistics.median(latencies):.2f} ms, "
            f"p99 {pct(latencies, 0.99):.2f} ms, max {max(latencies):.2f} ms"
        )
        print(f"after: {report['after']}")


if __name__ == "__main__":
    main()
