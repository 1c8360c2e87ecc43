"""WF113: append the run's terminal event, rebuilt from the run row."""

from typing import Any

from wfctl.doctor.base import Finding
from wfctl.repair.base import Action, Context, NewEvent, Repair
from wfctl.world import codec


class AppendRunTerminal(Repair):
    code = "WF113"

    def plan(self, ctx: Context, finding: Finding) -> Action:
        run = ctx.run
        status = run["status"]
        data: dict[str, Any] | None
        if status == "completed":
            data = {"output": codec.decode(run["output_cbor"])}
        elif status == "failed":
            data = {"error": codec.decode(run["error_cbor"])}
            if run["error_code"]:
                data["errorCode"] = run["error_code"]
        else:
            data = None  # run_cancelled carries an optional cancelReason the row does not keep
        event = NewEvent(f"run_{status}", None, data, ctx.run_spec_version())
        return Action(events=[event])


REPAIR = AppendRunTerminal()
