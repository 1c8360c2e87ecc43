"""The 4.x release line on worlds made by the real 4.1.1 and 4.3.7 packages.

Worlds come from each package's own setup (4.1.1 `workflow-postgres-setup`, 4.3.7 `bootstrap`);
rows come from that release's own `events.create`; faults are a trigger failing one of its
statements, which on 4.x leaves exactly what a crash between two autocommits leaves.
"""

from __future__ import annotations

from typing import Any

from tests import realworld as rw
from tests.conftest import Db
from tests.faults import fail_insert
from tests.releases.conftest import FORCE, clean_controls
from wfctl.world import catalog, codec, model, releases


def _log(db: Db, run_id: str) -> list[tuple[str, str | None, Any]]:
    """(type, correlation id, decoded payload) in log order."""
    with db.connect() as conn:
        rows = conn.execute(
            "SELECT type, correlation_id, payload_cbor FROM workflow.workflow_events"
            " WHERE run_id = %s ORDER BY id",
            (run_id,),
        ).fetchall()
    return [(t, c, codec.decode(p) if p is not None else None) for t, c, p in rows]


def _started_run(world: rw.RealWorld) -> str:
    return world.new_run()


# --- recognition, info, doctor on clean worlds ------------------------------------------------


def test_recognised_by_its_journal(release_world) -> None:
    key, db, _ = release_world
    with db.connect() as conn:
        world = model.inspect(conn)
    assert world.era == key
    assert world.release is releases.RELEASES[key]
    assert world.drift == []
    assert world.kind == f"@workflow/world-postgres {key}.x world"


def test_the_kept_catalog_is_the_real_one(release_world) -> None:
    key, db, _ = release_world
    with db.connect() as conn:
        assert catalog.diff(catalog.expected(key), catalog.describe(conn)) == []


def test_info_names_the_release_and_exits_0(release_world, run_cli) -> None:
    key, db, _ = release_world
    status, out, err = run_cli("--dsn", db.dsn, "info")
    assert status == 0, err
    assert f"world:        @workflow/world-postgres {key}.x world" in out
    assert f"matches the expected catalog of @workflow/world-postgres {key}.x" in out
    assert "upgrade view" in out


def test_doctor_on_a_clean_world_exits_0(release_world, cli_json) -> None:
    key, db, world = release_world
    clean_controls(world, db)
    status, report = cli_json(db, "doctor", "--all", "--min-age", "0s")
    checks = {c["code"]: c for c in report["checks"]}
    assert status == 0, [c for c in report["checks"] if c["status"] not in ("ok",)]
    assert report["database"]["era"] == key
    assert checks["WF151"]["status"] == "ok"
    assert checks["WF149"]["status"] == "not_applicable"
    assert "has no workflow_runs.attributes" in checks["WF149"]["message"]
    assert not [c for c in report["checks"] if c["status"] == "unknown"]


def test_upgrade_view_names_what_the_next_migrator_skips() -> None:
    up = releases.upgrade(list(releases.R43.journal), releases.R43)
    assert up is not None and up.to is releases.BETA29
    assert up.applies == ("0016_add_encryption_public_key", "0017_add_hook_resume_context")
    assert up.skips == (
        "0011_add_error_code",
        "0012_add_is_system",
        "0013_add_attributes",
        "0014_add_attr_set_event_unique_index",
    )
    up = releases.upgrade(list(releases.R41.journal), releases.R41)
    assert up is not None and up.to is releases.R43
    assert up.applies == (
        "0010_add_events_entity_creation_unique_index",
        "0015_move_enums_to_workflow_schema",
    )
    assert up.skips == ()


# --- severities per release -----------------------------------------------------------------


def _hook_without_created(world: rw.RealWorld, db: Db) -> tuple[str, str]:
    run_id, hook_id = _started_run(world), rw.new_hook_id()
    with db.connect() as conn, fail_insert(conn, "workflow_events", run_id, "hook_created"):
        [result] = world.ops([rw.hook_created(run_id, hook_id, f"tok-{hook_id}")])
    assert not result["ok"]
    return run_id, hook_id


def test_hook_without_created_weighs_what_the_release_does_next(release_world, cli_json) -> None:
    key, db, world = release_world
    _, hook_id = _hook_without_created(world, db)
    status, report = cli_json(db, "doctor", "--only", "WF103", "--min-age", "0s")
    [check] = report["checks"]
    assert check["count"] == 1 and check["samples"][0]["entity_id"] == hook_id
    if key == "4.1":  # its replay meets its own token: hook_conflict, then run_failed
        assert check["status"] == "critical" and status == 2
        assert "hook_conflict" in check["samples"][0]["detail"]
    else:  # 4.3.x heals the orphan hook on the next replay
        assert check["status"] == "info" and status == 0


def test_run_row_without_run_created_only_on_41(release_world, cli_json) -> None:
    key, db, world = release_world
    run_id = rw.new_run_id()
    with db.connect() as conn, fail_insert(conn, "workflow_events", run_id, "run_created"):
        [result] = world.ops([rw.run_created(run_id)])
    assert not result["ok"]
    with db.connect() as conn:
        rows = conn.execute("SELECT count(*) FROM workflow.workflow_runs WHERE id = %s", (run_id,))
        row_count = rows.fetchone()[0]
    if key == "4.3":  # one transaction: the run row went with the event
        assert row_count == 0
        return
    assert row_count == 1
    status, report = cli_json(db, "doctor", "--only", "WF121", "--all", "--min-age", "0s")
    [check] = report["checks"]
    assert check["status"] == "warning" and status == 1, check
    assert (
        "reenqueue" in check["samples"][0]["detail"]
        or "re-enqueues" in (check["samples"][0]["detail"])
    )


# --- repairs in the release's payload shapes ---------------------------------------------------


def _completed_step_without_event(world: rw.RealWorld, db: Db) -> tuple[str, str]:
    run_id, step_id = _started_run(world), rw.new_step_id()
    world.ok(rw.step_ops(run_id, step_id)[:2])  # created + started
    op = rw.step_completed(run_id, step_id, rw.STEP, rw.devl("[42]"))
    with db.connect() as conn, fail_insert(conn, "workflow_events", run_id, "step_completed"):
        [result] = world.ops([op])
    assert not result["ok"]
    return run_id, step_id


def test_step_completed_restored_in_the_release_shape(release_world, cli_json) -> None:
    key, db, world = release_world
    run_id, step_id = _completed_step_without_event(world, db)
    status, report = cli_json(db, "repair", "--dry-run", *FORCE, "--only", "WF111")
    assert status == 0, report
    status, report = cli_json(
        db, "repair", "--apply", "--yes", "--reason", "test", *FORCE, "--only", "WF111"
    )
    assert status == 0, report
    assert [i["outcome"] for i in report["items"]] == ["applied"], report
    [(_, corr, data)] = [e for e in _log(db, run_id) if e[0] == "step_completed"]
    assert corr == step_id
    want = {"4.1": {"result"}, "4.3": {"result", "stepName"}}[key]
    assert set(data) == want
    status, report = cli_json(db, "doctor", "--all", "--min-age", "0s")
    assert not [c for c in report["checks"] if c["code"] not in ("WF133",) and c["count"]]


def test_wait_completed_restored_in_the_release_shape(release_world, cli_json) -> None:
    key, db, world = release_world
    run_id, wait_id = _started_run(world), rw.new_wait_id()
    due = rw.utcnow()
    world.ok([rw.wait_created(run_id, wait_id, due)])
    with db.connect() as conn, fail_insert(conn, "workflow_events", run_id, "wait_completed"):
        [result] = world.ops([rw.wait_completed(run_id, wait_id, due)])
    assert not result["ok"]
    status, report = cli_json(
        db, "repair", "--apply", "--yes", "--reason", "test", *FORCE, "--only", "WF112"
    )
    assert status == 0, report
    [(_, _, data)] = [e for e in _log(db, run_id) if e[0] == "wait_completed"]
    if key == "4.1":  # 4.1.1 writes and reads no payload on wait_completed
        assert data is None
    else:
        assert set(data) == {"resumeAt"}


def test_hook_created_restored_without_beta29_columns(release_world, cli_json) -> None:
    _, db, world = release_world
    run_id, hook_id = _hook_without_created(world, db)
    status, report = cli_json(
        db, "repair", "--apply", "--yes", "--reason", "test", *FORCE, "--only", "WF103"
    )
    assert status == 0, report
    [(_, corr, data)] = [e for e in _log(db, run_id) if e[0] == "hook_created"]
    assert corr == hook_id
    assert set(data) <= {"token", "metadata", "isWebhook"} and "isSystem" not in data


def test_failed_run_terminal_restored_without_error_code(release_world, cli_json) -> None:
    _, db, world = release_world
    run_id = _started_run(world)
    with db.connect() as conn, fail_insert(conn, "workflow_events", run_id, "run_failed"):
        [result] = world.ops([rw.run_failed(run_id, error_code=None)])
    assert not result["ok"]
    with db.connect() as conn:
        status_row = conn.execute(
            "SELECT status FROM workflow.workflow_runs WHERE id = %s", (run_id,)
        ).fetchone()
    if status_row[0] != "failed":  # the release wrote neither: nothing torn
        return
    status, report = cli_json(
        db, "repair", "--apply", "--yes", "--reason", "test", *FORCE, "--all", "--only", "WF113"
    )
    assert status == 0, report
    [(_, _, data)] = [e for e in _log(db, run_id) if e[0] == "run_failed"]
    assert set(data) == {"error"}


def test_run_created_restored_on_41(world_41, cli_json) -> None:
    from tests.conftest import install_release_package

    world = rw.RealWorld(world_41.dsn, folder=install_release_package("4.1.1"))
    run_id = rw.new_run_id()
    with world_41.connect() as conn, fail_insert(conn, "workflow_events", run_id, "run_created"):
        [result] = world.ops([rw.run_created(run_id)])
    assert not result["ok"]
    world.ok([rw.run_started(run_id)])
    status, report = cli_json(
        world_41, "repair", "--apply", "--yes", "--reason", "test", *FORCE, "--only", "WF121"
    )
    assert status == 0, report
    log = _log(world_41, run_id)
    assert [t for t, _, _ in log] == ["run_created", "run_started"]
    assert set(log[0][2]) <= {"deploymentId", "workflowName", "input", "executionContext"}
