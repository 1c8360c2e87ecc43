"""Progress of a concurrent index build, from `pg_stat_progress_create_index`, on stderr.

A second session polls the building session's row every half second. On a terminal the
progress is a bar; elsewhere (cron, CI, a pipe) one line per phase and at most one line per
ten seconds within a phase, so logs stay readable.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
from psycopg.rows import dict_row
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from wfctl import sql
from wfctl.cli.output import Output
from wfctl.connection.db import Target, connect

POLL_S = 0.5
LINE_EVERY_S = 10.0


def fraction(row: dict[str, Any]) -> tuple[float | None, str]:
    """How far the current phase is (0..1, or None when it reports no totals), and a detail."""
    phase = str(row.get("phase") or "")
    pairs = [
        ("blocks", row.get("blocks_done"), row.get("blocks_total")),
        ("tuples", row.get("tuples_done"), row.get("tuples_total")),
        ("lockers", row.get("lockers_done"), row.get("lockers_total")),
    ]
    if "waiting" in phase:
        pairs = [pairs[2], pairs[0], pairs[1]]
    elif "loading" in phase or "sorting" in phase:
        pairs = [pairs[1], pairs[0], pairs[2]]
    for label, done, total in pairs:
        if total:
            detail = f"{label} {done:,}/{total:,}"
            if label == "lockers" and row.get("current_locker_pid"):
                detail += f", waiting for pid {row['current_locker_pid']}"
            return min(1.0, float(done or 0) / float(total)), detail
    return None, ""


class BuildProgress:
    """Poll one backend's index build in a thread until `stop()`; render on stderr."""

    def __init__(self, target: Target, output: Output, pid: int, label: str) -> None:
        self.target = target
        self.output = output
        self.pid = pid
        self.label = label
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wfctl-build-progress", daemon=True)
        self.phases: list[str] = []

    def __enter__(self) -> BuildProgress:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        try:
            conn = connect(self.target, autocommit=True)
        except Exception:  # progress is a courtesy: never fail the build because of it
            return
        with conn:
            if self.output.err.is_terminal:
                self._bar(conn)
            else:
                self._lines(conn)

    def _poll(self, conn: psycopg.Connection[Any]) -> dict[str, Any] | None:
        try:
            with conn.cursor(row_factory=dict_row) as cur:
                return cur.execute(sql.load("migrate/index_progress"), {"pid": self.pid}).fetchone()
        except psycopg.Error:
            return None

    def _note_phase(self, row: dict[str, Any]) -> bool:
        phase = str(row.get("phase") or "")
        if not self.phases or self.phases[-1] != phase:
            self.phases.append(phase)
            return True
        return False

    def _lines(self, conn: psycopg.Connection[Any]) -> None:
        last_line = 0.0
        while not self._stop.wait(POLL_S):
            row = self._poll(conn)
            if row is None:
                continue
            changed = self._note_phase(row)
            now = time.monotonic()
            if changed or now - last_line >= LINE_EVERY_S:
                part, detail = fraction(row)
                pct = f" {part:.0%}" if part is not None else ""
                extra = f" ({detail})" if detail else ""
                self.output.message(escape(f"  {self.label}: {row['phase']}{pct}{extra}"))
                last_line = now

    def _bar(self, conn: psycopg.Connection[Any]) -> None:
        # One bar per phase (the view reports progress phase by phase): phase, bar, %, counters.
        columns = (
            TextColumn("  {task.description}"),
            BarColumn(bar_width=24),
            TextColumn("{task.percentage:>3.0f}%"),
            TimeElapsedColumn(),
            TextColumn("[dim]{task.fields[detail]}[/dim]"),
        )
        with Progress(*columns, console=self.output.err, transient=False) as bar:
            task: TaskID = bar.add_task("starting", total=100, detail="")
            while not self._stop.wait(POLL_S):
                row = self._poll(conn)
                if row is None:
                    continue
                self._note_phase(row)
                part, detail = fraction(row)
                bar.update(
                    task,
                    description=escape(str(row["phase"])),
                    completed=(part or 0.0) * 100,
                    detail=escape(detail),
                )
