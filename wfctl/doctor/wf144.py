"""WF144: one hook token owned by several live runs (vw#4173)."""

from wfctl.doctor.base import Check, Explanation, Severity

CHECK = Check(
    code="WF144",
    title="hook token owned by several runs",
    severity=Severity.CRITICAL,
    upstream_rules=("hook.token-unique",),
    remedy="report only: choose the run that keeps the token and dispose the others' hooks",
    explanation=Explanation(
        meaning="Two or more pending/running runs each hold a workflow_hooks row with the same "
        "token.",
        why_stuck="A resume by token goes to whichever row the lookup returns: external "
        "payloads reach the wrong run, and the other owners wait forever.",
        cause="beta.29's hook_created reads the hook by token, then inserts the row in a later "
        "autocommit, and workflow_hooks.token has no unique index: concurrent creations of "
        "one token all succeed, none gets hook_conflict (upstream vw#4173: 12 racers, 12 "
        "owners).",
        repair="Never automatic: which run should own the token is the operator's call. "
        "Dispose the losers' hooks (cancel those runs, or let their code dispose them) and "
        "re-run doctor.",
    ),
)
