"""Where output goes: primary data on stdout, progress and messages on stderr.

Colour follows `--no-color`, `NO_COLOR` (no-color.org) and whether the stream is a TTY, so
cron mail and pipes get plain text while a human at a terminal gets tables.
"""

from __future__ import annotations

import enum
import json
import logging
import math
import os
import re
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any

from wfctl.clock import timestamp
from wfctl.errors import UsageError

if TYPE_CHECKING:
    from rich.console import Console

# A token holding a ULID-sized body (run/step/hook/event ids, `evnt_` slots, worker ids):
# tables never cut one, whatever the terminal width.
_ID_TOKEN = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")
# A timestamp in THE form (clock.timestamp) is read as one word too: folded, it misreads.
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$")
_CELL_BORDER = 3  # rich: one space of padding each side plus the column rule
# What a stored name, error code or --reason may hold that a terminal would obey: C0/C1
# controls (escape sequences, carriage return, bell), DEL, and the bidi/line-separator marks
# that reorder or split what is shown. Text output shows them as `\xNN` / `\uNNNN`.
_UNSAFE = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069"
_UNSAFE_TEXT = re.compile(f"[{_UNSAFE}]")
_UNSAFE_CELL = re.compile(f"[\t\n{_UNSAFE}]")  # a cell is one line


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: str, *, one_line: bool = False) -> str:
    """`text` safe for a terminal: control characters shown as escapes, never obeyed.

    Every text renderer (tables, plain lines, messages, error lines) goes through it; JSON
    is exact (json.dumps escapes control characters itself)."""
    return (_UNSAFE_CELL if one_line else _UNSAFE_TEXT).sub(_escape, text)


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return timestamp(value)
    return str(value)


def dumps(obj: Any) -> str:
    """JSON as every command prints it (datetimes in the one timestamp form), strict: a
    non-finite number (stored by another writer, or computed) is `null`, as JavaScript's
    JSON.stringify writes it, never the `Infinity`/`NaN` tokens strict parsers reject."""
    try:
        return json.dumps(obj, indent=2, sort_keys=False, default=_jsonable, allow_nan=False)
    except ValueError:  # a non-finite float somewhere: the rare case pays for the walk
        return json.dumps(finite(obj), indent=2, sort_keys=False, default=_jsonable)


def finite(value: Any) -> Any:
    """`value` with every non-finite float replaced by None (JSON.stringify's `null`)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


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
    # Set by `--log-format json` (wfctl.cli.logs): messages go to this logger instead.
    logger: logging.Logger | None = field(default=None, init=False)

    # rich is imported at the first table or message, not when the options are parsed
    @cached_property
    def out(self) -> Console:
        return self._console(sys.stdout)

    @cached_property
    def err(self) -> Console:
        return self._console(sys.stderr)

    def _console(self, file: Any) -> Console:
        from rich.console import Console

        no_color = self.no_color or bool(os.environ.get("NO_COLOR"))
        return Console(file=file, no_color=no_color, highlight=False, soft_wrap=True)

    def require(self, *allowed: Format) -> Format:
        """Refuse a format the current command does not produce (usage error, exit 64)."""
        if self.format not in allowed:
            names = ", ".join(f.value for f in allowed)
            raise UsageError(
                f"--format {self.format.value} is not available here", hint=f"use one of: {names}"
            )
        return self.format

    @property
    def width(self) -> int:
        """The terminal's width (COLUMNS when set; 80 off a terminal), without loading rich."""
        return shutil.get_terminal_size((80, 24)).columns

    def message(self, text: str) -> None:
        """A note for the human (stderr), never mixed into data: plain text, no markup."""
        if self.logger is not None:
            self.logger.info(text)
            return
        sys.stderr.write(clean(text) + "\n")
        sys.stderr.flush()

    def debug(self, text: str) -> None:
        if self.logger is not None:
            self.logger.debug(text)
            return
        if self.verbose:
            self.err.print(f"[dim]{clean(text)}[/dim]")

    def data(self, text: str) -> None:
        """Primary data, verbatim (no markup interpretation; control characters escaped)."""
        text = clean(text)
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
            from tabulate import tabulate

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
        from rich.table import Table

        table = Table(title=title or None, show_lines=False)
        columns = [headers.index(h) for h in shown]
        for i in columns:
            if _id_width(cells, i):
                table.add_column(headers[i], no_wrap=True, min_width=_id_width(cells, i))
            else:
                table.add_column(headers[i], overflow="fold")
        from rich.text import Text

        for row in cells:  # Text: a stored "[red]" is shown, not taken as rich markup
            table.add_row(*(Text(row[i]) for i in columns))
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
    text = timestamp(value) or "" if isinstance(value, datetime) else str(value)
    return clean(text, one_line=True)


def _id_width(cells: list[list[str]], column: int) -> int:
    """The widest word in a column that must never be cut, an id or a timestamp (0: none)."""
    words = (w for row in cells for w in row[column].split())
    return max((len(w) for w in words if _ID_TOKEN.search(w) or _TIMESTAMP.match(w)), default=0)
