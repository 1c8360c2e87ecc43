"""The worker's queue operations: each one statement of `sql/worker/`, composed here.

Every function takes an autocommit connection and runs its statement as its own
transaction, except `claim` under per-workflow limits (lock + claim in one transaction).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row

from wfctl import sql

CHANNEL = "wfctl_worker"


@dataclass(frozen=True)
class Claim:
    run_id: str
    workflow_name: str
    wake_seq: int
    claims: int


def claim(
    conn: psycopg.Connection[Any],
    *,
    worker: str,
    queue: str,
    names: list[str],
    lease: float,
    limits: dict[str, int] | None = None,
) -> Claim | None:
    """Lease one ready run (FOR UPDATE SKIP LOCKED), or None."""
    limited = sorted(limits or {})
    params = {
        "worker": worker,
        "queue": queue,
        "names": names,
        "lease": lease,
        "limited": limited,
        "limits": [(limits or {})[n] for n in limited],
    }
    if limited:
        with conn.transaction():
            conn.execute(sql.load("worker/claim_lock"), {"queue": queue})
            row = conn.execute(sql.load("worker/claim"), params).fetchone()
    else:
        row = conn.execute(sql.load("worker/claim"), params).fetchone()
    if row is None:
        return None
    return Claim(str(row[0]), str(row[1]), int(row[2]), int(row[3]))


def release(
    conn: psycopg.Connection[Any],
    *,
    run_id: str,
    worker: str,
    seen: int,
    ready_at: datetime | None,
) -> None:
    conn.execute(
        sql.load("worker/release"),
        {"run_id": run_id, "worker": worker, "seen": seen, "ready_at": ready_at},
    )


def drop_ended(conn: psycopg.Connection[Any], *, run_id: str, worker: str) -> None:
    conn.execute(sql.load("worker/drop_ended"), {"run_id": run_id, "worker": worker})


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


def next_ready(conn: psycopg.Connection[Any], *, queue: str, names: list[str]) -> float | None:
    row = conn.execute(sql.load("worker/next_ready"), {"queue": queue, "names": names}).fetchone()
    return None if row is None or row[0] is None else float(row[0])


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
