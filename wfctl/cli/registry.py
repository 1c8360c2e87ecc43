"""Every top-level command by name, without importing its implementation.

`wfctl --version`, `wfctl --help` and Tab completion must answer at once, and `wfctl doctor`
must not pay for alembic/SQLAlchemy (repair's and bootstrap's), the runtime or the worker.
The root group lists the commands from `COMMANDS` (name, module, the one line the root help
shows) and imports a command's module only when that command is run, its help shown or its
arguments completed. `tests/test_cli_startup.py` checks that this table matches the commands
the modules register, and which modules each start-up path imports.

This module imports no other part of wfctl: the root group is handed its loader
(`wfctl.cli.shared.load_command`) when `shared.build()` makes the click tree, so the app,
this table and the shared options form no import circle.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from typer.core import TyperCommand, TyperGroup


class Entry(NamedTuple):
    module: str  # imported to register the command on `wfctl.cli.app.app`
    summary: str  # the first paragraph of its help, as `wfctl --help` lists it


_PKG = "wfctl.cli.commands."

# In the order `wfctl --help` lists them: the daily commands first.
COMMANDS: dict[str, Entry] = {
    "doctor": Entry(
        _PKG + "doctor",
        "Detect wedged runs: rows and events that disagree, runaway or missing wake-ups, drift.",
    ),
    "repair": Entry(
        _PKG + "repair",
        "Append the events doctor found missing, in one short guarded transaction per run.",
    ),
    "info": Entry(
        _PKG + "info",
        "Show the resolved connection, the server, what kind of world it holds, and the spec"
        " versions of its runs and events with what doctor checks for each.",
    ),
    "runs": Entry(_PKG + "runs", "List, inspect, cancel and wake workflow runs."),
    "run": Entry(_PKG + "run", "Start a durable workflow run and drive it in this process."),
    "worker": Entry(
        _PKG + "worker", "Run workflows from the queue, or (`status`) show workers and queues."
    ),
    "hooks": Entry(_PKG + "hooks", "Resume workflows waiting on hooks."),
    "migrate": Entry(_PKG + "migrate", "Upgrade a live world without blocking it."),
    "gc": Entry(
        _PKG + "gc",
        "Delete terminal runs whose completion is older than --older-than, with their events,"
        " steps, waits, hooks, stream chunks, slot marker and queue jobs.",
    ),
    "bootstrap": Entry(
        _PKG + "bootstrap",
        "Create the world's schemas and tables exactly as the real package would.",
    ),
    "embedded": Entry(
        _PKG + "embedded", "The embedded PostgreSQL used when no database is configured."
    ),
    "completion": Entry(
        _PKG + "completion", "Print the shell completion script for SHELL on stdout."
    ),
}


class LazyGroup(TyperGroup):
    """The root group: lists `COMMANDS`, imports a command's module when it is resolved.

    While the root help or the root's completion lists commands (`_listing`), a command not
    yet loaded is stood in for by a light stub carrying its name and summary. `loader` turns
    a name into its click command (set by `wfctl.cli.shared.build()`).
    """

    _listing = False
    loader: Callable[[str], Any] | None = None

    def list_commands(self, ctx: Any) -> list[str]:
        return [*COMMANDS, *(n for n in self.commands if n not in COMMANDS)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        found = self.commands.get(cmd_name)
        if found is not None or cmd_name not in COMMANDS:
            return found
        if self._listing:
            return TyperCommand(cmd_name, help=COMMANDS[cmd_name].summary)
        return self.load(cmd_name)

    def load(self, name: str) -> Any:
        """Import `name`'s module and keep its click command (shared options, help fixes)."""
        if self.loader is None:
            raise LookupError("the root group was not made by wfctl.cli.shared.build()")
        command = self.loader(name)
        self.commands[name] = command
        return command

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False

    def shell_complete(self, ctx: Any, incomplete: str) -> list[Any]:
        self._listing = True
        try:
            return list(super().shell_complete(ctx, incomplete))
        finally:
            self._listing = False

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        try:
            return super().resolve_command(ctx, args)
        except Exception as exc:  # a typo: suggest from every command, loaded or not
            from difflib import get_close_matches

            message = getattr(exc, "message", None)
            if isinstance(message, str) and "Did you mean" not in message and args:
                matches = get_close_matches(args[0], list(COMMANDS))
                if matches:
                    names = ", ".join(repr(m) for m in matches)
                    exc.message = f"{message.rstrip('.')}. Did you mean {names}?"  # type: ignore[attr-defined]
            raise
