"""The one way operator actions write to wfctl's audit log (`wfctl.repair_log`).

Every write goes through `record`, inside the transaction that makes the change, so the
change and its record commit or vanish together (as repairs do). Keeping it one function
also keeps one place to change if the audit schema learns to create itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from wfctl import __version__, sql
from wfctl.errors import RefusedError
from wfctl.world.model import World


def require(world: World) -> None:
    """Refuse an apply on a world without wfctl's schema: it would go unrecorded."""
    if not world.has_wfctl:
        raise RefusedError(
            "this world has no `wfctl` schema for the audit log",
            hint="run `wfctl bootstrap` once: it adopts the world and adds only wfctl's schema",
        )


def record(
    conn: psycopg.Connection[Any],
    *,
    action: str,
    run_id: str,
    reason: str,
    details: dict[str, Any],
    event_ids: Sequence[str] = (),
    entity_id: str | None = None,
) -> int:
    """One audit row (`action` goes in the `code` column: `gc`, `cancel`, `wake`, ...)."""
    row = conn.execute(
        sql.load("repair/audit"),
        {
            "version": __version__,
            "reason": reason,
            "code": action,
            "run_id": run_id,
            "entity_id": entity_id,
            "event_ids": list(event_ids),
            "details": Jsonb(details),
        },
    ).fetchone()
    assert row is not None
    return int(row[0])
