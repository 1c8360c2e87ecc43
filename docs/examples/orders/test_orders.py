"""The order service's tests, on `wfctl.testing`'s public API: a real PostgreSQL world per test,
a fake clock (the child's two-day sleep, the charge's retry delay and the approval's
three-day window pass at once), a scheduled tick fired, every finished run replayed against
the code at teardown."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from wfctl.runtime import Client, RunFailedError
from wfctl.testing import World

from . import flows, service
from .flows import Line, Order, Receipt


@pytest.fixture(autouse=True)
def fresh_services() -> Iterator[None]:
    flows.payments.__init__()  # type: ignore[misc]
    flows.stock.clear()
    flows.digests.clear()
    yield


@pytest.fixture
def client(world: World) -> Iterator[Client]:
    world.use(flows.wf)
    with Client(world.dsn) as c:
        yield c


def small() -> Order:
    return Order("o-1", "ana", "1 Main St", [Line("tea", 2, Decimal("4.50"))])


def large() -> Order:
    return Order("o-2", "bo", "2 High St", [Line("bike", 1, Decimal("899.00"))])


def test_a_small_order_ships_after_the_carrier_waits_two_days(world: World) -> None:
    started = world.clock.now()
    receipt = world.run_to_end(flows.place_order, small())
    assert isinstance(receipt, Receipt)  # decoded to the annotation
    assert receipt.status == "shipped" and receipt.total == Decimal("9.00")
    assert receipt.tracking is not None and receipt.tracking.startswith("TRK-o-1-")
    assert world.clock.now() - started >= timedelta(days=2)  # the child's sleep, fast-forwarded
    assert list(flows.payments.charges.values()) == [("ch_1", Decimal("9.00"))]
    assert flows.stock == {"tea": 2}


def test_a_large_order_waits_for_approval_through_the_client(world: World, client: Client) -> None:
    run_id = service.place(client, large())
    assert service.place(client, large()) == run_id  # idempotent per order
    assert world.run_until(run_id, "1d").status == "running"  # parked on approve-o-2
    assert client.get(run_id).status == "running"
    assert service.approve(client, "o-2", by="cleo") == run_id
    receipt = world.finish(run_id)  # the child `ship` is driven too
    assert receipt.status == "shipped" and receipt.approved_by == "cleo"
    assert service.status(client, run_id)["status"] == "completed"
    assert client.get(run_id).output["charge_id"] == receipt.charge_id


def test_a_rejected_order_releases_its_stock(world: World, client: Client) -> None:
    run_id = service.place(client, large())
    world.drive(run_id)
    assert flows.stock == {"bike": 1}
    service.approve(client, "o-2", by="cleo", approved=False)
    receipt = world.finish(run_id)
    assert receipt == Receipt("o-2", "rejected", Decimal("899.00"), approved_by="cleo")
    assert flows.stock == {"bike": 0} and flows.payments.calls == 0


def test_a_flaky_provider_is_retried_with_one_idempotency_key(world: World) -> None:
    flows.payments.fail_next = 2
    started = world.clock.now()
    receipt = world.run_to_end(flows.place_order, small())
    assert receipt.status == "shipped"
    assert flows.payments.calls == 3 and len(flows.payments.charges) == 1
    (key,) = flows.payments.charges
    run_id, step_id = key.split("/")
    assert run_id.startswith("wrun_") and step_id.startswith("step_")
    # Two backed-off retries (2 s, 4 s before jitter) passed on the fake clock.
    assert world.clock.now() - started >= timedelta(days=2, seconds=3)


def test_a_child_failure_reaches_the_parent(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(order_id: str, address: str) -> str:
        raise ValueError("label printer on fire")

    monkeypatch.setattr(flows.print_label, "fn", broken)
    run_id = world.start(flows.place_order, small())
    with pytest.raises(Exception) as failed:
        world.finish(run_id)
    assert "label printer on fire" in str(failed.value)
    with Client(world.dsn) as c, pytest.raises(RunFailedError):
        c.get(run_id).result(timeout=5)
    world.replay_on_teardown = False  # the replay would call the patched-out step's code


def test_the_hourly_digest_runs_once_per_hour(world: World) -> None:
    world.clock.advance_to(datetime(2030, 5, 6, 10, 0, 2, tzinfo=UTC))
    run_id = world.tick(flows.hourly_digest)  # the 10:00 tick, as a worker's scheduler starts it
    assert world.tick(flows.hourly_digest) == run_id  # a second worker makes no second run
    assert world.finish(run_id) == "digest 2030-05-06 10:00"
    assert flows.digests == ["digest 2030-05-06 10:00"]


def test_an_approval_that_never_comes_times_out(world: World, client: Client) -> None:
    run_id = service.place(client, large())
    world.run_until(run_id, "1d")  # a day later: still waiting for the manager
    assert world.status(run_id) == "running" and flows.stock == {"bike": 1}
    world.time_out_hook(run_id, "approve-o-2")  # the third day passes without a decision
    receipt = world.finish(run_id)
    assert receipt.status == "rejected" and receipt.approved_by == flows.NO_DECISION
    assert flows.stock == {"bike": 0} and flows.payments.calls == 0
