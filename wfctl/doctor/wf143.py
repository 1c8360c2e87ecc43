"""WF143: a step or wait completion sorts before the entity's creation event."""

from wfctl.doctor.base import Check, Explanation, Severity

CHECK = Check(
    code="WF143",
    title="completion before creation",
    severity=Severity.CRITICAL,
    upstream_rules=("step.terminal-after-created", "wait.completed-after-created"),
    remedy="report only: see `wfctl doctor --explain WF143`",
    explanation=Explanation(
        meaning="A step_completed / step_failed / step_retrying sorts before its step's "
        "step_created, or a wait_completed before its wait_created.",
        why_stuck="Replay reads the log in id order; core beta.39's step and sleep consumers "
        "finish at the entity's terminal event, so the creation event after it is offered to "
        "no consumer: 'Replay could not consume event' on every replay.",
        cause="A creation event restored at the tail for an entity that had already "
        "completed (a repair of a row without its creation event that did not look at the "
        "entity's later events), or a clock-skewed writer minting an older id.",
        repair="Not an append. Legacy runs: re-mint the creation event's id so it sorts "
        "before the entity's first event (manual: stop workers, back up the run's events, "
        "UPDATE the id in one transaction, re-run doctor, wake the run with WF133). Slot runs "
        "cannot be reordered without renumbering.",
    ),
)
