"""A repaired run must still replay: a restored completion goes where every replay consumes it.

The shape: a step's row is completed but its step_completed event is lost, and the hook the
workflow creates only AFTER that step returned is in the log (`flows.approval`: add, then
create_hook, await it). Appended at the tail, the restored step_completed sorts after that
hook_created: the replay (wfctl's engine, like core beta.39's EventsConsumer, reads the log
strictly in id order and only consumes events of entities the code has asked for) meets a
hook the code has not created yet and fails the run with REPLAY_DIVERGENCE. The repair must
place it before the hook_created (legacy runs: a wevt_ id minted between the neighbours) or,
where only appending is possible (slot runs), refuse and say why.

The event is deleted by SQL: wfctl's store writes a step's row and its event in one
transaction, so no wfctl path can lose it, and the real package writes this step's completion
and the next hook from different deliveries (tests/repair covers its torn writes). The row
state left behind is exactly beta.29's torn step_completed (row completed, no event).
"""

from __future__ import annotations

import json
from typing import Any

from tests.runtime import flows
from tests.runtime.conftest import doctor_clean
from tests.runtime.test_store import drive, events
from wfctl.runtime import engine as eng
from wfctl.runtime import serde
from wfctl.runtime.executor import create
from wfctl.runtime.store import Store

REPAIR = ("repair", "--apply", "--yes", "--reason", "test", "--min-age", "0s", "--force-min-age")


def _lose_step_completed(conn: Any, run_id: str) -> str:
    """Delete the run's first step_completed event; its step id."""
    row = conn.execute(
        "DELETE FROM workflow.workflow_events WHERE id = (SELECT min(id) FROM"
        " workflow.workflow_events WHERE run_id=%s AND type='step_completed')"
        " RETURNING correlation_id",
        (run_id,),
    ).fetchone()
    assert row is not None
    return str(row[0])


def _replay(store: Store, run_id: str, log: list[eng.Event]) -> eng.Outcome:
    run = store.read_run(run_id)
    assert run is not None
    return eng.Engine(run_id, flows.approval.fn, list(serde.loads(run.input))).feed_all(log)


def test_restored_completion_is_placed_before_the_hook_created_after_it(
    store, conn, run_cli, world
) -> None:
    run_id = create(flows.approval, ["p5"], conn=conn).run_id
    assert drive(store, run_id).status == "running"  # parked on the hook
    intact = store.read_events(run_id)
    step_id = _lose_step_completed(conn, run_id)
    types = [(e[1], e[2]) for e in events(conn, run_id)]
    assert types[-1][0] == "hook_created" and ("step_completed", step_id) not in types

    # Why the tail is wrong: the completion after the hook_created diverges in the engine.
    completion = next(e for e in intact if e.type == "step_completed")
    at_tail = [e for e in intact if e.id != completion.id] + [completion]
    diverged = _replay(store, run_id, at_tail)
    assert isinstance(diverged, eng.Diverged) and "hook" in diverged.message

    status, out, err = run_cli("--dsn", world.dsn, "--format", "json", *REPAIR, "--only", "WF111")
    report = json.loads(out)
    [item] = [i for i in report["items"] if i["code"] == "WF111"]
    after = events(conn, run_id)
    if store.scheme(run_id) == "slot":
        # Only appending is possible: refused, with the reason, and nothing written.
        assert status != 0 and item["outcome"] == "refused", (out, err)
        assert "hook_created" in item["reason"] and "slot-numbered" in item["reason"]
        assert [e[1] for e in after] == [t for t, _ in types]
        return
    assert status == 0 and item["outcome"] == "applied", (out, err)
    assert any("placed before hook_created" in a for a in item["actions"])
    order = [(e[1], e[2]) for e in after]
    assert order.index(("step_completed", step_id)) < order.index(
        next(t for t in order if t[0] == "hook_created")
    )
    assert order.count(("step_completed", step_id)) == 1
    created = [e.created_at for e in store.read_events(run_id)]
    assert created == sorted(created)  # the replay clock never goes backwards

    # wfctl's runtime replays the repaired log, waits on the hook, and finishes the run.
    assert drive(store, run_id).status == "running"
    status, _, err = run_cli("--dsn", world.dsn, "hooks", "resume", "approve-p5", '"yes"')
    assert status == 0, err
    done = drive(store, run_id)
    assert done.status == "completed", done
    assert done.output == {"decision": "yes", "sum": 13}
    assert flows.calls.get("add") == 2  # the repaired step was not run again
    doctor_clean(run_cli, world.dsn)


def test_hook_received_before_hook_created_replays(store, conn, run_cli, world) -> None:
    """WF142's shape (a resume inside beta.29's orphan-hook window journals hook_received
    before hook_created) is informational because both runtimes replay it: core beta.39's
    hook consumer takes a payload before the creation event, and so does wfctl's engine."""
    run_id = create(flows.approval, ["p6"], conn=conn).run_id
    drive(store, run_id)
    status, _, err = run_cli("--dsn", world.dsn, "hooks", "resume", "approve-p6", '"ok"')
    assert status == 0, err
    done = drive(store, run_id)
    assert done.status == "completed"
    log = [e for e in store.read_events(run_id) if e.type != "run_completed"]
    created = next(i for i, e in enumerate(log) if e.type == "hook_created")
    received = next(i for i, e in enumerate(log) if e.type == "hook_received")
    swapped = list(log)
    swapped[created], swapped[received] = log[received], log[created]
    outcome = _replay(store, run_id, swapped)
    assert isinstance(outcome, eng.Completed), outcome
    assert serde.loads(outcome.output) == done.output
