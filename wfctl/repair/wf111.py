"""WF111: append step_completed / step_failed / step_retrying from the step row."""

from typing import Any

from wfctl.doctor.base import Finding
from wfctl.repair.base import Action, Context, NewEvent, Refused, Repair, utc
from wfctl.repair.placement import place_terminal
from wfctl.world import codec


class AppendStepOutcome(Repair):
    code = "WF111"

    def plan(self, ctx: Context, finding: Finding) -> Action:
        assert finding.entity_id
        step = ctx.row("step", step_id=finding.entity_id)
        data: dict[str, Any] = {"stepName": step["step_name"]}  # exact: the consumer compares it
        if step["status"] == "completed":
            kind, data["result"] = "step_completed", codec.decode(step["output_cbor"])
        elif step["status"] == "failed":
            kind, data["error"] = "step_failed", codec.decode(step["error_cbor"])
        elif step["status"] == "pending" and step["retry_after"] is not None:
            kind, data["error"] = "step_retrying", codec.decode(step["error_cbor"])
            data["retryAfter"] = utc(step["retry_after"])
        else:
            raise Refused(f"state moved: the step is now {step['status']}")
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("stack"), str):
            # 4.x writes the stack beside the error too (its replay reads either); the
            # release's payload keys decide whether it stays (wfctl.repair.base.for_release).
            data["stack"] = error["stack"]
        spec = step["spec_version"] if step["spec_version"] is not None else ctx.run_spec_version()
        # Placed before any entity created after the completion (see wfctl.repair.placement).
        done_at = step["completed_at"] if kind != "step_retrying" else step["updated_at"]
        event, notes = place_terminal(ctx, NewEvent(kind, finding.entity_id, data, spec), done_at)
        return Action(events=[event], notes=notes)


REPAIR = AppendStepOutcome()
