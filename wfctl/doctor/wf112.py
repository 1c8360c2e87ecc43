"""WF112: completed wait row without wait_completed."""

from wfctl.doctor.base import Check, Explanation, Severity

CHECK = Check(
    code="WF112",
    title="wait completed without wait_completed",
    severity=Severity.CRITICAL,
    remedy="wfctl repair --only WF112 appends wait_completed, then collapses its job chain",
    explanation=Explanation(
        meaning="A wait row is 'completed' but the log has no wait_completed event for it.",
        why_stuck="Replay sees the wait still pending; its wait_completed is refused 'already "
        "completed' (swallowed); the suspension computes a 1 s timeout and enqueues a "
        "continuation: one flow call per second, forever, with no error anywhere (WF131).",
        cause="beta.29 updates the wait row, then inserts the event in a second autocommit; a "
        "crash between them leaves this state. Only visible while the run is live.",
        repair="Past --min-age and with no locked job: append wait_completed with the exact "
        "resumeAt of the run's wait_created event (the sleep consumer diverges on a 1 ms "
        "difference), placed as WF111 places a step's (before an entity created after the "
        "wait completed); then collapse surplus continuation jobs (WF131).",
    ),
)
