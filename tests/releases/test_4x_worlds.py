"""The 4.x release line on worlds made by the real 4.1.1 and 4.3.7 packages.

Worlds come from each package's own setup (4.1.1 `workflow-postgres-setup`, 4.3.7 `bootstrap`);
rows come from that release's own `events.create`; faults are a trigger failing one of its
statements, which on 4.x leaves exactly what a crash between two autocommits leaves.
"""

from __future__ import annotations

import time
from typing import Any

from tests import realworld as rw
from tests.checks.conftest import clean_controls
from tests.conftest import Db
from tests.faults import fail_insert
from tests.releases.conftest import FORCE
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
    names = releases.RELEASES[key].package  # the versions its journal can be
    assert world.kind == f"@workflow/world-postgres {names} world"


def test_the_kept_catalog_is_the_real_one(release_world) -> None:
    key, db, _ = release_world
    with db.connect() as conn:
        assert catalog.diff(catalog.expected(key), catalog.describe(conn)) == []


def test_info_names_the_release_and_exits_0(release_world, run_cli) -> None:
    key, db, _ = release_world
    status, out, err = run_cli("--dsn", db.dsn, "info")
    assert status == 0, err
    names = releases.RELEASES[key].package
    assert f"world:        @workflow/world-postgres {names} world" in out
    assert f"matches the expected catalog of @workflow/world-postgres {names}" in out
    assert "upgrade view" in out


def test_doctor_on_a_clean_world_exits_0(release_world, cli_json) -> None:
    key, db, world = release_world
    clean_controls(db, world=world)
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


# --- commands on 4.x worlds -------------------------------------------------------------------


def test_run_commands_work_and_new_runs_are_refused_with_the_reason(release_world, run_cli) -> None:
    _, db, world = release_world
    runs = clean_controls(db, world=world)
    status, out, err = run_cli("--dsn", db.dsn, "runs", "list")
    assert status == 0, err
    assert runs["completed"] in out
    status, out, err = run_cli("--dsn", db.dsn, "runs", "show", runs["running_step_completed"])
    assert status == 0, err
    status, out, err = run_cli("--dsn", db.dsn, "runs", "cancel", runs["sleeping"], "--yes")
    assert status == 0 and "cancelled" in out, err
    status, out, err = run_cli(
        "--dsn", db.dsn, "runs", "fork", runs["completed"], "--dry-run", "--reason", "x"
    )
    assert status == 2 and "cannot take new runs" in err, (status, err)
    status, _, err = run_cli("--dsn", db.dsn, "migrate", "--online", "--dry-run")
    assert status == 2 and "cannot take migrate --online" in err, (status, err)


def test_hooks_resume_and_gc_on_4x(release_world, run_cli, cli_json) -> None:
    _, db, world = release_world
    runs = clean_controls(db, world=world)
    with db.connect() as conn:
        [token] = conn.execute(
            "SELECT token FROM workflow.workflow_hooks WHERE run_id = %s",
            (runs["hook_waiting"],),
        ).fetchone()
    status, out, err = run_cli("--dsn", db.dsn, "hooks", "resume", token, '{"n": 3}')
    assert status == 0, err
    assert "wake-up job" in out  # as the package's resumeHook(): nothing else wakes the run
    assert [t for t, _, _ in _log(db, runs["hook_waiting"])][-1] == "hook_received"
    with db.connect() as conn:
        woken = conn.execute(
            "SELECT t.identifier, convert_from(decode(j.payload ->> 'data', 'base64'), 'UTF8')"
            "::jsonb ->> 'runId' FROM graphile_worker._private_jobs j"
            " JOIN graphile_worker._private_tasks t ON t.id = j.task_id"
            " WHERE j.key LIKE 'msg%%' ORDER BY j.id DESC LIMIT 1"
        ).fetchone()
    assert woken == ("workflow_flows", runs["hook_waiting"])
    time.sleep(1.5)  # gc's shortest cutoff is 1 s after completion
    status, _, err = run_cli(
        "--dsn", db.dsn, "gc", "--older-than", "1s", "--apply", "--yes", "--reason", "t"
    )
    assert status == 0, err
    with db.connect() as conn:
        left = conn.execute(
            "SELECT count(*) FROM workflow.workflow_runs WHERE id = %s", (runs["completed"],)
        ).fetchone()
    assert left == (0,)
    status, report = cli_json(db, "doctor", "--all", "--min-age", "0s")
    assert status == 0, [c for c in report["checks"] if c["count"]]


def test_doctor_incremental_on_4x(release_world, run_cli) -> None:
    _, db, world = release_world
    clean_controls(db, world=world)
    for _ in range(2):
        status, out, err = run_cli("--dsn", db.dsn, "doctor", "--incremental", "--min-age", "0s")
        assert status == 0, out + err


def test_a_step_job_keeps_its_run_from_looking_stranded(world_43, cli_json) -> None:
    """4.x runs each step as a `<prefix>steps` job naming the run as workflowRunId: a run whose
    only live job is its step's (e.g. a retry 2 h away) is not stranded (WF133)."""
    from tests.conftest import install_release_package

    world = rw.RealWorld(world_43.dsn, folder=install_release_package("4.3.7"))
    run_id, step_id = world.new_run(), rw.new_step_id()
    world.ok(rw.step_ops(run_id, step_id)[:1])
    body = {
        "workflowName": rw.WORKFLOW,
        "workflowRunId": run_id,
        "workflowStartedAt": 0,
        "stepId": step_id,
    }
    step_job = {
        "op": "queue",
        "queueName": f"__wkf_step_{rw.STEP}",
        "message": body,
        "opts": {"delaySeconds": 7200},
    }
    world.ok([step_job])
    db = world_43
    status, report = cli_json(db, "doctor", "--only", "WF133", "--min-age", "0s")
    [check] = report["checks"]
    assert check["count"] == 0 and status == 0, check
    with db.connect() as conn:
        tasks = conn.execute(
            "SELECT DISTINCT t.identifier FROM graphile_worker._private_jobs j"
            " JOIN graphile_worker._private_tasks t ON t.id = j.task_id"
        ).fetchall()
    assert ("workflow_steps",) in tasks


def test_duplicate_reenqueued_wake_ups_collapse_to_one(world_43, cli_json) -> None:
    """Every 4.x world.start() re-enqueues active runs: a sleeper collects one more delayed
    `msg_` wake-up per start (WF132); the repair keeps the oldest and fails the rest."""
    from tests.conftest import install_release_package

    world = rw.RealWorld(world_43.dsn, folder=install_release_package("4.3.7"))
    run_id = world.new_run()
    world.ok([rw.queue(rw.WORKFLOW, {"runId": run_id}, {"delaySeconds": 3600}) for _ in range(3)])
    status, report = cli_json(world_43, "doctor", "--only", "WF132", "--min-age", "0s")
    [check] = report["checks"]
    assert check["count"] == 1 and check["samples"][0]["run_id"] == run_id, check
    status, report = cli_json(
        world_43, "repair", "--apply", "--yes", "--reason", "t", *FORCE, "--only", "WF132"
    )
    assert status == 0, report
    with world_43.connect() as conn:
        live = conn.execute(
            "SELECT count(*) FROM graphile_worker._private_jobs WHERE attempts < max_attempts"
        ).fetchone()
    assert live == (1,)


def test_a_hand_upgraded_43_world_is_info_not_drift(world_43, cli_json) -> None:
    """The beta.29 columns added by hand (what operators did to run beta.29 code paths): the
    journal is still 4.3.x's, and what a later release adds is information naming it."""
    with world_43.connect() as conn:
        conn.execute(
            "ALTER TABLE workflow.workflow_runs ADD COLUMN error_code varchar;"
            " ALTER TABLE workflow.workflow_runs ADD COLUMN attributes jsonb;"
            " ALTER TABLE workflow.workflow_hooks ADD COLUMN is_system boolean"
        )
    status, report = cli_json(world_43, "doctor", "--only", "WF151", "--limit", "10")
    [check] = report["checks"]
    assert status == 0 and check["status"] == "info", check
    assert all("later release" in s["detail"] for s in check["samples"])


def test_a_dead_workers_step_job_lock_blocks_then_unlock_older_than_releases_it(
    release_world, cli_json
) -> None:
    """On 4.x the step runs as its own `<prefix>steps` job: a worker killed inside the step's
    completion leaves that job locked (graphile frees it after 4 h). The repair names it and
    refuses; --unlock-older-than releases it in the heal's transaction."""
    _, db, world = release_world
    run_id, step_id = _completed_step_without_event(world, db)
    body = {"workflowName": rw.WORKFLOW, "workflowRunId": run_id, "workflowStartedAt": 0}
    step_job = {
        "op": "queue",
        "queueName": f"__wkf_step_{rw.STEP}",
        "message": {**body, "stepId": step_id},
    }
    world.ok([step_job])
    with db.connect() as conn:
        conn.execute(
            "UPDATE graphile_worker._private_jobs SET locked_by = 'worker-dead',"
            " locked_at = now() - interval '40 minutes'"
        )
    status, report = cli_json(db, "doctor", "--only", "WF135", "--min-age", "0s")
    [check] = report["checks"]
    assert check["count"] == 1 and check["samples"][0]["run_id"] == run_id, check
    apply = ("repair", "--apply", "--yes", "--reason", "t", *FORCE)
    status, report = cli_json(db, *apply, "--only", "WF111")
    assert status == 2 and "--unlock-older-than" in report["items"][0]["reason"], report
    status, report = cli_json(db, *apply, "--only", "WF111", "--unlock-older-than", "30m")
    assert status == 0, report
    codes = sorted((i["code"], i["outcome"]) for i in report["items"])
    assert codes == [("WF111", "applied"), ("WF135", "applied")]
    with db.connect() as conn:
        held = conn.execute(
            "SELECT count(*) FROM graphile_worker._private_jobs WHERE locked_at IS NOT NULL"
        ).fetchone()
    assert held == (0,)


def test_the_upgrade_view_predicts_what_the_real_beta29_migrator_leaves(world_43, cli_json) -> None:
    """Run the real beta.29 `bootstrap` on a 4.3.7 world: drizzle applies only 0016-0017 (their
    `when` is newer than 0015's) and skips 0011-0014, as the upgrade view said beforehand. The
    world is now beta.29's (its newest migration is recorded) without what 0011-0014 add, and
    WF151 says so (critical: beta.29's writes name those columns)."""
    from tests.conftest import real_bootstrap

    status, before = cli_json(world_43, "info")
    assert status == 0 and before["upgrade"]["to"] == "beta29"
    real_bootstrap(world_43.dsn)
    with world_43.connect() as conn:
        world = model.inspect(conn)
    assert world.era == "beta29"
    recorded = set(world.migrations)
    assert set(before["upgrade"]["applies"]) <= recorded
    assert not set(before["upgrade"]["skips"]) & recorded
    missing = {d for d in world.drift if d.startswith("missing column")}
    assert missing == {
        "missing column workflow.workflow_runs.error_code",
        "missing column workflow.workflow_runs.attributes",
        "missing column workflow.workflow_hooks.is_system",
    }
    status, report = cli_json(world_43, "doctor", "--only", "WF151")
    assert status == 2 and report["checks"][0]["status"] == "critical"


def test_step_failed_restored_with_its_stack_in_the_release_shape(release_world, cli_json) -> None:
    """4.x keeps the failure as {message, stack} on the step row and writes `stack` beside
    `error` in the event: the restored event carries both (4.3.x also `stepName`)."""
    key, db, world = release_world
    run_id, step_id = _started_run(world), rw.new_step_id()
    world.ok(rw.step_ops(run_id, step_id)[:2])
    data = {"error": "boom", "stack": "Error: boom\n    at work (wf.js:1:1)"}
    if key == "4.3":
        data["stepName"] = rw.STEP
    op = rw.create(run_id, "step_failed", step_id, data)
    with db.connect() as conn, fail_insert(conn, "workflow_events", run_id, "step_failed"):
        [result] = world.ops([op])
    assert not result["ok"]
    status, report = cli_json(
        db, "repair", "--apply", "--yes", "--reason", "t", *FORCE, "--only", "WF111"
    )
    assert status == 0, report
    [(_, _, restored)] = [e for e in _log(db, run_id) if e[0] == "step_failed"]
    assert set(restored) == {"4.1": {"error", "stack"}, "4.3": {"error", "stack", "stepName"}}[key]
    assert restored["stack"] == data["stack"]
