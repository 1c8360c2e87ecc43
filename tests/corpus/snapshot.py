"""What "nothing was written" and "this run was not touched" mean, as data to compare.

Why: a dry run must write 0 bytes and a repair must leave every healthy run exactly as it was.
Counting rows would miss an UPDATE; so `digests` hashes every row of every table in every
schema (the audit schema included, and the list of schemas, so a created `wfctl` schema
shows), and `run_rows` keeps, per run, the full text of its rows in the world's tables and
of every queue job naming it.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from tests.faults import TABLES

SYSTEM_SCHEMAS = ("pg_catalog", "information_schema", "pg_toast")
RUN_TABLES = TABLES  # the world's tables and the column naming the run
# The run a queue job (alias j) names: its payload's `data` is the base64 JSON body; a flow job's
# body names it `runId`, a 4.x step job's (task `workflow_steps`) `workflowRunId`.
_JOB_BODY = "convert_from(decode(j.payload->>'data', 'base64'), 'UTF8')::jsonb"
JOB_RUN_ID = f"coalesce({_JOB_BODY}->>'runId', {_JOB_BODY}->>'workflowRunId')"


def digests(dsn: str) -> dict[str, str]:
    """{"schema.table": md5 of its sorted rows} for every table, plus "<schemas>"."""
    out: dict[str, str] = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT n.nspname, c.relname FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE c.relkind IN ('r', 'p') AND n.nspname <> ALL(%s)"
            " AND n.nspname NOT LIKE 'pg\\_temp%%' ORDER BY 1, 2",
            (list(SYSTEM_SCHEMAS),),
        ).fetchall()
        schemas = conn.execute(
            "SELECT string_agg(nspname, ',' ORDER BY nspname) FROM pg_namespace"
            " WHERE nspname <> ALL(%s) AND nspname NOT LIKE 'pg\\_%%'",
            (list(SYSTEM_SCHEMAS),),
        ).fetchone()
        out["<schemas>"] = str(schemas[0] if schemas else "")
        for schema, table in tables:
            row = conn.execute(
                sql.SQL(
                    "SELECT count(*) || ':' || coalesce(md5(string_agg(t::text, E'\\n'"
                    " ORDER BY t::text)), '') FROM {} t"
                ).format(sql.Identifier(schema, table))
            ).fetchone()
            out[f"{schema}.{table}"] = str(row[0] if row else "")
    return out


def schemas(dsn: str) -> set[str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return {str(r[0]) for r in conn.execute("SELECT nspname FROM pg_namespace").fetchall()}


def run_rows(dsn: str, run_ids: list[str], jobs: bool = True) -> dict[str, dict[str, list[str]]]:
    """Per run: {table: sorted row texts} over the world's tables (and the jobs naming it)."""
    out: dict[str, dict[str, list[str]]] = {r: {} for r in run_ids}
    with psycopg.connect(dsn, autocommit=True) as conn:
        for table, column in RUN_TABLES.items():
            rows = conn.execute(
                sql.SQL("SELECT t.{col}, t::text FROM {tbl} t WHERE t.{col} = ANY(%s)").format(
                    col=sql.Identifier(column), tbl=sql.Identifier("workflow", table)
                ),
                (run_ids,),
            ).fetchall()
            for run_id, text in rows:
                out[run_id].setdefault(table, []).append(text)
        if jobs:
            rows = conn.execute(
                f"SELECT {JOB_RUN_ID}, j::text FROM graphile_worker._private_jobs j"
                f" WHERE {JOB_RUN_ID} = ANY(%s)",
                (run_ids,),
            ).fetchall()
            for run_id, text in rows:
                out[run_id].setdefault("jobs", []).append(text)
    for tables in out.values():
        for rows_ in tables.values():
            rows_.sort()
    return out


def changed(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Keys whose value differs (or that appear/disappear)."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


DUPLICATE_FREE = (
    "run_created",
    "run_completed",
    "run_failed",
    "run_cancelled",
    "step_created",
    "step_completed",
    "step_failed",
    "wait_created",
    "wait_completed",
    "hook_created",
    "hook_disposed",
)


def duplicate_events(dsn: str, run_id: str) -> list[tuple[str, str | None, int]]:
    """(type, correlation_id, count) of events a log may hold once only, held more than once."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT type, correlation_id, count(*) FROM workflow.workflow_events"
            " WHERE run_id = %s AND type = ANY(%s) GROUP BY 1, 2 HAVING count(*) > 1",
            (run_id, list(DUPLICATE_FREE)),
        ).fetchall()
    return [(str(t), c, int(n)) for t, c, n in rows]
