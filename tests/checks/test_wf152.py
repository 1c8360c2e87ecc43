"""WF152: a wait_completed carries a resumeAt that differs from its wait_created's."""

from __future__ import annotations

from datetime import timedelta

from tests import realworld as rw
from tests.checks.conftest import assert_fires
from tests.checks.test_wf153 import sleeping, woken_by_hand


def test_completed_with_the_rows_moved_deadline(world, real_world, doctor) -> None:
    """The package accepts any resumeAt on wait_completed (it only updates the row): a tool
    that rebuilt the completion from a hand-moved row (WF153) journals a deadline the sleep
    consumer rejects on every replay."""
    run_id, wait_id, resume_at = woken_by_hand(world, real_world)
    world.ok([rw.wait_completed(run_id, wait_id, resume_at - timedelta(hours=1))])
    check = assert_fires(doctor, real_world, "WF152", wait_id)
    [sample] = check["samples"]
    assert sample["run_id"] == run_id and sample["detail"].endswith("(-3600.000 s)")
    assert check["severity"] == "critical"


def test_runtime_shaped_completions_are_silent(world, real_world, doctor) -> None:
    """What core writes: the exact resumeAt copied from wait_created, or none at all."""
    run_id, wait_id, resume_at = sleeping(world)
    world.ok([rw.wait_completed(run_id, wait_id, resume_at)])
    run_id, wait_id, _ = sleeping(world)
    world.ok([rw.wait_completed(run_id, wait_id)])
    status, checks, _ = doctor(real_world, "--min-age", "0s", "--all", "--only", "WF152")
    assert checks["WF152"]["count"] == 0 and checks["WF152"]["in_flight"] == 0
    assert status == 0


def test_young_completions_are_in_flight(world, real_world, doctor) -> None:
    run_id, wait_id, resume_at = sleeping(world)
    world.ok([rw.wait_completed(run_id, wait_id, resume_at + timedelta(milliseconds=1))])
    _, checks, _ = doctor(real_world, "--only", "WF152")
    assert checks["WF152"]["in_flight"] == 1 and checks["WF152"]["count"] == 0
    assert "+0.001 s" in checks["WF152"]["samples"][0]["detail"]
