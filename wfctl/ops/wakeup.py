"""One wake-up job for a package-driven run, in the package's own message format.

Why: on a world whose runs are all the package's (4.x), the package's own `resumeHook()`
writes hook_received and then enqueues the run's flow message; a hook_received written by
wfctl without that job leaves the run waiting until some worker restarts (every start
re-enqueues active runs). The job is the one `wfctl repair` adds for a stranded run (WF133):
`sql/repair/add_wakeup_job.sql`, task `<prefix>flows`, key = its message id, the release's
attempts.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from typing import Any

import psycopg

from wfctl import sql
from wfctl.world import ids
from wfctl.world.model import World

DEFAULT_JOB_PREFIX = "workflow_"


def job_prefix() -> str:
    """The package's own setting (`WORKFLOW_POSTGRES_JOB_PREFIX`), else its default."""
    return os.environ.get("WORKFLOW_POSTGRES_JOB_PREFIX") or DEFAULT_JOB_PREFIX


def needed(world: World) -> bool:
    """Whether a delivery wfctl writes must wake the run itself: every run of the world is
    the package's (wfctl's runtime does not run on it) and its queue is installed."""
    return world.release is not None and world.release.package_driven and world.has_graphile


def enqueue(conn: psycopg.Connection[Any], world: World, run_id: str, prefix: str) -> int:
    """Add the run's wake-up job in the caller's transaction; returns the job id."""
    row = conn.execute(
        "SELECT name FROM workflow.workflow_runs WHERE id = %s", (run_id,)
    ).fetchone()
    if row is None:
        raise LookupError(f"no run {run_id}")
    body = json.dumps({"runId": run_id, "requestedAt": datetime.now(UTC).isoformat()})
    message_id = ids.prefixed("msg")
    job = conn.execute(
        sql.load("repair/add_wakeup_job"),
        {
            "task": f"{prefix}flows",
            "message_id": message_id,
            "workflow_name": row[0],
            "body": body,
            "max_attempts": world.release_or_default.max_attempts,
        },
    ).fetchone()
    assert job is not None
    return int(job[0])
