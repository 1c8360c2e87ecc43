"""Where the connection string comes from, and how to show it without its secret.

Precedence (first wins): --dsn, WFCTL_DATABASE_URL, WORKFLOW_POSTGRES_URL, DATABASE_URL,
then libpq's own PG* variables or service file (an empty conninfo), and only when none of
those exist, the embedded server kept in the user's data directory.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import psycopg.conninfo

from wfctl.errors import UsageError

ENV_PRECEDENCE = ("WFCTL_DATABASE_URL", "WORKFLOW_POSTGRES_URL", "DATABASE_URL")
# libpq variables that, when set, mean "the operator configured libpq itself".
LIBPQ_VARS = (
    "PGHOST",
    "PGHOSTADDR",
    "PGPORT",
    "PGDATABASE",
    "PGUSER",
    "PGSERVICE",
    "PGSERVICEFILE",
    "PGPASSFILE",
)
EMBEDDED = "embedded"


@dataclass(frozen=True)
class ResolvedDsn:
    """A conninfo plus the name of the place it was found (`--dsn`, an env var, ...)."""

    conninfo: str
    source: str

    @property
    def masked(self) -> str:
        if self.is_embedded:
            from wfctl.connection.embedded import EMBEDDED_DB, data_dir

            return f"embedded PostgreSQL in {data_dir()} (database {EMBEDDED_DB})"
        return mask_dsn(self.conninfo)

    @property
    def is_embedded(self) -> bool:
        return self.source == EMBEDDED


def resolve_dsn(cli_dsn: str | None, env: Mapping[str, str] | None = None) -> ResolvedDsn:
    """Pick the DSN by the documented precedence and validate its syntax early."""
    env = os.environ if env is None else env
    if cli_dsn:
        return ResolvedDsn(validate_dsn(cli_dsn, "--dsn"), "--dsn")
    for name in ENV_PRECEDENCE:
        value = env.get(name)
        if value:
            return ResolvedDsn(validate_dsn(value, name), name)
    if any(env.get(v) for v in LIBPQ_VARS) or _service_file_exists(env):
        return ResolvedDsn("", "libpq environment (PG* variables / service file)")
    return ResolvedDsn("", EMBEDDED)


def _service_file_exists(env: Mapping[str, str]) -> bool:
    home = env.get("HOME")
    return home is not None and Path(home, ".pg_service.conf").is_file()


def validate_dsn(dsn: str, source: str) -> str:
    """Parse with libpq's rules; a malformed DSN is a usage error naming only its source."""
    try:
        parts = psycopg.conninfo.conninfo_to_dict(dsn)
        port = str(parts.get("port") or "")
        if port and not all(p.strip().isdigit() for p in port.split(",")):
            raise psycopg.ProgrammingError(f"invalid port {port!r}")
        timeout = str(parts.get("connect_timeout") or "").strip()
        if timeout and not re.fullmatch(r"-?[0-9]+", timeout):
            raise psycopg.ProgrammingError(f"invalid connect_timeout {timeout!r} (whole seconds)")
    except psycopg.ProgrammingError as exc:
        # libpq's message quotes the token it choked on, which may be (part of) the password.
        reason = scrub_libpq_message(str(exc).splitlines()[0] if str(exc) else "unparseable")
        reason = mask_text(reason, dsn)
        raise UsageError(
            f"malformed connection string from {source}: {reason}",
            hint="use postgresql://user@host:5432/dbname or 'host=... dbname=...'",
        ) from None
    return dsn


def scrub_libpq_message(message: str) -> str:
    """libpq's conninfo parse errors quote the offending token (`invalid percent-encoded token:
    "S3cretPW%"`, `missing "=" after "PW"`): a token of a malformed DSN may be its password,
    which cannot be parsed out to mask it. Keep only quoted keywords and punctuation."""

    def keep(match: re.Match[str]) -> str:
        token = match.group(1)
        if token in _conninfo_keywords() or (len(token) <= 1 and not token.isalnum()):
            return match.group(0)
        return '"***"'

    return re.sub(r'"([^"]*)"', keep, message)


def _conninfo_keywords() -> frozenset[str]:
    """The connection parameter names libpq knows (host, dbname, sslmode, ...)."""
    from psycopg import pq

    return frozenset(d.keyword.decode() for d in pq.Conninfo.get_defaults())


def _unparsed_password(dsn: str) -> str | None:
    """The password of a DSN libpq cannot parse, found by its usual shapes."""
    uri = re.match(r"^[a-z]+://([^/?#]*)@", dsn, flags=re.I)
    if uri and ":" in uri.group(1):
        return uri.group(1).split(":", 1)[1] or None
    kv = re.search(r"(?:^|\s)password\s*=\s*('(?:[^'\\]|\\.)*'?|\S+)", dsn, flags=re.I)
    return kv.group(1).strip("'") or None if kv else None


def mask_dsn(dsn: str) -> str:
    """Render a DSN for humans with any password replaced by `***`."""
    if not dsn:
        return "(libpq defaults)"
    try:
        parts = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "(unparseable connection string)"
    if "password" in parts:
        parts["password"] = "***"
    return " ".join(f"{k}={v}" for k, v in sorted(parts.items()) if v is not None)


def mask_text(text: str, dsn: str) -> str:
    """Remove a DSN's password from arbitrary text (driver errors may echo it)."""
    try:
        password = psycopg.conninfo.conninfo_to_dict(dsn).get("password")
    except psycopg.ProgrammingError:
        password = _unparsed_password(dsn)
    if password:
        text = text.replace(str(password), "***")
    if dsn:
        text = text.replace(dsn, mask_dsn(dsn))
    # Malformed strings cannot be parsed for their password: scrub the usual shapes.
    text = re.sub(r"(://[^:/@\s]*:)[^@\s]*@", r"\1***@", text)
    return re.sub(r"(password\s*=\s*)('[^']*'|\S+)", r"\1***", text, flags=re.I)
