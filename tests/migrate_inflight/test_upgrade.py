"""Runs in flight across an upgrade, proven with the real runtimes.

A world made by a 4.x release's real runtime (runs asleep, on a hook, mid-step), upgraded by
the target package's own setup, then served by the target's real runtime:
- 4.1.1 -> 5.0.0-beta.29 (and 4.3.7 -> 5.0.0-beta.29): every run in flight fails at its first
  replay (CORRUPTED_EVENT_LOG) unless carried; carried by `inflight.carry`, every one finishes
  with its own value, on its own jobs (the target's startup re-enqueue off);
- 4.1.1 -> 4.3.7: every run continues as it is (both cores mint the same ids).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.conftest import Server, real_bootstrap, release_setup
from tests.corpus.snapshot import digests
from tests.judge import KITS
from tests.migrate_inflight.worlds import (
    SourceWorld,
    clone,
    finish,
    finish_skipped_migrations,
    serving,
)
from wfctl.migrate import inflight

BETA29 = "5.0.0-beta.29"
pytestmark = pytest.mark.slow


def _fates(dsn: str, source: str, target: str) -> dict[str, inflight.RunFate]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return {f.run_id: f for f in inflight.assess(conn, source, target)}


def _unlock(dsn: str, world: SourceWorld) -> None:
    """What the operator does once the dead 4.x worker is known dead: free its job."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT graphile_worker.force_unlock_workers(%s)", (world.dead_workers,))


def test_assess_names_every_run_before_anything_is_written(
    pg_server: Server, source_world: Callable[[str], SourceWorld]
) -> None:
    world = source_world("4.1.1")
    dsn = clone(pg_server, world.template, "inflight_assess")
    before = digests(dsn)
    fates = _fates(dsn, "4.1.1", BETA29)
    assert digests(dsn) == before  # the plan writes nothing
    assert set(fates) == {f.run_id for f in world.runs}
    for f in world.runs:
        fate = fates[f.run_id]
        if f.label.startswith("midstep"):  # its job is held by the dead worker
            assert fate.fate == "fails" and "holds its job now" in fate.reason, fate
        else:
            assert fate.fate == "carried", fate
            assert fate.status == "running" and fate.workflow_name.endswith(("//nap", "//hooked"))
    _unlock(dsn, world)
    for label in ("midstep", "midstep_started"):
        mid = _fates(dsn, "4.1.1", BETA29)[world.run(label).run_id]
        assert mid.fate == "carried" and "step job(s) moved to a flow delivery" in mid.reason
    # 4.1 -> 4.3: the same cores' rule, every run continues.
    assert {f.fate for f in _fates(dsn, "4.1.1", "4.3.7").values()} == {"continues"}


@pytest.mark.parametrize("release", ["4.1.1", "4.3.7"])
def test_uncarried_runs_fail_under_beta29(
    release: str,
    pg_server: Server,
    source_world: Callable[[str], SourceWorld],
    inflight_logs: Path,
) -> None:
    """The failure, reproduced: beta.29's runtime fails every 4.x run in flight at its first
    replay (CORRUPTED_EVENT_LOG), while a new run completes."""
    world = source_world(release)
    dsn = clone(pg_server, world.template, "inflight_plain")
    real_bootstrap(dsn)
    finish_skipped_migrations(dsn)
    _unlock(dsn, world)
    with serving(dsn, inflight_logs, "beta29") as rt:
        fresh = rt.start_run("nap", [1, 1], module="corpus")
        ends = finish(rt, dsn, world.runs)
        assert rt.run_info(fresh) == {"runId": fresh, "status": "completed",
                                      "returnValue": {"a": 2, "b": 12}}  # fmt: skip
        log = rt.log_text()
    assert set(ends.values()) == {"failed"}, ends
    with psycopg.connect(dsn, autocommit=True) as conn:
        codes = conn.execute(
            "SELECT DISTINCT error_code FROM workflow.workflow_runs WHERE id = ANY(%s)",
            ([f.run_id for f in world.runs],),
        ).fetchall()
    assert codes == [("CORRUPTED_EVENT_LOG",)]
    assert "Workflow replay diverged" in log


@pytest.mark.parametrize("release", ["4.1.1", "4.3.7"])
def test_carried_runs_finish_under_beta29(
    release: str,
    pg_server: Server,
    source_world: Callable[[str], SourceWorld],
    inflight_logs: Path,
    run_cli: Any,
) -> None:
    world = source_world(release)
    dsn = clone(pg_server, world.template, "inflight_carry")
    real_bootstrap(dsn)  # the package's own migrator takes the world to beta.29
    skipped = finish_skipped_migrations(dsn)  # 4.3.x: what that migrator leaves short
    assert skipped == ([] if release == "4.1.1" else [
        "0011_add_error_code", "0012_add_is_system", "0013_add_attributes",
        "0014_add_attr_set_event_unique_index",
    ])  # fmt: skip
    _unlock(dsn, world)
    ids = [f.run_id for f in world.runs]
    with psycopg.connect(dsn, autocommit=True) as conn:
        done = inflight.carry(conn, ids, release, BETA29, reason="upgrade to beta.29")
        assert [(c.run_id, c.outcome) for c in done] == [(i, "carried") for i in ids], done
        audited = conn.execute(
            "SELECT count(*) FROM wfctl.repair_log WHERE code = 'carry' AND run_id = ANY(%s)",
            (ids,),
        ).fetchone()
        assert audited == (len(ids),)
        again = inflight.carry(conn, ids, release, BETA29, reason="twice")
        assert {c.outcome for c in again} == {"continues"}  # nothing left to rewrite
    assert {f.fate for f in _fates(dsn, BETA29, BETA29).values()} == {"continues"}
    # The carried runs leave no finding (the run checks: the catalog's column order after the
    # 4.3.x patch-up above is the road's business, WF151).
    runs_checks = ",".join(f"WF1{n}" for n in (
        "01", "02", "03", "04", "11", "12", "13", "21", "31", "32", "33", "34", "35", "41",
        "42", "43", "44", "45", "46", "47", "48", "49", "52", "53", "54"))  # fmt: skip
    status, out, err = run_cli("--dsn", dsn, "doctor", "--only", runs_checks)
    assert status == 0, out + err
    # The target's own jobs only: no startup re-enqueue drives the carried runs.
    with serving(dsn, inflight_logs, "beta29", JUDGE_REENQUEUE="0") as rt:
        ends = finish(rt, dsn, world.runs)
        values = {f.label: rt.run_info(f.run_id).get("returnValue") for f in world.runs}
    assert set(ends.values()) == {"completed"}, ends
    assert values == {f.label: f.value for f in world.runs}


def test_41_runs_continue_under_43(
    pg_server: Server, source_world: Callable[[str], SourceWorld], inflight_logs: Path
) -> None:
    """4.1 -> 4.3: 4.3.7's setup, then its runtime (core 4.8.9) finishes 4.1.1's runs as
    they are."""
    world = source_world("4.1.1")
    dsn = clone(pg_server, world.template, "inflight_43")
    release_setup(dsn, "4.3.7")
    _unlock(dsn, world)
    with serving(dsn, inflight_logs, "4.3.7") as rt:
        ends = finish(rt, dsn, world.runs)
        values = {f.label: rt.run_info(f.run_id).get("returnValue") for f in world.runs}
    assert set(ends.values()) == {"completed"}, ends
    assert values == {f.label: f.value for f in world.runs}


def test_beta27_runs_continue_under_beta29(
    pg_server: Server, source_world: Callable[[str], SourceWorld], inflight_logs: Path
) -> None:
    """5.0.0-beta.27 -> beta.29: core 5.0.0-beta.35 mints what beta.39 replays (the same rule),
    and runs no steps jobs; beta.29's setup, then its runtime finishes beta.27's runs as they
    are. Needs the beta.27 runtime kit (tests/node4x/5.0.0-beta.27, the release corpus)."""
    if "5.0.0-beta.27" not in KITS:
        pytest.skip("no 5.0.0-beta.27 runtime kit in tests/judge.py KITS")
    world = source_world("5.0.0-beta.27")
    dsn = clone(pg_server, world.template, "inflight_b27")
    # The same rule: even the run whose job the dead worker holds continues as it is.
    assert {f.fate for f in _fates(dsn, "5.0.0-beta.27", BETA29).values()} == {"continues"}
    real_bootstrap(dsn)
    assert finish_skipped_migrations(dsn) == []
    _unlock(dsn, world)
    fates = _fates(dsn, "5.0.0-beta.27", BETA29)
    assert {f.fate for f in fates.values()} == {"continues"}, fates
    with serving(dsn, inflight_logs, "beta29", JUDGE_REENQUEUE="0") as rt:
        ends = finish(rt, dsn, world.runs)
        values = {f.label: rt.run_info(f.run_id).get("returnValue") for f in world.runs}
    assert set(ends.values()) == {"completed"}, ends
    assert values == {f.label: f.value for f in world.runs}
