"""Benchmark `wfctl doctor` on worlds made by gen_world.py.

In one run, for every database given with --db (e.g. a 100k-run and a 1M-run world):

- default `wfctl doctor` (live runs only): wall time of the CLI process, the report's own
  `duration_seconds` (the checks, without interpreter start-up), peak RSS of the process;
- `wfctl doctor --all`: the same figures, per-check seconds included;
- `SELECT count(*) FROM workflow.workflow_events`, twice, the warm run reported. PostgreSQL
  answers it from the smallest index (an index-only scan of the deduplicated run_id index,
  ~175 MB), not from the 5 GB heap; so the same count is also run as a forced heap
  sequential scan (index scans off), parallel as by default and in a single process: the
  heap scan is the physical reference for `--all`;
- the findings each mode reports, compared with the counts the generator planted.

Each doctor run is a subprocess (`python -m wfctl ...`); its peak RSS comes from `wait4`'s
rusage for that very child. Goals: default < 1 s and independent of history
size; `--all` within 2x of the sequential scan; peak RSS < 200 MB.

    python benchmarks/bench_doctor.py --db world_100000 --db world_1000000
    python benchmarks/bench_doctor.py --db world_1000000 --json /tmp/bench.json --stop
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_world  # noqa: E402

sys.path.insert(0, str(ROOT))
from wfctl.doctor.runner import DoctorOptions  # noqa: E402


@dataclass
class DoctorRun:
    mode: str
    wall_s: float
    report_s: float
    max_rss_mb: float
    exit_code: int
    counts: dict[str, int]
    in_flight: dict[str, int]
    statuses: dict[str, str]
    check_seconds: dict[str, float]


@dataclass
class DbFigures:
    dbname: str
    manifest: dict[str, Any]
    events: int
    events_size: str
    database_size: str
    default_runs: list[DoctorRun] = field(default_factory=list)
    all_runs: list[DoctorRun] = field(default_factory=list)
    count_cold_s: float = 0.0
    count_warm_s: float = 0.0
    count_plan: str = ""
    seqscan_warm_s: float = 0.0
    seqscan_serial_s: float = 0.0
    # The least a per-entity check can do: group the log by (run, entity) once, nothing else.
    group_floor_s: float = 0.0
    mismatches: list[str] = field(default_factory=list)
    aged: bool = True  # generated more than --min-age (10 min) ago

    def median(self, mode: str, attr: str) -> float:
        runs = self.default_runs if mode == "default" else self.all_runs
        return statistics.median(getattr(r, attr) for r in runs)

    def best(self, mode: str, attr: str) -> float:
        runs = self.default_runs if mode == "default" else self.all_runs
        return min(getattr(r, attr) for r in runs)

    def peak_rss(self) -> float:
        return max(r.max_rss_mb for r in self.default_runs + self.all_runs)


def run_doctor(dsn: str, mode: str, extra: list[str]) -> DoctorRun:
    """One `wfctl doctor` subprocess; wall time and that child's own peak RSS."""
    cmd = [sys.executable, "-m", "wfctl", "--dsn", dsn, "--format", "json"]
    cmd += ["--statement-timeout", "0", "doctor", *extra]
    env = {k: v for k, v in os.environ.items() if k not in ("PGOPTIONS",)}
    started = time.perf_counter()
    with tempfile.TemporaryFile() as errfile:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errfile, env=env, cwd=ROOT)
        assert proc.stdout is not None
        out = proc.stdout.read()
        proc.stdout.close()
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        errfile.seek(0)
        err = errfile.read().decode(errors="replace")
    try:
        report = json.loads(out)
    except json.JSONDecodeError:
        raise SystemExit(f"doctor printed no JSON (exit {proc.returncode}): {err}") from None
    checks = report["checks"]
    return DoctorRun(
        mode=mode,
        wall_s=wall,
        report_s=report["duration_seconds"],
        max_rss_mb=usage.ru_maxrss / 1024,  # Linux: kilobytes
        exit_code=proc.returncode,
        counts={c["code"]: c["count"] for c in checks},
        in_flight={c["code"]: c["in_flight"] for c in checks},
        statuses={c["code"]: c["status"] for c in checks},
        check_seconds={c["code"]: c["seconds"] for c in checks},
    )


def scan_node(conn: psycopg.Connection[Any], query: str) -> str:
    """The scan node of a query's plan, e.g. `Parallel Index Only Scan using ...`."""
    for (line,) in conn.execute(f"EXPLAIN {query}").fetchall():
        text = str(line).strip().removeprefix("->").strip()
        if " Scan" in text:
            return text.split("  (")[0]
    return "?"


def timed(conn: psycopg.Connection[Any], query: str) -> float:
    started = time.perf_counter()
    conn.execute(query).fetchall()
    return time.perf_counter() - started


def compare(fig: DbFigures, run: DoctorRun) -> None:
    """The counts a mode reports against what the generator planted."""
    expected = fig.manifest.get("expected", {})
    want = dict(expected.get(run.mode, {}))
    want_in_flight = dict(expected.get("in_flight", {}))
    if fig.aged:  # the planted in-flight rows are older than --min-age by now: actionable
        for code, n in want_in_flight.items():
            want[code] = want.get(code, 0) + n
        want_in_flight = {}
    for code, status in run.statuses.items():
        if status in ("not_applicable", "unknown"):
            if status == "unknown":
                fig.mismatches.append(f"{run.mode}: {code} unknown")
            continue
        got, exp = run.counts[code], want.get(code, 0)
        if got != exp:
            fig.mismatches.append(f"{run.mode}: {code} reported {got}, planted {exp}")
        got_f, exp_f = run.in_flight[code], want_in_flight.get(code, 0)
        if got_f != exp_f:
            fig.mismatches.append(f"{run.mode}: {code} in flight {got_f}, planted {exp_f}")


def bench_db(
    admin: str, dbname: str, repeat: int, all_repeat: int, doctor: bool = True
) -> DbFigures:
    dsn = gen_world.db_dsn(admin, dbname)
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT shobj_description(oid, 'pg_database') FROM pg_database"
            " WHERE datname = current_database()"
        ).fetchone()
        manifest = json.loads(row[0]) if row and row[0] else {}
        sizes = conn.execute(
            "SELECT c.reltuples::bigint, pg_size_pretty(pg_table_size(c.oid)),"
            " pg_size_pretty(pg_database_size(current_database()))"
            " FROM pg_class c WHERE c.oid = 'workflow.workflow_events'::regclass"
        ).fetchone()
        assert sizes is not None
        fig = DbFigures(dbname, manifest, int(sizes[0]), str(sizes[1]), str(sizes[2]))
        if manifest.get("generated_at"):
            age = conn.execute(
                "SELECT localtimestamp - %s::timestamp", (manifest["generated_at"],)
            ).fetchone()
            fig.aged = bool(age and age[0] > timedelta(minutes=9))
        print(f"\n== {dbname}: {manifest.get('runs', '?'):,} runs, {fig.events:,} events "
              f"({fig.events_size} heap), database {fig.database_size}", flush=True)  # fmt: skip
        # the bare count, run twice: the first warms the cache
        count = "SELECT count(*) FROM workflow.workflow_events"
        fig.count_plan = scan_node(conn, count)
        fig.count_cold_s = timed(conn, count)
        fig.count_warm_s = timed(conn, count)
        # the same count forced to read the heap: the sequential-scan reference
        conn.execute("SET enable_indexonlyscan = off")
        conn.execute("SET enable_indexscan = off")
        conn.execute("SET enable_bitmapscan = off")
        timed(conn, count)
        fig.seqscan_warm_s = timed(conn, count)
        conn.execute("SET max_parallel_workers_per_gather = 0")
        fig.seqscan_serial_s = timed(conn, count)
        conn.execute("RESET ALL")
        # The grouping floor: every event's (run, entity) key hashed once, at the doctor's
        # work_mem, parallel allowed. WF141 (a second terminal event, hook_received after
        # hook_disposed) cannot be decided with less; the doctor's --all does this and more.
        conn.execute("SELECT set_config('work_mem', %s, false)", (DoctorOptions().work_mem,))
        group = ("SELECT count(*) FROM (SELECT run_id, correlation_id, count(*)"
                 " FROM workflow.workflow_events GROUP BY 1, 2) g")  # fmt: skip
        fig.group_floor_s = min(timed(conn, group) for _ in range(2))
        conn.execute("RESET ALL")
    print(f"   count(*): first {fig.count_cold_s:.2f} s, warm {fig.count_warm_s:.2f} s "
          f"({fig.count_plan}); heap seq scan warm {fig.seqscan_warm_s:.2f} s, "
          f"single process {fig.seqscan_serial_s:.2f} s; grouping floor "
          f"{fig.group_floor_s:.2f} s", flush=True)  # fmt: skip
    if not doctor:
        return fig
    run_doctor(dsn, "default", [])  # warm-up (interpreter, page cache)
    for _ in range(repeat):
        r = run_doctor(dsn, "default", [])
        fig.default_runs.append(r)
        print(f"   doctor: wall {r.wall_s:.3f} s, checks {r.report_s:.3f} s, "
              f"rss {r.max_rss_mb:.0f} MB, exit {r.exit_code}", flush=True)  # fmt: skip
    compare(fig, fig.default_runs[-1])
    for i in range(all_repeat + 1):
        r = run_doctor(dsn, "all", ["--all"])
        label = "first" if i == 0 else "warm"
        print(f"   doctor --all ({label}): wall {r.wall_s:.2f} s, checks {r.report_s:.2f} s, "
              f"rss {r.max_rss_mb:.0f} MB, exit {r.exit_code}", flush=True)  # fmt: skip
        if i > 0 or all_repeat == 0:
            fig.all_runs.append(r)
    compare(fig, fig.all_runs[-1])
    return fig


@dataclass(frozen=True)
class Variant:
    """One way of running the history checks' SQL: which SQL text, cursor or not, work_mem."""

    label: str
    cursor: bool = True
    work_mem: str | None = None
    sql_rev: str | None = None  # a git revision's sql/ instead of the working tree's


WHAT_IF = [
    Variant("as doctor runs it (plain query, work_mem 64MB)", cursor=False, work_mem="64MB"),
    Variant("the former runner (named cursor, work_mem 4MB)"),
    Variant("plain query, work_mem 256MB", cursor=False, work_mem="256MB"),
]


def load_sql(name: str, rev: str | None) -> str:
    from wfctl import sql as wfctl_sql

    if rev is None:
        return wfctl_sql.load(name)
    return subprocess.run(
        ["git", "show", f"{rev}:sql/{name}.sql"], check=True, capture_output=True, text=True,
        cwd=ROOT,
    ).stdout  # fmt: skip


def what_if(admin: str, dbname: str, variants: list[Variant]) -> dict[str, dict[str, float]]:
    """The history checks' SQL (--all scope) run in-process, the way the runner does it
    (a plain query streamed, work_mem 64MB) or otherwise, one variant after the other.

    For deciding whether the runner should raise work_mem or stream a plain query (psycopg
    `cursor.stream()`, which PostgreSQL may plan in parallel) instead of a server-side
    cursor (never parallel), and for comparing the SQL with an older revision's.
    """
    from wfctl.doctor import registry
    from wfctl.doctor.base import Needs
    from wfctl.doctor.runner import DoctorOptions, sql_era
    from wfctl.world import model

    params = DoctorOptions(all_runs=True).params()
    results: dict[str, dict[str, float]] = {}
    with psycopg.connect(gen_world.db_dsn(admin, dbname)) as conn:
        era = sql_era(model.inspect(conn, with_drift=False))
        conn.rollback()
        checks = [
            c for c in registry.CHECKS
            if Needs.QUEUE not in c.needs and (era == "slot" or Needs.SLOTS not in c.needs)
            and c.code != "WF151"
        ]  # fmt: skip
        for variant in variants:
            per_check: dict[str, float] = {}
            for check in checks:
                query = load_sql(check.sql_name(era), variant.sql_rev)
                with conn.transaction():
                    conn.execute("SET TRANSACTION READ ONLY")
                    if variant.work_mem:
                        conn.execute(f"SET LOCAL work_mem = '{variant.work_mem}'")
                    started = time.perf_counter()
                    if variant.cursor:
                        with conn.cursor(name="what_if") as cur:
                            cur.itersize = 2000
                            cur.execute(query, params)
                            for _ in cur:
                                pass
                    else:
                        with conn.cursor() as cur:
                            for _ in cur.stream(query, params):
                                pass
                    per_check[check.code] = time.perf_counter() - started
            results[variant.label] = per_check
            print(f"   {dbname} [{variant.label}]: {sum(per_check.values()):.1f} s "
                  + ", ".join(f"{c} {t:.1f}" for c, t in per_check.items() if t >= 0.5),
                  flush=True)  # fmt: skip
    return results


def machine(admin: str) -> dict[str, Any]:
    with psycopg.connect(admin, autocommit=True) as conn:
        settings = dict(
            conn.execute(
                "SELECT name, setting || coalesce(unit, '') FROM pg_settings WHERE name IN"
                " ('fsync', 'shared_buffers', 'work_mem', 'jit', 'max_parallel_workers_per_gather',"
                " 'random_page_cost', 'effective_cache_size', 'wal_level', 'synchronous_commit')"
            ).fetchall()
        )
        version = conn.execute("SHOW server_version").fetchone()
    mem_kb = 0
    with open("/proc/meminfo", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    cpu = ""
    with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
        for line in fh:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "mem_gib": round(mem_kb / 1024 / 1024, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "postgres": version[0] if version else "?",
        "settings": settings,
        "loadavg_before": os.getloadavg(),
    }


STARTUP = {
    "python -c pass": ["-c", "pass"],
    "python -m wfctl --version": ["-m", "wfctl", "--version"],
    "import alembic + sqlalchemy": ["-c", "import alembic.command, alembic.config, sqlalchemy"],
}


def python_startup(repeat: int = 7) -> dict[str, float]:
    """Median wall time of interpreter start-up, of wfctl's imports, and of alembic's."""
    medians = {}
    for label, args in STARTUP.items():
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            subprocess.run([sys.executable, *args], check=True, capture_output=True, cwd=ROOT)
            times.append(time.perf_counter() - started)
        medians[label] = statistics.median(times)
    return medians


def print_table(figs: list[DbFigures], startup: dict[str, float]) -> None:
    print(
        "\n| world | events | default: wall (median) | default: checks | --all: wall "
        "| --all: checks | count(*) warm | heap seq scan warm (1 process) "
        "| --all / seq scan | grouping floor | --all / floor | peak RSS |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for f in figs:
        if not f.default_runs or not f.all_runs:
            continue
        all_s = f.median("all", "report_s")
        ratio = all_s / f.seqscan_warm_s if f.seqscan_warm_s else 0.0
        floor_ratio = all_s / f.group_floor_s if f.group_floor_s else 0.0
        print(
            f"| {f.dbname} | {f.events:,} | {f.median('default', 'wall_s'):.3f} s "
            f"| {f.median('default', 'report_s'):.3f} s | {f.median('all', 'wall_s'):.2f} s "
            f"| {all_s:.2f} s | {f.count_warm_s:.2f} s "
            f"| {f.seqscan_warm_s:.2f} s ({f.seqscan_serial_s:.2f} s) | {ratio:.0f}x "
            f"| {f.group_floor_s:.2f} s | {floor_ratio:.1f}x | {f.peak_rss():.0f} MB |"
        )
    print("\nstart-up (median wall): " + ", ".join(f"{k} {v:.3f} s" for k, v in startup.items()))
    for f in figs:
        if f.all_runs:
            slow = sorted(f.all_runs[-1].check_seconds.items(), key=lambda kv: -kv[1])[:6]
            print(f"{f.dbname} --all slowest checks: "
                  + ", ".join(f"{c} {s:.2f} s" for c, s in slow))  # fmt: skip
        if f.default_runs:
            print(f"{f.dbname} findings vs planted: "
                  + ("all match" if not f.mismatches else "; ".join(f.mismatches)))  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", action="append", required=True, help="a generated world (repeatable)")
    p.add_argument("--pgdata", type=Path, default=gen_world.DEFAULT_PGDATA)
    p.add_argument("--dsn", help="admin DSN of an existing server instead of --pgdata")
    p.add_argument("--repeat", type=int, default=7, help="default-mode runs per world")
    p.add_argument("--all-repeat", type=int, default=2, help="warm --all runs per world")
    p.add_argument("--json", type=Path, help="write every figure here")
    p.add_argument("--what-if", action="store_true",
                   help="also time the history checks under other runner settings")  # fmt: skip
    p.add_argument("--baseline-rev", metavar="REV",
                   help="also time the history checks' SQL as of git revision REV (cursor, "
                        "as the doctor runs it) against the working tree's")  # fmt: skip
    p.add_argument("--skip-doctor", action="store_true",
                   help="only the count(*) reference and the in-process variants")  # fmt: skip
    p.add_argument("--stop", action="store_true", help="stop the embedded server at the end")
    args = p.parse_args(argv)
    admin = args.dsn or gen_world.start_server(args.pgdata)
    info = machine(admin)
    print(json.dumps(info, indent=1))
    startup = python_startup()
    figs = [
        bench_db(admin, db, args.repeat, args.all_repeat, not args.skip_doctor) for db in args.db
    ]
    variants: dict[str, dict[str, dict[str, float]]] = {}
    chosen = list(WHAT_IF) if args.what_if else []
    if args.baseline_rev:
        chosen += [
            Variant(
                f"SQL of {args.baseline_rev} (cursor, work_mem 4MB)", sql_rev=args.baseline_rev
            ),
            Variant("SQL of the working tree (cursor, work_mem 4MB)"),
        ]
    if chosen:
        for db in args.db if args.baseline_rev else args.db[-1:]:
            variants[db] = what_if(admin, db, chosen)
    info["loadavg_after"] = os.getloadavg()
    print_table(figs, startup)
    print(f"load average before {info['loadavg_before']}, after {info['loadavg_after']}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "machine": info,
                    "startup_s": startup,
                    "worlds": [asdict(f) for f in figs],
                    "what_if": variants,
                },
                indent=1,
            )
        )
    if args.stop and not args.dsn:
        gen_world.stop_server(args.pgdata)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
