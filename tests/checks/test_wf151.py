"""WF151: catalog drift (a skipped upgrade) and INVALID indexes (a failed concurrent build)."""

from __future__ import annotations

import jsonschema
import psycopg
import pytest

from tests.checks.conftest import assert_fires
from tests.test_doctor import SCHEMA


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


def test_known_newer_additions_are_info_naming_their_migration(real_world, doctor) -> None:
    # What 0018-0027 add (upstream's migration files, by effect): expected on a world a newer
    # package upgraded, so neither critical nor a warning.
    with real_world.connect() as conn:
        conn.execute(
            """
            ALTER TABLE workflow.workflow_hooks ADD COLUMN token_retention_until timestamptz;
            ALTER TABLE workflow.workflow_hooks ADD COLUMN claimed_from bytea;
            ALTER TABLE workflow.workflow_events ADD COLUMN resume_id varchar;
            ALTER TABLE workflow.workflow_events ADD COLUMN resume_payload_digest varchar;
            CREATE UNIQUE INDEX workflow_events_hook_resume_unique
                ON workflow.workflow_events (run_id, resume_id)
                WHERE type = 'hook_received' AND resume_id IS NOT NULL;
            ALTER TABLE workflow.workflow_stream_chunks ADD COLUMN stream_index integer;
            CREATE TABLE workflow.workflow_invocations (
                sequence bigserial NOT NULL, run_id varchar NOT NULL,
                request_id varchar NOT NULL, result_version integer NOT NULL DEFAULT 0,
                PRIMARY KEY (run_id, request_id));
            CREATE TABLE workflow.workflow_snapshots (run_id varchar PRIMARY KEY);
            ALTER TABLE workflow.workflow_runs ADD COLUMN job_prefix varchar;
            SET LOCAL TimeZone = 'UTC';
            ALTER TABLE workflow.workflow_waits ALTER COLUMN resume_at TYPE timestamptz;
            """
        )
    status, checks, report = doctor(
        real_world, "--min-age", "0s", "--only", "WF151", "--limit", "50"
    )
    jsonschema.validate(report, SCHEMA)  # per-finding severity is part of report v1
    check = checks["WF151"]
    assert status == 0 and check["status"] == "info", check
    assert {s["severity"] for s in check["samples"]} == {"info"}
    named = {s["entity_id"]: s["detail"] for s in check["samples"]}
    assert (
        "0018 hook token retention" in named["column workflow.workflow_hooks.token_retention_until"]
    )
    assert "0021" in named["index workflow.workflow_events:workflow_events_hook_resume_unique"]
    assert "0026 timestamps with time zone" in named["column workflow.workflow_waits.resume_at"]
    assert "table workflow.workflow_invocations" in named  # known whole: its columns are its own
    assert not any(e.startswith("column workflow.workflow_invocations") for e in named)


def test_an_unknown_addition_is_a_warning_naming_it(real_world, doctor) -> None:
    with real_world.connect() as conn:
        conn.execute("ALTER TABLE workflow.workflow_runs ADD COLUMN tenant text")
        conn.execute("CREATE INDEX ops_runs_tenant ON workflow.workflow_runs (tenant)")
    status, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF151")
    check = checks["WF151"]
    assert status == 1 and check["status"] == "warning", check
    named = {s["entity_id"]: s for s in check["samples"]}
    assert named["column workflow.workflow_runs.tenant"]["severity"] == "warning"
    assert "ops_runs_tenant" in named["index workflow.workflow_runs:ops_runs_tenant"]["detail"]


def test_missing_beats_known_additions(real_world, doctor) -> None:
    with real_world.connect() as conn:
        conn.execute("ALTER TABLE workflow.workflow_hooks ADD COLUMN claimed_from bytea")
        conn.execute("ALTER TABLE workflow.workflow_hooks DROP COLUMN is_system")
    status, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF151")
    assert status == 2 and checks["WF151"]["status"] == "critical"
    severities = {s["entity_id"]: s["severity"] for s in checks["WF151"]["samples"]}
    assert severities == {
        "column workflow.workflow_hooks.is_system": "critical",
        "column workflow.workflow_hooks.claimed_from": "info",
    }


def test_a_changed_predicate_is_still_drift(real_world, doctor) -> None:
    # Meaning, not text: a predicate that really differs (4.3.7's, without attr_set) stays
    # critical, while the same predicate printed differently (pg_dump/restore) is equal.
    with real_world.connect() as conn:
        conn.execute(
            """
            DROP INDEX workflow.workflow_events_entity_creation_unique;
            CREATE UNIQUE INDEX workflow_events_entity_creation_unique
                ON workflow.workflow_events (run_id, correlation_id, type)
                WHERE type IN ('step_created', 'hook_created', 'wait_created');
            """
        )
    check = assert_fires(
        doctor,
        real_world,
        "WF151",
        "index workflow.workflow_events:workflow_events_entity_creation_unique",
    )
    assert check["status"] == "critical"


def test_the_restored_form_of_the_predicate_is_not_drift(real_world, doctor) -> None:
    # The exact text pg_dump/restore leaves on 14-18 (tests/test_pgmajors.py does the real
    # round trip on every major): the same index, printed differently.
    with real_world.connect() as conn:
        conn.execute(
            """
            DROP INDEX workflow.workflow_events_entity_creation_unique;
            CREATE UNIQUE INDEX workflow_events_entity_creation_unique
                ON workflow.workflow_events USING btree (run_id, correlation_id, type)
                WHERE ((type)::text = ANY (ARRAY[('step_created'::character varying)::text,
                    ('hook_created'::character varying)::text,
                    ('wait_created'::character varying)::text,
                    ('attr_set'::character varying)::text]));
            """
        )
        printed = conn.execute(
            "SELECT pg_get_indexdef('workflow.workflow_events_entity_creation_unique'::regclass)"
        ).fetchone()[0]
    assert "ARRAY[('step_created'::character varying)::text" in printed  # not the package's text
    status, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF151")
    assert status == 0 and checks["WF151"]["count"] == 0, checks["WF151"]


def test_a_newer_slot_era_world_is_info_not_drift(slot_world, doctor) -> None:
    # 0026 gives the slot marker a state column; 0020 adds the invocations mailbox.
    with slot_world.connect() as conn:
        conn.execute(
            "ALTER TABLE workflow.workflow_event_slots"
            " ADD COLUMN seq_in_band integer NOT NULL DEFAULT 1"
        )
    status, checks, _ = doctor(slot_world, "--min-age", "0s", "--only", "WF151")
    [sample] = checks["WF151"]["samples"]
    assert status == 0 and checks["WF151"]["status"] == "info"
    assert sample["entity_id"] == "column workflow.workflow_event_slots.seq_in_band"
    assert "0026 seq_in_band" in sample["detail"]
