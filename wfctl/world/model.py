"""What kind of world a database holds: presence, era, recorded migrations, queue, drift.

A world is known by what it holds (wfctl.world.releases): its recorded drizzle rows are matched
to known migrations, and the published versions whose own setup records exactly those are its
candidates. Eras (the line the candidates belong to; `releases.LINE_OF`):
- `4.1-beta` (4.1.0-beta.15..34, pg-boss), `4.1` (4.1.0-beta.46, 4.1.1: 0000-0009), `4.2`
  (4.1.4, 4.1.5, 4.2.0: 0000-0010), `4.3` (4.3.0-4.3.7: 0000-0010 + 0015), `beta27`
  (0000-0015), `beta29` (0000-0017);
- `beta29` also: events keyed `(id)`, no slot marker table, beta.29's last migration recorded
  with another journal (a 4.3.x world the beta.29 migrator upgraded: catalog drift, it skips
  0011-0014), or no journal at all;
- `slot`: `workflow_event_slots` exists and events are keyed `(run_id, id)` (beta.32+);
- `half-slot`: one of the two slot changes without the other (an interrupted migration);
- `older`: some other journal of known migrations lacking beta.29's last one (e.g. a
  migration interrupted half-way);
- `unknown`: a migration recorded that no published release wfctl knows has.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import cbor2
import psycopg
from psycopg.rows import dict_row

from wfctl import sql
from wfctl.errors import RefusedError, WfctlError
from wfctl.world import catalog, codec, drizzle, releases
from wfctl.world.releases import Release

KNOWN_ERAS = tuple(releases.RELEASES)
# `World.kind` for the eras whose phrase predates the release descriptions (and the shapes that
# are no release); a release without one here is named by its description.
_PHRASES = {
    "beta29": "beta.29-shape world (wevt_ event ids, events keyed by id)",
    "slot": "slot-era world (evnt_ slot ids, events keyed by (run_id, id))",
    "half-slot": "half-migrated slot world (only part of the key swap is present)",
    "older": "world whose drizzle journal no known release records (an unfinished migration?)",
    "unknown": "world of an unknown or newer shape",
}
# Where an operator pins the package version when the journal cannot tell it (`--package DIR`
# does the same per command): a version, or an installed package folder.
PIN_ENV = ("WFCTL_PACKAGE_VERSION", "WFCTL_PACKAGE")
# The tables a world has (4.1.0-beta.46 through the slot era; the pg-boss betas lack waits): a
# world missing one of its release's is incomplete, and nothing may be written to it (a write
# would half-apply).
WORLD_TABLES = tuple(
    f"workflow.workflow_{name}"
    for name in ("runs", "events", "steps", "waits", "hooks", "stream_chunks")
)


@dataclass
class World:
    """The result of introspecting one database; cheap (catalog reads only)."""

    database: str
    user: str
    server_version: str
    server_version_num: int
    has_workflow: bool
    has_drizzle: bool
    has_graphile: bool
    has_wfctl: bool
    has_event_slots: bool
    events_key: str | None
    era: str
    migrations: list[str] = field(default_factory=list)
    unknown_migrations: list[str] = field(default_factory=list)
    drift: list[str] = field(default_factory=list)
    # A hot standby (pg_is_in_recovery): every read works, every write is refused.
    standby: bool = False
    # Tables of WORLD_TABLES (and the slot era's marker table) that do not exist.
    missing_tables: list[str] = field(default_factory=list)
    # graphile_worker tables whose rows row-level security hides from this role (see
    # sql/world/world_presence.sql): the queue cannot be judged, nor its locks guarded.
    queue_hidden: list[str] = field(default_factory=list)

    @property
    def queue_unreadable(self) -> str:
        """Why this role cannot read the queue's rows ("" when it can)."""
        if not self.queue_hidden:
            return ""
        return (
            f"row-level security hides the rows of {', '.join(self.queue_hidden)} from role "
            f"{self.user!r} (it does not own them and has no BYPASSRLS; graphile-worker "
            "creates no policy): the queue reads as empty"
        )

    # wfctl's worker queue (wfctl.run_queue, revision w0004): runs handed to `wfctl worker`s.
    has_run_queue: bool = False
    # The release the world's journal (and a pin) make it: None where no release fits.
    described: Release | None = None
    # A pinned package version wfctl has not read (newer than every release it knows).
    unknown_package: str = ""

    @property
    def unknowable(self) -> str:
        """Why wfctl cannot know this world whole ("" when it can): an unknown migration
        recorded or an unknown package version pinned. Read-only commands work on what the
        world has; nothing is written (docs/cli.md, 'A world wfctl does not know'). A slot-era
        world is known by its shape: the rows its migrations (0018+) record are its own."""
        if self.unknown_migrations and self.era != "slot":
            return (
                f"its journal records {', '.join(self.unknown_migrations)}, a migration no "
                "release wfctl knows has"
            )
        if self.unknown_package:
            return (
                f"it is pinned to @workflow/world-postgres {self.unknown_package}, a version "
                f"wfctl has not read (it knows up to {releases.NEWEST})"
            )
        return ""

    @property
    def present(self) -> bool:
        return self.has_workflow

    @property
    def release(self) -> Release | None:
        """The release description of this world (None: not a release wfctl knows)."""
        if not self.present:
            return None
        return self.described if self.described is not None else releases.get(self.era)

    @property
    def release_or_default(self) -> Release:
        """The description checks consult: the world's, else beta.29's (the key shape that
        `older`/`unknown` worlds share; commands that need a known release refuse first)."""
        if self.release is not None:
            return self.release
        if self.has_event_slots:
            return releases.SLOT
        known = releases.newest_known_within(self.migrations)
        return known if known is not None else releases.BETA29

    def upgrade(self) -> releases.Upgrade | None:
        """What the next release's own migrator would do to this world (info only)."""
        return releases.upgrade(self.migrations, self.release) if self.release else None

    @property
    def kind(self) -> str:
        """One phrase for humans: `slot-era world`, `no world`, ..."""
        if not self.present:
            return "no world"
        phrase = _PHRASES.get(self.era)
        if self.release is not None and (phrase is None or self.release.candidates):
            return self.release.kind
        return phrase or _PHRASES["unknown"]

    def as_dict(self) -> dict[str, Any]:
        return {
            "database": self.database,
            "user": self.user,
            "server_version": self.server_version,
            "standby": self.standby,
            "world": self.present,
            "era": self.era if self.present else None,
            "release": self.release.as_dict() if self.release else None,
            "kind": self.kind,
            "schemas": {
                "workflow": self.has_workflow,
                "workflow_drizzle": self.has_drizzle,
                "graphile_worker": self.has_graphile,
                "wfctl": self.has_wfctl,
            },
            "events_key": self.events_key,
            "migrations": self.migrations,
            "unknown_migrations": self.unknown_migrations,
            "journal": releases.describe_journal(self.migrations) if self.migrations else None,
            "unknown": self.unknowable or None,
            "catalog_drift": self.drift,
            "missing_tables": self.missing_tables,
            "queue_hidden_by_rls": self.queue_hidden,
            "upgrade": (lambda u: u.as_dict() if u else None)(self.upgrade()),
        }

    def require_present(self) -> None:
        """Refuse (exit 3) a database that holds no world at all."""
        if not self.present:
            raise WfctlError(
                f"database {self.database!r} holds no world (schema `workflow` is missing)",
                hint="check the DSN's database, or create one with `wfctl bootstrap`",
            )

    def require_primary(self, doing: str) -> None:
        """Refuse (exit 2) a write on a read-only standby, before anything is written."""
        if self.standby:
            raise RefusedError(
                f"the server is a read-only standby (pg_is_in_recovery): cannot {doing}",
                hint="point the DSN at the primary; nothing was written",
            )

    def require_supports(self, action: str) -> None:
        """Refuse (exit 2) what this world's release cannot take (`Release.refuses`), with
        the reason, before anything is written."""
        refuses = self.release.refuses if self.release else {}
        reason = refuses.get(action) or refuses.get("*")
        if reason:
            raise RefusedError(
                f"{self.kind} cannot take {'any action' if action == '*' else action}: {reason}",
                hint="nothing was written; `wfctl info` shows the release (docs/releases.md)",
            )

    def require_known(self, *, acting: bool = True) -> None:
        """Refuse (exit 3) unless this is a world of an era wfctl understands and knows whole;
        `acting`: also refuse (exit 2) a release wfctl reads but does not act on."""
        self.require_present()
        if self.unknowable:
            raise WfctlError(
                f"database {self.database!r} holds a world wfctl does not know whole: "
                f"{self.unknowable}",
                hint="nothing was written; read-only commands (info, doctor, runs list/show) "
                "work on what it has; upgrade wfctl to act on it",
            )
        if self.era not in KNOWN_ERAS:
            raise WfctlError(
                f"database {self.database!r} holds a {self.kind}",
                hint="run `wfctl info` for details; upgrade wfctl or finish the migration",
            )
        self.require_complete()
        if acting:
            self.require_supports("*")

    def require_complete(self) -> None:
        """Refuse (exit 3) a world with a table missing: its shape is not one wfctl can read
        or write as a whole (a cancel would update the runs and fail on the steps, a repair
        would append events a replay cannot match). Checked before anything is written."""
        if self.present and self.missing_tables:
            raise WfctlError(
                f"database {self.database!r} holds an incomplete world: "
                f"{', '.join(self.missing_tables)} missing",
                hint="nothing was written; restore the table (from a backup, or the package's "
                "migrations); `wfctl doctor --only WF151` lists the catalog differences",
            )


def inspect(
    conn: psycopg.Connection[Any], *, with_drift: bool = True, pinned: str | None = None
) -> World:
    """Introspect the database behind `conn` (read-only; catalog and bookkeeping only).

    `pinned`: the package version the operator names (`--package DIR`); default: the
    environment (PIN_ENV)."""
    with conn.cursor(row_factory=dict_row) as cur:
        p = cur.execute(sql.load("world/world_presence")).fetchone()
        assert p is not None
        rows: list[dict[str, Any]] = []
        if p["has_migrations_table"]:
            rows = cur.execute(sql.load("world/drizzle_migrations")).fetchall()
    recorded = [drizzle.identify(r["hash"], r["created_at"]) for r in rows]
    # Any row no known migration file has is unknown: a newer release's, or one of a branch
    # wfctl never saw (its `when` can be older than ours: drizzle then never applies ours).
    unknown = [name for name in recorded if name.startswith("unknown(")]
    era = _era(p["has_event_slots"], p["events_key"], recorded, unknown)
    version = releases.pinned_version(pinned)
    world = World(
        database=p["database"],
        user=p["user"],
        server_version=p["server_version"],
        server_version_num=p["server_version_num"],
        has_workflow=p["has_workflow"],
        has_drizzle=p["has_drizzle"],
        has_graphile=p["has_graphile_jobs"],
        has_wfctl=p["has_wfctl"],
        has_event_slots=p["has_event_slots"],
        events_key=p["events_key"],
        era=era,
        migrations=recorded,
        unknown_migrations=unknown,
        standby=p["in_recovery"],
        queue_hidden=list(p["queue_hidden"]) if p["has_graphile_jobs"] else [],
        has_run_queue=p["has_run_queue"],
    )
    world.described, world.unknown_package = _describe(era, recorded, version)
    if world.described is not None and world.described.worst_case and world.present:
        world.described = _by_writer(conn, world.described)
    if world.present:
        wanted = _tables(world)
        world.missing_tables = [t for t in wanted if t not in p["world_tables"]]
    if with_drift and world.present and not world.unknowable:
        world.drift = [
            d.text + (f" (upstream {d.known})" if d.known else "")
            for d in catalog.compare(conn, _drift_baseline(world))
        ]
    return world


def _describe(era: str, recorded: list[str], version: str | None) -> tuple[Release | None, str]:
    """(the world's Release, a pinned version wfctl does not know)."""
    if era in ("slot", "half-slot"):  # known by its shape; a slot-era pin is its own
        slot = releases.SLOT_RUNTIME
        newer = version is not None and releases.version_key(version) > releases.version_key(
            slot.high
        )
        return None, version if newer and version is not None else ""
    if version is not None and version not in releases.PACKAGES:
        if releases.version_key(version) > releases.version_key(releases.NEWEST):
            return None, version
        version = None  # an older unpublished build: the journal decides
    known = [t for t in recorded if not t.startswith("unknown(")]
    if version is not None and (era in releases.RELEASES or era in ("older", "unknown")):
        journal = known if known else releases.PACKAGES[version].journal
        return releases.of_version(version, journal, f"pinned ({version})"), ""
    candidates = releases.by_journal(recorded)
    if candidates:
        return releases.build(candidates, tuple(recorded)), ""
    return None, ""


def _by_writer(conn: psycopg.Connection[Any], release: Release) -> Release:
    """Narrow the candidates by the core version the newest run recorded (its execution
    context), where exactly one candidate's users got that core (releases.CORE)."""
    try:
        with conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
            row = cur.execute(sql.load("world/newest_writer")).fetchone()
    except psycopg.Error:  # no privilege on the runs: the journal's answer stands
        return release
    if row is None or row["execution_context_cbor"] is None:
        return release
    try:
        context = codec.decode(row["execution_context_cbor"])
    except (ValueError, cbor2.CBORError):  # not a context this core wrote: say nothing
        return release
    core = context.get("workflowCoreVersion") if isinstance(context, dict) else None
    fits = [v for v in release.candidates if releases.CORE.get(v) == core]
    if len(fits) != 1:
        return release
    how = f"recorded by its newest run {row['id']} (@workflow/core {core})"
    return releases.of_version(fits[0], release.journal, how)


def _tables(world: World) -> tuple[str, ...]:
    """The tables this world must have: its release's (composed from its journal), else
    every release line's."""
    release = world.release
    if world.era == "slot":
        return (*WORLD_TABLES, "workflow.workflow_event_slots")
    if release is None or release.key == "slot":
        return WORLD_TABLES
    return tuple(t for t in WORLD_TABLES if t in release.expected_catalog["tables"])


def _era(has_slots: bool, key: str | None, recorded: list[str], unknown: list[str]) -> str:
    slot_key = key == "run_id,id"
    if has_slots and slot_key:
        return "slot"
    if has_slots or slot_key:
        return "half-slot"
    if unknown:
        return "unknown"
    candidates = releases.by_journal(recorded)
    if candidates:
        return releases.LINE_OF[candidates[0]]
    if recorded and drizzle.KNOWN[-1].tag not in recorded:
        return "older"
    return "beta29"


def _drift_baseline(world: World) -> catalog.Catalog | str:
    if world.era == "half-slot":
        return "slot"
    release = world.release
    return release.expected_catalog if release else "beta29"
