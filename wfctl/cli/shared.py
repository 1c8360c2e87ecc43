"""Options every command takes after its name, and help that reads well at any width.

Operators type `wfctl doctor --format json` and `wfctl runs list -o json` (kubectl, temporal)
as often as the git/psql form `wfctl --format json doctor`. Rather than each command declaring
`--format`/`--dsn` again (and a new command forgetting), `build()` turns the typer app into its
click command tree and adds the same options (those two, `-v/--verbose` and the session limits
`--statement-timeout`, `--lock-timeout`, `--connect-timeout`) to every command and command
group, with the global meaning: they override the global options of the same invocation. A
new command gets them by being registered on `wfctl.cli.app.app` (or a sub-typer of it).
`NO_SHARED_OPTIONS` lists the commands that never connect or print data (`completion`).

The same pass fixes the help of every command, present and future: boolean and counting flags
show no value placeholder (typer prints `--no-color <bool>`, which reads as "takes a value"),
value options show an upper-case placeholder (`--limit N`), and prose docstrings written with
hard line breaks are re-flowed into paragraphs so rich wraps them cleanly at any width
(indented lines such as examples keep their breaks).
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import inspect
from typing import Annotated, Any

import typer
import typer.main

from wfctl.cli.app import DSN_HELP, FORMAT_FLAGS, FORMAT_HELP, State, app
from wfctl.cli.coerce import fast
from wfctl.cli.output import Format
from wfctl.cli.registry import COMMANDS, LazyGroup

PANEL = "Global options (also accepted before the command)"
NO_SHARED_OPTIONS = frozenset({"wfctl completion"})

# typer's type labels -> the placeholder an operator expects (psql/pgcli/kubectl style)
_PLACEHOLDERS = {
    "str": "TEXT",
    "int": "N",
    "float": "NUMBER",
    "Path": "PATH",
    "list[str]": "TEXT",
    "list[int]": "N",
}


def _root_state(ctx: typer.Context) -> State | None:
    """The invocation's State, or None while completing (no global callback has run)."""
    if ctx.resilient_parsing:
        return None
    obj = ctx.find_root().obj
    return obj if isinstance(obj, State) else None


def _late_format(ctx: typer.Context, value: Format | None) -> None:
    """`COMMAND --format F`: the same as `wfctl --format F COMMAND`, and wins over it."""
    st = _root_state(ctx)
    if st is not None and value is not None:
        st.output.format = value


def _late_dsn(ctx: typer.Context, value: str | None) -> None:
    """`COMMAND --dsn URL`: the same as `wfctl --dsn URL COMMAND`, and wins over it."""
    st = _root_state(ctx)
    if st is not None and value:
        from wfctl.connection.db import Target
        from wfctl.connection.dsn import resolve_dsn

        st.target = Target(resolve_dsn(value), st.target.timeouts)


def _late_verbose(ctx: typer.Context, value: int | None) -> None:
    """`COMMAND -v` (`wfctl worker mod -v`): the same as `wfctl -v COMMAND`; both count."""
    st = _root_state(ctx)
    if st is not None and value:
        st.output.verbose += value


def _late_limit(field: str) -> Any:
    """`COMMAND --lock-timeout MS` (and the other limits): as before the command, and wins."""

    def late(ctx: typer.Context, value: int | None) -> None:
        st = _root_state(ctx)
        if st is not None and value is not None:
            from wfctl.connection.db import Target

            given = st.target.timeouts.given | {field}
            limits = dataclasses.replace(st.target.timeouts, **{field: value}, given=given)
            st.target = Target(st.target.dsn, limits)
            if field == "lock_ms":
                st.lock_timeout_given = True

    return late


_carrier = typer.Typer(add_completion=False)


def _late_option(*flags: str, metavar: str, help: str, callback: Any) -> Any:
    """An option that only updates the State (no value reaches the command's function)."""
    return typer.Option(
        *flags,
        metavar=metavar,
        help=help,
        callback=callback,
        expose_value=False,
        show_default=False,
        rich_help_panel=PANEL,
    )


def _limit(flag: str, metavar: str, what: str, field: str) -> Any:
    """A session limit's option (`connection.db.Timeouts.<field>`)."""
    disables = "" if field == "connect_s" else "; 0 disables"
    return typer.Option(
        flag,
        metavar=metavar,
        help=f"{what}{disables}.",
        callback=_late_limit(field),
        expose_value=False,
        show_default=False,
        rich_help_panel=PANEL,
        min=1 if field == "connect_s" else 0,
    )


@_carrier.command()
def _shared_options(
    output_format: Annotated[
        Format | None,
        _late_option(*FORMAT_FLAGS, metavar="FORMAT", help=FORMAT_HELP, callback=_late_format),
    ] = None,
    dsn: Annotated[
        str | None, _late_option("--dsn", metavar="DSN", help=DSN_HELP, callback=_late_dsn)
    ] = None,
    statement_timeout: Annotated[
        int | None, _limit("--statement-timeout", "MS", "Per-statement limit in ms", "statement_ms")
    ] = None,
    lock_timeout: Annotated[
        int | None, _limit("--lock-timeout", "MS", "Lock wait limit in ms", "lock_ms")
    ] = None,
    connect_timeout: Annotated[
        int | None, _limit("--connect-timeout", "S", "Connection attempt limit in s", "connect_s")
    ] = None,
    verbose: Annotated[
        int,
        typer.Option(
            "--verbose",
            "-v",
            count=True,
            help="More detail; tracebacks on errors (repeat: -vv).",
            callback=_late_verbose,
            expose_value=False,
            show_default=False,
            rich_help_panel=PANEL,
        ),
    ] = 0,
) -> None:
    """Carries the shared options: typer builds them once, `build()` attaches them."""


def shared_params() -> list[Any]:
    """The click parameters of `--format/-f/-o`, `--dsn` and the session limits, as typer
    builds them."""
    return list(typer.main.get_command(_carrier).params)


_SHARED: list[Any] = []


def build(load_all: bool = False) -> Any:
    """The click command tree of `app` with shared options, placeholders and re-flowed help.

    Commands whose modules are not imported yet are loaded by the root group when resolved
    (`wfctl.cli.registry.LazyGroup`, through `load_command`); `load_all` imports every one
    first (tests walk the whole tree).
    """
    if load_all:
        for entry in COMMANDS.values():
            importlib.import_module(entry.module)
    root = typer.main.get_command(app)
    assert isinstance(root, LazyGroup), "wfctl.cli.app.app's root group is a LazyGroup"
    root.loader = load_command
    _visit(root, "wfctl", _shared(), is_root=True)
    return root


def load_command(name: str) -> Any:
    """Import `name`'s module (it registers the command on `app`) and return its click
    command with the shared options and help fixes."""
    importlib.import_module(COMMANDS[name].module)
    command = _command_from_app(name)
    _visit(command, f"wfctl {name}", _shared())
    return command


def _command_from_app(name: str) -> Any:
    """The click command typer builds for the command or group registered as `name`."""
    for info in app.registered_commands:
        callback_name = getattr(info.callback, "__name__", "")
        if (info.name or typer.main.get_command_name(callback_name)) == name:
            return typer.main.get_command_from_info(
                info,
                pretty_exceptions_short=app.pretty_exceptions_short,
                rich_markup_mode=app.rich_markup_mode,
            )
    for group in app.registered_groups:
        solved = typer.main.solve_typer_info_defaults(group)
        if solved.name == name:
            return typer.main.get_group_from_info(
                group,
                pretty_exceptions_short=app.pretty_exceptions_short,
                suggest_commands=app.suggest_commands,
                rich_markup_mode=app.rich_markup_mode,
            )
    raise LookupError(f"{COMMANDS[name].module} registers no command {name!r}")


def _shared() -> list[Any]:
    if not _SHARED:
        _SHARED.extend(shared_params())
    return _SHARED


def _visit(command: Any, path: str, shared: list[Any], *, is_root: bool = False) -> None:
    """Apply the shared options and help fixes to `command` and everything below it."""
    if command.help:
        command.help = reflow(command.help)
    if not is_root and path not in NO_SHARED_OPTIONS:
        taken = {opt for p in command.params for opt in getattr(p, "opts", ())}
        for param in shared:
            # a command's own flag wins (say `-o FILE`); the rest of the shared flags remain
            free = [opt for opt in param.opts if opt not in taken]
            if free and free != param.opts:
                param = copy.copy(param)
                param.opts = free
            if free:
                command.params.append(param)
    for param in command.params:
        placeholder(param)
        fast(param)
    command.get_help_option = _flag_help_option(command.get_help_option)
    for name, sub in getattr(command, "commands", {}).items():
        _visit(sub, f"{path} {name}", shared)


def _flag_help_option(original: Any) -> Any:
    """`--help` is built per context, outside `params`: strip its placeholder as it is made."""

    def get_help_option(ctx: Any) -> Any:
        option = original(ctx)
        if option is not None:
            option.metavar = ""
            fast(option)
        return option

    return get_help_option


def placeholder(param: Any) -> None:
    """No placeholder on flags; an upper-case word on value options that name none; no
    `<str>` type beside an argument (its name already is the placeholder)."""
    kind = getattr(param, "param_type_name", "")
    descriptor = getattr(param, "type_descriptor", None)
    if kind == "argument" and descriptor is not None and not descriptor.is_choice:
        param.display_type_rich = lambda ctx=None: None
        return
    if kind != "option" or param.metavar is not None:
        return
    if param.is_flag or param.count:
        param.metavar = ""
        return
    if descriptor is None:
        return
    if descriptor.is_choice and descriptor.choices:
        choices = "|".join(str(getattr(c, "value", c)) for c in descriptor.choices)
        param.metavar = choices if len(choices) <= 16 else str(param.name).upper()
        return
    label = param.bare_type()
    if label in _PLACEHOLDERS:
        param.metavar = _PLACEHOLDERS[label]


def reflow(text: str) -> str:
    """Join hard-wrapped prose lines into one line per paragraph; keep indented lines.

    Docstrings are wrapped at the source's line length; rendered at 80 columns each source
    line break survives inside rich's own wrapping and the text comes out ragged.
    """
    paragraphs = inspect.cleandoc(text).split("\n\n")
    out: list[str] = []
    for paragraph in paragraphs:
        lines: list[str] = []
        for line in paragraph.split("\n"):
            prose = line and not line[0].isspace() and line.strip() != "\b"
            previous = lines[-1] if lines else ""
            heading = previous.startswith("[bold]") and previous.endswith("[/bold]")
            if prose and previous and not previous[0].isspace() and not heading:
                lines[-1] = f"{previous} {line.strip()}"
                continue
            lines.append(line)
        out.append("\n".join(lines))
    # typer dedents the text after the first paragraph as a block whose first line does not
    # count: an extra newline keeps an "Examples" header plus indented lines indented.
    return "\n\n\n".join(["\n\n".join(out[:1]), "\n\n".join(out[1:])]).rstrip()
