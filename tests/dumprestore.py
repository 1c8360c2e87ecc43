"""pg_dump -> psql round trip of one database into a fresh one, as operators move worlds.

Why: a restored world is not byte-for-byte the world that was dumped. The restore re-creates
every index, constraint and function from its deparsed text, so expressions come back in the
form the server prints them (e.g. the partial index predicate's `ANY (ARRAY[...])` casts), and
sequences, jobs and locks come back as data. Doctor and repair must be right on that copy.

The client binaries must match the server's major version (pg_dump refuses a newer server;
an older psql can misread a newer dump), so `client_bin(dsn)` picks, in order, the pgserver
wheel's own bin dir, Debian's `/usr/lib/postgresql/<major>/bin`, and `PATH`, keeping the
first whose `pg_dump --version` has the server's major.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from pathlib import Path

import psycopg


class DumpRestoreError(RuntimeError):
    """No matching client binaries, or pg_dump / psql failed."""


def server_major(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return int(conn.info.server_version) // 10000


def _candidates(major: int) -> list[Path]:
    dirs: list[Path] = []
    try:
        import pgserver

        dirs.append(Path(pgserver.__file__).resolve().parent / "pginstall" / "bin")
    except ImportError:
        pass
    dirs.append(Path(f"/usr/lib/postgresql/{major}/bin"))
    found = shutil.which("pg_dump")
    if found:
        dirs.append(Path(found).resolve().parent)
    return dirs


@functools.cache
def _tool_major(pg_dump: Path) -> int | None:
    try:
        out = subprocess.run(
            [str(pg_dump), "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"(\d+)(?:\.\d+)?", out)
    return int(match.group(1)) if match else None


def client_bin(dsn: str) -> Path:
    """The bin dir holding pg_dump and psql of the server's major version."""
    major = server_major(dsn)
    for folder in _candidates(major):
        pg_dump, psql = folder / "pg_dump", folder / "psql"
        if pg_dump.is_file() and psql.is_file() and _tool_major(pg_dump) == major:
            return folder
    raise DumpRestoreError(f"no pg_dump/psql of major {major} (looked in {_candidates(major)})")


def round_trip(source_dsn: str, target_dsn: str, timeout: float = 600.0) -> None:
    """`pg_dump source | psql target` (plain format, ON_ERROR_STOP): `target` must exist and
    be empty (CREATE DATABASE ... TEMPLATE template0)."""
    folder = client_bin(source_dsn)
    dump = subprocess.run(
        [str(folder / "pg_dump"), "--no-password", "--dbname", source_dsn],
        capture_output=True,
        timeout=timeout,
    )
    if dump.returncode != 0:
        raise DumpRestoreError(f"pg_dump failed: {dump.stderr.decode(errors='replace')[-2000:]}")
    restore = subprocess.run(
        [
            str(folder / "psql"),
            "--no-password",
            "--quiet",
            "--no-psqlrc",
            "--set",
            "ON_ERROR_STOP=1",
            "--dbname",
            target_dsn,
        ],
        input=dump.stdout,
        capture_output=True,
        timeout=timeout,
    )
    if restore.returncode != 0:
        raise DumpRestoreError(f"psql restore failed: {restore.stderr.decode(errors='replace')}")
