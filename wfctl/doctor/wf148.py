"""WF148: a step row's attempt differs from its step_started events."""

from wfctl.doctor.base import Check, Explanation, Severity

CHECK = Check(
    code="WF148",
    title="step attempt differs from the log",
    severity=Severity.WARNING,
    upstream_rules=("step.attempt-matches-log",),
    remedy="report only: see `wfctl doctor --explain WF148`",
    explanation=Explanation(
        meaning="workflow_steps.attempt is not the number of step_started events of the step.",
        why_stuck="Not stuck: the runtime budgets retries by the row's attempt, so the step "
        "retries too often or too rarely.",
        cause="Every start raises attempt and journals step_started in one transaction "
        "(beta.29 plain and lazy starts, wfctl's runtime), so only edits that touch rows and "
        "log apart (a hand fix, a partial restore) produce it.",
        repair="None automatic: which side is right cannot be known from the database.",
    ),
)
