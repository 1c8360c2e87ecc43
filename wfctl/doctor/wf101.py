"""WF101: step row with no step_created event."""

from wfctl.doctor.base import Check, Explanation, Severity

CHECK = Check(
    code="WF101",
    title="step row without step_created",
    severity=Severity.CRITICAL,
    upstream_rules=("step.entity-has-log",),
    remedy="wfctl repair --only WF101 appends the step_created event from the step row",
    explanation=Explanation(
        meaning="A workflow_steps row exists, but the run's event log has no step_created "
        "event for it.",
        why_stuck="Replay sees no step_created, treats the step as new and sends a lazy "
        "step_started; the world finds the row and refuses it ('already created'); the runtime "
        "maps that to 'skipped' and replays again, forever (hundreds of replays a second on "
        "one core).",
        cause="beta.29 writes the step row and its step_created event in two autocommits. A "
        "crash, deploy or lost connection between them (the seed measured inserts up to 129 s) "
        "leaves the row alone.",
        repair="In one transaction per run: lock the run and step rows, re-check that no "
        "step_created exists, and append step_created {stepName, input} copied from the row "
        "(the creation unique index makes a duplicate impossible). The row is never deleted.",
    ),
)
