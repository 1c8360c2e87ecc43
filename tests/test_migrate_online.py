"""`wfctl migrate --online [--swap]` on a real PostgreSQL (issue 5).

Worlds come from the real npm package's bootstrap (`real_world`) or `wfctl bootstrap`; the
slot-era package folders are our own fixtures (tests/fixtures/packages), and the package's
real drizzle migrator is run over them to prove what it does before and after wfctl.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import psycopg
import pytest

from tests.migrate_support import (
    ADVISORY_KEY,
    GUARDED,
    LATER,
    SHIPPED,
    UNKNOWN,
    Blocker,
    Writer,
    backend_gone,
    building_pid,
    checksums,
    drizzle_rows,
    fill,
    key_index_state,
    real_migrator,
    spawn,
    wait_for,
)
from wfctl import sql
from wfctl.errors import ExitStatus
from wfctl.migrate import package as package_mod
from wfctl.world import catalog, drizzle

BETA29_ROWS = [(m.sha256, m.when) for m in drizzle.BETA29]


def recorded_rows(folder, *tags):
    pkg = package_mod.load(folder)
    entries = {e.tag: e for e in pkg.entries}
    return [(pkg.migration(entries[t]).sha256, entries[t].when) for t in tags]


SHIPPED_ROWS = recorded_rows(SHIPPED, "0018_add_hook_token_retention", "0019_add_event_slots")


def assert_slot_world(db, expected_drizzle=None):
    with db.connect() as conn:
        assert catalog.diff(catalog.expected("slot"), catalog.describe(conn)) == []
        if expected_drizzle is not None:
            assert drizzle_rows(conn) == expected_drizzle


def swap(run_cli, db, package=SHIPPED, *extra):
    return run_cli(
        "--dsn", db.dsn, "migrate", "--online", "--swap", "--package", str(package), *extra
    )


# ----------------------------------------------------------------------------- the swap


def test_swap_on_a_real_package_world_gives_the_slot_catalog_and_keeps_data(
    real_world, run_cli, tmp_path
) -> None:
    with real_world.connect() as conn:
        fill(conn)
        before = checksums(conn)
    status, out, err = run_cli(
        "--dsn",
        real_world.dsn,
        "--format",
        "json",
        "migrate",
        "--online",
        "--swap",
        "--package",
        str(SHIPPED),
    )
    assert status == 0, err
    report = json.loads(out)
    assert report["era_before"] == "beta29" and report["era_after"] == "slot"
    assert report["catalog_drift"] == []
    assert [s["action"] for s in report["steps"]] == [
        "done",
        "done",
        "ran",
        "ran",
        "ran",
        "ran",
        "ran",
        "ran",
        "ran",
    ]
    assert [r["tag"] for r in report["replaced"]] == [
        "0018_add_hook_token_retention",
        "0019_add_event_slots",
    ]
    assert report["remaining"] == [] and "nothing remains" in report["advice"]
    assert_slot_world(real_world, BETA29_ROWS + SHIPPED_ROWS)
    with real_world.connect() as conn:
        assert checksums(conn) == before
        assert conn.execute("SELECT count(*) FROM workflow.workflow_events").fetchone() == (4000,)
    # The package's own migrator now finds nothing to apply: no error, no new row.
    done = real_migrator(real_world.dsn, SHIPPED, tmp_path)
    assert done.returncode == 0, done.stderr
    assert_slot_world(real_world, BETA29_ROWS + SHIPPED_ROWS)
    # And wfctl itself converges to "nothing to do".
    status, out, _ = swap(run_cli, real_world)
    assert status == 0 and "ran " not in out


def test_prepare_then_the_real_migrator_adopts_the_index(real_world, run_cli, tmp_path) -> None:
    with real_world.connect() as conn:
        fill(conn, runs=50)
        before = checksums(conn)
    status, out, err = run_cli(
        "--dsn", real_world.dsn, "migrate", "--online", "--package", str(SHIPPED)
    )
    assert status == 0, err
    assert "run the package's migrator now; it adopts this index" in out
    assert key_index_state(real_world.dsn) == "valid"
    with real_world.connect() as conn:
        oid = conn.execute("SELECT to_regclass('workflow.workflow_events_run_id_id_idx')::oid")
        index_oid = oid.fetchone()[0]
    done = real_migrator(real_world.dsn, SHIPPED, tmp_path)
    assert done.returncode == 0, done.stderr
    assert_slot_world(real_world, BETA29_ROWS + SHIPPED_ROWS)
    with real_world.connect() as conn:
        # Adopted, not rebuilt: the key's index is the one wfctl built, renamed.
        key = conn.execute("SELECT to_regclass('workflow.workflow_events_run_id_id_pk')::oid")
        assert key.fetchone()[0] == index_oid
        assert checksums(conn) == before


@pytest.mark.parametrize(
    ("folder", "replaced", "remaining"),
    [
        (SHIPPED, ["0018_add_hook_token_retention", "0019_add_event_slots"], []),
        (GUARDED, ["0018_add_hook_token_retention", "0019_run_scoped_event_keys"], []),
        (
            LATER,
            ["0018_add_hook_token_retention", "0019_add_event_slots"],
            ["0020_add_event_resume_id"],
        ),
    ],
    ids=["shipped", "guarded", "later"],
)
def test_known_package_variants_are_accepted(
    wfctl_world, run_cli, folder, replaced, remaining
) -> None:
    status, out, err = run_cli(
        "--dsn",
        wfctl_world.dsn,
        "--format",
        "json",
        "migrate",
        "--online",
        "--swap",
        "--package",
        str(folder),
    )
    assert status == 0, err
    report = json.loads(out)
    assert [r["tag"] for r in report["replaced"]] == replaced
    assert [r["tag"] for r in report["remaining"]] == remaining
    assert_slot_world(wfctl_world, BETA29_ROWS + recorded_rows(folder, *replaced))
    if remaining:
        assert (
            "run the package's migrator for what remains (0020_add_event_resume_id)"
            in (report["advice"])
        )


def test_the_later_migration_is_left_to_the_real_migrator(real_world, run_cli, tmp_path) -> None:
    status, _, err = swap(run_cli, real_world, LATER)
    assert status == 0, err
    done = real_migrator(real_world.dsn, LATER, tmp_path)
    assert done.returncode == 0, done.stderr
    with real_world.connect() as conn:
        live = catalog.describe(conn)
        rows = drizzle_rows(conn)
    events = live["tables"]["workflow.workflow_events"]
    assert "workflow_events_hook_resume_unique" in events["indexes"]
    assert len(rows) == 21  # 0000-0019 by bootstrap + wfctl, 0020 by the migrator


def test_an_unknown_variant_is_refused_and_nothing_is_written(wfctl_world, run_cli) -> None:
    with wfctl_world.connect() as conn:
        before = catalog.describe(conn), drizzle_rows(conn)
    status, out, err = swap(run_cli, wfctl_world, UNKNOWN)
    assert status == ExitStatus.CRITICAL
    assert out == "" and err.count("\n") == 1
    assert "pending 0018_commit_ordered_event_seq is not a migration wfctl recognises" in err
    assert 'ADD COLUMN "seq" bigserial' in err
    with wfctl_world.connect() as conn:
        assert (catalog.describe(conn), drizzle_rows(conn)) == before


def test_a_package_without_the_key_migration_is_refused(wfctl_world, run_cli, tmp_path) -> None:
    folder = tmp_path / "beta29"
    (folder / "meta").mkdir(parents=True)
    journal = json.loads((SHIPPED / "src/drizzle/migrations/meta/_journal.json").read_text())
    journal["entries"] = journal["entries"][:18]
    (folder / "meta" / "_journal.json").write_text(json.dumps(journal))
    status, _, err = swap(run_cli, wfctl_world, folder)
    assert status == ExitStatus.CRITICAL and "no pending migration swaps the event key" in err
    assert key_index_state(wfctl_world.dsn) is None


# ----------------------------------------------------------------------------- dry run


def test_dry_run_prints_the_plan_and_writes_nothing(wfctl_world, run_cli) -> None:
    with wfctl_world.connect() as conn:
        fill(conn, runs=20)
        before = catalog.describe(conn), drizzle_rows(conn), checksums(conn)
    status, out, err = swap(run_cli, wfctl_world, SHIPPED, "--dry-run", "--lock-timeout", "250")
    assert status == 0, err
    assert "nothing was written" in out
    assert "[RUN ] build-index" in out and "CREATE UNIQUE INDEX CONCURRENTLY" in out
    assert "[RUN ] swap-key" in out
    assert "PRIMARY KEY USING INDEX workflow_events_run_id_id_idx" in out
    lock = "ACCESS EXCLUSIVE on workflow.workflow_events for one catalog statement; "
    assert lock + "lock_timeout 250 ms" in out
    assert f"record: 0019_add_event_slots hash {SHIPPED_ROWS[1][0]}" in out
    status, out, _ = run_cli(
        "--dsn", wfctl_world.dsn, "--format", "json", "migrate", "--online", "--dry-run"
    )
    assert status == 0 and [s["action"] for s in json.loads(out)["steps"]] == [
        "skip",
        "skip",
        "run",
        "run",
    ]
    with wfctl_world.connect() as conn:
        assert (catalog.describe(conn), drizzle_rows(conn), checksums(conn)) == before
        assert conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'wfctl/%%'"
        ).fetchone() == (0,)


# ----------------------------------------------------------------------------- interruptions


def test_cancelled_build_leaves_an_invalid_index_and_a_rerun_rebuilds_it(
    wfctl_world, run_cli
) -> None:
    blocker = Blocker(
        wfctl_world.dsn,
        "INSERT INTO workflow.workflow_events (id, type, run_id) VALUES ('wevt_b', 'x', 'wrun_b')",
    )
    proc = spawn(wfctl_world.dsn, "--online")
    pid = wait_for(lambda: building_pid(wfctl_world.dsn), what="the concurrent build")
    with wfctl_world.connect() as conn:
        wait_for(
            lambda: conn.execute(
                "SELECT phase LIKE 'waiting%%' FROM pg_stat_progress_create_index WHERE pid = %s",
                (pid,),
            ).fetchone(),
            what="the build to wait for the blocker",
        )
        time.sleep(1.0)  # let the progress display poll it
        conn.execute("SELECT pg_cancel_backend(%s)", (pid,))
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == ExitStatus.UNKNOWN, err
    assert "waiting for writers before build" in err  # progress on stderr
    assert "left an INVALID index" in err and "rerun" in err
    blocker.release()
    assert key_index_state(wfctl_world.dsn) == "invalid"
    status, out, _ = run_cli("--dsn", wfctl_world.dsn, "migrate", "status")
    assert status == ExitStatus.WARNING and "INVALID:" in out
    status, out, err = run_cli("--dsn", wfctl_world.dsn, "migrate", "--online")
    assert status == 0, err
    assert "ran  drop-invalid-index" in out and "ran  build-index" in out
    assert key_index_state(wfctl_world.dsn) == "valid"


def test_sigkill_during_the_build_then_rerun_converges(wfctl_world, run_cli) -> None:
    blocker = Blocker(
        wfctl_world.dsn,
        "INSERT INTO workflow.workflow_events (id, type, run_id) VALUES ('wevt_b', 'x', 'wrun_b')",
    )
    proc = spawn(wfctl_world.dsn, "--online", "--swap", "--package", str(SHIPPED))
    pid = wait_for(lambda: building_pid(wfctl_world.dsn), what="the concurrent build")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    # client_connection_check_interval: the server notices the dead client and stops the
    # build, which also releases the single-flight lock.
    wait_for(lambda: backend_gone(wfctl_world.dsn, pid), timeout=10, what="the orphan backend")
    blocker.release()
    assert key_index_state(wfctl_world.dsn) == "invalid"
    status, _, err = swap(run_cli, wfctl_world)
    assert status == 0, err
    assert_slot_world(wfctl_world, BETA29_ROWS + SHIPPED_ROWS)


def test_ctrl_c_during_the_build_exits_130_and_a_rerun_converges(wfctl_world, run_cli) -> None:
    blocker = Blocker(
        wfctl_world.dsn,
        "INSERT INTO workflow.workflow_events (id, type, run_id) VALUES ('wevt_b', 'x', 'wrun_b')",
    )
    proc = spawn(wfctl_world.dsn, "--online")
    pid = wait_for(lambda: building_pid(wfctl_world.dsn), what="the concurrent build")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == ExitStatus.INTERRUPTED
    last = err.splitlines()[-1]
    assert last.startswith("wfctl: error: interrupted (hint: every phase is resumable")
    wait_for(lambda: backend_gone(wfctl_world.dsn, pid), what="the build's session to end")
    blocker.release()
    assert key_index_state(wfctl_world.dsn) == "invalid"
    status, out, _ = run_cli("--dsn", wfctl_world.dsn, "migrate", "--online")
    assert status == 0 and "ran  drop-invalid-index" in out
    assert key_index_state(wfctl_world.dsn) == "valid"


def test_lock_timeout_retries_until_the_holder_lets_go(wfctl_world, run_cli) -> None:
    status, _, _ = run_cli("--dsn", wfctl_world.dsn, "migrate", "--online")
    assert status == 0
    blocker = Blocker(wfctl_world.dsn, "LOCK TABLE workflow.workflow_events IN ACCESS SHARE MODE")
    thread = blocker.release_after(1.2)
    status, out, err = swap(run_cli, wfctl_world, SHIPPED, "--lock-timeout", "150")
    thread.join()
    assert status == 0, err
    assert "lock on workflow.workflow_events not granted within 150 ms (attempt 1/11)" in err
    assert f"held by pid {blocker.pid} (test-blocker" in err and "retrying in" in err
    assert "ran  swap-key" in out and "attempts)" in out
    assert_slot_world(wfctl_world, BETA29_ROWS + SHIPPED_ROWS)


def test_retries_exhausted_changes_nothing_and_a_rerun_finishes(wfctl_world, run_cli) -> None:
    blocker = Blocker(wfctl_world.dsn, "LOCK TABLE workflow.workflow_events IN ACCESS SHARE MODE")
    try:
        status, out, err = swap(
            run_cli, wfctl_world, SHIPPED, "--lock-timeout", "100", "--retries", "1"
        )
        assert status == ExitStatus.UNKNOWN and out == ""
        assert "not granted within 100 ms in 2 attempts" in err.splitlines()[-1]
        assert "nothing was changed by this step" in err
    finally:
        blocker.release()
    with wfctl_world.connect() as conn:
        assert drizzle_rows(conn) == BETA29_ROWS
        assert conn.execute(
            "SELECT conname FROM pg_constraint WHERE conrelid = "
            "'workflow.workflow_events'::regclass AND contype = 'p'"
        ).fetchone() == ("workflow_events_pkey",)
    status, out, _ = swap(run_cli, wfctl_world)
    assert status == 0 and "done build-index" in out and "done hook-column" in out
    assert_slot_world(wfctl_world, BETA29_ROWS + SHIPPED_ROWS)


def test_sigkill_while_waiting_for_the_swap_lock_then_rerun(wfctl_world, run_cli) -> None:
    blocker = Blocker(wfctl_world.dsn, "LOCK TABLE workflow.workflow_events IN ACCESS SHARE MODE")
    proc = spawn(
        wfctl_world.dsn, "--online", "--swap", "--package", str(SHIPPED), "--lock-timeout", "100"
    )
    with wfctl_world.connect() as conn:
        wait_for(
            lambda: conn.execute(
                "SELECT 1 FROM pg_locks WHERE relation = 'workflow.workflow_events'::regclass"
                " AND mode = 'AccessExclusiveLock' AND NOT granted"
            ).fetchone(),
            what="the swap to wait for its lock",
        )
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    blocker.release()
    with wfctl_world.connect() as conn:
        assert drizzle_rows(conn) == BETA29_ROWS
    status, _, err = swap(run_cli, wfctl_world)
    assert status == 0, err
    assert_slot_world(wfctl_world, BETA29_ROWS + SHIPPED_ROWS)


def _phase_sql(name):
    return sql.load(f"migrate/{name}")


# Each prefix is the state a run killed right after that phase leaves behind.
PHASES = [
    "build_key_index",
    "add_hook_token_retention",
    "swap_key",
    "drop_run_id_index",
    "create_event_slots",
]


@pytest.mark.parametrize("done", range(1, len(PHASES) + 1), ids=PHASES)
def test_a_run_killed_after_any_phase_converges_on_rerun(wfctl_world, run_cli, done) -> None:
    with wfctl_world.connect() as conn:
        fill(conn, runs=20)
        before = checksums(conn)
        for name in PHASES[:done]:
            conn.execute(_phase_sql(name))
    status, out, err = swap(run_cli, wfctl_world)
    assert status == 0, err
    assert out.count("done ") >= done
    assert_slot_world(wfctl_world, BETA29_ROWS + SHIPPED_ROWS)
    with wfctl_world.connect() as conn:
        assert checksums(conn) == before


def test_an_interrupted_concurrent_drop_is_finished(wfctl_world, run_cli) -> None:
    with wfctl_world.connect() as conn:
        for name in PHASES[:3]:
            conn.execute(_phase_sql(name))
        # What a cancelled DROP INDEX CONCURRENTLY leaves: the index marked invalid.
        conn.execute(
            "UPDATE pg_index SET indisvalid = false"
            " WHERE indexrelid = 'workflow.workflow_events_run_id_index'::regclass"
        )
    status, out, err = swap(run_cli, wfctl_world)
    assert status == 0, err
    assert "ran  drop-run-id-index" in out and "INVALID leftover of an interrupted drop" in out
    assert_slot_world(wfctl_world, BETA29_ROWS + SHIPPED_ROWS)


# ----------------------------------------------------------------------------- live traffic


def test_a_concurrent_writer_loses_nothing_and_sees_no_error(real_world, run_cli) -> None:
    with real_world.connect() as conn:
        fill(conn, runs=1000, events_per_run=50)  # 50k events: the build takes a moment
    writer = Writer(real_world.dsn)
    writer.start()
    wait_for(lambda: writer.ok > 20, what="the writer to get going")
    try:
        status, _, err = swap(run_cli, real_world)
    finally:
        wait_for(lambda: writer.ok > 0)
        writer.stop.set()
        writer.join(timeout=10)
    assert status == 0, err
    assert writer.errors == []
    with real_world.connect() as conn:
        stored = conn.execute(
            "SELECT count(*) FROM workflow.workflow_events WHERE run_id = 'wrun_writer'"
        ).fetchone()[0]
    assert stored == writer.ok > 50
    assert_slot_world(real_world, BETA29_ROWS + SHIPPED_ROWS)


# ----------------------------------------------------------------------------- single flight


def test_a_second_migration_is_refused_and_told_who_holds_the_lock(wfctl_world, run_cli) -> None:
    with psycopg.connect(wfctl_world.dsn, autocommit=True, application_name="other-migrator") as c:
        c.execute("SELECT pg_advisory_lock(%s, %s)", ADVISORY_KEY)
        pid = c.execute("SELECT pg_backend_pid()").fetchone()[0]
        status, out, err = run_cli("--dsn", wfctl_world.dsn, "migrate", "--online")
        assert status == ExitStatus.CRITICAL and out == ""
        assert f"the wfctl migrate lock is held by pid {pid} (other-migrator" in err
        assert f"pg_terminate_backend({pid})" in err
        status, out, _ = run_cli("--dsn", wfctl_world.dsn, "migrate", "status")
        assert f"held by pid {pid}" in out
    assert key_index_state(wfctl_world.dsn) is None


def test_concurrent_wfctl_runs_do_not_interleave(wfctl_world, run_cli) -> None:
    blocker = Blocker(
        wfctl_world.dsn,
        "INSERT INTO workflow.workflow_events (id, type, run_id) VALUES ('wevt_b', 'x', 'wrun_b')",
    )
    first = spawn(wfctl_world.dsn, "--online")
    wait_for(lambda: building_pid(wfctl_world.dsn), what="the first build")
    status, _, err = run_cli("--dsn", wfctl_world.dsn, "migrate", "--online")
    assert status == ExitStatus.CRITICAL and "CREATE UNIQUE INDEX CONCURRENTLY" in err
    threading.Timer(0.1, blocker.release).start()
    first.communicate(timeout=30)
    assert first.returncode == 0 and key_index_state(wfctl_world.dsn) == "valid"


# ----------------------------------------------------------------------------- duplicates


def test_duplicates_are_reported_before_any_build(wfctl_world, run_cli) -> None:
    with wfctl_world.connect() as conn:
        conn.execute("ALTER TABLE workflow.workflow_events DROP CONSTRAINT workflow_events_pkey")
        conn.execute(
            "INSERT INTO workflow.workflow_events (id, type, run_id)"
            " VALUES ('wevt_1', 'a', 'wrun_1'), ('wevt_1', 'b', 'wrun_1'),"
            " ('wevt_2', 'a', 'wrun_2'), ('wevt_2', 'b', 'wrun_2'), ('wevt_2', 'c', 'wrun_2'),"
            " ('wevt_3', 'a', 'wrun_3')"
        )
    status, _, err = run_cli("--dsn", wfctl_world.dsn, "migrate", "--online")
    assert status == ExitStatus.CRITICAL
    assert "2 (run_id, id) pairs occur more than once" in err
    assert "run wrun_2 id wevt_2 x3; run wrun_1 id wevt_1 x2" in err
    assert key_index_state(wfctl_world.dsn) is None
    with wfctl_world.connect() as conn:
        conn.execute("DELETE FROM workflow.workflow_events WHERE type <> 'a'")
    status, out, err = swap(run_cli, wfctl_world)
    assert status == 0, err
    assert "workflow_events has no primary key: adding (run_id, id)" in out
    assert_slot_world(wfctl_world, BETA29_ROWS + SHIPPED_ROWS)


# ----------------------------------------------------------------------------- eras


def test_a_wfctl_slot_world_gets_the_package_rows_recorded(slot_world, run_cli) -> None:
    status, out, err = swap(run_cli, slot_world)
    assert status == 0, err
    assert "ran  record-migrations" in out
    assert_slot_world(slot_world, BETA29_ROWS + SHIPPED_ROWS)


def test_no_world_exits_unknown(empty_db, run_cli) -> None:
    status, _, err = run_cli("--dsn", empty_db.dsn, "migrate", "--online")
    assert status == ExitStatus.UNKNOWN and "holds no world" in err
