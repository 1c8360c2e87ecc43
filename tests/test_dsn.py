"""DSN precedence and secrecy: the password never appears in anything wfctl prints."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.conftest import Db
from wfctl.connection.dsn import EMBEDDED, mask_dsn, mask_text, resolve_dsn
from wfctl.errors import ExitStatus, UsageError

URL = "postgresql://ops:s3cret@db.example:5432/app"


def test_precedence_cli_then_env_then_libpq_then_embedded(tmp_path) -> None:
    env = {
        "WFCTL_DATABASE_URL": "postgresql://a@h/wfctl",
        "WORKFLOW_POSTGRES_URL": "postgresql://a@h/workflow",
        "DATABASE_URL": "postgresql://a@h/database",
        "PGHOST": "elsewhere",
        "HOME": str(tmp_path),
    }
    assert resolve_dsn("postgresql://a@h/cli", env).source == "--dsn"
    assert resolve_dsn(None, env).source == "WFCTL_DATABASE_URL"
    del env["WFCTL_DATABASE_URL"]
    assert resolve_dsn(None, env).source == "WORKFLOW_POSTGRES_URL"
    del env["WORKFLOW_POSTGRES_URL"]
    assert resolve_dsn(None, env).conninfo == "postgresql://a@h/database"
    del env["DATABASE_URL"]
    libpq = resolve_dsn(None, env)
    assert libpq.conninfo == "" and libpq.source.startswith("libpq")
    del env["PGHOST"]
    assert resolve_dsn(None, env).source == EMBEDDED
    (tmp_path / ".pg_service.conf").write_text("[svc]\nhost=x\n")
    assert resolve_dsn(None, env).source.startswith("libpq")


@pytest.mark.parametrize(
    "bad",
    [
        "notadsn",
        "host=a dbname",
        "postgres://[::1",
        "host=a password='s3cret",
        "postgresql://ops:s3cret@h:notaport/db",
        "foo=bar",
    ],
)
def test_malformed_dsn_is_a_usage_error_without_the_secret(bad: str) -> None:
    with pytest.raises(UsageError) as info:
        resolve_dsn(bad, {})
    assert info.value.status == ExitStatus.USAGE
    line = info.value.one_line()
    assert "s3cret" not in line and "\n" not in line
    assert "--dsn" in line


def test_masking() -> None:
    assert "s3cret" not in mask_dsn(URL) and "password=***" in mask_dsn(URL)
    assert "s3cret" not in mask_dsn("host=h password=s3cret dbname=x")
    assert mask_text(f"failed for {URL}", URL).count("s3cret") == 0
    assert "s3cret" not in mask_text("oops postgresql://u:s3cret@h/x and password=s3cret", "")


# -- the DSN's and libpq's own settings win over wfctl's defaults; a flag wins over them --------


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port on this machine that accepts connections and never answers: a connection
    attempt there ends only by its timeout."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    yield listener.getsockname()[1]
    listener.close()
    for conn in held:
        conn.close()


@pytest.mark.parametrize(
    ("query", "env", "flags", "said"),
    [
        ("?connect_timeout=2", {}, (), "after 2 s (connect_timeout of the DSN)"),
        ("", {"PGCONNECT_TIMEOUT": "2"}, (), "after 2 s (PGCONNECT_TIMEOUT)"),
        ("?connect_timeout=30", {}, ("--connect-timeout", "2"), "after 2 s (--connect-timeout)"),
    ],
)
def test_the_connect_timeout_of_the_dsn_or_libpq_wins_unless_a_flag_says_otherwise(
    run_cli,
    monkeypatch: pytest.MonkeyPatch,
    silent_server: int,
    query: str,
    env: dict[str, str],
    flags: tuple[str, ...],
    said: str,
) -> None:
    for var, val in env.items():
        monkeypatch.setenv(var, val)
    dsn = f"postgresql://u@127.0.0.1:{silent_server}/db{query}"
    status, _, err = run_cli(*flags, "--dsn", dsn, "info")
    assert status == ExitStatus.UNKNOWN and "connection timed out" in err and said in err, err


def test_session_limits_in_the_dsn_options_win_unless_a_flag_says_otherwise(
    pg_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wfctl.connection.db import Target, Timeouts, connect, own_limits

    assert own_limits("connect_timeout=3", {}) == {"connect_s"}
    assert own_limits("", {"PGCONNECT_TIMEOUT": "3"}) == {"connect_s"}
    assert own_limits("", {"PGOPTIONS": "-c lock_timeout=1s"}) == {"lock_ms"}
    # libpq ignores PGOPTIONS when the conninfo has options of its own
    assert own_limits("options='-c statement_timeout=1s'", {"PGOPTIONS": "-c lock_timeout=1s"}) == {
        "statement_ms"
    }
    dsn = psycopg.conninfo.make_conninfo(
        pg_server.dsn("postgres"), options="-c statement_timeout=1234 -c lock_timeout=4321"
    )

    def limits(timeouts: Timeouts) -> tuple[str, str]:
        with connect(Target(resolve_dsn(dsn), timeouts)) as conn:
            row = conn.execute(
                "SELECT current_setting('statement_timeout'), current_setting('lock_timeout')"
            ).fetchone()
        assert row is not None
        return row[0], row[1]

    assert limits(Timeouts()) == ("1234ms", "4321ms")
    assert limits(Timeouts(given=frozenset({"statement_ms"}))) == ("30s", "4321ms")


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("sslmode=bogus", 'invalid sslmode value: "bogus"'),
        ("options='-c statement_timeout=x'", 'invalid value for parameter "statement_timeout"'),
        ("connect_timeout=x", "invalid connect_timeout"),
    ],
)
def test_an_invalid_connection_setting_is_said_as_such(
    run_cli, wfctl_world: Db, query: str, said: str
) -> None:
    status, out, err = run_cli("--dsn", f"{wfctl_world.dsn} {query}", "info")
    assert status == ExitStatus.USAGE and out == "" and said in err, err
    assert "timed out" not in err and "is the server running" not in err
    assert err.count("\n") == 1


def test_a_missing_service_file_or_service_is_said_as_such(
    run_cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    service = tmp_path / "pg_service.conf"
    service.write_text("[other]\nhost=127.0.0.1\n")
    for path, name, said in (
        (tmp_path / "missing.conf", "svc", "not found"),
        (service, "svc", 'definition of service "svc" not found'),
    ):
        monkeypatch.setenv("PGSERVICEFILE", str(path))
        monkeypatch.setenv("PGSERVICE", name)
        status, out, err = run_cli("info")
        assert status == ExitStatus.USAGE and out == "" and said in err, err
        assert "cannot use the libpq service" in err and "PGSERVICEFILE" in err
        assert "is the server running" not in err
