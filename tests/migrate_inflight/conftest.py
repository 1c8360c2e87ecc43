"""Fixtures: one source world per 4.x release (built once per session by its real runtime,
tests/migrate_inflight/worlds.py) and clones of it per test."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Server, node_available
from tests.migrate_inflight.worlds import SourceWorld, build_source


@pytest.fixture(scope="session")
def inflight_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("inflight-runtime-logs")


@pytest.fixture(scope="session")
def source_world(pg_server: Server, inflight_logs: Path) -> Callable[[str], SourceWorld]:
    """source_world(release) -> the release's world with runs in flight (built on first use)."""
    if not node_available():
        pytest.skip("node/npm not found: the real runtimes cannot be installed")
    made: dict[str, SourceWorld] = {}

    def get(release: str) -> SourceWorld:
        if release not in made:
            made[release] = build_source(pg_server, release, inflight_logs)
        return made[release]

    return get
