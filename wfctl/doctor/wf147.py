"""WF147: events after the run's terminal event (run.terminal-is-last)."""

from wfctl.doctor.base import Check, Explanation, Severity

CHECK = Check(
    code="WF147",
    title="events after the run ended",
    severity=Severity.WARNING,
    upstream_rules=("run.terminal-is-last",),
    remedy="report only: read the late events (wfctl runs show); leftover rows are WF104's",
    explanation=Explanation(
        meaning="Events other than the benign ones sort after the run's first terminal event: "
        "a completion of a step that was not running when the run ended, a hook_created, a "
        "terminal event of another kind, ...",
        why_stuck="The run is over; its log no longer tells its story (the step or hook after "
        "the end belongs to no replay), and whatever wrote it acted on an ended run.",
        cause="beta.29's non-atomic paths: step completions skip the run check; a hook_created "
        "that checked the run before it ended inserts its row and event after the end.",
        repair="None automatic. Benign and not reported: a step started before the end "
        "closing out, a repeated run_cancelled, noop fillers (step_started is WF146).",
    ),
)
