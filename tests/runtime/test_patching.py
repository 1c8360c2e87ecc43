"""Safe code changes: `patched()` lets a v1 -> v2 code change finish runs started under v1
(parked on a hook under v1, finished by v2 code), while new runs take the v2 path; the marker
replays deterministically, is read by the real package, leaves `doctor` clean, and can be
dropped once old runs are gone. The replayer (`wfctl runs replay`) tells which code replays."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import node_available
from tests.runtime.conftest import doctor_clean
from wfctl.runtime import Workflows, create_hook, patched
from wfctl.runtime.executor import Executor, create
from wfctl.runtime.replay import replay_runs
from wfctl.runtime.store import Store

NAME = "workflow//py:tests.patching//order"
CALLS: list[str] = []


def _steps(wf: Workflows) -> dict[str, Any]:
    def make(label: str) -> Any:
        @wf.step(name=f"step//py:tests.patching//{label}")
        def body(order: str) -> str:
            CALLS.append(f"{label} {order}")
            return f"{label}:{order}"

        return body

    return {label: make(label) for label in ("validate", "reserve", "notify", "ship")}


# v1: reserve, wait for approval, ship.
v1 = Workflows()
s1 = _steps(v1)


@v1.workflow(name=NAME)
async def order_v1(order: str) -> list[str]:
    done = [await s1["reserve"](order)]
    await create_hook(token=f"ok-{order}")
    done.append(await s1["ship"](order))
    return done


# v2: validate first (a change BEFORE the park point) and notify after approval (AFTER it).
v2 = Workflows()
s2 = _steps(v2)


@v2.workflow(name=NAME)
async def order_v2(order: str) -> list[str]:
    done = []
    if patched("validate-first"):
        done.append(await s2["validate"](order))
    done.append(await s2["reserve"](order))
    await create_hook(token=f"ok-{order}")
    if patched("notify-after-approval"):
        done.append(await s2["notify"](order))
    done.append(await s2["ship"](order))
    return done


# v2 without the guards: what a careless change looks like.
unguarded = Workflows()
su = _steps(unguarded)


@unguarded.workflow(name=NAME)
async def order_unguarded(order: str) -> list[str]:
    done = [await su["validate"](order), await su["reserve"](order)]
    await create_hook(token=f"ok-{order}")
    done.append(await su["ship"](order))
    return done


# v3: every v1 run is gone; the validate-first guard is removed (its new path kept).
v3 = Workflows()
s3 = _steps(v3)


@v3.workflow(name=NAME)
async def order_v3(order: str) -> list[str]:
    done = [await s3["validate"](order), await s3["reserve"](order)]
    await create_hook(token=f"ok-{order}")
    if patched("notify-after-approval"):
        done.append(await s3["notify"](order))
    done.append(await s3["ship"](order))
    return done


def drive(registry: Workflows, store: Store, run_id: str) -> Any:
    ex = Executor(registry, store)
    try:
        return ex.drive(run_id)
    finally:
        ex.close()


def test_a_v1_run_parked_on_a_hook_finishes_under_v2(store, conn, run_cli, world) -> None:
    CALLS.clear()
    old = create(order_v1, ["o-old"], conn=conn).run_id
    assert drive(v1, store, old).status == "running"  # parked on its hook, under v1
    assert CALLS == ["reserve o-old"]
    # without the guards, v2 code cannot take the v1 run over
    (verdict,) = replay_runs(conn, [old], unguarded)
    assert verdict.verdict == "diverged" and "validate" in (verdict.message or "")
    # with them, it can: the deploy
    (verdict,) = replay_runs(conn, [old], v2)
    assert verdict.ok, verdict
    store.resume_hook("ok-o-old", b'devl["yes"]')
    done = drive(v2, store, old)
    assert done.status == "completed", done.error
    # validate-first was passed under v1: old path; notify-after-approval reached fresh: new
    assert done.output == ["reserve:o-old", "notify:o-old", "ship:o-old"]
    assert CALLS == ["reserve o-old", "notify o-old", "ship o-old"]

    CALLS.clear()
    new = create(order_v2, ["o-new"], conn=conn).run_id
    drive(v2, store, new)
    store.resume_hook("ok-o-new", b'devl["yes"]')
    done = drive(v2, store, new)
    assert done.output == ["validate:o-new", "reserve:o-new", "notify:o-new", "ship:o-new"]

    # both replay against v2 (read-only); markers are steps of the run like any other
    assert all(r.ok for r in replay_runs(conn, [old, new], v2))
    names = [
        r[0]
        for r in conn.execute(
            "SELECT step_name FROM workflow.workflow_steps WHERE run_id = %s ORDER BY created_at",
            (new,),
        ).fetchall()
    ]
    assert "step//py:wfctl.patched//validate-first" in names
    assert "step//py:wfctl.patched//notify-after-approval" in names

    # v3 drops the validate-first guard: runs that recorded its marker still replay
    assert replay_runs(conn, [new], v3)[0].ok
    doctor_clean(run_cli, world.dsn)


def test_a_change_reached_just_before_the_end_records_its_marker_first(store, conn) -> None:
    wf = Workflows()

    @wf.workflow(name="workflow//py:tests.patching//ending")
    async def ending() -> str:
        return "new" if patched("last-minute") else "old"

    run_id = create(ending, [], conn=conn).run_id
    assert drive(wf, store, run_id).output == "new"
    assert replay_runs(conn, [run_id], wf)[0].ok  # the marker says: the new path was taken
    types = [
        r[0]
        for r in conn.execute(
            "SELECT type FROM workflow.workflow_events WHERE run_id = %s ORDER BY id", (run_id,)
        ).fetchall()
    ]
    assert types[-2:] == ["step_completed", "run_completed"]


def test_change_ids_are_checked() -> None:
    from wfctl.runtime import patching

    with pytest.raises(ValueError, match="change id"):
        patching.marker_name("has space")
    assert patched("anything") is True  # outside a workflow: the new code path


def test_runs_replay_cli(store, conn, run_cli, world, tmp_path, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "replay_target.py").write_text(
        "from tests.runtime.test_patching import v2, unguarded, order_v2\n"
    )
    run_id = create(order_v1, ["o-cli"], conn=conn).run_id
    drive(v1, store, run_id)
    before = conn.execute("SELECT count(*) FROM workflow.workflow_events").fetchone()
    status, out, err = run_cli(
        "--dsn", world.dsn, "--format", "json", "runs", "replay", run_id,
        "--against", "replay_target:order_v2",
    )  # fmt: skip
    assert status == 0, out + err
    report = json.loads(out)
    assert report["replayed"] == 1 and report["runs"][0]["verdict"] == "replayed"
    status, out, err = run_cli(
        "--dsn", world.dsn, "--format", "json", "runs", "replay", run_id, "--against",
        "replay_target:unguarded",
    )  # fmt: skip
    assert status == 1
    (run,) = json.loads(out)["runs"]
    assert run["verdict"] == "diverged" and run["event_id"]
    status, out, err = run_cli(
        "--dsn", world.dsn, "runs", "replay", "wrun_nope", "--against", "replay_target:v2"
    )
    assert status == 1 and "no such run" in out
    status, _, err = run_cli("--dsn", world.dsn, "runs", "replay", run_id)
    assert status == 64 and "--against" in err
    status, _, err = run_cli("--dsn", world.dsn, "runs", "replay", "--against", "replay_target")
    assert status == 64
    # --all-finished finds finished runs of the workflow; nothing was written by any replay
    finished = create(order_v2, ["o-done"], conn=conn).run_id
    drive(v2, store, finished)
    store.resume_hook("ok-o-done", b'devl["y"]')
    drive(v2, store, finished)
    status, out, err = run_cli(
        "--dsn", world.dsn, "--format", "json", "runs", "replay", "--all-finished",
        "--since", "1h", "--against", "replay_target:v2",
    )  # fmt: skip
    assert status == 0, out + err
    assert [r["run_id"] for r in json.loads(out)["runs"]] == [finished]
    after = conn.execute("SELECT count(*) FROM workflow.workflow_events").fetchone()
    assert after[0] > before[0]  # the drives wrote; now check the replays alone
    count = after[0]
    run_cli("--dsn", world.dsn, "runs", "replay", run_id, finished, "--against", "replay_target:v2")
    assert conn.execute("SELECT count(*) FROM workflow.workflow_events").fetchone()[0] == count


@pytest.mark.skipif(not node_available(), reason="node/npm not found")
def test_the_real_package_reads_a_run_with_markers(store, conn) -> None:
    from tests.realworld import read_back

    run_id = create(order_v2, ["o-node"], conn=conn).run_id
    drive(v2, store, run_id)
    store.resume_hook("ok-o-node", b'devl["y"]')
    assert drive(v2, store, run_id).status == "completed"
    result = read_back(conn.info.dsn, [run_id])[run_id]
    assert result["ok"], result
    names = {s["stepName"] for s in result["steps"]}
    assert "step//py:wfctl.patched//validate-first" in names


def test_a_run_with_markers_forks_from_a_step(store, conn, run_cli, world) -> None:
    from wfctl.world.bootstrap import ensure_worker_schema

    ensure_worker_schema(conn)
    wf = Workflows()
    s = _steps(wf)

    @wf.workflow(name="workflow//py:tests.patching//forkable")
    async def forkable(order: str) -> list[str]:
        done = []
        if patched("validate-first"):
            done.append(await s["validate"](order))
        done.append(await s["reserve"](order))
        done.append(await s["ship"](order))
        return done

    source = create(forkable, ["o-f"], conn=conn).run_id
    assert drive(wf, store, source).status == "completed"
    CALLS.clear()
    # steps in creation order: 1 the marker, 2 validate, 3 reserve, 4 ship
    status, out, err = run_cli(
        "--dsn", world.dsn, "--format", "json", "runs", "fork", source, "--from-step", "4",
        "--apply", "--reason", "redo the shipment",
    )  # fmt: skip
    assert status == 0, err
    fork = json.loads(out)["run_id"]
    done = drive(wf, store, fork)
    assert done.status == "completed", done.error
    assert done.output == ["validate:o-f", "reserve:o-f", "ship:o-f"]
    assert CALLS == ["ship o-f"]  # the marker, validate and reserve replayed from the copy
    markers = conn.execute(
        "SELECT count(*) FROM workflow.workflow_steps WHERE run_id = %s AND step_name LIKE %s",
        (fork, "step//py:wfctl.patched//%"),
    ).fetchone()
    assert markers == (1,)  # the copied marker, not a second one
