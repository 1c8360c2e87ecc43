"""Rich arguments and results: encoded as the DevKit encodes them (checked against its own
reader), decoded to the annotations of the workflow's and step's signatures, a codec hook,
naive datetimes refused. Runs on real worlds of both eras; the Node side is the DevKit
runtime npm-installed in .cache/node-runtime (`@workflow/core` serialization +
`@workflow/world-postgres` 5.0.0-beta.29 `events.list`)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import node_available, psycopg_to_url
from tests.runtime import richflows
from wfctl.runtime import register_codec, serde, values
from wfctl.runtime.executor import Executor, create
from wfctl.runtime.store import Store

HYDRATE = Path(__file__).resolve().parent.parent / "node" / "hydrate.mjs"


def drive(store: Store, run_id: str, *, wait: bool = True) -> Any:
    """Drive the run to its end (or, without `wait`, until it blocks on a hook or a wait)."""
    ex = Executor(richflows.wf, store)
    try:
        return ex.drive(run_id, wait=wait, timeout=20)
    finally:
        ex.close()


# --- encoding and decoding, no database -----------------------------------------------------


def test_rich_values_encode_as_the_devkit_does() -> None:
    text = serde.stringify({"b": b"\x00\x01", "e": b"", "s": {3, 1, 2}})
    # the exact text @workflow/core's dehydrate writes for {b: Uint8Array[0,1], e: empty,
    # s: Set{1,2,3}} (observed with dehydrateStepReturnValue, devalue 5.9.0)
    assert text == (
        '[{"b":1,"e":3,"s":5},["Uint8Array",2],"AAE=",["Uint8Array",4],".",["Set",6],[7,8,9],1,2,3]'
    )
    order = richflows.sample()
    plain = serde.loads(serde.dumps(order))
    assert plain["id"] == "12345678-1234-5678-1234-567812345678"
    assert plain["placed"] == "2026-12-04" and plain["cutoff"] == "17:30:00"
    assert plain["tier"] == "gold" and plain["lines"][0]["price"] == "1.10"
    assert plain["tags"] == ["x", "y"] and plain["blob"] == b"\x00\xffwf"


def test_devkit_reducer_forms_are_read() -> None:
    # what the DevKit's own runtime writes for Date, BigInt, Map (reducer entries)
    text = (
        '[{"d":1,"big":3,"m":5},["Date",2],"2026-01-02T00:00:00.000Z",["BigInt",4],'
        '"1180591620717411303424",["Map",6],[7],[8,9],1,"a"]'
    )
    assert serde.parse(text) == {
        "d": datetime(2026, 1, 2, tzinfo=UTC),
        "big": 2**70,
        "m": {1: "a"},
    }


def test_decoders_follow_annotations_and_cost_nothing_for_plain_ones() -> None:
    assert values.decoder(str) is None and values.decoder(list[dict[str, int]]) is None
    assert values.signature(lambda x: x) is values.PLAIN
    order = richflows.sample()
    back = values.decoder(richflows.Order)(serde.loads(serde.dumps(order)))
    assert back == order
    assert values.decoder(tuple[int, Decimal])([1, "2.5"]) == (1, Decimal("2.5"))
    assert values.decoder(dict[str, set[int]])({"a": [1, 2]}) == {"a": {1, 2}}
    assert values.decoder(richflows.Tier | None)(None) is None
    with pytest.raises(values.DecodeError, match="as date"):
        values.decoder(date)("not a date")
    either = values.decoder(uuid.UUID | date)
    assert either is not None and either("2026-01-02") == date(2026, 1, 2)
    with pytest.raises(values.DecodeError, match="as any of"):
        either("garbage")


def test_naive_datetimes_are_refused_with_the_reason() -> None:
    with pytest.raises(serde.SerializationError, match="naive datetime") as caught:
        serde.dumps({"when": datetime(2026, 1, 1)}, "the input of workflow w")
    assert "at .when" in str(caught.value) and "tzinfo" in str(caught.value)


def test_codec_hook() -> None:
    class Money:
        def __init__(self, cents: int, currency: str) -> None:
            self.cents, self.currency = cents, currency

    register_codec(Money, lambda m: [m.cents, m.currency], lambda v: Money(v[0], v[1]))
    try:
        raw = serde.dumps({"m": Money(250, "EUR")})
        assert serde.loads(raw) == {"m": [250, "EUR"]}
        back = values.decoder(Money)([250, "EUR"])
        assert isinstance(back, Money) and back.cents == 250
    finally:
        values._CODECS.pop(Money, None)
    with pytest.raises(serde.SerializationError, match="register_codec"):
        serde.dumps(Money(1, "EUR"))


def test_pydantic_models_when_installed() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Address(pydantic.BaseModel):
        street: str
        postcode: str = pydantic.Field(alias="zip")

    class Customer(pydantic.BaseModel):
        id: uuid.UUID
        since: date
        address: Address

    value = Customer(
        id=uuid.uuid4(), since=date(2020, 5, 1), address=Address(street="Main", zip="1000")
    )
    plain = serde.loads(serde.dumps(value))
    assert plain["address"] == {"street": "Main", "zip": "1000"}
    assert values.decoder(Customer)(plain) == value


# --- on a real world -------------------------------------------------------------------------


def test_a_run_decodes_arguments_and_results_to_their_annotations(world, conn, store) -> None:
    richflows.SEEN.clear()
    order = richflows.sample()
    run_id = create(richflows.checkout, [order], conn=conn).run_id
    done = drive(store, run_id)
    assert done.status == "completed", done.error
    workflow_arg, step_arg, receipt = richflows.SEEN
    assert workflow_arg == order and step_arg == order
    assert receipt == richflows.Receipt(order.id, Decimal("2.25"), {"a", "b"}, (2, "n"))
    assert richflows.checkout.decode_output(done.output) == receipt
    # replaying the finished log from scratch gives the same typed values
    richflows.SEEN.clear()
    run2 = create(richflows.checkout, [order], conn=conn).run_id
    drive(store, run2)
    assert richflows.SEEN[0] == order


def test_typed_step_results_compose_with_gather(world, conn, store) -> None:
    order = richflows.sample()
    done = drive(store, create(richflows.fan, [order], conn=conn).run_id)
    assert done.status == "completed", done.error
    receipts = richflows.fan.decode_output(done.output)
    assert receipts[0] == receipts[1] and isinstance(receipts[0].total, Decimal)


def test_a_value_that_does_not_fit_its_annotation_fails_the_run(world, conn, store) -> None:
    run_id = create(richflows.untyped, [1], conn=conn).run_id
    assert drive(store, run_id).output == 1
    bad = create(richflows.checkout, [{"id": "not-a-uuid"}], conn=conn).run_id
    done = drive(store, bad)
    assert done.status == "failed"
    assert "cannot decode" in (done.error or "")


@pytest.mark.skipif(not node_available(), reason="node/npm not found")
def test_the_node_package_reads_every_rich_type(world, conn, store) -> None:
    from tests.judge import RUNTIME_CACHE, install_runtime

    install_runtime()
    order = richflows.sample()
    run_id = create(richflows.checkout, [order], conn=conn).run_id
    assert drive(store, run_id).status == "completed"
    env = {**os.environ, "WORKFLOW_POSTGRES_URL": psycopg_to_url(world.dsn)}
    env.pop("DATABASE_URL", None)
    done = subprocess.run(
        ["node", str(HYDRATE)],
        cwd=RUNTIME_CACHE,
        env=env,
        input=json.dumps([run_id]),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (line,) = [json.loads(x) for x in done.stdout.splitlines() if x.startswith('{"ok":')]
    assert line["ok"], line
    by_type: dict[str, list[Any]] = {}
    for p in line["payloads"]:
        by_type.setdefault(p["eventType"], []).append(p["value"])
    (args,) = by_type["run_created"]
    node_order = args[0]
    assert node_order["id"] == str(order.id) and node_order["tier"] == "gold"
    assert node_order["placed"] == "2026-12-04" and node_order["cutoff"] == "17:30:00"
    assert node_order["lines"][0] == {"sku": "a", "price": "1.10", "qty": 2}
    assert node_order["tags"] == {"$set": ["x", "y"]}
    assert node_order["blob"] == {"$bytes": base64.b64encode(order.blob).decode()}
    assert node_order["at"] == {"$date": "2026-01-01T00:00:00.000Z"}
    results = by_type["step_completed"]
    assert {"$bytes": base64.b64encode(order.blob[::-1]).decode()} in results
    (output,) = by_type["run_completed"]
    assert output["total"] == "2.25" and output["skus"] == {"$set": ["a", "b"]}
    assert output["pair"] == [2, "n"]


def test_typed_hook_payloads_and_json_arguments_from_the_cli(world, conn, store, run_cli) -> None:
    order = richflows.sample()
    run_id = create(richflows.approve, [order], conn=conn).run_id
    assert drive(store, run_id, wait=False).status == "running"  # parked on its hook
    status, _, err = run_cli(
        "--dsn", world.dsn, "hooks", "resume", f"approve-{order.id}",
        '{"approved": true, "limit": "250.00"}',
    )  # fmt: skip
    assert status == 0, err
    done = drive(store, run_id)
    assert done.status == "completed", done.error
    assert done.output == "gold: True up to 250.00"
    # `wfctl run` reads ARGS as JSON: an object for a dataclass parameter, decoded by the run
    arg = json.dumps(
        [
            {
                "id": str(order.id),
                "placed": "2026-12-04",
                "cutoff": "09:00",
                "tier": "silver",
                "lines": [{"sku": "z", "price": "3.30", "qty": 3}],
            }
        ]
    )
    status, out, err = run_cli(
        "--dsn", world.dsn, "--format", "json", "run", "tests/runtime/richflows.py:checkout",
        arg, "--wait", "--timeout", "20s",
    )  # fmt: skip
    assert status == 0, out + err
    assert '"9.90"' in out or "9.90" in out


@dataclass
class _Stamp:
    at: time


def test_time_and_date_values_keep_their_text() -> None:
    assert serde.loads(serde.dumps(_Stamp(time(8, 0)))) == {"at": "08:00:00"}
    assert values.decoder(_Stamp)({"at": "08:00:00"}) == _Stamp(time(8, 0))
