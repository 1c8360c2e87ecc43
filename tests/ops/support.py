"""Helpers for the operator-action tests: age runs, count a run's rows, read back through
the real package."""

from __future__ import annotations

from typing import Any

from tests.conftest import Db

CHILD_TABLES = (
    "workflow_events",
    "workflow_steps",
    "workflow_waits",
    "workflow_hooks",
    "workflow_stream_chunks",
)


def age_run(db: Db, run_id: str, *, completed_days: float = 0, created_days: float = 0) -> None:
    """Move a run's clock back (a test cannot wait 30 days): completion and/or creation."""
    with db.connect() as conn:
        conn.execute(
            "UPDATE workflow.workflow_runs SET"
            " completed_at = completed_at - make_interval(secs => %(c)s),"
            " updated_at = updated_at - make_interval(secs => greatest(%(c)s, %(r)s)),"
            " created_at = created_at - make_interval(secs => %(r)s)"
            " WHERE id = %(id)s",
            {"id": run_id, "c": completed_days * 86400, "r": created_days * 86400},
        )


def rows_of(db: Db, run_id: str) -> dict[str, int]:
    """How many rows each world table holds for one run (run row included)."""
    out = {
        "workflow_runs": db.scalar(
            "SELECT count(*) FROM workflow.workflow_runs WHERE id = %s", (run_id,)
        )
    }
    for table in CHILD_TABLES:
        out[table] = db.scalar(
            f"SELECT count(*) FROM workflow.{table} WHERE run_id = %s",
            (run_id,),
        )
    return out


def jobs_of(db: Db, run_id: str) -> int:
    return int(
        db.scalar(
            "SELECT count(*) FROM graphile_worker._private_jobs j WHERE"
            " convert_from(decode(j.payload->>'data','base64'),'UTF8')::jsonb->>'runId' = %s",
            (run_id,),
        )
    )


def status_of(db: Db, run_id: str) -> Any:
    return db.scalar("SELECT status::text FROM workflow.workflow_runs WHERE id = %s", (run_id,))
