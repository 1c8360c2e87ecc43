"""The `wfctl.testing` plugin: the `world` fixture, the fake clock, `run_to_end`, the
automatic replay of finished runs, and the plugin as a user's project loads it."""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Server
from tests.testing import flows
from wfctl.runtime import Workflows, start
from wfctl.testing import NondeterminismError, RunBlocked, RunFailed, World, run_to_end

ROOT = Path(__file__).resolve().parent.parent.parent


def test_a_30_day_sleep_finishes_and_the_workflow_sees_the_days_pass(world: World) -> None:
    flows.CALLS.clear()
    out = run_to_end(flows.monthly, flows.Invoice("acme", 990))
    assert out == {"receipt": "ch_acme_990", "days": 30}
    assert flows.CALLS == ["charge acme"]
    assert world.clock.shift.days >= 29  # the run took real time too


def test_now_moves_with_the_clock_inside_a_polling_loop(world: World) -> None:
    assert world.run_to_end(flows.poll_until, 5) == 5


def test_hooks_failures_and_handles(world: World) -> None:
    run_id = world.start(flows.approval, "o-1")
    with pytest.raises(RunBlocked, match="approve-o-1"):
        world.finish(run_id)
    world.resume_hook("approve-o-1", {"answer": "yes"})
    assert world.finish(run_id) == "o-1: yes"
    with pytest.raises(RunFailed) as failed:
        world.run_to_end(flows.failing)
    assert failed.value.status == "failed" and "no" in (failed.value.error or "")


def test_start_and_result_use_the_test_world(world: World) -> None:
    handle = asyncio.run(start(flows.approval, "o-2"))  # the authoring API's start()
    assert world.status(handle.id) == "pending"  # its run lives in this world
    world.use(flows.wf)
    with pytest.raises(RunBlocked):
        world.finish(handle.id)
    world.resume_hook("approve-o-2", {"answer": "no"})
    assert asyncio.run(handle.result(timeout=10)) == "o-2: no"


def test_replay_helpers(world: World) -> None:
    from wfctl.testing import replay, replay_at

    run_id = world.start(flows.approval, "o-3")
    assert replay(run_id).verdict == "replayed"  # never driven: in flight

    class Handle:
        id = run_id

    assert replay(Handle(), flows.approval).ok
    (result,) = replay_at(world.dsn, [run_id], flows.wf)
    assert result.ok and result.status == "pending"


def test_a_finished_run_that_no_longer_replays_fails_at_teardown(
    wfctl_testing_server: Any, wfctl_testing_template: str
) -> None:
    from wfctl.testing.world import activate, drop_db, make_world_db

    name = make_world_db(wfctl_testing_server, wfctl_testing_template)
    try:
        w = World(wfctl_testing_server.dsn(name))
        with activate(w):
            v1 = Workflows()

            @v1.step
            def a() -> int:
                return 1

            @v1.workflow(name="workflow//py:tests//changing")
            async def changing() -> int:
                return await a()

            run_id = w.start(changing)
            assert w.finish(run_id) == 1
            assert w.replay_finished() == []
            v2 = Workflows()

            @v2.step
            def b() -> int:
                return 2

            @v2.workflow(name="workflow//py:tests//changing")
            async def changing2() -> int:
                return await b()

            w.registries = [v2]
            (failure,) = w.replay_finished()
            assert failure.verdict == "diverged" and failure.run_id == run_id
            with pytest.raises(NondeterminismError, match="diverged"):
                w.replay(run_id)
    finally:
        drop_db(wfctl_testing_server, name)


def test_the_plugin_in_a_users_project(tmp_path: Path, pg_server: Server) -> None:
    """A user's test file, run by pytest with the plugin loaded as installed wfctl loads it
    (the pytest11 entry point; `-p` where this tree is not the installed one)."""
    (tmp_path / "shop.py").write_text(
        textwrap.dedent(
            """
            from wfctl.runtime import Workflows, sleep

            wf = Workflows()

            @wf.step
            def ship(order: str) -> str:
                return "shipped " + order

            @wf.workflow
            async def fulfil(order: str) -> str:
                await sleep("14d")
                return await ship(order)
            """
        )
    )
    (tmp_path / "test_shop.py").write_text(
        textwrap.dedent(
            """
            from wfctl.testing import run_to_end
            import shop

            def test_fulfil(world):
                assert run_to_end(shop.fulfil, "o-9") == "shipped o-9"
                assert world.clock.shift.days >= 13
            """
        )
    )
    done = _pytest_in(tmp_path, pg_server, "test_shop.py")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "1 passed" in done.stdout
    # a workflow that reads the wall clock (not wfctl.runtime.now()) is caught by the test
    # that ran it: the run does not replay at teardown
    (tmp_path / "test_clocky.py").write_text(
        textwrap.dedent(
            """
            import time
            from wfctl.runtime import Workflows
            from wfctl.testing import run_to_end

            wf = Workflows()

            @wf.workflow
            async def stamp() -> float:
                return time.time()

            def test_stamp(world):
                assert run_to_end(stamp) > 0
            """
        )
    )
    done = _pytest_in(tmp_path, pg_server, "test_clocky.py")
    assert done.returncode == 1, done.stdout[-3000:]
    assert "1 passed, 1 error" in done.stdout
    assert "NondeterminismError" in done.stdout and "where the log completed with" in done.stdout


def test_the_testing_guide_runs_as_written(tmp_path: Path, pg_server: Server) -> None:
    """docs/testing.md's first four examples (a module and its tests, then their
    continuation: hooks with a timeout, a schedule), run by pytest in a fresh project with
    the plugin."""
    guide = (ROOT / "docs" / "testing.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", guide, flags=re.S)[:4]
    for block in blocks:
        first = block.splitlines()[0].removeprefix("# ").strip()
        target = tmp_path / first.removesuffix(" (continued)")
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a") as out:
            out.write(block)
    done = _pytest_in(tmp_path, pg_server, "tests/test_flows.py")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "5 passed" in done.stdout


def _pytest_in(folder: Path, pg_server: Server, test: str) -> subprocess.CompletedProcess[str]:
    installed = any(
        ep.value == "wfctl.testing.plugin"
        for ep in importlib.metadata.entry_points(group="pytest11")
    )
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test]
    if not installed:
        args[3:3] = ["-p", "wfctl.testing.plugin"]
    env = {
        **os.environ,
        "WFCTL_TEST_DSN": pg_server.admin_dsn,
        "PYTHONPATH": f"{ROOT}{os.pathsep}{folder}",
    }
    return subprocess.run(args, cwd=folder, env=env, capture_output=True, text=True, timeout=300)


def test_the_entry_point_is_declared() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    assert '[project.entry-points.pytest11]\nwfctl = "wfctl.testing.plugin"' in text


def test_a_slot_era_world_with_the_fake_clock(wfctl_testing_server: Any) -> None:
    """`wfctl_era = slot`: the template is a slot-era world; its defaults follow the clock."""
    from wfctl.testing.world import activate, drop_db, make_template, make_world_db

    template = make_template(wfctl_testing_server, "slot")
    name = make_world_db(wfctl_testing_server, template)
    try:
        w = World(wfctl_testing_server.dsn(name))
        with activate(w):
            out = w.run_to_end(flows.monthly, flows.Invoice("slot", 1))
            assert out == {"receipt": "ch_slot_1", "days": 30}
            assert w.replay_finished() == []
    finally:
        drop_db(wfctl_testing_server, name)
        drop_db(wfctl_testing_server, template)
