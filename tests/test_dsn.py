"""DSN precedence and secrecy: the password never appears in anything wfctl prints."""

from __future__ import annotations

import pytest

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
