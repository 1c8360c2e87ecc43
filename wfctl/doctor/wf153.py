"""WF153: a wait row's resume_at differs from its wait_created's resumeAt.

The SQL pairs each wait row with its wait_created; Python decodes the event (CBOR) and
compares whole milliseconds.
"""

from __future__ import annotations

from typing import Any

from wfctl.doctor.base import Check, Explanation, Finding, Severity
from wfctl.doctor.resume_at import iso, millis, resume_at


class ResumeAtRowCheck(Check):
    """Decodes the event; a row naming the event's instant holds."""

    def finding(self, row: tuple[Any, ...]) -> Finding | None:
        run_id, entity_id, observed_at, in_flight, _, on_row, payload = row
        asked = resume_at(payload)
        if asked is None or millis(asked) == millis(on_row):
            return None
        drift = (millis(on_row) - millis(asked)) / 1000
        detail = (
            f"wait row resume_at {iso(on_row)}, wait_created says {iso(asked)} ({drift:+.3f} s)"
        )
        return Finding(self.code, run_id, entity_id, observed_at, in_flight, detail)


CHECK = ResumeAtRowCheck(
    code="WF153",
    title="wait row resume_at differs from wait_created",
    severity=Severity.WARNING,
    upstream_rules=("wait.resume-at-stable",),
    remedy="wfctl repair --apply --only WF153 (the row takes the event's resumeAt)",
    explanation=Explanation(
        meaning="workflow_waits.resume_at is not the resumeAt of the wait's wait_created "
        "event (compared in whole milliseconds).",
        why_stuck="Not stuck by itself: the runtime schedules and completes the wait from "
        "the event, so editing the row neither wakes nor delays the sleeper. Whatever reads "
        "the row is misled: wfctl's overdue-wait check (WF131) and a wait_completed "
        "rebuilt from the row would carry a deadline the replay rejects (WF152).",
        cause="The package inserts row and event from one eventData, and refuses a second "
        'wait_created for the same wait ("already exists": no event, no update), so the '
        'runtime never moves the row\'s deadline; a hand edit (e.g. "wake it now") does.',
        repair="Sets the row's resume_at to the event's resumeAt, under the wait row lock, "
        "after re-checking: the event is what the runtime reads. No event is written. To "
        "really move a deadline, wake the run instead (`wfctl repair`, WF133).",
    ),
)
