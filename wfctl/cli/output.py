"""Where output goes: primary data on stdout, progress and messages on stderr.

Colour follows `--no-color`, `NO_COLOR` (no-color.org) and whether the stream is a TTY, so
cron mail and pipes get plain text while a human at a terminal gets tables.
"""

from __future__ import annotations

import enum
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table
from tabulate import tabulate

from wfctl.errors import UsageError


class Format(enum.StrEnum):
    """Every output format a command may offer; each command names the ones it supports."""

    TEXT = "text"
    PLAIN = "plain"
    MARKDOWN = "markdown"
    JSON = "json"
    JSONL = "jsonl"
    PROMETHEUS = "prometheus"
    NAGIOS = "nagios"


@dataclass
class Output:
    """The two consoles of one invocation, configured once from the global options."""

    format: Format = Format.TEXT
    no_color: bool = False
    verbose: int = 0
    out: Console = field(init=False)
    err: Console = field(init=False)

    def __post_init__(self) -> None:
        no_color = self.no_color or bool(os.environ.get("NO_COLOR"))
        self.out = Console(file=sys.stdout, no_color=no_color, highlight=False, soft_wrap=True)
        self.err = Console(file=sys.stderr, no_color=no_color, highlight=False, soft_wrap=True)

    def require(self, *allowed: Format) -> Format:
        """Refuse a format the current command does not produce (usage error, exit 64)."""
        if self.format not in allowed:
            names = ", ".join(f.value for f in allowed)
            raise UsageError(
                f"--format {self.format.value} is not available here", hint=f"use one of: {names}"
            )
        return self.format

    def message(self, text: str) -> None:
        """A note for the human (stderr), never mixed into data."""
        self.err.print(text)

    def debug(self, text: str) -> None:
        if self.verbose:
            self.err.print(f"[dim]{text}[/dim]")

    def data(self, text: str) -> None:
        """Primary data, verbatim (no markup interpretation)."""
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()

    def json(self, obj: Any) -> None:
        self.data(json.dumps(obj, indent=2, sort_keys=False, default=str))

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str = "") -> None:
        """A table in the chosen format: rich on text, tabulate for plain/markdown."""
        if self.format is Format.TEXT:
            table = Table(title=title or None, show_lines=False)
            for h in headers:
                table.add_column(h)
            for row in rows:
                table.add_row(*("" if v is None else str(v) for v in row))
            self.out.print(table)
            return
        fmt = "github" if self.format is Format.MARKDOWN else "plain"
        self.data(tabulate(rows, headers=list(headers), tablefmt=fmt))
