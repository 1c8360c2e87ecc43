"""WF134: exhausted queue jobs for a live run."""

from wfctl.doctor.base import Check, Explanation, Needs, Severity

CHECK = Check(
    code="WF134",
    title="exhausted job for a live run",
    severity=Severity.WARNING,
    remedy="read last_error; fix its cause, then wfctl repair --only WF133 re-wakes the run",
    explanation=Explanation(
        meaning="A queue job that used all its attempts (3 in beta.29, 49 in the slot era) "
        "names a run that is still pending or running.",
        why_stuck="graphile keeps the failed job and never retries it; unless another job "
        "exists for the run, the run is stranded (WF133).",
        cause="Three failed deliveries: the flow route was down, or the run crashed the "
        "handler each time.",
        repair="Report only: the job's last_error names the cause. Once fixed, WF133's repair "
        "enqueues a fresh wake-up; from then on (a live job for the run created after the "
        "exhausted one failed, or an event written after it) the job is history and no "
        "longer reported.",
    ),
    needs=frozenset({Needs.QUEUE}),
)
