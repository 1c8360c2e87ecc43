"""WF146: step_started after the run's terminal event (vw#3457)."""

from wfctl.doctor.base import Check, Explanation, Severity

CHECK = Check(
    code="WF146",
    title="step restarted after the run ended",
    severity=Severity.WARNING,
    upstream_rules=("step.no-restart-after-terminal", "run.terminal-is-last"),
    remedy="report only: check the step's side effects for the run that had already ended",
    explanation=Explanation(
        meaning="A step_started sorts after the run's first run_completed / run_failed / "
        "run_cancelled.",
        why_stuck="The run is over; the harm is the side effect: the step body ran again for a "
        "run that had ended (a cancelled order charged, a mail sent twice).",
        cause="beta.29 checks a plain step_started against the step (a running step may start "
        "again) but not against the run's end, so a redelivered step message after the run's "
        "end starts it again (fixed upstream in beta.42).",
        repair="None: the step ran. Audit its side effects.",
    ),
)
