"""WF153: a wait row's resume_at differs from its wait_created's resumeAt."""

from __future__ import annotations

from datetime import datetime, timedelta

from tests import realworld as rw
from tests.checks.conftest import assert_fires
from tests.conftest import Db
from tests.faults import fail_insert


def sleeping(world: rw.RealWorld) -> tuple[str, str, datetime]:
    """A running run parked on a one-hour wait, written by the package: (run, wait, resumeAt)."""
    run_id, wait_id = world.new_run(), rw.new_wait_id()
    resume_at = (rw.utcnow() + timedelta(hours=1)).replace(microsecond=123000)
    world.ok([rw.wait_created(run_id, wait_id, resume_at)])
    return run_id, wait_id, resume_at


def woken_by_hand(world: rw.RealWorld, db: Db) -> tuple[str, str, datetime]:
    """The operator's "wake it now": the row's resume_at moved, the event untouched."""
    run_id, wait_id, resume_at = sleeping(world)
    with db.connect() as conn:
        conn.execute(
            "UPDATE workflow.workflow_waits SET resume_at = resume_at - interval '1 hour'"
            " WHERE wait_id = %s",
            (f"{run_id}-{wait_id}",),
        )
    return run_id, wait_id, resume_at


def test_the_package_never_moves_the_rows_deadline(world, real_world, doctor) -> None:
    """How a second pass with a recomputed deadline ends on beta.29: pass A's row landed and
    its event failed (a crash); pass B, replaying with a later resumeAt, is refused ("already
    exists", no event, no update). The row keeps pass A's instant and the wait is WF102's
    orphan, whose repair journals exactly that instant; row and log never disagree."""
    run_id, wait_id = world.new_run(), rw.new_wait_id()
    first = (rw.utcnow() + timedelta(minutes=30)).replace(microsecond=0)
    with real_world.connect() as conn, fail_insert(conn, "workflow_events", run_id, "wait_created"):
        [torn] = world.ops([rw.wait_created(run_id, wait_id, first)])
    assert not torn["ok"]
    [second] = world.ops([rw.wait_created(run_id, wait_id, first + timedelta(seconds=90))])
    assert second["error"] == "EntityConflictError" and "already exists" in second["message"]
    with real_world.connect() as conn:
        [(on_row,)] = conn.execute(
            "SELECT resume_at FROM workflow.workflow_waits WHERE run_id = %s", (run_id,)
        ).fetchall()
    assert on_row == first.replace(tzinfo=None)
    _, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF153,WF102")
    assert checks["WF153"]["count"] == 0 and checks["WF102"]["count"] == 1, checks


def test_a_hand_moved_deadline(world, real_world, doctor) -> None:
    run_id, wait_id, resume_at = woken_by_hand(world, real_world)
    check = assert_fires(doctor, real_world, "WF153", wait_id)
    [sample] = check["samples"]
    assert sample["run_id"] == run_id
    assert sample["detail"].endswith("(-3600.000 s)")
    assert resume_at.isoformat(timespec="milliseconds").replace("+00:00", "Z") in sample["detail"]


def test_package_written_waits_are_silent(world, real_world, doctor) -> None:
    """Every deadline the package wrote, milliseconds included, reads back equal (the event's
    CBOR float64 seconds is a fraction of a microsecond off the row: compared in ms)."""
    for _ in range(3):
        sleeping(world)
    world.clean_world()
    status, checks, _ = doctor(real_world, "--min-age", "0s", "--all", "--only", "WF153")
    assert checks["WF153"]["count"] == 0 and checks["WF153"]["in_flight"] == 0
    assert status == 0
