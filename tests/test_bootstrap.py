"""`wfctl bootstrap`: creates, adopts, is idempotent, and refuses to touch a different world."""

from __future__ import annotations

import json

from wfctl.errors import ExitStatus
from wfctl.world import catalog, drizzle


def test_creates_a_beta29_world_and_is_idempotent(empty_db, run_cli) -> None:
    status, out, _ = run_cli("--dsn", empty_db.dsn, "--format", "json", "bootstrap")
    assert status == 0 and json.loads(out)["action"] == "created"
    status, out, _ = run_cli("--dsn", empty_db.dsn, "--format", "json", "bootstrap")
    assert status == 0 and json.loads(out)["action"] == "unchanged"
    with empty_db.connect() as conn:
        assert catalog.diff(catalog.expected("beta29"), catalog.describe(conn)) == []
        rows = conn.execute(
            "SELECT hash, created_at FROM workflow_drizzle.workflow_migrations ORDER BY id"
        ).fetchall()
        assert rows == [(m.sha256, m.when) for m in drizzle.BETA29]
        assert conn.execute("SELECT count(*) FROM wfctl.repair_log").fetchone() == (0,)
        assert conn.execute("SELECT version_num FROM wfctl.alembic_version").fetchone() == (
            "w0002_world_beta29",
        )


def test_slot_era_catalog_has_the_reference_changes(empty_db, run_cli) -> None:
    status, _, _ = run_cli("--dsn", empty_db.dsn, "bootstrap", "--era", "slot")
    assert status == 0
    with empty_db.connect() as conn:
        live = catalog.describe(conn)
    assert catalog.diff(catalog.expected("slot"), live) == []
    events = live["tables"]["workflow.workflow_events"]
    assert events["constraints"] == {"workflow_events_run_id_id_pk": "PRIMARY KEY (run_id, id)"}
    assert "workflow_events_run_id_index" not in events["indexes"]
    assert "workflow_events_entity_creation_unique" in events["indexes"]
    slots = live["tables"]["workflow.workflow_event_slots"]
    assert slots["columns"] == [["run_id", "character varying", True, None]]
    assert slots["constraints"] == {"workflow_event_slots_pkey": "PRIMARY KEY (run_id)"}
    hooks = live["tables"]["workflow.workflow_hooks"]["columns"]
    assert hooks[-1] == ["token_retention_until", "timestamp with time zone", False, None]
    # Apart from those, the slot era is the beta.29 catalog.
    beta = catalog.expected("beta29")
    assert beta["enums"] == live["enums"]
    for name in ("workflow.workflow_runs", "workflow.workflow_steps", "workflow.workflow_waits"):
        assert beta["tables"][name] == live["tables"][name]


def test_refuses_a_world_that_differs_and_writes_nothing(wfctl_world, run_cli) -> None:
    with wfctl_world.connect() as conn:
        conn.execute("ALTER TABLE workflow.workflow_runs DROP COLUMN attributes")
        conn.execute("DROP SCHEMA wfctl CASCADE")
        before = catalog.describe(conn)
    status, out, err = run_cli("--dsn", wfctl_world.dsn, "bootstrap")
    assert status == ExitStatus.CRITICAL
    assert out == ""
    assert err.count("\n") == 1 and "missing column workflow.workflow_runs.attributes" in err
    with wfctl_world.connect() as conn:
        assert catalog.describe(conn) == before
        assert conn.execute("SELECT to_regnamespace('wfctl')").fetchone() == (None,)


def test_refuses_to_convert_between_eras(wfctl_world, slot_world, run_cli) -> None:
    status, _, err = run_cli("--dsn", wfctl_world.dsn, "bootstrap", "--era", "slot")
    assert status == ExitStatus.CRITICAL and "migrate --online" in err
    status, _, err = run_cli("--dsn", slot_world.dsn, "bootstrap", "--era", "beta29")
    assert status == ExitStatus.CRITICAL and "slot-era" in err


def test_refuses_a_world_of_unknown_shape(wfctl_world, run_cli) -> None:
    with wfctl_world.connect() as conn:
        conn.execute(
            "INSERT INTO workflow_drizzle.workflow_migrations (hash, created_at)"
            " VALUES ('feedface', 1999999999999)"
        )
    status, _, err = run_cli("--dsn", wfctl_world.dsn, "bootstrap")
    assert status == ExitStatus.CRITICAL and "unknown" in err
