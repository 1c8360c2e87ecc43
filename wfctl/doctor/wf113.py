"""WF113: terminal run without its terminal run event."""

from wfctl.doctor.base import Check, Explanation, Severity

CHECK = Check(
    code="WF113",
    title="run finished without its terminal event",
    severity=Severity.WARNING,
    upstream_rules=("run.entity-matches-log",),
    remedy="wfctl repair --only WF113 appends run_completed / run_failed / run_cancelled",
    explanation=Explanation(
        meaning="A run row is completed, failed or cancelled, but its log has no matching "
        "run_completed / run_failed / run_cancelled (legacy-spec runs excepted).",
        why_stuck="It is not stuck: the run is over (a later run_started is refused as "
        "expired). Its log is incomplete for observability and for anything that waits for a "
        "terminal event. Terminal runs are outside doctor's default live scope: use --all, "
        "--run or --since.",
        cause="beta.29 updates the run row, deletes its hooks and waits, and inserts the "
        "terminal event last, each in its own autocommit.",
        repair="Append the terminal event rebuilt from output_cbor, or error_cbor + error_code.",
    ),
)
