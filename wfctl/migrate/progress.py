"""Progress of a concurrent index build, from `pg_stat_progress_create_index`.

A second session polls the building session's row every half second and hands each reading
to the `Reporter` (wfctl.migrate.events): the command layer draws a bar on a terminal, or one
line per phase (and at most one per ten seconds within a phase) elsewhere.
"""

from __future__ import annotations

import threading
from typing import Any

import psycopg
from psycopg.rows import dict_row

from wfctl import sql
from wfctl.connection.db import Target, connect
from wfctl.migrate.events import Reporter

POLL_S = 0.5


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
    """Poll one backend's index build in a thread until the block ends; report each reading."""

    def __init__(self, target: Target, reporter: Reporter, pid: int, label: str) -> None:
        self.target = target
        self.reporter = reporter
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
        self.reporter.progress_done(self.label)

    def _run(self) -> None:
        try:
            conn = connect(self.target, autocommit=True)
        except Exception:  # progress is a courtesy: never fail the build because of it
            return
        with conn:
            while not self._stop.wait(POLL_S):
                row = self._poll(conn)
                if row is None:
                    continue
                phase = str(row.get("phase") or "")
                if not self.phases or self.phases[-1] != phase:
                    self.phases.append(phase)
                part, detail = fraction(row)
                self.reporter.progress(self.label, phase, part, detail)

    def _poll(self, conn: psycopg.Connection[Any]) -> dict[str, Any] | None:
        try:
            with conn.cursor(row_factory=dict_row) as cur:
                return cur.execute(sql.load("migrate/index_progress"), {"pid": self.pid}).fetchone()
        except psycopg.Error:
            return None
