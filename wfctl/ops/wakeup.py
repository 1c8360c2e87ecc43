"""One wake-up job for a run the package drives, in the package's own message format.

Why: the package's own `resumeHook()` writes hook_received and then enqueues the run's flow
message; a hook_received written by wfctl without that job leaves the run waiting until some
worker restarts (every start re-enqueues active runs). The job is the one `wfctl repair` adds
for a stranded run (WF133): `sql/repair/add_wakeup_job.sql`, task `<prefix>flows`, key = its
message id, the release's attempts. `add_job` is the one place that builds its body and
message id (repairs, runs fork, hooks resume, the carry of runs across an upgrade). wfctl's
own runs (deployment `wfctl`, driven by `wfctl run`/`worker`) get none: no package worker
knows their workflows.
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
WFCTL_DEPLOYMENT = "wfctl"  # = wfctl.runtime.store.DEPLOYMENT_ID (a test keeps them equal)


def job_prefix() -> str:
    """The package's own setting (`WORKFLOW_POSTGRES_JOB_PREFIX`), else its default."""
    return os.environ.get("WORKFLOW_POSTGRES_JOB_PREFIX") or DEFAULT_JOB_PREFIX


def needed(world: World) -> bool:
    """Whether deliveries on this world may need a wake-up job: a release whose package
    wakes its runs by a flows job, with its queue installed."""
    return world.release is not None and world.release.wakes_package_runs and world.has_graphile


def enqueue(conn: psycopg.Connection[Any], world: World, run_id: str, prefix: str) -> int | None:
    """Add the run's wake-up job in the caller's transaction; returns the job id, or None
    for one of wfctl's own runs (its driver is wfctl, not the package's workers)."""
    row = conn.execute(
        "SELECT name, deployment_id FROM workflow.workflow_runs WHERE id = %s", (run_id,)
    ).fetchone()
    if row is None:
        raise LookupError(f"no run {run_id}")
    if row[1] == WFCTL_DEPLOYMENT:
        return None
    return add_job(conn, f"{prefix}flows", run_id, row[0], world.release_or_default.max_attempts)


def add_job(
    conn: psycopg.Connection[Any],
    task: str,
    run_id: str,
    workflow_name: str,
    max_attempts: int,
    run_at: datetime | None = None,
) -> int:
    """One flow delivery for the run on `task`, due now or at `run_at`, in the caller's
    transaction: the package's message (a fresh msg_ id, its key; body {runId, requestedAt}).
    Returns the job id."""
    body = json.dumps({"runId": run_id, "requestedAt": datetime.now(UTC).isoformat()})
    message_id = ids.prefixed("msg")
    job = conn.execute(
        sql.load("repair/add_wakeup_job"),
        {
            "task": task,
            "message_id": message_id,
            "workflow_name": workflow_name,
            "body": body,
            "max_attempts": max_attempts,
            "run_at": run_at,
        },
    ).fetchone()
    assert job is not None
    return int(job[0])
