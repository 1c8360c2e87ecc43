"""The package-rows floor: the rows one durable step must write, sent by a C client.

A sequential step of a run, in the world's own format, writes in ONE transaction: the
completed step's row update (status, output, timestamps), the next step's row (created and
started), and three events (step_completed, step_created, step_started) with the package's
CBOR payloads. That is what a step costs the server whoever writes it; a runtime can only
add to it (the run row guard, its own client work). This module sends exactly those rows
with `pgbench` (the C client of PostgreSQL: a custom script of prepared statements in one
pipeline, i.e. one round trip and one implicit transaction per step, like the runtime's), or,
when no pgbench is installed, with the same statements through psycopg's pipeline of prepared
statements (libpq underneath, no wfctl code).

Both eras: a beta.29-shaped world (events keyed by `id`, `wevt_` ids) and a slot-era world
(events keyed by `(run_id, id)`, `evnt_` slot ids, each client's run marked). Each client
writes its own run; ids sort before every id wfctl mints (`wevt_00...`), and the floor uses
worlds of its own, so neither side's statements read the other's rows.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg

from wfctl.world import codec

PGBENCH = shutil.which("pgbench") or (
    "/usr/bin/pgbench" if Path("/usr/bin/pgbench").exists() else None
)
STEP_NAME = "step//py:bench//trivial"

# The payloads wfctl (and the package) write for a trivial step: devalue bodies of `[i]` in,
# `i` out, inside the events' CBOR maps and the step row's CBOR columns.
_INPUT = b"devl[[1],0]"
_OUTPUT = b"devl[0]"
PAYLOADS = {
    "p_completed": codec.encode({"stepName": STEP_NAME, "result": _OUTPUT}),
    "p_created": codec.encode({"stepName": STEP_NAME, "input": _INPUT}),
    "p_started": codec.encode({"stepName": STEP_NAME, "attempt": 1}),
    "in_cbor": codec.encode(_INPUT),
    "out_cbor": codec.encode(_OUTPUT),
}

# One step's rows. `prev`/`n` number the client's steps; ids are built in the server from
# the client's tag so that each client writes its own run.
_STEP_ID = "'step_' || :tag::text || lpad(:client_id::text, 4, '0') || lpad(:{n}::text, 12, '0')"
_UPDATE = (
    "UPDATE workflow.workflow_steps SET status = 'completed', output_cbor = :out_cbor::bytea,"
    " completed_at = now() AT TIME ZONE 'UTC', updated_at = now() AT TIME ZONE 'UTC'"
    f" WHERE step_id = {_STEP_ID.format(n='prev')};"
)
_INSERT_STEP = (
    "INSERT INTO workflow.workflow_steps (run_id, step_id, step_name, status, attempt,"
    " started_at, input_cbor, spec_version) VALUES ("
    "'wrun_' || :tag::text || lpad(:client_id::text, 4, '0'),"
    f" {_STEP_ID.format(n='n')}, :step_name::text, 'running', 1, now() AT TIME ZONE 'UTC',"
    " :in_cbor::bytea, 5);"
)


def _event_id(era: str, k: int) -> str:
    if era == "slot":  # the run's next three slots
        return f"'evnt_' || lpad((:n::bigint * 3 + {k})::text, 26, '0')"
    # wevt_ ids in step order across clients (like ULIDs minted by one clock), sorting
    # before any real ULID (`0` then `0`)
    return (
        "'wevt_00' || :tag::text || lpad(:n::text, 10, '0')"
        f" || lpad(:client_id::text, 4, '0') || '{k}'"
    )


def _insert_events(era: str) -> str:
    run = "'wrun_' || :tag::text || lpad(:client_id::text, 4, '0')"
    step = _STEP_ID
    rows = [
        f"({_event_id(era, 0)}, 'step_completed', {step.format(n='prev')}, {run},"
        " :p_completed::bytea, 5)",
        f"({_event_id(era, 1)}, 'step_created', {step.format(n='n')}, {run}, :p_created::bytea, 5)",
        f"({_event_id(era, 2)}, 'step_started', {step.format(n='n')}, {run}, :p_started::bytea, 5)",
    ]
    return (
        "INSERT INTO workflow.workflow_events (id, type, correlation_id, run_id, payload_cbor,"
        " spec_version) VALUES " + ", ".join(rows) + ";"
    )


def script(era: str) -> str:
    """The pgbench script of one step (one pipeline: one round trip, one implicit
    transaction committed by the pipeline's Sync, as the runtime sends a step)."""
    return "\n".join(
        [
            "\\set prev :n",
            "\\set n :n + 1",
            "\\startpipeline",
            _UPDATE,
            _INSERT_STEP,
            _insert_events(era),
            "\\endpipeline",
            "",
        ]
    )


def make_world(admin: str, era: str, name: str) -> str:
    from wfctl.world.bootstrap import bootstrap

    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        c.execute(f'CREATE DATABASE "{name}"')
    dsn = psycopg.conninfo.make_conninfo(admin, dbname=name)
    with psycopg.connect(dsn, autocommit=True) as c:
        bootstrap(c, era)
    return dsn


_TAGS = iter(range(1, 10**6))


def _prepare_runs(dsn: str, era: str, tag: str, clients: int) -> None:
    """Each client's run row (and slot marker): the rows a run has before its steps."""
    with psycopg.connect(dsn, autocommit=True) as c:
        for client in range(clients):
            run_id = f"wrun_{tag}{client:04d}"
            c.execute(
                "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name,"
                " spec_version, started_at) VALUES (%s, 'bench', 'running', 'bench', '5',"
                " now() AT TIME ZONE 'UTC')",
                (run_id,),
            )
            if era == "slot":
                c.execute(
                    "INSERT INTO workflow.workflow_event_slots (run_id) VALUES (%s)", (run_id,)
                )


def _variables(tag: str) -> list[str]:
    out = ["-D", f"tag={tag}", "-D", "n=0", "-D", f"step_name={STEP_NAME}"]
    for key, value in PAYLOADS.items():
        out += ["-D", f"{key}=\\x{value.hex()}"]
    return out


def _libpq_dsn(dsn: str) -> str:
    parts = psycopg.conninfo.conninfo_to_dict(dsn)
    return psycopg.conninfo.make_conninfo("", **{k: v for k, v in parts.items() if v is not None})


def pgbench(dsn: str, era: str, *, clients: int, transactions: int) -> dict[str, Any]:
    """pgbench at `clients` clients, `transactions` steps each: per-step latency (median,
    p90; from pgbench's own per-transaction log) and the commit rate (tps)."""
    assert PGBENCH is not None
    tag = f"{next(_TAGS):06d}"
    _prepare_runs(dsn, era, tag, clients)
    tmp = Path(tempfile.mkdtemp(prefix="wfctl-floor-"))
    try:
        (tmp / "step.sql").write_text(script(era))
        cmd = [
            PGBENCH, "-n", "-M", "prepared", "-c", str(clients), "-j", str(min(clients, 2)),
            "-t", str(transactions), "-f", str(tmp / "step.sql"), "-l",
            "--log-prefix", str(tmp / "log"), *_variables(tag), _libpq_dsn(dsn),
        ]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
        if done.returncode != 0:
            raise RuntimeError(f"pgbench failed: {done.stderr.strip() or done.stdout.strip()}")
        tps = None
        for line in done.stdout.splitlines():
            if line.startswith("tps ="):
                tps = float(line.split()[2])
        lat: list[float] = []
        for log in tmp.glob("log*"):
            for line in log.read_text().splitlines():
                lat.append(int(line.split()[2]) / 1000)
        failed = [line for line in done.stdout.splitlines() if "failed transactions" in line]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _check_rows(dsn, era, tag, clients, transactions)
    lat.sort()
    return {
        "client": "pgbench",
        "clients": clients,
        "median_ms": round(statistics.median(lat), 3),
        "p90_ms": round(lat[int(0.9 * len(lat))], 3),
        "commits_per_s": tps,
        "failed": failed[0].strip() if failed else None,
    }


def _check_rows(dsn: str, era: str, tag: str, clients: int, transactions: int) -> None:
    """Every step wrote its rows: the floor must not be cheap by writing less."""
    with psycopg.connect(dsn, autocommit=True) as c:
        row = c.execute(
            "SELECT count(*), count(*) FILTER (WHERE status = 'completed')"
            " FROM workflow.workflow_steps WHERE run_id LIKE %s",
            (f"wrun_{tag}%",),
        ).fetchone()
        events = c.execute(
            "SELECT count(*) FROM workflow.workflow_events WHERE run_id LIKE %s",
            (f"wrun_{tag}%",),
        ).fetchone()
    assert row is not None and events is not None
    expected = clients * transactions
    if (row[0], row[1], events[0]) != (expected, expected - clients, 3 * expected):
        raise RuntimeError(f"floor wrote {row} steps / {events[0]} events, expected {expected}")


def psycopg_floor(dsn: str, era: str, *, transactions: int) -> dict[str, Any]:
    """The same statements, one client, through psycopg's pipeline of prepared statements
    (no pgbench on this machine)."""
    tag = f"{next(_TAGS):06d}"
    _prepare_runs(dsn, era, tag, 1)
    statements = []
    for text in (_UPDATE, _INSERT_STEP, _insert_events(era)):
        for name in ("out_cbor", "in_cbor", "p_completed", "p_created", "p_started"):
            text = text.replace(f":{name}::bytea", f"%({name})s::bytea")
        for name in ("tag", "client_id", "prev", "n", "step_name"):
            text = text.replace(f":{name}::", f"%({name})s::").replace(f":{name})", f"%({name})s)")
        statements.append(text.rstrip(";"))
    values: dict[str, Any] = {"tag": tag, "client_id": 0, "step_name": STEP_NAME, **PAYLOADS}
    lat = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        for n in range(1, transactions + 1):
            values["prev"], values["n"] = n - 1, n
            t0 = time.perf_counter()
            with conn.pipeline(), conn.transaction():
                for text in statements:
                    conn.execute(text, values, prepare=True)
            lat.append((time.perf_counter() - t0) * 1000)
    _check_rows(dsn, era, tag, 1, transactions)
    return {
        "client": "psycopg pipeline (prepared)",
        "clients": 1,
        "median_ms": round(statistics.median(lat), 3),
        "p90_ms": round(sorted(lat)[int(0.9 * len(lat))], 3),
    }


def sequential(dsn: str, era: str, transactions: int) -> dict[str, Any]:
    """The floor of one sequential step: one client."""
    if PGBENCH is not None:
        return pgbench(dsn, era, clients=1, transactions=transactions)
    return psycopg_floor(dsn, era, transactions=transactions)


def load() -> float:
    return round(os.getloadavg()[0], 2)
