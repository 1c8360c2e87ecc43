"""WF123: make a marked run's slot numbering dense: noop fillers in holes at spec >= 7, else
renumber; a foreign event at slot 1 is a WF121 finding too (run_created is rebuilt there)."""

from wfctl.repair.slotlog import SlotLogRepair

REPAIR = SlotLogRepair("WF123")
