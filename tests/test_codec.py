"""The payload codec against bytes the real package (cbor-x) wrote (reference §7.1)."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from wfctl.world import codec


def test_decodes_cbor_x_wait_created_payload() -> None:
    # b9 0001 = map with a 2-byte length; c1 fb = tag 1 + float64 epoch seconds.
    raw = bytes.fromhex("b90001" + "68" + b"resumeAt".hex() + "c1fb41dac418f56f4bc7")
    value = codec.decode(raw)
    assert set(value) == {"resumeAt"}
    assert value["resumeAt"].tzinfo is not None


def test_decodes_tag_64_byte_arrays_to_bytes() -> None:
    raw = bytes.fromhex("d8404d") + b'devl[["a"],1]'
    assert codec.decode(raw) == b'devl[["a"],1]'
    step_completed = (
        bytes.fromhex("b90002")
        + bytes.fromhex("68")
        + b"stepName"
        + bytes.fromhex("64")
        + b"s//x"
        + bytes.fromhex("66")
        + b"result"
        + bytes.fromhex("d84047")
        + b"devl[2]"
    )
    assert codec.decode(step_completed) == {"stepName": "s//x", "result": b"devl[2]"}


@given(
    st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.one_of(st.binary(max_size=32), st.text(max_size=16), st.integers(), st.none()),
        max_size=5,
    )
)
def test_encode_decode_round_trip(value: dict[str, object]) -> None:
    assert codec.decode(codec.encode(value)) == value


def test_datetimes_encode_as_epoch_tag_1() -> None:
    when = datetime(2026, 1, 1, 12, 0, 0, 250000, tzinfo=UTC)
    raw = codec.encode({"resumeAt": when})
    assert b"\xc1" in raw  # tag 1, which cbor-x decodes to a Date
    assert codec.decode(raw)["resumeAt"] == when


def test_describe_shows_devl_text_and_sizes() -> None:
    assert codec.payload_format(b"devl[1]") == "devl"
    assert codec.describe(b'devl["hello"]') == 'devl ["hello"]'
    assert codec.describe(b"encr" + bytes(12)) == "encr (12 bytes)"
    assert codec.describe(b"\x00\x01") == "<2 bytes>"
    assert codec.decode(None) is None
