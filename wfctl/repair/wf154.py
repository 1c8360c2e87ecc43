"""WF154: copy a completed run's output from its run_completed into the row.

The event is the one record of the value (the row has none), and the row is what callers
read (core's run.returnValue reads runs.get). Only a row with no output at all is written;
no event is written.
"""

from wfctl.doctor.base import Finding
from wfctl.doctor.wf154 import completed_output
from wfctl.repair.base import Action, Context, Refused, Repair
from wfctl.world import codec


class CopyOutputFromEvent(Repair):
    code = "WF154"

    def plan(self, ctx: Context, finding: Finding) -> Action:
        if ctx.run["status"] != "completed" or ctx.run["output_cbor"] is not None:
            raise Refused("state moved: the run is not a completed run without output now")
        events = ctx.fetch("repair/run_completed_payloads")
        output = completed_output([e["payload_cbor"] for e in events])
        if output is None:
            raise Refused("state moved: run_completed carries no output")
        return Action(
            row_changes=[("repair/set_run_output", {"output": codec.encode(output)})],
            notes=[f"output: {codec.describe(output)} (from run_completed)"],
        )


REPAIR = CopyOutputFromEvent()
