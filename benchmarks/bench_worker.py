"""`wfctl worker` throughput, step overhead, wake-up latency, and a large crash storm.

    python benchmarks/bench_worker.py [--dsn ADMIN_DSN] [--steps 100] [--no-dbos] [--warmup 0]
        [--wake 50] [--storm-runs 200] [--storm-kills 0] [--storm-workers 4]
        [--only throughput|wake|storm]

On one local server (a throwaway pgserver unless --dsn):
- wfctl: C runs (C = 1, 4, 16) of S trivial sequential steps each, handed to W worker
  processes (W = 1, 2; `--concurrency 16`): throughput in steps/s (all steps / wall time from
  the first creation to the last step body's start) and per-step overhead p50 / p99 (the gap
  between consecutive step bodies of one run; each body returns time.time());
- beside each wfctl point, in the same round: pgbench's commit rate of the package-rows
  floor (benchmarks/floor.py: the rows one step writes, one transaction per step) at the same
  number of clients as concurrent runs, on a beta.29 world of its own;
  `x_pgbench_rows` = wfctl's steps/s / that rate;
- DBOS Transact 3.4 (the `bench` extra), same workload in one process (C workflows started
  with DBOS.start_workflow, same step body), same server, same run of this script;
- wake-up latency on an idle worker: hook resumed (before its COMMIT) -> next step body
  starts; durable timer due (resumeAt) -> next step body starts; p50 / p99 / max, each
  sample split at the claim and at the step's transaction (see bench_wake), with what can
  explain an outlier: the server's statements over 20 ms and checkpoints (pgserver only)
  and the disk's fdatasync stalls;
- optionally a crash storm (tests/worker/test_storm.py) with --storm-kills SIGKILLs.
Prints a JSON report.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
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
sys.path.insert(0, str(ROOT / "benchmarks"))

import floor as rows_floor  # noqa: E402  (benchmarks/floor.py)

from wfctl.runtime import Workflows, create_hook, sleep  # noqa: E402

wf = Workflows()


@wf.step(name="bench.stamp")
def stamp(i: int) -> float:
    return time.time()


@wf.workflow(name="bench.chain")
async def chain(n: int) -> list[float]:
    return [await stamp(i) for i in range(n)]


@wf.workflow(name="bench.hooked")
async def hooked(token: str) -> float:
    await stamp(0)
    await create_hook(token=token)
    at = await stamp(1)
    # Parks again so that the queue row (and the claim that ran stamp(1)) can be read.
    await create_hook(token=f"{token}/end")
    return at


@wf.workflow(name="bench.timer")
async def timer(seconds: float, token: str) -> float:
    await stamp(0)
    await sleep(seconds)
    at = await stamp(1)
    await create_hook(token=f"{token}/end")
    return at


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def dist(values_ms: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(values_ms), 3),
        "p99_ms": round(percentile(values_ms, 0.99), 3),
        "max_ms": round(max(values_ms), 3),
        "worst5_ms": [round(v, 1) for v in sorted(values_ms)[-5:]],
        "n": len(values_ms),
    }


def make_db(admin: str, name: str) -> str:
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        c.execute(f'CREATE DATABASE "{name}"')
    return psycopg.conninfo.make_conninfo(admin, dbname=name)


def world(admin: str, name: str) -> str:
    from wfctl.world.bootstrap import bootstrap

    dsn = make_db(admin, name)
    with psycopg.connect(dsn, autocommit=True) as c:
        bootstrap(c, "beta29")
    return dsn


def start_workers(dsn: str, n: int, log_dir: Path, concurrency: int = 16) -> list[Any]:
    procs = []
    for i in range(n):
        log = (log_dir / f"w{i}.log").open("wb")
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "wfctl",
                    "--dsn",
                    dsn,
                    "worker",
                    "benchmarks/bench_worker.py:wf",
                    "--concurrency",
                    str(concurrency),
                ],
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        )
    deadline = time.monotonic() + 30
    with psycopg.connect(dsn, autocommit=True) as c:
        while c.execute("SELECT count(*) FROM wfctl.workers").fetchone()[0] < n:  # type: ignore[index]
            assert time.monotonic() < deadline, "workers did not start"
            time.sleep(0.05)
    time.sleep(0.3)
    return procs


def stop_workers(procs: list[Any]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        assert p.wait(30) == 0


def wait_done(conn: psycopg.Connection[Any], run_ids: list[str], timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while True:
        row = conn.execute(
            "SELECT count(*) FROM workflow.workflow_runs WHERE id = ANY(%s)"
            " AND status IN ('completed', 'failed', 'cancelled')",
            (run_ids,),
        ).fetchone()
        if row and row[0] == len(run_ids):
            return
        assert time.monotonic() < deadline, "runs did not finish"
        time.sleep(0.01)


def outputs(conn: psycopg.Connection[Any], run_ids: list[str]) -> list[Any]:
    from wfctl.runtime import serde
    from wfctl.world import codec

    rows = conn.execute(
        "SELECT status::text, output_cbor FROM workflow.workflow_runs WHERE id = ANY(%s)",
        (run_ids,),
    ).fetchall()
    assert all(r[0] == "completed" for r in rows), rows
    return [serde.loads(codec.decode(r[1])) for r in rows]


def cpu_seconds(pids: list[int]) -> dict[int, float]:
    """User + system CPU seconds used so far by each live process of `pids` (psutil)."""
    import psutil

    out: dict[int, float] = {}
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        out[pid] = t.user + t.system
    return out


def backends(conn: psycopg.Connection[Any]) -> list[int]:
    """The server processes serving this database (local servers only)."""
    rows = conn.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
        " AND pid <> pg_backend_pid()"
    ).fetchall()
    return [int(r[0]) for r in rows]


def used(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds between two samples (a process first seen in `after` counts from 0)."""
    return sum(t - before.get(pid, 0.0) for pid, t in after.items())


def bench_wfctl(
    admin: str, workers: int, concurrent: int, steps: int, tmp: Path, warmup: int = 0
) -> dict[str, Any]:
    from wfctl.runtime.executor import create

    dsn = world(admin, f"bench_worker_{workers}_{concurrent}")
    procs = start_workers(dsn, workers, tmp)
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            if warmup:  # before the clock: slot sessions that have prepared and planned
                warm = [create(chain, [3], conn=conn, queue="default") for _ in range(warmup)]
                wait_done(conn, [w.run_id for w in warm])
            pids = [p.pid for p in procs]
            worker0, server0 = cpu_seconds(pids), cpu_seconds(backends(conn))
            t0 = time.time()
            run_ids = [
                create(chain, [steps], conn=conn, queue="default").run_id for _ in range(concurrent)
            ]
            wait_done(conn, run_ids)
            worker1, server1 = cpu_seconds(pids), cpu_seconds(backends(conn))
            stamps = outputs(conn, run_ids)
            wall = max(max(s) for s in stamps) - t0  # first creation -> last step body
    finally:
        stop_workers(procs)
    gaps = [(b - a) * 1000 for s in stamps for a, b in itertools.pairwise(s)]
    total = concurrent * steps
    result = {
        "workers": workers,
        "concurrent_runs": concurrent,
        "steps_per_s": round(total / wall, 1),
        "step_overhead": dist(gaps),
        # from the first creation to the last run's end (polled every 10 ms): includes the
        # runs' creation, pickup and end, the claims, heartbeats and the idle polling
        "worker_cpu_ms_per_step": round(used(worker0, worker1) * 1000 / total, 3),
        "server_cpu_ms_per_step": round(used(server0, server1) * 1000 / total, 3),
        "load_average": round(os.getloadavg()[0], 2),
        "warmup_runs": warmup,
    }
    if max(gaps, default=0.0) > 1000:  # a stall: keep the workers' logs (tmp is removed)
        kept = Path(tempfile.mkdtemp(prefix=f"wfctl-bench-stall-{workers}w{concurrent}r-"))
        for log in tmp.glob("w*.log"):
            shutil.copy(log, kept / log.name)
        result["stall_logs"] = str(kept)
    return result


def pgbench_rate(dsn: str, clients: int, steps: int) -> dict[str, Any]:
    """pgbench's commit rate of the package-rows floor at `clients` clients (a step's rows,
    one transaction each; at least 500 per client so that the rate is not its start-up)."""
    if rows_floor.PGBENCH is None:
        return {"client": "none", "note": "pgbench not installed"}
    return rows_floor.pgbench(dsn, "beta29", clients=clients, transactions=max(steps, 500))


def bench_dbos(admin: str, concurrent: int, steps: int) -> dict[str, Any]:
    from dbos import DBOS

    dsn = make_db(admin, f"bench_worker_dbos_{concurrent}")
    parts = psycopg.conninfo.conninfo_to_dict(dsn)
    host = str(parts.get("host", "localhost"))
    user, port, db = parts.get("user", "postgres"), parts.get("port", 5432), parts["dbname"]
    url = (
        f"postgresql://{user}@/{db}?host={host}&port={port}"
        if host.startswith("/")
        else f"postgresql://{user}@{host}:{port}/{db}"
    )

    @DBOS.step()
    def dbos_stamp(i: int) -> float:
        return time.time()

    @DBOS.workflow()
    def dbos_chain(n: int) -> list[float]:
        return [dbos_stamp(i) for i in range(n)]

    DBOS(config={"name": f"wfctl-bench-{concurrent}", "system_database_url": url})
    DBOS.launch()
    try:
        dbos_chain(3)  # warm up
        with psycopg.connect(dsn, autocommit=True) as conn:
            own0, server0 = time.process_time(), cpu_seconds(backends(conn))
            t0 = time.time()
            handles = [DBOS.start_workflow(dbos_chain, steps) for _ in range(concurrent)]
            stamps = [h.get_result() for h in handles]
            own1, server1 = time.process_time(), cpu_seconds(backends(conn))
        wall = max(max(s) for s in stamps) - t0  # first start -> last step body
    finally:
        DBOS.destroy(destroy_registry=True)
    gaps = [(b - a) * 1000 for s in stamps for a, b in itertools.pairwise(s)]
    total = concurrent * steps
    return {
        "workers": 1,
        "concurrent_runs": concurrent,
        "steps_per_s": round(total / wall, 1),
        "step_overhead": dist(gaps),
        "worker_cpu_ms_per_step": round((own1 - own0) * 1000 / total, 3),  # DBOS in-process
        "server_cpu_ms_per_step": round(used(server0, server1) * 1000 / total, 3),
        "load_average": round(os.getloadavg()[0], 2),
    }


class FsyncProbe(threading.Thread):
    """Every 100 ms, 8 kB written and fdatasync'ed to a file next to the server's data
    directory; records the syncs of 20 ms or more (the disk stalling every commit then)."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.probes = 0
        self.stalls: list[str] = []
        self._halt = threading.Event()

    def run(self) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while not self._halt.wait(0.1):
                began = time.time()
                os.pwrite(fd, os.urandom(8192), 0)
                os.fdatasync(fd)
                ms = (time.time() - began) * 1000
                self.probes += 1
                if ms >= 20:
                    stamp = time.strftime("%H:%M:%S", time.gmtime(began))
                    self.stalls.append(f"{stamp}.{int(began * 1000) % 1000:03d} {ms:.0f} ms")
        finally:
            os.close(fd)

    def stop(self) -> None:
        self._halt.set()
        self.join()


def wait_parked(conn: psycopg.Connection[Any], run_id: str, timeout: float = 60) -> None:
    """Until the run waits on a hook with nobody holding it (the worker idle again)."""
    deadline = time.monotonic() + timeout
    while conn.execute(
        "SELECT ready_at IS NULL AND lease_owner IS NULL FROM wfctl.run_queue WHERE run_id = %s",
        (run_id,),
    ).fetchone() != (True,):
        assert time.monotonic() < deadline, f"run {run_id} did not park"
        time.sleep(0.002)


def bench_wake(admin: str, n: int, tmp: Path, server_log: Path | None = None) -> dict[str, Any]:
    """Each sample is split at the claim (`run_queue.claimed_at`, the database clock of the
    claim statement, read while the run is parked on its second hook) and at the start of the
    worker's transaction that writes the step's step_started (its `created_at`): *to_claim* =
    resume (or resumeAt) -> claim: the NOTIFY delivery / the slot's timed sleep, then the
    claim query; *claim_to_tx*: reading the run and its events, the replay; *tx_to_step*:
    the transition's writes and COMMIT, then the step's thread. The hook samples also give
    the resume transaction's own commit as the benchmark sees it (*commit*) and the rest
    (*after_commit*: the resume returned -> the step body).
    `claims` > 2 means the run was claimed more than once (e.g. `busy`). With the pgserver
    server, its checkpoints during the samples are listed (a checkpoint's fsyncs can stall
    the commits on a shared disk)."""
    from wfctl.runtime import serde
    from wfctl.runtime.executor import create
    from wfctl.runtime.store import Store

    dsn = world(admin, "bench_worker_wake")
    if server_log is not None:  # statements of 20 ms or more go to the server log
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("ALTER DATABASE bench_worker_wake SET log_min_duration_statement = 20")
    procs = start_workers(dsn, 1, tmp, concurrency=4)
    payload = serde.dumps(None, "payload")
    samples: dict[str, list[dict[str, Any]]] = {"hook": [], "timer": []}
    load = [os.getloadavg()[0]]
    log_from = server_log.stat().st_size if server_log is not None else 0
    probe = FsyncProbe(tmp / "fsync-probe")
    probe.start()
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            store = Store(conn)

            def claimed(run_id: str) -> tuple[float, int]:
                row = conn.execute(
                    "SELECT extract(epoch FROM claimed_at)::float8, claims FROM wfctl.run_queue"
                    " WHERE run_id = %s",
                    (run_id,),
                ).fetchone()
                assert row is not None
                return float(row[0]), int(row[1])

            def finish(run_id: str, token: str) -> tuple[float, float]:
                """(stamp(1)'s body start, the start of the transaction of its step_started)"""
                store.resume_hook(f"{token}/end", payload)
                wait_done(conn, [run_id])
                started = [e for e in store.read_events(run_id) if e.type == "step_started"]
                return float(outputs(conn, [run_id])[0]), started[1].created_at.timestamp()

            def at(t: float) -> str:
                return time.strftime("%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}"

            for i in range(n):
                token = f"wake-{i}"
                run_id = create(hooked, [token], conn=conn, queue="default").run_id
                wait_parked(conn, run_id)
                time.sleep(0.05)  # the worker is idle again
                t0 = time.time()
                store.resume_hook(token, payload)
                t1 = time.time()
                wait_parked(conn, run_id)
                at_claim, claims = claimed(run_id)
                body, tx = finish(run_id, token)
                samples["hook"].append(
                    {
                        "total": (body - t0) * 1000,
                        "commit": (t1 - t0) * 1000,
                        "after_commit": (body - t1) * 1000,
                        "to_claim": (at_claim - t0) * 1000,
                        "claim_to_tx": (tx - at_claim) * 1000,
                        "tx_to_step": (body - tx) * 1000,
                        "claims": claims,
                        "at": at(t0),
                    }
                )
            for i in range(n):
                token = f"timer-{i}"
                run_id = create(timer, [0.2, token], conn=conn, queue="default").run_id
                wait_parked(conn, run_id)
                at_claim, claims = claimed(run_id)
                body, tx = finish(run_id, token)
                due = next(e for e in store.read_events(run_id) if e.type == "wait_created")
                resume_at = due.data["resumeAt"].timestamp()
                samples["timer"].append(
                    {
                        "total": (body - resume_at) * 1000,
                        "to_claim": (at_claim - resume_at) * 1000,
                        "claim_to_tx": (tx - at_claim) * 1000,
                        "tx_to_step": (body - tx) * 1000,
                        "claims": claims,
                        "at": at(resume_at),
                    }
                )
    finally:
        stop_workers(procs)
        probe.stop()
        load.append(os.getloadavg()[0])

    def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
        parts = [k for k in rows[0] if k not in ("total", "claims", "at")]
        worst = sorted(rows, key=lambda r: r["total"])[-5:]
        return {
            **dist([r["total"] for r in rows]),
            "parts": {k: dist([r[k] for r in rows]) for k in parts},
            "worst5": [
                {k: round(v, 1) if isinstance(v, float) else v for k, v in r.items()} for r in worst
            ],
            "extra_claims": sum(1 for r in rows if r["claims"] > 2),
        }

    checkpoints: list[str] = []
    slow: list[str] = []
    if server_log is not None:
        with server_log.open("rb") as f:
            f.seek(log_from)
            text = f.read().decode(errors="replace")
        for line in text.splitlines():
            if "LOG:  checkpoint" in line:
                checkpoints.append(line[11:23] + line.split("LOG:", 1)[1])
            elif "LOG:  duration:" in line:
                slow.append((line[11:23] + line.split("LOG:", 1)[1])[:160])
    return {
        "loadavg_1min_before_after": load,
        "checkpoints": checkpoints,
        "statements_over_20ms": slow,
        "disk_fdatasync_over_20ms": {"probes": probe.probes, "stalls": probe.stalls},
        "hook_resumed_to_next_step": summary(samples["hook"]),
        "timer_due_to_next_step": summary(samples["timer"]),
    }


def bench_storm(admin: str, runs: int, kills: int, nworkers: int, tmp: Path) -> dict[str, Any]:
    from tests.worker.conftest import WorkerProc
    from tests.worker.test_storm import run_storm
    from wfctl.world.bootstrap import bootstrap

    dsn = make_db(admin, "bench_worker_storm")
    with psycopg.connect(dsn, autocommit=True) as c:
        bootstrap(c, "beta29")

    class Db:
        def __init__(self, dsn: str) -> None:
            self.dsn = dsn

        def connect(self) -> psycopg.Connection[Any]:
            return psycopg.connect(self.dsn, autocommit=True)

    made: list[WorkerProc] = []

    def workers(dsn: str, *args: str) -> WorkerProc:
        w = WorkerProc(dsn, tmp / f"storm-{len(made)}.log", ["tests.worker.flows", *args])
        made.append(w)
        return w.start()

    def run_cli(*args: str) -> tuple[int, str, str]:
        p = subprocess.run(
            [sys.executable, "-m", "wfctl", *args], cwd=ROOT, capture_output=True, text=True
        )
        return p.returncode, p.stdout, p.stderr

    try:
        result = run_storm(
            Db(dsn),
            run_cli,
            workers,
            runs=runs,
            kills=kills,
            nworkers=nworkers,
            seed=1,
            timeout=7200,
            kill_gap=(0.3, 1.0),
            refill=True,
        )
    finally:  # a failed storm leaves its workers running
        for w in made:
            if w.alive():
                w.kill()
    return {
        "runs": result.runs,
        "sigkills": result.kills,
        "self_kills_by_doomed_steps": result.self_kills,
        "workers": nworkers,
        "seconds": round(result.seconds, 1),
        "statuses": dict(result.statuses),
        "failed_by_kills_using_up_attempts": dict(result.exhausted),
        "checks": "all passed (expected statuses, doctor clean, no double terminal, budgets)",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", help="admin DSN of an existing server (default: pgserver)")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--no-dbos", action="store_true")
    parser.add_argument("--wake", type=int, default=50)
    parser.add_argument("--storm-runs", type=int, default=200)
    parser.add_argument("--storm-kills", type=int, default=0)
    parser.add_argument("--storm-workers", type=int, default=4)
    parser.add_argument("--only", choices=["throughput", "wake", "storm"])
    parser.add_argument(
        "--concurrent", default="1,4,16", help="throughput: concurrent runs per point (list)"
    )
    parser.add_argument("--workers", default="1,2", help="throughput: worker processes (list)")
    parser.add_argument("--repeat", type=int, default=1, help="throughput: rounds (interleaved)")
    parser.add_argument(
        "--warmup",
        type=int,
        default=0,
        help="throughput: runs of 3 steps through the workers before each point's clock starts"
        " (a long-lived worker's sessions have prepared and planned their statements; a new"
        " backend's first run costs ~6 ms of server CPU)",
    )
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="wfctl-bench-worker-"))
    server = None
    if args.dsn:
        admin = args.dsn
    else:
        import pgserver

        server = pgserver.get_server(str(tmp / "pg"), cleanup_mode="stop")
        admin = str(server.get_uri())
    report: dict[str, Any] = {"cores": os.cpu_count(), "steps_per_run": args.steps}
    try:
        with psycopg.connect(admin, autocommit=True) as c:
            report["server"] = {
                k: c.execute(f"SHOW {k}").fetchone()[0]  # type: ignore[index]
                for k in ("server_version", "fsync", "synchronous_commit")
            }
        if args.only in (None, "throughput"):
            points = [int(c) for c in args.concurrent.split(",")]
            nworkers = [int(w) for w in args.workers.split(",")]
            report["wfctl"], report["dbos"] = [], []
            rows_world = rows_floor.make_world(admin, "beta29", "bench_worker_rows_floor")
            for _ in range(args.repeat):  # wfctl and DBOS alternate: same load, same round
                for w in nworkers:
                    for c in points:
                        rate = pgbench_rate(rows_world, c, args.steps)
                        point = bench_wfctl(admin, w, c, args.steps, tmp, args.warmup)
                        point["pgbench_rows"] = rate
                        if rate.get("commits_per_s"):
                            point["x_pgbench_rows"] = round(
                                point["steps_per_s"] / rate["commits_per_s"], 3
                            )
                        report["wfctl"].append(point)
                        print(
                            f"{w} worker(s), {c} runs: {point['steps_per_s']} steps/s; pgbench "
                            f"rows floor {rate.get('commits_per_s')} commits/s at {c} clients;"
                            f" x{point.get('x_pgbench_rows')} (load {point['load_average']})",
                            file=sys.stderr,
                        )
                if not args.no_dbos:
                    try:
                        report["dbos"] += [bench_dbos(admin, c, args.steps) for c in points]
                    except Exception as exc:
                        report["dbos"].append(f"failed: {type(exc).__name__}: {exc}")
        if args.only in (None, "wake"):
            report["wake"] = bench_wake(
                admin, args.wake, tmp, tmp / "pg" / "log" if server is not None else None
            )
        if args.storm_kills and args.only in (None, "storm"):
            report["storm"] = bench_storm(
                admin, args.storm_runs, args.storm_kills, args.storm_workers, tmp
            )
    except BaseException:
        print(f"failed; worker logs kept in {tmp}", file=sys.stderr)
        if server is not None:
            server.cleanup()
        raise
    if server is not None:
        server.cleanup()
    shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
