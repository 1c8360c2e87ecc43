"""The slot-log rewrite's plan (pure): which ids move where, in what replay order."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from wfctl.repair.base import Refused
from wfctl.repair.slotlog import LogEvent, plan_slot_log
from wfctl.world import ids

T0 = datetime(2026, 9, 7, 14, 2)


def ev(event_id: str, kind: str, minute: int) -> LogEvent:
    return LogEvent(event_id, kind, T0 + timedelta(minutes=minute))


def slot(n: int) -> str:
    return ids.slot_event_id(n)


def test_a_dense_log_needs_nothing() -> None:
    log = [ev(slot(1), "run_created", 0), ev(slot(2), "run_started", 1)]
    assert plan_slot_log(log, 7, rebuild_run_created=False).empty


def test_holes_are_filled_with_noop_from_spec_7_and_renumbered_below() -> None:
    log = [ev(slot(1), "run_created", 0), ev(slot(2), "run_started", 1), ev(slot(5), "x", 2)]
    sealed = plan_slot_log(log, 7, rebuild_run_created=False)
    assert sealed.fillers == (3, 4) and sealed.moves == ()
    assert sealed.final_ids == tuple(slot(n) for n in range(1, 6))
    dense = plan_slot_log(log, 6, rebuild_run_created=False)
    assert dense.fillers == () and dense.moves == ((slot(5), slot(3)),)


def test_wevt_events_merge_into_the_slot_log_by_created_at() -> None:
    """run_created first even when a peer's wevt_ run_started was written before it; after
    that each scheme keeps its own order and the two interleave by created_at."""
    a, b = ids.legacy_event_id(T0), ids.legacy_event_id(T0 + timedelta(minutes=9))
    log = [
        ev(slot(1), "run_created", 5),
        ev(slot(2), "step_created", 7),
        ev(a, "run_started", 1),
        ev(b, "step_started", 9),
    ]
    plan = plan_slot_log(sorted(log, key=lambda e: e.id), 7, rebuild_run_created=False)
    assert plan.moves == ((a, slot(2)), (slot(2), slot(3)), (b, slot(4)))


def test_a_tie_keeps_the_slot_event_first() -> None:
    a = ids.legacy_event_id(T0)
    log = [ev(slot(1), "run_created", 0), ev(slot(2), "step_created", 3), ev(a, "x", 3)]
    assert plan_slot_log(log, 7, rebuild_run_created=False).moves == ((a, slot(3)),)


def test_a_rebuilt_run_created_takes_slot_1_and_everything_shifts() -> None:
    a = ids.legacy_event_id(T0)
    log = [ev(slot(1), "run_started", 0), ev(a, "step_created", 1)]
    plan = plan_slot_log(log, 7, rebuild_run_created=True)
    assert plan.run_created_at_one
    assert plan.moves == ((slot(1), slot(2)), (a, slot(3)))
    assert plan.final_ids == (slot(1), slot(2), slot(3))


def test_a_non_slot_body_is_renumbered_and_a_log_without_run_created_refused() -> None:
    log = [ev(slot(1), "run_created", 0), ev("evnt_00000000000000000000000x02", "x", 1)]
    assert plan_slot_log(log, 7, False).moves == (("evnt_00000000000000000000000x02", slot(2)),)
    with pytest.raises(Refused):
        plan_slot_log([ev(slot(1), "run_started", 0)], 7, rebuild_run_created=False)
