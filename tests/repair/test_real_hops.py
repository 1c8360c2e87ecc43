# ruff: noqa: F811 - the judge fixtures are imported from test_real_judge by name
"""Healthy long sleeps made by the REAL runtime are not runaway chains, and repair never
writes to them.

The shape seen on real worlds: a run sleeping for days holds two live continuation jobs,
`wait_<id>:hop-7` (enqueued under the default 23 h hop) and `wait_<id>:hop-518391` (after a
restart with WORKFLOW_WAIT_CONTINUATION_MAX_DELAY_SECONDS=1), each at attempt 1. Both are made
here by the real runtime (`tests/node/hops/workflows/hops.ts`, built into a private folder
that shares the judge's installed node_modules), then doctor must be clean and neither a dry
run nor `repair --apply --all` may change a job, an event or the audit log.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests import judge
from tests.judge import Runtime, stays, wait_until
from tests.repair.test_queue_repairs import queue_and_log
from tests.repair.test_real_judge import FORCE, db, findings, wfctl  # noqa: F401 - fixtures

pytestmark = pytest.mark.skipif(
    not judge.available(),
    reason="node/npm not found: the real workflow runtime cannot be npm-installed",
)
HOPS_SRC = judge.ROOT / "tests" / "node" / "hops" / "workflows"
WORKFLOW = "workflow//./workflows/hops//longSleep"


@pytest.fixture(scope="module")
def hops_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """server.mjs + hops.ts built with `wf build` in a private folder (node_modules linked)."""
    judge.build_runtime()  # installs the shared node_modules once (under the cache lock)
    installed = judge.RUNTIME_CACHE
    folder = tmp_path_factory.mktemp("hops-runtime")
    for name in ("package.json", "package-lock.json"):
        shutil.copy(installed / name, folder / name)
    shutil.copy(judge.RUNTIME_SRC / "server.mjs", folder / "server.mjs")
    shutil.copytree(HOPS_SRC, folder / "workflows")
    (folder / "node_modules").symlink_to(installed / "node_modules")
    proc = subprocess.run(
        ["node", "node_modules/@workflow/cli/bin/run.js", "build"],
        cwd=folder,
        timeout=300,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0 or not (folder / judge.FLOW_BUNDLE).exists():
        raise judge.JudgeError(f"wf build failed:\n{proc.stdout}\n{proc.stderr}")
    return folder


def continuation_jobs(db: Any) -> list[tuple[Any, ...]]:
    with db.connect() as conn:
        return conn.execute(
            "SELECT key, attempts, (payload ->> 'attempt')::int FROM graphile_worker._private_jobs"
            " WHERE key LIKE 'wait\\_%%' ORDER BY id"
        ).fetchall()


def test_two_hop_chains_of_a_real_long_sleep_are_healthy(db, wfctl, hops_folder, tmp_path):
    def runtime(name: str, max_delay: str) -> Runtime:
        env = {"WORKFLOW_WAIT_CONTINUATION_MAX_DELAY_SECONDS": max_delay}
        return Runtime(db.dsn, tmp_path, env, name=name, folder=hops_folder).start()

    first = runtime("default-hops", "82800")
    run_id = first._call("/judge/start", {"workflowId": WORKFLOW, "args": [5]})["runId"]
    wait_until(lambda: any(":hop-" in k for k, *_ in continuation_jobs(db)), 20, "the first hop")
    first.stop()
    second = runtime("one-second-hops", "1")  # its start-up re-enqueues the run
    wait_until(lambda: len(continuation_jobs(db)) >= 2, 20, "a second hop chain")
    stays(db.dsn, run_id, "running", 2.0)  # it hops every second, the run sleeps on
    second.stop()

    chains = continuation_jobs(db)
    # two chains (a stop inside a delivery can leave its retried job beside the successor)
    assert len({k.split(":")[1] == "hop-7" for k, *_ in chains}) == 2, chains
    assert all(k.split(":")[1].startswith("hop-") for k, *_ in chains), chains
    assert {message_attempt for *_, message_attempt in chains} == {1}
    assert findings(wfctl, run_id) == {}
    before = queue_and_log(db)
    status, report = wfctl("repair", *FORCE, "--all")
    assert status == 0 and report["items"] == [], report
    status, report = wfctl("repair", "--apply", "--yes", "--reason", "t", *FORCE, "--all")
    assert status == 0 and report["items"] == [], report
    assert queue_and_log(db) == before
