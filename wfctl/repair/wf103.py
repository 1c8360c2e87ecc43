"""WF103: append the missing hook_created from the hook row."""

from typing import Any

from wfctl.doctor.base import Finding
from wfctl.repair.base import Action, Context, NewEvent, Repair
from wfctl.world import codec


class AppendHookCreated(Repair):
    code = "WF103"

    def plan(self, ctx: Context, finding: Finding) -> Action:
        assert finding.entity_id
        hook = ctx.row("hook", hook_id=finding.entity_id)
        data: dict[str, Any] = {"token": hook["token"]}
        if hook["metadata_cbor"] is not None:
            data["metadata"] = codec.decode(hook["metadata_cbor"])
        if hook["is_webhook"] is not None:
            data["isWebhook"] = hook["is_webhook"]
        if hook["is_system"]:
            data["isSystem"] = True
        spec = hook["spec_version"] if hook["spec_version"] is not None else ctx.run_spec_version()
        return Action(events=[NewEvent("hook_created", finding.entity_id, data, spec)])


REPAIR = AppendHookCreated()
