"""WF133: wake a stranded run with one job in the package's own format."""

from __future__ import annotations

from wfctl.doctor.base import Finding
from wfctl.repair.base import Action, Context, Refused, Repair


class WakeStrandedRun(Repair):
    """WF133: enqueue exactly one wake-up in the package's own job format."""

    code = "WF133"

    def plan(self, ctx: Context, finding: Finding) -> Action:
        if ctx.fetch("repair/live_jobs_for_run", task=ctx.task):
            raise Refused("state moved: the run has a live job now")
        return Action(wake_up=True)


REPAIR = WakeStrandedRun()
