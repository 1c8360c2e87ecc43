"""Completion scripts: the committed files match what wfctl prints, and the protocol works."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from wfctl.cli.commands.completion import script

COMPLETIONS = Path(__file__).resolve().parent.parent / "completions"


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_committed_completion_scripts_are_current(shell, run_cli) -> None:
    status, out, _ = run_cli("completion", shell)
    assert status == 0 and out == script(shell)
    committed = (COMPLETIONS / f"wfctl.{shell}").read_text()
    assert committed == out, f"regenerate: wfctl completion {shell} > completions/wfctl.{shell}"


def test_bash_completion_protocol_completes_commands() -> None:
    env = {
        **os.environ,
        "_WFCTL_COMPLETE": "complete_bash",
        "COMP_WORDS": "wfctl boo",
        "COMP_CWORD": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", "from wfctl.cli.main import run; run()"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.stdout.split() == ["bootstrap"]


def _complete(words: str, **env: str) -> list[str]:
    full = {**os.environ, "_WFCTL_COMPLETE": "complete_bash", "COMP_WORDS": words,
            "COMP_CWORD": str(len(words.split(" ")) - 1), **env}  # fmt: skip
    for var in ("WFCTL_DATABASE_URL", "WORKFLOW_POSTGRES_URL", "DATABASE_URL"):
        if var not in env:
            full.pop(var, None)
    done = subprocess.run(
        [sys.executable, "-c", "from wfctl.cli.main import run; run()"],
        env=full, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout.split()


def test_completes_run_ids_from_the_world(wfctl_world) -> None:
    from wfctl.world import ids

    run_ids = [ids.prefixed("wrun") for _ in range(3)]
    with wfctl_world.connect() as conn:
        for run_id in run_ids:
            conn.execute(
                "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name)"
                " VALUES (%s, 'd', 'running', 'workflow//py:shop.flows//checkout')",
                (run_id,),
            )
    env = {"WFCTL_DATABASE_URL": wfctl_world.dsn}
    assert set(_complete("wfctl runs show wrun_", **env)) == set(run_ids)
    assert _complete(f"wfctl runs cancel {run_ids[0]}", **env) == [run_ids[0]]
    from tests.conftest import psycopg_to_url

    url = psycopg_to_url(wfctl_world.dsn)  # one shell word
    assert set(_complete(f"wfctl --dsn {url} doctor --run wrun_")) == set(run_ids)
    assert _complete("wfctl runs list --name shop.fl", **env) == ["shop.flows.checkout"]


def test_completes_check_codes_and_statuses() -> None:
    assert _complete("wfctl doctor --only WF10") == ["WF101", "WF102", "WF103", "WF104"]
    assert "WF101,WF112" in _complete("wfctl repair --only WF101,WF11")
    assert "WF141" in _complete("wfctl doctor --explain WF14")
    assert _complete("wfctl runs list --status ru") == ["running"]


def test_completion_is_silent_when_the_world_is_unreachable() -> None:
    env = {"WFCTL_DATABASE_URL": "postgresql://nobody@127.0.0.1:9/none"}
    assert _complete("wfctl runs show wrun_", **env) == []
    assert _complete("wfctl runs show wrun_") == []  # no DSN: no embedded server started
