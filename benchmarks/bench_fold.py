"""A/B of the folded step statement (sql/runtime/commit_step.sql) in one process.

    python benchmarks/bench_fold.py [--dsn ADMIN_DSN] [--blocks 8] [--steps 400] [--threads 16]
        [--only sequential|concurrent|tx] [--no-sync]

The same tree, the same server and the same moment for both forms: blocks alternate between
the folded form (guard + commit_step: two statements per sequential step) and the separate
statements it replaces (guard, complete_step, insert_step, events INSERT: four; the store's
`_FOLDS` emptied), so the machine's other load falls on both alike. Each block drives, in
each era (beta.29-shape and slot-era worlds):
- `sequential`: one run of STEPS trivial steps on one connection; per step: wall time,
  client CPU (this process) and the backend's CPU (/proc, local servers only);
- `concurrent`: THREADS runs of STEPS steps at once, one thread and connection each (what a
  worker's slots do, without the queue): steps/s, and client + backends' CPU per step;
- `tx`: STEPS step transactions sent through the store alone (no engine, no workflow), so the
  client CPU is the store's and the wire's only;
`--no-sync` sets synchronous_commit=off on those sessions (no commit waits for the disk: the
CPU figures are then the statements' own, a diagnostic). Also counts the runtime's
statements per step (executions of its prepared statements,
pg_prepared_statements of each session). Prints a JSON report: per form, the blocks' figures
and min / median / max.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
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

from bench_runtime import (  # noqa: E402
    SESSION_OPTIONS,
    backend_cpu_ms,
    make_world,
    many_steps,
    wf,
)

from wfctl.runtime import store as store_module  # noqa: E402
from wfctl.runtime.executor import Executor, create  # noqa: E402
from wfctl.runtime.store import Store  # noqa: E402

FOLDS = dict(store_module._FOLDS)


def statements(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute(
        "SELECT coalesce(sum(generic_plans + custom_plans), 0) FROM pg_prepared_statements"
        " WHERE name LIKE 'wfctl\\_%'"
    ).fetchone()
    assert row is not None
    return int(row[0])


def drive(dsn: str, steps: int, out: dict[str, float], start: threading.Barrier) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        store = Store(conn)
        run_id = create(many_steps, [steps], conn=conn).run_id
        ex = Executor(wf, store)
        try:
            ex.drive(create(many_steps, [2], conn=conn).run_id)  # prepares the statements
            start.wait()
            sent0, server0 = statements(conn), backend_cpu_ms(conn)
            t0 = time.perf_counter()
            assert ex.drive(run_id).status == "completed"
            out["wall_s"] = time.perf_counter() - t0
            server1 = backend_cpu_ms(conn)
            out["server_ms"] = (server1 or 0.0) - (server0 or 0.0)
            out["statements"] = statements(conn) - sent0
        finally:
            ex.close()


def transactions(dsn: str, steps: int) -> dict[str, float]:
    """STEPS step transactions of one run sent through the store alone (no engine, no
    workflow): each completes the previous step and starts the next, as a sequential step's
    transaction does. Client CPU here is the store's and the wire's only."""
    from wfctl.runtime import serde

    with psycopg.connect(dsn, autocommit=True) as conn:
        store = Store(conn)
        run_id = create(many_steps, [1], conn=conn).run_id
        tx = store.tx(run_id, store.read_events(run_id)[-1].id)
        tx.run_started()
        step = f"step_{run_id[5:]}_"  # step ids are unique across runs
        tx.start_new_step(f"{step}0", "trivial", serde.dumps([0]))
        floor = tx.commit()[-1].id
        result, args = serde.dumps(0), serde.dumps([1])
        sent0, server0 = statements(conn), backend_cpu_ms(conn)
        cpu0, t0 = time.process_time(), time.perf_counter()
        for i in range(1, steps + 1):
            tx = store.tx(run_id, floor)
            tx.complete_step(f"{step}{i - 1}", "trivial", result)
            tx.start_new_step(f"{step}{i}", "trivial", args)
            floor = tx.commit()[-1].id
        cpu1, t1 = time.process_time(), time.perf_counter()
        server1 = backend_cpu_ms(conn)
        return {
            "steps_per_s": round(steps / (t1 - t0), 1),
            "step_ms": round(1000 * (t1 - t0) / steps, 4),
            "client_cpu_ms_per_step": round(1000 * (cpu1 - cpu0) / steps, 4),
            "server_cpu_ms_per_step": round(((server1 or 0.0) - (server0 or 0.0)) / steps, 4),
            "statements_per_step": round((statements(conn) - sent0) / steps, 3),
        }


def block(dsn: str, steps: int, threads: int) -> dict[str, float]:
    if threads == 0:
        return transactions(dsn, steps)
    outs: list[dict[str, float]] = [{} for _ in range(threads)]
    start = threading.Barrier(threads + 1)
    workers = [threading.Thread(target=drive, args=(dsn, steps, out, start)) for out in outs]
    for w in workers:
        w.start()
    start.wait()
    cpu0, t0 = time.process_time(), time.perf_counter()
    for w in workers:
        w.join()
    cpu1, t1 = time.process_time(), time.perf_counter()
    n = steps * threads
    assert all("wall_s" in o for o in outs), "a run failed"
    return {
        "steps_per_s": round(n / (t1 - t0), 1),
        "step_ms": round(1000 * (t1 - t0) / steps, 4) if threads == 1 else 0.0,
        # client CPU includes the threads' set-up (a warm-up run each): an upper bound
        "client_cpu_ms_per_step": round(1000 * (cpu1 - cpu0) / n, 4),
        "server_cpu_ms_per_step": round(sum(o["server_ms"] for o in outs) / n, 4),
        "statements_per_step": round(sum(o["statements"] for o in outs) / n, 3),
    }


def spread(values: list[float]) -> str:
    """min / median / max"""
    return f"{min(values)} / {round(statistics.median(values), 4)} / {max(values)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", help="admin DSN of an existing server (default: pgserver)")
    parser.add_argument("--blocks", type=int, default=8, help="blocks per form (alternating)")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--only", choices=["sequential", "concurrent", "tx"])
    parser.add_argument(
        "--no-sync",
        action="store_true",
        help="synchronous_commit=off on the runtime's sessions: no commit waits for the disk, "
        "so the CPU figures are the statements' own (a diagnostic)",
    )
    args = parser.parse_args()
    if args.no_sync:
        SESSION_OPTIONS["options"] = "-c synchronous_commit=off"
    shapes = [("sequential", 1), ("concurrent", args.threads), ("tx", 0)]
    shapes = [s for s in shapes if args.only in (None, s[0])]
    server = None
    tmp = None
    if args.dsn:
        admin = args.dsn
    else:
        import pgserver

        tmp = tempfile.mkdtemp(prefix="wfctl-bench-fold-")
        server = pgserver.get_server(tmp, cleanup_mode="stop")
        admin = str(server.get_uri())
    try:
        worlds = {era: make_world(admin, era) for era in ("beta29", "slot")}
        figures: dict[str, list[dict[str, Any]]] = {}
        for b in range(2 * args.blocks):
            form = ("folded", "separate")[(b + b // 2) % 2]  # f s s f f s s f ...
            store_module._FOLDS = FOLDS if form == "folded" else {}
            for era, dsn in worlds.items():
                for shape, threads in shapes:
                    fig = block(dsn, args.steps, threads)
                    fig["load_average"] = round(os.getloadavg()[0], 2)
                    figures.setdefault(f"{era} {shape} {form}", []).append(fig)
        report: dict[str, Any] = {
            "steps": args.steps,
            "synchronous_commit_off": args.no_sync,
            "threads": args.threads,
            "blocks (min / median / max)": {},
        }
        for key, figs in figures.items():
            report["blocks (min / median / max)"][key] = {
                name: spread([f[name] for f in figs])
                for name in figs[0]
                if not (name == "step_ms" and "concurrent" in key)
            }
        report["figures"] = figures
        print(json.dumps(report, indent=2))
    finally:
        store_module._FOLDS = FOLDS
        if server is not None:
            server.cleanup()
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
