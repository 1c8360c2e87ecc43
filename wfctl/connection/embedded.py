"""The zero-configuration default: a PostgreSQL server owned by wfctl, in the user's data dir.

Uses the `pgserver` wheel (it ships the server binaries and copes with running as root,
which Postgres itself refuses). The server is left running between invocations so the next
command connects in milliseconds; `wfctl info` says when this default is in use.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import psycopg
from platformdirs import user_data_dir

from wfctl.errors import WfctlError

EMBEDDED_DB = "world"


def data_dir() -> Path:
    """`$WFCTL_EMBEDDED_DIR`, else `<user data dir>/wfctl/pgdata`."""
    override = os.environ.get("WFCTL_EMBEDDED_DIR")
    return Path(override) if override else Path(user_data_dir("wfctl")) / "pgdata"


def embedded_conninfo() -> str:
    """Start (or reuse) the embedded server and return a conninfo for its `world` database."""
    try:
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset (root, containers): harmless
            warnings.simplefilter("ignore")
            import pgserver
    except ImportError as exc:  # pragma: no cover - it is a hard dependency
        raise WfctlError(
            "no database configured and the embedded server (pgserver) is not installed",
            hint="pass --dsn or set WORKFLOW_POSTGRES_URL",
        ) from exc
    directory = data_dir()
    directory.mkdir(parents=True, exist_ok=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server = pgserver.get_server(  # type: ignore[attr-defined]
                str(directory), cleanup_mode=None
            )
    except Exception as exc:
        raise WfctlError(
            f"could not start the embedded PostgreSQL in {directory}: {type(exc).__name__}",
            hint="pass --dsn, or remove the directory and retry",
        ) from exc
    base = str(server.get_uri())
    with psycopg.connect(base, autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (EMBEDDED_DB,)
        ).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{EMBEDDED_DB}"')
    print(
        f"wfctl: no database configured: using the embedded PostgreSQL in {directory}"
        f" (database {EMBEDDED_DB!r}); set WORKFLOW_POSTGRES_URL or --dsn for yours",
        file=sys.stderr,
    )
    return psycopg.conninfo.make_conninfo(base, dbname=EMBEDDED_DB)
