"""Fixtures for the 4.x release tests: worlds made by each release's own setup, written through
that release's own `events.create` (tests/realworld.py driving the 4.x package), faults planted
by triggers (tests/faults.py) on those real write paths."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests import realworld as rw
from tests.conftest import Db, install_release_package
from tests.faults import drop_faults

FORCE = ("--min-age", "0s", "--force-min-age")
KEY = {"4.1.1": "4.1", "4.3.7": "4.3"}


@pytest.fixture
def release_world(world_4x: tuple[str, Db]) -> Iterator[tuple[str, Db, rw.RealWorld]]:
    """(release key "4.1"/"4.3", the database, the real 4.x package driving it)."""
    version, db = world_4x
    yield KEY[version], db, rw.RealWorld(db.dsn, folder=install_release_package(version))
    with db.connect() as conn:
        drop_faults(conn)


@pytest.fixture
def cli_json(run_cli: Any) -> Any:
    """cli_json(db, command, *args) -> (exit status, parsed JSON)."""

    def run(db: Db, *args: str) -> tuple[int, Any]:
        status, out, err = run_cli("--dsn", db.dsn, "--format", "json", *args)
        assert out, err
        return status, json.loads(out)

    return run
