"""Every repair by code, in the order a run's repairs are applied: creation first (WF121),
then the slot-log rewrites (WF122, WF123: the appends below need a log the writer can number),
then missing creation events, then completions, then the queue (which must see the log
already healed)."""

from __future__ import annotations

from wfctl.repair import (
    wf101,
    wf102,
    wf103,
    wf111,
    wf112,
    wf113,
    wf121,
    wf122,
    wf123,
    wf131,
    wf132,
    wf133,
)
from wfctl.repair.base import Repair

ORDER: tuple[Repair, ...] = (
    wf121.REPAIR,
    wf122.REPAIR,
    wf123.REPAIR,
    wf101.REPAIR,
    wf102.REPAIR,
    wf103.REPAIR,
    wf111.REPAIR,
    wf112.REPAIR,
    wf113.REPAIR,
    wf131.REPAIR,
    wf132.REPAIR,
    wf133.REPAIR,
)
BY_CODE = {r.code: r for r in ORDER}
# Detected but never repaired automatically: the reason is printed instead.
REPORT_ONLY = {
    "WF134": "report only: read the job's last_error; WF133 re-wakes the run",
    "WF141": "report only: see `wfctl doctor --explain WF141`",
    "WF151": "report only: see `wfctl doctor --explain WF151`",
}
