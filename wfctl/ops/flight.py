"""Single flight for an operator action: one runner at a time per database.

A session-level advisory lock (released when the session ends, also when wfctl is killed),
taken without waiting: a second runner is refused with the holder's pid named, so cron
overlap or two operators in one incident never run the same sweep twice at once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from wfctl import sql
from wfctl.errors import RefusedError

# Second key of the advisory lock pair ('wfct', <action>), each an int4 of 4 ASCII bytes.
GC = int.from_bytes(b"gc  ", "big")
BULK = int.from_bytes(b"bulk", "big")


@contextmanager
def single_flight(conn: psycopg.Connection[Any], action_key: int, what: str) -> Iterator[None]:
    """Hold the action's lock for the block, or raise RefusedError naming the holder."""
    params = {"action_key": action_key}
    row = conn.execute(sql.load("ops/try_advisory_lock"), params).fetchone()
    if not (row and row[0]):
        holder = conn.execute(sql.load("ops/advisory_holder"), params).fetchone()
        who = f"pid {holder[0]} ({holder[1] or 'no application_name'})" if holder else "a session"
        raise RefusedError(
            f"another {what} is running: {who} holds its lock",
            hint="wait for it to finish, or end that session (pg_terminate_backend) if it is stuck",
        )
    try:
        yield
    finally:
        # A session busy or broken by a signal ends with the command: the lock goes with it.
        if not conn.closed:
            with contextlib.suppress(psycopg.Error):
                conn.execute(sql.load("ops/advisory_unlock"), params)
