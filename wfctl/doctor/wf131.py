"""WF131: runaway wait-continuation job chains."""

from wfctl.doctor.base import Check, Explanation, Needs, Severity

CHECK = Check(
    code="WF131",
    title="runaway wait-continuation chains",
    severity=Severity.CRITICAL,
    remedy="repair the underlying WF112/WF102 first, then wfctl repair --only WF131",
    explanation=Explanation(
        meaning="Several live wake-up jobs for one wait, or a continuation whose attempt "
        "counter ran past the threshold (--attempt-threshold, default 100).",
        why_stuck="Each delivery replays the run, finds the wait still pending (usually WF112), "
        "computes a 1 s timeout and reschedules itself; lost responses fork parallel chains "
        "(the seed saw ~27 chains past 26,000 attempts).",
        cause="An incomplete wait (WF112 / WF102) plus deliveries that fail after enqueueing "
        "their successor.",
        repair="After the wait is repaired: permanently fail the surplus unlocked jobs with "
        "graphile_worker.permanently_fail_jobs, leaving exactly one wake-up for the run.",
    ),
    needs=frozenset({Needs.QUEUE}),
)
