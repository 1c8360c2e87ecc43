"""The releases of `@workflow/world-postgres` as a graph, and what wfctl knows of each.

Why one place: a world is made and kept by some release of the package, and what is right on
it depends on which. Two kinds of facts, kept apart:
- what the database holds follows from the drizzle migrations it records (the graph's edges,
  `wfctl.world.drizzle`): the catalog, which optional columns exist, where the enums live.
  A release is a named set of migrations (its journal, `PACKAGES`, generated from the
  published packages into `wfctl/data/packages.json`);
- what lives in the package and its `@workflow/core`, not in the database (which writes commit
  together, what replay reads in each event, what the runtime does next with a torn write,
  queue tasks, spec version) hangs on package VERSION RANGES (`RUNTIMES`), read from the
  published sources of each version.

A world is recognised by its recorded drizzle rows: the versions whose journal it records
exactly are its candidates ("4.1.4, 4.1.5 or 4.2.0: journal 0000-0010"). Where they differ in
runtime facts, the world's `Release` takes the worst case among them and says so; the operator
pins the exact version (`--package DIR` or `WFCTL_PACKAGE_VERSION`, see `pin_version`).
Checks, repairs and commands ask the world's `Release` instead of comparing version strings.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wfctl.errors import UsageError
from wfctl.severity import Severity
from wfctl.world import catalog, drizzle
from wfctl.world.catalog import Catalog

PACKAGE_NAME = "@workflow/world-postgres"
PACKAGES_DATA = Path(__file__).resolve().parent.parent / "data" / "packages.json"

# Entity writes of the package, by the event they write (step_created, run_completed, ...),
# entity by entity in their lifecycle's order (the order docs/releases.md lists them in).
WRITES = (
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
    "run_created",
    "run_started",
    "run_completed",
    "run_failed",
    "run_cancelled",
)
ALL_WRITES = frozenset(WRITES)
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
_RANK = {Severity.CRITICAL: 0, Severity.WARNING: 1, Severity.INFO: 2}


# -- versions ----------------------------------------------------------------------------


def version_key(version: str) -> tuple[int, int, int, int, tuple[tuple[int, int | str], ...]]:
    """Semver order: `4.1.0-beta.46` < `4.1.1` < `5.0.0-beta.27` < `5.0.0-beta.29`; numeric
    pre-release identifiers as numbers, and before alphanumeric ones."""
    core, _, pre = version.partition("-")
    parts = [int(p) for p in [*core.split("."), "0", "0"][:3]]
    tail = tuple((0, int(p)) if p.isdigit() else (1, p) for p in pre.split(".")) if pre else ()
    return parts[0], parts[1], parts[2], 0 if pre else 1, tail


_VERSION = re.compile(r"^\d+\.\d+\.\d+(-[0-9A-Za-z.]+)?$")


def is_version(text: str) -> bool:
    return bool(_VERSION.match(text))


@dataclass(frozen=True)
class Package:
    """One published version, as its tarball says (generated: wfctl/data/packages.json)."""

    version: str
    journal: tuple[str, ...]
    bins: tuple[str, ...]
    queue: str  # "graphile-worker" or "pg-boss"
    tasks: tuple[str, ...]  # task suffixes in dist/queue.js: <prefix>flows, <prefix>steps
    transaction_sites: int  # `.transaction(` in dist/storage.js
    world: str | None  # the @workflow/world it depends on


@functools.cache
def _packages() -> dict[str, Package]:
    raw = json.loads(PACKAGES_DATA.read_text(encoding="utf-8"))["versions"]
    out = {
        v: Package(
            v,
            tuple(f["journal"]),
            tuple(f["bins"]),
            f["queue"],
            tuple(f["tasks"]),
            f["transaction_sites"],
            f["world"],
        )
        for v, f in raw.items()
    }
    return dict(sorted(out.items(), key=lambda kv: version_key(kv[0])))


PACKAGES: dict[str, Package] = _packages()
NEWEST = next(reversed(PACKAGES))

# The `@workflow/core` (and `workflow`) its users got: no world-postgres release names it, so
# the pairing comes from the dependencies each release declares (`npm view`), checked 2026-12.
CORE: dict[str, str] = {
    "4.1.1": "4.2.4",
    "4.1.4": "4.3.1",
    "4.1.5": "4.4.0",
    "4.2.0": "4.5.0",
    "4.3.0": "4.6.0",
    "4.3.6": "4.8.6",
    "4.3.7": "4.8.9",
    "5.0.0-beta.27": "5.0.0-beta.35",
    # beta.29 pins a @workflow/world no registry serves: its users take the nearest set.
    "5.0.0-beta.29": "5.0.0-beta.39",
}


# -- runtime facts, by version range -----------------------------------------------------


@dataclass(frozen=True)
class SeverityRule:
    """What the release's runtime does next with one kind of finding, and so its weight."""

    severity: Severity
    why: str


@dataclass(frozen=True)
class Derivation:
    """How a core derives a run's correlation ids (`step_`, `wait_`, `hook_`): a seeded ARC4
    generator (`seedrandom`) feeding `ulid`'s monotonic factory at a fixed time
    (wfctl/world/nodeids.py)."""

    key: str
    seed: tuple[str, ...]  # run fields joined by ":" (id, name, started_ms, deployment_id)
    time: str  # the run field whose milliseconds every id carries (started_ms, or id: its ULID)
    summary: str


# @workflow/core 4.2.4, 4.4.0, 4.5.0, 4.6.0, 4.8.9 (dist/workflow.js: `seed:
# runId:workflowName:+startedAt`, `generateUlid: () => ulid(+startedAt)`).
STARTED_AT = Derivation(
    "started-at",
    ("id", "name", "started_ms"),
    "started_ms",
    "ids stamped with started_at, seeded with run id:workflow name:started_at",
)
# @workflow/core 5.0.0-beta.35, 5.0.0-beta.39 (`seed: runId:workflowName:deploymentId`,
# `generateUlid: () => ulid(fixedTimestamp)`, `fixedTimestamp = runIdCreatedAt(runId)`).
RUN_ID_TIME = Derivation(
    "run-id-time",
    ("id", "name", "deployment_id"),
    "id",
    "ids stamped with the run id's time, seeded with run id:workflow name:deployment id",
)


@dataclass(frozen=True)
class CorrelationIds:
    """What decides whether a run in flight continues across an upgrade
    (wfctl.migrate.inflight): how the core mints its ids, and whether it runs steps as their
    own `<prefix>steps` jobs (4.x cores: dist/workflow.js queues `__wkf_step_*`; the 5.0 cores
    have no step queue)."""

    ids: Derivation
    step_jobs: bool


_4X_IDS = CorrelationIds(STARTED_AT, step_jobs=True)
_5X_IDS = CorrelationIds(RUN_ID_TIME, step_jobs=False)


@dataclass(frozen=True)
class Runtime:
    """Facts of the package and its core for the versions `low`..`high` (inclusive)."""

    low: str
    high: str
    checked: str  # the exact versions these facts were read from
    spec_version: int | None
    transactional: frozenset[str] | None
    payload_keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    severities: Mapping[str, SeverityRule] = field(default_factory=dict)
    job_keys: str = ""
    max_attempts: int = 3
    refuses: Mapping[str, str] = field(default_factory=dict)
    not_applicable: Mapping[str, str] = field(default_factory=dict)
    wakes_package_runs: bool = False
    sql_variant: str = "beta29"
    # None: not read (the ids are the core's, see `correlation_ids`).
    correlation_ids: CorrelationIds | None = None

    def covers(self, version: str) -> bool:
        return version_key(self.low) <= version_key(version) <= version_key(self.high)


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
_BETA27_REFUSES = {
    "new runs": "wfctl's runtime writes spec-5 runs with beta.29's columns "
    "(encryption_public_key); a beta.27 world lacks them and runs two queue tasks",
    "migrate --online": _4X_REFUSES["migrate --online"],
}
_PGBOSS = (
    "a 4.1.0 beta before 4.1.0-beta.46 queues on pg-boss and has no waits table: wfctl reads "
    "it (`info`) but does not act on it; upgrade it with the package's own setup (4.1.1+)"
)
_4X_KEYS = "flow jobs keyed msg_<ULID>; steps run as their own jobs on <prefix>steps"
_5X_KEYS = "flow jobs keyed msg_<ULID>, wait_<id>:hop-N, step_<id>:backstop:<ms>"
# dist/storage.js hook_created: from 4.3.0 (and in 5.0.0-beta.27+) a hook row of the same
# (runId, hookId) without its event is completed ("orphaned hook row"); before, the token's
# row is a conflict.
_HOOK_HEALS = SeverityRule(
    Severity.INFO, "the next replay writes hook_created itself (it heals orphan hooks)"
)
_HOOK_FAILS = SeverityRule(
    Severity.CRITICAL, "its replay meets its own token: hook_conflict, then run_failed"
)
# dist/storage.js step_created outside a transaction: INSERT the step ... ON CONFLICT DO
# NOTHING, then the event; the next replay's step_created re-uses the row.
_STEP_ROW_REUSED = SeverityRule(
    Severity.WARNING, "the next start re-uses the step row and writes step_created itself"
)
_RUN_REENQUEUED = SeverityRule(
    Severity.WARNING,
    "reenqueueActiveRuns re-runs active runs at every start and runs this one to completion "
    "(its log then starts at run_started)",
)
# 4.1.x through 4.2.0 write nothing in a transaction and do not heal orphan hooks.
_NO_TX_WEIGHTS = {"WF101": _STEP_ROW_REUSED, "WF103": _HOOK_FAILS, "WF121": _RUN_REENQUEUED}
# The keys 4.2.4's replay reads in each event (dist/step.js, dist/workflow/*.js, runtime.js).
_KEYS_CORE_42 = {
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
}
# From @workflow/core 4.3.1 (world-postgres 4.1.4) through 4.8.9 the replay compares a step
# event's stepName with the step it replays, a hook event's token, and reads wait_completed's
# resumeAt (dist/step.js, dist/workflow/hook.js, dist/workflow/sleep.js).
_KEYS_CORE_48 = {
    **_KEYS_CORE_42,
    "step_started": ("stepName",),
    "step_completed": ("stepName", "result"),
    "step_failed": ("stepName", "error", "stack"),
    "step_retrying": ("stepName", "error", "stack"),
    "wait_completed": ("resumeAt",),
    "hook_received": ("payload", "token"),
}
# 5.x step outcomes: what wfctl has always written there (no separate `stack`); every other
# event keeps every key a repair builds.
_5X_STEP_OUTCOMES = {
    "step_failed": ("stepName", "error"),
    "step_retrying": ("stepName", "error", "retryAfter"),
}


def _four(
    low: str,
    high: str,
    checked: str,
    transactional: frozenset[str],
    payload_keys: Mapping[str, tuple[str, ...]],
    severities: Mapping[str, SeverityRule],
) -> Runtime:
    """A 4.x runtime: spec 3, msg_ jobs on two tasks, refused for wfctl's own new runs."""
    return Runtime(
        low,
        high,
        checked,
        spec_version=3,
        transactional=transactional,
        payload_keys=payload_keys,
        severities=severities,
        job_keys=_4X_KEYS,
        refuses=_4X_REFUSES,
        not_applicable=_4X_NOT_APPLICABLE,
        wakes_package_runs=True,
        correlation_ids=_4X_IDS,
    )


RUNTIMES: tuple[Runtime, ...] = (
    Runtime(
        "4.1.0-beta.15",
        "4.1.0-beta.34",
        "4.1.0-beta.15/.27/.30/.31/.34 (dist/queue.js: pg-boss)",
        spec_version=None,
        transactional=frozenset(),
        refuses={"*": _PGBOSS},
    ),
    _four(
        "4.1.0-beta.46",
        "4.1.1",
        "4.1.1 (with @workflow/core 4.2.4)",
        frozenset(),  # dist/storage.js: no transaction at all
        _KEYS_CORE_42,
        _NO_TX_WEIGHTS,
    ),
    _four(
        "4.1.4",
        "4.2.0",
        "4.1.4 (@workflow/core 4.3.1), 4.1.5 (4.4.0), 4.2.0 (4.5.0)",
        frozenset(),  # dist/storage.js: no transaction at all
        _KEYS_CORE_48,
        _NO_TX_WEIGHTS,
    ),
    _four(
        "4.3.0",
        "4.3.5",
        "4.3.0 (with @workflow/core 4.6.0)",
        frozenset({"step_started"}),  # dist/storage.js: 1 transaction site
        _KEYS_CORE_48,
        {"WF101": _STEP_ROW_REUSED, "WF103": _HOOK_HEALS, "WF121": _RUN_REENQUEUED},
    ),
    _four(
        "4.3.6",
        "4.3.6",
        "4.3.6 (with @workflow/core 4.8.6)",
        # dist/storage.js: 4 sites (step_started, hook_disposed, hook_received, step_created)
        frozenset({"step_started", "step_created", "hook_disposed", "hook_received"}),
        _KEYS_CORE_48,
        {"WF103": _HOOK_HEALS, "WF121": _RUN_REENQUEUED},
    ),
    _four(
        "4.3.7",
        "4.3.7",
        "4.3.7 (with @workflow/core 4.8.9)",
        # dist/storage.js: 6 sites (run_created twice: plain and the resilient start)
        frozenset(
            {"run_created", "step_started", "step_created", "hook_disposed", "hook_received"}
        ),
        _KEYS_CORE_48,
        {"WF103": _HOOK_HEALS},
    ),
    Runtime(
        "5.0.0-beta.27",
        "5.0.0-beta.28",
        "5.0.0-beta.27 (with @workflow/core 5.0.0-beta.35)",
        spec_version=5,
        # dist/storage.js: 1 site, step_started plain and lazy (the lazy start writes the step
        # row, step_created and step_started together)
        transactional=frozenset({"step_started"}),
        payload_keys=_5X_STEP_OUTCOMES,
        # core 5.0.0-beta.35 keys wake-ups wait_<id>:hop-N (runtime/wait-continuation.js);
        # dist/queue.js still has a steps task.
        job_keys=f"{_5X_KEYS}; steps also run as their own jobs on <prefix>steps",
        refuses=_BETA27_REFUSES,
        # Measured on worlds its runtime made and crashed: a fan-out step's row without
        # step_created is re-used by the next start; a run row without run_created is run to
        # completion by reenqueueActiveRuns (dist/index.js start()).
        severities={"WF101": _STEP_ROW_REUSED, "WF121": _RUN_REENQUEUED},
        # dist/queue.js: the flows message format is beta.29's (dist/message.js identical), so
        # a delivery wfctl writes is followed by the same wake-up job its resumeHook() adds.
        wakes_package_runs=True,
        correlation_ids=_5X_IDS,
    ),
    Runtime(
        "5.0.0-beta.29",
        "5.0.0-beta.31",
        "5.0.0-beta.29",
        spec_version=5,
        # dist/storage.js: 3 sites (step_started plain and lazy, hook_received).
        transactional=frozenset({"step_started", "hook_received"}),
        payload_keys=_5X_STEP_OUTCOMES,
        job_keys=_5X_KEYS,
        wakes_package_runs=True,
        correlation_ids=_5X_IDS,
    ),
)
# The slot era (5.0.0-beta.32+): upstream source, no release on the registry.
SLOT_RUNTIME = Runtime(
    "5.0.0-beta.32",
    "5.0.0-beta.40",
    "upstream source (no slot-era release on the registry)",
    spec_version=None,
    transactional=ALL_WRITES,
    payload_keys=_5X_STEP_OUTCOMES,
    job_keys=_5X_KEYS,
    max_attempts=49,
    sql_variant="slot",
)


def pinned_version(pinned: str | None = None) -> str | None:
    """The package version an operator pinned: `pinned` (a version, or an installed package
    folder such as the app's node_modules/@workflow/world-postgres), else the environment
    (WFCTL_PACKAGE_VERSION, or WFCTL_PACKAGE naming a folder); None when nothing is pinned."""
    if pinned is None:
        pinned = os.environ.get("WFCTL_PACKAGE_VERSION") or os.environ.get("WFCTL_PACKAGE")
    if not pinned:
        return None
    if is_version(pinned):
        return pinned
    manifest = Path(pinned) / "package.json"
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise UsageError(
            f"{pinned} is neither a version nor a package folder with a readable package.json",
            hint="--package node_modules/@workflow/world-postgres, or a version like 4.2.0",
        ) from None
    if not isinstance(data, dict) or data.get("name") != PACKAGE_NAME:
        raise UsageError(
            f"{manifest} is not {PACKAGE_NAME}'s (name {data.get('name')!r})"
            if isinstance(data, dict)
            else f"{manifest} is not a package manifest",
            hint="--package names the app's node_modules/@workflow/world-postgres folder",
        )
    version = data.get("version")
    if not isinstance(version, str) or not is_version(version):
        raise UsageError(f"{manifest} holds no version", hint="reinstall the package")
    return version


def newest_known_within(recorded: Sequence[str]) -> Release | None:
    """For a world whose journal no release records (interrupted, or with an unknown
    migration): the newest release whose whole journal it holds, over what it records."""
    have = set(recorded)
    fits = [v for v, p in PACKAGES.items() if p.journal and set(p.journal) <= have]
    if not fits:
        return None
    known = tuple(t for t in recorded if t in drizzle.BY_TAG)
    return build((fits[-1],), known, "the newest release whose migrations it all records")


def runtime(version: str) -> Runtime | None:
    """The runtime facts of `version` (None: a version wfctl has not read)."""
    return next((r for r in RUNTIMES if r.covers(version)), None)


def correlation_ids(version: str) -> CorrelationIds | None:
    """How `version`'s core mints a run's correlation ids. The ids are the core's, not the
    package's: None where wfctl does not know which core its users got (`CORE`: a range's
    other versions, e.g. 4.1.0-beta.46 or 5.0.0-beta.30, were never paired with one) or has
    not read it (the slot era)."""
    found = runtime(version)
    return found.correlation_ids if found is not None and version in CORE else None


# -- lines: the era keys of reports ------------------------------------------------------

# A line groups the versions whose worlds wfctl names alike; `era` in reports and JSON.
LINE_OF: dict[str, str] = {
    **{v: "4.1-beta" for v in PACKAGES if version_key(v) < version_key("4.1.0-beta.46")},
    "4.1.0-beta.46": "4.1",
    "4.1.1": "4.1",
    "4.1.4": "4.2",
    "4.1.5": "4.2",
    "4.2.0": "4.2",
    "4.3.0": "4.3",
    "4.3.6": "4.3",
    "4.3.7": "4.3",
    "5.0.0-beta.27": "beta27",
    "5.0.0-beta.29": "beta29",
}
# What `npm install` of the next line would migrate a world of this line to (upgrade view).
NEXT_LINE = {"4.1-beta": "4.1", "4.1": "4.3", "4.2": "4.3", "4.3": "beta29", "beta27": "beta29"}


# -- the Release interface ---------------------------------------------------------------


@dataclass(frozen=True)
class Release:
    """What wfctl knows of a world's release: one version, or the candidates its journal
    leaves (then each runtime fact is the worst case among them)."""

    key: str  # "4.1", "4.2", "4.3", "beta27", "beta29", "slot": the world's `era` in reports
    package: str  # the versions it can be, for humans: "4.1.4, 4.1.5 or 4.2.0"
    checked: str  # the exact versions these facts were read from
    journal: tuple[str, ...]  # drizzle migration tags a world of this release records
    catalog: str  # "slot" (a data file), else "" (composed from the journal)
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
    next_release: str | None = None  # the line `npm install` of the next line migrates to
    refuses: Mapping[str, str] = field(default_factory=dict)  # action -> why it cannot
    # The package's own runs are woken by a flows job after a delivery (its resumeHook()
    # enqueues one): a delivery wfctl writes for such a run (hooks resume) enqueues it too.
    # Set where the job format was checked against the package (4.1.1, 4.3.7, beta.29).
    wakes_package_runs: bool = False
    # Checks that mean nothing on this release, with why (reported not_applicable).
    not_applicable: Mapping[str, str] = field(default_factory=dict)
    # The published versions it can be (several: the journal cannot tell them apart).
    candidates: tuple[str, ...] = ()
    # How the version was known: "journal", "pinned (...)" or "recorded by its runs (...)".
    known_by: str = "journal"
    # Codes only some candidates weigh by a rule (the others: the check's own weight, e.g. a
    # write that is atomic there): (the worst such rule, the candidates having it).
    partial_severities: Mapping[str, tuple[SeverityRule, tuple[str, ...]]] = field(
        default_factory=dict
    )

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

    @property
    def worst_case(self) -> bool:
        """The facts are the worst case over several candidate versions."""
        return len(self.candidates) > 1

    @property
    def expected_catalog(self) -> Catalog:
        """The catalog a world of this release has: composed from the migrations it records
        (the slot era, which no registry carries, keeps its catalog as data)."""
        return catalog.expected(self.catalog) if self.catalog else _composed(self.journal)

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

    def weight(self, code: str, own: Severity) -> SeverityRule | None:
        """The weight of a finding of `code` (whose check weighs `own`) on this release: its
        rule; where only some candidates have one, the worst of that and `own`, saying so."""
        rule = self.severities.get(code)
        if rule is not None or code not in self.partial_severities:
            return rule
        partial, having = self.partial_severities[code]
        others = [v for v in self.candidates if v not in having]
        if _RANK[own] <= _RANK[partial.severity]:
            return SeverityRule(
                own,
                f"worst case among {self.package}: on {_phrase(others)} no torn write leaves "
                f"this, so something else broke ({own}); on {_phrase(having)}, {partial.why}",
            )
        return SeverityRule(
            partial.severity,
            f"worst case among {self.package}: on {_phrase(having)}, {partial.why}",
        )

    def as_dict(self) -> dict[str, object]:
        return {
            "release": self.key,
            "package": self.name,
            "candidates": list(self.candidates),
            "known_by": self.known_by,
            "worst_case": self.worst_case,
            "checked_against": self.checked,
            "spec_version": self.spec_version,
            "journal": list(self.journal),
            "lacks_columns": sorted(self.lacks),
            "tasks": list(self.task_suffixes),
            "transactional_writes": (
                None if self.transactional is None else sorted(self.transactional)
            ),
        }


@functools.cache
def _composed(journal: tuple[str, ...]) -> Catalog:
    return drizzle.compose(journal)


def _lacks(journal: tuple[str, ...]) -> frozenset[str]:
    tables = _composed(journal)["tables"]
    have = {
        f"{name.partition('.')[2]}.{col[0]}" for name, t in tables.items() for col in t["columns"]
    }
    return frozenset(c for c in OPTIONAL_COLUMNS if c not in have)


def _worst(rules: list[SeverityRule], versions: list[str]) -> SeverityRule:
    worst = min(rules, key=lambda r: _RANK[r.severity])
    if all(r == worst for r in rules):
        return worst
    on = [v for v, r in zip(versions, rules, strict=True) if r == worst]
    return SeverityRule(
        worst.severity, f"worst case among the candidates: on {' and '.join(on)}, {worst.why}"
    )


def _phrase(versions: Sequence[str]) -> str:
    if len(versions) == 1:
        return versions[0]
    return f"{', '.join(versions[:-1])} or {versions[-1]}"


@functools.cache
def build(
    candidates: tuple[str, ...], journal: tuple[str, ...], known_by: str = "journal"
) -> Release:
    """The Release of a world that can be any of `candidates` and records `journal`."""
    pairs = [(v, r) for v, r in ((v, runtime(v)) for v in candidates) if r is not None]
    if not pairs:
        raise KeyError(f"no runtime facts for {candidates}")
    facts = [r for _, r in pairs]
    key = LINE_OF.get(candidates[0], "unknown")
    tasks: list[str] = []
    for v in candidates:
        tasks += [t for t in PACKAGES[v].tasks if t not in tasks]
    payload: dict[str, tuple[str, ...]] = {}
    for event in sorted({e for f in facts for e in f.payload_keys}):
        if all(event in f.payload_keys for f in facts):  # else: every key (the fullest shape)
            keys: list[str] = []
            for f in facts:
                keys += [k for k in f.payload_keys[event] if k not in keys]
            payload[event] = tuple(keys)
    severities: dict[str, SeverityRule] = {}
    partial: dict[str, tuple[SeverityRule, tuple[str, ...]]] = {}
    for code in sorted({c for f in facts for c in f.severities}):
        having = [(v, f.severities[code]) for v, f in pairs if code in f.severities]
        worst = _worst([r for _, r in having], [v for v, _ in having])
        if len(having) == len(facts):
            severities[code] = worst
        else:
            partial[code] = (worst, tuple(v for v, _ in having))
    transactional: frozenset[str] | None = None
    if all(f.transactional is not None for f in facts):
        transactional = frozenset.intersection(*(f.transactional or frozenset() for f in facts))
    spec = {f.spec_version for f in facts}
    return Release(
        key=key,
        package=_phrase(candidates),
        checked="; ".join(dict.fromkeys(f.checked for f in facts)),
        journal=journal,
        catalog="",
        spec_version=spec.pop() if len(spec) == 1 else None,
        lacks=_lacks(journal),
        task_suffixes=tuple(tasks),
        job_keys=facts[-1].job_keys,
        max_attempts=max(f.max_attempts for f in facts),
        transactional=transactional,
        payload_keys=payload,
        severities=severities,
        sql_variant=facts[0].sql_variant,
        next_release=NEXT_LINE.get(key),
        refuses={k: v for f in facts for k, v in f.refuses.items()},
        wakes_package_runs=all(f.wakes_package_runs for f in facts),
        not_applicable={k: v for f in facts for k, v in f.not_applicable.items()},
        candidates=candidates,
        known_by=known_by,
        partial_severities=partial,
    )


def by_journal(recorded: Iterable[str]) -> tuple[str, ...]:
    """The published versions whose own setup records exactly `recorded`."""
    wanted = tuple(recorded)
    return tuple(v for v, p in PACKAGES.items() if p.journal == wanted)


def line(key: str) -> Release:
    """The Release of a whole line (all its versions), as docs and the upgrade view use it."""
    if key == "slot":
        return SLOT
    versions = [v for v, k in LINE_OF.items() if k == key]
    journal = PACKAGES[versions[-1]].journal
    return build(tuple(v for v in versions if PACKAGES[v].journal == journal), journal)


def of_version(version: str, journal: Sequence[str] | None = None, how: str = "") -> Release:
    """The Release of one known version (pinned or recorded), on a world recording
    `journal` (default: the version's own)."""
    recorded = tuple(journal) if journal is not None else PACKAGES[version].journal
    return build((version,), recorded, how or "pinned")


_BETA29_TAGS = tuple(m.tag for m in drizzle.KNOWN)

SLOT = Release(
    key="slot",
    package="slot era (5.0.0-beta.32+)",
    checked=SLOT_RUNTIME.checked,
    journal=_BETA29_TAGS,  # plus 0018/0019, not recorded by wfctl (drizzle.py)
    catalog="slot",
    spec_version=None,
    job_keys=SLOT_RUNTIME.job_keys,
    max_attempts=SLOT_RUNTIME.max_attempts,
    transactional=ALL_WRITES,
    payload_keys=SLOT_RUNTIME.payload_keys,
    sql_variant="slot",
)
# The lines by era key; R41/R43/BETA29 keep their names (tests and repairs use them).
R41 = line("4.1")
R42 = line("4.2")
R43 = line("4.3")
BETA27 = line("beta27")
BETA29 = line("beta29")
RELEASES: dict[str, Release] = {
    r.key: r for r in (line("4.1-beta"), R41, R42, R43, BETA27, BETA29, SLOT)
}


def get(key: str) -> Release | None:
    """The description of a world's era/release key, or None (older, half-slot, unknown)."""
    return RELEASES.get(key)


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
    newest = max((drizzle.BY_TAG[t].when for t in recorded if t in drizzle.BY_TAG), default=0)
    pending = [t for t in target.journal if t not in recorded]
    applies = tuple(t for t in pending if drizzle.BY_TAG[t].when > newest)
    skips = tuple(t for t in pending if drizzle.BY_TAG[t].when <= newest)
    return Upgrade(target, applies, skips)


def later_objects(release: Release) -> dict[tuple[str, str], str]:
    """(kind, name) of what later releases' migrations add to this release's catalog, with
    the release that adds it: on a world upgraded by hand these are not someone else's."""
    return _later_objects(release.key, release.journal)


@functools.cache
def _later_objects(key: str, journal: tuple[str, ...]) -> dict[tuple[str, str], str]:
    own = _composed(journal) if key != "slot" else catalog.expected("slot")
    out: dict[tuple[str, str], str] = {}
    later = NEXT_LINE.get(key)
    while later is not None:
        newer = RELEASES[later]
        for d in catalog.differences(own, newer.expected_catalog):
            if d.change == "unexpected":
                out.setdefault((d.kind, d.name), newer.name)
        later = newer.next_release
    return out


def describe_journal(journal: Sequence[str]) -> str:
    """`4.1.4, 4.1.5 or 4.2.0: journal 0000-0010`."""
    versions = by_journal(journal)
    return f"{_phrase(versions) if versions else 'no published release'}: journal " + (
        drizzle.span(journal)
    )


def data_for_docs() -> dict[str, Any]:
    """Everything docs/releases.md's tables are generated from."""
    return {"packages": PACKAGES, "runtimes": RUNTIMES, "lines": RELEASES, "core": CORE}
