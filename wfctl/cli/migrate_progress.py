"""How `wfctl migrate` shows what the migrate domain reports (wfctl.migrate.events.Reporter).

Lines go to stderr through `Output.message`. A concurrent index build shows as a bar on a
terminal (one bar per phase, as pg_stat_progress_create_index reports phase by phase);
elsewhere (cron, CI, a pipe) one line per phase and at most one line per ten seconds within a
phase, so logs stay readable.
"""

from __future__ import annotations

import time

from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from wfctl.cli.output import Output

LINE_EVERY_S = 10.0


class CliReporter:
    """Renders the migrate domain's reports on the command's stderr."""

    def __init__(self, output: Output) -> None:
        self.output = output
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._phase: str | None = None
        self._last_line = 0.0

    def say(self, text: str) -> None:
        self.output.message(escape(text))

    def progress(self, label: str, phase: str, fraction: float | None, detail: str) -> None:
        if self.output.err.is_terminal:
            self._draw(phase, fraction, detail)
            return
        now = time.monotonic()
        if phase != self._phase or now - self._last_line >= LINE_EVERY_S:
            self._phase = phase
            self._last_line = now
            pct = f" {fraction:.0%}" if fraction is not None else ""
            extra = f" ({detail})" if detail else ""
            self.output.message(escape(f"  {label}: {phase}{pct}{extra}"))

    def _draw(self, phase: str, fraction: float | None, detail: str) -> None:
        if self._bar is None:
            columns = (
                TextColumn("  {task.description}"),
                BarColumn(bar_width=24),
                TextColumn("{task.percentage:>3.0f}%"),
                TimeElapsedColumn(),
                TextColumn("[dim]{task.fields[detail]}[/dim]"),
            )
            self._bar = Progress(*columns, console=self.output.err, transient=False)
            self._bar.start()
            self._task = self._bar.add_task("starting", total=100, detail="")
        assert self._task is not None
        self._bar.update(
            self._task,
            description=escape(phase),
            completed=(fraction or 0.0) * 100,
            detail=escape(detail),
        )

    def progress_done(self, label: str) -> None:
        if self._bar is not None:
            self._bar.stop()
        self._bar, self._task, self._phase = None, None, None
