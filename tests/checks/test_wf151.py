"""WF151: catalog drift (a skipped upgrade) and INVALID indexes (a failed concurrent build)."""

from __future__ import annotations

import psycopg
import pytest

from tests.checks.conftest import assert_fires


def test_missing_columns_of_a_skipped_upgrade(real_world, doctor) -> None:
    # The 4.3.7 -> beta.29 upgrade silently skips 0011-0014 (reference §1.6).
    with real_world.connect() as conn:
        conn.execute("ALTER TABLE workflow.workflow_runs DROP COLUMN error_code")
        conn.execute("ALTER TABLE workflow.workflow_runs DROP COLUMN attributes")
    check = assert_fires(doctor, real_world, "WF151", None)
    entities = {s["entity_id"] for s in check["samples"]}
    assert any("workflow_runs.error_code" in e for e in entities)
    assert any("workflow_runs.attributes" in e for e in entities)


def test_invalid_index_left_by_a_failed_concurrent_build(real_world, doctor) -> None:
    with real_world.connect() as conn:
        for _ in range(2):
            conn.execute(
                "INSERT INTO workflow.workflow_events (id, type, run_id) VALUES"
                " (md5(random()::text), 'x', 'wrun_dup')"
            )
        conn.execute(
            "UPDATE workflow.workflow_events SET id = 'same' WHERE run_id = 'wrun_dup'"
            " AND id = (SELECT min(id) FROM workflow.workflow_events"
            " WHERE run_id = 'wrun_dup')"
        )
        conn.execute("ALTER TABLE workflow.workflow_events DROP CONSTRAINT workflow_events_pkey")
        conn.execute("UPDATE workflow.workflow_events SET id = 'same' WHERE run_id = 'wrun_dup'")
        with pytest.raises(psycopg.errors.UniqueViolation):
            conn.execute(
                "CREATE UNIQUE INDEX CONCURRENTLY workflow_events_run_id_id_idx"
                " ON workflow.workflow_events (run_id, id)"
            )
    check = assert_fires(doctor, real_world, "WF151", "workflow.workflow_events_run_id_id_idx")
    assert any("INVALID" in s["detail"] for s in check["samples"])


def test_additions_are_tolerated(real_world, doctor) -> None:
    # later upstream releases add columns (reference §1.4): not drift
    with real_world.connect() as conn:
        conn.execute("ALTER TABLE workflow.workflow_events ADD COLUMN resume_id varchar")
    _, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF151")
    assert checks["WF151"]["count"] == 0
