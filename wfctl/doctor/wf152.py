"""WF152: a wait_completed carries a resumeAt that differs from its wait_created's.

The SQL settles the byte-equal pairs; Python decodes the rest and compares milliseconds.
"""

from __future__ import annotations

from typing import Any

from wfctl.doctor.base import Check, Explanation, Finding, Severity
from wfctl.doctor.resume_at import iso, millis, resume_at


class ResumeAtLogCheck(Check):
    """Decodes both payloads; a pair naming the same instant (or no resumeAt) holds."""

    def finding(self, row: tuple[Any, ...]) -> Finding | None:
        run_id, entity_id, observed_at, in_flight, _, created, completed = row
        asked, carried = resume_at(created), resume_at(completed)
        if asked is None or carried is None or millis(asked) == millis(carried):
            return None
        drift = (millis(carried) - millis(asked)) / 1000
        detail = (
            f"wait_completed carries resumeAt {iso(carried)}, wait_created said {iso(asked)} "
            f"({drift:+.3f} s)"
        )
        return Finding(self.code, run_id, entity_id, observed_at, in_flight, detail)


CHECK = ResumeAtLogCheck(
    code="WF152",
    title="wait_completed resumeAt differs from wait_created",
    severity=Severity.CRITICAL,
    upstream_rules=("wait.resume-at-stable",),
    remedy="report only: see `wfctl doctor --explain WF152` for the manual procedure",
    explanation=Explanation(
        meaning="A wait's wait_completed carries a resumeAt that is not its wait_created's "
        "(compared in whole milliseconds). A wait_completed without resumeAt is fine.",
        why_stuck="Core beta.39's sleep consumer takes the deadline from wait_created and "
        "fails the replay with ReplayDivergenceError when wait_completed names another "
        "instant, even 1 ms: the next replay fails the run (error code CORRUPTED_EVENT_LOG).",
        cause="The runtime copies resumeAt from wait_created, so the package never writes "
        "this; a hand-written or tool-written wait_completed does, when it took the wait "
        "row's resume_at (which can differ, WF153) or recomputed the deadline.",
        repair="Not an append: the event must be rewritten. Manual: stop workers for the run, "
        "back up its events, re-encode the wait_completed payload with wait_created's exact "
        "resumeAt (or drop the key: the runtime accepts a wait_completed without it), re-run "
        "doctor, wake the run (WF133).",
    ),
)
