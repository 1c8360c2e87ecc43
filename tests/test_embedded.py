"""The zero-configuration path: with no DSN anywhere, wfctl uses its embedded PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import pytest


@pytest.fixture
def embedded_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    for name in ("WFCTL_DATABASE_URL", "WORKFLOW_POSTGRES_URL", "DATABASE_URL"):
        env.pop(name, None)
    env["HOME"] = str(tmp_path)  # no ~/.pg_service.conf
    env["WFCTL_EMBEDDED_DIR"] = str(tmp_path / "pgdata")
    yield env
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

        # wfctl leaves its server running between commands; stop this one.
        pgserver.get_server(str(tmp_path / "pgdata"), cleanup_mode="stop").cleanup()


def _wfctl(env, *args):
    return subprocess.run(
        [sys.executable, "-m", "wfctl", *args], env=env, capture_output=True, text=True
    )


def test_bootstrap_then_doctor_on_the_embedded_default(embedded_env) -> None:
    done = _wfctl(embedded_env, "bootstrap")
    assert done.returncode == 0, done.stderr
    assert "using the embedded PostgreSQL" in done.stderr and "created" in done.stdout
    assert "Warning" not in done.stderr
    # a machine format never answers from the embedded server implicitly (cron lost its
    # environment: a verdict on another world would be a lie); given its DSN, it does
    done = _wfctl(embedded_env, "--format", "nagios", "doctor")
    assert done.returncode == 3 and done.stdout.startswith("WFCTL UNKNOWN - no database")
    status = _wfctl(embedded_env, "embedded", "status", "-o", "json")
    dsn = json.loads(status.stdout)["dsn"]
    done = _wfctl(embedded_env, "--dsn", dsn, "--format", "nagios", "doctor")
    assert done.returncode == 0 and done.stdout.startswith("WFCTL OK")
    done = _wfctl(embedded_env, "info")
    assert "embedded PostgreSQL in" in done.stdout and "(from embedded)" in done.stdout
