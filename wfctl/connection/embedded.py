"""The zero-configuration default: a PostgreSQL server owned by wfctl, in the user's data dir.

Uses the `pgserver` wheel (it ships the server binaries and copes with running as root,
which Postgres itself refuses). The server is left running after wfctl exits, so the next
command connects in milliseconds; `wfctl info` shows it and its DSN (for psql), and
`wfctl embedded stop` stops it (the data stays; the next command starts it again).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from platformdirs import user_data_dir

from wfctl.errors import WfctlError

EMBEDDED_DB = "world"
# One start (and one banner) per process: a worker opens many connections.
_started: dict[Path, str] = {}


def data_dir() -> Path:
    """`$WFCTL_EMBEDDED_DIR`, else `<user data dir>/wfctl/pgdata`."""
    override = os.environ.get("WFCTL_EMBEDDED_DIR")
    return Path(override) if override else Path(user_data_dir("wfctl")) / "pgdata"


def embedded_conninfo() -> str:
    """Start (or reuse) the embedded server and return a conninfo for its `world` database."""
    directory = data_dir()
    if directory not in _started:
        _started[directory] = _start(directory)
    return _started[directory]


def _start(directory: Path) -> str:
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
    directory.mkdir(parents=True, exist_ok=True)
    try:
        base = _get_server_uri(pgserver, directory)
    except subprocess.TimeoutExpired:
        # pgserver gives `pg_ctl start` 10 s; on a loaded machine the first start (after
        # initdb) can take longer while the server goes on starting: wait for it to be ready.
        base = _when_ready(directory)
    except Exception as exc:
        raise _start_error(directory, exc) from exc
    with psycopg.connect(base, autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (EMBEDDED_DB,)
        ).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{EMBEDDED_DB}"')
    print(
        f"wfctl: no database configured: using the embedded PostgreSQL in {directory}"
        f" (database {EMBEDDED_DB!r}; it keeps running, `wfctl embedded stop` stops it);"
        " set WORKFLOW_POSTGRES_URL or --dsn for yours",
        file=sys.stderr,
    )
    return psycopg.conninfo.make_conninfo(base, dbname=EMBEDDED_DB)


def _get_server_uri(pgserver: Any, directory: Path) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return str(pgserver.get_server(str(directory), cleanup_mode=None).get_uri())


def _when_ready(directory: Path, patience: float = 60.0) -> str:
    """The server pg_ctl gave up waiting for, once its pid file says `ready`."""
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        info = _postmaster(directory)
        if info is not None and info.is_running() and info.status == "ready":
            # the URI pgserver would give (its half-made handle for this directory is stale)
            return str(info.get_uri())
        time.sleep(0.5)
    raise _start_error(directory, TimeoutError(f"not ready after {patience:.0f} s"))


def _start_error(directory: Path, exc: BaseException) -> WfctlError:
    return WfctlError(
        f"could not start the embedded PostgreSQL in {directory}: {type(exc).__name__}",
        hint=f"see {directory / 'log'}; pass --dsn, or remove the directory and retry",
    )


@dataclass(frozen=True)
class ServerState:
    """What `postmaster.pid` in the data directory says, without starting anything."""

    data_dir: Path
    running: bool
    pid: int | None = None
    dsn: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "data_dir": str(self.data_dir),
            "running": self.running,
            "pid": self.pid,
            "dsn": self.dsn,
        }


def server_state() -> ServerState:
    """Is the embedded server running, and where does it listen? (Reads files only.)"""
    directory = data_dir()
    info = _postmaster(directory)
    if info is None or not info.is_running():
        return ServerState(directory, running=False)
    return ServerState(directory, True, info.pid, info.get_uri(database=EMBEDDED_DB))


def stop() -> tuple[bool, ServerState]:
    """Stop the embedded server (fast shutdown: open sessions are ended); keep its data.
    Returns whether it was running, and its state afterwards."""
    state = server_state()
    if not state.running:
        return False, state
    from pgserver import _commands  # the wheel's pg_ctl wrapper (binaries inside the wheel)

    # Postgres refuses to run as root; pgserver runs it as its own `pgserver` user.
    user = "pgserver" if hasattr(os, "geteuid") and os.geteuid() == 0 else None
    try:
        # made at import, one function per bundled binary
        pg_ctl = _commands.pg_ctl  # type: ignore[attr-defined]
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=state.data_dir, user=user)
    except subprocess.CalledProcessError as exc:
        raise WfctlError(
            f"could not stop the embedded PostgreSQL in {state.data_dir} (pg_ctl exit"
            f" {exc.returncode})",
            hint=f"stop process {state.pid} yourself",
        ) from None
    _started.pop(state.data_dir, None)
    return True, server_state()


def _postmaster(directory: Path) -> Any:
    if not (directory / "postmaster.pid").is_file():
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pgserver.utils import PostmasterInfo
    try:
        return PostmasterInfo.read_from_pgdata(directory)
    except (AssertionError, ValueError, OSError):  # a half-written pid file while starting
        return None
