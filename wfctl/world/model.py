"""What kind of world a database holds: presence, era, recorded migrations, queue, drift.

Eras (reference §1.3-1.6):
- `beta29`: events keyed `(id)`, no slot marker table (the shape npm serves today);
- `slot`: `workflow_event_slots` exists and events are keyed `(run_id, id)` (beta.32+);
- `half-slot`: one of the two slot changes without the other (an interrupted migration);
- `4.1`, `4.3`: a world of that 4.x release, recognised by exactly the drizzle rows its own
  setup records (0000-0009; 0000-0010 + 0015);
- `older`: the beta.29 key shape with some other journal lacking beta.29's last migration
  (e.g. a migration interrupted half-way); a 4.3.x world the beta.29 migrator upgraded is
  `beta29` with catalog drift (it skips 0011-0014);
- `unknown`: migrations recorded that wfctl does not know, on a non-slot shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.rows import dict_row

from wfctl import sql
from wfctl.errors import RefusedError, WfctlError
from wfctl.world import catalog, drizzle, releases
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
# The tables every release line's world has (4.1.x through the slot era): a world missing one
# is incomplete, and nothing may be written to it (a write would half-apply).
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
    # Tables wfctl reasons about whose rows this role cannot be shown to read whole, as
    # {table, why} (sql/world/world_presence.sql: row-level security, a view in a table's
    # place): what reads one is UNKNOWN, and nothing is written (require_writable).
    hidden: list[dict[str, str]] = field(default_factory=list)
    # RLS applies to this role somewhere in scope (even proven whole): no row_security = off.
    rls_active: bool = False

    @property
    def queue_hidden(self) -> list[str]:
        """The graphile_worker tables among `hidden`: the queue cannot be judged."""
        return [h["table"] for h in self.hidden if h["table"].startswith("graphile_worker.")]

    def hidden_in(self, text: str) -> list[str]:
        """Why the rows of each hidden table that `text` (a query) names are not all seen."""
        return [h["why"] for h in self.hidden if h["table"] in text]

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

    @property
    def present(self) -> bool:
        return self.has_workflow

    @property
    def release(self) -> Release | None:
        """The release description of this world (None: not a release wfctl knows)."""
        return releases.get(self.era) if self.present else None

    @property
    def release_or_default(self) -> Release:
        """The description checks consult: the world's, else beta.29's (the key shape that
        `older`/`unknown` worlds share; commands that need a known release refuse first)."""
        if self.release is not None:
            return self.release
        return releases.SLOT if self.has_event_slots else releases.BETA29

    def upgrade(self) -> releases.Upgrade | None:
        """What the next release's own migrator would do to this world (info only)."""
        return releases.upgrade(self.migrations, self.release) if self.release else None

    @property
    def kind(self) -> str:
        """One phrase for humans: `slot-era world`, `no world`, ..."""
        if not self.present:
            return "no world"
        phrase = _PHRASES.get(self.era)
        if phrase is None and self.release is not None:
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
            "catalog_drift": self.drift,
            "missing_tables": self.missing_tables,
            "queue_hidden_by_rls": self.queue_hidden,
            "hidden_rows": self.hidden,
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
        reason = self.release.refuses.get(action) if self.release else None
        if reason:
            raise RefusedError(
                f"{self.kind} cannot take {action}: {reason}",
                hint="nothing was written; `wfctl info` shows the release (docs/releases.md)",
            )

    def require_writable(self, doing: str, action: str = "", *, world: bool = True) -> None:
        """THE write gate: every writer asks it before writing. Exit 3 when wfctl cannot see or
        know the world (none, unknown shape or migration, a table missing: `world`; rows hidden
        from this role); exit 2 on a standby, or when the release refuses `action`."""
        if world:
            self.require_known()
        self.require_visible(doing)
        self.require_primary(doing)
        if action:
            self.require_supports(action)

    def require_visible(self, doing: str) -> None:
        """Refuse (exit 3) while rows of a table wfctl reasons about are hidden from this role:
        what looks missing may only be unseen (a repair would duplicate it)."""
        if self.hidden:
            raise WfctlError(
                f"cannot {doing}: wfctl does not see every row: "
                + "; ".join(h["why"] for h in self.hidden),
                hint="nothing was written; run as the tables' owner, a BYPASSRLS role, or add "
                "a policy USING (true) for this role (docs/cli.md, 'Roles')",
            )

    def guard(self, conn: psycopg.Connection[Any]) -> None:
        """Arm PostgreSQL's own guard on this session where no RLS applies to the role: with
        `row_security = off` a read a policy would filter (one created after this look) fails,
        "query would be affected by row-level security policy", rather than read short. Not
        where RLS applies even proven whole (a `USING (true)` policy): those reads would fail."""
        if not self.rls_active:
            conn.execute(sql.load("world/row_security_off"))

    def require_known(self) -> None:
        """Refuse (exit 3) unless this is a world of an era wfctl understands."""
        self.require_present()
        if self.era not in KNOWN_ERAS:
            raise WfctlError(
                f"database {self.database!r} holds a {self.kind}",
                hint="run `wfctl info` for details; upgrade wfctl or finish the migration",
            )
        self.require_complete()

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


def inspect(conn: psycopg.Connection[Any], *, with_drift: bool = True) -> World:
    """Introspect the database behind `conn` (read-only; catalog and bookkeeping only)."""
    with conn.cursor(row_factory=dict_row) as cur:
        p = cur.execute(sql.load("world/world_presence")).fetchone()
        assert p is not None
        rows: list[dict[str, Any]] = []
        if p["has_migrations_table"]:
            rows = cur.execute(sql.load("world/drizzle_migrations")).fetchall()
    recorded = [drizzle.identify(r["hash"], r["created_at"]) for r in rows]
    unknown = [
        name
        for name, r in zip(recorded, rows, strict=True)
        if name.startswith("unknown(") and (r["created_at"] or 0) > drizzle.LATEST_KNOWN_WHEN
    ]
    era = _era(p["has_event_slots"], p["events_key"], recorded, unknown)
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
        hidden=list(p["hidden"]),
        rls_active=p["rls_active"],
        has_run_queue=p["has_run_queue"],
    )
    if world.present:
        wanted = WORLD_TABLES + (("workflow.workflow_event_slots",) if era == "slot" else ())
        world.missing_tables = [t for t in wanted if t not in p["world_tables"]]
    world.guard(conn)
    if with_drift and world.present:
        world.drift = [
            d.text + (f" (upstream {d.known})" if d.known else "")
            for d in catalog.compare(conn, _drift_baseline(era))
        ]
    return world


def _era(has_slots: bool, key: str | None, recorded: list[str], unknown: list[str]) -> str:
    slot_key = key == "run_id,id"
    if has_slots and slot_key:
        return "slot"
    if has_slots or slot_key:
        return "half-slot"
    if unknown:
        return "unknown"
    release = releases.by_journal(recorded)
    if release is not None:
        return release.key
    if recorded and drizzle.BETA29[-1].tag not in recorded:
        return "older"
    return "beta29"


def _drift_baseline(era: str) -> str:
    if era == "half-slot":
        return "slot"
    release = releases.get(era)
    return release.catalog if release else "beta29"
