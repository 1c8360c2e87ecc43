"""The false-positive control: a clean world written by the real package is silent for every
check, in default and --all scope, and doctor exits 0."""

from __future__ import annotations

import pytest

from tests import realworld as rw
from tests.checks.conftest import clean_controls
from tests.conftest import _create_db, _drop_db
from wfctl.doctor.registry import CHECKS


@pytest.fixture(scope="module")
def real_world(pg_server, real_template):
    """One clean world for the whole module: doctor only reads it."""
    db = _create_db(pg_server, real_template)
    yield db
    _drop_db(pg_server, db)


@pytest.fixture(scope="module")
def clean(real_world):
    runs = clean_controls(real_world)
    # a second, lazily driven completed run
    rw.RealWorld(real_world.dsn).complete_run_with_steps(3, lazy=True)
    return runs


@pytest.mark.parametrize("scope", [(), ("--all",)])
@pytest.mark.parametrize("code", [c.code for c in CHECKS])
def test_clean_world_is_silent(clean, real_world, doctor, code, scope) -> None:
    status, checks, _ = doctor(real_world, "--min-age", "0s", "--only", code, *scope)
    assert checks[code]["count"] == 0, checks[code]
    assert checks[code]["status"] in ("ok", "not_applicable"), checks[code]
    assert status == 0


def test_clean_world_exits_zero_with_every_check(clean, real_world, doctor) -> None:
    status, checks, report = doctor(real_world, "--all", "--min-age", "0s")
    assert status == 0, [c for c in checks.values() if c["count"]]
    assert report["summary"] == {"status": "ok", "exit_code": 0, "findings": 0, "in_flight": 0}
    assert {c["status"] for c in checks.values()} <= {"ok", "not_applicable"}
    # beta.29 world with the queue: only the slot-era checks do not apply, and WF136 (runs of
    # wfctl's runtime: needs wfctl's worker queue, which a Node-made world does not have)
    assert {k for k, c in checks.items() if c["status"] == "not_applicable"} == {
        "WF122",
        "WF123",
        "WF136",
    }
    assert rw.WORKFLOW  # the controls used the package's default workflow name
