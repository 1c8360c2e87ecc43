"""WF143: a completion sorting before its entity's creation event."""

from __future__ import annotations

from tests import realworld as rw
from tests.checks.conftest import assert_fires
from tests.faults import fail_insert
from wfctl.world import ids


def completed_wait_without_wait_created(world: rw.RealWorld, conn) -> tuple[str, str]:
    """Through the real write path: wait_created's event insert fails once (row only), then
    the wait is completed (wait_completed needs only the row): the log has wait_completed and
    no wait_created (WF102)."""
    run_id, wait_id = world.new_run(), rw.new_wait_id()
    when = rw.utcnow()
    with fail_insert(conn, "workflow_events", run_id, "wait_created"):
        assert not world.ops([rw.wait_created(run_id, wait_id, when)])[0]["ok"]
    world.ok([rw.wait_completed(run_id, wait_id, when)])
    return run_id, wait_id


def test_wait_created_appended_after_the_wait_completed(world, real_world, doctor) -> None:
    """What a naive tail repair of the state above writes: no package path writes a
    wait_created after the wait's completion (the world refuses it: 'already exists'), so the
    event is inserted by hand, at the tail."""
    with real_world.connect() as conn:
        run_id, wait_id = completed_wait_without_wait_created(world, conn)
        _, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF143")
        assert checks["WF143"]["count"] == 0  # no creation event at all: that is WF102's
        conn.execute(
            "INSERT INTO workflow.workflow_events (id, type, correlation_id, run_id)"
            " VALUES (%s, 'wait_created', %s, %s)",
            ("wevt_" + ids.new_ulid(), wait_id, run_id),
        )
    check = assert_fires(doctor, real_world, "WF143", wait_id)
    assert check["samples"][0]["detail"].startswith("wait_completed")
