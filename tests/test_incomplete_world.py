"""A world with a table missing is not written to: `info` says it is incomplete (exit 3, the
reason), and every writer refuses with one line before writing anything.

The world is made by the real package (running runs, a sleeping one, one waiting on a hook,
their queue jobs), then `workflow_steps` is dropped, as a botched manual migration leaves it.
"""

from __future__ import annotations

import json
from typing import Any

from tests import realworld as rw
from tests.conftest import Db
from tests.corpus.snapshot import digests

APPLY = ("--apply", "--yes", "--reason", "test")


def broken_world(db: Db) -> dict[str, str]:
    world = rw.RealWorld(db.dsn)
    running, ops = rw.new_run_ops()
    sleeping, more = rw.sleeping_run_ops()
    hooked, hook_ops = rw.hook_waiting_run_ops(token="tok-incomplete")
    world.ok([*ops, *more, *hook_ops, rw.queue(rw.WORKFLOW, {"runId": running})])
    with db.connect() as conn:
        conn.execute("DROP TABLE workflow.workflow_steps CASCADE")
    return {"running": running, "sleeping": sleeping, "hooked": hooked}


def test_info_says_the_world_is_incomplete(real_world: Db, run_cli: Any) -> None:
    broken_world(real_world)
    status, out, err = run_cli("--dsn", real_world.dsn, "info")
    assert status == 3, (out, err)
    assert "INCOMPLETE" in out and "workflow.workflow_steps" in out
    assert err.count("\n") == 1 and "incomplete world" in err
    assert "workflow.workflow_steps missing" in err
    status, out, _ = run_cli("--dsn", real_world.dsn, "--format", "json", "info")
    assert status == 3 and json.loads(out)["missing_tables"] == ["workflow.workflow_steps"]


def test_every_writer_refuses_an_incomplete_world_before_writing(
    real_world: Db, run_cli: Any
) -> None:
    runs = broken_world(real_world)
    before = digests(real_world.dsn)
    writers = [
        ("repair", *APPLY, "--min-age", "1m"),
        ("repair", *APPLY, "--all", "--unlock-older-than", "5m"),
        ("runs", "cancel", "--where", "status=running", *APPLY),
        ("runs", "wake", "--where", "status=running", *APPLY),
        ("runs", "cancel", runs["running"], "--reason", "test"),
        ("runs", "fork", runs["running"], "--reason", "test"),
        ("gc", "--older-than", "1s", *APPLY),
        ("hooks", "resume", "tok-incomplete", "{}"),
    ]
    for args in writers:
        status, out, err = run_cli("--dsn", real_world.dsn, *args)
        assert status == 3, (args, status, out, err)
        assert err.count("\n") == 1 and "incomplete world" in err, (args, err)
        assert "nothing was written" in err
    # bootstrap adopts only an identical world: refused, with the difference
    status, _, err = run_cli("--dsn", real_world.dsn, "bootstrap")
    assert status in (2, 3) and "workflow_steps" in err, err
    assert digests(real_world.dsn) == before  # not one row, not the audit schema
