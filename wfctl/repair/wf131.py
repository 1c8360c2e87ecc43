"""WF131: replace runaway wait-continuation chains by one fresh wake-up (after WF112/WF102)."""

from __future__ import annotations

from wfctl.doctor.base import Finding
from wfctl.repair.base import Action, Context, Refused, Repair


class CollapseContinuations(Repair):
    """WF131: after the wait is repaired, replace its chain(s) by one fresh wake-up."""

    code = "WF131"

    def plan(self, ctx: Context, finding: Finding) -> Action:
        for underlying in ("checks/WF112", "checks/WF102"):
            pending = [
                r
                for r in ctx.fetch(underlying, **_scope(ctx))
                if r["entity_id"] == finding.entity_id
            ]
            if pending:
                code = underlying.split("/")[1]
                raise Refused(f"repair {code} first: the wait is still incomplete")
        jobs = [j for j in ctx.fetch("repair/live_jobs_for_run", task=ctx.task) if j["is_wait"]]
        chain = [j for j in jobs if j["wait"] == finding.entity_id]
        if any(j["locked_at"] is not None for j in chain):
            raise Refused("a continuation job is running right now")
        return Action(
            fail_jobs=[j["id"] for j in chain],
            fail_message="wfctl: superseded wait continuation (WF131)",
            wake_up=True,
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
