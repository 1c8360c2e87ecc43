"""Where output goes: primary data on stdout, progress and messages on stderr.

Colour follows `--no-color`, `NO_COLOR` (no-color.org) and whether the stream is a TTY, so
cron mail and pipes get plain text while a human at a terminal gets tables.
"""

from __future__ import annotations

import enum
import json
import logging
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from rich.console import Console
from rich.table import Table
from tabulate import tabulate

from wfctl.clock import timestamp
from wfctl.errors import UsageError

# A token holding a ULID-sized body (run/step/hook/event ids, `evnt_` slots, worker ids):
# tables never cut one, whatever the terminal width.
_ID_TOKEN = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")
# A timestamp in THE form (clock.timestamp) is read as one word too: folded, it misreads.
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$")
_CELL_BORDER = 3  # rich: one space of padding each side plus the column rule


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return timestamp(value)
    return str(value)


def dumps(obj: Any) -> str:
    """JSON as every command prints it (datetimes in the one timestamp form)."""
    return json.dumps(obj, indent=2, sort_keys=False, default=_jsonable)


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
    # Set by `--log-format json` (wfctl.cli.logs): messages go to this logger instead.
    logger: logging.Logger | None = field(default=None, init=False)

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
        if self.logger is not None:
            self.logger.info(text)
            return
        self.err.print(text)

    def debug(self, text: str) -> None:
        if self.logger is not None:
            self.logger.debug(text)
            return
        if self.verbose:
            self.err.print(f"[dim]{text}[/dim]")

    def data(self, text: str) -> None:
        """Primary data, verbatim (no markup interpretation)."""
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()

    def json(self, obj: Any) -> None:
        self.data(dumps(obj))

    def table(
        self,
        headers: Sequence[str],
        rows: Sequence[Sequence[Any]],
        title: str = "",
        optional: Sequence[str] = (),
    ) -> None:
        """A table in the chosen format: rich on text, tabulate for plain/markdown.

        An id or a timestamp is never cut. On text, columns holding them keep their full width
        and the other columns wrap; columns empty in every row are left out; when they do not fit
        the terminal, the `optional` columns are left out (said on stderr), and failing that
        each row is printed as a record (`column  value` lines, psql's expanded display).
        No rows: "none".
        """
        cells = [["" if v is None else _cell(v) for v in row] for row in rows]
        if not cells:
            self.data(f"{title}: none" if title else "none")
            return
        if self.format is not Format.TEXT:
            fmt = "github" if self.format is Format.MARKDOWN else "plain"
            self.data(tabulate(cells, headers=list(headers), tablefmt=fmt))
            return
        filled = [h for i, h in enumerate(headers) if any(row[i] for row in cells)]
        shown = list(filled)
        left_out: list[str] = []
        while not self._fits(headers, cells, shown):
            spare = [h for h in reversed(optional) if h in shown]
            if not spare:  # records have room for every column again
                self._records(headers, cells, filled, title)
                return
            shown.remove(spare[0])
            left_out.append(spare[0])
        table = Table(title=title or None, show_lines=False)
        columns = [headers.index(h) for h in shown]
        for i in columns:
            if _id_width(cells, i):
                table.add_column(headers[i], no_wrap=True, min_width=_id_width(cells, i))
            else:
                table.add_column(headers[i], overflow="fold")
        for row in cells:
            table.add_row(*(row[i] for i in columns))
        self.out.print(table)
        if left_out:
            self.message(
                f"({self.out.width} columns: left out {', '.join(left_out)};"
                " a wider terminal or --format json shows them)"
            )

    def _fits(self, headers: Sequence[str], cells: list[list[str]], shown: list[str]) -> bool:
        """Whether the id columns at full width, and the others at their longest word up to
        10 characters (a longer word folds, which still reads), fit the terminal."""
        needed = 0
        for h in shown:
            i = headers.index(h)
            longest = max(len(w) for w in [*h.split(), *(w for r in cells for w in r[i].split())])
            needed += _id_width(cells, i) or min(10, longest)
        return needed + _CELL_BORDER * len(shown) + 1 <= self.out.width

    def _records(
        self, headers: Sequence[str], cells: list[list[str]], shown: list[str], title: str
    ) -> None:
        """One `column  value` block per row: the layout that fits ids at any width."""
        width = max(len(h) for h in shown)
        lines = [title] if title else []
        for n, row in enumerate(cells, 1):
            lines.append(f"-[ {title or 'row'} {n} ]-")
            lines += [f"{h.ljust(width)}  {row[headers.index(h)]}" for h in shown]
        self.data("\n".join(lines))


def _cell(value: Any) -> str:
    return timestamp(value) or "" if isinstance(value, datetime) else str(value)


def _id_width(cells: list[list[str]], column: int) -> int:
    """The widest word in a column that must never be cut, an id or a timestamp (0: none)."""
    words = (w for row in cells for w in row[column].split())
    return max((len(w) for w in words if _ID_TOKEN.search(w) or _TIMESTAMP.match(w)), default=0)
