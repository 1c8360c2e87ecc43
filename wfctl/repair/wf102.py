"""WF102: append the missing wait_created with the row's resume_at."""

from wfctl.doctor.base import Finding
from wfctl.repair.base import Action, Context, NewEvent, Refused, Repair, utc
from wfctl.repair.placement import place_creation


class AppendWaitCreated(Repair):
    code = "WF102"

    def plan(self, ctx: Context, finding: Finding) -> Action:
        assert finding.entity_id
        wait = ctx.row("wait", correlation_id=finding.entity_id)
        if wait["resume_at"] is None:
            raise Refused("the wait row has no resume_at to rebuild wait_created from")
        spec = wait["spec_version"] if wait["spec_version"] is not None else ctx.run_spec_version()
        data = {"resumeAt": utc(wait["resume_at"])}
        event, notes = place_creation(ctx, NewEvent("wait_created", finding.entity_id, data, spec))
        return Action(events=[event], notes=notes)


REPAIR = AppendWaitCreated()
