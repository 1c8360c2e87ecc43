"""Bad input: one line naming the problem and the next step, the documented status, no writes."""

from __future__ import annotations

import threading

import psycopg
import pytest

from wfctl.errors import ExitStatus
from wfctl.world import catalog


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("wfctl: error: ") and "(hint: " in lines[0]
    return lines[0]


def test_malformed_dsn(run_cli) -> None:
    status, out, err = run_cli("--dsn", "postgresql://u:pw@h:port/db", "info")
    assert status == ExitStatus.USAGE and out == ""
    assert "malformed connection string" in _one_error_line(err)


def test_unreachable_host(run_cli) -> None:
    status, _, err = run_cli(
        "--connect-timeout", "2", "--dsn", "postgresql://u:hunter2@127.0.0.1:1/db", "info"
    )
    assert status == ExitStatus.UNKNOWN
    line = _one_error_line(err)
    assert "cannot connect" in line and "hunter2" not in line


def test_wrong_database(pg_server, run_cli) -> None:
    status, _, err = run_cli("--dsn", pg_server.dsn("no_such_db_here"), "info")
    assert status == ExitStatus.UNKNOWN
    assert "no such database" in _one_error_line(err)


@pytest.fixture
def password_role(pg_server):
    """A role that must authenticate by password (our own server: hba edited for it)."""
    if pg_server.data_dir is None:
        pytest.skip("password auth needs a server whose pg_hba.conf the tests own")
    hba = pg_server.data_dir / "pg_hba.conf"
    original = hba.read_text()
    hba.write_text(
        "local all wfctl_pw scram-sha-256\nhost all wfctl_pw 127.0.0.1/32 scram-sha-256\n"
        + original
    )
    pg_server.execute("DROP ROLE IF EXISTS wfctl_pw")
    pg_server.execute("CREATE ROLE wfctl_pw LOGIN PASSWORD 'right-pw'")
    pg_server.execute("SELECT pg_reload_conf()")
    yield "wfctl_pw"
    hba.write_text(original)
    pg_server.execute("SELECT pg_reload_conf()")
    pg_server.execute("DROP ROLE IF EXISTS wfctl_pw")


def test_wrong_password(pg_server, password_role, run_cli) -> None:
    dsn = psycopg.conninfo.make_conninfo(
        pg_server.dsn("postgres"), user=password_role, password="wrong-pw-123"
    )
    status, _, err = run_cli("--dsn", dsn, "info")
    assert status == ExitStatus.UNKNOWN
    line = _one_error_line(err)
    assert "authentication failed" in line and "wrong-pw-123" not in line
    status, _, err = run_cli("-v", "--dsn", dsn, "info")
    assert "wrong-pw-123" not in err  # not even in the verbose traceback


def test_role_without_privilege_on_the_schemas(pg_server, wfctl_world, run_cli) -> None:
    pg_server.execute("DROP ROLE IF EXISTS wfctl_nopriv")
    pg_server.execute("CREATE ROLE wfctl_nopriv LOGIN")
    try:
        dsn = psycopg.conninfo.make_conninfo(wfctl_world.dsn, user="wfctl_nopriv")
        status, _, err = run_cli("--dsn", dsn, "info")
        assert status == ExitStatus.UNKNOWN
        assert "insufficient privilege" in _one_error_line(err)
        status, _, err = run_cli("--dsn", dsn, "bootstrap")
        assert status == ExitStatus.UNKNOWN
        assert "insufficient privilege" in _one_error_line(err)
    finally:
        with wfctl_world.connect() as conn:
            conn.execute("DROP OWNED BY wfctl_nopriv")
        pg_server.execute("DROP ROLE wfctl_nopriv")


def _hold_lock(dsn: str, table: str, ready: threading.Event, release: threading.Event) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        ready.set()
        release.wait(30)
        conn.rollback()


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (("--statement-timeout", "300", "--lock-timeout", "0"), "statement timeout"),
        (("--lock-timeout", "300"), "lock timeout"),
    ],
)
def test_timeouts(wfctl_world, run_cli, flags, expected) -> None:
    ready, release = threading.Event(), threading.Event()
    holder = threading.Thread(
        target=_hold_lock,
        args=(wfctl_world.dsn, "workflow_drizzle.workflow_migrations", ready, release),
    )
    holder.start()
    try:
        assert ready.wait(10)
        status, _, err = run_cli(*flags, "--dsn", wfctl_world.dsn, "info")
    finally:
        release.set()
        holder.join()
    assert status == ExitStatus.UNKNOWN
    assert expected in _one_error_line(err)


def test_bootstrap_on_an_unusable_target_writes_nothing(wfctl_world, run_cli) -> None:
    with wfctl_world.connect() as conn:
        conn.execute("ALTER TABLE workflow.workflow_steps ALTER COLUMN attempt DROP NOT NULL")
        before = catalog.describe(conn, ("workflow", "workflow_drizzle", "wfctl"))
    status, _, err = run_cli("--dsn", wfctl_world.dsn, "bootstrap")
    assert status == ExitStatus.CRITICAL
    assert "workflow.workflow_steps.attempt" in _one_error_line(err)
    with wfctl_world.connect() as conn:
        assert catalog.describe(conn, ("workflow", "workflow_drizzle", "wfctl")) == before
