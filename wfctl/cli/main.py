"""Entry point: run the typer app and turn every outcome into a documented exit status.

Click (vendored by typer) reports usage errors with status 2, which a monitoring system
reads as CRITICAL; here they become 64. Expected failures (`WfctlError`) print one line
on stderr with a hint; anything else is a bug, printed as one line too unless -v asks
for the traceback.
"""

from __future__ import annotations

import sys
import traceback

import typer

from wfctl.cli.app import app
from wfctl.cli.commands import (  # noqa: F401  (importing a command module registers it)
    bootstrap,
    completion,
    doctor,
    gc,
    hooks,
    info,
    migrate,
    repair,
    runs,
    worker,
)
from wfctl.cli.commands import run as _run_command  # noqa: F401  (`run` is also this module's entry)
from wfctl.connection.dsn import mask_text
from wfctl.errors import ExitStatus, WfctlError


def main(argv: list[str] | None = None) -> int:
    """Run wfctl with `argv` (default: sys.argv[1:]) and return the exit status."""
    args = sys.argv[1:] if argv is None else argv
    verbose = any(a in ("-v", "--verbose") or a.startswith("-vv") for a in args)
    try:
        result = app(args=args, prog_name="wfctl", standalone_mode=False)
    except WfctlError as exc:
        if verbose:
            traceback.print_exc()
        print(exc.one_line(), file=sys.stderr)
        return int(exc.status)
    except typer.Exit as exc:
        return int(exc.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        print("wfctl: interrupted", file=sys.stderr)
        return int(ExitStatus.INTERRUPTED)
    except Exception as exc:
        if _is_usage_error(exc):
            message = " ".join(exc.format_message().split())  # type: ignore[attr-defined]
            print(f"wfctl: error: {message} (hint: see `wfctl --help`)", file=sys.stderr)
            return int(ExitStatus.USAGE)
        # Anything else is a bug: still one line, still no secrets.
        if verbose:
            traceback.print_exc()
        text = mask_text(f"{type(exc).__name__}: {exc}".splitlines()[0], "")
        print(
            f"wfctl: error: internal error: {text} (hint: rerun with -v and report it)",
            file=sys.stderr,
        )
        return int(ExitStatus.UNKNOWN)
    status = int(result) if isinstance(result, int) else 0
    if status == ExitStatus.INTERRUPTED:  # typer turns Ctrl-C into a silent exit 130
        print("wfctl: interrupted", file=sys.stderr)
    return status


def _is_usage_error(exc: Exception) -> bool:
    """Click-style usage errors (typer vendors click): documented `exit_code` 2 plus a message.

    Matched by their public attributes, not by importing typer's private click copy.
    """
    return getattr(exc, "exit_code", None) == 2 and callable(getattr(exc, "format_message", None))


def run() -> None:
    """Console-script entry: exit with main()'s status."""
    sys.exit(main())


if __name__ == "__main__":
    run()
