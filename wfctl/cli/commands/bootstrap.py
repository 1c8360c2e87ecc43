"""`wfctl bootstrap`: create a world, or adopt an identical one. Never alters an existing world."""

from __future__ import annotations

import enum
from typing import Annotated

import psycopg
import typer

from wfctl.cli.app import app, state
from wfctl.cli.output import Format
from wfctl.connection.db import connect, query_error, read_only
from wfctl.world import model


class Era(enum.StrEnum):
    BETA29 = "beta29"
    SLOT = "slot"


@app.command()
def bootstrap(
    ctx: typer.Context,
    era: Annotated[
        Era, typer.Option("--era", help="beta29: wevt_ ids, key (id). slot: evnt_ slots.")
    ] = Era.BETA29,
) -> None:
    """Create the world's schemas and tables exactly as the real package would.

    Also creates wfctl's own schema `wfctl` (audit log), and records the package's drizzle
    migrations so that its own bootstrap afterwards changes nothing. On a database that
    already holds an identical world it only records wfctl's revision; on a different one
    it refuses (exit 2) and says how they differ. The graphile_worker queue schema is not
    created: the package's `world.start()` installs it.

    [bold]Examples[/bold]
      wfctl bootstrap
      wfctl --dsn postgresql://ops@db/app bootstrap --era slot
    """
    st = state(ctx)
    fmt = st.output.require(Format.TEXT, Format.PLAIN, Format.JSON)
    with connect(st.target, autocommit=True) as conn:
        try:
            with read_only(conn):
                world = model.inspect(conn, with_drift=False)
                world.require_writable("bootstrap a world", world=False)
            # imported here: alembic/SQLAlchemy cost ~0.5 s that other commands never need
            from wfctl.world.bootstrap import bootstrap as run_bootstrap

            result = run_bootstrap(conn, era.value)
        except psycopg.Error as exc:
            raise query_error(exc, st.target, "bootstrapping") from None
    if fmt is Format.JSON:
        st.output.json({"era": result.era, "action": result.action, "revision": result.revision})
        return
    verb = {
        "created": "created a new",
        "adopted": "adopted the existing",
        "unchanged": "nothing to do: already a",
    }[result.action]
    st.output.data(f"{verb} {result.era} world (wfctl revision {result.revision})")
