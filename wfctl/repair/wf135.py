"""WF135: release the queue locks of workers that are gone, chosen by age, shown first.

A worker killed inside a delivery leaves its job locked (graphile-worker 0.16.6 frees it only
after 4 hours), and wfctl refuses every repair of that run while the lock stands. An operator
at 3 a.m. does not know worker ids; they know how long a delivery can live. So the selector is
an age (`--unlock-older-than 30m`), optionally plus worker ids they know are dead
(`--unlock-dead-worker`). The dry run lists exactly the locks that would go; the apply
releases each re-checked under the job's row lock (same holder, same instant, still
selected), the way graphile's own sweep does, with an audit row. A lock of a run that has
something else to repair is released in that run's repair transaction: a live worker can
take the job only once the run is healed, never between the release and the heal.
A lock younger than the age, held by a worker not named, is never touched.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from wfctl import __version__, sql
from wfctl.clock import timestamp
from wfctl.doctor.base import Finding
from wfctl.durations import format_duration

CODE = "WF135"
# A live beta.29 delivery can hold its lock up to undici's 300 s fetch deadline: a younger
# lock may belong to a live worker (the CLI refuses a smaller age without --force-min-age).
UNLOCK_FLOOR = timedelta(minutes=5)


@dataclass(frozen=True)
class Unlock:
    """Which locks to release: older than `older_than`, or held by one of `workers`."""

    older_than: timedelta | None = None
    workers: tuple[str, ...] = ()

    def params(self) -> dict[str, Any]:
        return {"older_than": self.older_than, "workers": list(self.workers) or None}


@dataclass(frozen=True)
class Release:
    """One lock and what happened to it (planned | applied | skipped)."""

    finding: Finding
    outcome: str
    action: str
    reason: str = ""
    audit_id: int | None = None


def stale(
    conn: psycopg.Connection[Any], task: str, unlock: Unlock, run_ids: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """The locks `unlock` selects (of `run_ids` only when given), oldest first."""
    scope = {"task": task, "run_ids": list(run_ids) or None, **unlock.params()}
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(sql.load("repair/stale_locks"), scope).fetchall()


def planned(lock: dict[str, Any]) -> Release:
    """What the dry run shows for one selected lock."""
    return Release(_finding(lock), "planned", _action(lock))


def release(
    conn: psycopg.Connection[Any],
    locks: list[dict[str, Any]],
    unlock: Unlock,
    reason: str,
    *,
    audit: bool = True,
) -> Iterator[Release]:
    """Release each lock in its own short transaction (the locks of runs with nothing else to
    repair; the others go in their run's repair transaction, see runner._apply_run), each
    yielded once committed: a caller stopped by a signal still knows every release made."""
    for lock in locks:
        with conn.transaction():
            done = release_one(conn, lock, unlock, reason, audit)
        yield done


def release_one(
    conn: psycopg.Connection[Any],
    lock: dict[str, Any],
    unlock: Unlock,
    reason: str,
    audit: bool = True,
) -> Release:
    """Release one lock and audit it (not in a dry run's rehearsal), in the caller's
    transaction: re-checked under the job's row lock (same holder, same instant, still
    selected), else skipped."""
    finding, action = _finding(lock), _action(lock)
    done = conn.execute(
        sql.load("repair/release_lock"),
        {
            "job_id": lock["id"],
            "locked_by": lock["locked_by"],
            "locked_at": lock["locked_at"],
            **unlock.params(),
        },
    ).fetchone()
    if done is None or done[0] == 0:
        return Release(
            finding,
            "skipped",
            action,
            "state moved: the lock was released or taken by another worker meanwhile",
        )
    if not audit:
        return Release(finding, "applied", action)
    row = conn.execute(
        sql.load("repair/audit"),
        {
            "version": __version__,
            "reason": reason,
            "code": CODE,
            "run_id": lock["run_id"],
            "entity_id": str(lock["id"]),
            "event_ids": [],
            "details": Jsonb(
                {
                    "actions": [action],
                    "locked_by": lock["locked_by"],
                    "locked_at": lock["locked_at"].isoformat(),
                    "held_seconds": lock["held"].total_seconds(),
                    "selector": {
                        "older_than_seconds": unlock.older_than.total_seconds()
                        if unlock.older_than
                        else None,
                        "workers": list(unlock.workers),
                    },
                    "queues_released": done[1],
                }
            ),
        },
    ).fetchone()
    assert row is not None
    return Release(finding, "applied", action, audit_id=int(row[0]))


def _finding(lock: dict[str, Any]) -> Finding:
    return Finding(
        CODE,
        lock["run_id"],
        str(lock["id"]),
        lock["locked_at"],
        False,
        f"job {lock['id']}{' (key ' + str(lock['key']) + ')' if lock['key'] else ''} locked by"
        f" {lock['locked_by']} since "
        f"{timestamp(lock['locked_at'])} ({format_duration(lock['held'])})",
    )


def _action(lock: dict[str, Any]) -> str:
    return (
        f"release job {lock['id']} held by {lock['locked_by']} for {format_duration(lock['held'])}"
    )
