"""`wfctl migrate --online --package DIR`, the general road, proven with the real packages.

Worlds are made by the real releases' own setups (4.1.1's `workflow-postgres-setup`, 4.3.7's
`bootstrap`: tests/conftest.py `world_41`, `world_43`) and taken by wfctl to the release
installed in DIR (5.0.0-beta.29, `install_real_package`; 4.3.7 for the step in between). The
proof each time: the target package's own setup then applies nothing (drizzle rows and catalog
unchanged), and the catalog equals a fresh beta.29 world's (WF151 clean).
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psycopg
import pytest

from tests import judge
from tests.conftest import Db, install_real_package, install_release_package, real_bootstrap
from tests.migrate_support import (
    ADVISORY_KEY,
    Blocker,
    Writer,
    backend_gone,
    building_pid,
    drizzle_rows,
    spawn,
    wait_for,
)
from wfctl.errors import ExitStatus
from wfctl.world import catalog, drizzle

BETA29_ROWS = sorted((m.sha256, m.when) for m in drizzle.BETA29)
NEXT_INDEX = "workflow.workflow_events_entity_creation_unique_wfctl_next"


def beta29_dir() -> Path:
    return install_real_package()  # an app folder: node_modules/@workflow/world-postgres


def release_dir(version: str) -> Path:
    return install_release_package(version) / "node_modules" / "@workflow" / "world-postgres"


def road(run_cli: Any, db: Db, folder: Path, *extra: str) -> tuple[int, str, str]:
    return run_cli("--dsn", db.dsn, "migrate", "--online", "--package", str(folder), *extra)


def snapshot(db: Db) -> tuple[list[tuple[str, int]], str]:
    with db.connect() as conn:
        return drizzle_rows(conn), catalog.dump(catalog.describe(conn))


def assert_beta29(db: Db, run_cli: Any, *, column_order: tuple[str, ...] = ()) -> None:
    """Equal to a fresh beta.29 world (but for `column_order`: tables whose columns another
    migrator appended first), and the package's own setup applies nothing."""
    with db.connect() as conn:
        drift = [d.text for d in catalog.compare(conn, "beta29")]
        assert drift == [f"table {t}: column order differs" for t in column_order]
        assert sorted(drizzle_rows(conn)) == BETA29_ROWS
    before = snapshot(db)
    real_bootstrap(db.dsn)  # beta.29's own setup: drizzle migrator + graphile-worker migrate
    assert snapshot(db) == before
    status, out, _ = run_cli("--dsn", db.dsn, "doctor", "--only", "WF151")
    assert status == 0, out  # another column order is info: the package names every column


def test_43_to_beta29_at_once(world_43: Db, run_cli: Any) -> None:
    status, out, err = road(run_cli, world_43, beta29_dir())
    assert status == 0, out + err
    assert "SKIP 0011_add_error_code, 0012_add_is_system, 0013_add_attributes, 0014_" in out
    assert "catalog: matches a fresh beta29 world" in out
    assert_beta29(world_43, run_cli)
    # a rerun has nothing to do
    status, out, _ = road(run_cli, world_43, beta29_dir())
    assert status == 0 and "nothing to do" in out


@pytest.mark.parametrize("steps", [False, True], ids=["at-once", "via-4.3.7"])
def test_41_to_beta29(world_41: Db, run_cli: Any, steps: bool) -> None:
    if steps:
        status, out, err = road(run_cli, world_41, release_dir("4.3.7"))
        assert status == 0, out + err
        assert "catalog: matches a fresh 4.3 world" in out
        with world_41.connect() as conn:
            assert catalog.compare(conn, "4.3") == []
    status, out, err = road(run_cli, world_41, beta29_dir())
    assert status == 0, out + err
    assert_beta29(world_41, run_cli)


def test_finishes_a_world_the_package_left_short(world_43: Db, run_cli: Any) -> None:
    real_bootstrap(world_43.dsn)  # beta.29's migrator on a 4.3.x world: 0011-0014 skipped
    with world_43.connect() as conn:
        assert catalog.compare(conn, "beta29") != []
    status, out, err = road(run_cli, world_43, beta29_dir(), "--dry-run")
    assert status == 0, out + err
    assert "pending: 0011_add_error_code, 0012_add_is_system, 0013_add_attributes, 0014_" in out
    assert "would apply nothing and SKIP" in out
    status, out, err = road(run_cli, world_43, beta29_dir())
    assert status == 0, out + err
    assert "note: column order differs" in out
    tables = ("workflow.workflow_hooks", "workflow.workflow_runs")
    assert_beta29(world_43, run_cli, column_order=tables)


def test_dry_run_writes_nothing_and_names_locks(world_43: Db, run_cli: Any) -> None:
    before = snapshot(world_43)
    status, out, _ = run_cli(
        "--dsn", world_43.dsn, "--format", "json",
        "migrate", "--online", "--package", str(beta29_dir()), "--dry-run",
    )  # fmt: skip
    assert status == 0
    plan = json.loads(out)
    assert plan["drizzle_skips"] == [
        "0011_add_error_code",
        "0012_add_is_system",
        "0013_add_attributes",
        "0014_add_attr_set_event_unique_index",
    ]
    assert plan["drizzle_applies"] == [
        "0016_add_encryption_public_key",
        "0017_add_hook_resume_context",
    ]
    kinds = {(s["migration"], s["kind"]) for s in plan["steps"]}
    assert ("0014_add_attr_set_event_unique_index", "replace-index") in kinds
    replace = next(s for s in plan["steps"] if s["kind"] == "replace-index")
    assert "CONCURRENTLY" in replace["sql"][0] and "RENAME" in replace["sql"][2]
    assert snapshot(world_43) == before


class RunWriter(Writer):
    """Inserts runs (the table the column adds lock) one autocommit statement at a time."""

    def insert(self, conn: psycopg.Connection[Any], n: int) -> None:
        conn.execute(
            "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name)"
            " VALUES (%s, 'dpl', 'completed', 'w')",
            (f"wrun_w{n:09d}",),
        )


def test_writer_waits_no_longer_than_the_lock_timeout(world_43: Db, run_cli: Any) -> None:
    """A reader holds workflow_runs in an open transaction: each ADD COLUMN attempt waits its
    lock_timeout (queueing the writer behind it), gives up, backs off and retries."""
    lock_ms = 300
    writers = [RunWriter(world_43.dsn), Writer(world_43.dsn)]
    for w in writers:
        w.start()
    blocker = Blocker(world_43.dsn, "SELECT count(*) FROM workflow.workflow_runs")
    releaser = blocker.release_after(2.0)
    try:
        status, out, err = run_cli(
            "--dsn", world_43.dsn, "--lock-timeout", str(lock_ms), "--format", "json",
            "migrate", "--online", "--package", str(beta29_dir()), "--retries", "30",
        )  # fmt: skip
    finally:
        releaser.join()
        for w in writers:
            w.stop.set()
            w.join()
    assert status == 0, out + err
    report = json.loads(out)
    assert max(s.get("attempts") or 1 for s in report["steps"]) > 1  # it did wait and retry
    for w in writers:
        assert w.errors == [] and w.ok > 0
        # generous: the bound is the lock timeout; scheduling on a loaded machine adds noise
        assert w.max_latency < lock_ms / 1000 + 2.0, w.max_latency
    assert_beta29(world_43, run_cli)


def test_resumes_after_an_interruption(world_43: Db, run_cli: Any) -> None:
    """A lock never granted stops the road after 0011; a killed build left an INVALID index."""
    with world_43.connect() as conn:  # a killed concurrent build's leftover, wrong definition
        conn.execute(
            "INSERT INTO workflow.workflow_events (id, type, run_id) VALUES "
            "('wevt_a', 'run_created', 'r1'), ('wevt_b', 'run_created', 'r2')"
        )
        with pytest.raises(psycopg.errors.UniqueViolation):
            conn.execute(
                f"CREATE UNIQUE INDEX CONCURRENTLY {NEXT_INDEX.split('.')[1]} "
                "ON workflow.workflow_events (type)"
            )
    blocker = Blocker(world_43.dsn, "SELECT count(*) FROM workflow.workflow_hooks")
    try:
        status, out, err = run_cli(
            "--dsn", world_43.dsn, "--lock-timeout", "100",
            "migrate", "--online", "--package", str(beta29_dir()), "--retries", "0",
        )  # fmt: skip
    finally:
        blocker.release()
    assert status == ExitStatus.UNKNOWN, out + err
    assert "lock on workflow.workflow_hooks not granted" in err
    status, out, _ = run_cli("--dsn", world_43.dsn, "migrate", "status")
    assert "road:" in out and "at 0012_add_is_system" in out and "stopped" in out
    status, out, _ = run_cli("--dsn", world_43.dsn, "info")
    assert "MIGRATING:" in out and "0012_add_is_system" in out
    status, out, err = road(run_cli, world_43, beta29_dir())
    assert status == 0, out + err
    assert "an earlier run stopped" in out
    with world_43.connect() as conn:
        assert conn.execute("SELECT to_regclass(%s)", (NEXT_INDEX,)).fetchone() == (None,)
    assert_beta29(world_43, run_cli)
    status, out, _ = run_cli("--dsn", world_43.dsn, "info")
    assert "MIGRATING:" not in out


def test_sigkill_during_the_index_build_then_rerun_resumes(world_43: Db, run_cli: Any) -> None:
    """An open writing transaction holds the concurrent build in its first wait; wfctl is
    killed with SIGKILL there. The server aborts the build (INVALID index left); a rerun
    drops it, rebuilds, and finishes the road."""
    blocker = Blocker(
        world_43.dsn,
        "INSERT INTO workflow.workflow_events (id, type, run_id) VALUES ('wevt_b', 'x', 'wrun_b')",
    )
    proc = spawn(world_43.dsn, "--online", "--package", str(beta29_dir()))
    try:
        pid = wait_for(lambda: building_pid(world_43.dsn), what="the concurrent build")
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        wait_for(lambda: backend_gone(world_43.dsn, pid), what="the server to end the build")
    finally:
        blocker.conn.rollback()
        blocker.release()
    with world_43.connect() as conn:
        row = conn.execute(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", (NEXT_INDEX,)
        ).fetchone()
        assert row == (False,)  # the killed build's leftover
        assert len(drizzle_rows(conn)) == 15  # 0011-0013 recorded before the kill
    status, out, _ = run_cli("--dsn", world_43.dsn, "migrate", "status")
    assert "at 0014_add_attr_set_event_unique_index" in out and "INVALID:" in out
    status, out, err = road(run_cli, world_43, beta29_dir())
    assert status == 0, out + err
    assert "an earlier run stopped" in out
    assert_beta29(world_43, run_cli)


def test_carry_rewrites_after_the_schema(world_43: Db, run_cli: Any) -> None:
    """With --carry the runs the analysis can carry do not stop the road; they are carried
    after the schema is done (the analysis and the rewrite are the inflight module's; here
    stand-ins with its signatures)."""
    from wfctl.migrate import inflight

    seen: list[tuple[list[str], str, str, int]] = []

    def assess(conn: Any, source: str, target: str) -> list[inflight.RunFate]:
        return [inflight.RunFate("wrun_a", "wf", "running", "ids differ", "carried")]

    def carry(conn: Any, run_ids: Any, source: str, target: str, *, reason: str) -> list[Any]:
        columns = conn.execute(
            "SELECT count(*) FROM information_schema.columns WHERE table_schema = 'workflow' "
            "AND column_name = 'resume_context'"
        ).fetchone()[0]
        seen.append((list(run_ids), source, target, columns))
        return [SimpleNamespace(run_id="wrun_a", outcome="carried", reason="rewrote 3 ids")]

    original = inflight.assess, inflight.carry
    inflight.assess = assess  # type: ignore[assignment]
    inflight.carry = carry  # type: ignore[assignment]
    try:
        status, _, err = road(run_cli, world_43, beta29_dir())
        assert status == ExitStatus.CRITICAL and "--carry" in err
        status, out, err = road(run_cli, world_43, beta29_dir(), "--carry")
    finally:
        inflight.assess, inflight.carry = original
    assert status == 0, out + err
    assert "carry: run wrun_a: carried, rewrote 3 ids" in out
    assert seen == [(["wrun_a"], "4.3.7", "5.0.0-beta.29", 1)]  # after the schema


@pytest.mark.skipif(not judge.available(), reason="node/npm not found: no real runtime")
@pytest.mark.parametrize("source", ["4.1.1", "4.3.7"])
def test_beta29_runtime_runs_new_runs_on_the_migrated_world(
    source: str, world_41: Db, world_43: Db, run_cli: Any, tmp_path: Path
) -> None:
    """The real beta.29 runtime (core 5.0.0-beta.39 on world-postgres 5.0.0-beta.29) starts
    and finishes new runs on a world wfctl took there (steps, a sleep, a hook)."""
    db = world_41 if source == "4.1.1" else world_43
    status, out, err = road(run_cli, db, beta29_dir())
    assert status == 0, out + err
    folder, _ = judge.build_runtime()
    with judge.Runtime(db.dsn, tmp_path, folder=folder) as rt:
        pair = rt.start_run("pair", [1])
        sleeper = rt.start_run("sleeper", [2])
        approval = rt.start_run("approval", [3])
        judge.wait_for_status(db.dsn, pair, {"completed"}, timeout=60)
        judge.wait_for_status(db.dsn, sleeper, {"completed"}, timeout=60)
        judge.wait_until(lambda: _hook_waiting(db, approval), 60, "the approval hook")
        rt.resume_hook("approve-3", {"ok": True})
        judge.wait_for_status(db.dsn, approval, {"completed"}, timeout=60)
        assert rt.run_info(pair).get("returnValue") == {"a": 2, "b": 12}
    status, out, _ = run_cli("--dsn", db.dsn, "doctor", "--only", "WF151")
    assert status == 0, out


def _hook_waiting(db: Db, run_id: str) -> bool:
    return bool(
        db.scalar("SELECT count(*) FROM workflow.workflow_hooks WHERE run_id = %s", (run_id,))
    )


# ----------------------------------------------------------------------------- bad input
def test_dir_without_the_package(world_43: Db, run_cli: Any, tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text('{"name": "my-app"}')
    before = snapshot(world_43)
    status, _, err = road(run_cli, world_43, tmp_path)
    assert status == ExitStatus.USAGE
    assert "holds my-app, not @workflow/world-postgres" in err
    assert snapshot(world_43) == before


def test_downgrade_refused(real_world: Db, run_cli: Any) -> None:
    before = snapshot(real_world)
    status, _, err = road(run_cli, real_world, release_dir("4.3.7"))
    assert status == ExitStatus.CRITICAL
    assert "a downgrade" in err and "0016_add_encryption_public_key" in err
    assert snapshot(real_world) == before


def test_second_migrate_refused_naming_the_holder(world_43: Db, run_cli: Any) -> None:
    with psycopg.connect(world_43.dsn, autocommit=True, application_name="other-migrate") as c:
        c.execute("SELECT pg_advisory_lock(%s, %s)", ADVISORY_KEY)
        status, _, err = road(run_cli, world_43, beta29_dir())
    assert status == ExitStatus.CRITICAL
    assert "another migration is running" in err and "other-migrate" in err
    with world_43.connect() as conn:
        assert len(drizzle_rows(conn)) == 12


def test_missing_privileges_named(world_43: Db, run_cli: Any) -> None:
    role = f"road_reader_{world_43.name}"
    with world_43.connect() as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        conn.execute(f'GRANT USAGE ON SCHEMA workflow, workflow_drizzle TO "{role}"')
        conn.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA workflow, workflow_drizzle TO "{role}"')
    try:
        dsn = psycopg.conninfo.make_conninfo(world_43.dsn, user=role)
        status, _, err = road(run_cli, Db(world_43.name, dsn), beta29_dir())
        assert status == ExitStatus.CRITICAL, err
        assert "workflow.workflow_runs: ownership" in err
        assert "INSERT on the table" in err
        with world_43.connect() as conn:
            assert len(drizzle_rows(conn)) == 12
    finally:
        with world_43.connect() as conn:
            conn.execute(f'DROP OWNED BY "{role}"')
            conn.execute(f'DROP ROLE "{role}"')


def test_runs_in_flight_refused_unless_told(world_43: Db, run_cli: Any) -> None:
    """A run the analysis says would fail refuses the road unless told (here a stand-in with
    the analysis's signature)."""
    with world_43.connect() as conn:
        conn.execute(
            "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name) "
            "VALUES ('wrun_live', 'dpl', 'running', 'wf')"
        )
    from wfctl.migrate import inflight

    fates = [inflight.RunFate("wrun_live", "wf", "running", "replay mismatch", "fails")]
    calls: list[tuple[str, str]] = []

    def assess(conn: Any, source: str, target: str) -> list[inflight.RunFate]:
        calls.append((source, target))
        return fates if len(calls) < 3 else []

    original = inflight.assess
    inflight.assess = assess  # type: ignore[assignment]
    try:
        status, _, err = road(run_cli, world_43, beta29_dir())
        assert status == ExitStatus.CRITICAL and "wrun_live (wf, running)" in err
        assert calls[-1] == ("4.3.7", "5.0.0-beta.29")
        with world_43.connect() as conn:
            assert len(drizzle_rows(conn)) == 12
        status, out, err = road(run_cli, world_43, beta29_dir(), "--drain")
        assert status == 0, out + err
        assert "draining: 1 run(s)" in err
    finally:
        inflight.assess = original


def test_drain_and_allow_are_exclusive(world_43: Db, run_cli: Any) -> None:
    status, _, err = road(run_cli, world_43, beta29_dir(), "--drain", "--allow-failing-runs")
    assert status == ExitStatus.USAGE and "exclude each other" in err


def _fake_package(tmp_path: Path, extra: str) -> Path:
    """beta.29's files plus one more migration whose SQL is `extra`."""
    src = beta29_dir() / "node_modules" / "@workflow" / "world-postgres"
    folder = tmp_path / "pkg"
    migrations = folder / "src" / "drizzle" / "migrations"
    (migrations / "meta").mkdir(parents=True)
    journal = json.loads((src / "src/drizzle/migrations/meta/_journal.json").read_text())
    for entry in journal["entries"]:
        name = f"{entry['tag']}.sql"
        (migrations / name).write_text((src / "src/drizzle/migrations" / name).read_text())
    journal["entries"].append(
        {"idx": 18, "version": "7", "when": 1790000000000, "tag": "0018_x", "breakpoints": True}
    )
    (migrations / "meta" / "_journal.json").write_text(json.dumps(journal))
    (migrations / "0018_x.sql").write_text(extra)
    (folder / "package.json").write_text(
        '{"name": "@workflow/world-postgres", "version": "5.0.0-beta.99"}'
    )
    return folder


@pytest.mark.parametrize(
    "statement",
    [
        'ALTER TABLE "workflow"."workflow_runs" ALTER COLUMN "name" TYPE text;',
        'ALTER TABLE "workflow"."workflow_runs" ADD COLUMN "x" varchar NOT NULL;',
        'ALTER TABLE "workflow"."workflow_runs" ADD COLUMN "x" timestamp DEFAULT now();',
        'CREATE INDEX CONCURRENTLY "x" ON "workflow"."workflow_runs" ("name");',
        "DO $$ BEGIN EXECUTE 'DROP TABLE workflow.workflow_runs'; END $$;",
    ],
    ids=["alter-type", "not-null-no-default", "volatile-default", "concurrently", "do-block"],
)
def test_a_statement_it_cannot_run_online_is_refused(
    real_world: Db, run_cli: Any, tmp_path: Path, statement: str
) -> None:
    before = snapshot(real_world)
    status, _, err = road(run_cli, real_world, _fake_package(tmp_path, statement))
    assert status == ExitStatus.CRITICAL, err
    assert "0018_x has a statement wfctl cannot run online" in err
    assert snapshot(real_world) == before


def test_a_new_index_and_column_of_an_unknown_release(
    real_world: Db, run_cli: Any, tmp_path: Path
) -> None:
    """A release wfctl has no description of: its forms still run online; no catalog to
    compare with, so none is claimed; the package's own migrator then applies nothing."""
    folder = _fake_package(
        tmp_path,
        'ALTER TABLE "workflow"."workflow_runs" ADD COLUMN "x" integer DEFAULT 0 NOT NULL;\n'
        "--> statement-breakpoint\n"
        'CREATE INDEX IF NOT EXISTS "workflow_runs_x_index" ON "workflow"."workflow_runs" '
        'USING btree ("x");',
    )
    status, out, err = road(run_cli, real_world, folder)
    assert status == 0, out + err
    assert "catalog:" not in out
    with real_world.connect() as conn:
        assert conn.execute(
            "SELECT indisvalid FROM pg_index "
            "WHERE indexrelid = to_regclass('workflow.workflow_runs_x_index')"
        ).fetchone() == (True,)
        assert len(drizzle_rows(conn)) == 19
    status, out, _ = road(run_cli, real_world, folder)
    assert status == 0 and "nothing to do" in out


def test_the_migrate_domain_never_imports_the_command_layer() -> None:
    """wfctl.migrate reports through a Reporter (wfctl.migrate.events); the CLI renders."""
    import ast

    folder = Path(__file__).resolve().parent.parent / "wfctl" / "migrate"
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names] if isinstance(node, ast.Import)
                else [node.module or ""] if isinstance(node, ast.ImportFrom)
                else []
            )  # fmt: skip
            assert not any(n.startswith(("wfctl.cli", "rich")) for n in names), (path, names)


def test_status_names_the_road(world_41: Db, run_cli: Any) -> None:
    status, out, _ = run_cli("--dsn", world_41.dsn, "migrate", "status", "--package",
                             str(beta29_dir()))  # fmt: skip
    assert status == ExitStatus.WARNING  # the package's migrator would build indexes under its lock
    assert "online road:  possible: `wfctl migrate --online --package DIR` applies 0010_" in out
    # a 4.x package (not the beta.29 line): the road's plan
    status, out, _ = run_cli("--dsn", world_41.dsn, "migrate", "status", "--package",
                             str(release_dir("4.3.7")))  # fmt: skip
    assert status == 0 and "pending: 0010_add_events_entity_creation_unique_index, 0015_" in out
