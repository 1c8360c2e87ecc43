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
