"""WF123: make a marked run's slot numbering dense: noop fillers in holes at spec >= 7, else
renumber; a foreign event at slot 1 is a WF121 finding too (run_created is rebuilt there)."""

from wfctl.doctor.base import Finding
from wfctl.repair import slotlog
from wfctl.repair.base import Action, Context, Repair


class RepairSlotNumbering(Repair):
    code = "WF123"
    rewrites = True

    def plan(self, ctx: Context, finding: Finding) -> Action:
        return slotlog.plan(ctx, self.code)


REPAIR = RepairSlotNumbering()
