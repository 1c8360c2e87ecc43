"""The command line under hostile or careless input: stored escape sequences, absurd values,
refusals that write nothing, privilege errors that say what to grant, one time and age form."""

from __future__ import annotations

import json
from typing import Any

import pytest

from wfctl.world import ids

ESC = "\x1b]0;pwned\x07\x1b[31m"  # set the window title, ring the bell, turn text red


@pytest.fixture
def world_env(monkeypatch: pytest.MonkeyPatch, wfctl_world: Any, run_cli: Any) -> Any:
    monkeypatch.setenv("WORKFLOW_POSTGRES_URL", wfctl_world.dsn)
    monkeypatch.setenv("COLUMNS", "200")
    return wfctl_world


def _hostile_run(db: Any) -> tuple[str, str, str]:
    """A failed run whose name and error code carry escapes, with a step row (named with
    escapes) whose step_created is missing (WF101), and an audit row with an escaped reason."""
    run_id, step_id = ids.prefixed("wrun"), ids.prefixed("step")
    name = f"workflow//./src/evil//evil{ESC}"
    with db.connect() as conn:
        conn.execute(
            "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name, error,"
            " error_code, created_at, updated_at, spec_version) VALUES (%s, 'd', 'running',"
            " %s, 'boom', %s, now() - interval '1 hour', now() - interval '1 hour', '2')",
            (run_id, name, f"E{ESC}"),
        )
        conn.execute(
            "INSERT INTO workflow.workflow_steps (run_id, step_id, step_name, status, attempt,"
            " created_at, updated_at) VALUES (%s, %s, %s, 'pending', 0,"
            " now() - interval '1 hour', now() - interval '1 hour')",
            (run_id, step_id, f"step//./src/evil//s{ESC}"),
        )
        conn.execute(
            "INSERT INTO wfctl.repair_log (db_user, wfctl_version, reason, code, run_id)"
            " VALUES (current_user, 'test', %s, 'WF101', %s)",
            (f"INC-1 {ESC}", run_id),
        )
    return run_id, step_id, name


def test_stored_escape_sequences_never_reach_the_terminal(run_cli, world_env) -> None:
    run_id, _, name = _hostile_run(world_env)
    run_cli("repair", "--dry-run")  # makes sure schema wfctl exists (the audit log)
    for args in (
        ("runs", "list"),
        ("runs", "list", "-o", "plain"),
        ("runs", "show", run_id),
        ("doctor", "--min-age", "0s", "--all"),
        ("doctor", "--min-age", "0s", "--all", "-o", "plain"),
        ("repair", "log"),
        ("runs", "show", f"wrun_{ESC}"),  # an error line quoting the argument
    ):
        _, out, err = run_cli(*args)
        assert "\x1b" not in out + err and "\x07" not in out + err, args
    # JSON stays exact
    listed = json.loads(run_cli("runs", "list", "-o", "json")[1])
    assert name in {r["name"] for r in listed}
    out = run_cli("runs", "list")[1]
    assert "\\x1b" in out  # shown, escaped


def test_repair_log_escapes_the_reason(run_cli, world_env) -> None:
    _hostile_run(world_env)
    _, out, _ = run_cli("repair", "log")
    assert "INC-1 \\x1b]0;pwned\\x07" in out


# -- absurd values are usage errors (exit 64, one line), never "internal error" -------------

DEEP = "[" * 5000 + "]" * 5000


@pytest.mark.parametrize(
    "args",
    [
        ("doctor", "--min-age", "99999999999d"),
        ("doctor", "--incremental", "--clock-skew", "99999999999w"),
        ("gc", "--older-than", "99999999999d"),
        ("repair", "--dry-run", "--min-age", "999999999999999999999"),
        ("run", "docs/examples/checkout.py:checkout", DEEP),
        ("run", "docs/examples/checkout.py:checkout", "[NaN]"),
        ("run", "docs/examples/checkout.py:checkout", '{"order_id": Infinity}'),
        ("run", "docs/examples/checkout.py:checkout", "-Infinity"),
        ("run", "docs/examples/checkout.py:checkout", "[1e400]"),
        ("run", "docs/examples/checkout.py:checkout", '{"order_id": -1e999}'),
        ("hooks", "resume", "tok", "1e400"),
        ("repair", "--only", "WF999"),
        ("repair", "--only", "WF112,wf999"),
        ("--statement-timeout", "-5", "runs", "list"),
        ("runs", "list", "--lock-timeout", "-1"),
        ("hooks", "resume", "tok", "NaN"),
        ("hooks", "resume", "tok", DEEP),
    ],
    ids=lambda a: " ".join(a)[:60],
)
def test_absurd_values_are_usage_errors(run_cli, world_env, args: tuple[str, ...]) -> None:
    status, out, err = run_cli(*args)
    assert status == 64, err
    assert len(err.strip().splitlines()) == 1 and "internal error" not in err, err
    assert out == ""
    with world_env.connect() as conn:  # nothing written
        assert conn.execute("SELECT count(*) FROM workflow.workflow_runs").fetchone()[0] == 0


# -- a refused apply writes nothing ----------------------------------------------------------


def test_gc_apply_without_yes_is_refused_before_any_write(run_cli, world_env) -> None:
    with world_env.connect() as conn:
        conn.execute("DROP SCHEMA wfctl CASCADE")
        conn.execute(
            "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name, created_at,"
            " updated_at, completed_at) VALUES (%s, 'd', 'completed', 'w', now() - interval"
            " '90 days', now() - interval '90 days', now() - interval '90 days')",
            (ids.prefixed("wrun"),),
        )
    status, _, err = run_cli("gc", "--older-than", "30d", "--apply", "--reason", "retention")
    assert status == 64, err
    assert "--yes" in err
    with world_env.connect() as conn:
        schemas = conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = 'wfctl'")
        assert schemas.fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM workflow.workflow_runs").fetchone()[0] == 1


# -- privilege errors say what to grant -----------------------------------------------------


@pytest.fixture
def reader(pg_server: Any) -> Any:
    """A SELECT-only role (what docs/cli.md prescribes for doctor); yields a DSN maker."""
    import psycopg

    made: list[Any] = []
    pg_server.execute("DROP ROLE IF EXISTS wfctl_reader")
    pg_server.execute("CREATE ROLE wfctl_reader LOGIN")

    def dsn_for(db: Any) -> str:
        with db.connect() as conn:
            for schema in ("workflow", "workflow_drizzle"):
                if conn.execute("SELECT to_regnamespace(%s)", (schema,)).fetchone()[0]:
                    conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO wfctl_reader")
                    conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO wfctl_reader")
        made.append(db)
        return psycopg.conninfo.make_conninfo(db.dsn, user="wfctl_reader")

    yield dsn_for
    for db in made:
        with db.connect() as conn:
            conn.execute("DROP OWNED BY wfctl_reader")
    pg_server.execute("DROP ROLE wfctl_reader")


def test_bootstrap_as_a_read_only_role_says_what_to_grant(run_cli, empty_db, reader) -> None:
    status, _, err = run_cli("--dsn", reader(empty_db), "bootstrap")
    assert status == 3, err
    assert "internal error" not in err and "report it" not in err
    assert len(err.strip().splitlines()) == 1
    assert "permission denied" in err and "grant CREATE ON DATABASE" in err


def test_migrate_as_a_read_only_role_claims_no_invalid_index(run_cli, wfctl_world, reader) -> None:
    status, _, err = run_cli("--dsn", reader(wfctl_world), "migrate", "--online")
    assert status == 3, err
    error = err.strip().splitlines()[-1]  # after the phase lines
    assert error.startswith("wfctl: error: ") and "INVALID" not in error, err
    assert "owner of workflow_events" in error
    with wfctl_world.connect() as conn:
        assert not conn.execute(
            "SELECT to_regclass('workflow.workflow_events_run_id_id_idx')"
        ).fetchone()[0]


def test_cancel_as_a_read_only_role_names_the_missing_privilege(
    run_cli, wfctl_world, reader
) -> None:
    run_id = ids.prefixed("wrun")
    with wfctl_world.connect() as conn:
        conn.execute(
            "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name, spec_version)"
            " VALUES (%s, 'd', 'running', 'workflow//py:m//wf', '2')",
            (run_id,),
        )
    dsn = reader(wfctl_world)
    with wfctl_world.connect() as conn:
        conn.execute("GRANT USAGE ON SCHEMA wfctl TO wfctl_reader")
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA wfctl TO wfctl_reader")
    status, _, err = run_cli("--dsn", dsn, "runs", "cancel", run_id, "--reason", "x")
    assert status == 3 and err.count("\n") == 1, err
    assert f"insufficient privilege while cancelling run {run_id}" in err
    assert "running workflows" not in err
    assert "this role lacks INSERT, UPDATE, DELETE on workflow.workflow_runs" in err, err
    assert "grant INSERT, UPDATE, DELETE ON TABLE workflow.workflow_runs" in err
    assert wfctl_world.scalar("SELECT status FROM workflow.workflow_runs") == "running"


@pytest.mark.parametrize(
    "args",
    [
        ("runs", "show", "wrun_nope"),
        ("runs", "fork", "wrun_nope"),
        ("runs", "fork", "wrun_nope", "--apply", "--reason", "x"),
        ("runs", "cancel", "wrun_nope", "--reason", "x"),
        ("runs", "cancel", "wrun_nope", "--graceful"),
        ("runs", "list", "--after", "wrun_nope"),
        ("doctor", "--run", "wrun_nope"),
        ("repair", "--run", "wrun_nope"),
    ],
    ids=lambda a: " ".join(a[:3]) + (" --apply" if "--apply" in a else ""),
)
def test_an_unknown_run_id_is_no_such_run_everywhere(run_cli, world_env, args) -> None:
    status, out, err = run_cli(*args)
    assert status == 3 and out == "", err
    assert err.startswith("wfctl: error: no such run: wrun_nope") and err.count("\n") == 1


# -- every writer is audited; fork is dry-run-first -------------------------------------------


def test_cancelling_one_run_writes_an_audit_row(run_cli, world_env) -> None:
    run_id = ids.prefixed("wrun")
    with world_env.connect() as conn:
        conn.execute(
            "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name, spec_version)"
            " VALUES (%s, 'd', 'running', 'workflow//py:m//wf', '2')",
            (run_id,),
        )
    status, out, err = run_cli("runs", "cancel", run_id, "--reason", "INC-7", "-o", "json")
    assert status == 0, err
    audit_id = json.loads(out)["audit_id"]
    row = world_env.scalar(
        "SELECT json_build_object('code', code, 'run', run_id, 'reason', reason)"
        " FROM wfctl.repair_log WHERE id = %s",
        (audit_id,),
    )
    assert row == {"code": "cancel", "run": run_id, "reason": "INC-7"}
    assert run_cli("runs", "cancel", run_id)[0] == 2  # already ended: nothing, no audit row
    assert world_env.scalar("SELECT count(*) FROM wfctl.repair_log") == 1


# -- one timestamp form (ISO 8601 with offset), one age form ---------------------------------

ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d"


def test_ages_have_one_form() -> None:
    from datetime import timedelta

    from wfctl.durations import format_duration

    assert format_duration(timedelta(minutes=2804)) == "1d 22h"
    assert format_duration(timedelta(minutes=46, seconds=40)) == "46m 40s"
    assert format_duration(timedelta(minutes=10)) == "10m"
    assert format_duration(timedelta(days=30)) == "30d"


def test_doctor_details_and_gc_print_iso_timestamps(run_cli, world_env) -> None:
    import re

    run_id, wait_id = ids.prefixed("wrun"), ids.prefixed("wait")
    with world_env.connect() as conn:
        conn.execute(
            "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name, spec_version)"
            " VALUES (%s, 'd', 'running', 'workflow//py:m//wf', '2')",
            (run_id,),
        )
        conn.execute(
            "INSERT INTO workflow.workflow_waits (wait_id, run_id, status, resume_at,"
            " created_at) VALUES (%s, %s, 'waiting', '2030-01-02 03:04:05.678',"
            " now() - interval '1 hour')",
            (f"{run_id}-{wait_id}", run_id),
        )
    _, out, _ = run_cli("doctor", "--only", "WF102", "--min-age", "0s", "-o", "json")
    [sample] = json.loads(out)["checks"][0]["samples"]
    assert sample["detail"].endswith("resume_at 2030-01-02T03:04:05.678+00:00"), sample
    _, out, _ = run_cli("gc", "--older-than", "30d")
    assert re.search(f"cutoff {ISO} ", out), out


# -- runs list pages, and --name matches the name it shows ------------------------------------


def test_runs_list_pages_with_a_cursor_and_matches_the_shown_name(run_cli, world_env) -> None:
    with world_env.connect() as conn:
        for n in range(7):
            conn.execute(
                "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name, created_at,"
                " spec_version) VALUES (%s, 'd', 'running', 'workflow//py:shop.flows//checkout',"
                " now() - %s * interval '1 minute', '2')",
                (ids.prefixed("wrun"), n),
            )
    status, out, err = run_cli("runs", "list", "--limit", "3", "-o", "json")
    first = [r["id"] for r in json.loads(out)]
    assert status == 0 and len(first) == 3
    assert f"--limit 3 --after {first[-1]}" in err  # the way to the next page
    _, out, err = run_cli("runs", "list", "--limit", "3", "--after", first[-1], "-o", "json")
    second = [r["id"] for r in json.loads(out)]
    _, out, err_last = run_cli("runs", "list", "--limit", "3", "--after", second[-1], "-o", "json")
    third = [r["id"] for r in json.loads(out)]
    assert len(second) == 3 and len(third) == 1 and "next page" not in err_last
    assert len(set(first + second + third)) == 7
    # the table shows `shop.flows.checkout`; that is what an operator types
    _, out, _ = run_cli("runs", "list", "--name", "shop.flows.checkout", "-o", "json")
    assert len(json.loads(out)) == 7
    assert run_cli("runs", "list", "--after", "wrun_nope")[0] == 3  # no such run


# -- migrate honours the global --lock-timeout -------------------------------------------------

PACKAGE = "tests/fixtures/packages/shipped"


@pytest.mark.parametrize(
    "where, expected",
    [
        ((), 1000),
        (("--lock-timeout", "250"), 250),  # before the command
        (("@after", "--lock-timeout", "300"), 300),  # after it
    ],
)
def test_migrate_uses_the_global_lock_timeout(run_cli, wfctl_world, where, expected) -> None:
    args = ["--dsn", wfctl_world.dsn, "-o", "json"]
    tail = ["migrate", "--online", "--swap", "--package", PACKAGE, "--dry-run"]
    if where and where[0] == "@after":
        tail += list(where[1:])
    else:
        args += list(where)
    status, out, err = run_cli(*args, *tail)
    assert status == 0, err
    assert json.loads(out)["lock_timeout_ms"] == expected


# -- doctor's text view fits 100 columns; --problems shows only what matters -------------------


def test_doctor_text_fits_100_columns_and_problems_hides_the_quiet(
    run_cli, world_env, monkeypatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    _hostile_run(world_env)  # WF101, with a long sample line
    status, out, _ = run_cli("doctor", "--min-age", "0s", "--all")
    assert status == 2
    lines = out.splitlines()
    assert all(len(line) <= 100 for line in lines), max(lines, key=len)
    assert len(lines) < 40
    assert any(line.startswith("WF101  critical") for line in lines)
    assert any(line.startswith("ok (") and "WF104" in line for line in lines)
    status, out, _ = run_cli("doctor", "--min-age", "0s", "--all", "--problems")
    assert status == 2 and "WF101" in out and "WF104" not in out
    assert "more checks: ok or not applicable" in out
    _, plain, _ = run_cli("doctor", "--min-age", "0s", "--all", "--problems", "-o", "plain")
    assert "WF101" in plain and "WF104" not in plain


# -- plans show values as JSON text, times in the one form ------------------------------------


def test_repair_plans_show_json_values_with_iso_times() -> None:
    from datetime import UTC, datetime

    from wfctl.repair.base import NewEvent

    when = datetime(2026, 12, 4, 19, 58, 10, 138000, tzinfo=UTC)
    text = NewEvent("wait_created", "wait_x", {"resumeAt": when, "n": 3}, None).summary()
    assert text == 'wait_created(wait_x) {resumeAt: "2026-12-04T19:58:10.138+00:00", n: 3}'
    long = NewEvent("step_completed", "step_x", {"result": {"a": "x" * 200}}, None).summary()
    assert "datetime.datetime" not in long and "(209 characters)" in long


# -- after a successful migrate, doctor is clean ----------------------------------------------


def test_doctor_is_clean_after_migrate_online(run_cli, wfctl_world) -> None:
    dsn = ("--dsn", wfctl_world.dsn)
    assert run_cli(*dsn, "doctor", "--all")[0] == 0
    status, _, err = run_cli(*dsn, "migrate", "--online")
    assert status == 0, err
    status, out, err = run_cli(*dsn, "-o", "json", "doctor", "--all")
    drift = next(c for c in json.loads(out)["checks"] if c["code"] == "WF151")
    assert status == 0 and drift["count"] == 0, drift
    # an INVALID leftover of that index is still reported
    with wfctl_world.connect() as conn:
        conn.execute("UPDATE pg_index SET indisvalid = false WHERE indexrelid ="
                     " 'workflow.workflow_events_run_id_id_idx'::regclass")  # fmt: skip
    assert run_cli(*dsn, "doctor", "--all")[0] != 0


def test_json_output_is_strict_even_for_a_stored_non_finite_number() -> None:
    """A value no strict parser reads (`Infinity`, `NaN`) never reaches stdout: it is `null`,
    as JavaScript's JSON.stringify writes it."""
    import json

    from wfctl.cli.output import dumps

    def refuse(token: str) -> None:
        raise AssertionError(f"{token} in the output")

    text = dumps({"input": [float("inf"), {"x": float("-inf"), "y": float("nan")}, 1.5]})
    assert json.loads(text, parse_constant=refuse) == {"input": [None, {"x": None, "y": None}, 1.5]}


# -- signals: an inherited ignored SIGINT stays ignored, SIGTERM always stops ----------------


def test_a_worker_started_with_sigint_ignored_keeps_ignoring_it(wfctl_world, tmp_path) -> None:
    """A script's background job (`wfctl worker ... &`) starts with SIGINT ignored: a Ctrl-C
    meant for the script must not stop it, during start-up or once it serves; SIGTERM does."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    import wfctl

    log = tmp_path / "worker.log"
    env = {**os.environ, "WFCTL_EFFECTS_DSN": wfctl_world.dsn, "PYTHONUNBUFFERED": "1"}
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "wfctl",
                "--dsn",
                wfctl_world.dsn,
                "worker",
                "tests.worker.flows",
            ],
            cwd=Path(wfctl.__file__).resolve().parents[1],  # the tree under test
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        )
    try:
        for _ in range(600):  # until it serves (not a guessed delay)
            if "serving queue" in log.read_text() or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert "serving queue" in log.read_text(), log.read_text()
        proc.send_signal(signal.SIGINT)
        proc.send_signal(signal.SIGTERM)  # handled after the SIGINT, were that one caught
        assert proc.wait(60) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    assert "wfctl worker: SIGTERM: finishing current steps" in text, text
    assert "SIGINT" not in text and "second signal" not in text


# -- polish: what a person reads is JSON or words, never a Python repr or a dangling label ----


def test_runs_show_prints_payloads_as_json_not_python(run_cli, world_env) -> None:
    run_id = ids.prefixed("wrun")
    with world_env.connect() as conn:
        conn.execute(
            "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name, spec_version)"
            " VALUES (%s, 'd', 'running', 'workflow//py:m//wf', '2')",
            (run_id,),
        )
    status, out, err = run_cli("runs", "show", run_id)
    assert status == 0, err
    assert "input:     null" in out and "None" not in out


def test_gc_json_times_have_the_one_timestamp_form(run_cli, world_env) -> None:
    from datetime import datetime

    status, out, err = run_cli("gc", "-o", "json")
    assert status == 0, err
    cutoff = json.loads(out)["cutoff_utc"]
    assert cutoff.endswith("+00:00") and datetime.fromisoformat(cutoff).tzinfo is not None


def test_plan_lines_hold_json_and_no_empty_key() -> None:
    from datetime import UTC, datetime, timedelta

    from wfctl.repair import wf135
    from wfctl.repair.base import Action

    action = Action(row_changes=[("repair/reopen_failed_run", {"error_code": None, "n": "x"})])
    assert action.describe() == ['reopen_failed_run {error_code: null, n: "x"}']
    lock = {
        "id": 7,
        "run_id": "wrun_x",
        "key": None,
        "locked_by": "w1",
        "locked_at": datetime.now(UTC),
        "held": timedelta(hours=5),
    }
    assert "(key" not in wf135._finding(lock).detail
    assert "(key k1)" in wf135._finding({**lock, "key": "k1"}).detail


def test_an_apply_where_every_finding_was_refused_does_not_say_applied() -> None:
    from wfctl.cli.commands.repair import _text
    from wfctl.doctor.base import Finding
    from wfctl.repair import runner

    finding = Finding("WF112", "wrun_x", "wait_x", None, False, "a wait")
    report = runner.RepairReport(applied=True)
    report.items.append(runner.Item(finding, "refused", "state moved"))
    head = _text(report).splitlines()[0]
    assert "applied" not in head.replace("nothing applied", "") and "nothing applied" in head


def test_a_write_loop_does_not_take_an_ignored_sigint_back() -> None:
    """The repair's and gc's apply handler (wfctl.signals.stop_on_signal) leaves an inherited
    ignored SIGINT ignored and still takes SIGTERM."""
    import signal
    import threading

    from wfctl.signals import interruptible, stop_on_signal

    saved = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert interruptible() == ()
        with stop_on_signal(threading.Event()):
            assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_IGN, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        assert interruptible() == (signal.SIGINT,)
        with stop_on_signal(threading.Event()):
            assert signal.getsignal(signal.SIGINT) != signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, saved)
