"""What kind of world a database holds: presence, era, recorded migrations, queue, drift.

Eras (reference §1.3-1.6):
- `beta29`: events keyed `(id)`, no slot marker table (the shape npm serves today);
- `slot`: `workflow_event_slots` exists and events are keyed `(run_id, id)` (beta.32+);
- `half-slot`: one of the two slot changes without the other (an interrupted migration);
- `older`: the beta.29 key shape with fewer migrations recorded (e.g. a 4.3.7 world);
- `unknown`: migrations recorded that wfctl does not know, on a non-slot shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.rows import dict_row

from wfctl import sql
from wfctl.errors import RefusedError, WfctlError
from wfctl.world import catalog, drizzle

KNOWN_ERAS = ("beta29", "slot")


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
    # wfctl's worker queue (wfctl.run_queue, revision w0004): runs handed to `wfctl worker`s.
    has_run_queue: bool = False

    @property
    def present(self) -> bool:
        return self.has_workflow

    @property
    def kind(self) -> str:
        """One phrase for humans: `slot-era world`, `no world`, ..."""
        if not self.present:
            return "no world"
        return {
            "beta29": "beta.29-shape world (wevt_ event ids, events keyed by id)",
            "slot": "slot-era world (evnt_ slot ids, events keyed by (run_id, id))",
            "half-slot": "half-migrated slot world (only part of the key swap is present)",
            "older": "pre-beta.29 world (fewer migrations recorded than beta.29 ships)",
            "unknown": "world of an unknown or newer shape",
        }[self.era]

    def as_dict(self) -> dict[str, Any]:
        return {
            "database": self.database,
            "user": self.user,
            "server_version": self.server_version,
            "standby": self.standby,
            "world": self.present,
            "era": self.era if self.present else None,
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

    def require_known(self) -> None:
        """Refuse (exit 3) unless this is a world of an era wfctl understands."""
        self.require_present()
        if self.era not in KNOWN_ERAS:
            raise WfctlError(
                f"database {self.database!r} holds a {self.kind}",
                hint="run `wfctl info` for details; upgrade wfctl or finish the migration",
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
        has_run_queue=p["has_run_queue"],
    )
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
    if recorded and drizzle.BETA29[-1].tag not in recorded:
        return "older"
    return "beta29"


def _drift_baseline(era: str) -> str:
    return "slot" if era in ("slot", "half-slot") else "beta29"
