"""WF104: delete a hook or wait row a finished run still holds, as the run's end would have."""

from wfctl.doctor.base import Finding
from wfctl.repair.base import Action, Context, Refused, Repair


class DeleteLeftoverRow(Repair):
    code = "WF104"

    def plan(self, ctx: Context, finding: Finding) -> Action:
        assert finding.entity_id
        if ctx.run["status"] not in ("completed", "failed", "cancelled"):
            raise Refused(f"state moved: the run is {ctx.run['status']} again")
        if finding.detail.startswith("hook row"):
            # Frees the token: later runs creating it no longer get hook_conflict.
            delete = ("repair/delete_leftover_hook", {"hook_id": finding.entity_id})
        else:
            delete = ("repair/delete_leftover_wait", {"correlation_id": finding.entity_id})
        return Action(row_changes=[delete])


REPAIR = DeleteLeftoverRow()
