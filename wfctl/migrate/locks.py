"""Bounded lock waits and single flight, shared by every road of `wfctl migrate --online`.

A statement that needs a lock a live writer also needs runs under a short `lock_timeout`;
when it is not granted, wfctl names who holds the table, waits a jittered, growing delay and
tries again, a bounded number of times. While it waits for its lock, later queries on the
table queue behind it, so the lock timeout is the longest a live writer waits because of
wfctl. A session-level advisory lock keeps two `wfctl migrate` runs apart.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import psycopg
from psycopg import errors as pgerrors

from wfctl import sql
from wfctl.connection.db import Target
from wfctl.errors import RefusedError, WfctlError
from wfctl.migrate import state as state_mod


class Bounds(Protocol):
    """The options a road takes for its locks (--lock-timeout, the retries)."""

    @property
    def lock_timeout_ms(self) -> int: ...
    @property
    def retries(self) -> int: ...


@dataclass
class LockPolicy:
    """lock_timeout per attempt, retries after a timeout, and the backoff between them."""

    lock_timeout_ms: int
    retries: int
    statement_ms: int  # the session's usual statement_timeout (restored after each attempt)
    default_lock_ms: int  # the session's usual lock_timeout
    say: Callable[[str], None]
    backoff_base_s: float = 0.5
    backoff_cap_s: float = 8.0
    sleep: Callable[[float], None] = time.sleep
    rng: random.Random = field(default_factory=random.Random)

    @classmethod
    def for_target(
        cls,
        target: Target,
        options: Bounds,
        say: Callable[[str], None],
        *,
        sleep: Callable[[float], None] = time.sleep,
        backoff_base_s: float = 0.5,
        backoff_cap_s: float = 8.0,
        rng: random.Random | None = None,
    ) -> LockPolicy:
        """The policy of a road on `target`: the options' lock timeout and retries, and the
        target's own statement and lock timeouts to restore after each attempt."""
        t = target.timeouts
        return cls(
            lock_timeout_ms=options.lock_timeout_ms,
            retries=options.retries,
            statement_ms=t.statement_ms,
            default_lock_ms=t.lock_ms,
            say=say,
            backoff_base_s=backoff_base_s,
            backoff_cap_s=backoff_cap_s,
            sleep=sleep,
            rng=rng or random.Random(),
        )

    def limits(self, conn: psycopg.Connection[Any], statement_ms: int, lock_ms: int) -> None:
        conn.execute(
            sql.load("migrate/session_limits"),
            {"statement_timeout": f"{statement_ms}ms", "lock_timeout": f"{lock_ms}ms"},
        )

    def restore(self, conn: psycopg.Connection[Any]) -> None:
        self.limits(conn, self.statement_ms, self.default_lock_ms)

    def backoff(self, attempt: int) -> float:
        """Exponential backoff with jitter: base * 2^(attempt-1), capped, times 0.5..1.5."""
        raw = min(self.backoff_cap_s, self.backoff_base_s * (2 ** (attempt - 1)))
        return float(raw * self.rng.uniform(0.5, 1.5))

    def run(
        self,
        conn: psycopg.Connection[Any],
        relation: str,
        action: Callable[[], None],
        *,
        statement_ms: int | None = None,
    ) -> int:
        """Run `action` under the short lock_timeout; on a lock timeout retry with backoff.
        Returns the number of attempts; raises (exit 3) after the last one, naming holders."""
        attempt = 0
        while True:
            attempt += 1
            self.limits(
                conn,
                self.statement_ms if statement_ms is None else statement_ms,
                self.lock_timeout_ms,
            )
            try:
                action()
                return attempt
            except pgerrors.LockNotAvailable:
                pass
            finally:
                self.restore(conn)
            holders = state_mod.blockers(conn, relation)
            who = "; ".join(h.describe() for h in holders[:3]) or "a session that has since ended"
            if attempt > self.retries:
                raise WfctlError(
                    f"lock on {relation} not granted within {self.lock_timeout_ms} ms in "
                    f"{attempt} attempts; held by {who}",
                    hint="nothing was changed by this step; rerun later, or raise --retries / "
                    "--lock-timeout (every waiting moment queues the table's other users)",
                )
            delay = self.backoff(attempt)
            self.say(
                f"    lock on {relation} not granted within {self.lock_timeout_ms} ms "
                f"(attempt {attempt}/{self.retries + 1}); held by {who}; retrying in {delay:.2f} s"
            )
            self.sleep(delay)


def acquire(conn: psycopg.Connection[Any]) -> None:
    """Take the single-flight migration lock, or refuse (exit 2) naming its holder."""
    row = conn.execute(sql.load("migrate/try_advisory_lock")).fetchone()
    if row and row[0]:
        return
    holder = state_mod.advisory_holder(conn)
    who = holder.describe() if holder else "a session that has just ended"
    pid = holder.pid if holder else "PID"
    raise RefusedError(
        f"another migration is running: the wfctl migrate lock is held by {who}",
        hint=f"wait for it to finish; if that process is gone, SELECT pg_terminate_backend({pid})",
    )


def release(conn: psycopg.Connection[Any]) -> None:
    """Give the single-flight lock back; a broken session has already lost it."""
    try:
        if not conn.closed and not conn.broken:
            conn.execute(sql.load("migrate/advisory_unlock"))
    except psycopg.Error:
        pass  # the lock is session-level: closing the session releases it
