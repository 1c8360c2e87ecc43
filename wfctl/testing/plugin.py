"""The pytest plugin of `wfctl.testing` (entry point `pytest11`: installing wfctl is enough).

Fixtures: `world` (a fresh database per test with a fake clock; docs/testing.md) and the
session-scoped `wfctl_testing_server` / `wfctl_testing_template` behind it, which a project
may override (e.g. to reuse a server its own conftest starts). Nothing is imported or started
until a test asks for `world`: the plugin costs nothing to a session that does not use it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "wfctl_era",
        "world shape of the `world` fixture: beta29 (default) or slot",
        default="beta29",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "wfctl_no_replay: do not replay the test's finished runs at teardown"
    )


@pytest.fixture(scope="session")
def wfctl_testing_server() -> Iterator[Any]:
    """The PostgreSQL server of `world`: `WFCTL_TEST_DSN`, else a throwaway embedded one."""
    from wfctl.testing.world import start_server

    server = start_server()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def wfctl_testing_template(wfctl_testing_server: Any, pytestconfig: pytest.Config) -> str:
    """A bootstrapped world (with the test clock) cloned for each test."""
    from wfctl.testing.world import make_template

    try:
        era = str(pytestconfig.getini("wfctl_era"))
    except ValueError:  # the fixtures imported without the plugin (no ini option)
        era = "beta29"
    return make_template(wfctl_testing_server, era)


@pytest.fixture
def world(
    wfctl_testing_server: Any, wfctl_testing_template: str, request: pytest.FixtureRequest
) -> Iterator[Any]:
    """A fresh world for this test: `world.run_to_end(workflow, *args)`, `world.clock`,
    `world.resume_hook(...)`, `world.replay(run_id)`. `start()`/`RunHandle.result()` use it
    too. At teardown every run the test finished is replayed against the code; a run that
    does not replay fails the test (marker `wfctl_no_replay` to skip)."""
    from wfctl.runtime.replay import NondeterminismError
    from wfctl.testing.world import World, activate, drop_db, make_world_db

    name = make_world_db(wfctl_testing_server, wfctl_testing_template)
    test_world = World(wfctl_testing_server.dsn(name))
    try:
        with activate(test_world):
            yield test_world
            replay = test_world.replay_on_teardown and not request.node.get_closest_marker(
                "wfctl_no_replay"
            )
            failures = test_world.replay_finished() if replay else []
        if failures:
            raise NondeterminismError(failures[0])
    finally:
        drop_db(wfctl_testing_server, name)
