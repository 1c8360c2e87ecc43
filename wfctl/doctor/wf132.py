"""WF132: recovery job pile-up (several key-less wake-ups for one run)."""

from wfctl.doctor.base import Check, Explanation, Needs, Severity

CHECK = Check(
    code="WF132",
    title="recovery job pile-up",
    severity=Severity.WARNING,
    remedy="wfctl repair --only WF132 fails the surplus key-less jobs, keeping one",
    explanation=Explanation(
        meaning="Several pending key-less wake-up jobs (no stepId) for one run.",
        why_stuck="Not stuck, but each copy replays the run, and on another process a booting "
        "peer re-drives a run a live peer is executing (upstream vercel/workflow#3758).",
        cause="Every world.start() re-enqueues every pending/running run without a job key "
        "(upstream vercel/workflow#3119); restarts pile them up.",
        repair="Permanently fail the surplus unlocked jobs, keep the oldest.",
    ),
    needs=frozenset({Needs.QUEUE}),
)
