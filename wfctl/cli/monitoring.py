"""Doctor's monitoring formats hear every failure, the operator's input included.

A Nagios check, a textfile collector or a jsonl shipper reads stdout or a file, not stderr
nor the exit code's documentation: when `wfctl doctor -f nagios|jsonl|prometheus` cannot
produce a report, for whatever reason (no connection, no world, a malformed DSN, a missing
service file, a bad option), it prints its UNKNOWN line or summary and rewrites the textfile
with `wfctl_doctor_up 0`, and exits 3 (UNKNOWN, the Nagios plugin convention for invalid
arguments too). Text formats are read by a person: a usage error stays exit 64 there, and
so does `doctor --explain CODE`'s (a lookup, not a check).

Imported only on a failure's path (and by doctor).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from wfctl.cli.output import Format

MONITORING = frozenset({Format.NAGIOS, Format.JSONL, Format.PROMETHEUS})

_FORMAT_FLAGS = ("--format", "-f", "-o")
# global options that take a value (their value is never the command's name)
_VALUED = frozenset({*_FORMAT_FLAGS, "--dsn", "--statement-timeout", "--lock-timeout",
                     "--connect-timeout", "--output"})  # fmt: skip


def failure_text(fmt: Format, reason: str, status: int, dsn: str) -> str:
    """The report of a pass that could not run, in a monitoring format ("" for others)."""
    from wfctl.doctor import render

    if fmt is Format.NAGIOS:
        return render.nagios_failure(reason) + "\n"
    if fmt is Format.PROMETHEUS:
        return render.prometheus_failure(reason, status, dsn)
    if fmt is Format.JSONL:
        return render.jsonl_failure(reason, status, dsn)
    return ""


def say_failure(fmt: Format, output_file: Path | None, reason: str, status: int, dsn: str) -> None:
    """Print the failure report, or write it to `output_file` atomically (replacing the last
    good report: a stale textfile would keep its verdict alive)."""
    text = failure_text(fmt, " ".join(reason.split()), status, dsn)
    if not text:
        return
    if output_file is not None and output_file.parent.is_dir():
        write_atomically(output_file, text)
    else:
        print(text, end="", flush=True)


def write_atomically(path: Path, text: str) -> None:
    """Write beside the target and rename: the collector never reads a half-written file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def usage_failure(args: list[str], reason: str) -> bool:
    """A usage error before doctor could start (a malformed DSN, a bad option): when the
    invocation asked doctor for a monitoring format, say UNKNOWN in it; whether it did.

    The command line did not parse, so it is read token by token for the command, the format
    (the last `--format/-f/-o` wins, as when it parses), `--output` and `--dsn`."""
    command, fmt, output, dsn = _scan(args)
    explaining = any(a == "--explain" or a.startswith("--explain=") for a in args)
    if command != "doctor" or fmt not in MONITORING or explaining:
        return False
    from wfctl.connection.dsn import mask_text, resolve_dsn
    from wfctl.errors import ExitStatus, WfctlError

    try:
        masked = resolve_dsn(dsn).masked
    except WfctlError:
        masked = "(unparseable connection string)"
    reason = mask_text(f"usage error: {reason}", dsn or "")
    say_failure(fmt, output, reason, int(ExitStatus.UNKNOWN), masked)
    return True


def _scan(args: list[str]) -> tuple[str | None, Format | None, Path | None, str | None]:
    command: str | None = None
    values: dict[str, str] = {}
    fmt: Format | None = None
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if token == "--":
            break
        if token.startswith("--") and "=" in token:
            name, value = token.split("=", 1)
        elif token[:2] in ("-f", "-o") and len(token) > 2 and not token.startswith("--"):
            name, value = token[:2], token[2:]
        elif token in _VALUED and i < len(args):
            name, value = token, args[i]
            i += 1
        else:
            if command is None and not token.startswith("-"):
                command = token
            continue
        if name in _FORMAT_FLAGS:
            fmt = next((f for f in Format if f.value == value.strip().lower()), None)
        elif name == "--output" and command is not None:
            values["output"] = value
        elif name == "--dsn":
            values["dsn"] = value
    output = Path(values["output"]) if values.get("output") else None
    return command, fmt, output, values.get("dsn")
