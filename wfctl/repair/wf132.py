"""WF132: keep the oldest key-less wake-up job of a run, permanently fail the rest."""

from __future__ import annotations

from wfctl.doctor.base import Finding
from wfctl.repair.base import Action, Context, Refused, Repair


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
        return Action(
            fail_jobs=[j["id"] for j in keyless[1:]],
            fail_message="wfctl: surplus recovery wake-up (WF132)",
        )


REPAIR = CollapseRecoveryJobs()
