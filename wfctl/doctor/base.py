"""What a check is, what it finds, and how one result is summarised.

A check is declarative: its code, title, severity, what it needs (slot era, graphile), its
SQL file, a one-line remedy and a longer explanation for `doctor --explain`. The runner
(wfctl.doctor.runner) executes the SQL; a check only overrides `extra_findings` when part of the
answer is computed in Python (WF151's catalog comparison), or `finding` when its SQL selects
candidates whose CBOR payloads Python decodes and compares (WF149, WF152-WF154).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import psycopg

from wfctl.clock import timestamp
from wfctl.severity import Severity as Severity  # re-exported: checks import it from here

if TYPE_CHECKING:
    from wfctl.world.releases import Release

# The 25 rule names of upstream's own consistency checker (vercel/workflow
# workbench/sim-world): a shared vocabulary with the maintainers. A check names the rules it covers
# in `Check.upstream_rules`; docs/checks.md lists the rules no check covers and why.
UPSTREAM_RULES: tuple[str, ...] = (
    "log.monotonic-order",
    "log.unique-event-id",
    "run.created-first",
    "run.created-once",
    "run.terminal-is-last",
    "run.entity-matches-log",
    "run.attributes-match-log",
    "run.output-materialized",
    "run.resources-released",
    "step.created-once",
    "step.started-after-created",
    "step.terminal-after-created",
    "step.terminal-once",
    "step.no-restart-after-terminal",
    "step.entity-has-log",
    "step.entity-matches-log",
    "step.attempt-matches-log",
    "hook.token-unique",
    "hook.received-after-created",
    "hook.dispose-once",
    "hook.no-receive-after-dispose",
    "wait.created-once",
    "wait.completed-after-created",
    "wait.completed-once",
    "wait.resume-at-stable",
)

# The rules no wfctl check covers, and why (docs/checks.md lists them; a test keeps this and
# the checks' `upstream_rules` together equal to UPSTREAM_RULES).
UPSTREAM_GAPS: dict[str, str] = {
    "step.started-after-created": "not reported on purpose: both runtimes accept a "
    "step_started before its step_created (a lazy start writes both; a restored step_created "
    "may sit among the step's events); the harmful order, a completion before the creation, "
    "is WF143",
}


_RANK = {Severity.CRITICAL: 0, Severity.WARNING: 1, Severity.INFO: 2}


class Status(enum.StrEnum):
    OK = "ok"
    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"
    IN_FLIGHT = "in_flight"  # only findings younger than --min-age: a write may be landing
    UNKNOWN = "unknown"  # the check could not run (privilege, timeout, error)
    NOT_APPLICABLE = "not_applicable"  # wrong era, a column the release lacks, no queue


class Needs(enum.StrEnum):
    SLOTS = "slots"  # a slot-era world (workflow_event_slots)
    QUEUE = "queue"  # graphile_worker installed
    RUN_QUEUE = "run_queue"  # wfctl's worker queue (wfctl.run_queue) installed


@dataclass(frozen=True)
class Finding:
    """One row a check found. `in_flight`: younger than --min-age, not yet actionable."""

    code: str
    run_id: str | None
    entity_id: str | None
    observed_at: datetime | None
    in_flight: bool
    detail: str
    # Set only where one check finds things of different weight (WF151: a missing column is
    # critical, a known newer addition info); None means the check's own severity.
    severity: Severity | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "run_id": self.run_id,
            "entity_id": self.entity_id,
            "observed_at": timestamp(self.observed_at),
            "in_flight": self.in_flight,
            "detail": self.detail,
        }
        if self.severity is not None:
            out["severity"] = self.severity.value
        return out


@dataclass(frozen=True)
class Explanation:
    """`doctor --explain`: what it means, why the run is stuck, how it happened, the repair."""

    meaning: str
    why_stuck: str
    cause: str
    repair: str


@dataclass(frozen=True)
class Check:
    code: str
    title: str
    severity: Severity
    remedy: str
    explanation: Explanation
    needs: frozenset[Needs] = frozenset()
    # A SQL variant per id scheme (Release.sql_variant), e.g. {"beta29": "checks/WF121.beta29"}.
    sql_by_era: dict[str, str] = field(default_factory=dict)
    # Columns (`table.column`, schema workflow) its SQL reads that some releases lack: the
    # check is not applicable on those (wfctl.world.releases.OPTIONAL_COLUMNS).
    needs_columns: frozenset[str] = frozenset()
    # Upstream consistency-checker rule names this check covers (each one of UPSTREAM_RULES);
    # empty when upstream has no such rule (queue, catalog and slot-numbering families).
    upstream_rules: tuple[str, ...] = ()
    # Compares the world with what its release promises as a whole (WF151): on a world wfctl
    # does not know whole (World.unknowable) there is nothing to compare with.
    needs_known_world: bool = False

    def __post_init__(self) -> None:
        unknown = [r for r in self.upstream_rules if r not in UPSTREAM_RULES]
        if unknown:
            raise ValueError(f"{self.code}: unknown upstream rule name(s) {unknown}")

    def sql_name(self, era: str) -> str:
        return self.sql_by_era.get(era, f"checks/{self.code}")

    def finding(self, row: tuple[Any, ...]) -> Finding | None:
        """One row of the check's SQL as a finding. By default every row is one; a check whose
        SQL returns candidates with their raw payloads decodes them here and returns None for
        a candidate that holds (both doctor and the repair's re-check under lock call this)."""
        return Finding(self.code, *row)

    def extra_findings(self, conn: psycopg.Connection[Any], release: Release) -> Iterator[Finding]:
        """Findings computed in Python rather than SQL; none by default."""
        return iter(())


@dataclass
class CheckResult:
    """The summary of one check: counts, a bounded sample, and its status."""

    check: Check
    status: Status = Status.OK
    count: int = 0  # actionable findings (older than --min-age)
    in_flight: int = 0
    samples: list[Finding] = field(default_factory=list)
    message: str = ""  # why UNKNOWN / NOT_APPLICABLE
    seconds: float = 0.0
    worst: Severity | None = None  # of the actionable findings
    # The earliest observed_at over ALL actionable findings (not only the samples): how long
    # the oldest one has been waiting, for an age gauge an alert can threshold.
    oldest_observed: datetime | None = None

    def add(self, finding: Finding, limit: int) -> None:
        """Count a finding; keep it as a sample while fewer than `limit` are kept."""
        if finding.in_flight:
            self.in_flight += 1
        else:
            self.count += 1
            severity = finding.severity or self.check.severity
            if self.worst is None or _RANK[severity] < _RANK[self.worst]:
                self.worst = severity
            seen = finding.observed_at
            if seen is not None and (self.oldest_observed is None or seen < self.oldest_observed):
                self.oldest_observed = seen
        if len(self.samples) < limit:
            self.samples.append(finding)

    def settle(self) -> None:
        """Derive the status from the counts (unless already UNKNOWN / NOT_APPLICABLE)."""
        if self.status in (Status.UNKNOWN, Status.NOT_APPLICABLE):
            return
        if self.count:
            self.status = Status((self.worst or self.check.severity).value)
        elif self.in_flight:
            self.status = Status.IN_FLIGHT
        else:
            self.status = Status.OK

    def as_dict(self) -> dict[str, Any]:
        return {
            "code": self.check.code,
            "title": self.check.title,
            "severity": self.check.severity.value,
            "upstream_rules": list(self.check.upstream_rules),
            "status": self.status.value,
            "count": self.count,
            "in_flight": self.in_flight,
            "samples": [f.as_dict() for f in self.samples],
            "remedy": self.check.remedy,
            "message": self.message,
            "seconds": round(self.seconds, 4),
        }
