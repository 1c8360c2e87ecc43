"""The CLI contract: version, teaching help, exit statuses, streams, colour."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from wfctl import __version__
from wfctl.cli import main as _main  # noqa: F401
from wfctl.cli import shared
from wfctl.errors import ExitStatus

# every registered top-level command (a new one is covered without editing this file)
COMMANDS = sorted(shared.build(load_all=True).commands)


def test_version(run_cli) -> None:
    status, out, _ = run_cli("--version")
    assert status == 0 and out.strip() == f"wfctl {__version__}"


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_an_example(run_cli, command) -> None:
    status, out, _ = run_cli(command, "--help")
    assert status == 0
    assert "Examples" in out and "wfctl " in out.split("Examples", 1)[1]


def test_top_level_help_lists_commands_exit_codes_and_examples(run_cli) -> None:
    status, out, _ = run_cli("--help")
    assert status == 0
    flat = " ".join(out.split())
    for word in [*COMMANDS, "Exit codes", "64 usage error", "WORKFLOW_POSTGRES_URL", "Examples"]:
        assert word in flat
    assert run_cli()[0] == 0  # bare `wfctl` teaches too


@pytest.mark.parametrize(
    "args",
    [("--no-such-flag",), ("info", "--nope"), ("no-such-command",), ("--format", "xml", "info")],
)
def test_usage_errors_exit_64_with_one_line(run_cli, args) -> None:
    status, out, err = run_cli(*args)
    assert status == ExitStatus.USAGE
    assert out == ""
    assert err.startswith("wfctl: error: ") and err.count("\n") == 1


def test_format_a_command_does_not_offer_is_a_usage_error(run_cli) -> None:
    dsn = "postgresql://x@127.0.0.1:1/x"
    status, _, err = run_cli("--format", "prometheus", "--dsn", dsn, "info")
    assert status == ExitStatus.USAGE and "--format prometheus" in err


def test_console_script_exit_status_and_no_color(empty_db) -> None:
    env = {**os.environ, "NO_COLOR": "1", "WORKFLOW_POSTGRES_URL": empty_db.dsn}
    env.pop("WFCTL_DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "wfctl", "info"], env=env, capture_output=True, text=True
    )
    assert done.returncode == ExitStatus.UNKNOWN
    assert "\x1b[" not in done.stdout + done.stderr
    assert "world:        no world" in done.stdout
    assert done.stderr.startswith("wfctl: error:")


def test_ctrl_c_exits_130_with_one_line(empty_db) -> None:
    """SIGINT while a statement runs: one line on stderr, exit 130 (not a traceback)."""
    import signal
    import time

    env = {**os.environ, "WORKFLOW_POSTGRES_URL": empty_db.dsn}
    code = (
        "import psycopg, wfctl.cli.app as a\n"
        "from wfctl.connection.dsn import resolve_dsn\n"
        "@a.app.command('nap')\n"
        "def nap() -> None:\n"
        "    with psycopg.connect(resolve_dsn(None).conninfo) as c:\n"
        "        c.execute('SELECT pg_sleep(30)')\n"
        "from wfctl.cli.main import run\n"
        "run()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "nap"], env=env, stderr=subprocess.PIPE, text=True
    )
    # signal once the statement runs (not after a guessed delay: a loaded machine may still
    # be importing, and Ctrl-C there is Python's, not wfctl's)
    for _ in range(600):
        if empty_db.scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)'"
            " AND state = 'active' AND datname = current_database()"
        ):
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == ExitStatus.INTERRUPTED
    assert err.strip().splitlines()[-1] == "wfctl: interrupted"
