"""`wfctl completion SHELL`: print the completion script for SHELL (no shell detection).

The script is fixed text that asks wfctl itself for candidates at completion time
(`_WFCTL_COMPLETE=complete_<shell>`), so it never goes stale as commands are added. The
three scripts are also kept in `completions/`, and a test fails when they drift.
"""

from __future__ import annotations

import enum
from typing import Annotated

import typer

# Re-exported by typer.completion, not in typer's __all__: pinned by the typer minor range in
# pyproject and guarded by tests that run the completion protocol end to end.
from typer.completion import (  # type: ignore[attr-defined]
    completion_init,
    get_completion_script,
)

from wfctl.cli.app import COMPLETE_VAR, app

completion_init()  # register typer's bash/zsh/fish handlers for the callback protocol


class Shell(enum.StrEnum):
    BASH = "bash"
    ZSH = "zsh"
    FISH = "fish"


def script(shell: str) -> str:
    """The completion script for `shell`; the same text `completions/` keeps in git."""
    text = get_completion_script(prog_name="wfctl", complete_var=COMPLETE_VAR, shell=shell)
    return text if text.endswith("\n") else text + "\n"


@app.command()
def completion(
    shell: Annotated[Shell, typer.Argument(help="bash, zsh or fish.")],
) -> None:
    """Print the shell completion script for SHELL on stdout.

    [bold]Examples[/bold]
      wfctl completion bash > /etc/bash_completion.d/wfctl
      wfctl completion zsh > "${fpath[1]}/_wfctl"
      wfctl completion fish > ~/.config/fish/completions/wfctl.fish
    """
    typer.echo(script(shell.value), nl=False)
