"""WF145: a hook event after the hook's hook_disposed (vw#3645, #2781)."""

from wfctl.doctor.base import Check, Explanation, Severity

CHECK = Check(
    code="WF145",
    title="hook event after disposal",
    severity=Severity.CRITICAL,
    upstream_rules=("hook.no-receive-after-dispose", "hook.dispose-once"),
    remedy="report only: see `wfctl doctor --explain WF145` for the manual procedure",
    explanation=Explanation(
        meaning="A hook_received sorts after the same hook's hook_disposed, or one hook has "
        "more than one hook_disposed.",
        why_stuck="Core beta.39's hook consumer finishes at hook_disposed: the later event is "
        "offered to no consumer, 'Replay could not consume event', on every replay.",
        cause="beta.29's hook_disposed is two autocommits (DELETE the row, then the event) "
        "while hook_received validates the row and then waits for the run row lock: a "
        "receipt racing the disposal is journaled after it (fixed upstream in beta.35).",
        repair="Not an append: the extra event must be removed (legacy runs; in the slot era "
        "deleting leaves a hole, WF123). Manual: stop workers for the run, back up its "
        "events, delete the late hook_received / second hook_disposed in one transaction, "
        "re-run doctor, wake the run (WF133).",
    ),
)
