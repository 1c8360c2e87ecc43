"""Leases for runs driven in the process that started them (`wfctl run`, `RunHandle.result()`).

A worker holds a lease on every run it drives; a run driven by the process that created it
used to hold none, so when that process died (SIGKILL, OOM, a web process redeployed) the run
stayed `running` with nobody to continue it. Here such a driver takes the run's queue row
(`wfctl.run_queue`, the worker's table) with a lease of its own before driving, renews it
from a heartbeat thread (every lease/3, on its own connection: not per step), and on leaving
hands the row back as a worker does (`worker/release`: ready at the run's next timer, parked
on a hook, or ready now). When the process dies, the lease expires and any `wfctl worker`'s
recovery makes the run ready: a worker adopts it. The run's terminal transaction deletes the
row, whoever drives it. A database without the worker's tables (w0004) gets no lease.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import psycopg

from wfctl import sql
from wfctl.runtime.store import TERMINAL
from wfctl.world import ids


class Done(Protocol):
    """Where a drive left the run (`executor.Done`; not imported: the executor imports this)."""

    @property
    def status(self) -> str: ...
    @property
    def error(self) -> str | None: ...
    @property
    def next_due(self) -> datetime | None: ...


LEASE_SECONDS = 15.0
DEFAULT_QUEUE = "default"
Connect = Callable[[], psycopg.Connection[Any]]


def owner_id() -> str:
    """`<host>:<pid>:drv_<ULID>`: a worker's id shape, marked as an in-process driver."""
    return f"{socket.gethostname()}:{os.getpid()}:drv_{ids.prefixed('x')[2:]}"


@dataclass
class Lease:
    """One run's lease held by this process (`held` False: none was taken)."""

    run_id: str
    owner: str
    held: bool
    wake_seq: int = 0


def hold(
    conn: psycopg.Connection[Any],
    run_id: str,
    name: str,
    *,
    queue: str = DEFAULT_QUEUE,
    lease: float = LEASE_SECONDS,
    owner: str | None = None,
) -> Lease:
    """Lease the run's queue row for this process (inserted if the run has none)."""
    owner = owner or owner_id()
    row = conn.execute(
        sql.load("worker/hold"),
        {"run_id": run_id, "queue": queue, "name": name, "owner": owner, "lease": lease},
    ).fetchone()
    if row is None:
        return Lease(run_id, owner, held=False)
    return Lease(run_id, owner, held=True, wake_seq=int(row[0]))


def release(conn: psycopg.Connection[Any], lease: Lease, ready_at: datetime | None) -> None:
    """Hand the run back (ready at `ready_at`; None: parked on a hook), as a worker does."""
    if not lease.held:
        return
    conn.execute(
        sql.load("worker/release"),
        {
            "run_id": lease.run_id,
            "worker": lease.owner,
            "seen": lease.wake_seq,
            "ready_at": None if ready_at is None else ready_at.isoformat(),
        },
    )


def drop(conn: psycopg.Connection[Any], lease: Lease) -> None:
    """The run had ended: remove a queue row this lease inserted."""
    if lease.held:
        conn.execute(sql.load("worker/drop_ended"), {"run_id": lease.run_id, "worker": lease.owner})


def ready_after(done: Done) -> datetime | None:
    """When a run left by a drive is ready for the next driver: at its next timer, None
    (parked) when it only waits for a hook, now when the drive did not say (timed out)."""
    if done.error is not None or done.status == "busy":
        return datetime.now(UTC)
    return done.next_due


class Heartbeat:
    """Renews this process's leases every lease/3 on its own connection (a thread)."""

    def __init__(self, connect: Connect, lease: float = LEASE_SECONDS) -> None:
        self.connect = connect
        self.lease = lease
        self.runs: dict[str, str] = {}  # run id -> owner
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.failures = 0

    def add(self, lease: Lease) -> None:
        if not lease.held:
            return
        with self._lock:
            self.runs[lease.run_id] = lease.owner
            if self._thread is None:
                self._stop.clear()
                self._thread = threading.Thread(target=self._beat, name="wfctl-lease", daemon=True)
                self._thread.start()

    def remove(self, lease: Lease) -> None:
        with self._lock:
            self.runs.pop(lease.run_id, None)

    def close(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=5)

    def _beat(self) -> None:
        conn: psycopg.Connection[Any] | None = None
        try:
            while not self._stop.wait(self.lease / 3):
                with self._lock:
                    by_owner: dict[str, list[str]] = {}
                    for run_id, owner in self.runs.items():
                        by_owner.setdefault(owner, []).append(run_id)
                try:
                    if conn is None or conn.closed:
                        conn = self.connect()
                    for owner, runs in by_owner.items():
                        conn.execute(
                            sql.load("worker/renew"),
                            {"owner": owner, "lease": self.lease, "runs": runs},
                        )
                except Exception:  # psycopg.Error, or the CLI's one-line connection error
                    # The lease may lapse; the run lock still keeps a second driver out.
                    self.failures += 1
                    if conn is not None:
                        conn.close()
                    conn = None
        finally:
            if conn is not None:
                conn.close()


def queued(conn: psycopg.Connection[Any]) -> bool:
    """Whether the database has the worker's tables (no lease can be taken without them)."""
    row = conn.execute(sql.load("worker/has_queue")).fetchone()
    return bool(row and row[0])


@contextmanager
def driving(
    conn: psycopg.Connection[Any],
    connect: Connect,
    run_id: str,
    name: str,
    *,
    queue: str = DEFAULT_QUEUE,
    lease: float = LEASE_SECONDS,
    enabled: bool = True,
) -> Iterator[tuple[Callable[[Done], None], Lease]]:
    """Hold the run's lease around an in-process drive; yields `finish(done)`, which hands
    the run back as the drive left it. Leaving without `finish` (an exception, Ctrl-C)
    hands it back ready now, so a worker continues it at once. The caller checks
    `lease.held` (`yield`ed second): False with `enabled` means another live process holds
    the run, so this one must not drive it."""
    taken = (
        hold(conn, run_id, name, queue=queue, lease=lease)
        if enabled
        else Lease(run_id, "", held=False)
    )
    beat = Heartbeat(connect, lease)
    beat.add(taken)
    finished: list[Done] = []
    try:
        yield finished.append, taken
    finally:
        beat.close()
        if taken.held:
            _hand_back(conn, connect, taken, finished[0] if finished else None)


def _hand_back(
    conn: psycopg.Connection[Any], connect: Connect, taken: Lease, done: Done | None
) -> None:
    """Release (or drop) the row; on the driver's session when it is idle, else (an
    interrupted drive may leave it inside a transaction) on a fresh one; if the server is
    unreachable, the lease expires instead."""
    idle = not conn.closed and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    try:
        if idle:
            _leave(conn, taken, done)
            return
    except psycopg.Error:
        pass
    try:
        with connect() as fresh:
            _leave(fresh, taken, done)
    except Exception:  # psycopg.Error, or the CLI's one-line connection error
        pass


def _leave(conn: psycopg.Connection[Any], taken: Lease, done: Done | None) -> None:
    if done is None:
        release(conn, taken, datetime.now(UTC))
    elif done.status in TERMINAL:
        drop(conn, taken)
    else:
        release(conn, taken, ready_after(done))
