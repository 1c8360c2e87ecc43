"""What rich arguments cost, and that plain ones pay nothing for them (CPU, no database).

    python benchmarks/bench_values.py [--rounds 40] [--number 2000]

Interleaved in one process, best of ROUNDS rounds of NUMBER calls each (microseconds per
call), as ratios to a floor measured in the same run:
- floor: `json.dumps` of the plain payload (a typical step input: a dict with a nested list,
  a datetime as an ISO string, floats, bools, None);
- `serde.dumps` / `serde.loads` of that plain payload (the path every step takes);
- `serde.dumps` of the same data as a dataclass with `Decimal`, `date`, `set` and `Enum`
  fields, and decoding it back to the dataclass (`values.decoder`), the rich path;
- the step boundary: `StepDef.invoke` of a step with plain annotations against calling its
  function directly (what decoding costs a plain step: a cached-signature check), and of a
  step annotated with the dataclass (the decoding itself).
Prints a JSON report.
"""

from __future__ import annotations

import argparse
import enum
import json
import os
import sys
import timeit
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from wfctl.runtime import Workflows, serde, values


class Tier(enum.Enum):
    GOLD = "gold"


@dataclass
class Item:
    sku: str
    n: int


@dataclass
class Order:
    order: str
    items: list[Item]
    placed: date
    total: Decimal
    tags: set[str]
    tier: Tier
    ok: bool
    note: str | None


wf = Workflows()


@wf.step
def plain_step(order: dict[str, Any]) -> int:
    return len(order)


@wf.step
def rich_step(order: Order) -> int:
    return len(order.items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--number", type=int, default=2000)
    opts = parser.parse_args()
    when = datetime(2026, 1, 2, tzinfo=UTC)
    plain = {
        "order": "o-1",
        "items": [{"sku": "a", "n": 2}, {"sku": "b", "n": 1}],
        "when": when,
        "total": 12.5,
        "ok": True,
        "note": None,
    }
    as_json = {**plain, "when": when.isoformat()}
    rich = Order(
        "o-1", [Item("a", 2), Item("b", 1)], date(2026, 1, 2), Decimal("12.50"), {"x"},
        Tier.GOLD, True, None,
    )  # fmt: skip
    plain_raw, rich_raw = serde.dumps(plain), serde.dumps(rich)
    decode = values.decoder(Order)
    assert decode is not None
    rich_plain = serde.loads(rich_raw)
    plain_args, rich_args = [serde.loads(plain_raw)], [rich_plain]
    cases = {
        "floor json.dumps (plain)": lambda: json.dumps(as_json),
        "serde.dumps plain": lambda: serde.dumps(plain),
        "serde.loads plain": lambda: serde.loads(plain_raw),
        "serde.dumps dataclass": lambda: serde.dumps(rich),
        "decode dataclass": lambda: decode(serde.loads(rich_raw)),
        "call the step function directly": lambda: plain_step.fn(*plain_args),
        "StepDef.invoke plain step": lambda: plain_step.invoke(plain_args),
        "StepDef.invoke dataclass step": lambda: rich_step.invoke(rich_args),
    }
    best = dict.fromkeys(cases, float("inf"))
    load_before = os.getloadavg()
    for _ in range(opts.rounds):
        for name, fn in cases.items():  # interleaved: a burst hits every case
            best[name] = min(best[name], timeit.timeit(fn, number=opts.number))
    us = {name: t / opts.number * 1e6 for name, t in best.items()}
    floor = us["floor json.dumps (plain)"]
    direct = us["call the step function directly"]
    report = {
        "rounds": opts.rounds,
        "number": opts.number,
        "load_before_after": [load_before[0], os.getloadavg()[0]],
        "us_per_call": {k: round(v, 3) for k, v in us.items()},
        "x_json_floor": {
            k: round(v / floor, 2) for k, v in us.items() if "serde" in k or "decode" in k
        },
        "invoke_overhead_us": {
            "plain step": round(us["StepDef.invoke plain step"] - direct, 3),
            "dataclass step": round(us["StepDef.invoke dataclass step"] - direct, 3),
        },
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
