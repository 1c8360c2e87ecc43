"""WF112: append wait_completed with the exact resumeAt of the wait's wait_created."""

from typing import Any

from wfctl.doctor.base import Finding
from wfctl.repair.base import Action, Context, NewEvent, Refused, Repair
from wfctl.repair.placement import place_terminal
from wfctl.world import codec


class AppendWaitCompleted(Repair):
    code = "WF112"

    def plan(self, ctx: Context, finding: Finding) -> Action:
        assert finding.entity_id
        wait = ctx.row("wait", correlation_id=finding.entity_id)
        if wait["status"] != "completed":
            raise Refused(f"state moved: the wait is now {wait['status']}")
        created = ctx.fetch("repair/wait_created_payload", correlation_id=finding.entity_id)
        data: dict[str, Any] = {}
        notes = []
        if created and created[0]["payload_cbor"] is not None:
            resume_at = (codec.decode(created[0]["payload_cbor"]) or {}).get("resumeAt")
            if resume_at is not None:
                data["resumeAt"] = resume_at  # exactly wait_created's, never the row's
        else:
            notes.append("no wait_created event (WF102): resumeAt omitted, as the runtime allows")
        spec = wait["spec_version"] if wait["spec_version"] is not None else ctx.run_spec_version()
        event, placed = place_terminal(
            ctx,
            NewEvent("wait_completed", finding.entity_id, data or None, spec),
            wait["completed_at"],
        )
        return Action(events=[event], notes=notes + placed)


REPAIR = AppendWaitCompleted()
