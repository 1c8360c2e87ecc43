"""`wfctl info` names the era, the recorded migrations, the queue and any drift."""

from __future__ import annotations

import json

from wfctl.errors import ExitStatus
from wfctl.world import drizzle


def test_info_on_a_world_made_by_the_real_package(real_world, run_cli) -> None:
    status, out, err = run_cli("--dsn", real_world.dsn, "--format", "json", "info")
    assert status == 0, err
    report = json.loads(out)
    assert report["era"] == "beta29" and report["world"] is True
    assert report["migrations"] == [m.tag for m in drizzle.BETA29]
    assert report["schemas"]["graphile_worker"] is True
    assert report["events_key"] == "id"
    assert report["catalog_drift"] == []
    assert report["dsn_source"] == "--dsn"


def test_info_text_on_a_slot_world(slot_world, run_cli) -> None:
    status, out, _ = run_cli("--dsn", slot_world.dsn, "info")
    assert status == 0
    assert "slot-era world" in out and "(run_id,id)" in out
    assert "graphile_worker not installed" in out
    assert "matches the expected catalog" in out


def test_info_reports_drift_of_a_skipped_upgrade(wfctl_world, run_cli) -> None:
    # A 4.3.7 -> beta.29 upgrade silently skips 0011-0014 (reference §1.6).
    with wfctl_world.connect() as conn:
        conn.execute("ALTER TABLE workflow.workflow_runs DROP COLUMN error_code")
        conn.execute("ALTER TABLE workflow.workflow_hooks DROP COLUMN is_system")
    status, out, _ = run_cli("--dsn", wfctl_world.dsn, "info")
    assert status == 0
    assert "missing column workflow.workflow_runs.error_code" in out
    assert "missing column workflow.workflow_hooks.is_system" in out


def test_info_env_precedence_is_reported(wfctl_world, run_cli, monkeypatch) -> None:
    monkeypatch.setenv("WORKFLOW_POSTGRES_URL", wfctl_world.dsn)
    monkeypatch.setenv("DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")
    status, out, _ = run_cli("--format", "json", "info")
    assert status == 0 and json.loads(out)["dsn_source"] == "WORKFLOW_POSTGRES_URL"


def test_info_without_a_world_exits_unknown(empty_db, run_cli) -> None:
    status, out, err = run_cli("--dsn", empty_db.dsn, "info")
    assert status == ExitStatus.UNKNOWN
    assert "no world" in out
    assert err.startswith("wfctl: error:") and err.count("\n") == 1 and "bootstrap" in err


def test_info_on_a_half_migrated_world_exits_unknown(wfctl_world, run_cli) -> None:
    with wfctl_world.connect() as conn:
        conn.execute("CREATE TABLE workflow.workflow_event_slots (run_id varchar PRIMARY KEY)")
    status, out, err = run_cli("--dsn", wfctl_world.dsn, "--format", "json", "info")
    assert status == ExitStatus.UNKNOWN
    assert json.loads(out)["era"] == "half-slot"
    assert "half-migrated" in err


def test_info_lists_the_tasks_the_queue_has_seen(real_world, run_cli) -> None:
    """A 4.x past leaves `<prefix>steps` jobs on a later world: info shows what was queued."""
    with real_world.connect() as conn:
        conn.execute("SELECT graphile_worker.add_job('workflow_steps', '{}'::json)")
    status, out, err = run_cli("--dsn", real_world.dsn, "--format", "json", "info")
    assert status == 0, err
    assert {"identifier": "workflow_steps", "jobs": 1} in json.loads(out)["queue_tasks"]
    status, out, _ = run_cli("--dsn", real_world.dsn, "info")
    assert "tasks seen: workflow_steps (1 job)" in out
