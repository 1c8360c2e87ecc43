"""`wfctl doctor` as a whole: every family at once, the formats, read-only, privileges."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import jsonschema
import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests import realworld as rw
from tests.conftest import _create_db, _drop_db
from tests.faults import drop_faults, fail_insert, held
from wfctl.errors import ExitStatus

SCHEMA = json.loads(
    (Path(__file__).resolve().parent.parent / "docs/schemas/doctor-report.v1.json").read_text()
)


@pytest.fixture(scope="module")
def real_world(pg_server, real_template):
    """One world for the module: the tests only read it (test_doctor_writes_nothing checks)."""
    db = _create_db(pg_server, real_template)
    yield db
    _drop_db(pg_server, db)


@pytest.fixture(scope="module")
def sick_world(real_world):
    """One world carrying every beta.29 family, written through the real package."""
    world = rw.RealWorld(real_world.dsn)
    expect = {}
    with real_world.connect() as conn:
        run = world.new_run()
        step = rw.new_step_id()
        with fail_insert(conn, "workflow_events", run, "step_created"):
            world.ops([rw.step_created(run, step, rw.STEP, rw.devl("[1]"))])
        expect["WF101"] = step
        wait = rw.new_wait_id()
        with fail_insert(conn, "workflow_events", run, "wait_created"):
            world.ops([rw.wait_created(run, wait, rw.utcnow() + timedelta(hours=1))])
        expect["WF102"] = wait
        done = rw.new_step_id()
        world.ok(rw.step_ops(run, done)[:2])
        with fail_insert(conn, "workflow_events", run, "step_completed"):
            world.ops([rw.step_completed(run, done, rw.STEP, rw.devl("[2]"))])
        expect["WF111"] = done
        slept = rw.new_wait_id()
        world.ok([rw.wait_created(run, slept, rw.utcnow())])
        with fail_insert(conn, "workflow_events", run, "wait_completed"):
            world.ops([rw.wait_completed(run, slept)])
        expect["WF112"] = slept
        half = rw.new_run_id()
        with fail_insert(conn, "workflow_events", half, "run_created"):
            world.ops([rw.run_created(half)])
        expect["WF121"] = half
        expect["WF133"] = half  # no job and no hook: stranded too
        drop_faults(conn)
    return expect


def test_every_family_reported_with_exit_2(sick_world, real_world, run_cli) -> None:
    status, out, _ = run_cli(
        "--dsn", real_world.dsn, "--format", "json", "doctor", "--min-age", "0s", "--limit", "50"
    )
    assert status == ExitStatus.CRITICAL
    report = json.loads(out)
    jsonschema.validate(report, SCHEMA)
    checks = {c["code"]: c for c in report["checks"]}
    for code, entity in sick_world.items():
        assert checks[code]["status"] == "critical", checks[code]
        assert entity in {s["entity_id"] for s in checks[code]["samples"]}, code
    assert checks["WF101"]["count"] == checks["WF102"]["count"] == 1
    assert checks["WF111"]["count"] == checks["WF112"]["count"] == 1
    assert report["summary"]["status"] == "critical" and report["summary"]["exit_code"] == 2
    assert "password" not in out and real_world.dsn not in out


ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$")


def test_observed_at_is_an_instant_with_its_offset(sick_world, real_world, run_cli, monkeypatch):
    """Every observed_at is ISO 8601 with an offset. Columns the package writes from a JS
    `Date` (UTC wall clock) and graphile's timestamptz read as the same instant whatever the
    reading session's TimeZone; column defaults are the writing session's wall clock, read
    in the reading session's zone (the in-flight comparisons assume the same)."""

    def observed(zone: str) -> dict[tuple[str, str], datetime]:
        monkeypatch.setenv("PGTZ", zone)
        status, out, _ = run_cli(
            "--dsn", real_world.dsn, "doctor", "-o", "json", "--min-age", "0s", "--limit", "50"
        )
        assert status == ExitStatus.CRITICAL
        report = json.loads(out)
        assert ISO.match(report["generated_at"])
        seen = {}
        for check in report["checks"]:
            for sample in check["samples"]:
                if sample["observed_at"] is not None:
                    assert ISO.match(sample["observed_at"]), sample
                    seen[check["code"], sample["entity_id"]] = datetime.fromisoformat(
                        sample["observed_at"]
                    )
        return seen

    utc, tokyo = observed("UTC"), observed("Asia/Tokyo")
    assert {code for code, _ in utc} >= set(sick_world)
    now = datetime.now(UTC)
    assert all(abs(now - at) < timedelta(hours=1) for at in utc.values()), utc
    assert {at.utcoffset() for at in tokyo.values()} == {timedelta(hours=9)}
    js_clock = {key for key in utc if key[0] in ("WF111", "WF112", "WF113", "WF133")}
    assert js_clock and all(utc[key] == tokyo[key] for key in js_clock)


def test_default_min_age_reports_in_flight_and_exits_0(sick_world, real_world, run_cli) -> None:
    status, out, _ = run_cli("--dsn", real_world.dsn, "--format", "json", "doctor")
    assert status == ExitStatus.OK
    report = json.loads(out)
    assert report["summary"]["findings"] == 0 and report["summary"]["in_flight"] >= 6


def test_text_plain_markdown_jsonl_nagios(sick_world, real_world, run_cli) -> None:
    args = ("doctor", "--min-age", "0s")
    status, out, err = run_cli("--dsn", real_world.dsn, *args)
    assert status == 2 and "WF112" in out and "CRITICAL" in err
    assert "wfctl repair --only WF112" in out  # the remedy follows the table
    status, out, _ = run_cli("--dsn", real_world.dsn, "--format", "markdown", *args)
    assert out.splitlines()[0].startswith("| code") and "|--" in out.splitlines()[1].replace(
        ":", ""
    )
    status, out, _ = run_cli("--dsn", real_world.dsn, "--format", "plain", *args)
    assert out.splitlines()[0].split()[:2] == ["code", "status"]
    status, out, _ = run_cli("--dsn", real_world.dsn, "--format", "jsonl", *args)
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines[-1]["kind"] == "summary" and lines[-1]["exit_code"] == 2
    lines = [line for line in lines if line["kind"] == "finding"]
    assert {line["code"] for line in lines} >= set(sick_world)
    assert all({"run_id", "entity_id", "severity", "detail"} <= set(line) for line in lines)
    status, out, _ = run_cli("--dsn", real_world.dsn, "--format", "nagios", *args)
    assert status == 2 and out.count("\n") == 1
    assert out.startswith("WFCTL CRITICAL - ") and "WF112=1" in out and "|" in out


def test_prometheus_textfile_written_atomically(sick_world, real_world, run_cli, tmp_path):
    target = tmp_path / "wfctl.prom"
    status, out, err = run_cli(
        "--dsn",
        real_world.dsn,
        "--format",
        "prometheus",
        "doctor",
        "--min-age",
        "0s",
        "--output",
        str(target),
    )
    assert status == 2 and out == "" and "wrote" in err
    assert list(tmp_path.iterdir()) == [target]  # no temporary file left behind
    families = {f.name: f for f in text_string_to_metric_families(target.read_text())}
    findings = {s.labels["code"]: s.value for s in families["wfctl_doctor_findings"].samples}
    assert findings["WF112"] == 1 and findings["WF101"] == 1
    assert families["wfctl_doctor_exit_code"].samples[0].value == 2
    statuses = [s for s in families["wfctl_doctor_check_status"].samples if s.value == 1]
    assert {s.labels["code"] for s in statuses} == set(findings)


def _checksums(db) -> dict[str, str]:
    with db.connect() as conn:
        tables = conn.execute(
            "SELECT format('%I.%I', schemaname, tablename) FROM pg_tables"
            " WHERE schemaname IN ('workflow', 'workflow_drizzle', 'graphile_worker')"
        ).fetchall()
        return {
            t: conn.execute(
                f"SELECT md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) FROM {t} x"
            ).fetchone()[0]
            for (t,) in tables
        }


def test_doctor_writes_nothing(sick_world, real_world, run_cli) -> None:
    before = _checksums(real_world)
    for fmt in ("text", "json"):
        run_cli("--dsn", real_world.dsn, "--format", fmt, "doctor", "--all", "--min-age", "0s")
    assert _checksums(real_world) == before


def test_select_only_role_without_the_queue_schema(sick_world, pg_server, real_world, run_cli):
    with real_world.connect() as conn:
        conn.execute("DROP ROLE IF EXISTS wfctl_reader")
        conn.execute("CREATE ROLE wfctl_reader LOGIN")
        for schema in ("workflow", "workflow_drizzle"):
            conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO wfctl_reader")
            conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO wfctl_reader")
    try:
        dsn = psycopg.conninfo.make_conninfo(real_world.dsn, user="wfctl_reader")
        status, out, _ = run_cli("--dsn", dsn, "--format", "json", "doctor", "--min-age", "0s")
        checks = {c["code"]: c for c in json.loads(out)["checks"]}
        for code in ("WF131", "WF132", "WF133", "WF134", "WF135"):
            assert checks[code]["status"] == "unknown"
            assert "insufficient privilege" in checks[code]["message"]
        assert checks["WF101"]["status"] == "critical"  # the others still ran
        assert status == ExitStatus.CRITICAL
        status, out, _ = run_cli("--dsn", dsn, "--format", "json", "doctor", "--only", "WF131")
        assert status == ExitStatus.UNKNOWN
    finally:
        with real_world.connect() as conn:
            conn.execute("DROP OWNED BY wfctl_reader")
            conn.execute("DROP ROLE wfctl_reader")


def test_statement_timeout_makes_a_check_unknown(sick_world, real_world, run_cli) -> None:
    with held(real_world.dsn, "LOCK TABLE workflow.workflow_steps IN ACCESS EXCLUSIVE MODE"):
        status, out, _ = run_cli(
            "--dsn",
            real_world.dsn,
            "--statement-timeout",
            "300",
            "--lock-timeout",
            "0",
            "--format",
            "json",
            "doctor",
            "--only",
            "WF101,WF112",
        )
    checks = {c["code"]: c for c in json.loads(out)["checks"]}
    assert checks["WF101"]["status"] == "unknown" and "timeout" in checks["WF101"]["message"]
    assert checks["WF112"]["status"] in ("ok", "in_flight")
    assert status == ExitStatus.UNKNOWN


def test_explain_and_bad_codes(run_cli) -> None:
    status, out, _ = run_cli("doctor", "--explain", "wf112")
    assert status == 0
    for part in (
        "WF112",
        "What it means",
        "Why the run is stuck",
        "How it happened",
        "What `wfctl repair` does",
    ):
        assert part in out
    status, _, err = run_cli("doctor", "--explain", "WF999")
    assert status == ExitStatus.USAGE and "known codes" in err
    status, _, err = run_cli("--dsn", "postgresql://x@127.0.0.1:1/x", "doctor", "--min-age", "soon")
    assert status == ExitStatus.USAGE and "--min-age" in err
    status, _, err = run_cli("--dsn", "postgresql://x@127.0.0.1:1/x", "doctor", "--work-mem", "64")
    assert status == ExitStatus.USAGE and "--work-mem" in err


def test_work_mem_changes_plans_not_findings(sick_world, real_world, run_cli) -> None:
    """--work-mem only sizes the scan's hash tables: the same findings at any setting."""
    found = {}
    for setting, reported in (("server", None), ("1MB", "1MB"), ("1GB", "1GB")):
        status, out, _ = run_cli(
            "--dsn", real_world.dsn, "--format", "json", "doctor", "--all", "--min-age", "0s",
            "--limit", "50", "--work-mem", setting,
        )  # fmt: skip
        assert status == ExitStatus.CRITICAL
        report = json.loads(out)
        jsonschema.validate(report, SCHEMA)
        assert report["options"]["work_mem"] == reported
        found[setting] = {
            (c["code"], s["entity_id"]) for c in report["checks"] for s in c["samples"]
        }
    assert found["server"] == found["1MB"] == found["1GB"] and found["server"]


def test_the_page_cost_ceiling_changes_plans_not_findings(sick_world, real_world) -> None:
    """In the live and --run scopes the doctor's transaction prices random page reads at most
    1.1 (its few runs' events are read by index); --all keeps the server's setting, and an
    operator's lower one is kept. The findings are the same either way."""
    from dataclasses import replace

    from wfctl.connection.db import read_only
    from wfctl.doctor import registry, runner
    from wfctl.world import model

    def diagnose(options: runner.DoctorOptions, session: str = "") -> tuple[str, set]:
        with psycopg.connect(real_world.dsn, autocommit=True) as conn:
            if session:
                conn.execute(f"SET random_page_cost = {session}")
            with read_only(conn):
                world = model.inspect(conn, with_drift=False)
                report = runner.run(conn, world, list(registry.CHECKS), options)
                row = conn.execute("SHOW random_page_cost").fetchone()
        assert row is not None
        return str(row[0]), {(f.code, f.run_id, f.entity_id) for f in report.findings()}

    live = runner.DoctorOptions(min_age=timedelta(0), limit=1000)
    ceiling, found = diagnose(live)
    server, found_at_server_cost = diagnose(replace(live, random_page_cost=None))
    assert (ceiling, server) == ("1.1", "4")
    assert found == found_at_server_cost and found
    assert diagnose(live, session="1")[0] == "1"  # an operator's lower setting is kept
    assert diagnose(replace(live, all_runs=True))[0] == "4"


def test_no_world_exits_unknown(empty_db, run_cli) -> None:
    status, _, err = run_cli("--dsn", empty_db.dsn, "doctor")
    assert status == ExitStatus.UNKNOWN and "no world" in err


def _all_findings(run_cli, dsn: str, *args: str) -> tuple[list, set]:
    status, out, _ = run_cli(
        "--dsn", dsn, "--format", "json", "doctor", "--all", "--min-age", "0s",
        "--limit", "100000", *args,
    )  # fmt: skip
    assert status == ExitStatus.CRITICAL
    report = json.loads(out)
    jsonschema.validate(report, SCHEMA)
    order = [(c["code"], c["status"], c["count"], c["in_flight"]) for c in report["checks"]]
    found = {
        (c["code"], s["run_id"], s["entity_id"]) for c in report["checks"] for s in c["samples"]
    }
    return order, found


def test_jobs_share_the_checks_not_the_findings(sick_world, real_world, run_cli) -> None:
    """--jobs N: the same checks in the same order with the same findings as one session."""
    one = _all_findings(run_cli, real_world.dsn, "--jobs", "1")
    assert one[1]
    assert _all_findings(run_cli, real_world.dsn, "--jobs", "3") == one
    assert _all_findings(run_cli, real_world.dsn) == one  # the default for --all: 2


def test_jobs_read_one_snapshot(sick_world, real_world) -> None:
    """Helper sessions import the first session's snapshot: a write committed after it is
    invisible to every check, whichever session runs it."""
    from wfctl.doctor import registry, runner
    from wfctl.world import model

    options = runner.DoctorOptions(all_runs=True, min_age=timedelta(0), limit=100000)
    checks = registry.select(None)

    def codes(report: runner.Report) -> set[tuple[str, str | None]]:
        return {(f.code, f.entity_id) for f in report.findings()}

    step = rw.new_step_id()
    with (
        real_world.connect() as conn,
        real_world.connect() as helper,
        real_world.connect() as writer,
    ):
        try:
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                world = model.inspect(conn, with_drift=False)  # the snapshot is taken here
                # an orphan step row (WF101) committed after the snapshot
                writer.execute(
                    "INSERT INTO workflow.workflow_steps (run_id, step_id, step_name, status,"
                    " attempt) SELECT id, %s, 'step//x', 'pending', 0"
                    " FROM workflow.workflow_runs WHERE status = 'running' LIMIT 1",
                    (step,),
                )
                writer.commit()
                shared = runner.run(conn, world, checks, options, helpers=[helper])
            with conn.transaction():
                after = runner.run(conn, model.inspect(conn, with_drift=False), checks, options)
        finally:
            writer.execute("DELETE FROM workflow.workflow_steps WHERE step_id = %s", (step,))
            writer.commit()
    assert ("WF101", step) in codes(after)
    assert codes(shared) == codes(after) - {("WF101", step)}
    assert [r.check.code for r in shared.results] == [c.code for c in checks]
