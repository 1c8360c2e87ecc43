"""WF153: set a wait row's resume_at to its wait_created's resumeAt.

The event is the side that is right: core schedules the continuation, completes the wait and
checks wait_completed against the wait_created event, never the row, so the row only mirrors
it. No event is written.
"""

from decimal import Decimal

from wfctl.doctor.base import Finding
from wfctl.doctor.resume_at import iso, millis, resume_at
from wfctl.repair.base import Action, Context, Refused, Repair


class SetResumeAtFromEvent(Repair):
    code = "WF153"

    def plan(self, ctx: Context, finding: Finding) -> Action:
        assert finding.entity_id
        wait = ctx.row("wait", correlation_id=finding.entity_id)
        created = ctx.fetch("repair/wait_created_payload", correlation_id=finding.entity_id)
        asked = resume_at(created[0]["payload_cbor"]) if created else None
        if asked is None:
            raise Refused("the wait has no wait_created with a resumeAt to copy")
        if wait["resume_at"] is None or millis(wait["resume_at"]) == millis(asked):
            raise Refused("state moved: the row's resume_at matches wait_created now")
        params = {
            "correlation_id": finding.entity_id,
            "epoch": str(Decimal(millis(asked)) / 1000),
            "expected": wait["resume_at"],
        }
        return Action(
            row_changes=[("repair/set_wait_resume_at", params)],
            notes=[f"resume_at {iso(wait['resume_at'])} -> {iso(asked)} (wait_created's)"],
        )


REPAIR = SetResumeAtFromEvent()
