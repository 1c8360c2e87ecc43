"""Every published release, on a clean world made by its own setup: known by what it holds.

Each world comes from the real package's own setup bin (tests/node4x/<version>, pinned);
beta.29's from tests/node. `info` must name it and exit 0, `doctor` must exit 0 (WF151
compares with the catalog composed from the journal it records), and `repair` must find
nothing to refuse. A world holding a migration no release has, or pinned to a package wfctl
has not read, gets the one exit rule of docs/cli.md: 3 from info, doctor and repair alike.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import Db, Server, _create_db, _drop_db, _release_template
from wfctl.errors import ExitStatus
from wfctl.severity import Severity
from wfctl.world import catalog, codec, drizzle, model, releases

# version -> the era key its world is known by
VERSIONS = {
    "4.1.1": "4.1",
    "4.1.5": "4.2",
    "4.2.0": "4.2",
    "4.3.0": "4.3",
    "4.3.7": "4.3",
    "5.0.0-beta.27": "beta27",
}


@pytest.fixture(params=list(VERSIONS))
def clean_world(
    request: pytest.FixtureRequest, pg_server: Server, release_templates: dict[str, str]
) -> Iterator[tuple[str, Db]]:
    version = request.param
    db = _create_db(pg_server, _release_template(pg_server, release_templates, version))
    yield version, db
    _drop_db(pg_server, db)


def _json(run_cli: Any, db: Db, *args: str) -> tuple[int, dict[str, Any], str]:
    status, out, err = run_cli("--dsn", db.dsn, "--format", "json", *args)
    return status, json.loads(out) if out.strip() else {}, err


def test_the_journal_names_the_candidates(clean_world) -> None:
    version, db = clean_world
    with db.connect() as conn:
        world = model.inspect(conn)
    assert world.era == VERSIONS[version]
    assert world.release is not None and version in world.release.candidates
    assert world.unknowable == "" and world.missing_tables == []
    assert world.drift == []


def test_the_composed_catalog_is_the_one_its_setup_made(clean_world) -> None:
    """Per-migration deltas added up over the recorded journal = the real setup's catalog."""
    _, db = clean_world
    with db.connect() as conn:
        rows = conn.execute(
            "SELECT hash, created_at FROM workflow_drizzle.workflow_migrations ORDER BY id"
        ).fetchall()
        tags = [drizzle.identify(h, c) for h, c in rows]
        assert catalog.diff(drizzle.compose(tags), catalog.describe(conn)) == []


def test_info_names_it_and_exits_0(clean_world, run_cli) -> None:
    version, db = clean_world
    status, report, err = _json(run_cli, db, "info")
    assert status == 0, err
    assert report["era"] == VERSIONS[version]
    assert version in report["release"]["candidates"]
    assert report["journal"].startswith(releases.describe_journal(report["migrations"]))
    assert report["catalog_drift"] == [] and report["unknown"] is None
    status, out, err = run_cli("--dsn", db.dsn, "info")
    assert status == 0, err
    assert version in out and "journal:      " in out


def test_doctor_exits_0_on_a_clean_world(clean_world, run_cli) -> None:
    version, db = clean_world
    status, report, err = _json(run_cli, db, "doctor", "--all")
    assert status == 0, (err, [c for c in report.get("checks", []) if c["status"] != "ok"])
    by_code = {c["code"]: c for c in report["checks"]}
    assert by_code["WF151"]["status"] == "ok"
    if VERSIONS[version] != "beta27":  # 4.x lacks runs.attributes: not applicable, never UNKNOWN
        assert by_code["WF149"]["status"] == "not_applicable"
        assert "workflow_runs.attributes" in by_code["WF149"]["message"]


def test_repair_has_nothing_to_do_and_refuses_nothing(clean_world, run_cli) -> None:
    _, db = clean_world
    status, out, err = run_cli("--dsn", db.dsn, "repair")
    assert status == 0, (out, err)


def test_a_pinned_version_is_the_release(clean_world, run_cli) -> None:
    version, db = clean_world
    status, report, err = _json(run_cli, db, "info", "--package", version)
    assert status == 0, err
    assert report["release"]["candidates"] == [version]
    assert report["release"]["known_by"] == f"pinned ({version})"


# --- a world wfctl does not know whole: one exit rule ------------------------------------

UNKNOWN_WHEN = drizzle.LATEST_KNOWN_WHEN + 86_400_000


def _record_unknown_migration(db: Db) -> None:
    with db.connect() as conn:
        conn.execute(
            "INSERT INTO workflow_drizzle.workflow_migrations (hash, created_at) VALUES (%s, %s)",
            ("f" * 64, UNKNOWN_WHEN),
        )


@pytest.mark.parametrize("made_by", ["wfctl", "4.2.0"])
def test_an_unknown_migration_gives_one_exit_everywhere(
    made_by: str, wfctl_world: Db, pg_server: Server, release_templates: dict[str, str], run_cli
) -> None:
    db = wfctl_world
    if made_by != "wfctl":
        db = _create_db(pg_server, _release_template(pg_server, release_templates, made_by))
    try:
        _record_unknown_migration(db)
        name = f"unknown({UNKNOWN_WHEN})"
        status, report, err = _json(run_cli, db, "info")
        assert status == ExitStatus.UNKNOWN and name in err
        assert report["unknown"] and name in report["unknown"]
        assert report["migrations"][-1] == name

        status, report, _ = _json(run_cli, db, "doctor", "--all")
        assert status == ExitStatus.UNKNOWN
        assert report["database"]["unknown"]
        by_code = {c["code"]: c for c in report["checks"]}
        assert by_code["WF151"]["status"] == "not_applicable"
        assert name in by_code["WF151"]["message"]
        assert all(c["status"] in ("ok", "not_applicable") for c in report["checks"])

        status, _, err = run_cli("--dsn", db.dsn, "repair")
        assert status == ExitStatus.UNKNOWN and name in err and "nothing was written" in err
        status, _out, err = run_cli("--dsn", db.dsn, "repair", "--apply", "--reason", "t", "--yes")
        assert status == ExitStatus.UNKNOWN and name in err
    finally:
        if db is not wfctl_world:
            _drop_db(pg_server, db)


def test_an_unknown_newer_package_pinned_gives_the_same_exits(wfctl_world, run_cli) -> None:
    newer = "9.0.0"
    status, report, err = _json(run_cli, wfctl_world, "info", "--package", newer)
    assert status == ExitStatus.UNKNOWN and newer in err and newer in report["unknown"]
    status, report, _ = _json(run_cli, wfctl_world, "doctor", "--package", newer)
    assert status == ExitStatus.UNKNOWN
    status, _, err = run_cli("--dsn", wfctl_world.dsn, "repair", "--package", newer)
    assert status == ExitStatus.UNKNOWN and newer in err


def test_a_folder_that_is_not_the_package_is_bad_input(wfctl_world, run_cli, tmp_path) -> None:
    (tmp_path / "package.json").write_text('{"name": "left-pad", "version": "1.0.0"}')
    status, out, err = run_cli("--dsn", wfctl_world.dsn, "info", "--package", str(tmp_path))
    assert status == ExitStatus.USAGE and out == "" and err.count("\n") == 1


# --- a world that records its writer -------------------------------------------------------


def test_the_core_a_run_recorded_names_the_version(
    pg_server: Server, release_templates: dict[str, str], run_cli
) -> None:
    """A 4.1.4-4.2.0 journal, a run whose execution context says @workflow/core 4.4.0: only
    4.1.5's users got that core, so the world is 4.1.5, and info says how it knows."""
    db = _create_db(pg_server, _release_template(pg_server, release_templates, "4.2.0"))
    try:
        context = codec.encode({"workflowCoreVersion": "4.4.0", "features": {}})
        with db.connect() as conn:
            conn.execute(
                "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name,"
                " execution_context_cbor, spec_version) VALUES (%s, 'd', 'completed', 'w', %s,"
                " '3')",
                ("wrun_01KZZZZZZZZZZZZZZZZZZZZZZZ", context),
            )
        status, report, err = _json(run_cli, db, "info")
        assert status == 0, err
        assert report["release"]["candidates"] == ["4.1.5"]
        assert "@workflow/core 4.4.0" in report["release"]["known_by"]
        # a pin wins over what a run recorded
        status, report, _ = _json(run_cli, db, "info", "--package", "4.2.0")
        assert report["release"]["candidates"] == ["4.2.0"]
    finally:
        _drop_db(pg_server, db)


def test_worst_case_is_said_in_the_finding() -> None:
    """On a 4.3 journal (4.3.0, 4.3.6 or 4.3.7) a step row without step_created is healed by
    4.3.0's next start but cannot happen on 4.3.6/4.3.7: weighed critical, saying why."""
    release = releases.R43
    rule = release.weight("WF101", Severity.CRITICAL)
    assert rule is not None and rule.severity is Severity.CRITICAL
    assert "worst case among 4.3.0, 4.3.6 or 4.3.7" in rule.why and "on 4.3.0" in rule.why
    pinned = releases.of_version("4.3.0")
    assert pinned.weight("WF101", Severity.CRITICAL).severity is Severity.WARNING  # type: ignore[union-attr]


def test_a_pin_ahead_of_the_journal_says_the_migrator_has_not_run(
    pg_server: Server, release_templates: dict[str, str], run_cli
) -> None:
    db = _create_db(pg_server, _release_template(pg_server, release_templates, "4.2.0"))
    try:
        status, out, err = run_cli("--dsn", db.dsn, "info", "--package", "4.3.7")
        assert status == 0, err
        assert "known by: pinned (4.3.7)" in out
        assert "4.3.7's own setup records 0015 too" in out
    finally:
        _drop_db(pg_server, db)


def test_a_slot_era_pin_on_a_slot_world_is_known(slot_world, run_cli) -> None:
    status, _, err = run_cli("--dsn", slot_world.dsn, "info", "--package", "5.0.0-beta.35")
    assert status == 0, err
    status, _, err = run_cli("--dsn", slot_world.dsn, "info", "--package", "6.0.0")
    assert status == ExitStatus.UNKNOWN and "6.0.0" in err
