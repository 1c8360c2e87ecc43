"""The 4.1.0 betas before 4.1.0-beta.46 (pg-boss queue, no waits table): a world made by
4.1.0-beta.30's own `workflow-postgres-setup` is named by `info` (exit 0; its catalog is the
composition of 0000-0006) and acted on by nothing else (exit 2, nothing written).

That setup connects with postgres.js, which reaches a server by TCP only: a unix-socket test
server is reached through a small loopback forwarder.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import socketserver
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tests.conftest import Db, _create_db, _drop_db, install_release_package, node_available
from tests.conftest import Server as PgServer
from wfctl.errors import ExitStatus

VERSION = "4.1.0-beta.30"


class _Forward(socketserver.BaseRequestHandler):
    """One TCP client, piped both ways to the server's unix socket."""

    path = ""

    def handle(self) -> None:
        upstream = socket.socket(socket.AF_UNIX)
        upstream.connect(self.path)

        def pump(src: socket.socket, dst: socket.socket) -> None:
            with contextlib.suppress(OSError):
                while data := src.recv(65536):
                    dst.sendall(data)
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)

        back = threading.Thread(target=pump, args=(upstream, self.request), daemon=True)
        back.start()
        pump(self.request, upstream)
        back.join(timeout=30)
        upstream.close()


@contextlib.contextmanager
def _tcp_url(dsn: str) -> Iterator[str]:
    """A postgres:// URL by TCP for `dsn` (forwarded on loopback when it names a socket)."""
    parts = psycopg.conninfo.conninfo_to_dict(dsn)
    host, port = str(parts.get("host", "localhost")), int(parts.get("port") or 5432)
    user, db = parts.get("user", "postgres"), parts["dbname"]
    password = f":{parts['password']}" if parts.get("password") else ""
    if not host.startswith("/"):
        yield f"postgres://{user}{password}@{host}:{port}/{db}"
        return
    handler = type("Forward", (_Forward,), {"path": f"{host}/.s.PGSQL.{port}"})
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler) as server:
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield f"postgres://{user}{password}@127.0.0.1:{server.server_address[1]}/{db}"
        finally:
            server.shutdown()


@pytest.fixture
def pgboss_world(pg_server: PgServer) -> Iterator[Db]:
    if not node_available():
        pytest.skip("node/npm not found: the real @workflow/world-postgres cannot be installed")
    folder = install_release_package(VERSION)
    db = _create_db(pg_server)
    try:
        with _tcp_url(db.dsn) as url:
            env = {**os.environ, "WORKFLOW_POSTGRES_URL": url}
            env.pop("DATABASE_URL", None)
            subprocess.run(
                ["node", "node_modules/@workflow/world-postgres/bin/setup.js"],
                cwd=folder, env=env, check=True, timeout=120, capture_output=True,
            )  # fmt: skip
        yield db
    finally:
        _drop_db(pg_server, db)


def test_named_by_info_and_acted_on_by_nothing(pgboss_world: Db, run_cli: Any) -> None:
    status, out, err = run_cli("--dsn", pgboss_world.dsn, "--format", "json", "info")
    assert status == 0, err
    report = json.loads(out)
    assert report["era"] == "4.1-beta" and VERSION in report["release"]["candidates"]
    assert report["catalog_drift"] == [] and report["journal"].endswith("journal 0000-0006")
    for command in (("doctor",), ("repair",), ("repair", "--apply", "--reason", "t", "--yes")):
        status, out, err = run_cli("--dsn", pgboss_world.dsn, *command)
        assert status == ExitStatus.CRITICAL, (command, out, err)
        assert "pg-boss" in err and "nothing was written" in err
