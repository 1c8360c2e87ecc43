"""The guard rails every destructive operator command shares (gc, bulk cancel, wake).

A dry run unless --apply; --apply needs --reason (kept in the audit log); a human is asked
to confirm with the count in front of them, and a script must say --yes.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from wfctl.errors import ExitStatus, UsageError


def apply_flags(apply: bool, dry_run: bool, reason: str | None) -> str:
    """Check --apply/--dry-run/--reason together; returns the stripped reason."""
    if apply and dry_run:
        raise UsageError("--apply and --dry-run exclude each other")
    text = (reason or "").strip()
    if apply and not text:
        raise UsageError("--apply needs --reason TEXT (it is kept in the audit log)")
    return text


def confirm(question: str, yes: bool) -> None:
    """Ask on the terminal unless --yes; without a terminal, --yes is required."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise UsageError("--apply without a terminal needs --yes")
    if not typer.confirm(question, err=True):
        # "no" is an answer, not an interruption: nothing was written, and that is success
        typer.echo("not applied: nothing written", err=True)
        raise typer.Exit(int(ExitStatus.OK))


# The options these commands share, declared once.
Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Only count and show (the default).")]
JobPrefix = Annotated[
    str,
    typer.Option(
        "--job-prefix",
        envvar="WORKFLOW_POSTGRES_JOB_PREFIX",
        help="The world's graphile job prefix (task <prefix>flows).",
    ),
]
MaxTime = Annotated[
    str | None, typer.Option("--max-time", help="Stop starting new work after this long.")
]
Sample = Annotated[int, typer.Option("--sample", min=0, help="Matched runs shown.")]
Batch = Annotated[int, typer.Option("--batch", min=1, help="Runs per progress step.")]
