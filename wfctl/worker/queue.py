"""The worker's queue operations: each one statement of `sql/worker/`, composed here.

Every function takes an autocommit connection and runs its statement as its own
transaction, except `claim`, whose statements (lock under per-workflow limits, claim, the
next ready time) are one transaction in one round trip.

The statements a slot sends for every run it drives (`claim`, `release`, `drop_ended`) go
through the runtime's pipeline (`wfctl.runtime.wire`): prepared once per connection, so the
server does not parse and plan them again for each run. Sent as one-off statements, the claim
alone cost ~0.5 ms of server time each (planning the CTE), and idle slots claim several times
per run (benchmarks.md, "The worker's CPU per step").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row

from wfctl import sql
from wfctl.runtime.wire import Pipeline

CHANNEL = "wfctl_worker"


@dataclass(frozen=True)
class Claim:
    run_id: str
    workflow_name: str
    wake_seq: int
    claims: int


@dataclass(frozen=True)
class Polled:
    """What one claim found: the run leased (or None) and the seconds until the next
    unleased run this worker can run is ready, after that claim (None: none scheduled;
    <= 0: another one is ready now)."""

    claim: Claim | None
    next_ready: float | None


def claim(
    conn: psycopg.Connection[Any],
    *,
    worker: str,
    queue: str,
    names: list[str],
    lease: float,
    limits: dict[str, int] | None = None,
) -> Polled:
    """Lease one ready run (FOR UPDATE SKIP LOCKED), and read when the next one is ready.

    One round trip, one (implicit) transaction: the next-ready time is read after the claim,
    so it excludes the run just leased. A caller that leased one and sees another ready now
    wakes one more idle slot: that is how several runs made ready at once (recovery, a NOTIFY
    payload the server sends once per transaction) reach as many slots."""
    limited = sorted(limits or {})
    params = {
        "worker": worker,
        "queue": queue,
        "names": names,
        "lease": float(lease),
        "limited": limited,
        "limits": [(limits or {})[n] for n in limited],
    }
    batch: list[tuple[str | bytes, dict[str, Any] | None]] = []
    if limited:
        batch.append(("worker/claim_lock", {"queue": queue}))
    batch += [("worker/claim", params), ("worker/next_ready", {"queue": queue, "names": names})]
    *_, claimed, ready = Pipeline(conn).run(batch)
    delay = ready.rows[0][0] if ready.rows else None
    found = None
    if claimed.rows:
        run_id, name, wake_seq, claims = claimed.rows[0]
        assert run_id is not None and name is not None and wake_seq and claims
        found = Claim(run_id, name, int(wake_seq), int(claims))
    return Polled(found, None if delay is None else float(delay))


def release(
    conn: psycopg.Connection[Any],
    *,
    run_id: str,
    worker: str,
    seen: int,
    ready_at: datetime | None,
) -> None:
    # An aware time goes as text with its offset (the statement casts it to timestamptz).
    at = None if ready_at is None else ready_at.isoformat()
    Pipeline(conn).run(
        [
            (
                "worker/release",
                {"run_id": run_id, "worker": worker, "seen": seen, "ready_at": at},
            )
        ]
    )


def drop_ended(conn: psycopg.Connection[Any], *, run_id: str, worker: str) -> None:
    Pipeline(conn).run([("worker/drop_ended", {"run_id": run_id, "worker": worker})])


def register(
    conn: psycopg.Connection[Any],
    *,
    worker: str,
    host: str,
    pid: int,
    queue: str,
    concurrency: int,
    lease: float,
    workflows: list[str],
) -> None:
    conn.execute(
        sql.load("worker/register"),
        {
            "worker": worker,
            "host": host,
            "pid": pid,
            "queue": queue,
            "concurrency": concurrency,
            "lease": lease,
            "workflows": workflows,
        },
    )


def heartbeat(
    conn: psycopg.Connection[Any], *, worker: str, lease: float, runs: list[str]
) -> tuple[set[str], bool]:
    """Renew the leases of `runs`; returns (runs renewed, whether our worker row exists)."""
    rows = conn.execute(
        sql.load("worker/heartbeat"), {"worker": worker, "lease": lease, "runs": runs}
    ).fetchall()
    held = {str(r[0]) for r in rows}
    if rows:
        return held, bool(rows[0][1])
    alive = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM wfctl.workers WHERE worker_id = %s)", (worker,)
    ).fetchone()
    return held, bool(alive and alive[0])


def unregister(conn: psycopg.Connection[Any], *, worker: str) -> None:
    conn.execute(sql.load("worker/unregister"), {"worker": worker})


def recover(conn: psycopg.Connection[Any]) -> tuple[int, int] | None:
    """One single-flight recovery round: (runs whose expired lease was cleared, dead workers
    removed), or None when another worker holds the recovery lock right now."""
    with conn.transaction():
        got = conn.execute(sql.load("worker/recovery_lock")).fetchone()
        if not (got and got[0]):
            return None
        row = conn.execute(sql.load("worker/recover")).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def status(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    """Live workers, per-queue depth, oldest ready run, runs past their lease, and ready runs
    whose workflow no live worker serves (None before revision w0005 recorded the names)."""
    with conn.cursor(row_factory=dict_row) as cur:
        workers = cur.execute(sql.load("worker/status_workers")).fetchall()
        queues = cur.execute(sql.load("worker/status_queues")).fetchall()
        past = cur.execute(sql.load("worker/past_lease")).fetchall()
        named = cur.execute(sql.load("worker/has_served_names")).fetchone()
        unserved = (
            cur.execute(sql.load("worker/status_unserved")).fetchall()
            if named and next(iter(named.values()))
            else None
        )
    return {"workers": workers, "queues": queues, "past_lease": past, "unserved": unserved}
