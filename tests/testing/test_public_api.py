"""Testing workflows through `wfctl.testing`'s public API only (docs/testing.md): a hook
delivered or left to time out, the clock moved to a point with the run following, a
scheduled workflow's tick fired."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.testing import flows
from wfctl.runtime import DecodeError
from wfctl.testing import RunBlocked, World


def test_a_hook_delivered_before_its_deadline(world: World) -> None:
    run_id = world.start(flows.await_shipment, "o-1")
    done = world.run_until(run_id, "1d")  # parked on the hook, a day before its deadline
    assert done.status == "running" and done.next_due is not None
    with pytest.raises(DecodeError):  # a typed hook checks the payload: nothing written
        world.resume_hook("ship-o-1", {"carrier": "dhl"})
    world.resume_hook("ship-o-1", {"carrier": "dhl", "tracking": "T1"})
    assert world.finish(run_id) == "o-1: dhl T1"


def test_a_hook_left_to_time_out(world: World) -> None:
    run_id = world.start(flows.await_shipment, "o-2")
    started = world.clock.now()
    done = world.time_out_hook(run_id, "ship-o-2")
    assert done.status == "completed"
    assert world.finish(run_id) == "o-2: no shipment after 2 days"
    assert world.clock.now() - started >= timedelta(days=2)
    # finish alone takes the same path: a hook with a timeout never blocks it
    assert world.run_to_end(flows.await_shipment, "o-3") == "o-3: no shipment after 2 days"


def test_a_hook_without_a_timeout_blocks(world: World) -> None:
    run_id = world.start(flows.approval, "o-4")
    world.drive(run_id)
    with pytest.raises(RunBlocked, match="approve-o-4"):
        world.time_out_hook(run_id)
    with pytest.raises(LookupError):
        world.time_out_hook(run_id, "nobody-holds-this")
    with pytest.raises(RunBlocked, match="approve-o-4"):
        world.finish(run_id)
    world.resume_hook("approve-o-4", {"answer": "yes"})
    assert world.finish(run_id) == "o-4: yes"


def test_a_delivery_before_the_hook_exists_is_kept(world: World) -> None:
    assert world.resume_hook("ship-o-5", {"carrier": "ups", "tracking": "T5"}) is None
    assert world.run_to_end(flows.await_shipment, "o-5") == "o-5: ups T5"


def test_the_clock_moves_to_a_point_and_the_run_follows(world: World) -> None:
    run_id = world.start(flows.reminders, "o-6")
    origin = world.clock.now()
    done = world.run_until(run_id, origin + timedelta(days=2, hours=1))
    assert done.status == "running"
    assert done.next_due is not None and done.next_due > origin + timedelta(days=2, hours=1)
    assert world.clock.now() >= origin + timedelta(days=2, hours=1)
    assert world.status(run_id) == "running"
    assert len(world.finish(run_id)) == 3
    with pytest.raises(ValueError, match="aware"):
        world.run_until(run_id, datetime(2030, 1, 1))


def test_a_scheduled_tick_fires(world: World) -> None:
    flows.TICKS.clear()
    world.clock.advance_to(datetime(2031, 3, 4, 10, 20, tzinfo=UTC))
    run_id = world.tick(flows.quarter_hourly)  # the latest tick: 10:15
    assert world.tick(flows.quarter_hourly) == run_id  # every worker makes the same run
    assert world.finish(run_id) == "report 2031-03-04 10:15"
    later = world.tick(flows.quarter_hourly, datetime(2031, 3, 4, 10, 30, tzinfo=UTC))
    assert later != run_id and world.finish(later) == "report 2031-03-04 10:30"
    assert flows.TICKS == ["10:15", "10:30"]
    with pytest.raises(ValueError, match="no schedule"):
        world.tick(flows.approval)
