"""Workflow names, arguments and the runtime's module layering.

- A workflow's stored name does not depend on how its module was spelled: `wfctl run
  play/onboard.py:onboard` and `wfctl worker play.onboard` (real processes) agree, with
  `play` a namespace package or a regular one; the worker logs the names it serves, and
  `wfctl worker status` shows ready runs that no live worker serves.
- Arguments are bound to the workflow's signature before a run exists (exit 64, no row).
- Runs stored under the names earlier versions derived (the import spelling) still replay.
- `runtime.executor` does not import `runtime.api` (no import cycle); the engine, the
  serde and the registry do no I/O (no psycopg).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.runtime import flows
from tests.worker.conftest import statuses, wait_until
from wfctl.runtime import engine as eng
from wfctl.runtime import serde
from wfctl.runtime.executor import Executor
from wfctl.runtime.registry import ArgumentsError
from wfctl.runtime.store import Store
from wfctl.world import ids

ROOT = Path(__file__).resolve().parents[2]

ONBOARD = """
from wfctl.runtime import Workflows

wf = Workflows()


@wf.step
def greet(user: str) -> str:
    return "hello " + user


@wf.workflow
async def onboard(user: str) -> str:
    return await greet(user)
"""


def _wfctl(dsn: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "wfctl", "--dsn", dsn, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _runs_of(conn: Any) -> list[tuple[str, str]]:
    rows = conn.execute("SELECT id, name FROM workflow.workflow_runs ORDER BY id")
    return [(str(r[0]), str(r[1])) for r in rows]


def _start_onboard(dsn: str, tmp_path: Path, *, regular: bool, user: str) -> str:
    """`play/onboard.py` (a regular package with `regular`), and a run of it started by
    file path from inside `play/` and handed to the workers."""
    play = tmp_path / "play"
    play.mkdir()
    (play / "onboard.py").write_text(ONBOARD)
    if regular:
        (play / "__init__.py").write_text("")
    started = _wfctl(
        dsn, play, "--format", "json", "run", "onboard.py:onboard", f'["{user}"]', "--detach"
    )
    assert started.returncode == 0, started.stderr
    return str(json.loads(started.stdout)["run_id"])


def _worker(dsn: str, cwd: Path, target: str, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with log.open("w") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "wfctl", "--dsn", dsn, "worker", target, "--poll", "0.1"],
            cwd=cwd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=sink,
        )


@pytest.mark.parametrize("package", ["namespace", "regular"])
def test_a_file_and_a_dotted_module_name_one_workflow_alike(
    wfctl_world: Any, tmp_path: Path, package: str
) -> None:
    regular = package == "regular"
    expected = "workflow//py:play.onboard//onboard" if regular else "workflow//py:onboard//onboard"
    # Started from inside play/ by file, served from its parent by dotted name.
    run_id = _start_onboard(wfctl_world.dsn, tmp_path, regular=regular, user="ada")
    with wfctl_world.connect() as conn:
        assert _runs_of(conn) == [(run_id, expected)]
    log = tmp_path / "worker.log"
    worker = _worker(wfctl_world.dsn, tmp_path, "play.onboard", log)
    try:
        with wfctl_world.connect() as conn:
            wait_until(lambda: statuses(conn, [run_id]) == {run_id: "completed"}, 60, "the run")
        wait_until(lambda: "serving queue" in log.read_text(), 30, "the worker's start")
    finally:
        worker.terminate()
        worker.wait(30)
    assert f"wfctl worker: serves {expected}" in log.read_text()


def test_worker_status_shows_ready_runs_no_live_worker_serves(
    wfctl_world: Any, tmp_path: Path, run_cli: Any
) -> None:
    run_id = _start_onboard(wfctl_world.dsn, tmp_path, regular=False, user="bob")
    log = tmp_path / "worker.log"
    worker = _worker(wfctl_world.dsn, ROOT, "tests.runtime.flows", log)  # serves others
    try:
        wait_until(lambda: "serving queue" in log.read_text(), 60, "the worker")
        status, out, err = run_cli("--dsn", wfctl_world.dsn, "--format", "json", "worker", "status")
        assert status == 0, err
        report = json.loads(out)
        assert len(report["workers"]) == 1
        assert [(r["workflow_name"], r["runs"], r["oldest_run"]) for r in report["unserved"]] == [
            ("workflow//py:onboard//onboard", 1, run_id)
        ]
        status, out, _ = run_cli("--dsn", wfctl_world.dsn, "--format", "plain", "worker", "status")
        assert f"workflow//py:onboard//onboard             1  {run_id}" in out
    finally:
        worker.terminate()
        assert worker.wait(30) == 0


def test_arguments_are_checked_before_a_run_exists(wfctl_world: Any, run_cli: Any) -> None:
    dsn = wfctl_world.dsn
    for args in ('["k"]', '["k", 1, 2]', '{"key": "k", "nope": 1}', '{"failures": 1}', None):
        argv = ["--dsn", dsn, "run", "tests.runtime.flows:retrying"]
        status, out, err = run_cli(*argv, *([args] if args is not None else []))
        assert status == 64, (args, out, err)
        assert "retrying(key, failures)" in err, err
    with wfctl_world.connect() as conn:
        assert _runs_of(conn) == []
    # A JSON object binds by name; the stored input is positional, as the DevKit's.
    status, out, err = run_cli(
        "--dsn",
        dsn,
        "--format",
        "json",
        "run",
        "tests.runtime.flows:retrying",
        '{"failures": 0, "key": "kw"}',
        "--wait",
    )
    assert status == 0, err
    assert json.loads(out)["status"] == "completed"
    with wfctl_world.connect() as conn:
        run = Store(conn).read_run(json.loads(out)["run_id"])
        assert run is not None and serde.loads(run.input) == ["kw", 0]


def test_bind_names_the_parameters() -> None:
    with pytest.raises(ArgumentsError, match=r"sequential\(n\): missing a required"):
        flows.sequential.bind([])
    assert flows.retrying.bind([], {"failures": 2, "key": "a"}) == ["a", 2]


def test_runs_stored_under_an_older_spelling_still_replay(conn: Any, store: Store) -> None:
    # `wfctl run tests/runtime/flows.py:sequential` used to name the module by the file's
    # stem (`py:flows`); that name, and its steps' names, are aliases now.
    wdef = flows.sequential
    old = "workflow//py:flows//sequential"
    assert wdef.name == "workflow//py:tests.runtime.flows//sequential"
    assert old in wdef.aliases and flows.wf.by_name(old) is wdef
    assert "step//py:flows//add" in flows.add.aliases
    assert old in flows.wf.served_names()
    created = store.create_run(ids.prefixed("wrun"), old, serde.dumps([2], "in"))
    done = Executor(flows.wf, store).drive(created.run_id, wait=True, timeout=60)
    assert done.status == "completed", done.error
    # A step logged under its older name replays as that step.
    e = eng.Engine(ids.prefixed("wrun"), wdef.fn, [1])
    e.feed(eng.Event("evnt_1", "run_created", None, None, eng.UNSTAMPED))
    first = e.outcome()
    assert isinstance(first, eng.Pending)
    (cmd,) = first.commands
    assert isinstance(cmd, eng.StartStep)
    e.feed(
        eng.Event(
            "evnt_2",
            "step_created",
            cmd.correlation_id,
            {"stepName": "step//py:flows//add", "input": cmd.input},
            eng.UNSTAMPED,
        )
    )
    later = e.outcome()
    assert not isinstance(later, eng.Diverged), later


def _imports(module: Path) -> set[str]:
    tree = ast.parse(module.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_runtime_layers_have_no_import_cycle_and_the_engine_no_io() -> None:
    runtime = ROOT / "wfctl" / "runtime"
    graph = {
        p.stem: {
            name.rsplit(".", 1)[-1]
            for name in _imports(p)
            if name.startswith("wfctl.runtime.")
            and (runtime / f"{name.rsplit('.', 1)[-1]}.py").exists()
        }
        for p in runtime.glob("*.py")
        if p.stem != "__init__"
    }
    assert "api" not in graph["executor"]

    def reaches(start: str, target: str, seen: set[str]) -> bool:
        for nxt in graph.get(start, set()):
            if nxt == target or (nxt not in seen and reaches(nxt, target, seen | {nxt})):
                return True
        return False

    assert [m for m in graph if reaches(m, m, set())] == []
    for pure in ("engine", "serde", "registry"):
        assert not any(n.startswith("psycopg") for n in _imports(runtime / f"{pure}.py")), pure
