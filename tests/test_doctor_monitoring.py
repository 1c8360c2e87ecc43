"""Monitoring fails loudly: when doctor cannot run, Nagios reads `WFCTL UNKNOWN - <reason>`,
the Prometheus textfile is rewritten with exit code 3 (not left with the last good verdict),
jsonl prints a line; a healthy world still prints a jsonl line, and every line names the
database and the time. A machine format never answers from the embedded server implicitly."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import Db

UNREACHABLE = "postgresql://ops@127.0.0.1:1/app"


def metrics(path: Path) -> dict[str, Any]:
    return {f.name: f for f in text_string_to_metric_families(path.read_text())}


def value(families: dict[str, Any], name: str) -> float:
    return float(families[name].samples[0].value)


def test_nagios_says_unknown_on_stdout_when_doctor_cannot_run(run_cli, empty_db: Db) -> None:
    for dsn, reason in ((UNREACHABLE, "cannot connect"), (empty_db.dsn, "holds no world")):
        status, out, err = run_cli("--dsn", dsn, "--format", "nagios", "doctor")
        assert status == 3
        assert out.startswith("WFCTL UNKNOWN - ") and reason in out and out.count("\n") == 1
        assert err.startswith("wfctl: error:")


def test_prometheus_textfile_is_rewritten_when_doctor_cannot_run(
    run_cli, wfctl_world: Db, tmp_path: Path
) -> None:
    target = tmp_path / "wfctl.prom"
    status, _, _ = run_cli(
        "--dsn", wfctl_world.dsn, "--format", "prometheus", "doctor", "--output", str(target)
    )
    assert status == 0
    good = metrics(target)
    assert value(good, "wfctl_doctor_exit_code") == 0 and value(good, "wfctl_doctor_up") == 1
    status, out, err = run_cli(
        "--dsn", UNREACHABLE, "--format", "prometheus", "doctor", "--output", str(target)
    )
    assert status == 3 and out == "" and "cannot connect" in err
    bad = metrics(target)
    assert value(bad, "wfctl_doctor_exit_code") == 3 and value(bad, "wfctl_doctor_up") == 0
    assert "cannot connect" in bad["wfctl_doctor_error"].samples[0].labels["reason"]
    assert value(bad, "wfctl_doctor_last_run_timestamp_seconds") >= value(
        good, "wfctl_doctor_last_run_timestamp_seconds"
    )
    assert list(tmp_path.iterdir()) == [target]  # atomically: no temporary file left
    # without --output, the same exposition on stdout
    status, out, _ = run_cli("--dsn", UNREACHABLE, "--format", "prometheus", "doctor")
    assert status == 3 and "wfctl_doctor_exit_code 3" in out and "wfctl_doctor_up 0" in out


def test_jsonl_prints_a_line_for_a_healthy_world_and_names_database_and_time(
    run_cli, wfctl_world: Db
) -> None:
    status, out, _ = run_cli("--dsn", wfctl_world.dsn, "--format", "jsonl", "doctor")
    assert status == 0
    [line] = [json.loads(x) for x in out.splitlines()]
    assert line["kind"] == "summary" and line["status"] == "ok" and line["exit_code"] == 0
    assert line["database"] == wfctl_world.name and line["at"] and "dbname=" in line["dsn"]
    # a finding (WF151: a table missing) has its line too, with the same database and time
    with wfctl_world.connect() as conn:
        conn.execute("DROP TABLE workflow.workflow_stream_chunks")
    status, out, _ = run_cli("--dsn", wfctl_world.dsn, "--format", "jsonl", "doctor")
    lines = [json.loads(x) for x in out.splitlines()]
    assert status == 2 and lines[-1]["kind"] == "summary" and lines[-1]["exit_code"] == 2
    findings = [x for x in lines if x["kind"] == "finding"]
    assert findings and {x["code"] for x in findings} == {"WF151"}
    assert {(x["database"], x["at"]) for x in lines} == {(wfctl_world.name, lines[-1]["at"])}
    status, out, _ = run_cli("--dsn", UNREACHABLE, "--format", "jsonl", "doctor")
    [failed] = [json.loads(x) for x in out.splitlines()]
    assert status == 3 and failed["exit_code"] == 3 and "cannot connect" in failed["error"]


@pytest.fixture
def no_dsn(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """cron's environment: no DSN variable, no PG* variable, no service file."""
    for var in list(os.environ):
        if var.startswith("PG"):
            monkeypatch.delenv(var)
    monkeypatch.setenv("HOME", str(tmp_path))
    data = tmp_path / "embedded"
    monkeypatch.setenv("WFCTL_EMBEDDED_DIR", str(data))
    yield data
    if (data / "postmaster.pid").exists():  # a wfctl that started one anyway: stop it
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pgserver

            pgserver.get_server(str(data), cleanup_mode="stop").cleanup()


@pytest.mark.parametrize("fmt", ["nagios", "prometheus", "json", "jsonl"])
def test_machine_formats_never_use_the_embedded_server_implicitly(
    run_cli, no_dsn: Path, fmt: str
) -> None:
    for args in (("--format", fmt, "doctor"), ("doctor", "-o", fmt)):
        status, out, err = run_cli(*args)
        assert status == 3, (args, out, err)
        assert err.count("\n") == 1 and "no database configured" in err
        assert "never uses the embedded server implicitly" in err
        if fmt == "nagios":
            assert out.startswith("WFCTL UNKNOWN - no database configured")
    if fmt == "json":
        for args in (("info",), ("runs", "list"), ("repair",)):
            status, _, err = run_cli("--format", "json", *args)
            assert status == 3 and "no database configured" in err, (args, err)
    assert not no_dsn.exists()  # no server was started, none left running


def test_a_run_id_the_world_does_not_hold_is_not_healthy(run_cli, wfctl_world: Db) -> None:
    for args in (("doctor",), ("--format", "nagios", "doctor"), ("repair",)):
        status, out, err = run_cli("--dsn", wfctl_world.dsn, *args, "--run", "wrun_nope")
        assert status == 3, (args, out, err)
        assert "no such run: wrun_nope" in err and err.count("\n") == 1
    status, out, _ = run_cli("--dsn", wfctl_world.dsn, "--format", "nagios", "doctor", "--run", "x")
    assert out.startswith("WFCTL UNKNOWN - no such run: x")


MALFORMED = "postgresql://u:S3cretPW@h:5x/db"


@pytest.mark.parametrize(
    ("args", "env", "reason"),
    [
        (("--dsn", MALFORMED, "doctor"), {}, "malformed connection string"),
        (("doctor", "--dsn", MALFORMED), {}, "malformed connection string"),
        (("doctor", "--min-age", "bogus"), {}, "--min-age"),
        (("doctor", "--limit", "x"), {}, "--limit"),
        (("doctor", "--no-such-flag"), {}, "No such option"),
        (("doctor", "--only", "WF999"), {}, "WF999"),
        (("--statement-timeout", "-5", "doctor"), {}, "--statement-timeout"),
        (
            ("doctor",),
            {"PGSERVICEFILE": "/nonexistent/pg_service.conf", "PGSERVICE": "x"},
            "service",
        ),
    ],
)
def test_failures_outside_the_database_are_unknown_to_monitoring(
    run_cli,
    wfctl_world: Db,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[str, ...],
    env: dict[str, str],
    reason: str,
) -> None:
    """A malformed DSN, a service file that is not there, a bad option: the monitoring formats
    say UNKNOWN (exit 3) in their own shape, the textfile is rewritten; a person reading text
    still gets the usage error (64)."""
    dsn = () if env or "--dsn" in args else ("--dsn", wfctl_world.dsn)
    target = tmp_path / "wfctl.prom"
    status, _, _ = run_cli(
        "--dsn", wfctl_world.dsn, "doctor", "-o", "prometheus", "--output", str(target)
    )
    assert status == 0 and value(metrics(target), "wfctl_doctor_up") == 1
    with monkeypatch.context() as patch:
        for var, val in env.items():
            patch.setenv(var, val)
        _say_unknown_in_every_monitoring_format(run_cli, (*dsn, *args), reason, target)


def _say_unknown_in_every_monitoring_format(
    run_cli: Any, args: tuple[str, ...], reason: str, target: Path
) -> None:
    status, out, err = run_cli(*args, "-o", "prometheus", "--output", str(target))
    assert status == 3 and out == "" and reason in err and err.count("\n") == 1, (out, err)
    bad = metrics(target)
    assert value(bad, "wfctl_doctor_up") == 0 and value(bad, "wfctl_doctor_exit_code") == 3
    assert reason in bad["wfctl_doctor_error"].samples[0].labels["reason"]
    assert list(target.parent.iterdir()) == [target]
    status, out, err = run_cli(*args, "--format", "nagios")
    assert status == 3 and out.startswith("WFCTL UNKNOWN - usage error: ") and reason in out
    assert out.count("\n") == 1 and err.startswith("wfctl: error:")
    status, out, _ = run_cli(*args, "-f", "jsonl")
    [line] = [json.loads(x) for x in out.splitlines()]
    assert status == 3 and line["status"] == "unknown" and line["exit_code"] == 3
    assert reason in line["error"]
    for fmt in ("text", "json"):
        status, out, err = run_cli(*args, "--format", fmt)
        assert status == 64 and out == "" and reason in err, (fmt, out, err)
    assert "S3cretPW" not in out + err + target.read_text()
