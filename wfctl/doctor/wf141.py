"""WF141: an event log no replay can consume."""

from wfctl.doctor.base import Check, Explanation, Severity

CHECK = Check(
    code="WF141",
    title="unconsumable event log",
    severity=Severity.CRITICAL,
    upstream_rules=(
        "run.created-once",
        "step.terminal-once",
        "wait.completed-once",
        "step.no-restart-after-terminal",
    ),
    remedy="report only; a run failed over one late step_started: `wfctl repair --all --only "
    "WF141 --allow-revive` (dry run first); otherwise `wfctl doctor --explain WF141`",
    explanation=Explanation(
        meaning="The log holds something no replay can consume: a second terminal event for "
        "one step or wait, a step_started after the step's terminal event, or two "
        "run_created events (a hook event after its hook_disposed is WF145). A duplicate (a "
        "second run_created, a second terminal event) is never in flight: it is reported at "
        "doctor's defaults whatever its age, and where wfctl's own repair wrote one of the "
        "copies the sample names it (event id, audit number and time, from wfctl.repair_log).",
        why_stuck="The runtime's consumers finish at an entity's first terminal event; "
        "anything after it is 'Replay could not consume event' on every replay.",
        cause="A repair racing a slow original insert (the reason every wfctl repair re-checks "
        "under lock, waits for the open writes to the events table to end and waits out "
        "--min-age), or a clock-skewed peer re-running a live step "
        "(its step_started minted on a clock ahead sorts after the completion).",
        repair="Reported only by default. One shape is revivable with `wfctl repair --all "
        "--only WF141 --allow-revive` (a dry run first; add --apply --reason): a run the "
        "runtime failed (CORRUPTED_EVENT_LOG or REPLAY_DIVERGENCE) over one late step_started "
        "sorting after its step's completion, with a wevt_-numbered log: the start is "
        "re-minted before the completion, the run_failed removed, the run reopened and woken, "
        "audited. Anything else is not an append: the extra event must be removed (legacy "
        "runs) or the run failed deliberately; in the slot era deleting leaves a hole (WF123). "
        "Manual: stop workers for the run, back up its events, delete the later duplicate in "
        "one transaction, re-run doctor for the run, then wake it (WF133).",
    ),
)
