"""The connection layer: one place that opens sessions, sets their limits and maps failures.

Every connection is tagged `application_name=wfctl/<version>` so a DBA can see and kill it,
carries a `statement_timeout` and a `lock_timeout` so cron never piles up behind a lock, and
turns driver errors into one-line `WfctlError`s that never contain a password.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
from psycopg import errors as pgerrors

from wfctl import __version__
from wfctl.connection.dsn import ResolvedDsn, mask_text
from wfctl.errors import ExitStatus, WfctlError

APPLICATION_NAME = f"wfctl/{__version__}"


@dataclass(frozen=True)
class Timeouts:
    """Session limits in milliseconds (0 disables one, as in Postgres)."""

    statement_ms: int = 30_000
    lock_ms: int = 5_000
    connect_s: int = 10


@dataclass(frozen=True)
class Target:
    """Everything needed to open a session: the DSN, where it came from, and the limits."""

    dsn: ResolvedDsn
    timeouts: Timeouts = Timeouts()
    # Why the implicit embedded server may not be used ("" = it may): a machine format's
    # reader (cron, Nagios, a textfile collector) lost its environment, and a throwaway
    # world's verdict would be a lie about the database it meant.
    embedded_refused: str = ""

    def conninfo(self) -> str:
        if self.dsn.is_embedded:
            if self.embedded_refused:
                raise WfctlError(
                    f"no database configured: {self.embedded_refused}",
                    hint="pass --dsn or set WFCTL_DATABASE_URL: cron does not inherit your"
                    " shell's environment; `wfctl embedded status` shows the embedded server's"
                    " DSN if it is the one you mean",
                    status=ExitStatus.UNKNOWN,
                )
            from wfctl.connection.embedded import embedded_conninfo

            return embedded_conninfo()
        return self.dsn.conninfo


def connect(target: Target, *, autocommit: bool = False) -> psycopg.Connection[tuple[object, ...]]:
    """Open a session with wfctl's identity and limits, or raise a one-line `WfctlError`."""
    conninfo = target.conninfo()
    try:
        conn = psycopg.connect(
            conninfo,
            autocommit=True,
            application_name=APPLICATION_NAME,
            connect_timeout=target.timeouts.connect_s,
        )
    except psycopg.Error as exc:
        raise connect_error(exc, target) from None
    try:
        conn.execute(
            "SELECT set_config('statement_timeout', %s, false),"
            " set_config('lock_timeout', %s, false)",
            (f"{target.timeouts.statement_ms}ms", f"{target.timeouts.lock_ms}ms"),
        )
    except psycopg.Error as exc:
        conn.close()
        raise query_error(exc, target) from None
    conn.autocommit = autocommit
    return conn


@contextlib.contextmanager
def read_only(
    conn: psycopg.Connection[tuple[object, ...]], *, snapshot: bool = False
) -> Iterator[None]:
    """A `READ ONLY` transaction: the server itself refuses any write inside it.

    `snapshot`: REPEATABLE READ, one snapshot for the whole transaction, which other
    sessions can then share (`pg_export_snapshot`: `doctor --jobs`)."""
    with conn.transaction():
        level = "ISOLATION LEVEL REPEATABLE READ READ ONLY" if snapshot else "READ ONLY"
        conn.execute(f"SET TRANSACTION {level}")
        yield


def _one_line(exc: BaseException) -> str:
    """A driver message folded to one line (libpq adds tab-indented detail lines)."""
    return "; ".join(part.strip() for part in str(exc).splitlines() if part.strip())


def connect_error(exc: psycopg.Error, target: Target) -> WfctlError:
    """Classify a failure to connect: the reason in one line, and what to try next."""
    text = mask_text(_one_line(exc), target.dsn.conninfo)
    where = f"(DSN from {target.dsn.source})"
    lowered = text.lower()
    if "password authentication failed" in lowered or "no password supplied" in lowered:
        hint = "check the user and password (PGPASSWORD, ~/.pgpass)"
        msg = f"authentication failed {where}: {text}"
    elif "does not exist" in lowered and "database" in lowered:
        hint = "check the database name in the DSN; `psql -l` lists them"
        msg = f"no such database {where}: {text}"
    elif "timeout" in lowered:
        hint = "is the host reachable from here? a firewall may drop the packets"
        msg = f"connection timed out {where}: {text}"
    else:
        hint = "is the server running and reachable? check host and port"
        msg = f"cannot connect {where}: {text}"
    return WfctlError(msg, hint=hint, status=ExitStatus.UNKNOWN)


_DENIED = re.compile(
    r"permission denied for (schema|table|relation|sequence|database|function) (\S+)"
)
_OWNER = re.compile(r"must be owner of (?:table|relation|index|schema|database) (\S+)")


def grant_hint(text: str) -> str:
    """What to grant, read from the server's "permission denied for ..." message."""
    denied = _DENIED.search(text)
    if denied:
        kind, name = denied.groups()
        kind = "table" if kind == "relation" else kind
        what = {
            "schema": "USAGE (CREATE to create objects) ON SCHEMA",
            "table": "SELECT (INSERT, UPDATE, DELETE to write) ON TABLE",
            "sequence": "USAGE, SELECT ON SEQUENCE",
            "database": "CREATE ON DATABASE",
            "function": "EXECUTE ON FUNCTION",
        }[kind]
        return f"grant {what} {name} to this role, or connect as a role that has it"
    owner = _OWNER.search(text)
    if owner:
        return f"connect as the owner of {owner.group(1)} (or a member of its owning role)"
    return "connect as a role with the privileges docs/cli.md lists for this command"


def query_error(exc: psycopg.Error, target: Target, doing: str = "querying") -> WfctlError:
    """Classify a failure after connecting: privilege, timeout, or anything else."""
    text = mask_text(_one_line(exc), target.dsn.conninfo)
    if isinstance(exc, pgerrors.InsufficientPrivilege):
        return WfctlError(f"insufficient privilege while {doing}: {text}", hint=grant_hint(text))
    if isinstance(exc, pgerrors.QueryCanceled):
        return WfctlError(
            f"statement timeout while {doing}: {text}",
            hint="raise it with --statement-timeout (milliseconds; 0 disables)",
        )
    if isinstance(exc, pgerrors.LockNotAvailable):
        return WfctlError(
            f"lock timeout while {doing}: {text}",
            hint="another session holds a conflicting lock; retry, or raise --lock-timeout",
        )
    if isinstance(exc, pgerrors.ReadOnlySqlTransaction):
        return WfctlError(
            f"the server is read-only while {doing}: {text}",
            hint="point the DSN at the primary, not a replica",
        )
    return WfctlError(f"database error while {doing}: {text}", hint="rerun with -v for details")
