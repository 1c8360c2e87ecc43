"""The road with the runs in flight: `wfctl migrate --online --package DIR --carry` on worlds
made by the real 4.1.1 and 4.3.7 runtimes (runs asleep, on a hook, mid-step), then the real
beta.29 runtime finishes every one with its own value.

Needs the analysis of runs across an upgrade (wfctl.migrate.inflight) and its source worlds
(tests/migrate_inflight/worlds.py, conftest.py); skipped where they are not in this tree.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.conftest import Server, install_real_package

worlds = pytest.importorskip("tests.migrate_inflight.worlds")
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("release", ["4.1.1", "4.3.7"])
def test_the_road_carries_the_runs_in_flight(
    release: str,
    pg_server: Server,
    source_world: Callable[[str], Any],
    inflight_logs: Path,
    run_cli: Any,
) -> None:
    world = source_world(release)
    dsn = worlds.clone(pg_server, world.template, "road_carry")
    road = ("--dsn", dsn, "migrate", "--online", "--package", str(install_real_package()))
    status, out, err = run_cli(*road, "--dry-run")
    assert status == 0, err
    assert all(f.run_id in out for f in world.runs)  # named before anything is written
    # The mid-step run's job is held by the dead 4.x worker: it would fail, so no carry yet.
    status, _, err = run_cli(*road, "--carry")
    assert status == 2 and "would fail after the upgrade" in err and "holds its job" not in err
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT graphile_worker.force_unlock_workers(%s)", (world.dead_workers,))
    status, out, err = run_cli(*road, "--carry")
    assert status == 0, out + err
    carried = [ln for ln in out.splitlines() if ln.startswith("carry: run ")]
    assert len(carried) == len(world.runs) and all(": carried," in ln for ln in carried), out
    assert "catalog: matches a fresh beta29 world" in out
    with worlds.serving(dsn, inflight_logs, "beta29", JUDGE_REENQUEUE="0") as rt:
        ends = worlds.finish(rt, dsn, world.runs)
        values = {f.label: rt.run_info(f.run_id).get("returnValue") for f in world.runs}
    assert set(ends.values()) == {"completed"}, ends
    assert values == {f.label: f.value for f in world.runs}
