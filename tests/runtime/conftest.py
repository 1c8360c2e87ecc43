"""Fixtures for the runtime tests: a store on a fresh world of each era."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tests.runtime import flows
from wfctl.runtime.store import Store


@pytest.fixture(params=["beta29", "slot"])
def world(request: pytest.FixtureRequest) -> Any:
    """A world of each era (wfctl_world / slot_world)."""
    name = "wfctl_world" if request.param == "beta29" else "slot_world"
    return request.getfixturevalue(name)


@pytest.fixture
def conn(world: Any) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(world.dsn, autocommit=True) as c:
        yield c


@pytest.fixture
def store(conn: psycopg.Connection[Any]) -> Store:
    flows.reset()
    return Store(conn)


def doctor_clean(run_cli: Any, dsn: str) -> None:
    """No corruption. WF136 (a run nothing drives: liveness, not corruption) is left out:
    these tests stop runs in the middle on purpose (tests/worker/test_stranded.py checks it)."""
    from wfctl.doctor.registry import CHECKS

    codes = ",".join(c.code for c in CHECKS if c.code != "WF136")
    status, out, err = run_cli(
        "--dsn", dsn, "--format", "json", "doctor", "--all", "--min-age", "0s", "--only", codes
    )
    assert status == 0, out + err
