"""Identifier helpers: the formats of reference §2, with strict bounds."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wfctl.world import ids


@given(st.integers(min_value=1, max_value=ids.MAX_EVENT_SLOT))
def test_slot_ids_round_trip_and_sort_in_slot_order(slot: int) -> None:
    event_id = ids.slot_event_id(slot)
    assert len(event_id) == 31
    assert ids.event_slot(event_id) == slot
    if slot < ids.MAX_EVENT_SLOT:
        assert event_id < ids.slot_event_id(slot + 1)


def test_slot_bounds_are_strict() -> None:
    assert ids.slot_event_id(1) == "evnt_00000000000000000000000001"
    assert ids.event_slot("evnt_00000000009007199254740991") == 2**53 - 1
    assert ids.event_slot("evnt_00000000009007199254740992") is None  # past 2^53-1
    assert ids.event_slot("evnt_00000000010000000000000000") is None  # first 10 not zero
    assert ids.event_slot("evnt_00000000000000000000000000") is None  # slot 0
    assert ids.event_slot("evnt_0000000000000000000000001") is None  # 25 digits
    assert ids.event_slot("wevt_01M8XB1HBN9D4RVQ4SK527Y9AQ") is None
    for bad in (0, -1, ids.MAX_EVENT_SLOT + 1):
        with pytest.raises(ValueError):
            ids.slot_event_id(bad)


def test_legacy_ids_and_ulid_time() -> None:
    event_id = ids.legacy_event_id()
    assert ids.is_legacy_event_id(event_id)
    assert not ids.is_legacy_event_id("wevt_not-a-ulid")
    assert not ids.is_legacy_event_id("evnt_00000000000000000000000001")
    assert ids.ulid_time("wrun_01M8XB1HBN9D4RVQ4SK527Y9AQ") is not None
    assert ids.ulid_time("wrun_lowercase01m8xb1hbn9d4rv") is None
    assert ids.is_ulid("7ZZZZZZZZZZZZZZZZZZZZZZZZZ")
    assert not ids.is_ulid("8ZZZZZZZZZZZZZZZZZZZZZZZZZ")  # time part overflows 48 bits


def test_legacy_ids_sort_after_slot_ids() -> None:
    # Why a legacy run keeps `wevt_` for life, and why one in a slot run breaks allocation.
    assert ids.legacy_event_id() > ids.slot_event_id(ids.MAX_EVENT_SLOT)


def test_monotonic_ulids_increase_and_respect_a_floor() -> None:
    gen = ids.MonotonicUlid()
    values = [gen.next() for _ in range(1000)]
    assert values == sorted(values) and len(set(values)) == 1000
    floor = "7ZZZZZZZZZZZZZZZZZZZZZZZZY"
    assert gen.next(after=floor) == "7ZZZZZZZZZZZZZZZZZZZZZZZZZ"


def test_wait_row_key_round_trip() -> None:
    run, corr = "wrun_01M8XB1HBN9D4RVQ4SK527Y9AQ", "wait_01M8XB1HBN9D4RVQ4SK527Y9AR"
    key = ids.wait_row_key(run, corr)
    assert key == f"{run}-{corr}"
    assert ids.wait_correlation_id(run, key) == corr
    with pytest.raises(ValueError):
        ids.wait_correlation_id("wrun_other", key)
