"""What a repair says: its items, and a verdict equal to `wfctl doctor`'s in the same scope.

This module reports; wfctl.repair.runner decides (it imports this, never the reverse). An
apply (and a dry run, which rehearses the apply in a transaction it rolls back) ends with a
detection in the repair's scope: that is the report's `after` and its exit status is the
command's, raised to 2 only by a refused finding doctor still finds. A finding doctor no
longer finds was healed meanwhile by another session (a lost race): its item says so and it
is not a failure, so a cron'd repair that loses a race to another does not page anyone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from wfctl.doctor.base import Finding, Status
from wfctl.errors import ExitStatus

if TYPE_CHECKING:
    from wfctl.doctor import runner as doctor

# Where a signal can land, in order: doctor's read-only pass (first, or after a round that
# wrote something), the dry run's plan, the release of stale queue locks (each its own
# committed transaction), the runs' repair transactions.
INTERRUPTED_DURING = ("detection", "plan", "unlock", "repair")
# The reason of an item whose finding another session healed (a lost race): not a refusal.
HEALED_ELSEWHERE = "healed meanwhile by another session (doctor no longer finds it)"


@dataclass
class Item:
    """One finding and what happened to it."""

    finding: Finding
    outcome: str  # planned | applied | refused | skipped
    reason: str = ""
    actions: list[str] = field(default_factory=list)
    event_ids: list[str] = field(default_factory=list)
    audit_id: int | None = None
    # Refused for a queue lock held this many whole minutes (floored at --unlock-older-than's
    # floor): the report suggests ONE age that covers every such lock (`unlock_hint`).
    locked_minutes: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "code": self.finding.code,
            "run_id": self.finding.run_id,
            "entity_id": self.finding.entity_id,
            "outcome": self.outcome,
            "reason": self.reason,
            "actions": self.actions,
            "event_ids": self.event_ids,
            "audit_id": self.audit_id,
        }


@dataclass
class RepairReport:
    applied: bool
    items: list[Item] = field(default_factory=list)
    before: dict[str, int] = field(default_factory=dict)
    after: dict[str, int] = field(default_factory=dict)
    # Wall time of each run's transaction, lock_run to commit: how long locks were held.
    lock_hold_ms: list[float] = field(default_factory=list)
    # The exit status of doctor in the same scope right after the apply (the dry run: after
    # its rehearsal); `after` holds its counts. None when interrupted before it could run, or
    # for a dry run planned read-only (a standby).
    after_exit: int | None = None
    rounds: int = 0  # detect-and-repair rounds (see runner.converge)
    unfinished: str = ""  # what the apply could not finish within its rounds, in words
    interrupted: bool = False  # stopped by SIGINT/SIGTERM: runs not started were left alone
    # Where the signal landed (INTERRUPTED_DURING); None when not interrupted.
    interrupted_during: str | None = None
    # A dry run that could not rehearse (a read-only standby): planned read-only, one round,
    # without the effects of one repair on the next; says why.
    read_only_plan: str = ""

    @property
    def unlock_hint(self) -> str | None:
        """One `--unlock-older-than` age that covers every lock the items were refused for:
        the youngest lock's (an age per lock left the younger ones held when copied)."""
        held = [i.locked_minutes for i in self.items if i.locked_minutes is not None]
        return f"{min(held)}m" if held else None

    @property
    def ok(self) -> bool:
        """Nothing refused and, after an apply, doctor in the same scope finds nothing."""
        return self.exit_status == ExitStatus.OK

    @property
    def exit_status(self) -> ExitStatus:
        return exit_status(self)

    @property
    def healed_elsewhere(self) -> int:
        """Findings another session healed meanwhile (lost races)."""
        return sum(1 for i in self.items if i.reason == HEALED_ELSEWHERE)

    def as_dict(self) -> dict[str, Any]:
        return {
            "applied": self.applied,
            "ok": self.ok,
            "exit_code": int(self.exit_status),
            "interrupted": self.interrupted,
            "interrupted_during": self.interrupted_during,
            "rounds": self.rounds,
            "unfinished": self.unfinished,
            "unlock_older_than": self.unlock_hint,
            "healed_elsewhere": self.healed_elsewhere,
            "read_only_plan": self.read_only_plan,
            "items": [i.as_dict() for i in self.items],
            "before": self.before,
            "after": self.after,
            "transactions": len(self.lock_hold_ms),
            "lock_hold_ms": _quantiles(self.lock_hold_ms),
        }


def interrupted(report: RepairReport, during: str) -> RepairReport:
    """Mark `report` stopped by a signal `during` a phase (INTERRUPTED_DURING); its items are
    what was committed (or planned) before the signal."""
    report.interrupted, report.interrupted_during = True, during
    return report


def exit_status(report: RepairReport) -> ExitStatus:
    """Doctor's exit status after the apply (the dry run: after its rehearsal), in the same
    scope, at least CRITICAL while a refused finding remains; a read-only plan: CRITICAL when
    it refuses any finding, else OK; INTERRUPTED (130) after a signal."""
    if report.interrupted:
        return ExitStatus.INTERRUPTED  # what the process exits: no verdict after a signal
    refused = any(i.outcome == "refused" for i in report.items)
    if report.after_exit is None:
        return ExitStatus.CRITICAL if refused else ExitStatus.OK
    status = ExitStatus(report.after_exit)
    if refused and status in (ExitStatus.OK, ExitStatus.WARNING):
        return ExitStatus.CRITICAL
    return status


def remaining(detected: doctor.Report) -> dict[str, int]:
    """Doctor's actionable counts by code (in-flight findings are not counted, as doctor)."""
    return {r.check.code: r.count for r in detected.results if r.count}


def counts(findings: list[Finding]) -> dict[str, int]:
    """Actionable findings by code (in-flight ones are not counted, as doctor)."""
    out: dict[str, int] = {}
    for f in findings:
        if not f.in_flight:
            out[f.code] = out.get(f.code, 0) + 1
    return out


def settle(report: RepairReport, detected: doctor.Report) -> RepairReport:
    """Give `report` the verdict of `detected`, doctor in the same scope right after: its
    counts and exit status; a refused item whose finding doctor no longer finds (in flight or
    not) was healed by another session meanwhile, and says so instead."""
    report.after = remaining(detected)
    report.after_exit = int(detected.exit_status)
    still = {_key(f) for f in detected.findings()}
    # Only where doctor looked and listed everything it found: an UNKNOWN check, or one with
    # more findings than samples, proves nothing gone.
    whole = {
        r.check.code
        for r in detected.results
        if r.status not in (Status.UNKNOWN, Status.NOT_APPLICABLE)
        and r.count + r.in_flight <= len(r.samples)
    }
    for item in report.items:
        f = item.finding
        if item.outcome == "refused" and f.code in whole and _key(f) not in still:
            item.outcome, item.reason = "skipped", HEALED_ELSEWHERE
    return report


def _key(finding: Finding) -> tuple[str, str | None, str | None]:
    return finding.code, finding.run_id, finding.entity_id


def _quantiles(values: list[float]) -> dict[str, float]:
    """p50 / p99 / max of the per-run transaction times (nearest rank)."""
    if not values:
        return {}
    ordered = sorted(values)

    def rank(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)

    return {"p50": rank(0.5), "p99": rank(0.99), "max": round(ordered[-1], 3)}
