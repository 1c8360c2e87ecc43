"""WF122: renumber a marked run that holds wevt_ ids into dense slots (--allow-rewrite)."""

from wfctl.repair.slotlog import SlotLogRepair

REPAIR = SlotLogRepair("WF122")
