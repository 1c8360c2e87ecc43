"""The `wfctl.testing` plugin's fixtures, on this session's server (tests/conftest.py).

Imported here rather than through the `pytest11` entry point so these tests use this tree's
plugin whether or not the installed wfctl registers it; `wfctl_testing_server` is overridden
to reuse the session's PostgreSQL instead of starting a second one."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Server
from wfctl.testing.plugin import wfctl_testing_template, world  # noqa: F401
from wfctl.testing.world import Server as TestingServer


@pytest.fixture(scope="session")
def wfctl_testing_server(pg_server: Server) -> Any:
    return TestingServer(pg_server.admin_dsn)
