"""Every repair by code, in the order a run's repairs are applied: creation first (WF121),
then missing creation events, then completions, then the queue (which must see the log
already healed)."""

from __future__ import annotations

from wfctl.repair import wf101, wf102, wf103, wf111, wf112, wf113, wf121, wf131, wf132, wf133
from wfctl.repair.base import Repair

ORDER: tuple[Repair, ...] = (
    wf121.REPAIR,
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
    "WF122": "renumbering a slot run (--allow-rewrite) is not available in this version",
    "WF123": "renumbering a slot run (--allow-rewrite) is not available in this version",
    "WF134": "report only: read the job's last_error; WF133 re-wakes the run",
    "WF135": "a worker's lock: once the holder is known gone, --unlock-older-than AGE "
    "(see the dry run) releases it",
    "WF141": "report only: see `wfctl doctor --explain WF141`",
    "WF151": "report only: see `wfctl doctor --explain WF151`",
}
