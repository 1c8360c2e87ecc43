"""WF149: set a run's attributes to the fold of its log.

The log is the side that is right: replay reads the attr_set events, and a redelivered
workflow write re-applies its change to the row and journals it, so the row is only ever a
materialisation of the log. No event is written (appending an attr_set for a change the
row holds would invent a write the workflow never journaled, and a replay would add its own).
"""

import json

from wfctl.doctor.base import Finding
from wfctl.doctor.wf149 import differences, fold
from wfctl.repair.base import Action, Context, Refused, Repair


class SetAttributesFromLog(Repair):
    code = "WF149"

    def plan(self, ctx: Context, finding: Finding) -> Action:
        events = ctx.fetch("repair/attribute_log")
        log = fold([e["type"] for e in events], [e["payload_cbor"] for e in events])
        row = ctx.run["attributes"] or {}
        diff = differences(row, log)
        if not diff:
            raise Refused("state moved: the attributes match the log now")
        change = (
            "repair/set_run_attributes",
            {"attributes": json.dumps(log, sort_keys=True), "expected": json.dumps(row)},
        )
        return Action(row_changes=[change], notes=[f"was: {d}" for d in diff])


REPAIR = SetAttributesFromLog()
