"""`repair --apply` on a world wfctl never saw: it creates its own audit log, and only that.

The world is the real package's own bootstrap with one torn write (F5), never adopted by
`wfctl bootstrap` (the `world` fixture of this folder adopts; these tests do not use it).
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

import psycopg
import pytest

from tests import realworld as rw
from tests.checks.test_wf111 import finished_step_without_event
from tests.conftest import Db
from tests.faults import drop_faults
from tests.repair.conftest import FORCE
from wfctl import sql
from wfctl.world import catalog
from wfctl.world.bootstrap import ensure_audit_schema

WAITING_FOR_SCHEMA_LOCK = """
SELECT count(*) FROM pg_locks
WHERE locktype = 'advisory' AND NOT granted
  AND classid = 2003199860::oid AND objid = 1935894637::oid AND objsubid = 2
"""


@pytest.fixture
def torn(real_world: Db) -> tuple[str, str]:
    run_id, step_id = finished_step_without_event(
        rw.RealWorld(real_world.dsn), real_world, "step_completed"
    )
    with real_world.connect() as conn:
        drop_faults(conn)
        assert conn.execute("SELECT to_regnamespace('wfctl')").fetchone() == (None,)
    return run_id, step_id


def _apply(run_cli: Any, dsn: str, *args: str) -> tuple[int, str, str]:
    return run_cli(
        "--dsn", dsn, "--format", "json", "repair", "--apply", "--yes", "--reason", "3am",
        *FORCE, *args,
    )  # fmt: skip


def test_apply_creates_its_audit_log_repairs_and_audits(real_world, torn, run_cli) -> None:
    run_id, step_id = torn
    with real_world.connect() as conn:
        package_before = catalog.describe(conn)
    status, out, err = _apply(run_cli, real_world.dsn, "--only", "WF111")
    assert status == 0, (out, err)
    assert "created schema `wfctl` for the repair audit log" in err
    [item] = json.loads(out)["items"]
    assert (item["code"], item["run_id"], item["outcome"]) == ("WF111", run_id, "applied")
    status, out, _ = run_cli(
        "--dsn", real_world.dsn, "--format", "json", "repair", "log", "--run", run_id
    )
    [entry] = json.loads(out)
    assert (entry["code"], entry["entity_id"], entry["reason"]) == ("WF111", step_id, "3am")
    assert entry["event_ids"] == item["event_ids"]
    with real_world.connect() as conn:
        # only schema `wfctl` was added: the package's schemas are as the package made them
        assert catalog.describe(conn) == package_before
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'wfctl'"
            " ORDER BY 1"
        ).fetchall()
        assert tables == [("alembic_version",), ("repair_log",)]
        assert conn.execute("SELECT version_num FROM wfctl.alembic_version").fetchall() == [
            ("w0001_wfctl_schema",)
        ]
    # the second apply finds nothing and says nothing about the schema
    status, out, err = _apply(run_cli, real_world.dsn, "--only", "WF111")
    assert status == 0 and json.loads(out)["items"] == [] and "created schema" not in err
    # and `wfctl bootstrap` adopts the world on top of that revision
    status, out, err = run_cli("--dsn", real_world.dsn, "bootstrap")
    assert status == 0 and "adopted" in out, (out, err)
    status, out, _ = run_cli("--dsn", real_world.dsn, "bootstrap")
    assert status == 0 and "nothing to do" in out


def test_a_dry_run_creates_nothing(real_world, torn, run_cli) -> None:
    _, out, _ = run_cli("--dsn", real_world.dsn, "--format", "json", "repair", *FORCE)
    assert json.loads(out)["items"][0]["code"] == "WF111"
    with real_world.connect() as conn:
        assert conn.execute("SELECT to_regnamespace('wfctl')").fetchone() == (None,)


def test_concurrent_first_runs_take_turns_under_the_schema_lock(real_world) -> None:
    """Two first runs at once: the lock makes the second wait, then find the revision
    applied (no duplicate-schema error, one alembic row)."""
    results: list[bool | BaseException] = []

    def first_run() -> None:
        try:
            with psycopg.connect(real_world.dsn, autocommit=True) as conn:
                results.append(ensure_audit_schema(conn))
        except BaseException as exc:
            results.append(exc)

    with psycopg.connect(real_world.dsn) as holder:
        holder.execute(sql.load("bootstrap/schema_lock"))  # as another wfctl would hold it
        threads = [threading.Thread(target=first_run) for _ in range(2)]
        for thread in threads:
            thread.start()
        waiting = 0
        for _ in range(600):  # both are queued behind the lock (a condition, not a duration)
            with psycopg.connect(real_world.dsn, autocommit=True) as probe:
                waiting = probe.execute(WAITING_FOR_SCHEMA_LOCK).fetchone()[0]
            if waiting == 2:
                break
            time.sleep(0.05)
        assert waiting == 2
        assert real_world.scalar("SELECT to_regclass('wfctl.repair_log')") is None
        holder.rollback()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(results, key=str) == [False, True], results
    assert real_world.scalar("SELECT count(*) FROM wfctl.alembic_version") == 1


def test_without_create_privilege_apply_refuses_in_one_line(real_world, torn, run_cli) -> None:
    role = f"wfctl_nocreate_{os.getpid()}"
    with real_world.connect() as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f'REVOKE CREATE ON DATABASE "{real_world.name}" FROM PUBLIC, {role}')
        for schema in ("workflow", "workflow_drizzle", "graphile_worker"):
            conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
            conn.execute(f"GRANT ALL ON ALL TABLES IN SCHEMA {schema} TO {role}")
        for table in (
            "_private_jobs",
            "_private_tasks",
            "_private_job_queues",
            "_private_known_crontabs",
        ):
            conn.execute(
                f"CREATE POLICY nocreate ON graphile_worker.{table} FOR ALL TO {role}"
                " USING (true) WITH CHECK (true)"
            )
    dsn = psycopg.conninfo.make_conninfo(real_world.dsn, user=role)
    try:
        status, out, err = _apply(run_cli, dsn)
        assert status == 2 and not out
        [line] = err.strip().splitlines()
        assert "cannot create schema `wfctl` for the repair audit log" in line
        assert "permission denied" in line and "nothing was repaired" in line
        with real_world.connect() as conn:
            assert conn.execute("SELECT to_regnamespace('wfctl')").fetchone() == (None,)
            kinds = conn.execute(
                "SELECT type FROM workflow.workflow_events WHERE correlation_id = %s ORDER BY id",
                (torn[1],),
            ).fetchall()
        assert kinds == [("step_created",), ("step_started",)]  # nothing written
    finally:
        with real_world.connect() as conn:
            for schema in ("workflow", "workflow_drizzle", "graphile_worker"):
                conn.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA {schema} FROM {role}")
                conn.execute(f"REVOKE USAGE ON SCHEMA {schema} FROM {role}")
            conn.execute(f'REVOKE ALL ON DATABASE "{real_world.name}" FROM {role}')
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")
