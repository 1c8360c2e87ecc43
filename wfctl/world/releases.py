"""The release lines of `@workflow/world-postgres` wfctl knows, one description each.

Why one place: a world is a release of the package, and what is right on it (its catalog, its
columns, its queue tasks, which of its writes are transactional, what its replay reads in each
event) differs by release. Checks, repairs and commands ask the world's `Release` instead of
comparing era strings. A new release line is one new description here, its expected catalog in
`wfctl/data/` and its corpus world.

Facts checked against the installed packages (npm, pinned): `@workflow/world-postgres` 4.1.1
(`dist/storage.js`, `dist/queue.js`, `src/drizzle/migrations`) with `@workflow/core` 4.2.4
(`dist/step.js`, `dist/workflow/*.js`), 4.3.7 with `@workflow/core` 4.8.9, and 5.0.0-beta.29.
The 4.x catalogs (`catalog_4.1.json`, `catalog_4.3.json`) were captured from worlds made by
each package's own setup (4.1.1 `workflow-postgres-setup`, 4.3.7 `bootstrap`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from wfctl.doctor.base import Severity
from wfctl.world import drizzle

if TYPE_CHECKING:
    from wfctl.doctor.base import Check

# Entity writes of the package, by the event they write (run_created, step_completed, ...).
ALL_WRITES = frozenset(
    {
        "run_created",
        "run_started",
        "run_completed",
        "run_failed",
        "run_cancelled",
        "step_created",
        "step_started",
        "step_completed",
        "step_failed",
        "step_retrying",
        "wait_created",
        "wait_completed",
        "hook_created",
        "hook_received",
        "hook_disposed",
    }
)
# Columns that only some releases have, as `table.column` (tables in schema `workflow`).
OPTIONAL_COLUMNS = frozenset(
    {
        "workflow_runs.error_code",
        "workflow_runs.attributes",
        "workflow_runs.encryption_public_key",
        "workflow_hooks.is_system",
        "workflow_hooks.resume_context",
    }
)


@dataclass(frozen=True)
class SeverityRule:
    """What the release's runtime does next with one kind of finding, and so its weight."""

    severity: Severity
    why: str


@dataclass(frozen=True)
class Release:
    """One release line of the package, as wfctl needs to know it."""

    key: str  # "4.1", "4.3", "beta29", "slot": the world's `era` in reports
    package: str  # the versions it covers, for humans: "4.3.x"
    checked: str  # the exact versions these facts were read from
    journal: tuple[str, ...]  # drizzle migration tags a world of this release records
    catalog: str  # wfctl/data/catalog_<catalog>.json
    spec_version: int | None  # what its runs and events carry
    lacks: frozenset[str] = frozenset()  # OPTIONAL_COLUMNS it does not have
    task_suffixes: tuple[str, ...] = ("flows",)  # graphile tasks: <job prefix><suffix>
    job_keys: str = ""  # how it keys flow jobs (docs)
    max_attempts: int = 3  # of the jobs it enqueues
    # Writes whose entity row and event commit in one transaction: a crash cannot split them.
    # None: not described (its findings keep the checks' own severities).
    transactional: frozenset[str] | None = None
    # Keys its replay reads in each event's payload (a restored event carries these, no more);
    # an event absent here is written with every key wfctl knows (the beta.29 shapes).
    payload_keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Per doctor code: the weight of a finding from what this runtime does next.
    severities: Mapping[str, SeverityRule] = field(default_factory=dict)
    sql_variant: str = "beta29"  # which check SQL variant fits (wevt_ ids vs slots)
    next_release: str | None = None  # what `npm install` of the next line would migrate to
    refuses: Mapping[str, str] = field(default_factory=dict)  # action -> why it cannot
    # The package's own runs are woken by a flows job after a delivery (its resumeHook()
    # enqueues one): a delivery wfctl writes for such a run (hooks resume) enqueues it too.
    # Set where the job format was checked against the package (4.1.1, 4.3.7, beta.29).
    wakes_package_runs: bool = False
    # Checks that mean nothing on this release, with why (reported not_applicable).
    not_applicable: Mapping[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """Short name in one-line summaries: `4.3.x`, `beta29`, `slot`."""
        return self.package if self.key[0].isdigit() else self.key

    @property
    def name(self) -> str:
        return f"@workflow/world-postgres {self.package}"

    @property
    def kind(self) -> str:
        return f"{self.name} world"

    def has_column(self, qualified: str) -> bool:
        """`table.column`: False only for an optional column this release lacks."""
        return qualified not in self.lacks

    def tasks(self, job_prefix: str) -> list[str]:
        """The graphile task identifiers its workers run."""
        return [f"{job_prefix}{suffix}" for suffix in self.task_suffixes]

    def shape(self, event_type: str, data: dict[str, object] | None) -> dict[str, object] | None:
        """`data` cut down to what this release's replay reads for `event_type`."""
        keys = self.payload_keys.get(event_type)
        if keys is None or data is None:
            return data
        kept = {k: v for k, v in data.items() if k in keys}
        return kept or None

    def severity(self, code: str) -> SeverityRule | None:
        return self.severities.get(code)

    def as_dict(self) -> dict[str, object]:
        return {
            "release": self.key,
            "package": self.name,
            "checked_against": self.checked,
            "spec_version": self.spec_version,
            "journal": list(self.journal),
            "lacks_columns": sorted(self.lacks),
            "tasks": list(self.task_suffixes),
            "transactional_writes": (
                None if self.transactional is None else sorted(self.transactional)
            ),
        }


_BETA29_TAGS = tuple(m.tag for m in drizzle.BETA29)
_TAGS_41 = _BETA29_TAGS[:10]  # 0000-0009
_TAGS_43 = (*_BETA29_TAGS[:11], "0015_move_enums_to_workflow_schema")  # 0000-0010 + 0015

_4X_LACKS = OPTIONAL_COLUMNS
_4X_NOT_APPLICABLE = {
    "WF131": "4.x re-enqueues a sleeping run's wake-up as a msg_<ULID> job naming no wait, "
    "so no continuation chain can be told apart (a looping completed wait is WF112)",
}
_4X_REFUSES = {
    "new runs": "wfctl's runtime (run, worker, runs fork) writes spec-5 runs with the beta.29 "
    "columns (attributes, error_code, encryption_public_key); a 4.x world has none of them, and "
    "its spec-3 runs are driven by the 4.x package itself",
    "migrate --online": "the slot-era key swap starts from a beta.29 world; bring this one to "
    "beta.29 with the package's own migrator first (the upgrade view of `wfctl info` shows "
    "what it would skip)",
}
_4X_KEYS = "flow jobs keyed msg_<ULID>; steps run as their own jobs on <prefix>steps"
_HOOK_HEALS = SeverityRule(
    Severity.INFO, "the next replay writes hook_created itself (4.3.x heals orphan hooks)"
)

R41 = Release(
    key="4.1",
    package="4.1.x",
    checked="4.1.1 (with @workflow/core 4.2.4)",
    journal=_TAGS_41,
    catalog="4.1",
    spec_version=3,
    lacks=_4X_LACKS,
    task_suffixes=("flows", "steps"),
    job_keys=_4X_KEYS,
    transactional=frozenset(),  # dist/storage.js: no transaction at all
    payload_keys={
        "step_created": ("stepName", "input"),
        "step_started": (),
        "step_completed": ("result",),
        "step_failed": ("error", "stack"),
        "step_retrying": ("error", "stack"),
        "wait_created": ("resumeAt",),
        "wait_completed": (),
        "hook_created": ("token", "metadata", "isWebhook"),
        "hook_received": ("payload",),
        "run_created": ("deploymentId", "workflowName", "input", "executionContext"),
        "run_completed": ("output",),
        "run_failed": ("error",),
    },
    severities={
        "WF101": SeverityRule(
            Severity.WARNING,
            "4.1.x re-uses the step row on the next start and writes step_created itself",
        ),
        "WF103": SeverityRule(
            Severity.CRITICAL,
            "4.1.x replay meets its own token: hook_conflict, then run_failed",
        ),
        "WF121": SeverityRule(
            Severity.WARNING,
            "4.1.x re-enqueues active runs at every start and runs this one to completion "
            "(its log then starts at run_started)",
        ),
    },
    next_release="4.3",
    refuses=_4X_REFUSES,
    not_applicable=_4X_NOT_APPLICABLE,
    wakes_package_runs=True,
)

R43 = Release(
    key="4.3",
    package="4.3.x",
    checked="4.3.7 (with @workflow/core 4.8.9)",
    journal=_TAGS_43,
    catalog="4.3",
    spec_version=3,
    lacks=_4X_LACKS,
    task_suffixes=("flows", "steps"),
    job_keys=_4X_KEYS,
    transactional=frozenset(
        {"run_created", "step_started", "step_created", "hook_disposed", "hook_received"}
    ),
    payload_keys={
        "step_created": ("stepName", "input"),
        "step_started": ("stepName",),
        "step_completed": ("stepName", "result"),
        "step_failed": ("stepName", "error", "stack"),
        "step_retrying": ("stepName", "error", "stack"),
        "wait_created": ("resumeAt",),
        "wait_completed": ("resumeAt",),
        "hook_created": ("token", "metadata", "isWebhook"),
        "hook_received": ("payload", "token"),
        "run_created": ("deploymentId", "workflowName", "input", "executionContext"),
        "run_completed": ("output",),
        "run_failed": ("error",),
    },
    severities={"WF103": _HOOK_HEALS},
    next_release="beta29",
    refuses=_4X_REFUSES,
    not_applicable=_4X_NOT_APPLICABLE,
    wakes_package_runs=True,
)

# 5.x step outcomes: what wfctl has always written there (no separate `stack`); every other
# event keeps every key a repair builds.
_5X_STEP_OUTCOMES = {
    "step_failed": ("stepName", "error"),
    "step_retrying": ("stepName", "error", "retryAfter"),
}

BETA29 = Release(
    key="beta29",
    package="5.0.0-beta.29",
    checked="5.0.0-beta.29",
    journal=_BETA29_TAGS,
    catalog="beta29",
    spec_version=5,
    payload_keys=_5X_STEP_OUTCOMES,
    job_keys="flow jobs keyed msg_<ULID>, wait_<id>:hop-N, step_<id>:backstop:<ms>",
    # dist/storage.js: 3 transaction sites (step_started plain and lazy, hook_received).
    transactional=frozenset({"step_started", "hook_received"}),
    wakes_package_runs=True,
    next_release=None,
)

SLOT = Release(
    key="slot",
    package="slot era (5.0.0-beta.32+)",
    checked="upstream source (no slot-era release on the registry)",
    journal=_BETA29_TAGS,  # plus 0018/0019, not recorded by wfctl (drizzle.py)
    catalog="slot",
    spec_version=None,
    job_keys="flow jobs keyed msg_<ULID>, wait_<id>:hop-N, step_<id>:backstop:<ms>",
    max_attempts=49,
    transactional=ALL_WRITES,
    payload_keys=_5X_STEP_OUTCOMES,
    sql_variant="slot",
)

RELEASES: dict[str, Release] = {r.key: r for r in (R41, R43, BETA29, SLOT)}


def get(key: str) -> Release | None:
    """The description of a world's era/release key, or None (older, half-slot, unknown)."""
    return RELEASES.get(key)


def by_journal(recorded: list[str]) -> Release | None:
    """A 4.x release recognised by exactly the drizzle rows its setup records."""
    for release in (R41, R43):
        if tuple(recorded) == release.journal:
            return release
    return None


@dataclass(frozen=True)
class Upgrade:
    """What the next release's own migrator would do to a world of this one."""

    to: Release
    applies: tuple[str, ...]  # migrations it runs
    skips: tuple[str, ...]  # migrations in its journal it never runs (`when` not newer)

    def lines(self) -> list[str]:
        out = [f"{self.to.name}: its migrator applies {', '.join(self.applies) or 'nothing'}"]
        if self.skips:
            out.append(
                f"it skips {', '.join(self.skips)} (their journal `when` is older than this "
                "world's newest row): the world is left without what they add"
            )
        return out

    def as_dict(self) -> dict[str, object]:
        return {"to": self.to.key, "applies": list(self.applies), "skips": list(self.skips)}


def upgrade(recorded: list[str], release: Release) -> Upgrade | None:
    """drizzle applies a journal entry iff its `when` exceeds the newest recorded row's:
    so a 4.3.x world (newest 0015) upgraded to beta.29 gets 0016-0017 and never 0011-0014."""
    if release.next_release is None:
        return None
    target = RELEASES[release.next_release]
    by_tag = {m.tag: m for m in drizzle.BETA29}
    newest = max((by_tag[t].when for t in recorded if t in by_tag), default=0)
    pending = [t for t in target.journal if t not in recorded]
    applies = tuple(t for t in pending if by_tag[t].when > newest)
    skips = tuple(t for t in pending if by_tag[t].when <= newest)
    return Upgrade(target, applies, skips)


@functools.cache
def _later_objects(key: str) -> dict[tuple[str, str], str]:
    from wfctl.world import catalog  # data files, read once

    release = RELEASES[key]
    own = catalog.expected(release.catalog)
    out: dict[tuple[str, str], str] = {}
    later = release.next_release
    while later is not None:
        newer = RELEASES[later]
        for d in catalog.differences(own, catalog.expected(newer.catalog)):
            if d.change == "unexpected":
                out.setdefault((d.kind, d.name), newer.name)
        later = newer.next_release
    return out


def later_objects(release: Release) -> dict[tuple[str, str], str]:
    """(kind, name) of what later releases' migrations add to this release's catalog, with
    the release that adds it: on a world upgraded by hand these are not someone else's."""
    return _later_objects(release.key)


def check_support(check: Check, release: Release) -> tuple[bool, str]:
    """Whether `check` applies on `release`, and a short phrase saying how (its severity
    there and why, or why not): for docs/checks.md and docs/releases.md."""
    from wfctl.doctor.base import Needs

    if Needs.SLOTS in check.needs and release.key != "slot":
        return False, "not applicable (slot-era worlds only)"
    if check.code in release.not_applicable:
        return False, f"not applicable: {release.not_applicable[check.code]}"
    lacking = sorted(c for c in check.needs_columns if not release.has_column(c))
    if lacking:
        return False, f"not applicable (no {', '.join(lacking)})"
    rule = release.severity(check.code)
    if rule is not None:
        return True, f"{rule.severity.value}: {rule.why}"
    return True, check.severity.value
