"""`--run ID` of a run the world does not hold: a clear error, never a healthy verdict.

A check scoped to a run that does not exist finds nothing, which doctor would report as OK
(exit 0) and repair as "nothing to repair": true of no run at all, and misread by a script
that mistyped the id or whose run was already collected.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from wfctl import sql
from wfctl.errors import ExitStatus, WfctlError


def require_runs(conn: psycopg.Connection[Any], run_ids: Sequence[str]) -> None:
    """Raise (exit 3) naming the given run ids that have neither a run row nor an event."""
    wanted = list(dict.fromkeys(run_ids))
    found = {row[0] for row in conn.execute(sql.load("doctor/runs_exist"), {"run_ids": wanted})}
    missing = [r for r in wanted if r not in found]
    if missing:
        raise WfctlError(
            f"no such run: {', '.join(missing)} (no run row and no event in this world)",
            hint="check the id with `wfctl runs list`; a finished run may have been collected",
            status=ExitStatus.UNKNOWN,
        )
