"""WF111: terminal (or retrying) step row without its completion event."""

from wfctl.doctor.base import Check, Explanation, Severity

CHECK = Check(
    code="WF111",
    title="step finished without its completion event",
    severity=Severity.CRITICAL,
    upstream_rules=("step.entity-matches-log",),
    remedy="wfctl repair --only WF111 appends step_completed / step_failed / step_retrying",
    explanation=Explanation(
        meaning="A step row is completed or failed (or pending with a retry error) but the log "
        "has no step_completed / step_failed (or no step_retrying after its last start).",
        why_stuck="Replay re-dispatches the step; step_started and step_completed are both "
        "refused ('Cannot modify step in terminal state'), and the run waits for a backstop, "
        "then sits running with no job. If the insert failed once in a live worker, the retried "
        "delivery spins at 100% CPU.",
        cause="beta.29 updates the step row, then inserts the event in a second autocommit.",
        repair="Only past --min-age and with no locked job for the run (a completion event is "
        "not covered by any unique index, so a slow original insert would make a duplicate): "
        "append the event with the row's exact step name and bytes (output_cbor / error_cbor). "
        "Position: replay reads the log in id order, so if an entity was created after the "
        "step completed, the event goes before that creation (legacy runs: a wevt_ id minted "
        "between the neighbours); a slot run, or another outcome sorting in between (the code "
        "may have raced the step against it), is refused with the reason.",
    ),
)
