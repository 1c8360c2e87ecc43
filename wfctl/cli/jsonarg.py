"""JSON given on the command line (`wfctl run ... ARGS`, `wfctl hooks resume --payload`).

Python's json module accepts `NaN` and `Infinity`, which no other JSON reader does (the Node
runtime's included: a run would carry a value its own tools cannot read back), and reads a
number beyond a double's range (`1e400`) as infinity, the same value by another spelling;
a deeply
nested document overflows the interpreter's stack (here or when it is encoded). Both are
usage errors, said in one line.
"""

from __future__ import annotations

import json
import math
from typing import Any

from wfctl.errors import UsageError

MAX_DEPTH = 64  # arrays and objects nested in each other


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_number(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text} is beyond the range of a JSON number (a double)")
    return number


def load(text: str, what: str, hint: str | None = None) -> Any:
    """`text` parsed as strict JSON, or a UsageError naming `what`."""
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_number)
    except RecursionError:
        raise UsageError(f"{what} is nested too deeply", hint=hint) from None
    except ValueError as exc:  # JSONDecodeError, or NaN/Infinity
        raise UsageError(f"{what} is not JSON: {exc}", hint=hint) from None
    if _depth(value) > MAX_DEPTH:
        raise UsageError(f"{what} is nested deeper than {MAX_DEPTH} levels", hint=hint)
    return value


def _depth(value: Any) -> int:
    """How deeply arrays/objects nest (iterative: the value may be deep)."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, list | dict):
            deepest = max(deepest, level)
            if level > MAX_DEPTH:
                break
            children = item.values() if isinstance(item, dict) else item
            todo.extend((c, level + 1) for c in children)
    return deepest
