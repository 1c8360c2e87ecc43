"""Exit statuses and the error type every command raises.

One enum for every command so that cron, Nagios and humans read the same numbers:
Click's own usage status (2) would read as CRITICAL to a monitoring system, so usage
errors are remapped to 64 (EX_USAGE).
"""

from __future__ import annotations

import enum


class ExitStatus(enum.IntEnum):
    """Documented process exit codes (see docs/cli.md)."""

    OK = 0
    WARNING = 1
    CRITICAL = 2  # critical findings, or an action refused
    UNKNOWN = 3  # cannot connect, not a world, insufficient privilege, timeout
    USAGE = 64  # bad flags or malformed input (EX_USAGE)
    INTERRUPTED = 130  # SIGINT


class WfctlError(Exception):
    """An expected failure: printed as one line with a hint, never as a traceback.

    The message must never contain a password: build it from `mask_dsn` output only.
    """

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        status: ExitStatus = ExitStatus.UNKNOWN,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.status = status

    def one_line(self) -> str:
        """The single stderr line: `wfctl: error: <message> (hint: <hint>)`."""
        text = f"wfctl: error: {self.message}"
        if self.hint:
            text += f" (hint: {self.hint})"
        return " ".join(text.split())


class UsageError(WfctlError):
    """Bad input from the operator: malformed DSN, unknown format, conflicting flags."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint, status=ExitStatus.USAGE)


class RefusedError(WfctlError):
    """An action wfctl will not take on this database as it stands."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint, status=ExitStatus.CRITICAL)


class Interrupted(WfctlError):
    """Ctrl-C or SIGTERM ended the command: exit 130, and the one line says what was written
    (the command's own words, not an error's)."""

    def __init__(self, line: str) -> None:
        super().__init__(line, status=ExitStatus.INTERRUPTED)

    def one_line(self) -> str:
        return " ".join(self.message.split())


def no_such_run(run_id: str, hint: str = "`wfctl runs list` shows the runs") -> WfctlError:
    """A run id the world does not hold: the same line and exit 3 (UNKNOWN) for every
    command (`runs show`, `runs cancel`, `runs fork`, `runs list --after`, `doctor --run`)."""
    return WfctlError(f"no such run: {run_id}", hint=hint, status=ExitStatus.UNKNOWN)
