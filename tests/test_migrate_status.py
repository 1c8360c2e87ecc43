"""`wfctl migrate status`, the package reader and recogniser, and the command's CLI contract."""

from __future__ import annotations

import hashlib
import json

import pytest

from tests.migrate_support import GUARDED, LATER, SHIPPED, UNKNOWN, fill
from wfctl.errors import ExitStatus, RefusedError, UsageError
from wfctl.migrate import package as package_mod
from wfctl.migrate import recognise
from wfctl.world import drizzle

# ----------------------------------------------------------------------------- status


def test_status_lists_pending_migrations_with_their_locks(real_world, run_cli) -> None:
    with real_world.connect() as conn:
        fill(conn, runs=100)
    status, out, err = run_cli(
        "--dsn", real_world.dsn, "migrate", "status", "--package", str(SHIPPED)
    )
    # A warning: as the world stands, the migrator would build the index under its lock.
    assert status == ExitStatus.WARNING, err
    assert "event key:    workflow_events_pkey PRIMARY KEY (id)" in out
    assert "recorded:     18 drizzle migrations, latest 0017_add_hook_resume_context" in out
    assert "pending:      2, applied in ONE transaction:" in out
    assert "lock: ACCESS EXCLUSIVE on workflow.workflow_hooks: catalog only" in out
    assert "lock: SHARE on workflow.workflow_events: blocks writes for a full index build over" in (
        out
    )
    assert "~2,000 rows" in out
    assert "workflow.workflow_events: ACCESS EXCLUSIVE until the migrator commits" in out
    assert "including an index build over workflow.workflow_events" in out
    assert "online swap:  possible" in out


def test_status_json_after_prepare_says_the_build_is_gone(real_world, run_cli) -> None:
    assert run_cli("--dsn", real_world.dsn, "migrate", "--online")[0] == 0
    status, out, _ = run_cli(
        "--dsn", real_world.dsn, "--format", "json", "migrate", "status", "--package", str(SHIPPED)
    )
    assert status == 0
    report = json.loads(out)
    assert report["era"] == "beta29" and report["key_index"] == "valid"
    assert [p["tag"] for p in report["pending"]] == [
        "0018_add_hook_token_retention",
        "0019_add_event_slots",
    ]
    events = next(b for b in report["would_block"] if b["table"] == "workflow.workflow_events")
    # The prebuilt index is adopted: only catalog work remains under the exclusive lock.
    assert events["index_builds"] == 0 and "catalog work only" in events["summary"]
    kinds = [s["kind"] for s in report["pending"][1]["statements"]]
    assert kinds == [
        "adopt_key_index",
        "swap_key_using_index",
        "drop_run_id_index",
        "create_event_slots",
    ]


def test_status_of_the_guarded_variant_shows_the_build_under_the_exclusive_lock(
    wfctl_world, run_cli
) -> None:
    assert run_cli("--dsn", wfctl_world.dsn, "migrate", "--online")[0] == 0
    status, out, _ = run_cli(
        "--dsn", wfctl_world.dsn, "--format", "json", "migrate", "status", "--package", str(GUARDED)
    )
    report = json.loads(out)
    guarded = report["pending"][1]["statements"][0]
    assert guarded["kind"] == "guarded_key_swap"
    assert "blocks all reads and writes for a full index build" in guarded["lock_text"]
    events = next(b for b in report["would_block"] if b["table"] == "workflow.workflow_events")
    assert events["index_builds"] == 1 and events["blocks"] == "all reads and writes"
    # Prepare-only advice for this package: do not run its migrator as is.
    status, out, _ = run_cli(
        "--dsn", wfctl_world.dsn, "migrate", "--online", "--package", str(GUARDED)
    )
    assert status == 0 and "does not adopt the prebuilt index" in out and "--swap" in out


def test_status_warns_about_unrecognised_packages(wfctl_world, run_cli) -> None:
    status, out, _ = run_cli(
        "--dsn", wfctl_world.dsn, "migrate", "status", "--package", str(UNKNOWN)
    )
    assert status == ExitStatus.WARNING
    assert "0018_commit_ordered_event_seq (when 1786060800000)  [locks estimated; not " in out
    assert "blocks all reads and writes (may rewrite or scan the whole table" in out
    assert "online swap:  refused: " in out and "is not a migration wfctl recognises" in out
    with wfctl_world.connect() as conn:
        conn.execute(
            "INSERT INTO workflow_drizzle.workflow_migrations (hash, created_at)"
            " VALUES ('x', 1786060800000)"
        )
    status, out, _ = run_cli(
        "--dsn", wfctl_world.dsn, "--format", "json", "migrate", "status", "--package", str(UNKNOWN)
    )
    report = json.loads(out)
    assert report["recorded"][-1] == {"tag": "0018_commit_ordered_event_seq", "when": 1786060800000}


def test_status_without_a_package_and_after_the_swap(wfctl_world, run_cli) -> None:
    status, out, _ = run_cli("--dsn", wfctl_world.dsn, "migrate", "status")
    assert status == 0 and "give --package DIR" in out
    assert (
        run_cli("--dsn", wfctl_world.dsn, "migrate", "--online", "--swap", "--package", str(LATER))[
            0
        ]
        == 0
    )
    status, out, _ = run_cli("--dsn", wfctl_world.dsn, "migrate", "status", "--package", str(LATER))
    assert status == ExitStatus.WARNING  # 0020 builds an index under the migrator's lock
    assert "recorded:     20 drizzle migrations, latest 0019_add_event_slots" in out
    assert "0020_add_event_resume_id (when 1787270400000)  [locks estimated; " in out
    assert "SHARE on workflow.workflow_events: blocks writes for a full index build" in out
    assert "online swap:  nothing to swap" in out


def test_status_flags_journal_entries_drizzle_will_never_apply(wfctl_world, run_cli) -> None:
    # The 4.3.7 -> beta.29 hazard (reference §1.6): a recorded later `when` hides older ones.
    with wfctl_world.connect() as conn:
        conn.execute(
            "DELETE FROM workflow_drizzle.workflow_migrations WHERE created_at = %s",
            (drizzle.BETA29[12].when,),
        )
    status, out, _ = run_cli(
        "--dsn", wfctl_world.dsn, "migrate", "status", "--package", str(SHIPPED)
    )
    assert status == ExitStatus.WARNING
    assert "never applied: 0012_add_is_system" in out


def test_status_with_no_world_exits_unknown(empty_db, run_cli) -> None:
    status, out, err = run_cli("--dsn", empty_db.dsn, "migrate", "status")
    assert status == ExitStatus.UNKNOWN and "no world" in out and "bootstrap" in err


# ----------------------------------------------------------------------------- the package


def test_package_reads_the_journal_and_hashes_like_drizzle() -> None:
    pkg = package_mod.load(SHIPPED)
    assert pkg.version == "5.0.0-beta.32"
    assert [(e.tag, e.when) for e in pkg.entries[:18]] == [(m.tag, m.when) for m in drizzle.BETA29]
    pending = pkg.pending(drizzle.LATEST_KNOWN_WHEN)
    assert [e.tag for e in pending] == ["0018_add_hook_token_retention", "0019_add_event_slots"]
    m = pkg.migration(pending[1])
    assert m.sha256 == hashlib.sha256(m.path.read_bytes()).hexdigest()
    assert len(m.chunks()) == 4
    # The migrations folder itself is accepted too.
    assert package_mod.load(SHIPPED / "src" / "drizzle" / "migrations").entries == pkg.entries


def test_package_folder_errors(tmp_path) -> None:
    with pytest.raises(UsageError, match="not a directory"):
        package_mod.load(tmp_path / "nope")
    with pytest.raises(UsageError, match=r"no src/drizzle/migrations/meta/_journal\.json"):
        package_mod.load(tmp_path)
    (tmp_path / "meta").mkdir()
    journal = json.loads((SHIPPED / "src/drizzle/migrations/meta/_journal.json").read_text())
    journal["entries"][3]["when"] += 1
    (tmp_path / "meta" / "_journal.json").write_text(json.dumps(journal))
    with pytest.raises(RefusedError, match="journal entry 3 is 0003_add_stream_run_id"):
        package_mod.load(tmp_path)
    (tmp_path / "meta" / "_journal.json").write_text("{not json")
    with pytest.raises(UsageError, match="unreadable journal"):
        package_mod.load(tmp_path)


@pytest.mark.parametrize(
    ("folder", "recognised", "adopts"),
    [
        (SHIPPED, [True, True], True),
        (GUARDED, [True, True], False),
        (LATER, [True, True, False], True),
        (UNKNOWN, [False, False], False),
    ],
    ids=["shipped", "guarded", "later", "unknown"],
)
def test_recognition_of_the_fixture_variants(folder, recognised, adopts) -> None:
    pkg = package_mod.load(folder)
    analyses = [pkg.migration(e).analyse() for e in pkg.pending(drizzle.LATEST_KNOWN_WHEN)]
    assert [a.recognised for a in analyses] == recognised
    assert analyses[1].adopts_prebuilt_index is adopts


def test_split_statements_keeps_dollar_bodies_and_drops_comments() -> None:
    text = (
        "-- leading comment; with a semicolon\n"
        "CREATE TABLE x (a text DEFAULT 'a;b''c'); /* block; comment */\n"
        "DO $body$ BEGIN -- inner; comment\n PERFORM 1; END $body$;\n"
        "SELECT 2"
    )
    parts = recognise.split_statements(text)
    assert parts[0] == "CREATE TABLE x (a text DEFAULT 'a;b''c');"
    assert parts[1].startswith("DO $body$ BEGIN") and "PERFORM 1;" in parts[1]
    assert "inner" not in parts[1]
    assert parts[2] == "SELECT 2;"


@pytest.mark.parametrize(
    "statement",
    [
        # A condition that writes is not a read-only guard.
        "DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_constraint WHERE conname = "
        "'workflow_events_run_id_id_pk' AND pg_terminate_backend(1)) THEN RETURN; END IF; "
        "DROP INDEX workflow.workflow_events_run_id_index; END $$;",
        # An unnamed key would be called workflow_events_pkey: not the slot-era key.
        'ALTER TABLE "workflow"."workflow_events" ADD PRIMARY KEY ("run_id","id");',
        # The key on other columns.
        "ALTER TABLE workflow.workflow_events ADD CONSTRAINT workflow_events_run_id_id_pk "
        "PRIMARY KEY (id, run_id);",
        # Adopt block that builds something else.
        "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_index WHERE indisvalid AND "
        "indexrelid = 'workflow.workflow_events_run_id_id_idx'::regclass) THEN "
        "CREATE INDEX workflow_events_run_id_id_idx ON workflow.workflow_events (run_id); "
        "END IF; END $$;",
    ],
)
def test_lookalike_statements_are_not_recognised(statement) -> None:
    (parsed,) = recognise.split_statements(statement)
    assert not recognise.classify(parsed).known  # at most a generic lock estimate


def test_spelling_variants_of_known_statements_are_recognised() -> None:
    for text, kind in [
        (
            "alter table workflow.workflow_hooks add column if not exists "
            "token_retention_until timestamptz;",
            "add_hook_token_retention",
        ),
        ("DROP INDEX workflow.workflow_events_run_id_index", "drop_run_id_index"),
        (
            'CREATE TABLE "workflow"."workflow_event_slots"'
            ' ("run_id" varchar NOT NULL PRIMARY KEY)',
            "create_event_slots",
        ),
    ]:
        (parsed,) = recognise.split_statements(text)
        assert recognise.classify(parsed).kind == kind


# ----------------------------------------------------------------------------- CLI contract


@pytest.mark.parametrize("command", [["migrate"], ["migrate", "status"]])
def test_help_has_examples(run_cli, command) -> None:
    status, out, _ = run_cli(*command, "--help")
    assert status == 0
    assert "Examples" in out and "wfctl " in out.split("Examples", 1)[1]


def test_bare_migrate_teaches(run_cli) -> None:
    status, out, _ = run_cli("migrate")
    assert status == 0 and "--online" in out and "status" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--online", "--swap"], "--swap needs --package DIR"),
        (["--swap"], "these options need --online"),
        (["--online", "--lock-timeout", "0"], "--lock-timeout must be above 0"),
        (["--online", "--retries", "101"], "--retries must be between 0 and 100"),
        (["--online", "status"], "do not combine with `migrate status`"),
        (["--online", "--swap", "--package", "/nonexistent"], "not a directory"),
    ],
)
def test_usage_errors(run_cli, args, message) -> None:
    status, out, err = run_cli("--dsn", "postgresql://x@127.0.0.1:1/x", "migrate", *args)
    assert status == ExitStatus.USAGE and out == ""
    assert message in err and err.count("\n") == 1


def test_formats_the_command_does_not_offer(run_cli) -> None:
    status, _, err = run_cli(
        "--format", "prometheus", "--dsn", "postgresql://x@127.0.0.1:1/x", "migrate", "--online"
    )
    assert status == ExitStatus.USAGE and "--format prometheus" in err
