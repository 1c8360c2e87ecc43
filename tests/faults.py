"""Fault injection on a world's tables, to tear the package's non-atomic writes.

Why: in beta.29 several events are two autocommit statements (entity row, then event row;
reference §3.4). Failing or delaying the second one reproduces, through the real write path,
the states a crash or a lost connection leaves in production (F1 orphan step, F4 completed
wait without `wait_completed`, F5 completed step without `step_completed`, ...).

How: a `BEFORE INSERT` (or `UPDATE`) row trigger on `workflow.<table>` that matches one run id
(and optionally one event `type`, or the new `status`) and then RAISEs or `pg_sleep`s. Matches
are counted with a sequence: `nextval` is not rolled back with the failing statement, so
"fail exactly once" (`times=1`) and "let the first N through" (`skip=N`) are exact.

Every object is named `wfctl_fault_*` (triggers on the tables; one shared function and one
sequence per fault in schema `public`), so `drop_faults(conn)` can remove them all. Drop them
before handing the database to anything else. Use an autocommit connection.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
from collections.abc import Iterator
from types import TracebackType
from typing import Any

import psycopg
from psycopg import sql

PREFIX = "wfctl_fault_"
FUNCTION = "public.wfctl_fault_fn"
MESSAGE = "wfctl_fault"  # every injected error message starts with this
TABLES = {
    "workflow_runs": "id",
    "workflow_events": "run_id",
    "workflow_steps": "run_id",
    "workflow_waits": "run_id",
    "workflow_hooks": "run_id",
    "workflow_stream_chunks": "run_id",
}
_counter = itertools.count(1)

# TG_ARGV: 0 run column, 1 run id, 2 event type ('' = any), 3 new status ('' = any),
# 4 sequence, 5 skip, 6 times (-1 = unlimited), 7 action (raise|sleep), 8 seconds, 9 sqlstate
_FUNCTION_SQL = f"""
CREATE OR REPLACE FUNCTION {FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  r jsonb := to_jsonb(NEW);
  n bigint;
BEGIN
  IF r->>TG_ARGV[0] IS DISTINCT FROM TG_ARGV[1] THEN RETURN NEW; END IF;
  IF TG_ARGV[2] <> '' AND r->>'type' IS DISTINCT FROM TG_ARGV[2] THEN RETURN NEW; END IF;
  IF TG_ARGV[3] <> '' AND r->>'status' IS DISTINCT FROM TG_ARGV[3] THEN RETURN NEW; END IF;
  n := nextval(TG_ARGV[4]::regclass);
  IF n <= TG_ARGV[5]::bigint THEN RETURN NEW; END IF;
  IF TG_ARGV[6]::bigint >= 0 AND n > TG_ARGV[5]::bigint + TG_ARGV[6]::bigint THEN
    RETURN NEW;
  END IF;
  IF TG_ARGV[7] = 'sleep' THEN
    PERFORM pg_sleep(TG_ARGV[8]::float8);
    RETURN NEW;
  END IF;
  RAISE EXCEPTION '{MESSAGE} %: % on %.% for run %', TG_NAME, TG_OP, TG_TABLE_SCHEMA,
    TG_TABLE_NAME, TG_ARGV[1] USING ERRCODE = TG_ARGV[9];
END
$fn$
"""


class Fault:
    """One installed trigger; a context manager that drops it on exit."""

    def __init__(self, conn: psycopg.Connection[Any], name: str, table: str) -> None:
        self.conn = conn
        self.name = name
        self.table = table
        self.sequence = f"public.{name}_seq"

    def matches(self) -> int:
        """How many rows matched so far (skipped, failed/slept and let-through ones)."""
        row = self.conn.execute(
            sql.SQL("SELECT last_value, is_called FROM {}").format(
                sql.Identifier("public", f"{self.name}_seq")
            )
        ).fetchone()
        assert row is not None
        return int(row[0]) if row[1] else 0

    def drop(self) -> None:
        self.conn.execute(
            sql.SQL("DROP TRIGGER IF EXISTS {} ON {}").format(
                sql.Identifier(self.name), sql.Identifier("workflow", self.table)
            )
        )
        self.conn.execute(
            sql.SQL("DROP SEQUENCE IF EXISTS {}").format(
                sql.Identifier("public", f"{self.name}_seq")
            )
        )

    def __enter__(self) -> Fault:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.drop()


def _install(
    conn: psycopg.Connection[Any],
    table: str,
    run_id: str,
    *,
    event_type: str | None,
    status: str | None,
    times: int | None,
    skip: int,
    action: str,
    seconds: float = 0.0,
    on: str = "INSERT",
    sqlstate: str = "P0001",
) -> Fault:
    if table not in TABLES:
        raise ValueError(f"unknown world table {table!r}; one of {sorted(TABLES)}")
    if event_type is not None and table != "workflow_events":
        raise ValueError("event_type only applies to workflow_events (use status=)")
    if on not in ("INSERT", "UPDATE", "INSERT OR UPDATE", "DELETE"):
        raise ValueError(f"unsupported trigger event {on!r}")
    if on == "DELETE":
        raise ValueError("DELETE faults are not supported (NEW is NULL there)")
    name = f"{PREFIX}{table.removeprefix('workflow_')}_{os.getpid()}_{next(_counter)}"
    args = [
        TABLES[table],
        run_id,
        event_type or "",
        status or "",
        f"public.{name}_seq",
        str(skip),
        str(-1 if times is None else times),
        action,
        str(seconds),
        sqlstate,
    ]
    conn.execute(_FUNCTION_SQL)
    conn.execute(
        sql.SQL("CREATE SEQUENCE {} MINVALUE 1 START 1").format(
            sql.Identifier("public", f"{name}_seq")
        )
    )
    conn.execute(
        sql.SQL(
            "CREATE TRIGGER {name} BEFORE {on} ON {table}"
            " FOR EACH ROW EXECUTE FUNCTION {fn}({args})"
        ).format(
            name=sql.Identifier(name),
            on=sql.SQL(on),
            table=sql.Identifier("workflow", table),
            fn=sql.SQL(FUNCTION),
            args=sql.SQL(", ").join(sql.Literal(a) for a in args),
        )
    )
    return Fault(conn, name, table)


def fail_insert(
    conn: psycopg.Connection[Any],
    table: str,
    run_id: str,
    event_type: str | None = None,
    times: int | None = 1,
    skip: int = 0,
    *,
    status: str | None = None,
    on: str = "INSERT",
    sqlstate: str = "P0001",
) -> Fault:
    """RAISE on matching writes to `workflow.<table>` of one run: after `skip` matches,
    the next `times` (None = all) fail. `event_type` filters events by `type`, `status`
    filters by the new row's status (e.g. `on="UPDATE", status="completed"` on steps).
    The error message starts with `wfctl_fault`; `sqlstate` picks its SQLSTATE."""
    return _install(
        conn,
        table,
        run_id,
        event_type=event_type,
        status=status,
        times=times,
        skip=skip,
        action="raise",
        on=on,
        sqlstate=sqlstate,
    )


def slow_insert(
    conn: psycopg.Connection[Any],
    table: str,
    run_id: str,
    event_type: str | None,
    seconds: float,
    times: int | None = 1,
    skip: int = 0,
    *,
    status: str | None = None,
    on: str = "INSERT",
) -> Fault:
    """`pg_sleep(seconds)` before matching writes (the statement then proceeds); pair it with
    `wait_for_sleeper` + killing the writer + `terminate` to crash inside the window."""
    return _install(
        conn,
        table,
        run_id,
        event_type=event_type,
        status=status,
        times=times,
        skip=skip,
        action="sleep",
        seconds=seconds,
        on=on,
    )


def wait_for_sleeper(conn: psycopg.Connection[Any], timeout: float = 10.0) -> int:
    """The pid of a backend of this database currently in `pg_sleep` (a slow_insert hit)."""
    deadline = time.monotonic() + timeout
    while True:
        row = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event = 'PgSleep' AND pid <> pg_backend_pid() LIMIT 1"
        ).fetchone()
        if row:
            return int(row[0])
        if time.monotonic() > deadline:
            raise TimeoutError("no backend reached the injected pg_sleep")
        time.sleep(0.02)


def terminate(conn: psycopg.Connection[Any], pid: int) -> None:
    """Kill a backend so its in-flight statement never commits (the crash half of a window)."""
    conn.execute("SELECT pg_terminate_backend(%s)", (pid,))


def drop_faults(conn: psycopg.Connection[Any]) -> int:
    """Remove every trigger, sequence and function this module created; returns the count."""
    dropped = 0
    triggers = conn.execute(
        "SELECT t.tgname, n.nspname, c.relname FROM pg_trigger t"
        " JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE NOT t.tgisinternal AND t.tgname LIKE 'wfctl\\_fault\\_%'"
    ).fetchall()
    for tgname, schema, table in triggers:
        conn.execute(
            sql.SQL("DROP TRIGGER IF EXISTS {} ON {}").format(
                sql.Identifier(tgname), sql.Identifier(schema, table)
            )
        )
        dropped += 1
    sequences = conn.execute(
        "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE c.relkind = 'S' AND c.relname LIKE 'wfctl\\_fault\\_%'"
    ).fetchall()
    for schema, name in sequences:
        conn.execute(sql.SQL("DROP SEQUENCE IF EXISTS {}").format(sql.Identifier(schema, name)))
        dropped += 1
    functions = conn.execute(
        "SELECT p.oid::regprocedure::text FROM pg_proc p WHERE p.proname LIKE 'wfctl\\_fault\\_%'"
    ).fetchall()
    for (signature,) in functions:
        conn.execute(sql.SQL("DROP FUNCTION IF EXISTS {} CASCADE").format(sql.SQL(signature)))
        dropped += 1
    return dropped


def installed_faults(conn: psycopg.Connection[Any]) -> list[str]:
    """Names of every `wfctl_fault_*` object still in the database (should be [] after tests)."""
    rows = conn.execute(
        "SELECT tgname FROM pg_trigger WHERE tgname LIKE 'wfctl\\_fault\\_%'"
        " UNION ALL SELECT relname FROM pg_class WHERE relname LIKE 'wfctl\\_fault\\_%'"
        " UNION ALL SELECT proname FROM pg_proc WHERE proname LIKE 'wfctl\\_fault\\_%'"
    ).fetchall()
    return sorted(r[0] for r in rows)


@contextlib.contextmanager
def held(dsn: str, statement: str, params: tuple[Any, ...] = ()) -> Iterator[None]:
    """Another session holds what `statement` locks (a row `FOR UPDATE`, a `LOCK TABLE`) until
    the block ends: the contention a repair or a check meets beside a live writer."""
    ready, release = threading.Event(), threading.Event()

    def hold() -> None:
        with psycopg.connect(dsn) as conn:
            conn.execute(statement, params)
            ready.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert ready.wait(10), "the holding session did not take its lock"
        yield
    finally:
        release.set()
        holder.join()


ROW_LOCK = "SELECT 1 FROM workflow.workflow_runs WHERE id = %s FOR UPDATE"  # for held()
