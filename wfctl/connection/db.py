"""The connection layer: one place that opens sessions, sets their limits and maps failures.

Every connection is tagged `application_name=wfctl/<version>` so a DBA can see and kill it,
carries a `statement_timeout` and a `lock_timeout` so cron never piles up behind a lock, and
turns driver errors into one-line `WfctlError`s that never contain a password.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import psycopg
import psycopg.conninfo
from psycopg import errors as pgerrors

from wfctl import __version__
from wfctl.connection.dsn import ResolvedDsn, mask_text
from wfctl.errors import ExitStatus, UsageError, WfctlError

APPLICATION_NAME = f"wfctl/{__version__}"


LIMITS = frozenset({"statement_ms", "lock_ms", "connect_s"})


@dataclass(frozen=True)
class Timeouts:
    """Session limits in milliseconds (0 disables one, as in Postgres).

    A limit in `given` was asked for (a flag, or code that means it) and always applies; the
    others are wfctl's defaults, which yield to the DSN's and libpq's own settings
    (`connect_timeout` or `PGCONNECT_TIMEOUT`; `-c statement_timeout=...` or `lock_timeout`
    in the DSN's `options` or `PGOPTIONS`): an operator who wrote one there meant it."""

    statement_ms: int = 30_000
    lock_ms: int = 5_000
    connect_s: int = 10
    given: frozenset[str] = frozenset()


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


def own_limits(conninfo: str, env: Mapping[str, str] | None = None) -> frozenset[str]:
    """The limits the DSN or libpq's environment sets itself (`Timeouts` field names)."""
    env = os.environ if env is None else env
    try:
        params = psycopg.conninfo.conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError:
        params = {}
    own = set()
    if str(params.get("connect_timeout") or env.get("PGCONNECT_TIMEOUT") or "").strip():
        own.add("connect_s")
    # libpq reads PGOPTIONS only when the conninfo has no `options` of its own
    options = str(params["options"] if "options" in params else env.get("PGOPTIONS") or "")
    for name, field in (("statement_timeout", "statement_ms"), ("lock_timeout", "lock_ms")):
        if re.search(rf"(?:-c\s*|--){name.replace('_', '[_-]')}\s*=", options):
            own.add(field)
    return frozenset(own)


def session_settings(
    target: Target, conninfo: str
) -> tuple[dict[str, Any], str | None, str | None]:
    """The connect keywords, `statement_timeout` and `lock_timeout` wfctl sets on a session
    (None: the DSN's or libpq's own setting stands)."""
    t = target.timeouts
    keep = own_limits(conninfo) - t.given
    kwargs: dict[str, Any] = {} if "connect_s" in keep else {"connect_timeout": t.connect_s}
    statement = None if "statement_ms" in keep else f"{t.statement_ms}ms"
    lock = None if "lock_ms" in keep else f"{t.lock_ms}ms"
    return kwargs, statement, lock


def connect(target: Target, *, autocommit: bool = False) -> psycopg.Connection[tuple[object, ...]]:
    """Open a session with wfctl's identity and limits, or raise a one-line `WfctlError`."""
    conninfo = target.conninfo()
    kwargs, statement, lock = session_settings(target, conninfo)
    try:
        conn = psycopg.connect(
            conninfo, autocommit=True, application_name=APPLICATION_NAME, **kwargs
        )
    except psycopg.Error as exc:
        raise connect_error(exc, target) from None
    try:
        conn.execute(
            "SELECT set_config('statement_timeout',"
            " coalesce(%s, current_setting('statement_timeout')), false),"
            " set_config('lock_timeout', coalesce(%s, current_setting('lock_timeout')), false)",
            (statement, lock),
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


# Failures that are the connection string's or libpq configuration's, not the server's
# availability: bad input, said as such (exit 64; doctor's monitoring formats say UNKNOWN).
_SETTING = re.compile(
    r'invalid value for parameter|unrecognized configuration parameter|invalid \w+ value: "'
    r"|for connection option|bad value for \w+"
)
_SERVICE = re.compile(r"service file|definition of service")


def connect_error(exc: psycopg.Error, target: Target) -> WfctlError:
    """Classify a failure to connect: the reason in one line, and what to try next."""
    text = mask_text(_one_line(exc), target.dsn.conninfo)
    where = f"(DSN from {target.dsn.source})"
    lowered = text.lower()
    if _SERVICE.search(lowered):
        return UsageError(
            f"cannot use the libpq service {where}: {text}",
            hint="check PGSERVICE and PGSERVICEFILE (default ~/.pg_service.conf): the file"
            " must exist, be readable and define the service",
        )
    if _SETTING.search(lowered):
        return UsageError(
            f"invalid connection setting {where}: {text}",
            hint="fix the setting in the DSN (or its options / PGOPTIONS, PG* variables)",
        )
    if "password authentication failed" in lowered or "no password supplied" in lowered:
        hint = "check the user and password (PGPASSWORD, ~/.pgpass)"
        msg = f"authentication failed {where}: {text}"
    elif "does not exist" in lowered and "database" in lowered:
        hint = "check the database name in the DSN; `psql -l` lists them"
        msg = f"no such database {where}: {text}"
    elif isinstance(exc, pgerrors.ConnectionTimeout) or "timeout expired" in lowered:
        hint = "is the host reachable from here? a firewall may drop the packets"
        msg = f"connection timed out {_connect_limit(target)} {where}: {text}"
    else:
        hint = "is the server running and reachable? check host and port"
        msg = f"cannot connect {where}: {text}"
    return WfctlError(msg, hint=hint, status=ExitStatus.UNKNOWN)


def _connect_limit(target: Target) -> str:
    """Which connection limit expired, and whose it was."""
    t = target.timeouts
    conninfo = "" if target.dsn.is_embedded else target.dsn.conninfo
    if "connect_s" in t.given or "connect_s" not in own_limits(conninfo):
        whose = "--connect-timeout" if "connect_s" in t.given else "wfctl's default"
        return f"after {t.connect_s} s ({whose})"
    try:
        params = psycopg.conninfo.conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError:
        params = {}
    whose = "connect_timeout of the DSN" if params.get("connect_timeout") else "PGCONNECT_TIMEOUT"
    try:  # libpq's rule, which psycopg follows: at least 2 s
        return f"after {psycopg.conninfo.timeout_from_conninfo(params)} s ({whose})"
    except psycopg.Error:
        return f"({whose})"


_DENIED = re.compile(
    r"permission denied for (schema|table|relation|sequence|database|function) ([^\s;]+)"
)
_OWNER = re.compile(r"must be owner of (?:table|relation|index|schema|database) ([^\s;]+)")


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


def missing_privileges(conn: psycopg.Connection[Any], text: str) -> list[tuple[str, list[str]]]:
    """For "permission denied for table T": which table privileges the role lacks on each
    table named T (the server names the table, not the privilege). Empty when it cannot say."""
    denied = _DENIED.search(text)
    if denied is None or denied.group(1) not in ("table", "relation"):
        return []
    from wfctl import sql

    try:
        rows = conn.execute(
            sql.load("connection/missing_table_privileges"), {"name": denied.group(2)}
        ).fetchall()
    except psycopg.Error:  # the session is unusable: say what the server said, no more
        return []
    return [(str(row[0]), list(row[1])) for row in rows]


def query_error(
    exc: psycopg.Error,
    target: Target,
    doing: str = "querying",
    conn: psycopg.Connection[Any] | None = None,
) -> WfctlError:
    """Classify a failure after connecting: privilege, timeout, or anything else. With the
    session (`conn`, idle again), a table privilege error names the privileges missing."""
    text = mask_text(_one_line(exc), target.dsn.conninfo)
    if isinstance(exc, pgerrors.InsufficientPrivilege):
        lacking = missing_privileges(conn, text) if conn is not None else []
        if lacking:
            said = "; ".join(f"{', '.join(privs)} on {table}" for table, privs in lacking)
            return WfctlError(
                f"insufficient privilege while {doing}: {text} (this role lacks {said})",
                hint=f"grant {said.replace(' on ', ' ON TABLE ')} to this role, or connect as"
                " a role that has it (docs/cli.md, 'Roles')",
            )
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
