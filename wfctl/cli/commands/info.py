"""`wfctl info`: where wfctl connects and what it finds there. Read-only."""

from __future__ import annotations

from typing import Any

import psycopg
import typer

from wfctl.cli.app import app, state
from wfctl.cli.output import Format
from wfctl.connection import embedded
from wfctl.connection.db import connect, query_error, read_only
from wfctl.world import model


@app.command()
def info(ctx: typer.Context) -> None:
    """Show the resolved connection, the server, and what kind of world it holds.

    Read-only: one READ ONLY transaction over the catalog and drizzle's bookkeeping table.
    Exit 0 for a world wfctl understands, 3 for no world or an unknown shape.

    [bold]Examples[/bold]
      wfctl info
      WORKFLOW_POSTGRES_URL=postgresql://ops@db/app wfctl info
      wfctl --format json info
    """
    st = state(ctx)
    fmt = st.output.require(Format.TEXT, Format.PLAIN, Format.JSON)
    with connect(st.target) as conn:
        try:
            with read_only(conn):
                world = model.inspect(conn)
        except psycopg.Error as exc:
            raise query_error(exc, st.target, "inspecting the world") from None
    report: dict[str, Any] = {
        "dsn_source": st.target.dsn.source,
        "dsn": st.target.dsn.masked,
        "embedded": embedded.server_state().as_dict() if st.target.dsn.is_embedded else None,
        **world.as_dict(),
    }
    if fmt is Format.JSON:
        st.output.json(report)
    else:
        _print_text(st.output.data, report, world)
    world.require_known()


def _print_text(write: Any, report: dict[str, Any], world: model.World) -> None:
    lines = [
        f"connection:   {report['dsn']}  (from {report['dsn_source']})",
        f"server:       PostgreSQL {world.server_version}, database {world.database!r}, "
        f"user {world.user!r}",
        f"world:        {world.kind}",
    ]
    if report["embedded"]:
        lines[1:1] = [
            f"embedded:     {report['embedded']['dsn']}  (pid {report['embedded']['pid']};"
            " it keeps running after wfctl exits: `wfctl embedded stop` stops it)"
        ]
    if world.present:
        queue = "installed" if world.has_graphile else "not installed"
        lines += [
            f"event key:    ({world.events_key})" if world.events_key else "event key:    none",
            f"queue:        graphile_worker {queue}",
            f"wfctl schema: {'present' if world.has_wfctl else 'absent'}",
            f"migrations:   {len(world.migrations)} recorded"
            + (f", latest {world.migrations[-1]}" if world.migrations else ""),
        ]
        if world.unknown_migrations:
            lines.append(f"unknown:      {', '.join(world.unknown_migrations)}")
        if world.drift:
            lines.append(f"catalog drift ({len(world.drift)}):")
            lines += [f"  - {d}" for d in world.drift]
        else:
            lines.append("catalog:      matches the expected catalog for this era")
    write("\n".join(lines))
