"""Identifier helpers: the formats of reference §2, with strict bounds."""

from __future__ import annotations

import os
import threading
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ulid import ULID

from wfctl.world import ids
from wfctl.world.writer import EventWriter

RANDOM_MASK = (1 << 80) - 1


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
    assert gen.next(after=floor) == "7ZZZZZZZZZZZZZZZZZZZZZZZZZ"  # no room for a random step
    later = "7ZZZZZZZZZZZZZZZZZZZZZZZZZ"
    with pytest.raises(ValueError):
        gen.next(after=later)
    old = "01M8XB1HBN9D4RVQ4SK527Y9AQ"
    assert ids.MonotonicUlid().next(after=old) > old


@given(st.integers(min_value=0, max_value=2**128 - 1))
def test_ulid_text_is_python_ulids_text(value: int) -> None:
    text = ids.ulid_text(value)
    assert text == str(ULID.from_int(value))
    assert ids.ulid_value(text) == value


def _chains(writers: list[EventWriter], per_writer: int) -> list[str]:
    """Each writer continues its own run's log (`after` = its previous id), the writers taking
    turns one id at a time."""
    last: list[str | None] = [None] * len(writers)
    minted: list[str] = []
    for _ in range(per_writer):
        for i, writer in enumerate(writers):
            last[i] = writer.next_event_id("legacy", last[i])
            minted.append(last[i] or "")
    return minted


def test_event_ids_are_unique_across_threads() -> None:
    # Eight writers (worker slots: each has a Store, each Store an EventWriter) minting on
    # eight threads. Each writer used to have its own generator on top of python-ulid's
    # `ULID()`, whose per-process monotonic state is not thread-safe: duplicates by the
    # thousand, i.e. `workflow_events_pkey` violations (rollback, replay) in a worker.
    def mint(out: list[str]) -> None:
        out.extend(_chains([EventWriter(slots=False)], 25_000))

    outputs: list[list[str]] = [[] for _ in range(8)]
    threads = [threading.Thread(target=mint, args=(out,)) for out in outputs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    minted = [i for out in outputs for i in out]
    assert len(set(minted)) == len(minted) == 200_000


def test_separate_generators_do_not_meet_after_one_floor() -> None:
    # Two processes continuing one floor (a run handed from one worker to another, or clocks
    # behind the floor): the fallback steps by a random amount, not by one.
    floor = ids.ulid_text(((time.time_ns() // 1_000_000) + 60_000) << 80)  # a minute ahead
    a, b = ids.MonotonicUlid(), ids.MonotonicUlid()
    xs = [a.next(after=floor) for _ in range(20_000)]
    ys = [b.next(after=floor) for _ in range(20_000)]
    assert xs == sorted(xs) and ys == sorted(ys) and xs[0] > floor and ys[0] > floor
    assert not set(xs) & set(ys)


@given(
    st.integers(min_value=0, max_value=(1 << 128) - 3),
    st.integers(min_value=2, max_value=1 << 100),
    st.booleans(),
)
def test_an_id_between_two_sorts_strictly_between(low: int, gap: int, first: bool) -> None:
    high = min(low + gap, (1 << 128) - 1)
    before = None if first else "wevt_" + ids.ulid_text(low)
    after = "wevt_" + ids.ulid_text(high)
    chosen = ids.legacy_id_between(before, after)
    assert (before or "") < chosen < after and ids.is_legacy_event_id(chosen)


def test_an_id_between_avoids_the_edges_the_package_mints() -> None:
    """`first - 1` and `previous + 1` are where the package's +1 minting puts other runs'."""
    low, high = ids.ulid_value(ids.new_ulid()), ids.ulid_value(ids.new_ulid()) + (1 << 70)
    edges = {"wevt_" + ids.ulid_text(low + 1), "wevt_" + ids.ulid_text(high - 1)}
    picks = {
        ids.legacy_id_between(before, "wevt_" + ids.ulid_text(high))
        for before in (None, "wevt_" + ids.ulid_text(low))
        for _ in range(50)
    }
    assert len(picks) == 100 and not picks & edges
    with pytest.raises(ValueError, match="no wevt_ id is free"):
        ids.legacy_id_between("wevt_" + ids.ulid_text(low), "wevt_" + ids.ulid_text(low + 1))


def test_wait_row_key_round_trip() -> None:
    run, corr = "wrun_01M8XB1HBN9D4RVQ4SK527Y9AQ", "wait_01M8XB1HBN9D4RVQ4SK527Y9AR"
    key = ids.wait_row_key(run, corr)
    assert key == f"{run}-{corr}"
    assert ids.wait_correlation_id(run, key) == corr
    with pytest.raises(ValueError):
        ids.wait_correlation_id("wrun_other", key)


def test_a_forked_child_does_not_repeat_its_parents_random_bits() -> None:
    """The generator's random state is seeded again in a forked child (os.register_at_fork):
    without it, parent and child would draw the same 80 random bits for their next ids."""
    gen = ids.MonotonicUlid()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: send its next id's random part, and leave at once
        os.write(write, (ids.ulid_value(gen.next()) & RANDOM_MASK).to_bytes(10))
        os._exit(0)
    os.close(write)
    try:
        child = int.from_bytes(os.read(read, 10))
    finally:
        os.close(read)
        os.waitpid(pid, 0)
    assert child != ids.ulid_value(gen.next()) & RANDOM_MASK
