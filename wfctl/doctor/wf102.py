"""WF102: wait row with no wait_created event."""

from wfctl.doctor.base import Check, Explanation, Severity

CHECK = Check(
    code="WF102",
    title="wait row without wait_created",
    severity=Severity.CRITICAL,
    remedy="wfctl repair --only WF102 appends wait_created with the row's resume_at",
    explanation=Explanation(
        meaning="A workflow_waits row exists, but the log has no wait_created event for its "
        "correlation id (the row key is <run_id>-<correlation_id>).",
        why_stuck="Every re-sent wait_created is refused 'already exists' and writes nothing, "
        "so the wait can never be completed; the run sits running, its wait past due.",
        cause="beta.29 inserts the wait row and then, in a second autocommit, the event.",
        repair="Append wait_created {resumeAt: the row's resume_at} under the run and wait row "
        "locks, guarded by the creation unique index; then make sure one wake-up job exists.",
    ),
)
