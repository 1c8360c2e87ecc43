"""One decision, whoever else writes: the dry run is the apply rehearsed (same items, same
exit), a duplicate is never "in flight", a repair waits for a live writer's open insert of the
event it would append, and an apply that lost a race to another repairer exits 0, saying so.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta
from typing import Any

import psycopg

from tests.checks.test_wf111 import finished_step_without_event
from tests.checks.test_wf112 import completed_wait_without_event
from tests.checks.test_wf131 import loop_jobs
from tests.conftest import Db
from tests.corpus.snapshot import digests
from tests.repair.conftest import FORCE, events
from wfctl.world.ids import prefixed

APPLY = ("--apply", "--yes", "--reason", "t", *FORCE)


def plan_of(report: dict[str, Any]) -> list[tuple[str, str | None, str, list[str]]]:
    """What a report says is (or will be) written, item by item, dry run and apply alike."""
    outcome = {"planned": "write", "applied": "write"}
    writes = [  # the dry run also names the id scheme and the guards the apply re-checks
        [a for a in i["actions"] if not a.startswith(("id scheme:", "guard:"))]
        for i in report["items"]
    ]
    return [
        (i["code"], i["entity_id"], outcome.get(i["outcome"], i["outcome"]), actions)
        for i, actions in zip(report["items"], writes, strict=True)
    ]


def test_the_dry_run_shows_and_exits_as_the_apply_will(world, real_world, repair, apply) -> None:
    """A wait healed (WF112) then its continuation chains collapsed (WF131) in one run: the
    dry run used to refuse WF131 ("repair WF112 first", exit 2) while the apply did both."""
    run_id, wait_id = completed_wait_without_event(world, real_world, timedelta(minutes=2))
    loop_jobs(world, run_id, wait_id, 3)
    before = digests(real_world.dsn)
    dry_status, dry = repair(real_world, *FORCE, "--only", "WF112,WF131")
    assert digests(real_world.dsn) == before  # rehearsed, rolled back: nothing written
    assert dry["applied"] is False and all(i["event_ids"] == [] for i in dry["items"])
    status, applied = apply(real_world, "--only", "WF112,WF131")
    assert (dry_status, plan_of(dry)) == (status, plan_of(applied)), (dry, applied)
    assert status == 0 and [i["outcome"] for i in applied["items"]] == ["applied", "applied"]
    assert (dry["before"], dry["after"], dry["rounds"]) == (
        applied["before"],
        applied["after"],
        applied["rounds"],
    )


def late_completion(db: Db, run_id: str, step_id: str) -> psycopg.Connection[Any]:
    """A writer's INSERT of the step's step_completed, left uncommitted (the caller commits or
    closes the returned session): beta.29 updates the step row, then inserts its event in a
    second statement; this one is slow to commit."""
    conn = psycopg.connect(db.dsn)
    conn.execute(
        "INSERT INTO workflow.workflow_events (id, type, correlation_id, run_id, payload_cbor,"
        " spec_version) VALUES (%s, 'step_completed', %s, %s, NULL, 1)",
        (prefixed("wevt"), step_id, run_id),
    )
    return conn


def completions(db: Db, run_id: str, step_id: str) -> int:
    return [e[1] for e in events(db, run_id, step_id)].count("step_completed")


def three_days_old(db: Db, run_id: str) -> None:
    with db.connect() as conn:
        conn.execute(
            "UPDATE workflow.workflow_steps SET completed_at = completed_at - interval '3 days',"
            " updated_at = updated_at - interval '3 days', created_at = created_at"
            " - interval '3 days' WHERE run_id = %s",
            (run_id,),
        )


def test_a_live_writers_open_insert_is_waited_for_never_duplicated(
    world, real_world, run_cli
) -> None:
    run_id, step_id = finished_step_without_event(world, real_world, "step_completed")
    three_days_old(real_world, run_id)
    writer = late_completion(real_world, run_id, step_id)
    try:
        started = time.monotonic()
        status, out, err = run_cli(
            "--dsn", real_world.dsn, "--lock-timeout", "1000", "--format", "json",
            "repair", *APPLY, "--only", "WF111",
        )  # fmt: skip
        waited = time.monotonic() - started
        report = json.loads(out)
        [item] = report["items"]
        assert item["outcome"] == "refused" and status == 2, (report, err)
        assert "still open" in item["reason"] and "workflow.workflow_events" in item["reason"]
        assert waited >= 1.0  # it waited out the lock timeout, then refused
        writer.commit()
    finally:
        writer.close()
    assert completions(real_world, run_id, step_id) == 1
    status, out, _ = run_cli(
        "--dsn", real_world.dsn, "--format", "json", "repair", *APPLY, "--only", "WF111"
    )
    assert status == 0 and json.loads(out)["items"] == []


def until_repair_waits_on_a_row(db: Db) -> None:
    """Return once wfctl's repair session waits on a row lock (bounded: 60 s)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not db.scalar(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
        " AND application_name LIKE 'wfctl/%%' AND wait_event_type = 'Lock'"
    ):
        time.sleep(0.02)


def test_a_writer_committing_while_the_repair_waits_is_seen(world, real_world, run_cli) -> None:
    """The writer's insert commits while the repair waits: the re-check under lock sees the
    event, nothing is appended, and the apply exits 0 saying another session healed it."""
    run_id, step_id = finished_step_without_event(world, real_world, "step_completed")
    three_days_old(real_world, run_id)
    writer = late_completion(real_world, run_id, step_id)
    threading.Timer(0.5, writer.commit).start()
    try:
        status, out, err = run_cli(
            "--dsn", real_world.dsn, "--lock-timeout", "20000", "--format", "json",
            "repair", *APPLY, "--only", "WF111",
        )  # fmt: skip
    finally:
        time.sleep(0.6)
        writer.close()
    report = json.loads(out)
    assert status == 0, ([(i["outcome"], i["reason"]) for i in report["items"]], err)
    [item] = report["items"]
    assert item["outcome"] == "skipped" and "another session" in item["reason"]
    assert report["healed_elsewhere"] == 1 and report["after"] == {}
    assert completions(real_world, run_id, step_id) == 1


def test_an_apply_that_lost_the_race_exits_0_and_says_so(world, real_world, run_cli) -> None:
    """Another repairer holds the run and heals it while this apply waits for the run row:
    the finding is gone when it gets there; doctor right after is clean; exit 0, said so."""
    run_id, step_id = finished_step_without_event(world, real_world, "step_completed")
    rival = psycopg.connect(real_world.dsn)
    rival.execute("SELECT 1 FROM workflow.workflow_runs WHERE id = %s FOR UPDATE", (run_id,))
    rival.execute(
        "INSERT INTO workflow.workflow_events (id, type, correlation_id, run_id, payload_cbor,"
        " spec_version) VALUES (%s, 'step_completed', %s, %s, NULL, 1)",
        (prefixed("wevt"), step_id, run_id),
    )

    def commit_once_waited_for() -> None:
        until_repair_waits_on_a_row(real_world)
        rival.commit()

    thread = threading.Thread(target=commit_once_waited_for)
    thread.start()
    try:
        status, out, err = run_cli(
            "--dsn", real_world.dsn, "--lock-timeout", "30000", "--format", "json",
            "repair", *APPLY, "--only", "WF111",
        )  # fmt: skip
    finally:
        thread.join()
        rival.close()
    report = json.loads(out)
    assert status == 0, ([(i["outcome"], i["reason"]) for i in report["items"]], err)
    [item] = report["items"]
    assert item["outcome"] == "skipped" and "another session" in item["reason"], item
    status, _, _ = run_cli("--dsn", real_world.dsn, "doctor", "--min-age", "0s", "--only", "WF111")
    assert status == 0 and completions(real_world, run_id, step_id) == 1


def test_a_duplicate_is_never_in_flight_and_names_wfctls_copy(world, real_world, run_cli) -> None:
    """A repair raced a slow original insert (what the open-writer wait now prevents, but an
    older wfctl or a hand edit could do): doctor at its defaults reports the second
    step_completed at once, not "in flight" for ten minutes, and names the copy wfctl wrote."""
    run_id, step_id = finished_step_without_event(world, real_world, "step_completed")
    status, out, _ = run_cli(
        "--dsn", real_world.dsn, "--format", "json", "repair", *APPLY, "--only", "WF111"
    )
    [item] = json.loads(out)["items"]
    assert status == 0 and item["outcome"] == "applied", out
    [wfctl_copy] = item["event_ids"]
    late_completion(real_world, run_id, step_id).close()  # closed: rolled back
    with late_completion(real_world, run_id, step_id) as conn:
        conn.commit()  # the original, landing late
    assert completions(real_world, run_id, step_id) == 2
    status, out, _ = run_cli("--dsn", real_world.dsn, "--format", "json", "doctor")
    report = json.loads(out)
    [wf141] = [c for c in report["checks"] if c["code"] == "WF141"]
    assert wf141["status"] == "critical" and wf141["count"] == 1 and status == 2, wf141
    detail = wf141["samples"][0]["detail"]
    assert f"step_completed {wfctl_copy} by wfctl repair #{item['audit_id']}" in detail, detail


def test_a_writer_opening_while_the_repair_writes_is_waited_for_before_it_commits(
    world, real_world, run_cli
) -> None:
    """The writer's insert starts after the repair's first look (the repair is then waiting
    for the step row): the repair appends, then, before committing, sees the open writer,
    waits for it, finds its committed copy and rolls back: one step_completed, exit 0."""
    run_id, step_id = finished_step_without_event(world, real_world, "step_completed")
    three_days_old(real_world, run_id)
    holder = psycopg.connect(real_world.dsn)
    holder.execute(
        "SELECT 1 FROM workflow.workflow_steps WHERE step_id = %s FOR UPDATE", (step_id,)
    )
    writers: list[psycopg.Connection[Any]] = []

    def script() -> None:
        until_repair_waits_on_a_row(real_world)  # it holds the run, waits for the step row
        writers.append(late_completion(real_world, run_id, step_id))  # opens after its look
        holder.commit()  # the repair re-checks (the insert is invisible) and appends
        time.sleep(0.5)
        writers[0].commit()  # the original lands while the repair waits to commit

    thread = threading.Thread(target=script)
    thread.start()
    try:
        status, out, err = run_cli(
            "--dsn", real_world.dsn, "--lock-timeout", "20000", "--format", "json",
            "repair", *APPLY, "--only", "WF111",
        )  # fmt: skip
    finally:
        thread.join()
        holder.close()
        for writer in writers:
            writer.close()
    report = json.loads(out)
    assert completions(real_world, run_id, step_id) == 1, report["items"]
    [item] = report["items"]
    assert item["outcome"] == "skipped" and "another session" in item["reason"], item
    assert status == 0, err
