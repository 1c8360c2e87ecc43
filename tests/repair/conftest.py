"""Fixtures for repair tests: a real-package world adopted by `wfctl bootstrap` (for the audit
schema), faults produced through the real write path, and repair/doctor as JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests import realworld as rw
from tests.conftest import Db
from tests.faults import drop_faults
from wfctl.world.bootstrap import bootstrap

FORCE = ("--min-age", "0s", "--force-min-age")


@pytest.fixture
def world(real_world: Db) -> rw.RealWorld:
    with real_world.connect() as conn:
        bootstrap(conn, "beta29")  # adopt: adds only the wfctl schema (audit log)
    yield rw.RealWorld(real_world.dsn)
    with real_world.connect() as conn:
        drop_faults(conn)


@pytest.fixture
def repair(run_cli: Any) -> Any:
    """repair(db, *args) -> (exit status, report dict)."""

    def run(db: Db, *args: str) -> tuple[int, dict[str, Any]]:
        status, out, err = run_cli("--dsn", db.dsn, "--format", "json", "repair", *args)
        assert out, err
        return status, json.loads(out)

    return run


@pytest.fixture
def apply(repair: Any) -> Any:
    def run(db: Db, *args: str) -> tuple[int, dict[str, Any]]:
        return repair(db, "--apply", "--yes", "--reason", "test", *FORCE, *args)

    return run


def outcomes(report: dict[str, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for item in report["items"]:
        out.setdefault(item["code"], []).append(item["outcome"])
    return out


def events(db: Db, run_id: str, correlation_id: str | None = None) -> list[tuple[Any, ...]]:
    """(id, type, correlation_id, payload_cbor, spec_version) in log order."""
    with db.connect() as conn:
        return conn.execute(
            "SELECT id, type, correlation_id, payload_cbor, spec_version"
            " FROM workflow.workflow_events WHERE run_id = %s"
            " AND (%s::text IS NULL OR correlation_id = %s) ORDER BY id",
            (run_id, correlation_id, correlation_id),
        ).fetchall()


@pytest.fixture
def doctor_json(run_cli: Any) -> Any:
    def run(db: Db, *args: str) -> dict[str, Any]:
        _, out, err = run_cli(
            "--dsn", db.dsn, "--format", "json", "doctor", "--min-age", "0s", *args
        )
        assert out, err
        return json.loads(out)

    return run
