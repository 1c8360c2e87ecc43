"""The worker's scheduler thread: starts the runs of scheduled workflows, one per tick.

See wfctl/runtime/schedule.py for the rules (the tick's run id is the idempotency key, so
every worker may race for a tick and one run is made; catch-up of missed ticks within
`catchup`). The runs are created in the worker's queue, in the same transaction as their
queue row, and then driven like any other queued run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import errors as pgerrors

from wfctl.runtime import executor as ex
from wfctl.runtime.registry import WorkflowDef, Workflows
from wfctl.runtime.schedule import Schedule, due_ticks, tick_run_id
from wfctl.runtime.store import AlreadyExists, Store

MAX_SLEEP = 60.0  # look again at least this often (clock jumps, a lost tick)


def scheduled(registry: Workflows) -> list[tuple[WorkflowDef, Schedule]]:
    return sorted(
        ((w, w.schedule) for w in registry.workflows.values() if w.schedule is not None),
        key=lambda pair: pair[0].name,
    )


class Scheduler:
    """Creates each due tick's run (idempotently) until `stop` is set."""

    def __init__(
        self,
        registry: Workflows,
        connect: Callable[[], psycopg.Connection[Any]],
        queue: str,
        stop: threading.Event,
        *,
        log: Callable[[str], None] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.plans = scheduled(registry)
        self.connect = connect
        self.queue = queue
        self.stop = stop
        self.log = log or (lambda _m: None)
        self.clock = clock or (lambda: datetime.now(UTC))
        self.since: dict[str, datetime | None] = {w.name: None for w, _ in self.plans}
        self.started: list[tuple[str, datetime, str]] = []  # (workflow, tick, run id)

    def run(self) -> None:
        conn: psycopg.Connection[Any] | None = None
        while not self.stop.is_set():
            pause = 1.0
            try:
                if conn is None or conn.closed:
                    conn = self.connect()
                pause = self.look(Store(conn))
            except psycopg.Error as exc:
                self.log(f"wfctl worker: scheduler: {str(exc).strip().splitlines()[0]}")
                if conn is not None:
                    conn.close()
                conn = None
            self.stop.wait(max(0.0, min(pause, MAX_SLEEP)))
        if conn is not None:
            conn.close()

    def look(self, store: Store) -> float:
        """Start every due tick's run; the seconds until the next tick."""
        now = self.clock()

        def exists(run_id: str) -> bool:
            return store.read_run(run_id) is not None

        wake = MAX_SLEEP
        for wdef, plan in self.plans:
            for tick in due_ticks(plan, wdef.name, now, exists, self.since[wdef.name]):
                self._start(store, wdef, plan, tick)
            self.since[wdef.name] = now
            wake = min(wake, (plan.next_after(now) - now).total_seconds())
        return wake

    def _start(self, store: Store, wdef: WorkflowDef, plan: Schedule, tick: datetime) -> None:
        run_id = tick_run_id(wdef.name, tick)
        try:
            created = ex.create(
                wdef, plan.args(wdef.fn, tick), run_id=run_id, conn=store.conn, queue=self.queue
            )
        except (pgerrors.UniqueViolation, AlreadyExists):
            return  # another worker made this tick's run a moment ago
        if not created.existing:
            self.started.append((wdef.name, tick, run_id))
            self.log(f"wfctl worker: schedule {wdef.name}: tick {tick.isoformat()}: run {run_id}")
