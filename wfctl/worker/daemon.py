"""The worker process: N slots that lease runs and drive them, a heartbeat that renews the
leases and runs single-flight recovery, and a LISTEN connection that wakes idle slots.

Ownership: a slot drives a run only while it holds the run's queue lease; the executor also
holds the run's session advisory lock (`runtime/run_lock`), so even a worker that stalled past
its lease cannot drive a run concurrently with the worker that recovered it: the second
driver gets `busy` until the first one's connection (and its lock) is gone.

Shutdown (`request_stop`, on SIGTERM/SIGINT): slots stop taking runs; a slot in the middle of
a drive finishes the step it runs, commits it, starts nothing new and hands the run back
(ready at once for another worker); then every lease left is handed back and the worker's
row removed. SIGKILL leaves leases that recovery clears once they expire.
"""

from __future__ import annotations

import gc
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import psycopg

from wfctl.runtime import children, tracing
from wfctl.runtime.executor import Executor
from wfctl.runtime.registry import Workflows
from wfctl.runtime.store import TERMINAL, Store
from wfctl.worker import queue as q
from wfctl.worker.scheduler import Scheduler, scheduled
from wfctl.world import ids

if TYPE_CHECKING:  # prometheus-client is imported only by a worker that serves metrics
    from wfctl.worker.metrics import WorkerMetrics

Connect = Callable[[], psycopg.Connection[Any]]


@dataclass
class WorkerConfig:
    queue: str = "default"
    concurrency: int = 4
    lease: float = 15.0  # seconds; heartbeats every lease/3
    poll: float = 1.0  # idle fallback when no NOTIFY arrives
    limits: dict[str, int] = field(default_factory=dict)  # workflow name -> max leased runs
    busy_retry: float = 1.0  # a run another process drives: look again after this long


class Worker:
    def __init__(
        self,
        registry: Workflows,
        connect: Connect,
        config: WorkerConfig | None = None,
        *,
        log: Callable[[str], None] | None = None,
        debug: Callable[[str], None] | None = None,
        metrics: WorkerMetrics | None = None,
    ) -> None:
        self.registry = registry
        self.metrics = metrics
        self.connect = connect
        self.config = config or WorkerConfig()
        self.log = log or (lambda _m: None)
        self.debug = debug or (lambda _m: None)
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.worker_id = f"{self.host}:{self.pid}:{ids.prefixed('wkr')[4:]}"
        # Claims match a run's stored workflow name against these: every workflow's name and
        # the unambiguous names earlier versions gave it (registry: "Names").
        self.names = registry.served_names()
        self._stopping = threading.Event()
        self._done = threading.Event()
        self._cond = threading.Condition()
        self._gen = 0
        self._looked = 0.0  # time.monotonic() of the last claim by any slot (see _idle)
        self._held: dict[str, q.Claim] = {}
        self._held_lock = threading.Lock()
        self.drives = 0
        self.scheduler: Scheduler | None = None

    # -- control ------------------------------------------------------------------------

    def request_stop(self) -> None:
        self._stopping.set()
        self._wake(everyone=True)

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def held(self) -> list[str]:
        with self._held_lock:
            return sorted(self._held)

    def _wake(self, everyone: bool = False) -> None:
        """One NOTIFY = one run made ready: wake one idle slot, not a herd of claimers (a
        busy slot claims again as soon as its drive ends). Stopping wakes everyone."""
        with self._cond:
            self._gen += 1
            if everyone:
                self._cond.notify_all()
            else:
                self._cond.notify()

    # -- main -----------------------------------------------------------------------------

    def _register(self, conn: psycopg.Connection[Any]) -> None:
        """Announce (or re-announce after a lost row) this worker and its limits."""
        cfg = self.config
        q.register(
            conn,
            worker=self.worker_id,
            host=self.host,
            pid=self.pid,
            queue=cfg.queue,
            concurrency=cfg.concurrency,
            lease=cfg.lease,
            workflows=self.names,
        )

    def run(self) -> None:
        """Register, serve until `request_stop`, hand back what is held, unregister."""
        cfg = self.config
        with self.connect() as conn:
            self._register(conn)
        tracing.enabled()  # imports OpenTelemetry (if installed) now, not in the first step
        # Everything imported so far (the workflows' modules, psycopg, wfctl: ~90k objects)
        # lives as long as the process: keep it out of the cyclic GC, whose full passes over
        # it took 35-95 ms, a pause that lands on whichever wake-up or step runs then.
        gc.collect()
        gc.freeze()
        self.log(
            f"wfctl worker: {self.worker_id} serving queue {cfg.queue!r} "
            f"({len(self.registry.workflows)} workflow(s), concurrency {cfg.concurrency}, "
            f"lease {cfg.lease:g}s)"
        )
        # The names runs must carry to be taken here: when a run waits in `worker status`
        # as "no live worker serves", compare its name with these lines.
        for wdef in sorted(self.registry.workflows.values(), key=lambda w: w.name):
            also = f" (also {', '.join(wdef.aliases)})" if wdef.aliases else ""
            self.log(f"wfctl worker: serves {wdef.name}{also}")
        side = [
            threading.Thread(target=self._listen, name="wfctl-listen", daemon=True),
            threading.Thread(target=self._heartbeat, name="wfctl-heartbeat", daemon=True),
        ]
        slots = [
            threading.Thread(target=self._slot, args=(i,), name=f"wfctl-slot-{i}", daemon=True)
            for i in range(cfg.concurrency)
        ]
        if scheduled(self.registry):  # scheduled workflows: one run per tick (scheduler.py)
            self.scheduler = Scheduler(
                self.registry, self.connect, cfg.queue, self._stopping, log=self.log
            )
            side.append(
                threading.Thread(target=self.scheduler.run, name="wfctl-schedule", daemon=True)
            )
        for t in side + slots:
            t.start()
        try:
            while not self._stopping.wait(0.2):
                pass
        finally:
            self._stopping.set()
            self._wake(everyone=True)
            for t in slots:
                t.join()
            self._done.set()
            for t in side:
                t.join(timeout=5)
            with self.connect() as conn:
                q.unregister(conn, worker=self.worker_id)
            self.log(f"wfctl worker: {self.worker_id} stopped after {self.drives} drive(s)")

    # -- slots ----------------------------------------------------------------------------

    def _slot(self, index: int) -> None:
        while not self.stopping:
            try:
                with self.connect() as conn:
                    self._serve(conn)
            except psycopg.Error as exc:
                if self.stopping:
                    return
                self.log(f"wfctl worker: slot {index}: {_one_line(exc)}; reconnecting in 1s")
                time.sleep(1.0)

    def _serve(self, conn: psycopg.Connection[Any]) -> None:
        cfg = self.config
        store = Store(conn)
        executor = Executor(
            self.registry,
            store,
            log=self.debug,
            stop=self._stopping.is_set,
            on_step=self.metrics.step if self.metrics else None,
        )
        try:
            while not self.stopping:
                with self._cond:
                    gen = self._gen
                polled = q.claim(
                    conn,
                    worker=self.worker_id,
                    queue=cfg.queue,
                    names=self.names,
                    lease=cfg.lease,
                    limits=cfg.limits,
                )
                self._looked = time.monotonic()
                delay = polled.next_ready
                if polled.claim is not None:
                    if delay is not None and delay <= 0:
                        self._wake()  # another run is ready: pass it on to an idle slot
                    self._drive(conn, executor, polled.claim)
                    continue
                self._idle(gen, delay)
        finally:
            executor.close()

    def _idle(self, gen: int, delay: float | None) -> None:
        """Wait for a wake-up (NOTIFY, stop, another slot passing a run on), for the next
        run's ready time `delay`, or for the poll fallback, whichever comes first.

        The fallback (a run made ready with no NOTIFY seen: a listener reconnecting, a
        timer learned by no idle slot) needs one look per poll interval per worker, not one
        per idle slot: a slot whose plain poll timer fires while another slot has looked
        more recently than that goes back to waiting without a query. A slot waiting for a
        known ready time always looks when it is due."""
        cfg = self.config
        timed = delay is not None and delay < cfg.poll
        pause = max(0.0, delay) if delay is not None and timed else cfg.poll
        while pause > 0:
            with self._cond:
                if self._gen != gen or self.stopping:
                    return
                self._cond.wait(pause)
                if self._gen != gen or self.stopping:
                    return
            if timed:
                return
            # Due when the worker's last look is one poll interval old.
            pause = cfg.poll - (time.monotonic() - self._looked)

    def _drive(self, conn: psycopg.Connection[Any], executor: Executor, claim: q.Claim) -> None:
        with self._held_lock:
            self._held[claim.run_id] = claim
        self.drives += 1
        if self.metrics:
            self.metrics.replays.inc()
        ready_at: datetime | None
        try:
            try:
                done = executor.drive(claim.run_id)
            except psycopg.Error:
                # This slot's session is lost or unusable; the slot reconnects. Hand the run
                # back now from a fresh session rather than let it wait out its lease.
                self._hand_back(claim)
                raise
            except Exception as exc:
                # A bug or an unusable run: back off (grows with the claims) and look again.
                backoff = min(60.0, 0.1 * 2 ** min(claim.claims, 10))
                self.log(
                    f"wfctl worker: run {claim.run_id}: {_one_line(exc)}; retry in {backoff:g}s"
                )
                ready_at = datetime.now(UTC) + timedelta(seconds=backoff)
            else:
                self.debug(f"wfctl worker: run {claim.run_id}: {done.status}")
                if done.status in TERMINAL:
                    q.drop_ended(conn, run_id=claim.run_id, worker=self.worker_id)
                    return
                if done.status == "busy":
                    ready_at = datetime.now(UTC) + timedelta(seconds=self.config.busy_retry)
                else:
                    ready_at = done.next_due
            self._release(conn, claim, ready_at)
        finally:
            with self._held_lock:
                self._held.pop(claim.run_id, None)

    def _release(
        self, conn: psycopg.Connection[Any], claim: q.Claim, ready_at: datetime | None
    ) -> None:
        q.release(
            conn,
            run_id=claim.run_id,
            worker=self.worker_id,
            seen=claim.wake_seq,
            ready_at=ready_at,
        )

    def _hand_back(self, claim: q.Claim) -> None:
        """Best effort: make a run whose driving failed on a database error ready at once."""
        try:
            with self.connect() as conn:
                self._release(conn, claim, datetime.now(UTC))
        except psycopg.Error as exc:  # the server is gone too: the lease expires instead
            self.debug(f"wfctl worker: run {claim.run_id}: not handed back: {_one_line(exc)}")

    # -- side threads ---------------------------------------------------------------------

    def _listen(self) -> None:
        while not self._done.is_set():
            try:
                with self.connect() as conn:
                    conn.execute(f"LISTEN {q.CHANNEL}")
                    while not self._done.is_set():
                        for note in conn.notifies(timeout=0.5):
                            if note.payload == self.config.queue:
                                self._wake()
            except psycopg.Error as exc:
                if self._done.is_set():
                    return
                self.log(f"wfctl worker: listener: {_one_line(exc)}; polling until it is back")
                self._done.wait(1.0)

    def _heartbeat(self) -> None:
        cfg = self.config
        interval = cfg.lease / 3
        conn: psycopg.Connection[Any] | None = None
        store: Store | None = None
        while not self._done.is_set():
            try:
                if conn is None or conn.closed:
                    conn = self.connect()
                    store = None
                held = self.held()
                renewed, registered = q.heartbeat(
                    conn, worker=self.worker_id, lease=cfg.lease, runs=held
                )
                if not registered:
                    self._register(conn)
                lost = set(held) - renewed
                if lost:
                    # (or released by its slot since `held`): the run lock still guards it
                    self.debug(f"wfctl worker: not renewed: {', '.join(sorted(lost))}")
                recovered = q.recover(conn)
                if recovered and recovered[0] and self.metrics:
                    self.metrics.lease_expiries.inc(recovered[0])
                if recovered and (recovered[0] or recovered[1]):
                    self.log(
                        f"wfctl worker: recovery: {recovered[0]} run(s) past their lease "
                        f"made ready, {recovered[1]} dead worker(s) removed"
                    )
                if recovered is not None:  # this worker won the round: child ends lost
                    store = store or Store(conn)
                    delivered = children.reconcile(store)
                    if delivered:
                        self.log(f"wfctl worker: delivered {delivered} child run end(s)")
            except psycopg.Error as exc:
                self.log(f"wfctl worker: heartbeat: {_one_line(exc)}")
                if conn is not None:
                    conn.close()
                conn = None
            self._done.wait(interval)
        if conn is not None:
            conn.close()


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"
