"""Queue repairs (WF131, WF132, WF133): collapse surplus wake-ups, or add the missing one."""

from __future__ import annotations

from wfctl.checks.base import Finding
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
        return Action(fail_jobs=[j["id"] for j in chain], wake_up=True)


class CollapseRecoveryJobs(Repair):
    """WF132: keep the oldest key-less wake-up, permanently fail the rest."""

    code = "WF132"

    def plan(self, ctx: Context, finding: Finding) -> Action:
        jobs = ctx.fetch("repair/live_jobs_for_run", task=ctx.task)
        keyless = [
            j
            for j in jobs
            if not j["is_step"]
            and not j["is_wait"]
            and j["locked_at"] is None
            and (j["key"] or "msg_").startswith("msg_")
        ]
        if len(keyless) < 2:
            raise Refused("state moved: no surplus key-less jobs remain")
        return Action(fail_jobs=[j["id"] for j in keyless[1:]])


class WakeStrandedRun(Repair):
    """WF133: enqueue exactly one wake-up in the package's own job format."""

    code = "WF133"

    def plan(self, ctx: Context, finding: Finding) -> Action:
        if ctx.fetch("repair/live_jobs_for_run", task=ctx.task):
            raise Refused("state moved: the run has a live job now")
        return Action(wake_up=True)


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


WF131 = CollapseContinuations()
WF132 = CollapseRecoveryJobs()
WF133 = WakeStrandedRun()
