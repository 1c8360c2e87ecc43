"""Payload encoding of the world (reference §7).

Columns `*_cbor` hold CBOR. The package's encoder (cbor-x) writes a JS `Uint8Array` as tag 64
around a byte string; we decode that tag to `bytes` and encode `bytes` as a plain byte string,
which the JS side reads as a Buffer (a Uint8Array), so both directions round-trip. The bytes
inside are the runtime's own format: a 4-character prefix (`devl`, `gzip`, `zstd`, `encr`,
`encp`) and a body; wfctl copies them verbatim and only peeks at the prefix for display.
"""

from __future__ import annotations

from typing import Any

import cbor2

BYTE_ARRAY_TAG = 64
KNOWN_FORMATS = ("devl", "gzip", "zstd", "encr", "encp")


def _tag_hook(*args: Any) -> Any:
    """cbor2's C decoder has called this as (tag, immutable) and the docs say (decoder, tag)."""
    tag = next(a for a in args if isinstance(a, cbor2.CBORTag))
    if tag.tag == BYTE_ARRAY_TAG and isinstance(tag.value, bytes | bytearray):
        return bytes(tag.value)
    return tag


def decode(data: bytes | memoryview | None) -> Any:
    """Decode one CBOR column value; None stays None."""
    if data is None:
        return None
    return cbor2.loads(bytes(data), tag_hook=_tag_hook)


def encode(value: Any) -> bytes:
    """Encode like the package: maps, plain byte strings, datetimes as epoch (tag 1)."""
    if type(value) is bytes and len(value) < 65536:
        # A byte string (a step's input/output column): the CBOR head cbor2 writes, inline
        # (the runtime encodes two per step).
        n = len(value)
        if n < 24:
            return bytes((0x40 + n,)) + value
        if n < 256:
            return bytes((0x58, n)) + value
        return bytes((0x59, n >> 8, n & 0xFF)) + value
    return bytes(cbor2.dumps(value, datetime_as_timestamp=True, timezone=None))


def payload_format(value: Any) -> str | None:
    """The 4-byte format prefix of a runtime payload (`devl`, ...), or None."""
    if isinstance(value, bytes | bytearray) and len(value) >= 4:
        prefix = bytes(value[:4]).decode("ascii", "replace")
        return prefix if prefix in KNOWN_FORMATS else None
    return None


def describe(value: Any, limit: int = 80) -> str:
    """A short human rendering: `devl` bodies shown as text, other bytes as a size."""
    fmt = payload_format(value)
    if fmt == "devl":
        text = bytes(value[4:]).decode("utf-8", "replace")
        return f"devl {text[:limit]}" + ("..." if len(text) > limit else "")
    if fmt is not None:
        return f"{fmt} ({len(value) - 4} bytes)"
    if isinstance(value, bytes | bytearray):
        return f"<{len(value)} bytes>"
    text = repr(value)
    return text[:limit] + ("..." if len(text) > limit else "")
