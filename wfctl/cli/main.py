"""Entry point: run the typer app and turn every outcome into a documented exit status.

Click (vendored by typer) reports usage errors with status 2, which a monitoring system
reads as CRITICAL; here they become 64. Expected failures (`WfctlError`) print one line
on stderr with a hint; anything else is a bug, printed as one line too unless -v asks
for the traceback.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import traceback
from types import FrameType
from typing import Any

import typer

from wfctl.cli import shared
from wfctl.cli.app import COMPLETE_VAR
from wfctl.cli.coerce import PlainValueError, import_rich_help
from wfctl.cli.output import clean
from wfctl.errors import ExitStatus, Interrupted, WfctlError

# Command modules are imported by the root group when their command is used
# (wfctl.cli.registry): `wfctl --version` and `--help` load none of them.


def main(argv: list[str] | None = None) -> int:
    """Run wfctl with `argv` (default: sys.argv[1:]) and return the exit status."""
    previous = _sigterm_as_interrupt()  # first: a stop request is honoured from here on
    args = sys.argv[1:] if argv is None else argv
    verbose = any(a in ("-v", "--verbose") or a.startswith("-vv") for a in args)
    completing = bool(os.environ.get(COMPLETE_VAR))  # a Tab press: no args, and no help
    if completing:
        _completion_protocol()
    if not completing and (not args or any(a in ("-h", "--help") for a in args)):
        import_rich_help()  # help is coming: typer's rich help, without its Markdown mode
    try:
        result = shared.build().main(args=args, prog_name="wfctl", standalone_mode=False)
    except WfctlError as exc:
        if verbose and not isinstance(exc, Interrupted):  # a signal is not a failure to debug
            traceback.print_exc()
        status = int(exc.status)
        if status == ExitStatus.USAGE and _monitoring_heard(args, exc.message):
            status = int(ExitStatus.UNKNOWN)
        print(clean(exc.one_line(), one_line=True), file=sys.stderr)
        return status
    except typer.Exit as exc:
        return int(exc.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        print("wfctl: interrupted", file=sys.stderr)
        return int(ExitStatus.INTERRUPTED)
    except Exception as exc:
        if _is_usage_error(exc):
            if type(exc).__name__ == "NoArgsIsHelpError":
                return int(ExitStatus.OK)  # `wfctl runs`: the group's help is already printed
            line = usage_line(exc)
            status = int(ExitStatus.USAGE)
            if _monitoring_heard(args, line.rsplit(" (hint: ", 1)[0]):
                status = int(ExitStatus.UNKNOWN)
            print(clean(f"wfctl: error: {line}", one_line=True), file=sys.stderr)
            return status
        # Anything else is a bug: still one line, still no secrets.
        from wfctl.connection.dsn import mask_text

        if verbose:
            traceback.print_exc()
        text = mask_text(f"{type(exc).__name__}: {exc}".splitlines()[0], "")
        print(
            clean(f"wfctl: error: internal error: {text} (hint: rerun with -v and report it)"),
            file=sys.stderr,
        )
        return int(ExitStatus.UNKNOWN)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    status = int(result) if isinstance(result, int) else 0
    if status == ExitStatus.INTERRUPTED:  # typer turns Ctrl-C into a silent exit 130
        print("wfctl: interrupted", file=sys.stderr)
    return status


def _monitoring_heard(args: list[str], reason: str) -> bool:
    """A usage error of `doctor` in a monitoring format is UNKNOWN there: its line, its
    textfile (wfctl.cli.monitoring, imported on this path only); whether it was said."""
    from wfctl.cli import monitoring

    return monitoring.usage_failure(args, reason)


def _completion_protocol() -> None:
    """Tab completion asks wfctl for candidates: typer's bash/zsh/fish answer formats."""
    # Re-exported by typer.completion, not in its __all__ (see wfctl.cli.commands.completion)
    from typer.completion import completion_init  # type: ignore[attr-defined]

    completion_init()


def _is_usage_error(exc: Exception) -> bool:
    """Click-style usage errors (typer vendors click): documented `exit_code` 2 plus a message.

    Matched by their public attributes, not by importing typer's private click copy.
    """
    return getattr(exc, "exit_code", None) == 2 and callable(getattr(exc, "format_message", None))


def usage_line(exc: Any) -> str:
    """A usage error in plain words, with the help of the (sub)command it concerns.

    typer 0.2x coerces values with pydantic, whose messages ("Input should be a valid
    integer, unable to parse string as an integer") describe a data model, not a flag.
    """
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else "wfctl"
    param = getattr(exc, "param", None)
    cause = exc.__cause__
    if param is not None and isinstance(cause, PlainValueError):
        message = f"{_param_name(param)}: {cause}"
    elif param is not None and cause is not None and callable(getattr(cause, "errors", None)):
        message = f"{_param_name(param)}: {_plain(cause.errors()[0])}"
    else:
        message = " ".join(exc.format_message().split())
    if re.fullmatch(r"No such command '\d+'\.", message):  # `wfctl --verbose 1 info`
        return f"{message} (hint: -v/--verbose takes no value: repeat it, e.g. `wfctl -vv info`)"
    return f"{message} (hint: see `{command} --help`)"


def _param_name(param: Any) -> str:
    longs = [o for o in getattr(param, "opts", ()) if o.startswith("--")]
    if getattr(param, "param_type_name", "") == "option" and longs:
        return str(longs[0])
    return str(param.metavar or param.name).upper()


def _plain(error: dict[str, Any]) -> str:
    """One pydantic error entry in an operator's words."""
    kind = str(error.get("type", ""))
    got = error.get("input")
    limits = error.get("ctx") or {}
    if kind in ("int_parsing", "int_from_float", "int_type"):
        return f"expected a whole number, got {got!r}"
    if kind in ("float_parsing", "float_type"):
        return f"expected a number, got {got!r}"
    bounds = {
        "greater_than_equal": ("at least", "ge"),
        "greater_than": ("above", "gt"),
        "less_than_equal": ("at most", "le"),
        "less_than": ("below", "lt"),
    }
    if kind in bounds:
        words, key = bounds[kind]
        return f"must be {words} {limits.get(key)}, got {got!r}"
    text = str(error.get("msg", "invalid value")).removeprefix("Value error, ").rstrip(".")
    return text.replace("Input should be", "should be")


def _sigterm_as_interrupt() -> Any:
    """SIGTERM (systemd, kubectl delete, `timeout`) ends wfctl as Ctrl-C does: exit 130 with
    the same message and hints. `wfctl worker` installs its own handler while it serves.
    SIGINT is Python's own KeyboardInterrupt from the interpreter's start, or, inherited
    ignored (a script's background job), stays ignored (wfctl.signals)."""
    try:
        return signal.signal(signal.SIGTERM, _raise_interrupt)
    except ValueError:  # not the main thread (an embedding application): leave it alone
        return None


def _raise_interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def run() -> None:
    """Console-script entry: exit with main()'s status."""
    sys.exit(main())


if __name__ == "__main__":
    run()
