"""Tab completion of values: run ids and workflow names from the world, check codes, statuses.

A Tab press must answer at once and never hurt: one bounded query (LIMIT, 1 s statement and
lock timeouts, 2 s to connect) in a READ ONLY transaction on the DSN the command line or the
environment names, never the embedded default (a Tab press starts no server), and any error
at all completes nothing, silently. psycopg is imported only when a value is completed.
"""

from __future__ import annotations

import os
from typing import Any

LIMIT = 50  # candidates a shell can usefully show
STATUSES = ("pending", "running", "completed", "failed", "cancelled")


def _query(ctx: Any, name: str, incomplete: str) -> list[str]:
    """Rows of `sql/complete/<name>.sql` for `incomplete`; [] on any error or no DSN."""
    try:
        from wfctl import sql
        from wfctl.connection.db import LIMITS, Target, Timeouts, connect, read_only
        from wfctl.connection.dsn import resolve_dsn

        dsn = resolve_dsn(ctx.find_root().params.get("dsn"))
        if dsn.is_embedded:
            return []
        target = Target(dsn, Timeouts(1000, 1000, 2, given=LIMITS))
        with connect(target, autocommit=True) as conn, read_only(conn):
            rows = conn.execute(
                sql.load(f"complete/{name}"), {"prefix": incomplete, "limit": LIMIT}
            ).fetchall()
        return [str(r[0]) for r in rows]
    except BaseException:  # a Tab press says nothing, whatever went wrong
        return []


def run_ids(ctx: Any, incomplete: str) -> list[str]:
    """Run ids starting with what is typed, newest first."""
    return _query(ctx, "run_ids", incomplete)


def workflow_names(ctx: Any, incomplete: str) -> list[str]:
    """Workflow names as `runs list` shows them (`shop.flows.checkout`)."""
    return _query(ctx, "workflow_names", incomplete)


def codes(ctx: Any, incomplete: str) -> list[str]:
    """Check codes (`WF101`...); after a comma (`--only WF101,WF1`), the next one."""
    try:
        from wfctl.doctor.registry import BY_CODE

        done, _, last = incomplete.rpartition(",")
        head = f"{done}," if done else ""
        return [head + code for code in BY_CODE if code.startswith(last.upper())]
    except BaseException:
        return []


def statuses(ctx: Any, incomplete: str) -> list[str]:
    return [s for s in STATUSES if s.startswith(incomplete)]


def completing() -> bool:
    """Whether this process answers a Tab press (the shell scripts set the variable)."""
    return bool(os.environ.get("_WFCTL_COMPLETE"))
