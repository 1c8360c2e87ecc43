"""What an apply says when it is done: the same as `wfctl doctor` in the same scope right after.

An apply is one or more rounds. Each round repairs what doctor found and not yet attempted;
then doctor runs again in the repair's scope (its --only, --run, --all, --min-age). A step
can uncover findings the previous detection could not see: a released dead worker's lock
turns its run's duplicate recovery jobs into a WF132 (the check skips locked jobs), a healed
wait can leave a run with no wake-up (WF133). So while a round applied something and the new
detection holds findings no round attempted, another round runs, up to MAX_ROUNDS; what is
then left is said in `unfinished`. The last detection is the report's `after` (every finding
still there, report-only, refused, skipped and in need of another apply alike) and its exit
status is the apply's, raised to 2 when anything was refused: an apply never says done while
doctor would say otherwise.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import psycopg

from wfctl.errors import ExitStatus

if TYPE_CHECKING:
    from wfctl.doctor import runner as doctor
    from wfctl.repair import wf135
    from wfctl.repair.runner import RepairOptions, RepairReport
    from wfctl.world.model import World

# Rounds of one apply. Each round after the first needs a finding no earlier round saw that a
# repair of the previous round uncovered; chains are short (release -> WF132, heal -> WF133).
MAX_ROUNDS = 4


def exit_status(report: RepairReport) -> ExitStatus:
    """Doctor's exit status after the apply (in the same scope), at least CRITICAL when a
    finding was refused; a dry run: CRITICAL when the plan refuses any finding, else OK;
    INTERRUPTED (130) after a signal, apply or dry run."""
    if report.interrupted:
        return ExitStatus.INTERRUPTED  # what the process exits: no verdict after a signal
    refused = any(i.outcome == "refused" for i in report.items)
    if not report.applied:
        return ExitStatus.CRITICAL if refused else ExitStatus.OK
    status = ExitStatus(report.after_exit if report.after_exit is not None else 0)
    if refused and status in (ExitStatus.OK, ExitStatus.WARNING):
        return ExitStatus.CRITICAL
    return status


def remaining(detected: doctor.Report) -> dict[str, int]:
    """Doctor's actionable counts by code (in-flight findings are not counted, as doctor)."""
    return {r.check.code: r.count for r in detected.results if r.count}


def converge(
    conn: psycopg.Connection[Any],
    world: World,
    options: RepairOptions,
    *,
    reason: str,
    connect: Callable[[], psycopg.Connection[Any]] | None,
    unlock: wf135.Unlock | None,
    one_round: Callable[..., list[Any]],
    stop: threading.Event | None = None,
) -> RepairReport:
    """Apply in rounds until doctor finds nothing new to attempt (see the module docstring).

    A signal during a detection (the first, or one after a round) ends the apply there: the
    report lists what earlier rounds wrote, `interrupted_during` is "detection", and no
    verdict is given; one during a round is handled by the round (`one_round`)."""
    from wfctl.repair.runner import RepairReport, interrupted

    report = RepairReport(applied=True)
    try:
        return _rounds(conn, world, options, report, reason, connect, unlock, one_round, stop)
    except KeyboardInterrupt:  # psycopg cancelled doctor's query; its read-only transaction
        return interrupted(report, "detection")  # rolled back: nothing of this pass written


def _rounds(
    conn: psycopg.Connection[Any],
    world: World,
    options: RepairOptions,
    report: RepairReport,
    reason: str,
    connect: Callable[[], psycopg.Connection[Any]] | None,
    unlock: wf135.Unlock | None,
    one_round: Callable[..., list[Any]],
    stop: threading.Event | None,
) -> RepairReport:
    from wfctl.repair.runner import diagnose

    stop = stop or threading.Event()
    attempted: set[tuple[str, str | None, str | None]] = set()
    detected = diagnose(conn, world, options)
    while True:
        report.rounds += 1
        items = one_round(
            conn, world, options, report, detected, apply=True, reason=reason,
            connect=connect, unlock=unlock, attempted=attempted, stop=stop,
        )  # fmt: skip
        if report.interrupted:
            return report  # what was written is in the items; no verdict after a signal
        if not any(i.outcome == "applied" for i in items):
            break  # nothing written: the detection this round acted on is still doctor's
        detected = diagnose(conn, world, options)
        new = _unattempted(detected, attempted)
        if not new:
            break
        if report.rounds == MAX_ROUNDS:
            report.unfinished = (
                f"{len(new)} finding(s) uncovered by the last of {MAX_ROUNDS} rounds were not "
                f"attempted ({', '.join(sorted({code for code, _, _ in new}))}): run the apply "
                "again"
            )
            break
    report.after = remaining(detected)
    report.after_exit = int(detected.exit_status)
    return report


def _unattempted(
    detected: doctor.Report, attempted: set[tuple[str, str | None, str | None]]
) -> list[tuple[str, str | None, str | None]]:
    """Actionable findings (not in flight) no round has attempted yet."""
    from wfctl.repair.runner import ordered

    return [
        key
        for f in ordered(detected)
        if not f.in_flight and (key := (f.code, f.run_id, f.entity_id)) not in attempted
    ]
