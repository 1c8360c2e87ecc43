"""The typer application and its global options, shared by every command module.

Global options come before the command (`wfctl --dsn URL doctor`), as with git and psql;
`--format/-f/-o` and `--dsn` are also accepted after any command (`wfctl doctor -o json`):
`wfctl.cli.shared.build()` adds them to every registered command, so a new command gets them
by being registered here (docs/architecture.md, "Adding a command"). Each command reads the
invocation's `State` from the click context.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer

from wfctl import __version__
from wfctl.cli.output import Format, Output
from wfctl.cli.registry import LazyGroup

if TYPE_CHECKING:
    from wfctl.connection.db import Target

HELP = """\
wfctl keeps self-hosted @workflow/world-postgres worlds healthy.

It finds runs wedged by half-written state (an entity row without its event), repairs them with guarded transactions, swaps the event key online, and runs durable workflows that write every row and its event in one transaction.

[bold]Connection[/bold] (first wins): --dsn, WFCTL_DATABASE_URL, WORKFLOW_POSTGRES_URL, DATABASE_URL, libpq PG* variables or ~/.pg_service.conf; with none of them, an embedded PostgreSQL in your data directory.

[bold]Exit codes[/bold]: 0 ok, 1 warnings, 2 critical or refused, 3 unknown/unusable, 64 usage error, 130 interrupted.

[bold]Examples[/bold]
  wfctl info                                   what is this database?
  wfctl --dsn postgresql://ops@db/app info     the same, for another database
  wfctl bootstrap --era slot                   create a slot-era world
  wfctl --format json info | jq .era           machine-readable output
"""

# Shared with wfctl.cli.shared, which accepts the same options after every command.
FORMAT_FLAGS = ("--format", "-f", "-o")
FORMAT_HELP = (
    "text, plain, markdown, json, jsonl, prometheus or nagios (each command accepts a subset)."
)
DSN_HELP = "PostgreSQL connection string (URI or key=value). Overrides the environment."

app = typer.Typer(
    name="wfctl",
    help=HELP,
    rich_markup_mode="rich",
    invoke_without_command=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    cls=LazyGroup,  # imports a command's module only when that command is used
)


@dataclass
class State:
    """What every command needs: where to connect, with which limits, and how to print."""

    target: Target
    output: Output
    # `--lock-timeout` was given (before or after the command), not left at its default:
    # `migrate` then uses it for its exclusive statements instead of their shorter default
    lock_timeout_given: bool = False
    # The @workflow/world-postgres version the operator pinned (`--package` of info, doctor,
    # repair; else WFCTL_PACKAGE_VERSION / WFCTL_PACKAGE): how the world's release is known
    # where its journal leaves several candidates.
    pinned: str | None = None


# Formats read by programs (cron, Nagios, Prometheus, jq): never answered from the embedded
# server unless its DSN is given explicitly.
MACHINE_FORMATS = frozenset({Format.JSON, Format.JSONL, Format.PROMETHEUS, Format.NAGIOS})


PinOption = Annotated[
    str | None,
    typer.Option(
        "--package",
        metavar="DIR|VERSION",
        help="The app's installed @workflow/world-postgres folder (its package.json names the "
        "version) or a version: pins the release where the world's journal leaves several "
        "(default: WFCTL_PACKAGE_VERSION, WFCTL_PACKAGE).",
        show_default=False,
    ),
]


def pin(st: State, package: str | None) -> None:
    """Resolve `--package` (else the environment) into the pinned version: bad input exits
    64 before anything connects."""
    from wfctl.world import releases

    st.pinned = releases.pinned_version(package)


def state(ctx: typer.Context) -> State:
    """The State the global callback stored on the root context (options given after the
    command included: their callbacks ran before the command)."""
    obj = ctx.find_root().obj
    assert isinstance(obj, State), "global options were not parsed"
    if obj.output.format in MACHINE_FORMATS and obj.target.dsn.is_embedded:
        why = f"--format {obj.output.format.value} never uses the embedded server implicitly"
        obj.target = dataclasses.replace(obj.target, embedded_refused=why)
    return obj


def _version(value: bool) -> None:
    if value:
        typer.echo(f"wfctl {__version__}")
        raise typer.Exit(0)


@app.callback()
def global_options(
    ctx: typer.Context,
    dsn: Annotated[
        str | None,
        typer.Option(
            "--dsn",
            metavar="DSN",
            help=DSN_HELP,
            show_default=False,
        ),
    ] = None,
    output_format: Annotated[
        Format,
        typer.Option(*FORMAT_FLAGS, metavar="FORMAT", help=FORMAT_HELP),
    ] = Format.TEXT,
    no_color: Annotated[
        bool, typer.Option("--no-color", help="No colour (NO_COLOR is honoured too).")
    ] = False,
    verbose: Annotated[
        int,
        typer.Option(
            "--verbose",
            "-v",
            count=True,
            show_default=False,
            help="More detail; tracebacks on errors. A flag: repeat it (-vv), give no number.",
        ),
    ] = 0,
    statement_timeout: Annotated[
        int,
        typer.Option(
            "--statement-timeout", metavar="MS", help="Per-statement limit in ms; 0 disables."
        ),
    ] = 30_000,
    lock_timeout: Annotated[
        int, typer.Option("--lock-timeout", metavar="MS", help="Lock wait limit in ms; 0 disables.")
    ] = 5_000,
    connect_timeout: Annotated[
        int, typer.Option("--connect-timeout", metavar="S", help="Connection attempt limit in s.")
    ] = 10,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Parse the global options once; commands read them through `state(ctx)`."""
    if ctx.invoked_subcommand is None and not ctx.resilient_parsing:
        typer.echo(ctx.get_help())
        raise typer.Exit(0)
    # imported here, not above: `--version`, `--help` and completion never connect
    from wfctl.connection.db import Target, Timeouts
    from wfctl.connection.dsn import resolve_dsn

    output = Output(format=output_format, no_color=no_color, verbose=verbose)
    timeouts = Timeouts(
        statement_ms=max(0, statement_timeout),
        lock_ms=max(0, lock_timeout),
        connect_s=max(1, connect_timeout),
    )
    source = ctx.get_parameter_source("lock_timeout")
    given = getattr(source, "name", "DEFAULT") not in ("DEFAULT", "DEFAULT_MAP")
    ctx.obj = State(Target(resolve_dsn(dsn), timeouts), output, lock_timeout_given=given)
