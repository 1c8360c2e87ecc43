"""Build a large world for benchmarking `wfctl doctor`.

The schema comes from `wfctl.bootstrap.bootstrap(conn, era)` and, with `--queue`, the real
npm package's own bootstrap adds graphile_worker (its drizzle migrator finds 0000-0017
recorded and applies nothing). Then:

1. history, set-based: `INSERT ... SELECT ... generate_series` for runs, events and steps of
   terminal runs (90 % completed, 7 % failed, 3 % cancelled), with `wrun_`/`step_`/`wait_`
   ULID-like ids (Crockford base32 time part + 16 characters), `wevt_` ids whose time part
   grows with the run's clock (so they sort in log order), slot ids `evnt_0..0<n>` for
   marked runs of a slot-era world, and real CBOR payloads (cbor2) of realistic sizes;
2. the live runs and a sprinkling of every corruption family, built in Python with
   `wfctl.world.ids` and COPYed (a few thousand rows), plus their graphile jobs;
3. the schema's own indexes, dropped before the load and rebuilt from their captured
   definitions afterwards (identical catalog), then `VACUUM (ANALYZE)`.

The load runs in one transaction that first TRUNCATEs the tables: with `wal_level=minimal`
(set by `--tune`, the default for a server this script starts) PostgreSQL then skips WAL
for the new data and only fsyncs it at commit.

Usage (a throwaway embedded server under /tmp is started and left running for the bench):

    python benchmarks/gen_world.py --runs 1000000 --events-per-run 20 --live 1000
    python benchmarks/gen_world.py --runs 100000 --dbname world_100k
    python benchmarks/gen_world.py --era slot --dbname world_slot_1m
    python benchmarks/gen_world.py --stop            # stop the server when done

Expected findings per check (default scope and `--all`) are printed at the end and stored
as JSON in the database comment, where bench_doctor.py reads them back.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import cbor2
import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from wfctl import sql as wfctl_sql  # noqa: E402
from wfctl.world.bootstrap import bootstrap  # noqa: E402
from wfctl.world.ids import new_ulid, slot_event_id, wait_row_key  # noqa: E402

DEFAULT_PGDATA = Path("/tmp/wfctl-bench/pgdata")
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
WORLD_TABLES = (
    "workflow_runs",
    "workflow_events",
    "workflow_steps",
    "workflow_waits",
    "workflow_hooks",
    "workflow_stream_chunks",
)
TASK = "workflow_flows"
EVENT_GAP_MS = 250  # time between two events of one history run
HISTORY_DAYS = 90
# Server settings for a throwaway benchmark server. Memory and WAL only: the planner keeps
# its stock settings (work_mem 4MB, random_page_cost 4, jit on) so plans are the ones a
# default installation would choose.
TUNING = {
    "shared_buffers": "2GB",
    "maintenance_work_mem": "1GB",
    "max_wal_size": "16GB",
    "checkpoint_timeout": "30min",
    "wal_level": "minimal",
    "max_wal_senders": "0",
}
WORKFLOWS = [f"workflow//./src/workflows/{w}//{w}Flow" for w in (
    "order", "invoice", "signup", "refund", "shipment", "report", "sync", "digest",
)]  # fmt: skip
STEPS = [f"step//./src/steps/{s}//{s}" for s in (
    "charge", "reserve", "notify", "render", "upload", "fetch", "score", "persist",
    "email", "audit", "resize", "index",
)]  # fmt: skip


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


# --- the server -----------------------------------------------------------------------------


def start_server(pgdata: Path) -> str:
    """Start (or find) the embedded server in `pgdata`; it keeps running after we exit."""
    import pgserver  # the wheel the tests use; starts as the `pgserver` user under root

    pgdata.parent.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(str(pgdata), cleanup_mode=None)
    return str(server.get_uri())


def _pg_ctl(pgdata: Path, *args: str) -> None:
    from pgserver import _commands

    user = "pgserver" if os.geteuid() == 0 else None
    _commands.pg_ctl(list(args), pgdata=pgdata, user=user, timeout=600)


def stop_server(pgdata: Path) -> None:
    if (pgdata / "postmaster.pid").exists():
        _pg_ctl(pgdata, "-w", "-m", "fast", "stop")
        log(f"stopped the server in {pgdata}")


def tune_server(admin_dsn: str, pgdata: Path) -> None:
    """ALTER SYSTEM the TUNING settings; restart when one of them needs it."""
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        for name, value in TUNING.items():
            conn.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(name), value))
        conn.execute("SELECT pg_reload_conf()")
        time.sleep(0.5)
        pending = conn.execute("SELECT count(*) FROM pg_settings WHERE pending_restart").fetchone()
    if pending and pending[0]:
        log("restarting the server for wal_level/shared_buffers")
        _pg_ctl(pgdata, "-w", "-m", "fast", "-l", str(pgdata / "log"), "restart")


def db_dsn(admin_dsn: str, dbname: str) -> str:
    return psycopg.conninfo.make_conninfo(admin_dsn, dbname=dbname)


# --- ids and payloads -----------------------------------------------------------------------


def ulid_time_sql(ms: str) -> str:
    """SQL text: the 10-character Crockford time part of a ULID for the bigint `ms`."""
    parts = [
        f"substr('{CROCKFORD}', (({ms} >> {shift}) & 31)::int + 1, 1)"
        for shift in range(45, -1, -5)
    ]
    return " || ".join(parts)


def devl(text: str) -> bytes:
    return b"devl" + text.encode()


def blob(rng: random.Random, size: int) -> bytes:
    """A runtime byte payload (`devl` + devalue-ish text) of about `size` bytes."""
    body = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789,:[]{}") for _ in range(size))
    return devl(body)


def tagged(data: bytes) -> cbor2.CBORTag:
    return cbor2.CBORTag(64, data)  # cbor-x writes a Uint8Array as tag 64


def event_payload(
    rng: random.Random, etype: str, step_name: str, wf: str, variant: int = 0
) -> bytes | None:
    """CBOR eventData of one event type (reference §3.2), sizes as the runtime writes them."""
    now_ms = 1_764_000_000_000 + rng.randrange(10**9)
    data: dict[str, Any] | None
    if etype == "run_created":
        data = {
            "deploymentId": "postgres",
            "workflowName": wf,
            "input": tagged(blob(rng, rng.randrange(40, 160))),
            "executionContext": {"traceCarrier": {}, "workflowCoreVersion": "5.0.0-beta.29"},
        }
    elif etype in ("run_started", "hook_disposed"):
        data = None
    elif etype == "run_completed":
        data = {"output": tagged(blob(rng, rng.randrange(20, 120)))}
    elif etype == "run_failed":
        data = {"error": tagged(blob(rng, rng.randrange(120, 300))), "errorCode": "USER_ERROR"}
    elif etype == "run_cancelled":
        data = {"cancelReason": "cancelled by operator"} if rng.random() < 0.5 else None
    elif etype == "step_created":
        data = {"stepName": step_name, "input": tagged(blob(rng, rng.randrange(20, 120)))}
    elif etype == "step_started":
        data = {"stepName": step_name, "attempt": 1}
    elif etype == "step_completed":
        data = {
            "stepName": step_name,
            "result": tagged(blob(rng, rng.randrange(20, 160))),
            "ttfs": rng.randrange(1, 900),
            "stepCount": rng.randrange(1, 9),
            "eventCount": rng.randrange(3, 30),
        }
    elif etype in ("step_failed", "step_retrying"):
        data = {"stepName": step_name, "error": tagged(blob(rng, rng.randrange(120, 300)))}
        if etype == "step_retrying":
            data["retryAfter"] = cbor2.CBORTag(1, now_ms / 1000)
    elif etype in ("wait_created", "wait_completed"):
        # one instant per variant whatever the type: a history wait's two events share a
        # variant, so wait_completed carries wait_created's resumeAt as core writes it
        data = {"resumeAt": cbor2.CBORTag(1, (1_764_000_000_000 + variant * 1000) / 1000)}
    elif etype == "attr_set":
        rng.randrange(999)  # the draw the generator always made (same worlds otherwise)
        data = {"changes": [{"key": "tenant", "value": "t1"}],  # the rows hold tenant=t1
                "writer": {"type": "workflow"}}  # fmt: skip
    elif etype == "hook_created":
        data = {"token": f"tok_{rng.randrange(10**12)}", "isWebhook": True}
    elif etype == "hook_received":
        data = {"payload": tagged(blob(rng, rng.randrange(20, 200)))}
    else:
        raise ValueError(etype)
    return None if data is None else cbor2.dumps(data)


PAYLOAD_TYPES = (
    "run_created", "run_completed", "run_failed", "run_cancelled", "step_created",
    "step_started", "step_completed", "step_failed", "wait_created", "wait_completed",
    "attr_set",
)  # fmt: skip
VARIANTS = 16


# --- history (set-based SQL) ----------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """The event layout of one history run with E events (E >= 3)."""

    events: int

    @property
    def middle(self) -> int:
        return self.events - 3  # all but run_created, run_started and the terminal event

    @property
    def waits(self) -> int:
        return 1 if self.middle >= 2 else 0

    @property
    def steps(self) -> int:
        return (self.middle - 2 * self.waits) // 3

    @property
    def attrs(self) -> int:
        return self.middle - 2 * self.waits - 3 * self.steps


def history_sql(shape: Shape) -> dict[str, str]:
    """The statements that load `n` history runs; parameters in %(name)s form."""
    s, w, e = shape.steps, shape.waits, shape.events
    last_step_k = 2 + 3 * s
    last_wait_k = last_step_k + 2 * w
    ev_ms = f"(h.t + k * {EVENT_GAP_MS})"
    corr_part = "h.cp || lpad(upper(to_hex({j})), 4, '0')"
    type_expr = f"""CASE
        WHEN k = 1 THEN 'run_created'
        WHEN k = 2 THEN 'run_started'
        WHEN k = {e} THEN 'run_' || h.status::text
        WHEN k <= {last_step_k} THEN CASE (k - 3) %% 3
            WHEN 0 THEN 'step_created' WHEN 1 THEN 'step_started'
            ELSE CASE WHEN h.status = 'failed' AND (k - 3) / 3 = {s - 1}
                      THEN 'step_failed' ELSE 'step_completed' END END
        WHEN k <= {last_wait_k} THEN
            CASE WHEN k = {last_step_k + 1} THEN 'wait_created' ELSE 'wait_completed' END
        ELSE 'attr_set' END"""
    corr_expr = f"""CASE
        WHEN k IN (1, 2, {e}) THEN NULL
        WHEN k <= {last_step_k} THEN 'step_' || {corr_part.format(j="(k - 3) / 3 + 1")}
        WHEN k <= {last_wait_k} THEN 'wait_' || {corr_part.format(j=s + 1)}
        ELSE 'attr_' || {corr_part.format(j=f"k - {last_wait_k} + {s + 1}")} END"""
    return {
        "hist": f"""
CREATE TEMP TABLE hist AS
SELECT i, t, r16,
       'wrun_' || {ulid_time_sql("t")} || r16 AS id,
       {ulid_time_sql("t")} || substr(r16, 1, 12) AS cp,
       CASE WHEN i %% 100 < 90 THEN 'completed' WHEN i %% 100 < 97 THEN 'failed'
            ELSE 'cancelled' END::workflow.status AS status,
       (%(slot_era)s AND i > %(legacy_runs)s) AS slot
FROM (SELECT i, %(t0)s::bigint + ((i - 1) * %(spacing)s)::bigint AS t,
             upper(substr(md5(%(seed)s::text || ':' || i), 1, 16)) AS r16
      FROM generate_series(1, %(n)s) i) g""",
        "runs": f"""
INSERT INTO workflow.workflow_runs
    (id, deployment_id, status, name, created_at, updated_at, completed_at, started_at,
     output_cbor, execution_context_cbor, input_cbor, spec_version, error_cbor, error_code,
     attributes)
SELECT h.id, 'postgres', h.status, (%(workflows)s::text[])[h.i %% %(n_workflows)s + 1],
       to_timestamp(h.t / 1000.0)::timestamp,
       to_timestamp((h.t + {e} * {EVENT_GAP_MS}) / 1000.0) AT TIME ZONE 'UTC',
       to_timestamp((h.t + {e} * {EVENT_GAP_MS}) / 1000.0) AT TIME ZONE 'UTC',
       to_timestamp((h.t + 2 * {EVENT_GAP_MS}) / 1000.0) AT TIME ZONE 'UTC',
       CASE WHEN h.status = 'completed' THEN (%(blobs)s::bytea[])[h.i %% {VARIANTS} + 1] END,
       %(context)s::bytea,
       (%(blobs)s::bytea[])[(h.i + 3) %% {VARIANTS} + 1],
       CASE WHEN h.slot THEN '7' ELSE '5' END,
       CASE WHEN h.status = 'failed' THEN (%(blobs)s::bytea[])[(h.i + 5) %% {VARIANTS} + 1] END,
       CASE WHEN h.status = 'failed' THEN 'USER_ERROR' END,
       CASE WHEN {shape.attrs} > 0 THEN '{{"tenant": "t1"}}'::jsonb ELSE '{{}}'::jsonb END
FROM hist h""",
        "events": f"""
INSERT INTO workflow.workflow_events
    (id, type, correlation_id, created_at, run_id, payload_cbor, spec_version)
SELECT x.id, x.type, x.corr, x.created_at, x.run_id, p.b, x.spec
FROM (
    SELECT CASE WHEN h.slot THEN 'evnt_' || lpad(k::text, 26, '0')
                ELSE 'wevt_' || {ulid_time_sql(ev_ms)} || substr(h.r16, 1, 12)
                     || lpad(upper(to_hex(k)), 4, '0') END AS id,
           {type_expr} AS type,
           {corr_expr} AS corr,
           to_timestamp({ev_ms} / 1000.0)::timestamp AS created_at,
           h.id AS run_id,
           CASE WHEN h.slot THEN 7 ELSE 5 END AS spec,
           (h.i + k) %% {VARIANTS} AS v,
           h.i %% {VARIANTS} AS wv
    FROM hist h CROSS JOIN generate_series(1, {e}) k
) x
LEFT JOIN pg_temp.payloads p
  ON p.type = x.type
 AND p.v = CASE WHEN x.type IN ('wait_created', 'wait_completed') THEN x.wv ELSE x.v END""",
        "steps": f"""
INSERT INTO workflow.workflow_steps
    (run_id, step_id, step_name, status, attempt, started_at, completed_at, created_at,
     updated_at, input_cbor, output_cbor, error_cbor, spec_version)
SELECT h.id, 'step_' || {corr_part.format(j="j")},
       (%(step_names)s::text[])[(h.i + j) %% %(n_steps)s + 1],
       CASE WHEN h.status = 'failed' AND j = {s} THEN 'failed' ELSE 'completed' END
           ::workflow.step_status,
       1,
       to_timestamp((h.t + (3 * j + 1) * {EVENT_GAP_MS}) / 1000.0) AT TIME ZONE 'UTC',
       to_timestamp((h.t + (3 * j + 2) * {EVENT_GAP_MS}) / 1000.0) AT TIME ZONE 'UTC',
       to_timestamp((h.t + 3 * j * {EVENT_GAP_MS}) / 1000.0)::timestamp,
       to_timestamp((h.t + (3 * j + 2) * {EVENT_GAP_MS}) / 1000.0) AT TIME ZONE 'UTC',
       (%(blobs)s::bytea[])[(h.i + j) %% {VARIANTS} + 1],
       CASE WHEN NOT (h.status = 'failed' AND j = {s})
            THEN (%(blobs)s::bytea[])[(h.i + j + 7) %% {VARIANTS} + 1] END,
       CASE WHEN h.status = 'failed' AND j = {s}
            THEN (%(blobs)s::bytea[])[(h.i + j + 9) %% {VARIANTS} + 1] END,
       CASE WHEN h.slot THEN 7 ELSE 5 END
FROM hist h CROSS JOIN generate_series(1, {s}) j""",
        "markers": """
INSERT INTO workflow.workflow_event_slots (run_id) SELECT id FROM hist WHERE slot""",
    }


# --- live runs and faults (Python, COPY) ----------------------------------------------------


@dataclass
class Job:
    run_id: str
    workflow: str
    body: dict[str, Any]
    key: str | None
    created_at: datetime
    run_at: datetime
    message_attempt: int = 1
    attempts: int = 0
    max_attempts: int = 3
    locked_at: datetime | None = None
    last_error: str | None = None

    def row(self, task_id: int) -> tuple[Any, ...]:
        message_id = f"msg_{new_ulid(self.created_at)}"
        payload: dict[str, Any] = {
            "attempt": self.message_attempt,
            "messageId": message_id,
            "id": self.workflow,
            "data": base64.b64encode(json.dumps(self.body).encode()).decode(),
        }
        key = self.key
        if key is None:
            key = message_id  # job_key = messageId when the message has no idempotency key
        else:
            payload["idempotencyKey"] = key
        return (
            task_id,
            json.dumps(payload),
            self.run_at,
            self.attempts,
            self.max_attempts,
            self.last_error,
            self.created_at,
            self.created_at if self.attempts == 0 else self.run_at,
            key,
            self.locked_at,
            "worker-bench" if self.locked_at else None,
        )


@dataclass
class Rows:
    """Rows of the Python-built runs, per table, plus jobs and the expected findings."""

    era: str
    now: datetime  # the server's localtimestamp (UTC server: also the JS clock)
    rng: random.Random
    max_attempts: int
    runs: list[tuple[Any, ...]] = field(default_factory=list)
    events: list[tuple[Any, ...]] = field(default_factory=list)
    steps: list[tuple[Any, ...]] = field(default_factory=list)
    waits: list[tuple[Any, ...]] = field(default_factory=list)
    hooks: list[tuple[Any, ...]] = field(default_factory=list)
    markers: list[tuple[Any, ...]] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)
    expect_live: Counter[str] = field(default_factory=Counter)
    expect_history: Counter[str] = field(default_factory=Counter)
    expect_in_flight: Counter[str] = field(default_factory=Counter)

    def expect(self, code: str, live: bool, n: int = 1) -> None:
        (self.expect_live if live else self.expect_history)[code] += n


class RunBuilder:
    """One run: its row, its events in log order, its entity rows."""

    def __init__(
        self,
        rows: Rows,
        created: datetime,
        status: str,
        *,
        slot: bool | None = None,
        marker: bool | None = None,
        spec: str | None = None,
    ) -> None:
        self.rows = rows
        self.created = created
        self.clock = created
        self.status = status
        self.slot = (rows.era == "slot") if slot is None else slot
        self.marker = self.slot if marker is None else marker
        self.spec = spec or ("7" if self.slot else "5")
        self.id = f"wrun_{new_ulid(created)}"
        self.workflow = rows.rng.choice(WORKFLOWS)
        self.n_events = 0
        self.completed_at: datetime | None = None

    def tick(self, ms: int = 300) -> datetime:
        self.clock += timedelta(milliseconds=ms)
        return self.clock

    def corr(self, prefix: str) -> str:
        return f"{prefix}_{new_ulid(self.created)}"

    def event(
        self, etype: str, corr: str | None = None, *, at: datetime | None = None,
        legacy_id: bool = False, data: dict[str, Any] | None = None,
    ) -> str:  # fmt: skip
        when = at or self.tick()
        self.clock = max(self.clock, when)
        if self.slot and not legacy_id:
            self.n_events += 1  # the slot counter: a wevt_ id takes no slot
            eid = slot_event_id(self.n_events)
        else:
            eid = f"wevt_{new_ulid(when)}"
        step_name = self.rows.rng.choice(STEPS)
        payload = event_payload(self.rows.rng, etype, step_name, self.workflow)
        if data is not None:  # what the runtime writes for this entity (a wait's resumeAt)
            payload = cbor2.dumps(data)
        spec = int(self.spec) if self.spec.isdigit() else None
        self.rows.events.append((eid, etype, corr, when, self.id, payload, spec))
        return eid

    def begin(self, *, run_created: bool = True) -> RunBuilder:
        if run_created:
            self.event("run_created", at=self.created)
        if self.status != "pending":
            self.event("run_started")
        return self

    def step(
        self, status: str = "completed", *, events: tuple[str, ...] | None = None,
        attempt: int = 1, at: datetime | None = None, retry_after: datetime | None = None,
    ) -> str:  # fmt: skip
        """A step row and, unless `events` says otherwise, the events its status implies."""
        sid = self.corr("step")
        implied = {
            "pending": ("step_created",),
            "running": ("step_created", "step_started"),
            "completed": ("step_created", "step_started", "step_completed"),
            "failed": ("step_created", "step_started", "step_failed"),
            "retrying": ("step_created", "step_started", "step_retrying"),
        }[status]
        created = at or self.tick()
        first = True
        for etype in implied if events is None else events:
            self.event(etype, sid, at=created if first else None)
            first = False
        row_status = "pending" if status == "retrying" else status
        done = self.clock if status in ("completed", "failed") else None
        rng = self.rows.rng
        self.rows.steps.append((
            self.id, sid, rng.choice(STEPS), row_status,
            0 if status == "pending" else attempt,
            None if status == "pending" else created, done, created,
            self.clock, retry_after,
            cbor2.dumps(tagged(blob(rng, 60))),
            cbor2.dumps(tagged(blob(rng, 80))) if status == "completed" else None,
            cbor2.dumps(tagged(blob(rng, 200))) if status in ("failed", "retrying") else None,
            int(self.spec),
        ))  # fmt: skip
        return sid

    def wait(
        self, status: str = "waiting", *, events: tuple[str, ...] | None = None,
        resume_in: timedelta = timedelta(hours=1), at: datetime | None = None,
    ) -> str:  # fmt: skip
        corr = self.corr("wait")
        implied = ("wait_created",) if status == "waiting" else ("wait_created", "wait_completed")
        created = at or self.tick()
        resume = created + resume_in
        # wait_created carries the row's resume_at, wait_completed copies it (core beta.39)
        data = {"resumeAt": cbor2.CBORTag(1, resume.replace(tzinfo=UTC).timestamp())}
        first = True
        for etype in implied if events is None else events:
            self.event(etype, corr, at=created if first else None, data=data)
            first = False
        done = self.clock if status == "completed" else None
        self.rows.waits.append((
            wait_row_key(self.id, corr), self.id, status, resume, done, created,
            self.clock, int(self.spec),
        ))  # fmt: skip
        return corr

    def hook(self, *, events: tuple[str, ...] = ("hook_created",)) -> str:
        hid = self.corr("hook")
        created = self.tick()
        first = True
        for etype in events:
            self.event(etype, hid, at=created if first else None)
            first = False
        token = "".join(self.rows.rng.choice(CROCKFORD.lower()) for _ in range(21))
        row: tuple[Any, ...] = (
            self.id, hid, token, "", "", "", created,
            cbor2.dumps(tagged(blob(self.rows.rng, 40))), int(self.spec), True, False,
        )  # fmt: skip
        self.rows.hooks.append(row)
        return hid

    def job(self, key: str | None, body_extra: dict[str, Any] | None = None, **kw: Any) -> Job:
        kw.setdefault("created_at", self.clock)
        kw.setdefault("run_at", kw["created_at"])
        kw.setdefault("max_attempts", self.rows.max_attempts)
        job = Job(self.id, self.workflow, {"runId": self.id, **(body_extra or {})}, key, **kw)
        self.rows.jobs.append(job)
        return job

    def end(self, *, terminal_event: bool = True) -> None:
        """Close the run: a terminal run gets its terminal event (and its row fields)."""
        if self.status in ("completed", "failed", "cancelled"):
            self.completed_at = self.tick()
            if terminal_event:
                self.event(f"run_{self.status}", at=self.completed_at)
        rng = self.rows.rng
        self.rows.runs.append((
            self.id, "postgres", self.status, self.workflow, self.created,
            self.clock, self.completed_at,
            None if self.status == "pending" else self.created + timedelta(milliseconds=300),
            cbor2.dumps(tagged(blob(rng, 60))) if self.status == "completed" else None,
            cbor2.dumps({"traceCarrier": {}}),
            cbor2.dumps(tagged(blob(rng, 80))),
            self.spec,
            cbor2.dumps(tagged(blob(rng, 200))) if self.status == "failed" else None,
            "USER_ERROR" if self.status == "failed" else None,
        ))  # fmt: skip
        if self.marker:
            self.rows.markers.append((self.id,))


def build_live_and_faults(rows: Rows, live: int, faults: int, queue: bool) -> int:
    """Every live run plus the fault runs; returns how many runs were built."""
    now, rng = rows.now, rows.rng
    n_runs = 0

    def live_time() -> datetime:
        # Live runs started within the last two hours, all older than --min-age (10 min).
        return now - timedelta(minutes=rng.uniform(15, 120))

    def history_time() -> datetime:
        return now - timedelta(days=rng.uniform(1, HISTORY_DAYS - 1))

    def keep_alive(r: RunBuilder) -> None:
        """A live job for a live fault run, so that it is not also a stranded run (WF133)."""
        r.job(None, {"requestedAt": r.clock.isoformat()}, locked_at=now - timedelta(seconds=2),
              attempts=1)  # fmt: skip

    k = faults
    fault_live = 0
    # -- live fault runs (default scope) --------------------------------------------------
    for _ in range(k):  # WF101: the lazy-start wedge (pending row, no events for it)
        r = RunBuilder(rows, live_time(), "running").begin()
        r.step("completed")
        sid = r.step("pending", events=())
        r.job(sid, {"stepId": sid}, attempts=1, locked_at=now - timedelta(seconds=1))
        r.end()
        rows.expect("WF101", True)
        fault_live += 1
    r = RunBuilder(rows, now - timedelta(minutes=30), "running").begin()  # in flight
    sid = r.step("pending", events=(), at=now - timedelta(minutes=1))
    r.job(sid, {"stepId": sid})
    r.end()
    rows.expect_in_flight["WF101"] += 1
    fault_live += 1
    for _ in range(k):  # WF102: wait row without wait_created
        r = RunBuilder(rows, live_time(), "running").begin()
        corr = r.wait("waiting", events=(), resume_in=timedelta(minutes=5))
        r.job(corr, run_at=r.clock + timedelta(minutes=5))
        r.end()
        rows.expect("WF102", True)
        fault_live += 1
    for _ in range(k):  # WF103: hook row without hook_created (severity info)
        r = RunBuilder(rows, live_time(), "running").begin()
        r.hook(events=())
        r.end()
        rows.expect("WF103", True)
        fault_live += 1
    for _ in range(k):  # WF111: completed step row without step_completed
        r = RunBuilder(rows, live_time(), "running").begin()
        sid = r.step("completed", events=("step_created", "step_started"))
        keep_alive(r)
        r.end()
        rows.expect("WF111", True)
        fault_live += 1
    r = RunBuilder(rows, live_time(), "running").begin()  # WF111 retry variant
    sid = r.step("retrying", events=("step_created", "step_started"),
                 retry_after=now + timedelta(minutes=2))  # fmt: skip
    r.job(sid, {"stepId": sid}, run_at=now + timedelta(minutes=2))
    r.end()
    rows.expect("WF111", True)
    fault_live += 1
    for i in range(k):  # WF112 (+ WF131 when the queue exists): completed wait, no event
        r = RunBuilder(rows, live_time(), "running").begin()
        r.step("completed")
        corr = r.wait("completed", events=("wait_created",), resume_in=timedelta(seconds=30))
        rows.expect("WF112", True)
        if i == 0:  # the seed's runaway chain: 1 s continuations forking parallel chains,
            base = int(now.timestamp())  # each enqueued long after the wait fell due
            for c in range(3):
                r.job(f"{corr}:{base - 3 + c}", message_attempt=26_000 + c,
                      created_at=now - timedelta(seconds=3 - c), run_at=now + timedelta(seconds=1),
                      attempts=1)  # fmt: skip
            if queue:
                rows.expect("WF131", True)
        else:
            r.job(corr, run_at=now + timedelta(seconds=1), attempts=1)
        r.end()
        fault_live += 1
    for _ in range(max(1, k // 2)):  # WF121: half-created run (log starts with run_started)
        r = RunBuilder(rows, live_time(), "running").begin(run_created=False)
        r.step("running")
        r.job(None, locked_at=now - timedelta(seconds=3), attempts=1)
        r.end()
        rows.expect("WF121", True)
        if rows.era == "slot":
            rows.expect("WF123", True)  # slot 1 then holds run_started
        fault_live += 1
    if queue:
        for _ in range(k):  # WF131: a waiting wait re-enqueued long after it fell due
            r = RunBuilder(rows, live_time(), "running").begin()
            corr = r.wait("waiting", resume_in=timedelta(seconds=1))
            base = int(now.timestamp())
            for c in range(2):
                r.job(f"{corr}:{base - 2 + c}", message_attempt=1 + c,
                      created_at=now - timedelta(seconds=2 - c), run_at=now)  # fmt: skip
            r.end()
            rows.expect("WF131", True)
            fault_live += 1
        for _ in range(k):  # WF132: recovery pile-up, key-less jobs from several starts
            r = RunBuilder(rows, live_time(), "running").begin()
            r.step("completed")
            for c in range(3):
                r.job(None, created_at=now - timedelta(minutes=20 + c))
            r.end()
            rows.expect("WF132", True)
            fault_live += 1
        for _ in range(k):  # WF133: stranded (its wait's job is gone)
            r = RunBuilder(rows, live_time(), "running").begin()
            r.step("completed")
            r.wait("waiting", resume_in=timedelta(minutes=-5))
            r.end()
            rows.expect("WF133", True)
            fault_live += 1
        for _ in range(k):  # WF134: exhausted job (and so also stranded: WF133)
            r = RunBuilder(rows, live_time(), "running").begin()
            sid = r.step("running")
            # graphile's failJob: run_at = failure time + exp(attempts) s (updated_at untouched)
            r.job(sid, {"stepId": sid}, attempts=rows.max_attempts,
                  run_at=r.clock + timedelta(minutes=1),
                  last_error="Error: fetch failed (ECONNREFUSED)")  # fmt: skip
            r.end()
            rows.expect("WF134", True)
            rows.expect("WF133", True)
            fault_live += 1
        for _ in range(k):  # WF135: locked 40 min ago by a worker that died; the run is silent
            r = RunBuilder(rows, now - timedelta(minutes=rng.uniform(60, 120)), "running").begin()
            r.step("running")
            r.job(None, locked_at=now - timedelta(minutes=40), attempts=1)
            r.end()
            rows.expect("WF135", True)
            fault_live += 1
    for _ in range(k):  # WF141: a second step_completed for one step
        r = RunBuilder(rows, live_time(), "running").begin()
        r.step("completed", events=("step_created", "step_started", "step_completed",
                                    "step_completed"))  # fmt: skip
        keep_alive(r)
        r.end()
        rows.expect("WF141", True)
        fault_live += 1
    if rows.era == "slot":
        for _ in range(k):  # WF121: slot-era run without its marker
            r = RunBuilder(rows, live_time(), "running", marker=False).begin()
            r.step("running")
            keep_alive(r)
            r.end()
            rows.expect("WF121", True)
            fault_live += 1
        r = RunBuilder(rows, live_time(), "running", slot=False, marker=False, spec="7").begin()
        r.step("running")  # the restart variant: only wevt_ events
        keep_alive(r)
        r.end()
        rows.expect("WF121", True)
        fault_live += 1
        for _ in range(k):  # WF122: a wevt_ id inside a slot-numbered run
            r = RunBuilder(rows, live_time(), "running").begin()
            sid = r.step("running")
            r.event("step_completed", sid, legacy_id=True)
            keep_alive(r)
            r.end()
            rows.expect("WF122", True)
            fault_live += 1
        for _ in range(k):  # WF123: a hole in the numbering
            r = RunBuilder(rows, live_time(), "running").begin()
            r.step("completed")
            r.n_events += 1  # skip one slot
            r.step("running")
            keep_alive(r)
            r.end()
            rows.expect("WF123", True)
            fault_live += 1
    n_runs += fault_live

    # -- clean live runs -------------------------------------------------------------------
    for i in range(max(0, live - fault_live)):
        kind = i % 5
        r = RunBuilder(rows, live_time(), "pending" if kind == 0 else "running").begin()
        if kind == 0:  # pending: its start message waits in the queue
            r.job(None, {"requestedAt": r.created.isoformat()}, run_at=r.created)
        elif kind == 1:  # a step running after a completed wait
            r.wait("completed", resume_in=timedelta(seconds=20))
            for _ in range(rng.randrange(0, 3)):
                r.step("completed")
            sid = r.step("running")
            r.job(sid, {"stepId": sid, "stepName": STEPS[0]}, attempts=1,
                  locked_at=now - timedelta(seconds=rng.uniform(1, 30)))  # fmt: skip
        elif kind == 2:  # parked on a wait that falls due later
            for _ in range(rng.randrange(1, 4)):
                r.step("completed")
            resume = timedelta(hours=rng.uniform(0.5, 20))
            corr = r.wait("waiting", resume_in=resume)
            r.job(corr, run_at=r.clock + resume)
        elif kind == 3:  # parked on a hook (no job needed: the hook is resumed from outside)
            r.step("completed")
            r.hook(events=("hook_created", "hook_received") if i % 2 else ("hook_created",))
        else:  # a step that failed once and retries later
            r.step("completed")
            retry = now + timedelta(minutes=rng.uniform(1, 30))
            sid = r.step("retrying", retry_after=retry)
            r.job(sid, {"stepId": sid}, run_at=retry)
        r.end()
        n_runs += 1

    # -- history faults (found with --all) -------------------------------------------------
    for _ in range(k):  # WF101: a wedged run the operator cancelled
        r = RunBuilder(rows, history_time(), "cancelled").begin()
        r.step("completed")
        r.step("pending", events=())
        r.end()
        rows.expect("WF101", False)
    for _ in range(k):  # WF111: a step completed in its row only; the run failed later
        r = RunBuilder(rows, history_time(), "failed").begin()
        r.step("completed", events=("step_created", "step_started"))
        r.end()
        rows.expect("WF111", False)
    for _ in range(k):  # WF113: terminal run without its terminal event
        r = RunBuilder(rows, history_time(), rng.choice(["completed", "failed"])).begin()
        r.step("completed")
        r.end(terminal_event=False)
        rows.expect("WF113", False)
    r = RunBuilder(rows, history_time(), "cancelled", slot=False, spec="1").begin()  # excepted
    r.end(terminal_event=False)
    for _ in range(k):  # WF121: a terminal run without run_created
        r = RunBuilder(rows, history_time(), "completed").begin(run_created=False)
        r.step("completed")
        r.end()
        rows.expect("WF121", False)
        if rows.era == "slot":
            rows.expect("WF123", False)  # slot 1 then holds run_started
    r = RunBuilder(rows, history_time(), "completed").begin()  # WF141: step_started after end
    sid = r.step("completed", attempt=2)  # the late start raised the attempt, as a real one does
    r.event("step_started", sid)
    r.end()
    r = RunBuilder(rows, history_time(), "completed").begin()  # WF145: hook_received after
    r.hook(events=("hook_created", "hook_received", "hook_disposed", "hook_received"))
    rows.hooks.pop()  # disposed: the row is gone
    r.end()
    rows.expect("WF145", False)
    r = RunBuilder(rows, history_time(), "completed").begin()  # WF141: two run_created
    r.event("run_created")
    r.step("completed")
    r.end()
    rows.expect("WF141", False, 2)
    n_runs += 3 * k + 4
    if rows.era == "slot":
        for _ in range(k):  # WF122 and WF123 in history
            r = RunBuilder(rows, history_time(), "completed").begin()
            sid = r.step("running")
            r.event("step_completed", sid, legacy_id=True)
            r.end()
            rows.expect("WF122", False)
            r = RunBuilder(rows, history_time(), "completed").begin()
            r.step("completed")
            r.n_events += 2
            r.end()
            rows.expect("WF123", False)
        n_runs += 2 * k
    if queue:
        # graphile keeps permanently failed jobs; history accumulates them (terminal runs)
        for _ in range(max(1, live)):
            r = RunBuilder(rows, history_time(), "failed").begin()
            sid = r.step("failed")
            r.job(sid, {"stepId": sid}, attempts=rows.max_attempts,
                  last_error="Error: step timed out")  # fmt: skip
            r.end()
            n_runs += 1
    return n_runs


# --- load -------------------------------------------------------------------------------------


def capture_indexes(conn: psycopg.Connection[Any]) -> list[tuple[str, str, str | None]]:
    """(table, index, constraint definition or None) for every index of the world tables."""
    rows = conn.execute(
        """SELECT t.relname, i.relname,
                  CASE WHEN c.oid IS NOT NULL THEN pg_get_constraintdef(c.oid) END,
                  pg_get_indexdef(i.oid)
           FROM pg_index x
           JOIN pg_class i ON i.oid = x.indexrelid
           JOIN pg_class t ON t.oid = x.indrelid
           JOIN pg_namespace n ON n.oid = t.relnamespace
           LEFT JOIN pg_constraint c ON c.conindid = i.oid AND c.conrelid = t.oid
           WHERE n.nspname = 'workflow' AND t.relname = ANY(%s)
           ORDER BY t.relname, i.relname""",
        ([*WORLD_TABLES, "workflow_event_slots"],),
    ).fetchall()
    original = bootstrap_index_statements()
    return [(t, i, con or original.get(i, idx)) for t, i, con, idx in rows]


def bootstrap_index_statements() -> dict[str, str]:
    """`CREATE INDEX` statements as the bootstrap DDL writes them, by index name.

    Re-running pg_get_indexdef's text is not enough: the partial index's predicate would be
    deparsed into a different (equivalent) form, and WF151 would rightly report drift.
    """
    found: dict[str, str] = {}
    for name in ("bootstrap/world_beta29", "bootstrap/world_slot"):
        text = " ".join(line.split("--", 1)[0] for line in wfctl_sql.load(name).splitlines())
        for statement in text.split(";"):
            match = re.match(r"\s*CREATE (?:UNIQUE )?INDEX (\w+)", statement)
            if match:
                found[match.group(1)] = " ".join(statement.split())
    return found


def drop_indexes(conn: psycopg.Connection[Any], indexes: list[tuple[str, str, str | None]]) -> None:
    for table, name, definition in indexes:
        if definition and not definition.startswith("CREATE"):
            conn.execute(
                sql.SQL("ALTER TABLE workflow.{} DROP CONSTRAINT {}").format(
                    sql.Identifier(table), sql.Identifier(name)
                )
            )
        else:
            conn.execute(sql.SQL("DROP INDEX workflow.{}").format(sql.Identifier(name)))


def create_indexes(
    conn: psycopg.Connection[Any], indexes: list[tuple[str, str, str | None]]
) -> None:
    for table, name, definition in indexes:
        started = time.perf_counter()
        assert definition
        if definition.startswith("CREATE"):
            conn.execute(definition)  # pg_get_indexdef: the exact original statement
        else:
            conn.execute(
                sql.SQL("ALTER TABLE workflow.{} ADD CONSTRAINT {} {}").format(
                    sql.Identifier(table), sql.Identifier(name), sql.SQL(definition)
                )
            )
        log(f"  index {name} on {table}: {time.perf_counter() - started:.1f} s")


def copy_rows(
    conn: psycopg.Connection[Any], table: str, columns: list[str], rows: list[tuple[Any, ...]]
) -> None:
    if not rows:
        return
    stmt = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.SQL(table), sql.SQL(", ").join(map(sql.Identifier, columns))
    )
    with conn.cursor() as cur, cur.copy(stmt) as copy:
        for row in rows:
            copy.write_row(row)


RUN_COLUMNS = [
    "id", "deployment_id", "status", "name", "created_at", "updated_at", "completed_at",
    "started_at", "output_cbor", "execution_context_cbor", "input_cbor", "spec_version",
    "error_cbor", "error_code",
]  # fmt: skip
EVENT_COLUMNS = ["id", "type", "correlation_id", "created_at", "run_id", "payload_cbor",
                 "spec_version"]  # fmt: skip
STEP_COLUMNS = [
    "run_id", "step_id", "step_name", "status", "attempt", "started_at", "completed_at",
    "created_at", "updated_at", "retry_after", "input_cbor", "output_cbor", "error_cbor",
    "spec_version",
]  # fmt: skip
WAIT_COLUMNS = ["wait_id", "run_id", "status", "resume_at", "completed_at", "created_at",
                "updated_at", "spec_version"]  # fmt: skip
HOOK_COLUMNS = [
    "run_id", "hook_id", "token", "owner_id", "project_id", "environment", "created_at",
    "metadata_cbor", "spec_version", "is_webhook", "is_system",
]  # fmt: skip
JOB_COLUMNS = ["task_id", "payload", "run_at", "attempts", "max_attempts", "last_error",
               "created_at", "updated_at", "key", "locked_at", "locked_by"]  # fmt: skip


@dataclass
class Options:
    dsn: str
    runs: int
    events_per_run: int
    live: int
    faults: int
    era: str
    queue: bool
    legacy_fraction: float
    seed: int


def payload_table(conn: psycopg.Connection[Any], rng: random.Random) -> None:
    conn.execute("CREATE TEMP TABLE payloads (type text, v int, b bytea, PRIMARY KEY (type, v))")
    rows = [
        (
            etype,
            v,
            event_payload(rng, etype, STEPS[v % len(STEPS)], WORKFLOWS[v % len(WORKFLOWS)], v),
        )
        for etype in PAYLOAD_TYPES
        for v in range(VARIANTS)
    ]
    copy_rows(conn, "payloads", ["type", "v", "b"], [r for r in rows if r[2] is not None])


def generate(opts: Options) -> dict[str, Any]:
    rng = random.Random(opts.seed)
    started = time.perf_counter()
    with psycopg.connect(opts.dsn, autocommit=True) as conn:
        result = bootstrap(conn, opts.era)
        log(f"bootstrap --era {opts.era}: {result.action}")
    if opts.queue:
        from tests.conftest import real_bootstrap

        real_bootstrap(opts.dsn)
        log("graphile_worker installed by the real package's bootstrap (setup.js)")
    with psycopg.connect(opts.dsn) as conn:
        now_row = conn.execute("SELECT localtimestamp").fetchone()
        assert now_row is not None
        now: datetime = now_row[0]
        rows = Rows(opts.era, now, rng, max_attempts=49 if opts.era == "slot" else 3)
        n_special = build_live_and_faults(rows, opts.live, opts.faults, opts.queue)
        n_hist = opts.runs - n_special
        if n_hist < 1:
            raise SystemExit(f"--runs must exceed the {n_special} live and fault runs")
        shape = Shape(opts.events_per_run)
        log(
            f"plan: {n_hist:,} history runs x {shape.events} events ({shape.steps} steps, "
            f"{shape.waits} wait, {shape.attrs} attr_set) + {n_special:,} live/fault runs "
            f"({len(rows.events):,} events, {len(rows.jobs):,} jobs)"
        )
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute("SET synchronous_commit = off")
        # one transaction: TRUNCATE -> new relfilenodes -> with wal_level=minimal no WAL
        indexes = capture_indexes(conn)
        tables = [f"workflow.{t}" for t in WORLD_TABLES]
        if opts.era == "slot":
            tables.append("workflow.workflow_event_slots")
        conn.execute(f"TRUNCATE {', '.join(tables)}")
        drop_indexes(conn, indexes)
        payload_table(conn, rng)
        end_ms = int((now - timedelta(minutes=15)).timestamp() * 1000)
        span_ms = HISTORY_DAYS * 86_400_000
        blobs = [cbor2.dumps(tagged(blob(rng, rng.randrange(40, 200)))) for _ in range(VARIANTS)]
        params = {
            "n": n_hist,
            "t0": end_ms - span_ms,
            "spacing": span_ms / n_hist,
            "seed": str(opts.seed),
            "slot_era": opts.era == "slot",
            "legacy_runs": int(n_hist * opts.legacy_fraction) if opts.era == "slot" else 0,
            "workflows": WORKFLOWS,
            "n_workflows": len(WORKFLOWS),
            "step_names": STEPS,
            "n_steps": len(STEPS),
            "blobs": blobs,
            "context": cbor2.dumps({"traceCarrier": {}, "workflowCoreVersion": "5.0.0-beta.29"}),
        }
        statements = history_sql(shape)
        for name in ("hist", "runs", "events", "steps", "markers"):
            if name == "markers" and opts.era != "slot":
                continue
            if name == "steps" and shape.steps == 0:
                continue
            t = time.perf_counter()
            cur = conn.execute(statements[name], params)
            log(f"  {name}: {cur.rowcount:,} rows in {time.perf_counter() - t:.1f} s")
        t = time.perf_counter()
        copy_rows(conn, "workflow.workflow_runs", RUN_COLUMNS, rows.runs)
        copy_rows(conn, "workflow.workflow_events", EVENT_COLUMNS, rows.events)
        copy_rows(conn, "workflow.workflow_steps", STEP_COLUMNS, rows.steps)
        copy_rows(conn, "workflow.workflow_waits", WAIT_COLUMNS, rows.waits)
        copy_rows(conn, "workflow.workflow_hooks", HOOK_COLUMNS, rows.hooks)
        if opts.era == "slot":
            copy_rows(conn, "workflow.workflow_event_slots", ["run_id"], rows.markers)
        log(f"  live and fault runs: {len(rows.runs):,} runs in {time.perf_counter() - t:.1f} s")
        t = time.perf_counter()
        conn.commit()
        log(f"committed the load ({time.perf_counter() - t:.1f} s)")
        conn.autocommit = True
        log("building the schema's indexes from their captured definitions")
        create_indexes(conn, indexes)
        if opts.queue:
            insert_jobs(conn, rows.jobs)
            log(f"  {len(rows.jobs):,} graphile jobs")
        # WF135 in flight: every live delivery's lock (taken seconds ago) of a silent run
        rows.expect_in_flight["WF135"] += sum(
            1 for j in rows.jobs if j.locked_at and j.locked_at > rows.now - timedelta(minutes=10)
        )
        expected = {
            "default": dict(sorted(rows.expect_live.items())),
            "all": dict(sorted((rows.expect_live + rows.expect_history).items())),
            "in_flight": dict(sorted(rows.expect_in_flight.items())),
        }
        manifest = {
            "generator": "benchmarks/gen_world.py",
            "era": opts.era,
            "runs": opts.runs,
            "events_per_run": opts.events_per_run,
            "live": opts.live,
            "faults": opts.faults,
            "queue": opts.queue,
            "seed": opts.seed,
            "generated_at": now.isoformat(),  # in-flight findings age past --min-age
            "expected": expected,
        }
        db = conn.info.dbname
        conn.execute(
            sql.SQL("COMMENT ON DATABASE {} IS {}").format(
                sql.Identifier(db), sql.Literal(json.dumps(manifest))
            )
        )
        t = time.perf_counter()
        conn.execute("VACUUM (ANALYZE)")
        log(f"VACUUM (ANALYZE): {time.perf_counter() - t:.1f} s")
        log(f"world generated in {time.perf_counter() - started:.0f} s")
        print_sizes(conn)
    return manifest


def insert_jobs(conn: psycopg.Connection[Any], jobs: list[Job]) -> None:
    row = conn.execute(
        "INSERT INTO graphile_worker._private_tasks (identifier) VALUES (%s)"
        " ON CONFLICT (identifier) DO UPDATE SET identifier = excluded.identifier RETURNING id",
        (TASK,),
    ).fetchone()
    assert row is not None
    copy_rows(conn, "graphile_worker._private_jobs", JOB_COLUMNS, [j.row(row[0]) for j in jobs])


def table_sizes(conn: psycopg.Connection[Any]) -> Iterator[tuple[str, int, str, str, str]]:
    rows = conn.execute(
        """SELECT n.nspname || '.' || c.relname, c.reltuples::bigint,
                  pg_size_pretty(pg_table_size(c.oid)), pg_size_pretty(pg_indexes_size(c.oid)),
                  pg_size_pretty(pg_total_relation_size(c.oid))
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE c.relkind = 'r' AND n.nspname IN ('workflow', 'graphile_worker')
             AND c.relname IN ('workflow_runs', 'workflow_events', 'workflow_steps',
                               'workflow_waits', 'workflow_hooks', 'workflow_event_slots',
                               '_private_jobs')
           ORDER BY pg_total_relation_size(c.oid) DESC"""
    ).fetchall()
    yield from rows


def print_sizes(conn: psycopg.Connection[Any]) -> None:
    print(f"{'table':40} {'rows':>12} {'heap':>10} {'indexes':>10} {'total':>10}")
    for name, tuples, heap, idx, total in table_sizes(conn):
        print(f"{name:40} {tuples:>12,} {heap:>10} {idx:>10} {total:>10}")
    size = conn.execute("SELECT pg_size_pretty(pg_database_size(current_database()))").fetchone()
    print(f"database size: {size[0] if size else '?'}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=1_000_000, help="total runs (history + live)")
    p.add_argument("--events-per-run", type=int, default=20, help="events of a history run")
    p.add_argument("--live", type=int, default=1000, help="pending/running runs")
    p.add_argument("--faults", type=int, default=3, help="fault runs per family and scope")
    p.add_argument("--era", choices=("beta29", "slot"), default="beta29")
    p.add_argument(
        "--legacy-fraction", type=float, default=0.5,
        help="slot era: share of history runs created before the migration (wevt_ ids)",
    )  # fmt: skip
    p.add_argument("--no-queue", dest="queue", action="store_false",
                   help="leave graphile_worker out (queue checks: not applicable)")  # fmt: skip
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--dsn", help="an existing server's admin DSN instead of the embedded one")
    p.add_argument(
        "--pgdata", type=Path, default=DEFAULT_PGDATA,
        help="embedded server data directory (started if needed, left running)",
    )  # fmt: skip
    p.add_argument("--dbname", default=None, help="database to (re)create; default world_<runs>")
    p.add_argument(
        "--no-tune", dest="tune", action="store_false",
        help="do not ALTER SYSTEM the memory/WAL settings of the embedded server",
    )  # fmt: skip
    p.add_argument("--stop", action="store_true", help="stop the embedded server and exit")
    args = p.parse_args(argv)
    if args.stop:
        stop_server(args.pgdata)
        return 0
    if args.events_per_run < 3:
        p.error("--events-per-run must be at least 3")
    admin = args.dsn or start_server(args.pgdata)
    if args.tune and not args.dsn:
        tune_server(admin, args.pgdata)
    dbname = args.dbname or f"world_{args.runs}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
    log(f"database {dbname} on {admin}")
    manifest = generate(
        Options(
            dsn=db_dsn(admin, dbname),
            runs=args.runs,
            events_per_run=args.events_per_run,
            live=args.live,
            faults=args.faults,
            era=args.era,
            queue=args.queue,
            legacy_fraction=args.legacy_fraction,
            seed=args.seed,
        )
    )
    print("expected findings:", json.dumps(manifest["expected"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
