"""No secret is ever printed: every error path wfctl can reach with a password in the DSN.

The password is distinctive, and each path's stdout and stderr are swept for it (and for its
distinctive middle, since libpq quotes fragments of a token it cannot parse), in text and JSON,
with and without -v (tracebacks).
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from tests.conftest import Db, Server

SECRET = "S3cretPW"
FRAGMENTS = (SECRET, "3cretP", "cretPW")


def leaks(text: str) -> list[str]:
    return [f for f in FRAGMENTS if f in text]


def with_password(dsn: str, **parts: Any) -> str:
    return psycopg.conninfo.make_conninfo(dsn, password=SECRET, **parts)


def sweep(run_cli: Any, args_list: list[tuple[str, ...]]) -> list[tuple[int, str, str]]:
    seen = []
    for args in args_list:
        for extra in ((), ("-v",), ("-vv", "--format", "json")):
            status, out, err = run_cli(*extra, *args)
            assert not leaks(out) and not leaks(err), (extra, args, status, out, err)
            seen.append((status, out, err))
    return seen


MALFORMED = (
    f"postgresql://ops:{SECRET}%@db.example/app",
    f"postgresql://ops:{SECRET}%zz@db.example/app",
    f"host=db.example password={SECRET[:4]} {SECRET[4:]}",
    f"host=db.example password={SECRET} dbname",
    f"host=db.example password='{SECRET}",
    f"postgresql://ops:{SECRET}@db.example/app?bogus=1",
    f"postgresql://ops:{SECRET}@[::1/app",
)


@pytest.mark.parametrize("dsn", MALFORMED)
def test_a_malformed_dsn_never_prints_its_password(run_cli, monkeypatch, dsn: str) -> None:
    results = sweep(run_cli, [("--dsn", dsn, "info"), ("doctor", "--dsn", dsn)])
    for status, _, err in results:
        assert status == 64 and "malformed connection string" in err, err
    for var in ("WFCTL_DATABASE_URL", "DATABASE_URL"):
        monkeypatch.setenv(var, dsn)
        for status, _, err in sweep(run_cli, [("info",)]):
            assert status == 64 and var in err, err
        # a monitoring format says UNKNOWN in its own line (exit 3), still without the secret
        for status, out, err in sweep(run_cli, [("--format", "nagios", "doctor")]):
            assert status == 3 and var in err and var in out, (out, err)
            assert out.startswith("WFCTL UNKNOWN - usage error: malformed connection string")
        monkeypatch.delenv(var)


@pytest.mark.parametrize(
    "setting", ["sslmode=bogus", "options='-c statement_timeout=x'", "connect_timeout=x"]
)
def test_an_invalid_setting_never_prints_the_password(
    run_cli, wfctl_world: Db, setting: str
) -> None:
    dsn = f"{with_password(wfctl_world.dsn)} {setting}"
    for status, _, err in sweep(run_cli, [("--dsn", dsn, "info")]):
        assert status == 64, err


def test_connection_failures_never_print_the_password(run_cli, pg_server: Server) -> None:
    bad_host = f"postgresql://ops:{SECRET}@127.0.0.1:1/app"
    no_role = with_password(pg_server.admin_dsn, user="nosuchrole")
    no_db = with_password(pg_server.admin_dsn, dbname="nosuchdb")
    pg_server.execute("DROP ROLE IF EXISTS wfctl_nologin")
    pg_server.execute(f"CREATE ROLE wfctl_nologin NOLOGIN PASSWORD '{SECRET}'")
    nologin = with_password(pg_server.admin_dsn, user="wfctl_nologin")
    args = [
        (*pre, "--dsn", dsn, *cmd)
        for dsn in (bad_host, no_role, no_db, nologin)
        for pre, cmd in (
            ((), ("info",)),
            (("--format", "nagios"), ("doctor",)),
            (("--format", "prometheus"), ("doctor",)),
            ((), ("repair", "--apply", "--yes", "--reason", "t")),
        )
    ]
    for status, _, err in sweep(run_cli, args):
        assert status == 3, err


def test_refused_writes_and_query_errors_never_print_the_password(
    run_cli, wfctl_world: Db, pg_server: Server
) -> None:
    """A role that may read but not write: every writer fails inside the server; a statement
    timeout; a successful info and doctor (the DSN is shown masked)."""
    role = f"ro_{wfctl_world.name}"
    with wfctl_world.connect() as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{SECRET}'")
        conn.execute(f"GRANT USAGE ON SCHEMA workflow, workflow_drizzle, wfctl TO {role}")
        conn.execute(
            "GRANT SELECT ON ALL TABLES IN SCHEMA workflow, workflow_drizzle, wfctl TO " + role
        )
    dsn = with_password(wfctl_world.dsn, user=role)
    owner = with_password(wfctl_world.dsn)
    apply = ("--apply", "--yes", "--reason", "t")
    args = [
        ("--dsn", dsn, "info"),
        ("--dsn", owner, "info"),
        ("--dsn", dsn, "doctor", "--all"),
        ("--dsn", dsn, "--format", "prometheus", "doctor"),
        ("--dsn", dsn, "repair", *apply, "--min-age", "1m"),
        ("--dsn", dsn, "bootstrap"),
        ("--dsn", dsn, "runs", "cancel", "wrun_01JAAAAAAAAAAAAAAAAAAAAAAA"),
        ("--dsn", dsn, "runs", "cancel", "--where", "status=running", *apply),
        ("--dsn", dsn, "gc", *apply),
        ("--dsn", dsn, "hooks", "resume", "nosuchtoken", "{}"),
        ("--dsn", dsn, "repair", "log"),
        ("--dsn", owner, "--statement-timeout", "1", "doctor", "--all"),
        ("--dsn", dsn, "runs", "show", "wrun_nope"),
    ]
    results = sweep(run_cli, args)
    try:
        assert any("insufficient privilege" in err or "permission" in err for *_, err in results)
    finally:
        with wfctl_world.connect() as conn:
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")
