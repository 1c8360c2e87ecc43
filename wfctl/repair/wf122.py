"""WF122: renumber a marked run that holds wevt_ ids into dense slots (--allow-rewrite)."""

from wfctl.doctor.base import Finding
from wfctl.repair import slotlog
from wfctl.repair.base import Action, Context, Repair


class RenumberLegacyIds(Repair):
    code = "WF122"
    rewrites = True

    def plan(self, ctx: Context, finding: Finding) -> Action:
        return slotlog.plan(ctx, self.code)


REPAIR = RenumberLegacyIds()
