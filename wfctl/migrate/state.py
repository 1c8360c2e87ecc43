"""Where the event-key swap stands in a live database, read from the catalog only.

Every phase of `wfctl migrate --online` re-reads this before acting, which is what makes a
rerun after any interruption converge: a phase that already happened is seen as done.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.rows import dict_row

from wfctl import sql
from wfctl.clock import timestamp

OLD_KEY = ("workflow_events_pkey", "PRIMARY KEY (id)")
NEW_KEY = ("workflow_events_run_id_id_pk", "PRIMARY KEY (run_id, id)")
KEY_INDEX = "workflow_events_run_id_id_idx"
KEY_INDEX_DEFINITION = (
    "CREATE UNIQUE INDEX workflow_events_run_id_id_idx ON workflow.workflow_events "
    "USING btree (run_id, id)"
)


@dataclass
class Recorded:
    """One row of workflow_drizzle.workflow_migrations."""

    id: int
    hash: str
    created_at: int | None


@dataclass
class KeyState:
    """The swap-relevant catalog of one world (see `sql/migrate/state.sql`)."""

    has_events: bool
    pk_name: str | None
    pk_definition: str | None
    id_is_unique: bool
    key_index: str | None  # None (absent), "valid", "invalid"
    key_index_definition: str | None
    key_index_builders: list[int]
    run_id_index: str | None  # None (absent), "valid", "invalid"
    has_hook_column: bool
    has_event_slots: bool
    has_migrations_table: bool
    server_version_num: int
    pid: int
    recorded: list[Recorded] = field(default_factory=list)

    @property
    def old_key(self) -> bool:
        return (self.pk_name, self.pk_definition) == OLD_KEY

    @property
    def no_key(self) -> bool:
        return self.pk_name is None

    @property
    def swapped(self) -> bool:
        return (self.pk_name, self.pk_definition) == NEW_KEY

    @property
    def key_index_ok(self) -> bool:
        """The prebuilt index exists, is valid and is exactly UNIQUE (run_id, id)."""
        return self.key_index == "valid" and self.key_index_definition == KEY_INDEX_DEFINITION

    @property
    def max_created_at(self) -> int | None:
        values = [r.created_at for r in self.recorded if r.created_at is not None]
        return max(values) if values else None

    def has_record(self, hash_: str, created_at: int) -> bool:
        return any(r.hash == hash_ and r.created_at == created_at for r in self.recorded)

    def key_text(self) -> str:
        if self.pk_name is None:
            return "none"
        return f"{self.pk_name} {self.pk_definition}"


def read(conn: psycopg.Connection[Any]) -> KeyState:
    """Read the state (catalog and drizzle bookkeeping only; no table data)."""
    with conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(sql.load("migrate/state")).fetchone()
        assert row is not None
        recorded: list[Recorded] = []
        if row["has_migrations_table"]:
            recorded = [
                Recorded(r["id"], r["hash"], r["created_at"])
                for r in cur.execute(sql.load("world/drizzle_migrations"))
            ]
    return KeyState(
        has_events=row["has_events"],
        pk_name=row["pk_name"],
        pk_definition=row["pk_definition"],
        id_is_unique=row["id_is_unique"],
        key_index=row["key_index"],
        key_index_definition=row["key_index_definition"],
        key_index_builders=list(row["key_index_builders"] or []),
        run_id_index=row["run_id_index"],
        has_hook_column=row["has_hook_column"],
        has_event_slots=row["has_event_slots"],
        has_migrations_table=row["has_migrations_table"],
        server_version_num=row["server_version_num"],
        pid=row["pid"],
        recorded=recorded,
    )


@dataclass
class Session:
    """Another backend, as named in messages: who holds a lock wfctl waits for."""

    pid: int
    application_name: str
    user: str
    state: str | None
    detail: str

    def describe(self) -> str:
        app = self.application_name or "no application_name"
        status = self.state or "unknown state"
        return f"pid {self.pid} ({app}, user {self.user}, {status}{self.detail})"


def advisory_holder(conn: psycopg.Connection[Any]) -> Session | None:
    """The session holding the single-flight migration lock, if any."""
    with conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(sql.load("migrate/advisory_holder")).fetchone()
    if row is None:
        return None
    since = timestamp(row["backend_start"])
    where = f", from {row['client_addr']}" if row["client_addr"] else ""
    detail = f"{where}, connected since {since}"
    if row["query"] and row["state"] == "active":
        detail += f", running {' '.join(str(row['query']).split())!r}"
    return Session(row["pid"], row["application_name"], row["user"], row["state"], detail)


def blockers(conn: psycopg.Connection[Any], relation: str) -> list[Session]:
    """Sessions holding any lock on `relation` (each conflicts with ACCESS EXCLUSIVE)."""
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(sql.load("migrate/blockers"), {"relation": relation}).fetchall()
    out = []
    for r in rows:
        age = f", transaction open {r['xact_seconds']} s" if r["xact_seconds"] is not None else ""
        query = f", last query {r['query']!r}" if r["query"] else ""
        out.append(Session(r["pid"], r["application_name"], r["user"], r["state"], age + query))
    return out


def table_sizes(conn: psycopg.Connection[Any]) -> dict[str, dict[str, Any]]:
    """Estimated rows and total size of every table of schema `workflow`."""
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(sql.load("migrate/table_sizes")).fetchall()
    return {
        r["table"]: {
            "estimated_rows": None if r["estimated_rows"] is None else int(r["estimated_rows"]),
            "heap_bytes": int(r["heap_bytes"]),
            "total_bytes": int(r["total_bytes"]),
            "total_size": r["total_size"],
        }
        for r in rows
    }


def invalid_indexes(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    """INVALID indexes of the world's schemas, with the pid still building one, if any."""
    with conn.cursor(row_factory=dict_row) as cur:
        return list(cur.execute(sql.load("migrate/invalid_indexes")).fetchall())
