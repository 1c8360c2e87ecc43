"""WF131: runaway wait-continuation chains (a chain that makes no progress)."""

from wfctl.doctor.base import Check, Explanation, Needs, Severity

CHECK = Check(
    code="WF131",
    title="runaway wait-continuation chains",
    severity=Severity.CRITICAL,
    remedy="repair the underlying WF112/WF102 first, then wfctl repair --only WF131",
    explanation=Explanation(
        meaning="A wait's continuation was enqueued again after the wait fell due: a delivery "
        "found the wait still pending past its deadline and re-enqueued instead of completing "
        "it. Several jobs or a high attempt counter alone are not a finding: a healthy long "
        "sleep holds one hop chain per continuation max-delay setting it was seen under "
        "(keys wait_<id>:hop-N), and each hop legitimately raises the attempt counter.",
        why_stuck="Each delivery replays the run, finds the wait still pending (usually WF112), "
        "computes a 1 s timeout and enqueues the next continuation; lost responses fork "
        "parallel chains (the seed saw ~27 chains past 26,000 attempts).",
        cause="An incomplete wait (WF112 / WF102) plus deliveries that fail after enqueueing "
        "their successor.",
        repair="After the wait is repaired, and only while the chain still shows no progress "
        "(re-checked under lock): permanently fail the chain's unlocked jobs with "
        "graphile_worker.permanently_fail_jobs and enqueue exactly one wake-up for the run. "
        "A wait still due in the future is refused: its chain is healthy.",
    ),
    needs=frozenset({Needs.QUEUE}),
)
