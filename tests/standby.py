"""A real streaming hot standby of a throwaway primary, for the read-only commands.

Operators point `wfctl doctor` (and `info`, `runs list`, `repair` dry runs) at a hot-standby
replica so as not to load the primary. The replica is built the way a DBA builds one: a
private primary of the pgserver wheel's PostgreSQL (tests/pgmajors.py starts it, as the
`postgres` user when we are root), `pg_basebackup -R` of it (WAL streamed, `standby.signal`
and `primary_conninfo` written), and the copy started as a server of its own, in recovery,
streaming from the primary. `catch_up` waits until the standby has replayed everything the
primary has written so far (`pg_current_wal_lsn` / `pg_last_wal_replay_lsn`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg

from tests import pgmajors

# A bound on waiting for replay (liveness, not a speed assertion).
REPLAY_BOUND = 60.0


def pgserver_install() -> pgmajors.PgInstall | None:
    """The pgserver wheel's binaries (the tests' own server), if they ship pg_basebackup."""
    install = pgmajors.package_install("pgserver", "pgserver")
    if install is None or not (install.bindir / "pg_basebackup").is_file():
        return None
    return install


@dataclass
class Pair:
    """A primary and its streaming standby (both `pgmajors.Cluster`s)."""

    primary: pgmajors.Cluster
    standby: pgmajors.Cluster

    def catch_up(self) -> None:
        """Wait until the standby has replayed every WAL record the primary has written."""
        with psycopg.connect(self.primary.admin_dsn, autocommit=True) as conn:
            row = conn.execute("SELECT pg_current_wal_lsn()").fetchone()
        assert row is not None
        target = row[0]
        deadline = time.monotonic() + REPLAY_BOUND
        with psycopg.connect(self.standby.admin_dsn, autocommit=True) as conn:
            while True:
                done = conn.execute(
                    "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)
                ).fetchone()
                if done and done[0]:
                    return
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the standby did not replay up to {target}")
                time.sleep(0.05)


@contextlib.contextmanager
def replicated(install: pgmajors.PgInstall) -> Iterator[Pair]:
    """A fresh primary and a streaming standby of it; both stopped and deleted afterwards."""
    primary = pgmajors.start_cluster(install)
    try:
        standby = pgmajors.start_cluster(install, standby_of=primary)
        try:
            yield Pair(primary, standby)
        finally:
            standby.stop()
    finally:
        primary.stop()
