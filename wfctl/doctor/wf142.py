"""WF142: hook_received sorts before its hook_created (the orphan-hook window)."""

from wfctl.doctor.base import Check, Explanation, Severity

CHECK = Check(
    code="WF142",
    title="hook received before created",
    severity=Severity.INFO,
    upstream_rules=("hook.received-after-created",),
    remedy="none needed: both runtimes replay it; informational",
    explanation=Explanation(
        meaning="A hook's first hook_received sorts (id order, the log's order) before its "
        "hook_created.",
        why_stuck="It is not: core beta.39's hook consumer takes payloads before the creation "
        "event, and wfctl's engine delivers them to the hook the code created. The log just "
        "reads out of order (for audits and anything that folds hooks naively).",
        cause="beta.29 writes hook_created as two autocommits (row, then event); a resume "
        "inside that window needs only the row, so its hook_received lands first and the "
        "later hook_created completes the orphan (WF103 while the window is open).",
        repair="None: moving events would rewrite history both runtimes accept.",
    ),
)
