"""The Python client's latencies: enqueue to first step, and result() notification.

    python benchmarks/bench_client.py [--dsn ADMIN_DSN] [--samples 50] [--warmup 5] [--rounds 3]

On one local server (a throwaway pgserver unless --dsn), one idle `wfctl worker` of this
file's workflows (`--concurrency 4 --poll 1h`: only NOTIFY wakes it), sequential samples:

- floor: a bare `INSERT … ; pg_notify(…)` transaction in one round trip, from before the
  statement until a LISTENing session of this process has the notification (one commit and
  one NOTIFY delivery: the least any enqueue-then-wake or end-then-wake can cost);
- enqueue -> first step: from before `Client.enqueue()` until the first step's body starts
  in the worker (the body returns `time.time()`); covers the run's creation transaction, the
  worker's wake-up, claim, replay and the transaction that starts the step;
- result() notification: a step sleeps 50 ms (so `result()` is already waiting), stamps
  `time.time()` and returns; from that stamp until `result()` returns in this process;
  covers the run's terminal transaction, the NOTIFY, and the client's re-read of the row;
- enqueue() call: how long `Client.enqueue()` itself takes (the run id is known at return).

Prints a JSON report: per round (floor, then the three measurements, `--samples` each),
median / p90 / max in ms and each median as a ratio to that round's floor median, with the
load average before and after; and the same over all rounds pooled.
"""

from __future__ import annotations

import argparse
import json
import os
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

from wfctl.runtime import Client, Workflows  # noqa: E402

wf = Workflows()


@wf.step(name="bench.client.stamp")
def stamp() -> float:
    return time.time()


@wf.step(name="bench.client.late_stamp")
def late_stamp(delay: float) -> float:
    time.sleep(delay)
    return time.time()


@wf.workflow(name="bench.client.first")
async def first() -> float:
    return await stamp()


@wf.workflow(name="bench.client.last")
async def last(delay: float) -> float:
    return await late_stamp(delay)


def dist(values_ms: list[float]) -> dict[str, float]:
    ordered = sorted(values_ms)
    return {
        "p50_ms": round(statistics.median(ordered), 3),
        "p90_ms": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 3),
        "max_ms": round(ordered[-1], 3),
        "n": len(ordered),
    }


def world(admin: str, name: str) -> str:
    from wfctl.world.bootstrap import bootstrap

    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        c.execute(f'CREATE DATABASE "{name}"')
    dsn = psycopg.conninfo.make_conninfo(admin, dbname=name)
    with psycopg.connect(dsn, autocommit=True) as c:
        bootstrap(c, "beta29")
        c.execute("CREATE TABLE public.bench_floor (id bigserial PRIMARY KEY, v int)")
    return dsn


def floor(dsn: str, samples: int) -> list[float]:
    """INSERT + pg_notify in one round trip -> the listener has it (ms)."""
    got: queue.SimpleQueue[float] = queue.SimpleQueue()
    ready = threading.Event()
    stop = threading.Event()

    def listen() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("LISTEN bench_floor")
            ready.set()
            while not stop.is_set():
                for _ in conn.notifies(timeout=0.2):
                    got.put(time.perf_counter())

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    ready.wait(10)
    out = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        statement = (
            "WITH i AS (INSERT INTO public.bench_floor (v) VALUES (1) RETURNING id)"
            " SELECT pg_notify('bench_floor', id::text) FROM i"
        )
        conn.execute(statement)  # prepare/plan once
        got.get(timeout=10)
        for _ in range(samples):
            began = time.perf_counter()
            conn.execute(statement)
            out.append((got.get(timeout=10) - began) * 1000)
            time.sleep(0.01)
    stop.set()
    thread.join(5)
    return out


def measure(client: Client, dsn: str, samples: int) -> dict[str, list[float]]:
    """One round: the floor, then enqueue -> first step, the enqueue call, and the result
    notification, `samples` sequential runs each (ms)."""
    floor_ms = floor(dsn, samples)
    to_first: list[float] = []
    call: list[float] = []
    notified: list[float] = []
    for _ in range(samples):
        began = time.time()
        handle = client.enqueue(first)
        call.append((time.time() - began) * 1000)
        started = handle.result(timeout=30)
        to_first.append((started - began) * 1000)
        time.sleep(0.01)
    for _ in range(samples):
        handle = client.enqueue(last, 0.05)
        stamped = handle.result(timeout=30)
        notified.append((time.time() - stamped) * 1000)
        time.sleep(0.01)
    return {
        "floor_insert_notify": floor_ms,
        "enqueue_to_first_step": to_first,
        "enqueue_call": call,
        "result_notification": notified,
    }


def summary(measured: dict[str, list[float]], load: tuple[float, float, float]) -> dict[str, Any]:
    base = statistics.median(measured["floor_insert_notify"])
    out: dict[str, Any] = {key: dist(values) for key, values in measured.items()}
    out["ratios_to_floor"] = {
        key: round(statistics.median(values) / base, 2)
        for key, values in measured.items()
        if key != "floor_insert_notify"
    }
    out["load_1m_after"] = round(load[0], 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", help="admin DSN of an existing server (default: pgserver)")
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="wfctl-bench-client-"))
    server = None
    if args.dsn:
        admin = args.dsn
    else:
        import pgserver

        server = pgserver.get_server(str(tmp / "pg"), cleanup_mode="stop")
        admin = str(server.get_uri())
    report: dict[str, Any] = {"cores": os.cpu_count(), "load_before": os.getloadavg()}
    worker = None
    try:
        dsn = world(admin, "bench_client")
        with psycopg.connect(dsn, autocommit=True) as c:
            report["server"] = {
                k: c.execute(f"SHOW {k}").fetchone()[0]  # type: ignore[index]
                for k in ("server_version", "fsync", "synchronous_commit")
            }
        log = (tmp / "worker.log").open("wb")
        worker = subprocess.Popen(
            [sys.executable, "-m", "wfctl", "--dsn", dsn, "worker",
             "benchmarks/bench_client.py:wf", "--concurrency", "4", "--poll", "1h"],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log,
        )  # fmt: skip
        with psycopg.connect(dsn, autocommit=True) as c:
            deadline = time.monotonic() + 30
            while c.execute("SELECT count(*) FROM wfctl.workers").fetchone()[0] < 1:  # type: ignore[index]
                assert time.monotonic() < deadline, "the worker did not start"
                time.sleep(0.05)
        time.sleep(0.3)
        client = Client(dsn)
        for _ in range(args.warmup):
            client.enqueue(first).result(timeout=30)
            client.enqueue(last, 0.0).result(timeout=30)
        pooled: dict[str, list[float]] = {}
        report["rounds"] = []
        for _ in range(args.rounds):
            measured = measure(client, dsn, args.samples)
            for key, values in measured.items():
                pooled.setdefault(key, []).extend(values)
            report["rounds"].append(summary(measured, os.getloadavg()))
        client.close()
        report["pooled"] = summary(pooled, os.getloadavg())
        report["load_after"] = os.getloadavg()
    except BaseException:
        print(f"failed; worker log kept in {tmp}", file=sys.stderr)
        raise
    finally:
        if worker is not None:
            worker.terminate()
            worker.wait(30)
        if server is not None:
            server.cleanup()
    shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
