"""WF149, WF153, WF154: the row is set from the log (no event written), under lock,
idempotently, audited; the package then reads the healed row and its next write agrees."""

from __future__ import annotations

import base64
from typing import Any

from tests import realworld as rw
from tests.checks.test_wf149 import attr_set, attributes, torn_attr_set
from tests.checks.test_wf153 import woken_by_hand
from tests.checks.test_wf154 import output_lost
from tests.conftest import Db
from tests.repair.conftest import events, outcomes
from wfctl.world import codec


def _audit_rows(db: Db) -> int:
    with db.connect() as conn:
        row = conn.execute("SELECT count(*) FROM wfctl.repair_log").fetchone()
    assert row is not None
    return int(row[0])


def _apply_once(repair: Any, apply: Any, db: Db, code: str, *scope: str) -> dict[str, Any]:
    """Dry run (writes nothing), apply (one row change, audited), apply again (nothing)."""
    audits = _audit_rows(db)
    status, plan = repair(db, "--min-age", "0s", "--force-min-age", "--only", code, *scope)
    assert status == 0 and outcomes(plan)[code] == ["planned"], plan
    assert _audit_rows(db) == audits
    status, report = apply(db, "--only", code, *scope)
    assert status == 0 and outcomes(report)[code] == ["applied"], report
    [item] = report["items"]
    assert [w.split(":")[0] for w in item["event_ids"]] == ["row"]  # no event written
    assert report["after"].get(code, 0) == 0
    assert _audit_rows(db) == audits + 1
    status, again = apply(db, "--only", code, *scope)
    assert status == 0 and again["items"] == []
    return report


def test_wf149_sets_the_row_to_the_fold(world, real_world, repair, apply) -> None:
    run_id = torn_attr_set(world, real_world)
    before = events(real_world, run_id)
    report = _apply_once(repair, apply, real_world, "WF149", "--all")
    assert any("'phase': 'done' on the row" in a for a in report["items"][0]["actions"])
    expected = {"team": "a", "phase": "init", "tmp": "x"}
    assert attributes(real_world, run_id) == expected
    assert events(real_world, run_id) == before
    [read] = rw.read_back(real_world.dsn, [run_id]).values()
    assert read["ok"] and read["run"]["attributes"] == expected, read


def test_wf149_on_a_live_run_then_the_redelivered_write_lands(world, real_world, apply):
    """The direction is the runtime's: healed to the log, the run's own redelivery of the
    lost write re-applies it and journals it, and row and log agree on its value."""
    run_id = torn_attr_set(world, real_world, cancel=False)
    status, report = apply(real_world, "--only", "WF149")
    assert status == 0 and outcomes(report)["WF149"] == ["applied"], report
    world.ok([attr_set(run_id, "attr_02", phase="done", tmp=None)])
    assert attributes(real_world, run_id) == {"team": "a", "phase": "done"}
    status, again = apply(real_world, "--only", "WF149")
    assert status == 0 and again["items"] == []


def test_wf153_sets_resume_at_from_wait_created(world, real_world, repair, apply) -> None:
    run_id, wait_id, resume_at = woken_by_hand(world, real_world)
    before = events(real_world, run_id)
    _apply_once(repair, apply, real_world, "WF153")
    with real_world.connect() as conn:
        [(on_row,)] = conn.execute(
            "SELECT resume_at FROM workflow.workflow_waits WHERE run_id = %s", (run_id,)
        ).fetchall()
    assert on_row == resume_at.replace(tzinfo=None)
    assert events(real_world, run_id) == before
    # the package completes it as core would, with wait_created's exact resumeAt: all clean
    world.ok([rw.wait_completed(run_id, wait_id, resume_at)])
    status, again = apply(real_world, "--only", "WF152,WF153")
    assert status == 0 and again["items"] == []


def test_wf154_copies_the_output_from_run_completed(world, real_world, repair, apply) -> None:
    run_id = output_lost(world, real_world)
    _apply_once(repair, apply, real_world, "WF154", "--all")
    output = rw.devl('[{"total":1},42]')
    with real_world.connect() as conn:
        [(cbor,)] = conn.execute(
            "SELECT output_cbor FROM workflow.workflow_runs WHERE id = %s", (run_id,)
        ).fetchall()
    assert codec.decode(cbor) == output
    [read] = rw.read_back(real_world.dsn, [run_id]).values()
    assert read["ok"], read
    assert read["run"]["output"] == {"$bytes": base64.b64encode(output).decode()}
