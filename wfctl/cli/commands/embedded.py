"""`wfctl embedded status|stop`: the zero-configuration server wfctl starts and leaves running."""

from __future__ import annotations

import typer

from wfctl.cli.app import State, app, state
from wfctl.cli.output import Format
from wfctl.connection import embedded as server

embedded_app = typer.Typer(
    help="The embedded PostgreSQL used when no database is configured.\n\n"
    "With no --dsn and no WFCTL_DATABASE_URL, WORKFLOW_POSTGRES_URL, DATABASE_URL or libpq"
    " PG* variables, wfctl starts a PostgreSQL of its own in the user data directory"
    " ($WFCTL_EMBEDDED_DIR overrides) and leaves it running after it exits, so the next"
    " command connects at once. These commands show it and stop it; its data stays.\n\n"
    "[bold]Examples[/bold]\n"
    "  wfctl embedded status\n"
    "  wfctl embedded stop\n"
    '  psql "$(wfctl embedded status -o json | jq -r .dsn)"',
    no_args_is_help=True,
    rich_markup_mode="rich",
)
app.add_typer(embedded_app, name="embedded")


def _show(st: State, status: server.ServerState, **extra: bool) -> None:
    if st.output.format is Format.JSON:
        st.output.json({**status.as_dict(), **extra})
    elif status.running:
        st.output.data(
            f"embedded PostgreSQL: running, pid {status.pid}, data {status.data_dir}\n"
            f"dsn: {status.dsn}"
        )
    else:
        verb = "stopped" if extra.get("stopped") else "not running"
        st.output.data(f"embedded PostgreSQL: {verb} (data {status.data_dir})")


@embedded_app.command("status")
def status_command(ctx: typer.Context) -> None:
    """Show whether the embedded server runs, its pid, data directory and DSN (for psql).

    Reads its pid file only: never starts it. Exit 0 running, 1 not running.

    [bold]Examples[/bold]
      wfctl embedded status
      wfctl embedded status -o json
    """
    st = state(ctx)
    st.output.require(Format.TEXT, Format.PLAIN, Format.JSON)
    status = server.server_state()
    _show(st, status)
    if not status.running:
        raise typer.Exit(1)


@embedded_app.command("stop")
def stop_command(ctx: typer.Context) -> None:
    """Stop the embedded server (a fast shutdown: open sessions end). Its data stays, and the
    next wfctl command without a configured database starts it again. Exit 0 when it is
    stopped (or was not running).

    [bold]Examples[/bold]
      wfctl embedded stop
    """
    st = state(ctx)
    st.output.require(Format.TEXT, Format.PLAIN, Format.JSON)
    was_running, status = server.stop()
    _show(st, status, stopped=was_running)
