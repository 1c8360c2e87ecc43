"""The read-only commands on a real streaming hot standby, and the write commands refused there.

The primary holds a world made by the real package's migrations (its own bootstrap, rows
written through its `events.create`, one torn write: an orphan step with no wake-up job);
the standby is a `pg_basebackup -R` of it, streaming (tests/standby.py). Each command runs on
the standby once the standby has replayed the primary's WAL, and must report what it reports
on the primary; the write commands must refuse with one line, exit 2, before writing.
Without node/npm the world is `wfctl bootstrap`'s with a hand-written torn run (the same
comparisons hold; only the real package's rows are missing). Skipped only where the
pgserver wheel ships no pg_basebackup.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests import realworld as rw
from tests import standby
from tests.checks.conftest import clean_controls, hand_written_log
from tests.checks.test_wf101 import orphan_step
from tests.conftest import Db, node_available, real_bootstrap
from wfctl.errors import ExitStatus
from wfctl.world.bootstrap import bootstrap

INSTALL = standby.pgserver_install()
pytestmark = pytest.mark.skipif(
    INSTALL is None, reason="pg_basebackup not found beside the pgserver wheel's server"
)
FORCE = ("--min-age", "0s", "--force-min-age")


@dataclass
class Replica:
    pair: standby.Pair
    primary: Db
    standby: Db

    def torn_run(self) -> str:
        """One more torn write on the primary (an orphan step); its run id."""
        if node_available():
            run_id, _ = orphan_step(rw.RealWorld(self.primary.dsn), self.primary)
        else:
            run_id = rw.new_run_id()
            hand_written_log(
                self.primary, run_id, [("run_created", None), ("step_created", rw.new_step_id())]
            )
        return run_id


@pytest.fixture(scope="module")
def replica() -> Iterator[Replica]:
    assert INSTALL is not None
    with standby.replicated(INSTALL) as pair:
        pair.primary.execute("CREATE DATABASE world")
        primary = Db("world", pair.primary.dsn("world"))
        if node_available():
            real_bootstrap(primary.dsn)
            clean_controls(primary)
        else:
            with primary.connect() as conn:
                bootstrap(conn, "beta29")
        made = Replica(pair, primary, Db("world", pair.standby.dsn("world")))
        made.torn_run()
        pair.catch_up()
        yield made


def _json(run_cli: Any, db: Db, *args: str) -> tuple[int, Any, str]:
    status, out, err = run_cli("--dsn", db.dsn, "--format", "json", *args)
    return status, json.loads(out) if out.strip() else None, err


def _findings(report: dict[str, Any]) -> set[tuple[Any, ...]]:
    found: set[tuple[Any, ...]] = {
        (c["code"], s["run_id"], s["entity_id"], s["in_flight"])
        for c in report["checks"]
        for s in c["samples"]
    }
    return found | {(c["code"], c["status"], c["count"], c["in_flight"]) for c in report["checks"]}


def _schemas(db: Db) -> list[str]:
    with db.connect() as conn:
        return [r[0] for r in conn.execute("SELECT nspname FROM pg_namespace ORDER BY 1")]


def test_the_standby_streams_the_primarys_world(replica: Replica) -> None:
    assert replica.standby.scalar("SELECT pg_is_in_recovery()") is True
    assert replica.primary.scalar("SELECT pg_is_in_recovery()") is False
    assert replica.standby.scalar("SELECT status FROM pg_stat_wal_receiver") == "streaming"
    count = "SELECT count(*) FROM workflow.workflow_events"
    assert replica.standby.scalar(count) == replica.primary.scalar(count) > 0


@pytest.mark.parametrize(
    "args",
    [(), ("--all", "--jobs", "1"), ("--all",), ("--all", "--jobs", "2")],
    ids=["live", "all-one-session", "all-default-jobs", "all-jobs-2"],
)
def test_doctor_on_the_standby_reports_what_the_primary_does(
    replica: Replica, run_cli: Any, args: tuple[str, ...]
) -> None:
    """--jobs 2 exports the first session's snapshot and imports it in the second: both work
    on a hot standby, and the shared snapshot sees the replayed world."""
    on_primary = _json(run_cli, replica.primary, "doctor", "--min-age", "0s", *args)
    status, report, err = _json(run_cli, replica.standby, "doctor", "--min-age", "0s", *args)
    assert status == on_primary[0] == ExitStatus.CRITICAL, err
    assert report["database"]["standby"] is True and on_primary[1]["database"]["standby"] is False
    assert report["options"]["jobs"] == on_primary[1]["options"]["jobs"]
    assert _findings(report) == _findings(on_primary[1])
    assert all(c["status"] != "unknown" for c in report["checks"]), report["checks"]
    if node_available():
        assert {c["code"] for c in report["checks"] if c["count"]} >= {"WF101", "WF133"}


@pytest.mark.parametrize(
    ("args", "doing"),
    [
        (("repair", "--apply", "--yes", "--reason", "test", *FORCE), "apply repairs"),
        (("bootstrap",), "bootstrap a world"),
        (("gc", "--apply", "--yes", "--reason", "test", "--older-than", "1s"), "collect garbage"),
        (
            ("runs", "cancel", "--where", "status=running", "--apply", "--yes", "--reason", "t"),
            "cancel runs",
        ),
        (("migrate", "--online"), "migrate the event key"),
    ],
    ids=["repair", "bootstrap", "gc", "runs-cancel", "migrate"],
)
def test_write_commands_refuse_the_standby_with_one_line(
    replica: Replica, run_cli: Any, args: tuple[str, ...], doing: str
) -> None:
    """Before anything is written. In file order this runs before the incremental test gives
    the primary a `wfctl` schema: `repair --apply` would first create its audit schema."""
    schemas = _schemas(replica.standby)
    status, out, err = run_cli("--dsn", replica.standby.dsn, *args)
    assert status == ExitStatus.CRITICAL
    assert err == (
        f"wfctl: error: the server is a read-only standby (pg_is_in_recovery): cannot {doing}"
        " (hint: point the DSN at the primary; nothing was written)\n"
    )
    assert out == ""
    assert _schemas(replica.standby) == schemas  # no half-created audit schema


def test_incremental_on_the_standby_reads_the_primarys_watermark_and_writes_nothing(
    replica: Replica, run_cli: Any
) -> None:
    """No watermark yet: a full pass. After a pass on the primary (replicated), only the runs
    touched since; each pass reports what --all reports there and records nothing."""
    had_wfctl = "wfctl" in _schemas(replica.primary)
    if not had_wfctl:
        status, report, err = _json(run_cli, replica.standby, "doctor", "--incremental")
        full_status, full, _ = _json(run_cli, replica.standby, "doctor", "--all")
        assert status == full_status and _findings(report) == _findings(full), err
        assert "full pass (no watermark yet)" in err
        assert "watermark NOT saved: the server is a read-only standby (pg_is_in_recovery)" in err
        assert "wfctl" not in _schemas(replica.standby)

    status, _, err = _json(run_cli, replica.primary, "doctor", "--incremental")
    assert "watermark saved" in err
    mark = "SELECT verified_to_utc FROM wfctl.doctor_watermark"
    recorded = replica.primary.scalar(mark)
    torn = replica.torn_run()
    replica.pair.catch_up()

    args = ("doctor", "--min-age", "0s", "--limit", "1000")
    status, report, err = _json(run_cli, replica.standby, *args, "--incremental")
    assert " runs since " in err and "watermark NOT saved" in err, err
    assert err.startswith("wfctl doctor --incremental:") and err.count("\n") == 1
    full_status, full, _ = _json(run_cli, replica.standby, *args, "--all")
    assert status == full_status == ExitStatus.CRITICAL
    assert _findings(report) == _findings(full)
    assert torn in {s["run_id"] for c in report["checks"] for s in c["samples"]}
    replica.pair.catch_up()
    assert replica.standby.scalar(mark) == replica.primary.scalar(mark) == recorded


def test_info_says_standby_and_runs_list_reads_the_replica(replica: Replica, run_cli) -> None:
    status, report, err = _json(run_cli, replica.standby, "info")
    assert status == 0, err
    assert report["standby"] is True and report["era"] == "beta29" and report["world"] is True
    assert _json(run_cli, replica.primary, "info")[1]["standby"] is False
    status, out, _ = run_cli("--dsn", replica.standby.dsn, "info")
    assert status == 0 and "read-only hot standby (pg_is_in_recovery)" in out

    status, runs, err = _json(run_cli, replica.standby, "runs", "list", "--limit", "1000")
    assert status == 0, err
    assert runs == _json(run_cli, replica.primary, "runs", "list", "--limit", "1000")[1]
    assert runs


def test_repair_dry_run_on_the_standby_plans_what_the_primary_would(
    replica: Replica, run_cli
) -> None:
    status, plan, err = _json(run_cli, replica.standby, "repair", *FORCE)
    on_primary = _json(run_cli, replica.primary, "repair", *FORCE)
    assert status == on_primary[0], err
    assert plan["applied"] is False and plan["items"]
    assert plan["items"] == on_primary[1]["items"]
    assert {i["outcome"] for i in plan["items"]} == {"planned"}
