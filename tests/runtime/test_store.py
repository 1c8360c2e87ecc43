"""Store transitions and the executor on real worlds of both eras."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from tests.runtime import flows
from tests.runtime.conftest import doctor_clean
from wfctl.runtime import serde
from wfctl.runtime.executor import Executor, create
from wfctl.runtime.store import GuardError, Store
from wfctl.world import codec, ids


def events(conn: Any, run_id: str) -> list[tuple[str, str, str | None]]:
    return conn.execute(
        "SELECT id, type, correlation_id FROM workflow.workflow_events WHERE run_id=%s ORDER BY id",
        (run_id,),
    ).fetchall()


def drive(store: Store, run_id: str, **kw: Any) -> Any:
    ex = Executor(flows.wf, store)
    try:
        return ex.drive(run_id, **kw)
    finally:
        ex.close()


def test_run_creation_is_one_transaction_with_the_right_first_event(store, conn, world) -> None:
    created = create(flows.sequential, [3], conn=conn)
    (first,) = events(conn, created.run_id)
    assert first[1] == "run_created"
    if store.slots:
        assert first[0] == ids.slot_event_id(1)
        assert conn.execute(
            "SELECT 1 FROM workflow.workflow_event_slots WHERE run_id=%s", (created.run_id,)
        ).fetchone()
    else:
        assert ids.is_legacy_event_id(first[0])
    row = conn.execute(
        "SELECT status::text, spec_version, input_cbor, deployment_id FROM workflow.workflow_runs"
        " WHERE id=%s",
        (created.run_id,),
    ).fetchone()
    assert row[0] == "pending" and row[1] == "5" and row[3] == "wfctl"
    assert codec.decode(row[2]) == b"devl[[1],3]"


def test_sequential_run_completes_with_every_row_and_event(store, conn, run_cli, world) -> None:
    run_id = create(flows.sequential, [5], conn=conn).run_id
    done = drive(store, run_id)
    assert done.status == "completed" and done.output == 10
    types = [e[1] for e in events(conn, run_id)]
    assert types[:2] == ["run_created", "run_started"]
    assert types[-1] == "run_completed"
    assert types.count("step_created") == types.count("step_completed") == 5
    ids_ = [e[0] for e in events(conn, run_id)]
    if store.slots:
        assert ids_ == [ids.slot_event_id(n) for n in range(1, len(ids_) + 1)]
    steps = conn.execute(
        "SELECT status::text, attempt FROM workflow.workflow_steps WHERE run_id=%s", (run_id,)
    ).fetchall()
    assert steps == [("completed", 1)] * 5
    doctor_clean(run_cli, world.dsn)


def test_one_commit_per_sequential_step(store, conn, world) -> None:
    run_id = create(flows.sequential, [40], conn=conn).run_id

    def commits() -> int:
        with __import__("psycopg").connect(world.dsn, autocommit=True) as c:
            return int(
                c.execute(
                    "SELECT xact_commit FROM pg_stat_database WHERE datname=current_database()"
                ).fetchone()[0]
            )

    conn.execute("SELECT pg_stat_clear_snapshot()")
    before = commits()
    drive(store, run_id)
    time.sleep(0.6)  # stats are flushed by backends at most every 500 ms... of idle
    after = commits()
    # 40 steps; a few commits for reads, locks and the run's first/last transactions
    assert after - before <= 40 + 15, after - before


def test_parallel_steps_with_gather(store, conn, run_cli, world) -> None:
    run_id = create(flows.parallel, [[1, 2, 3, 4]], conn=conn).run_id
    done = drive(store, run_id)
    assert done.status == "completed" and done.output == [2, 4, 6, 8]
    doctor_clean(run_cli, world.dsn)


def test_retries_then_success(store, conn, run_cli, world) -> None:
    run_id = create(flows.retrying, ["r1", 2], conn=conn).run_id
    done = drive(store, run_id, wait=True, timeout=10)
    assert done.status == "completed" and done.output == "ok after 3"
    types = [e[1] for e in events(conn, run_id)]
    assert types.count("step_retrying") == 2 and types.count("step_started") == 3
    assert conn.execute(
        "SELECT attempt, retry_after FROM workflow.workflow_steps WHERE run_id=%s", (run_id,)
    ).fetchone() == (3, None)
    doctor_clean(run_cli, world.dsn)


def test_retries_exhausted_fail_the_step_and_the_run(store, conn, world) -> None:
    run_id = create(flows.retrying, ["r2", 9], conn=conn).run_id
    done = drive(store, run_id, wait=True, timeout=10)
    assert done.status == "failed" and done.error_code == "USER_ERROR"
    assert flows.calls["flaky:r2"] == 3  # max_retries=2 -> 3 attempts


def test_fatal_error_is_not_retried(store, conn) -> None:
    run_id = create(flows.failing, ["f"], conn=conn).run_id
    done = drive(store, run_id)
    assert done.status == "failed" and flows.calls["fatal:f"] == 1
    assert "no retry for this" in done.error


def test_unserialisable_step_result_fails_clearly(store, conn) -> None:
    run_id = create(flows.bad_result, [], conn=conn).run_id
    done = drive(store, run_id)
    assert done.status == "failed"
    assert "cannot serialise a value of type object" in done.error


def test_unserialisable_input_refused_at_start(conn) -> None:
    with pytest.raises(serde.SerializationError, match="the input of workflow"):
        create(flows.not_json, [object()], conn=conn)


def test_durable_sleep_blocks_then_completes(store, conn, run_cli, world) -> None:
    run_id = create(flows.sleeper, [0.3], conn=conn).run_id
    first = drive(store, run_id)  # no --wait: stops at the sleep
    assert first.status == "running"
    assert conn.execute(
        "SELECT status::text FROM workflow.workflow_waits WHERE run_id=%s", (run_id,)
    ).fetchone() == ("waiting",)
    doctor_clean(run_cli, world.dsn)
    done = drive(store, run_id, wait=True, timeout=10)
    assert done.status == "completed" and done.output["slept"] >= 0.3
    # waits are deleted with the terminal event
    assert conn.execute(
        "SELECT count(*) FROM workflow.workflow_waits WHERE run_id=%s", (run_id,)
    ).fetchone() == (0,)


def test_replay_after_pickup_gives_the_same_deterministic_values(store, conn) -> None:
    run_id = create(flows.sleeper, [0.2], conn=conn).run_id
    drive(store, run_id)  # blocks at the sleep; the coroutine is dropped
    done = drive(store, run_id, wait=True, timeout=10)  # a fresh pickup replays the log
    r = done.output["r"]
    run_again = create(flows.sleeper, [0.0], run_id=run_id, conn=conn)
    assert run_again.existing
    assert drive(store, run_id).output["r"] == r


def test_hooks_resume_and_dispose(store, conn, run_cli, world) -> None:
    run_id = create(flows.approval, ["o1"], conn=conn).run_id
    assert drive(store, run_id).status == "running"
    assert conn.execute(
        "SELECT token FROM workflow.workflow_hooks WHERE run_id=%s", (run_id,)
    ).fetchone() == ("approve-o1",)
    doctor_clean(run_cli, world.dsn)
    status, _out, err = run_cli("--dsn", world.dsn, "hooks", "resume", "approve-o1", '{"ok": true}')
    assert status == 0, err
    done = drive(store, run_id)
    assert done.status == "completed" and done.output == {"decision": {"ok": True}, "sum": 13}
    types = [e[1] for e in events(conn, run_id)]
    assert types.index("hook_created") < types.index("hook_received") < types.index("hook_disposed")
    status, _, err = run_cli("--dsn", world.dsn, "hooks", "resume", "approve-o1", "1")
    assert status == 3 and "no active hook" in err
    doctor_clean(run_cli, world.dsn)


def test_hook_resumed_while_the_driver_waits(store, conn, world) -> None:
    run_id = create(flows.approval, ["o2"], conn=conn).run_id
    result: dict[str, Any] = {}
    t = threading.Thread(
        target=lambda: result.update(done=drive(store, run_id, wait=True, timeout=20))
    )
    t.start()
    deadline = time.monotonic() + 10
    other = Store(__import__("psycopg").connect(world.dsn, autocommit=True))
    while time.monotonic() < deadline:
        try:
            other.resume_hook("approve-o2", serde.dumps("yes"))
            break
        except LookupError:
            time.sleep(0.05)
    t.join(20)
    other.conn.close()
    assert result["done"].status == "completed" and result["done"].output["decision"] == "yes"


def test_cancel_stops_the_run_and_cleans_up(store, conn, run_cli, world) -> None:
    run_id = create(flows.approval, ["o3"], conn=conn).run_id
    drive(store, run_id)
    status, _out, err = run_cli("--dsn", world.dsn, "runs", "cancel", run_id, "--reason", "test")
    assert status == 0, err
    row = conn.execute(
        "SELECT status::text, completed_at IS NOT NULL FROM workflow.workflow_runs WHERE id=%s",
        (run_id,),
    ).fetchone()
    assert row == ("cancelled", True)
    assert conn.execute(
        "SELECT count(*) FROM workflow.workflow_hooks WHERE run_id=%s", (run_id,)
    ).fetchone() == (0,)
    assert events(conn, run_id)[-1][1] == "run_cancelled"
    assert drive(store, run_id).status == "cancelled"
    assert run_cli("--dsn", world.dsn, "runs", "cancel", run_id)[0] == 2
    doctor_clean(run_cli, world.dsn)


def test_guard_refuses_transitions_on_a_terminal_run(store, conn) -> None:
    run_id = create(flows.sequential, [1], conn=conn).run_id
    store.cancel(run_id, None)
    tx = store.tx(run_id, events(conn, run_id)[-1][0])
    tx.start_new_step("step_" + ids.new_ulid(), "x", serde.dumps([]))
    with pytest.raises(GuardError, match="is cancelled"):
        tx.commit()
    assert conn.execute(
        "SELECT count(*) FROM workflow.workflow_steps WHERE run_id=%s", (run_id,)
    ).fetchone() == (0,)


def test_idempotency_key_returns_the_existing_run(conn, store) -> None:
    a = create(flows.sequential, [2], idempotency_key="k-1", conn=conn)
    b = create(flows.sequential, [2], idempotency_key="k-1", conn=conn)
    assert b.existing and b.run_id == a.run_id
    assert conn.execute("SELECT count(*) FROM workflow.workflow_runs").fetchone() == (1,)


def test_divergence_fails_the_run_with_the_first_diverging_event(store, conn) -> None:
    run_id = create(flows.sequential, [2], conn=conn).run_id
    drive(store, run_id)
    # Pretend the code changed: reopen the run and swap the workflow for another one.
    conn.execute(
        "UPDATE workflow.workflow_runs SET status='running', completed_at=NULL,"
        " output_cbor=NULL, name=%s WHERE id=%s",
        (flows.retrying.name, run_id),
    )
    conn.execute(
        "DELETE FROM workflow.workflow_events WHERE run_id=%s AND type='run_completed'", (run_id,)
    )
    conn.execute(
        "UPDATE workflow.workflow_runs SET input_cbor=%s WHERE id=%s",
        (codec.encode(serde.dumps(["d", 0])), run_id),
    )
    done = drive(store, run_id)
    assert done.status == "failed" and done.error_code == "REPLAY_DIVERGENCE"
    first_step = next(e for e in events(conn, run_id) if e[1] == "step_created")
    assert first_step[2] in done.error and flows.add.name in done.error


@pytest.mark.parametrize(
    "command", [("runs", "list"), ("runs", "show"), ("runs", "cancel"), ("hooks", "resume")]
)
def test_subcommands_have_help_with_an_example(run_cli, command) -> None:
    status, out, _ = run_cli(*command, "--help")
    assert status == 0
    assert "Examples" in out and "wfctl " in out.split("Examples", 1)[1]


def test_an_unmarked_spec_7_run_in_a_slot_world_is_refused(slot_world) -> None:
    """core >= beta.47 refuses a spec >= 6 run without a slot marker; wfctl must not number
    it with wevt_ ids (which would make it a legacy run for good)."""
    from wfctl.errors import RefusedError

    flows.reset()
    with slot_world.connect() as conn:
        # run_created with a wevt_ id and no marker, as a torn writer leaves it, at spec 7
        run_id = create(flows.sequential, [2], conn=conn).run_id
        conn.execute("DELETE FROM workflow.workflow_events WHERE run_id = %s", (run_id,))
        conn.execute("DELETE FROM workflow.workflow_event_slots WHERE run_id = %s", (run_id,))
        Store(conn, slots=False).writer.append(conn, run_id, "run_created", None, {}, 7)
        conn.execute(
            "UPDATE workflow.workflow_runs SET spec_version = '7' WHERE id = %s", (run_id,)
        )
        before = events(conn, run_id)
        with pytest.raises(RefusedError, match="WF121") as refused:
            drive(Store(conn), run_id)
        assert "--allow-rewrite" in (refused.value.hint or "")
        assert events(conn, run_id) == before  # nothing written
        assert conn.execute(
            "SELECT status::text FROM workflow.workflow_runs WHERE id = %s", (run_id,)
        ).fetchone() == ("pending",)


def test_cancel_and_hook_receipt_refuse_an_unmarked_spec_7_run_in_a_slot_world(
    slot_world, run_cli
) -> None:
    """The external writers apply the runtime's rule: in a slot-era world a spec >= 6 run
    without a marker gets no wevt_ id from `runs cancel` or `hooks resume` either (before,
    both appended one through EventWriter.append and made it a legacy run for good)."""
    from wfctl.errors import RefusedError

    flows.reset()
    with slot_world.connect() as conn:
        # A legacy-numbered run parked on its hook, no marker, then marked spec 7.
        legacy = Store(conn, slots=False)
        run_id = create(flows.approval, ["unmarked"], conn=conn).run_id
        conn.execute("DELETE FROM workflow.workflow_events WHERE run_id = %s", (run_id,))
        conn.execute("DELETE FROM workflow.workflow_event_slots WHERE run_id = %s", (run_id,))
        legacy.writer.append(conn, run_id, "run_created", None, {}, 5)
        assert drive(legacy, run_id).status == "running"
        conn.execute(
            "UPDATE workflow.workflow_runs SET spec_version = '7' WHERE id = %s", (run_id,)
        )
        before = events(conn, run_id)
        assert all(e[0].startswith("wevt_") for e in before)
        store = Store(conn)
        payload = serde.dumps({"ok": True}, "payload")
        with pytest.raises(RefusedError, match="WF121"):
            store.resume_hook("approve-unmarked", payload)
        with pytest.raises(RefusedError, match="WF121") as refused:
            store.cancel(run_id, "test")
        assert "--allow-rewrite" in (refused.value.hint or "")
        # Bulk cancel reports the run as refused (the batch is not complete), not a crash.
        status, out, err = run_cli(
            "--dsn", slot_world.dsn, "--format", "json", "runs", "cancel",
            "--where", "status=running", "--apply", "--yes", "--reason", "test",
        )  # fmt: skip
        assert out.strip() and status != 0, (status, err)
        report = json.loads(out)
        assert [(r["run_id"], r["outcome"]) for r in report["runs"]] == [(run_id, "refused")]
        assert "WF121" in report["runs"][0]["detail"] and report["complete"] is False, err
        assert events(conn, run_id) == before  # nothing written
        assert conn.execute(
            "SELECT status::text FROM workflow.workflow_runs WHERE id = %s", (run_id,)
        ).fetchone() == ("running",)
        # The same run at spec 5 is a legacy run like any other: both writers accept it.
        conn.execute(
            "UPDATE workflow.workflow_runs SET spec_version = '5' WHERE id = %s", (run_id,)
        )
        store.resume_hook("approve-unmarked", payload)
        assert store.cancel(run_id, "test") == "running"
        after = events(conn, run_id)[len(before) :]
        assert [e[1] for e in after] == ["hook_received", "run_cancelled"]
        assert all(e[0].startswith("wevt_") for e in after)
