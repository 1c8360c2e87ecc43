"""The one way operator actions write to wfctl's audit log (`wfctl.repair_log`).

Every write goes through `record`, inside the transaction that makes the change, so the
change and its record commit or vanish together (as repairs do); `require` runs before an
apply and creates the audit schema where it is missing (bootstrap.ensure_audit_schema).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from wfctl import __version__, sql


def require(conn: psycopg.Connection[Any]) -> None:
    """Make sure the audit log exists before an apply (creating wfctl's own schema when it is
    missing, as `repair --apply` does), or refuse: an action must never go unrecorded. Checks
    the table itself, not the schema (`doctor --incremental` may have made the schema alone).
    Call it outside any transaction: the schema is created in its own committed one."""
    from wfctl.world.bootstrap import ensure_audit_schema  # alembic: only on this path

    ensure_audit_schema(conn)


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
