"""WF103: hook row with no hook_created event (self-healing upstream)."""

from wfctl.doctor.base import Check, Explanation, Severity

CHECK = Check(
    code="WF103",
    title="hook row without hook_created",
    severity=Severity.INFO,
    remedy="usually heals on the next replay; wfctl repair --only WF103 appends hook_created",
    explanation=Explanation(
        meaning="A workflow_hooks row exists without a hook_created event.",
        why_stuck="It usually is not: beta.29 recognises this orphan and completes the write "
        "on the next hook_created for the same hook. A hook resumed inside the window leaves "
        "hook_received before hook_created, and the run still completes.",
        cause="The hook row insert and the event insert are separate autocommits.",
        repair="Append hook_created {token, isWebhook, isSystem, metadata?} from the row, "
        "guarded by the creation unique index.",
    ),
)
