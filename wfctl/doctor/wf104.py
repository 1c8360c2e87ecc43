"""WF104: rows a finished run still holds (a hook row reserving its token, a wait row)."""

from wfctl.doctor.base import Check, Explanation, Severity

CHECK = Check(
    code="WF104",
    title="rows outlive their finished run",
    severity=Severity.WARNING,
    upstream_rules=("run.resources-released",),
    remedy="wfctl repair --only WF104 deletes them, as the run's end would have",
    explanation=Explanation(
        meaning="A completed, failed or cancelled run still has a workflow_hooks or "
        "workflow_waits row (slot-era hooks retained on purpose, token_retention_until in the "
        "future, excepted).",
        why_stuck="The run is over; the harm is to others: its hook row keeps the token "
        "reserved, so every later run that creates the token gets hook_conflict, and a resume "
        "by token lands on a run that is over (RunExpiredError).",
        cause="beta.29 ends a run in separate autocommits (run UPDATE, DELETE hooks, DELETE "
        "waits, terminal event): a crash between them, or a hook_created whose row insert "
        "lands after the run ended (it checked the run first), leaves rows behind.",
        repair="One transaction per run: lock the run row, re-check under lock, delete the "
        "leftover row (exactly what the run's end does), audit. No event is written.",
    ),
)
