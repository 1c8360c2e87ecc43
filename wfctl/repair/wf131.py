"""WF131: replace a chain that makes no progress by one fresh wake-up (after WF112/WF102).

A healthy long sleep holds live continuation jobs too (hop chains); failing them would write
to a healthy run. So the plan re-proves, with the wait row locked, that this chain makes no
progress (a continuation enqueued after the wait fell due), and refuses otherwise.
"""

from __future__ import annotations

from typing import Any

from wfctl.clock import timestamp
from wfctl.doctor.base import Finding
from wfctl.repair.base import Action, Context, Refused, Repair


class CollapseContinuations(Repair):
    """WF131: after the wait is repaired, replace its chain(s) by one fresh wake-up."""

    code = "WF131"

    def plan(self, ctx: Context, finding: Finding) -> Action:
        assert finding.entity_id
        wait = ctx.row("wait", correlation_id=finding.entity_id)  # locked on apply
        for underlying in ("checks/WF112", "checks/WF102"):
            rows = ctx.fetch(underlying, **_scope(ctx))
            if any(r["entity_id"] == finding.entity_id for r in rows):
                code = underlying.split("/")[1]
                raise Refused(f"repair {code} first: the wait is still incomplete")
        rows = ctx.fetch("checks/WF131", **_scope(ctx))
        if not any(r["entity_id"] == finding.entity_id and not r["in_flight"] for r in rows):
            raise Refused(
                f"healthy: the chain of wait {finding.entity_id} ({wait['status']}, due "
                f"{timestamp(wait['resume_at'])}) shows no continuation enqueued after its deadline"
            )
        jobs = [j for j in ctx.fetch("repair/live_jobs_for_run", task=ctx.task) if j["is_wait"]]
        chain = [j for j in jobs if j["wait"] == finding.entity_id]
        running = [j for j in chain if j["locked_at"] is not None]
        if running:
            raise Refused(f"a continuation job is running right now ({_holders(running)})")
        return Action(
            fail_jobs=[j["id"] for j in chain],
            fail_message="wfctl: superseded wait continuation (WF131)",
            wake_up=True,
        )


def _holders(jobs: list[dict[str, Any]]) -> str:
    return ", ".join(
        f"job {j['id']} locked by {j['locked_by']} since {timestamp(j['locked_at'])}" for j in jobs
    )


def _scope(ctx: Context) -> dict[str, object]:
    """Parameters for re-running a check on this run only, inside the repair transaction."""
    return {
        "live_only": False,
        "run_ids": [ctx.run["id"]],
        "since": None,
        "min_age": "0 seconds",
        "attempt_threshold": 0,
        "task": ctx.task,
    }


REPAIR = CollapseContinuations()
