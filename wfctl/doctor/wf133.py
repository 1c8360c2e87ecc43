"""WF133: stranded run (nothing will ever wake it)."""

from wfctl.doctor.base import Check, Explanation, Needs, Severity

CHECK = Check(
    code="WF133",
    title="stranded run",
    severity=Severity.CRITICAL,
    remedy="wfctl repair --only WF133 enqueues one wake-up job in the package's format",
    explanation=Explanation(
        meaning="A pending or running run with no live queue job naming it, and either no "
        "hook row or a waiting wait past its resume_at (upstream vercel/workflow#3743, scenario "
        "sleep-wait-continuation-stranded: a sleep raced against a hook whose continuation "
        "was lost).",
        why_stuck="Nothing delivers it: the package has no reaper, so the run stays put until "
        "some process calls world.start() (upstream vercel/workflow#3993). A wait alone wakes "
        "nothing: its delivery is a job.",
        cause="A job deleted by hand, a job that used all its attempts (WF134), a lost "
        "response, or a completion that never reached the log (WF111).",
        repair="Enqueue exactly one {runId} wake-up job (the package's job format: base64 body "
        "without line breaks, task <prefix>flows) so the real runtime picks the run up and "
        "completes the elapsed wait; refused if any live job for the run appeared meanwhile.",
    ),
    needs=frozenset({Needs.QUEUE}),
)
