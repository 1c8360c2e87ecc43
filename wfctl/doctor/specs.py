"""Spec versions (`runs.spec_version`, `events.spec_version`) and what doctor checks for each.

A world holds runs of many spec versions at once (each run keeps the version it was created
with), and several checks mean something different, or nothing, depending on it. The SQL of
each check applies these rules per run; this table states them once for `wfctl info`, for
`repair` (which refuses to heal rows on a log-authoritative run) and for the docs. Versions and
their meaning as the World contract defines them (`@workflow/world` spec-version constants,
read in the upstream source; only 5.0.0-beta.29, spec 5, is installable here).
"""

from __future__ import annotations

from dataclasses import dataclass

EVENT_SOURCING = 2  # below: pre-event-sourcing runs, no run_created / terminal events
SLOT_IDENTITY = 6  # the runtime reads the run's event ids as slots
SEALED_LOG = 7  # a position whose writer died holds a `noop` filler
LOG_AUTHORITATIVE = 9  # single orchestrator: step/wait state is folded from the log

# Row-versus-event checks: a row says something happened and the log does not. From spec 9
# on the package keeps no step or wait state it checks writes against, so a row without its
# event is not a wedge there; doctor skips these runs and repair refuses to "heal" them.
ROW_CHECKS = frozenset({"WF101", "WF102", "WF103", "WF111", "WF112", "WF113"})
# Checks whose SQL requires an event-sourced run (spec >= 2).
EVENT_SOURCED_CHECKS = frozenset({"WF113", "WF121"})

NAMES = {
    1: "legacy (pre-event-sourcing)",
    2: "event sourcing",
    3: "CBOR queue transport",
    4: "attributes",
    5: "compressed payloads",
    6: "slot event ids",
    7: "sealed log (noop fillers)",
    8: "involuntary hook disposal",
    9: "single orchestrator (log authoritative)",
}


@dataclass(frozen=True)
class SpecProfile:
    """What doctor does with runs of one spec version."""

    spec: int | None
    name: str
    skipped: tuple[str, ...]  # check codes that never report these runs
    notes: tuple[str, ...]


def parse(text: str | int | None) -> int | None:
    """A run's spec_version (varchar in the runs table) as an int; None when not numeric."""
    if isinstance(text, int):
        return text
    return int(text) if isinstance(text, str) and text.isdigit() else None


def log_authoritative(spec: int | None) -> bool:
    return spec is not None and spec >= LOG_AUTHORITATIVE


def profile(spec: int | None, codes: list[str]) -> SpecProfile:
    """The checks (of `codes`) that skip runs of `spec`, and what else changes for them."""
    skipped: set[str] = set()
    notes: list[str] = []
    if spec is None or spec < EVENT_SOURCING:
        skipped |= EVENT_SOURCED_CHECKS
        notes.append("no run_created / terminal run events expected")
    if spec is not None and spec >= SLOT_IDENTITY:
        notes.append("events must be slot-numbered (evnt_), dense, run_created at slot 1")
    if spec is not None and spec >= SEALED_LOG:
        notes.append("a noop event is a filler that holds its position, not a hole")
    if log_authoritative(spec):
        skipped |= ROW_CHECKS
        notes.append("the log is authoritative: row-vs-event checks skipped, rows never healed")
    name = NAMES.get(spec or 1, f"newer than wfctl knows ({spec})")
    if spec is not None and spec > max(NAMES):
        notes.append("newer than this wfctl: checked as spec 9")
    return SpecProfile(spec, name, tuple(c for c in codes if c in skipped), tuple(notes))
