"""WF101: append the missing step_created from the step row."""

from wfctl.doctor.base import Finding
from wfctl.repair.base import Action, Context, NewEvent, Repair
from wfctl.repair.placement import place_creation
from wfctl.world import codec


class AppendStepCreated(Repair):
    code = "WF101"

    def plan(self, ctx: Context, finding: Finding) -> Action:
        assert finding.entity_id
        step = ctx.row("step", step_id=finding.entity_id)
        data = {"stepName": step["step_name"], "input": codec.decode(step["input_cbor"])}
        spec = step["spec_version"] if step["spec_version"] is not None else ctx.run_spec_version()
        event, notes = place_creation(ctx, NewEvent("step_created", finding.entity_id, data, spec))
        return Action(events=[event], notes=notes)


REPAIR = AppendStepCreated()
