"""Values crossing the durable boundary: the `devl` payload format (reference §7.1).

A payload is `b"devl"` + the UTF-8 text of `devalue.stringify(value)`, the format the
Workflow DevKit writes for its own values, so the DevKit's tools (and `wfctl runs show`)
can display Python runs. devalue's text is JSON with a twist: the top level is an array of
values and every object or array refers to its members by index (`{"a": 1}` is
`[{"a":1},1]`, `[1, 2]` is `[[1,2],1,2]`); `-1` is undefined; `["Date", iso]` a Date and
`["BigInt", "123"]` a BigInt. We write exactly that subset (checked against the devalue
package the DevKit installs, tests/runtime/test_serde.py) and read it back, so a value
round-trips as JSON-like Python data: dict (str keys), list/tuple, str, int, float, bool,
None, and aware `datetime` (a naive one is refused: wfctl does not guess its zone).

Other values go to `values.reduce` (dataclasses, pydantic models, Decimal, UUID, date, time,
bytes, sets, Enum, registered codecs), reached only when a value is none of the above, so plain
values pay nothing for it. Anything else raises `SerializationError` naming the value's type,
the path inside the value and where it came from.
"""

from __future__ import annotations

import base64
import gzip
import json
import math
import traceback
from datetime import UTC, datetime
from typing import Any

from wfctl.runtime import values as _values
from wfctl.runtime.errors import WorkflowError

PREFIX = b"devl"
_MAX_SAFE = 2**53 - 1
_UNDEFINED, _HOLE, _NAN, _POS_INF, _NEG_INF, _NEG_ZERO = -1, -2, -3, -4, -5, -6


NAIVE = (
    "a naive datetime (no tzinfo) is refused: its instant depends on the zone of the process "
    "reading it; attach one (datetime.now(UTC), dt.replace(tzinfo=ZoneInfo(...)))"
)


class PayloadUnreadable(WorkflowError, ValueError):
    """A payload in a format wfctl cannot open (encrypted, or a compression it lacks)."""


class SerializationError(WorkflowError, TypeError):
    """A value that cannot cross the durable boundary (inputs, outputs, errors, payloads)."""

    def __init__(self, type_name: str, where: str, path: str = "", detail: str = "") -> None:
        at = f" at {path}" if path else ""
        super().__init__(
            f"cannot serialise a value of type {type_name}{at} in {where}: "
            + (
                detail
                or "only JSON-like values (dict with str keys, list, tuple, str, int, float, "
                "bool, None), aware datetime, date, time, Decimal, UUID, bytes, set, Enum, "
                "dataclasses and pydantic models cross the durable boundary (add others "
                "with wfctl.runtime.register_codec)"
            )
        )
        self.type_name = type_name
        self.where = where
        self.path = path


def stringify(value: Any, where: str = "a value") -> str:
    """devalue.stringify for JSON-like Python values."""
    values: list[str] = []

    def flatten(v: Any, path: str) -> int:
        if isinstance(v, float):
            if math.isnan(v):
                return _NAN
            if math.isinf(v):
                return _POS_INF if v > 0 else _NEG_INF
            if v == 0 and math.copysign(1.0, v) < 0:
                return _NEG_ZERO
        index = len(values)
        values.append("")
        if v is None:
            text = "null"
        elif isinstance(v, bool):
            text = "true" if v else "false"
        elif isinstance(v, int):
            text = str(v) if abs(v) <= _MAX_SAFE else f'["BigInt","{v}"]'
        elif isinstance(v, float):
            text = json.dumps(v)
        elif isinstance(v, str):
            text = _string(v)
        elif isinstance(v, datetime):
            if v.tzinfo is None:
                raise SerializationError("datetime", where, path or "the value itself", NAIVE)
            iso = v.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            text = f'["Date",{json.dumps(iso)}]'
        elif isinstance(v, list | tuple):
            text = "[" + ",".join(str(flatten(x, f"{path}[{i}]")) for i, x in enumerate(v)) + "]"
        elif isinstance(v, dict):
            parts = []
            for k, x in v.items():
                if not isinstance(k, str):
                    raise SerializationError(f"dict key {type(k).__name__}", where, path)
                parts.append(f"{_string(k)}:{flatten(x, f'{path}.{k}')}")
            text = "{" + ",".join(parts) + "}"
        else:
            # Not a plain value (the rare case): a rich type, or a refusal.
            try:
                tag, replacement = _values.reduce(v)
            except _values.NotRich:
                raise SerializationError(
                    type(v).__qualname__, where, path or "the value itself"
                ) from None
            if tag is None:  # written in the value's place: give its slot back
                values.pop()
                return flatten(replacement, path)
            text = f'["{tag}",{flatten(replacement, path)}]'
        values[index] = text
        return index

    root = flatten(value, "")
    if root < 0:
        return str(root)
    return "[" + ",".join(values) + "]"


_DEVALUE_ESCAPES = str.maketrans({"<": "\\u003C", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _string(text: str) -> str:
    """A string as devalue writes it: JSON, non-ASCII kept as is, `<` and the two JS line
    separators escaped (so the text is byte-identical to the DevKit's own)."""
    return json.dumps(text, ensure_ascii=False).translate(_DEVALUE_ESCAPES)


_PLAIN_JSON = frozenset({str, int, float, bool, type(None)})


def parse(text: str) -> Any:
    """devalue.parse for the subset above (other tagged types come back as {"$type": ...})."""
    return _hydrate(json.loads(text))


def _hydrate(data: Any) -> Any:
    """devalue's hydration of a parsed devalue text."""
    if isinstance(data, int):
        return _special(data)
    if not isinstance(data, list) or not data:
        raise ValueError("not a devalue text")

    def hydrate(index: int) -> Any:
        if index < 0:
            return _special(index)
        v = data[index]
        if isinstance(v, list):
            if v and isinstance(v[0], str):
                tag = v[0]
                if len(v) == 2 and isinstance(v[1], int) and tag in _REDUCED:
                    # the DevKit's reducer form `[tag, index]` (what its own runtime writes)
                    return _REDUCED[tag](hydrate(v[1]))
                if tag == "Date":
                    return datetime.fromisoformat(str(v[1]).replace("Z", "+00:00"))
                if tag == "BigInt":
                    return int(v[1])
                if tag == "Set":
                    return [hydrate(i) for i in v[1:]]
                if tag == "Map":
                    return {str(hydrate(v[i])): hydrate(v[i + 1]) for i in range(1, len(v), 2)}
                if len(v) == 2 and isinstance(v[1], int):
                    # a custom reducer's `[tag, index]` (the DevKit's Error, Request, ...)
                    return {"$type": tag, "value": hydrate(v[1])}
                return {"$type": tag, "value": v[1:]}
            return [hydrate(i) for i in v]
        if isinstance(v, dict):
            return {k: hydrate(i) for k, i in v.items()}
        return v

    return hydrate(0)


def _b64(text: Any) -> bytes:
    return b"" if text in (".", "") else base64.b64decode(str(text))


def _date(text: Any) -> Any:
    return None if text == "." else datetime.fromisoformat(str(text).replace("Z", "+00:00"))


def _map(entries: Any) -> dict[Any, Any]:
    return {(tuple(k) if isinstance(k, list) else k): x for k, x in entries}


# Revivers for the DevKit's reducer entries `[tag, index]` (@workflow/core getCommonRevivers):
# the value at `index`, already hydrated, to its Python form. Sets come back as lists (the
# annotation, if any, makes them sets: values.py), Maps as dicts, byte views as bytes.
_REDUCED: dict[str, Any] = {
    "Date": _date,
    "BigInt": int,
    "Set": list,
    "Map": _map,
    "Uint8Array": _b64,
    "ArrayBuffer": _b64,
}


def _special(code: int) -> Any:
    return {
        _UNDEFINED: None,
        _HOLE: None,
        _NAN: math.nan,
        _POS_INF: math.inf,
        _NEG_INF: -math.inf,
        _NEG_ZERO: -0.0,
    }[code]


def _plain(v: Any) -> str | None:
    """devalue's text of a str, a safe int, a bool or None (what `flatten` writes for them),
    or None for anything else. The fast path of a step's usual inputs and results."""
    t = type(v)
    if t is int:
        return str(v) if -_MAX_SAFE <= v <= _MAX_SAFE else None
    if t is str:
        return _string(v)
    if v is None:
        return "null"
    if t is bool:
        return "true" if v else "false"
    return None


def dumps(value: Any, where: str = "a value") -> bytes:
    """The payload bytes: `devl` + devalue text."""
    # Fast path, same bytes as `stringify`: a plain value, or a flat list of plain values
    # (a step's positional arguments), without the recursive flatten.
    text = _plain(value)
    if text is not None:
        return PREFIX + b"[" + text.encode("utf-8") + b"]"
    if type(value) is list and len(value) < 64:
        items = [_plain(v) for v in value]
        if None not in items:
            refs = ",".join([str(i) for i in range(1, len(items) + 1)])
            body = ",".join(items)  # type: ignore[arg-type]
            return PREFIX + ("[[" + refs + "]," + body + "]" if items else "[[]]").encode("utf-8")
    return PREFIX + stringify(value, where).encode("utf-8")


def loads(data: bytes | None) -> Any:
    """Inverse of `dumps`; also what the Node runtime writes around it (`gzip` / `zstd` of a
    prefixed payload, spec >= 5: it compresses large values and run errors) and legacy
    unprefixed JSON. Encrypted payloads raise `PayloadUnreadable`."""
    if data is None:
        return None
    raw = data if type(data) is bytes else bytes(data)
    prefix = raw[:4]
    if prefix == PREFIX:
        parsed = json.loads(raw[4:].decode("utf-8"))
        # Fast path: a plain top-level value is `[value]` (a str, number, bool or null).
        if type(parsed) is list and len(parsed) == 1 and type(parsed[0]) in _PLAIN_JSON:
            return parsed[0]
        return _hydrate(parsed)
    body = raw[4:]
    if prefix == b"gzip":
        return loads(gzip.decompress(body))
    if prefix == b"zstd":
        import zstandard  # only payloads the Node runtime compressed need it

        return loads(zstandard.ZstdDecompressor().decompressobj().decompress(body))
    if prefix in (b"encr", b"encp"):
        raise PayloadUnreadable(
            f"payload format {prefix.decode()} (encrypted) cannot be read by wfctl's runtime"
        )
    return json.loads(raw.decode("utf-8"))


def error_message(value: Any) -> str:
    """The message of a durable error value: wfctl's {name, message, stack}, or the Node
    runtime's reduced `Error` ({"$type": "Error", "value": {...}})."""
    if isinstance(value, dict) and value.get("$type") and isinstance(value.get("value"), dict):
        value = value["value"]
    if isinstance(value, dict) and "message" in value:
        return str(value["message"])
    return str(value)


def error_value(exc: BaseException) -> dict[str, Any]:
    """An exception as a durable value: {name, message, stack}."""
    return {
        "name": type(exc).__name__,
        "message": str(exc),
        "stack": "".join(traceback.format_exception(exc)).rstrip(),
    }


def error_bytes(exc: BaseException) -> bytes:
    return dumps(error_value(exc), "an error")
