"""`wfctl info` names the spec versions a world holds (runs, events) and what doctor does with
each: a mixed-version world is the norm (every run keeps its creation's version)."""

from __future__ import annotations

import json

from tests import realworld as rw
from wfctl.world import ids


def _world(db) -> None:
    with db.connect() as conn:
        for spec, n_events, expired in (("7", 3, False), ("7", 2, True), ("9", 4, False)):
            run_id = rw.new_run_id()
            conn.execute(
                "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name,"
                " spec_version, expired_at) VALUES (%s, 'postgres', 'completed', %s, %s,"
                " CASE WHEN %s THEN localtimestamp END)",
                (run_id, rw.WORKFLOW, spec, expired),
            )
            for n in range(1, n_events + 1):
                conn.execute(
                    "INSERT INTO workflow.workflow_events (id, type, run_id, spec_version)"
                    " VALUES (%s, 'run_started', %s, %s)",
                    (ids.slot_event_id(n), run_id, int(spec)),
                )


def test_info_counts_runs_and_events_per_spec_version(slot_world, run_cli) -> None:
    _world(slot_world)
    status, out, err = run_cli("--dsn", slot_world.dsn, "--format", "json", "info")
    assert status == 0, err
    by_spec = {v["spec_version"]: v for v in json.loads(out)["spec_versions"]}
    assert set(by_spec) == {"7", "9"}
    assert (by_spec["7"]["runs"], by_spec["7"]["expired_runs"], by_spec["7"]["events"]) == (2, 1, 5)
    assert (by_spec["9"]["runs"], by_spec["9"]["events"]) == (1, 4)
    assert by_spec["7"]["doctor_skips"] == []
    assert any("noop" in n for n in by_spec["7"]["notes"])
    assert set(by_spec["9"]["doctor_skips"]) == {
        "WF101", "WF102", "WF103", "WF111", "WF112", "WF113"
    }  # fmt: skip

    status, text, _ = run_cli("--dsn", slot_world.dsn, "info")
    assert status == 0
    assert "spec 7 (sealed log (noop fillers)): 2 runs, 1 emptied by retention, 5 events" in text
    assert "doctor skips WF101, WF102, WF103, WF111, WF112, WF113" in text


def test_info_on_an_empty_world_names_no_versions(slot_world, run_cli) -> None:
    status, out, _ = run_cli("--dsn", slot_world.dsn, "info")
    assert status == 0 and "spec versions: none" in out


def test_info_on_a_world_older_than_spec_versions(slot_world, run_cli) -> None:
    with slot_world.connect() as conn:
        conn.execute("ALTER TABLE workflow.workflow_events DROP COLUMN spec_version")
    status, out, _ = run_cli("--dsn", slot_world.dsn, "info")
    assert "spec versions: unknown (this world predates spec versions" in out
    assert status == 0  # a drifted catalog, still a slot-era world
