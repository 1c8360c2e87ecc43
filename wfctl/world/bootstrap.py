"""`wfctl bootstrap`: create a world identical to the package's, via alembic revisions.

The revisions (in `migrations/versions/`) run wfctl's own DDL from `sql/bootstrap/`. For a
database that already holds a world, nothing is created: the live catalog is compared with
the expected one for the requested era and, when equal, the revision is only stamped; when
different, bootstrap refuses and prints how they differ. Idempotent by construction.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection as SAConnection
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import NullPool

from wfctl import sql
from wfctl.errors import RefusedError
from wfctl.world import catalog, drizzle, model

MIGRATIONS_DIR = sql.shipped("migrations")
WFCTL_HEAD = "w0001_wfctl_schema"
# wfctl's own branch (label `wfctl`, off w0001): tables in schema `wfctl` only, for either
# era. A bootstrapped database holds two heads: its era revision and this one.
WORKER_HEAD = "w0006_wfctl_hooks"
ERA_REVISION = {"beta29": "w0002_world_beta29", "slot": "w0003_world_slot"}


@dataclass
class BootstrapResult:
    era: str
    action: str  # "created", "adopted", "unchanged"
    revision: str


def run_sql_file(bind: SAConnection, name: str) -> None:
    """Execute one `sql/<name>.sql` file as a single multi-statement batch."""
    bind.exec_driver_sql(sql.load(name))


def record_drizzle_migrations(bind: SAConnection) -> None:
    """Record 0000-0017 as drizzle would, so the package's own migrator then does nothing."""
    for m in drizzle.BETA29:
        bind.execute(
            text(
                "INSERT INTO workflow_drizzle.workflow_migrations (hash, created_at)"
                " VALUES (:hash, :created_at)"
            ),
            {"hash": m.sha256, "created_at": m.when},
        )


def _config(connection: SAConnection) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["connection"] = connection
    return cfg


def _current_heads(connection: SAConnection) -> set[str]:
    ctx = MigrationContext.configure(
        connection, opts={"version_table": "alembic_version", "version_table_schema": "wfctl"}
    )
    return set(ctx.get_current_heads())


def bootstrap(conn: psycopg.Connection[Any], era: str) -> BootstrapResult:
    """Bring the database to `era`, creating, adopting or refusing as described above."""
    world = model.inspect(conn, with_drift=False)
    target = ERA_REVISION[era]
    if world.present:
        _check_existing(conn, world, era)
    with _alembic(conn) as sa_conn:
        cfg = _config(sa_conn)
        heads = _current_heads(sa_conn)
        if world.present:
            if target in heads and WORKER_HEAD in heads:
                return BootstrapResult(era, "unchanged", target)
            action = "unchanged" if target in heads else "adopted"
            if not heads:
                command.upgrade(cfg, WFCTL_HEAD)  # wfctl's own schema only
            if target not in heads:
                command.stamp(cfg, target)  # the world is the package's: stamped, not run
            command.upgrade(cfg, WORKER_HEAD)  # wfctl's branch: schema `wfctl` only
            return BootstrapResult(era, action, target)
        command.upgrade(cfg, target)
        command.upgrade(cfg, WORKER_HEAD)
        return BootstrapResult(era, "created", target)


@contextmanager
def _alembic(conn: psycopg.Connection[Any]) -> Iterator[SAConnection]:
    """One transaction on a second connection to `conn`'s database for alembic, holding
    wfctl's schema lock: two wfctl processes creating or adopting schema `wfctl` at the same
    moment (two cron repairs, a repair and a bootstrap) run one after the other, and the
    second finds the revisions applied (alembic reads the heads after the lock is held)."""
    conninfo = conn.info.dsn
    password = conn.info.password
    engine = create_engine(
        "postgresql+psycopg://",
        creator=lambda: psycopg.connect(conninfo, password=password),
        poolclass=NullPool,
    )
    try:
        with engine.begin() as sa_conn:
            sa_conn.exec_driver_sql(sql.load("bootstrap/schema_lock"))
            yield sa_conn
    except DBAPIError as exc:  # the driver's own error, so callers classify it (privileges)
        if isinstance(exc.orig, psycopg.Error):
            raise exc.orig from None
        raise
    finally:
        engine.dispose()


def ensure_audit_schema(conn: psycopg.Connection[Any]) -> bool:
    """Create the repair audit log (schema `wfctl`, revision w0001) when it is missing.

    Why here and not "run `wfctl bootstrap` first": at 3 a.m. an operator runs `repair
    --apply` on whatever world they have (restored, never seen by wfctl). The audit table is
    wfctl's own and lives only in schema `wfctl`; creating it touches nothing of the
    package's, so it needs no adoption of the world. It is the same alembic revision
    bootstrap applies (so a later `wfctl bootstrap` adopts the world and stamps the era on
    top), in its own committed transaction before any repair, idempotent, and serialised by
    the schema lock. Returns whether it created anything.
    """
    if _has_audit_log(conn):
        return False
    try:
        with _alembic(conn) as sa_conn:
            if sa_conn.exec_driver_sql(sql.load("bootstrap/audit_log_exists")).scalar():
                return False  # a concurrent first run made it while we waited for the lock
            command.upgrade(_config(sa_conn), WFCTL_HEAD)
    except (DBAPIError, psycopg.Error) as exc:
        reason = str(getattr(exc, "orig", exc)).strip().splitlines()[0]
        raise RefusedError(
            f"cannot create schema `wfctl` for the repair audit log: {reason}",
            hint="grant this role CREATE on the database, or run `wfctl bootstrap` once as an "
            "owner; nothing was repaired",
        ) from None
    return True


def _has_audit_log(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute(sql.load("bootstrap/audit_log_exists")).fetchone()
    return bool(row and row[0])


def ensure_worker_schema(conn: psycopg.Connection[Any]) -> bool:
    """Apply wfctl's own branch (the worker's tables) to a database wfctl has bootstrapped or
    adopted before this revision existed. Touches schema `wfctl` only. Returns whether it
    had to upgrade; refuses a database whose world wfctl does not manage yet."""
    row = conn.execute(sql.load("runtime/wfctl_tables")).fetchone()
    if row and row[1]:  # the newest revision of wfctl's branch (w0006: the hook tables)
        return False
    world = model.inspect(conn, with_drift=False)
    if not world.has_wfctl:
        raise RefusedError(
            "this world is not managed by wfctl yet (no schema `wfctl`)",
            hint="run `wfctl bootstrap` (it adopts an identical existing world) first",
        )
    with _alembic(conn) as sa_conn:
        command.upgrade(_config(sa_conn), WORKER_HEAD)
    return True


def _check_existing(conn: psycopg.Connection[Any], world: model.World, era: str) -> None:
    """An existing world must already be the requested era's catalog, compared by meaning
    (catalog.compare): a world moved with pg_dump/restore prints its index predicate
    differently and is still adopted; any real difference, even a newer package's addition,
    is refused (bootstrap never alters an existing world)."""
    if world.era == "slot" and era == "beta29":
        raise RefusedError(
            "this database holds a slot-era world; it cannot be bootstrapped as beta.29",
            hint="use --era slot",
        )
    if world.era == "beta29" and era == "slot":
        raise RefusedError(
            "this database holds a beta.29-shape world; bootstrap does not convert a live world",
            hint="`wfctl migrate --online` swaps the event key without blocking writers",
        )
    if world.era != era:
        raise RefusedError(
            f"this database holds a {world.kind}; bootstrap only adopts an identical world",
            hint="`wfctl info` shows its era, migrations and catalog drift",
        )
    differences = [d.text for d in catalog.compare(conn, era)]
    if differences:
        shown = "; ".join(differences[:5])
        more = f" (+{len(differences) - 5} more)" if len(differences) > 5 else ""
        raise RefusedError(
            f"an existing world differs from the {era} catalog: {shown}{more}",
            hint="`wfctl info` shows the full drift; bootstrap never alters an existing world",
        )
