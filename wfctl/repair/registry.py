"""Every repair by code, in the order a run's repairs are applied: creation first (WF121),
then the slot-log rewrites (WF122, WF123: the appends below need a log the writer can number),
then missing creation events, then completions, then rows rebuilt from the log (WF149,
WF153, WF154; WF131 reads the wait row), then the queue (which must see the log already healed)."""

from __future__ import annotations

from wfctl.repair import (
    wf101,
    wf102,
    wf103,
    wf104,
    wf111,
    wf112,
    wf113,
    wf121,
    wf122,
    wf123,
    wf131,
    wf132,
    wf133,
    wf136,
    wf141,
    wf149,
    wf153,
    wf154,
)
from wfctl.repair.base import Repair

ORDER: tuple[Repair, ...] = (
    wf121.REPAIR,
    wf122.REPAIR,
    wf123.REPAIR,
    wf101.REPAIR,
    wf102.REPAIR,
    wf103.REPAIR,
    wf104.REPAIR,
    wf111.REPAIR,
    wf112.REPAIR,
    wf113.REPAIR,
    wf149.REPAIR,
    wf153.REPAIR,
    wf154.REPAIR,
    wf131.REPAIR,
    wf132.REPAIR,
    wf133.REPAIR,
    wf136.REPAIR,
)
BY_CODE = {r.code: r for r in ORDER}
# Detected but never repaired automatically: the reason is printed instead.
REPORT_ONLY = {
    "WF134": "report only: read the job's last_error; WF133 re-wakes the run",
    "WF135": "a worker's lock: once the holder is known gone, --unlock-older-than AGE "
    "(see the dry run) releases it",
    "WF141": "report only: a run failed over one late step_started is revivable with "
    "--allow-revive (see `wfctl doctor --explain WF141`)",
    "WF142": "informational: both runtimes replay a hook received before its creation",
    "WF143": "report only: see `wfctl doctor --explain WF143`",
    "WF144": "report only: which run keeps the token is the operator's choice (--explain WF144)",
    "WF145": "report only: see `wfctl doctor --explain WF145`",
    "WF146": "report only: the step ran again; audit its side effects (--explain WF146)",
    "WF147": "report only: see `wfctl doctor --explain WF147`",
    "WF148": "report only: which of row and log is right cannot be known (--explain WF148)",
    "WF151": "report only: see `wfctl doctor --explain WF151`",
    "WF152": "report only: the wait_completed must be rewritten (--explain WF152)",
}
# Rewrites of history an operator opts into with --allow-revive (otherwise report only).
REVIVALS: dict[str, Repair] = {"WF141": wf141.REPAIR}


def repair_for(code: str, allow_revive: bool = False) -> Repair | None:
    """The repair that handles `code` (a revival only when allowed), or None."""
    if allow_revive and code in REVIVALS:
        return REVIVALS[code]
    return BY_CODE.get(code)
