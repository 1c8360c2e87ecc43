"""WF142: hook_received before hook_created, produced through the real orphan-hook window."""

from __future__ import annotations

from tests import realworld as rw
from tests.checks.conftest import assert_fires
from tests.faults import fail_insert


def test_hook_resumed_inside_the_orphan_hook_window(world, real_world, doctor) -> None:
    """beta.29's hook_created: row, then event (two autocommits). The event insert fails once;
    a resume inside the window needs only the row; the next hook_created heals the orphan,
    so the completed run's log holds hook_received before hook_created."""
    run_id, hook_id = world.new_run(), rw.new_hook_id()
    token = f"tok-{hook_id[-8:]}"
    with (
        real_world.connect() as conn,
        fail_insert(conn, "workflow_events", run_id, "hook_created"),
    ):
        first = world.ops([rw.hook_created(run_id, hook_id, token)])
    assert not first[0]["ok"]  # row written, event lost
    world.ok(
        [
            rw.hook_received(run_id, hook_id, rw.devl('["hi"]'), token),
            rw.hook_created(run_id, hook_id, token),  # the orphan repair path (c)
            rw.run_completed(run_id),
        ]
    )
    # default scope: the run is over, nothing to say; --all: the history is reported (info)
    _, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF142")
    assert checks["WF142"]["count"] == 0
    check = assert_fires(doctor, real_world, "WF142", hook_id, "--all")
    assert "sorts before hook_created" in check["samples"][0]["detail"]
    # a healthy hook (created, received, disposed in order) is not reported
    other, other_hook = world.new_run(), rw.new_hook_id()
    world.ok(
        [
            rw.hook_created(other, other_hook, "tok-ok"),
            rw.hook_received(other, other_hook, rw.devl("[1]"), "tok-ok"),
            rw.hook_disposed(other, other_hook, "tok-ok"),
        ]
    )
    _, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF142", "--all")
    assert {s["entity_id"] for s in checks["WF142"]["samples"]} == {hook_id}
