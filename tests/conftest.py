"""A real PostgreSQL for every test, never a mock.

Server (one per session), first available wins:
- `WFCTL_TEST_DSN`: an existing server; the role must be allowed to create databases;
- `WFCTL_TEST_BACKEND=testcontainers`: a throwaway `postgres` container (needs a Docker engine);
- otherwise the embedded `pgserver` wheel in a temporary directory (copes with running as root).

Each test gets its own database, cloned from a template (CREATE DATABASE ... TEMPLATE) so a
world costs milliseconds. Templates: an empty database, `wfctl bootstrap` of each era, and a
world made by the real npm package's own bootstrap (skipped only where node/npm are missing).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import itertools
import logging
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from wfctl.world.bootstrap import bootstrap

ROOT = Path(__file__).resolve().parent.parent
NODE_SRC = ROOT / "tests" / "node"
NODE_CACHE = ROOT / ".cache" / "node-world"
log = logging.getLogger("wfctl.tests")  # npm timings: -o log_cli=true --log-cli-level=INFO
_counter = itertools.count()


@dataclass
class Server:
    """An admin connection string for the session's server, and its data dir when we own it."""

    admin_dsn: str
    data_dir: Path | None = None

    def dsn(self, dbname: str) -> str:
        return psycopg.conninfo.make_conninfo(self.admin_dsn, dbname=dbname)

    def execute(self, statement: str) -> None:
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(statement)


@dataclass
class Db:
    """One test database: its name and a conninfo for the admin role."""

    name: str
    dsn: str

    def connect(self, **kwargs: Any) -> psycopg.Connection[Any]:
        return psycopg.connect(self.dsn, autocommit=True, **kwargs)

    def scalar(self, query: str, params: Any = None) -> Any:
        with self.connect() as conn:
            row = conn.execute(query, params).fetchone()
        return None if row is None else row[0]


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    dsn = os.environ.get("WFCTL_TEST_DSN")
    if dsn:
        yield Server(dsn)
        return
    if os.environ.get("WFCTL_TEST_BACKEND") == "testcontainers":
        from testcontainers.postgres import PostgresContainer

        with PostgresContainer("postgres:16", driver=None) as container:
            yield Server(container.get_connection_url())
        return
    import pgserver

    # Not tmp_path_factory: pytest prunes old basetemp folders, which can pull a data
    # directory from under a concurrent session's server.
    data_dir = Path(tempfile.mkdtemp(prefix="wfctl-test-pg-"))
    server = pgserver.get_server(str(data_dir), cleanup_mode="stop")
    try:
        yield Server(str(server.get_uri()), data_dir)
    finally:
        server.cleanup()
        shutil.rmtree(data_dir, ignore_errors=True)


def _create_db(server: Server, template: str | None = None, prefix: str = "t") -> Db:
    name = f"{prefix}_{os.getpid()}_{next(_counter)}"
    clause = f" TEMPLATE {template}" if template else ""
    server.execute(f'CREATE DATABASE "{name}"{clause}')
    return Db(name, server.dsn(name))


def _drop_db(server: Server, db: Db) -> None:
    server.execute(f'DROP DATABASE IF EXISTS "{db.name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def templates(pg_server: Server) -> dict[str, str]:
    """Template databases built once per session: empty, wfctl beta29, wfctl slot."""
    made = {}
    for era in ("beta29", "slot"):
        db = _create_db(pg_server, prefix=f"tmpl_wfctl_{era}")
        with db.connect() as conn:
            bootstrap(conn, era)
        made[era] = db.name
    return made


def node_available() -> bool:
    return shutil.which("node") is not None and shutil.which("npm") is not None


def _manifest_digest(src: Path) -> str:
    """The content key of a pinned npm manifest (package.json + lock) in `src`."""
    names = [n for n in ("package.json", "package-lock.json") if (src / n).is_file()]
    return hashlib.sha256(b"".join((src / n).read_bytes() for n in names)).hexdigest()


@contextlib.contextmanager
def _install_lock(folder: Path) -> Iterator[None]:
    """One npm install per folder at a time, across threads and sessions (the background
    prefetch and a test needing the same set wait for each other)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f"{folder.name}.install.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# Seconds each npm install of this session took ({folder name: seconds}; logged, and read by
# the corpus's figures).
INSTALL_SECONDS: dict[str, float] = {}


def _npm_install(src: Path, folder: Path) -> Path:
    """npm-install the pinned manifest in `src` into `folder`, once per manifest content."""
    digest = _manifest_digest(src)
    stamp = folder / ".installed"
    with _install_lock(folder):
        if stamp.is_file() and stamp.read_text() == digest:
            return folder
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("package.json", "package-lock.json"):
            if (src / name).is_file():
                shutil.copy(src / name, folder / name)
        # `npm install` honours the lock; `npm ci` (npm 11) rejects a lock that lacks other
        # platforms' optional packages, which cbor-extract lists.
        t0 = time.monotonic()
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=folder,
            check=True,
            timeout=900,
        )
        INSTALL_SECONDS[folder.name] = time.monotonic() - t0
        log.info("npm install %s: %.1fs", folder.name, INSTALL_SECONDS[folder.name])
        stamp.write_text(digest)
    return folder


def _package_setup(folder: Path, dsn: str) -> None:
    """Run the installed package's own setup bin against `dsn` (its migrations)."""
    env = {**os.environ, "WORKFLOW_POSTGRES_URL": psycopg_to_url(dsn)}
    env.pop("DATABASE_URL", None)
    subprocess.run(
        ["node", "node_modules/@workflow/world-postgres/bin/setup.js"],
        cwd=folder,
        env=env,
        check=True,
        timeout=300,
        capture_output=True,
    )


def install_real_package() -> Path:
    """npm-install @workflow/world-postgres 5.0.0-beta.29 (with the reference's overrides)."""
    return _npm_install(NODE_SRC, NODE_CACHE)


def real_bootstrap(dsn: str) -> None:
    """Run the real package's own bootstrap CLI (drizzle 0000-0017 + graphile-worker)."""
    _package_setup(install_real_package(), dsn)


# Every published release the tests drive: one pinned manifest per version in
# tests/node4x/<version>, the package with the runtime its users got (`workflow`/`@workflow/core`,
# `@workflow/cli`, `@workflow/world`, paired by the package's declared dependencies), installed
# once into its own folder of the shared cache, keyed by the manifest's content. Its setup bin
# makes the release's worlds, its runtime drives them (tests/judge.py `KITS`).
NODE4X = ROOT / "tests" / "node4x"
RELEASE_PACKAGES = {"4.1": "4.1.1", "4.3": "4.3.7"}
# The releases with a runtime set (the corpus builds worlds with each), oldest first.
RELEASE_VERSIONS = ("4.1.1", "4.1.4", "4.1.5", "4.2.0", "4.3.0", "4.3.6", "4.3.7", "5.0.0-beta.27")


def release_cache(version: str) -> Path:
    """Where the release's pinned set is installed (a new pin is a new folder)."""
    src = NODE4X / version
    return ROOT / ".cache" / f"node-world-postgres-{version}-{_manifest_digest(src)[:12]}"


def install_release_package(version: str) -> Path:
    """npm-install the pinned set of @workflow/world-postgres `version`, once."""
    return _npm_install(NODE4X / version, release_cache(version))


PREFETCH_PARALLEL = 3  # npm installs are mostly network and disk: three at once pay off


def prefetch(jobs: dict[str, Callable[[], object]]) -> None:
    """Run each job (an install, a build) in a daemon thread, PREFETCH_PARALLEL at a time, so
    the npm sets a session needs download while its first tests run. Why not a pool: a
    daemon thread never holds up the interpreter's exit; a job cut short leaves no stamp and
    is simply redone. Failures are left to the test that needs the set (it redoes the job in
    the foreground and fails with npm's own message)."""
    gate = threading.Semaphore(PREFETCH_PARALLEL)

    def run(name: str, job: Callable[[], object]) -> None:
        with gate:
            try:
                job()
            except Exception as exc:  # redone, and reported, by the test that needs it
                log.info("prefetch %s failed: %s", name, exc)

    for name, job in jobs.items():
        threading.Thread(target=run, args=(name, job), name=f"prefetch-{name}", daemon=True).start()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start, in the background, the npm sets of every release some collected test names
    (the corpus's and the release tests' ids carry the version); the corpus's also get their
    workflows built (tests/corpus/conftest.py `prefetch_jobs`)."""
    if session.config.option.collectonly or not node_available():
        return
    users = ("tests/corpus/", "tests/releases/")  # the tests that drive a release's package
    ids = " ".join(i.nodeid for i in session.items if i.nodeid.startswith(users))
    jobs: dict[str, Callable[[], object]] = {}
    if "tests/corpus/" in ids:
        from tests.corpus.conftest import prefetch_jobs

        jobs.update(prefetch_jobs(ids))
    for version in RELEASE_VERSIONS:
        if version in ids and version not in jobs:
            jobs[version] = functools.partial(install_release_package, version)
    prefetch(jobs)


def release_setup(dsn: str, version: str) -> None:
    """The release's own setup: 4.3.x ships `bootstrap` (drizzle + graphile migrate), 4.1.x
    only `workflow-postgres-setup` (drizzle; graphile appears at the first world.start())."""
    _package_setup(install_release_package(version), dsn)


def psycopg_to_url(dsn: str) -> str:
    """node-postgres wants a URL; build one from any libpq conninfo (socket hosts included)."""
    parts = psycopg.conninfo.conninfo_to_dict(dsn)
    user = parts.get("user", "postgres")
    password = f":{parts['password']}" if parts.get("password") else ""
    host = str(parts.get("host", "localhost"))
    port = parts.get("port")
    dbname = parts.get("dbname", "postgres")
    if host.startswith("/"):
        return f"postgresql://{user}{password}@localhost/{dbname}?host={host}" + (
            f"&port={port}" if port else ""
        )
    return f"postgresql://{user}{password}@{host}{':' + str(port) if port else ''}/{dbname}"


@pytest.fixture(scope="session")
def real_template(pg_server: Server) -> str:
    """A world made by the real package's bootstrap; skipped only without node/npm."""
    if not node_available():
        pytest.skip("node/npm not found: the real @workflow/world-postgres cannot be installed")
    db = _create_db(pg_server, prefix="tmpl_real_beta29")
    real_bootstrap(db.dsn)
    return db.name


@pytest.fixture(scope="session")
def release_templates(pg_server: Server) -> dict[str, str]:
    """{version: template database} of worlds made by each 4.x release's own setup, built on
    first use (`release_template(version)`); skipped only without node/npm."""
    return {}


def _release_template(server: Server, made: dict[str, str], version: str) -> str:
    if version not in made:
        if not node_available():
            pytest.skip("node/npm not found: the real @workflow/world-postgres cannot be installed")
        db = _create_db(server, prefix="tmpl_real_" + re.sub(r"\W", "_", version))
        release_setup(db.dsn, version)
        made[version] = db.name
    return made[version]


@pytest.fixture
def world_41(pg_server: Server, release_templates: dict[str, str]) -> Iterator[Db]:
    """A clean world made by @workflow/world-postgres 4.1.1's own `workflow-postgres-setup`
    (drizzle 0000-0009, enums in `public`, no graphile_worker schema yet)."""
    db = _create_db(pg_server, _release_template(pg_server, release_templates, "4.1.1"))
    yield db
    _drop_db(pg_server, db)


@pytest.fixture
def world_43(pg_server: Server, release_templates: dict[str, str]) -> Iterator[Db]:
    """A clean world made by @workflow/world-postgres 4.3.7's own `bootstrap` (drizzle
    0000-0010 + 0015, graphile_worker migrated)."""
    db = _create_db(pg_server, _release_template(pg_server, release_templates, "4.3.7"))
    yield db
    _drop_db(pg_server, db)


@pytest.fixture(params=["4.1.1", "4.3.7"])
def world_4x(
    request: pytest.FixtureRequest, pg_server: Server, release_templates: dict[str, str]
) -> Iterator[tuple[str, Db]]:
    """(version, a clean world made by that 4.x release's own setup), for both releases."""
    version = request.param
    db = _create_db(pg_server, _release_template(pg_server, release_templates, version))
    yield version, db
    _drop_db(pg_server, db)


@pytest.fixture
def empty_db(pg_server: Server) -> Iterator[Db]:
    db = _create_db(pg_server)
    yield db
    _drop_db(pg_server, db)


@pytest.fixture
def wfctl_world(pg_server: Server, templates: dict[str, str]) -> Iterator[Db]:
    """A beta.29-shape world made by `wfctl bootstrap`."""
    db = _create_db(pg_server, templates["beta29"])
    yield db
    _drop_db(pg_server, db)


@pytest.fixture
def slot_world(pg_server: Server, templates: dict[str, str]) -> Iterator[Db]:
    """A slot-era world made by `wfctl bootstrap --era slot`."""
    db = _create_db(pg_server, templates["slot"])
    yield db
    _drop_db(pg_server, db)


@pytest.fixture
def real_world(pg_server: Server, real_template: str) -> Iterator[Db]:
    """A beta.29 world made by the real package's own bootstrap."""
    db = _create_db(pg_server, real_template)
    yield db
    _drop_db(pg_server, db)


@pytest.fixture
def run_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Any:
    """Run wfctl in-process with a clean environment; returns (status, stdout, stderr)."""
    from wfctl.cli.main import main

    for var in ("WFCTL_DATABASE_URL", "WORKFLOW_POSTGRES_URL", "DATABASE_URL", "NO_COLOR"):
        monkeypatch.delenv(var, raising=False)

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        status = main(list(args))
        out, err = capsys.readouterr()
        return status, out, err

    return run
