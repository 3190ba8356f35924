"""binlake.binlog.mysql_json: MySQL binary JSON and partial JSON updates.

Expected values come from the format (MySQL sql-common/json_binary.cc, json_diff.cc,
strings/decimal.cc, mysys/my_time.cc) with the bytes written out by hand, or, for the real
binlogs in the shared corpus, from what other tools and the servers recorded about them.
"""

from __future__ import annotations

import contextlib
import json
import math
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlake.binlog.errors import CorruptEventError
from binlake.binlog.mysql_json import (
    MAX_DEPTH,
    JsonDiff,
    JsonDiffOp,
    JsonNumberText,
    apply_json_diffs,
    decode_json,
    read_json_diffs,
)

# --------------------------------------------------------------------------- scalars


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (b"\x04\x00", None),  # literal, 0x00 = null
        (b"\x04\x01", True),  # literal, 0x01 = true
        (b"\x04\x02", False),  # literal, 0x02 = false
        (b"\x05\xfe\xff", -2),  # int16 LE 0xfffe
        (b"\x05\x00\x80", -32768),  # int16 minimum
        (b"\x06\xff\xff", 65535),  # uint16 LE 0xffff
        (b"\x07\x00\x00\x00\x80", -(2**31)),  # int32 LE 0x80000000
        (b"\x08\xff\xff\xff\xff", 2**32 - 1),  # uint32
        (b"\x09\xff\xff\xff\xff\xff\xff\xff\xff", -1),  # int64
        (b"\x09\x00\x00\x00\x00\x00\x00\x00\x80", -(2**63)),  # int64 minimum
        (b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff", 2**64 - 1),  # uint64 maximum
        (b"\x0b\x00\x00\x00\x00\x00\x00\xf8\x3f", 1.5),  # double 0x3ff8000000000000
        (b"\x0b\x00\x00\x00\x00\x00\x00\x00\x80", -0.0),  # double, sign bit only
        (b"\x0c\x00", ""),  # string, length 0
        (b"\x0c\x03abc", "abc"),  # string, length 3
        (b"\x0c\x02\xc3\xa9", "\u00e9"),  # string, 2 UTF-8 bytes
        (b"", None),  # an empty value is the JSON null literal (json_binary::parse_binary)
    ],
)
def test_scalar_documents(doc: bytes, expected: object) -> None:
    value = decode_json(doc)
    assert value == expected
    assert type(value) is type(expected)
    if isinstance(expected, float):
        assert math.copysign(1.0, value) == math.copysign(1.0, expected)  # type: ignore[arg-type]


def test_string_with_two_byte_variable_length() -> None:
    # 200 = 0b1_1001000: first byte low 7 bits 0x48 with the "more" bit = 0xc8, then 0x01.
    assert decode_json(b"\x0c\xc8\x01" + b"x" * 200) == "x" * 200


def test_string_with_five_byte_variable_length_limit() -> None:
    # 2**32-1 needs 5 bytes (0xff 0xff 0xff 0xff 0x0f); far more than the data: truncated.
    with pytest.raises(CorruptEventError):
        decode_json(b"\x0c\xff\xff\xff\xff\x0f" + b"x")
    # 2**35-1 in 5 bytes does not fit 32 bits (read_variable_length rejects it).
    with pytest.raises(CorruptEventError, match="2\\*\\*32"):
        decode_json(b"\x0c\xff\xff\xff\xff\x7f")
    # Six bytes with the "more" bit set: never terminated within 5 bytes.
    with pytest.raises(CorruptEventError, match="not terminated"):
        decode_json(b"\x0c\x80\x80\x80\x80\x80\x00")


# --------------------------------------------------------------------------- containers

SMALL_OBJECT = bytes.fromhex(
    "00"  # type: small object
    "0200"  # element count 2
    "1700"  # size 23 bytes (from the count field to the end)
    "1200 0100"  # key 0 at offset 18, length 1 ("a")
    "1300 0200"  # key 1 at offset 19, length 2 ("bb")
    "05 0100"  # value 0: int16 1, inlined
    "0c 1500"  # value 1: string at offset 21
    "61"  # "a"
    "6262"  # "bb"
    "01 78"  # string length 1, "x"
)


def test_small_object_by_hand() -> None:
    value = decode_json(SMALL_OBJECT)
    assert value == {"a": 1, "bb": "x"}
    assert isinstance(value, dict)
    assert list(value) == ["a", "bb"]


SMALL_ARRAY = bytes.fromhex(
    "02"  # type: small array
    "0400"  # element count 4
    "1700"  # size 23
    "04 0100"  # literal true, inlined
    "05 ffff"  # int16 -1, inlined
    "07 1000"  # int32: not inlined in the small form, at offset 16
    "0c 1400"  # string at offset 20
    "70110100"  # int32 70000 (0x00011170)
    "02 c3a9"  # string length 2, "é"
)


def test_small_array_by_hand() -> None:
    assert decode_json(SMALL_ARRAY) == [True, -1, 70000, "\u00e9"]


LARGE_OBJECT = bytes.fromhex(
    "01"  # type: large object
    "02000000"  # element count 2
    "37000000"  # size 55
    "1e000000 0100"  # key 0 at offset 30 (after 8 + 2*6 + 2*5 header bytes), length 1
    "1f000000 0200"  # key 1 at offset 31, length 2
    "07 feffffff"  # int32 -2: inlined in the large form
    "02 21000000"  # small array at offset 33
    "6b"  # "k"
    "6b6b"  # "kk"
    "0200"  # nested small array (offsets count from here): count 2
    "1200"  # size 18
    "04 0000"  # null, inlined
    "0b 0a00"  # double at offset 10
    "000000000000f83f"  # 1.5
    "00000000"  # unused bytes are allowed (e.g. left by an in-place partial update)
)
# The nested array claims 13 bytes: its double (offset 10, 8 bytes) no longer fits in it.
LARGE_OBJECT_BAD = LARGE_OBJECT[:36] + b"\x0d\x00" + LARGE_OBJECT[38:]


def test_large_object_by_hand() -> None:
    assert decode_json(LARGE_OBJECT) == {"k": -2, "kk": [None, 1.5]}
    with pytest.raises(CorruptEventError, match="truncated"):
        decode_json(LARGE_OBJECT_BAD)


LARGE_ARRAY = bytes.fromhex(
    "03"  # type: large array
    "03000000"  # element count 3
    "1f000000"  # size 31
    "08 ffffffff"  # uint32 4294967295, inlined in the large form
    "06 ffff0000"  # uint16 65535, inlined
    "0a 17000000"  # uint64 at offset 23 (not inlined)
    "0000000000000001"  # uint64 2**56
)


def test_large_array_by_hand() -> None:
    assert decode_json(LARGE_ARRAY) == [2**32 - 1, 65535, 2**56]


def test_empty_containers() -> None:
    assert decode_json(b"\x00\x00\x00\x04\x00") == {}  # count 0, size 4
    assert decode_json(b"\x02\x00\x00\x04\x00") == []
    assert decode_json(b"\x01" + b"\x00" * 4 + b"\x08\x00\x00\x00") == {}  # large, size 8
    assert decode_json(b"\x03" + b"\x00" * 4 + b"\x08\x00\x00\x00") == []


# --------------------------------------------------------------------------- opaque values


def _opaque(field_type: int, payload: bytes) -> bytes:
    assert len(payload) < 128  # one-byte variable length
    return bytes([0x0F, field_type, len(payload)]) + payload


@pytest.mark.parametrize(
    ("payload", "text"),
    [
        # DECIMAL(6,3) 123.456: intg 3 -> 2 bytes (123), frac 3 -> 2 bytes (456); sign bit set.
        (b"\x06\x03\x80\x7b\x01\xc8", "123.456"),
        # DECIMAL(11,2) 9.00: 9 int digits -> one 4-byte word, 2 frac digits -> 1 byte.
        (b"\x0b\x02\x80\x00\x00\x09\x00", "9.00"),
        # DECIMAL(12,2) 1234567890.12: 1 leading digit (1 byte), word 234567890
        # (0x0dfb38d2), frac 12 (1 byte): 01 0d fb 38 d2 0c, first bit flipped.
        (b"\x0c\x02\x81\x0d\xfb\x38\xd2\x0c", "1234567890.12"),
        # The same value negative: every byte inverted, then the first bit flipped.
        (b"\x0c\x02\x7e\xf2\x04\xc7\x2d\xf3", "-1234567890.12"),
        (b"\x03\x02\x80\x00", "0.00"),  # DECIMAL(3,2) zero keeps its scale
        (b"\x01\x01\x85", "0.5"),  # DECIMAL(1,1): no int digits, "0" is printed
        (b"\x05\x00\x80\x00\x2a", "42"),  # DECIMAL(5,0): 3 bytes, no point
        # DECIMAL(20,10) 1234567890.0123456789: int words 1 / 234567890 (1+4 bytes),
        # frac word 012345678 then 1 digit "9" in 1 byte.
        (
            b"\x14\x0a\x81\x0d\xfb\x38\xd2\x00\xbc\x61\x4e\x09",
            "1234567890.0123456789",
        ),
    ],
)
def test_decimal_opaque(payload: bytes, text: str) -> None:
    value = decode_json(_opaque(246, payload))  # 246 = MYSQL_TYPE_NEWDECIMAL
    assert isinstance(value, JsonNumberText)
    assert value == text
    assert repr(value) == f"JsonNumberText({text!r})"


@pytest.mark.parametrize(
    "payload",
    [
        b"",  # no precision/scale
        b"\x06",  # no scale
        b"\x06\x03\x80\x7b\x01",  # one byte short for DECIMAL(6,3)
        b"\x06\x03\x80\x7b\x01\xc8\x00",  # one byte too many
        b"\x00\x00",  # precision 0
        b"\x42\x02" + b"\x80" * 29,  # precision 66 > 65
        b"\x03\x04\x80\x00",  # scale > precision
        b"\x06\x03\x80\x7b\x27\x10",  # fraction group 10000 has more than 3 digits
        b"\x0a\x00\x80\x3b\x9a\xca\x00",  # DECIMAL(10,0): word 0x3b9aca00 = 10**9 > 9 digits
    ],
)
def test_bad_decimal_opaque(payload: bytes) -> None:
    with pytest.raises(CorruptEventError):
        decode_json(_opaque(246, payload))


def _packed_datetime(y: int, mo: int, d: int, h: int, mi: int, s: int, us: int) -> bytes:
    """TIME_to_longlong_datetime_packed() (my_time.cc), stored little-endian (int8store)."""
    ymd = ((y * 13 + mo) << 5) | d
    hms = (h << 12) | (mi << 6) | s
    return struct.pack("<q", (((ymd << 17) | hms) << 24) + us)


def _packed_time(neg: bool, h: int, mi: int, s: int, us: int) -> bytes:
    """TIME_to_longlong_time_packed(): hour<<12 | minute<<6 | second, then << 24 + micros."""
    value = (((h << 12) | (mi << 6) | s) << 24) + us
    return struct.pack("<q", -value if neg else value)


@pytest.mark.parametrize(
    ("field_type", "payload", "text"),
    [
        (10, _packed_datetime(2015, 1, 15, 0, 0, 0, 0), "2015-01-15"),  # DATE
        (12, _packed_datetime(2015, 1, 15, 23, 24, 25, 0), "2015-01-15 23:24:25.000000"),
        (12, _packed_datetime(1, 2, 3, 4, 5, 6, 7), "0001-02-03 04:05:06.000007"),
        (7, _packed_datetime(2038, 1, 19, 3, 14, 7, 999999), "2038-01-19 03:14:07.999999"),
        (11, _packed_time(False, 23, 24, 25, 0), "23:24:25.000000"),  # TIME
        (11, _packed_time(True, 838, 59, 59, 500000), "-838:59:59.500000"),
        (11, _packed_time(False, 0, 0, 0, 1), "00:00:00.000001"),
    ],
)
def test_temporal_opaque(field_type: int, payload: bytes, text: str) -> None:
    assert decode_json(_opaque(field_type, payload)) == text


def test_temporal_opaque_must_be_eight_bytes() -> None:
    with pytest.raises(CorruptEventError, match="expected 8"):
        decode_json(_opaque(12, b"\x00" * 7))


def test_other_opaque_types_print_as_base64() -> None:
    # MYSQL_TYPE_VARCHAR (15) with one byte "U" -> base64 "VQ==".
    assert decode_json(_opaque(15, b"U")) == "base64:type15:VQ=="
    assert decode_json(_opaque(252, b"")) == "base64:type252:"  # BLOB, empty
    # MySQL's base64_encode() starts a new line after every 76 characters (57 bytes).
    assert decode_json(_opaque(255, b"\x00" * 57)) == "base64:type255:" + "A" * 76
    long_text = decode_json(b"\x0f\xfc\x3a" + b"\x00" * 58)
    assert long_text == "base64:type252:" + "A" * 76 + "\n" + "AA=="


def test_var_string_opaque_is_a_plain_string() -> None:
    # wrapper_to_string(): an opaque MYSQL_TYPE_VAR_STRING (253) is printed as a string.
    assert decode_json(_opaque(253, b"hello")) == "hello"
    assert decode_json(_opaque(253, b"\xff")) == "base64:type253:/w=="  # not text


def test_opaque_inside_an_array() -> None:
    doc = bytes.fromhex(
        "02"  # small array
        "0100"  # count 1
        "0f00"  # size 15
        "0f 0700"  # opaque at offset 7
        "f6 06 06 03 80 7b 01 c8"  # NEWDECIMAL, length 6, DECIMAL(6,3) 123.456
    )
    assert decode_json(doc) == ["123.456"]


# --------------------------------------------------------------------------- a test encoder
# Written from json_binary.cc serialize_json_value(); used for round trips and mutations.


def _mysql_key(key: str) -> tuple[int, bytes]:
    raw = key.encode()
    return len(raw), raw


def encode(value: object, *, large: bool = False) -> bytes:
    type_, body = _encode_value(value, large)
    return bytes([type_]) + body


def _encode_value(value: object, large: bool) -> tuple[int, bytes]:
    if value is None or isinstance(value, bool):
        return 0x04, bytes([{None: 0, True: 1, False: 2}[value]])
    if isinstance(value, int):
        if -(2**15) <= value < 2**15:
            return 0x05, struct.pack("<h", value)
        if -(2**31) <= value < 2**31:
            return 0x07, struct.pack("<i", value)
        if -(2**63) <= value < 2**63:
            return 0x09, struct.pack("<q", value)
        return 0x0A, struct.pack("<Q", value)
    if isinstance(value, float):
        return 0x0B, struct.pack("<d", value)
    if isinstance(value, str):
        raw = value.encode()
        return 0x0C, _varlen(len(raw)) + raw
    if isinstance(value, list):
        return (0x03 if large else 0x02), _container([(None, v) for v in value], large)
    assert isinstance(value, dict)
    items = sorted(value.items(), key=lambda kv: _mysql_key(kv[0]))
    return (0x01 if large else 0x00), _container(items, large)


def _varlen(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _container(items: list[tuple[str | None, object]], large: bool) -> bytes:
    off = "<I" if large else "<H"
    osz = struct.calcsize(off)
    is_object = bool(items) and items[0][0] is not None
    header = 2 * osz + len(items) * ((osz + 2 if is_object else 0) + 1 + osz)
    keys = [k.encode() for k, _ in items if k is not None]
    key_entries, key_pos = b"", header
    for raw in keys:
        key_entries += struct.pack(off, key_pos) + struct.pack("<H", len(raw))
        key_pos += len(raw)
    entries, tail = b"", b""
    for _, v in items:
        inline = _inline(v, large)
        if inline is not None:
            entries += inline
            continue
        type_, body = _encode_value(v, large)
        entries += bytes([type_]) + struct.pack(off, key_pos + len(tail))
        tail += body
    size = key_pos + len(tail)
    return struct.pack(off, len(items)) + struct.pack(off, size) + key_entries + entries + (
        b"".join(keys) + tail
    )


def _inline(value: object, large: bool) -> bytes | None:
    pad = 4 if large else 2
    if value is None or isinstance(value, bool):
        return b"\x04" + bytes([{None: 0, True: 1, False: 2}[value]]).ljust(pad, b"\x00")
    if isinstance(value, int) and -(2**15) <= value < 2**15:
        return b"\x05" + struct.pack("<i" if large else "<h", value)
    if large and isinstance(value, int) and -(2**31) <= value < 2**31:
        return b"\x07" + struct.pack("<i", value)
    return None


def test_encoder_matches_the_hand_written_bytes() -> None:
    assert encode({"a": 1, "bb": "x"}) == SMALL_OBJECT


NESTED = {
    "id": 7,
    "tags": ["a", "b", {"deep": [1, [2, [3, None]]]}],
    "price": 19.99,
    "ok": True,
    "big": 2**40,
    "neg": -70000,
    "ünïcode": "✓",
    "": "empty key",
}


@pytest.mark.parametrize("large", [False, True])
def test_nested_round_trip(large: bool) -> None:
    value = decode_json(encode(NESTED, large=large))
    assert value == NESTED
    assert isinstance(value, dict)
    assert list(value) == sorted(NESTED, key=_mysql_key)


def test_large_forms_for_big_documents() -> None:
    # Over 64 KiB the small form's u16 offsets do not fit; MySQL switches to the large form.
    doc = {"blob": "z" * 70_000, "n": [1, 2, 3]}
    assert decode_json(encode(doc, large=True)) == doc
    assert decode_json(encode(["y" * 70_000], large=True)) == ["y" * 70_000]


# --------------------------------------------------------------------------- malformed input


def _nested_arrays(levels: int) -> bytes:
    doc = b"\x00\x00\x04\x00"  # innermost: empty small array (count 0, size 4)
    for _ in range(levels - 1):
        doc = struct.pack("<HH", 1, 7 + len(doc)) + b"\x02\x07\x00" + doc  # one array entry
    return b"\x02" + doc


def test_depth_limit() -> None:
    value = decode_json(_nested_arrays(MAX_DEPTH))
    for _ in range(MAX_DEPTH - 1):
        assert isinstance(value, list)
        value = value[0]
    assert value == []
    with pytest.raises(CorruptEventError, match="deeper than 100"):
        decode_json(_nested_arrays(MAX_DEPTH + 1))


def test_shared_entries_cannot_explode() -> None:
    # Each level is an array of 2 entries that both point at the next level: 2**60 visits
    # if followed blindly.  Valid documents never share bytes between entries.
    body = b"\x00\x00\x04\x00"
    for _ in range(60):
        body = struct.pack("<HH", 2, 10 + len(body)) + b"\x02\x0a\x00" * 2 + body
    started = time.monotonic()
    with pytest.raises(CorruptEventError, match="overlap"):
        decode_json(b"\x02" + body)
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (b"\x0d\x00", "unknown value type"),
        (b"\x04\x03", "unknown literal"),
        (b"\x0c\x02\xc3\x28", "UTF-8"),
        (b"\x0b\x00\x00\x00\x00\x00\x00\xf8\x7f", "not finite"),  # NaN
        (b"\x0b\x00\x00\x00\x00\x00\x00\xf0\x7f", "not finite"),  # +Infinity
        (b"\x02\x01\x00\x07\x00\x0c\x03\x00\x01", "outside"),  # value offset 3 < header 7
        (b"\x02\x01\x00\x07\x00\x0c\x07\x00", "outside"),  # value offset at the very end
        (b"\x02\x03\x00\x07\x00\x04\x00\x00", "do not fit"),  # 3 entries in 7 bytes
        (b"\x02\x00\x00\x09\x00", "runs past"),  # size 9 > 4 available
        # object: count 1, size 12, key at offset 2 (inside the 11-byte header), null, "a"
        (b"\x00\x01\x00\x0c\x00\x02\x00\x01\x00\x04\x00\x00\x61", "outside the key area"),
        # the same with the key at offset 11, but the key byte is not UTF-8
        (b"\x00\x01\x00\x0c\x00\x0b\x00\x01\x00\x04\x00\x00\xff", "UTF-8"),
        (b"\x02\x01\x00\x08\x00\x0e\x07\x00\x00", "unknown value type"),
        (b"\x0f", "truncated"),
    ],
)
def test_malformed_documents(doc: bytes, message: str) -> None:
    with pytest.raises(CorruptEventError, match=message) as info:
        decode_json(doc, file="binlog.000001", offset=1234)
    error = info.value
    assert error.file == "binlog.000001"
    assert error.offset == 1234
    assert error.raw == doc[:64]


def test_every_truncation_is_an_error() -> None:
    doc = encode(NESTED)
    for cut in range(1, len(doc)):
        with pytest.raises(CorruptEventError):
            decode_json(doc[:cut])


def test_accepts_bytearray_and_memoryview() -> None:
    assert decode_json(bytearray(SMALL_ARRAY)) == [True, -1, 70000, "\u00e9"]
    assert decode_json(memoryview(b"xx" + SMALL_ARRAY)[2:]) == [True, -1, 70000, "\u00e9"]


# --------------------------------------------------------------------------- properties

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=5)
    | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=25,
)


@given(json_values, st.booleans())
def test_round_trip_property(value: object, large: bool) -> None:
    assert decode_json(encode(value, large=large)) == value


@given(json_values, st.data())
def test_truncated_documents_only_raise_corrupt(value: object, data: st.DataObject) -> None:
    doc = encode(value)
    cut = data.draw(st.integers(min_value=1, max_value=len(doc) - 1)) if len(doc) > 1 else 0
    if cut:
        with pytest.raises(CorruptEventError):
            decode_json(doc[:cut])


@given(json_values, st.data())
def test_mutated_documents_only_raise_corrupt(value: object, data: st.DataObject) -> None:
    doc = bytearray(encode(value))
    at = data.draw(st.integers(min_value=0, max_value=len(doc) - 1))
    doc[at] = data.draw(st.integers(min_value=0, max_value=255))
    with contextlib.suppress(CorruptEventError):
        decode_json(bytes(doc))


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([0, 1, 2, 3, 4, 5, 9, 11, 12, 15]), st.binary(max_size=300))
def test_random_bytes_only_raise_corrupt(type_byte: int, tail: bytes) -> None:
    for doc in (bytes([type_byte]) + tail, tail):
        with contextlib.suppress(CorruptEventError):
            decode_json(doc)


# --------------------------------------------------------------------------- diff vectors

DIFFS = bytes.fromhex(
    "23000000"  # length of the diffs: 11 + 15 + 9 = 35
    # diff 1 (11 bytes)
    "00"  # REPLACE
    "05 242e616765"  # path length 5, "$.age"
    "03 051a00"  # value length 3: int16 26
    # diff 2 (15 bytes)
    "01"  # INSERT
    "09 242e746167735b315d"  # path length 9, "$.tags[1]"
    "03 0c0178"  # value length 3: string "x"
    # diff 3 (9 bytes)
    "02"  # REMOVE (no value)
    "07 242e22612062 22"  # path length 7, '$."a b"'
)


def test_read_diffs_by_hand() -> None:
    data = b"\xaa\xbb" + DIFFS + b"\xcc"  # the vector sits inside a row image
    diffs, end = read_json_diffs(data, 2)
    assert end == len(data) - 1
    assert diffs == [
        JsonDiff(JsonDiffOp.REPLACE, "$.age", 26),
        JsonDiff(JsonDiffOp.INSERT, "$.tags[1]", "x"),
        JsonDiff(JsonDiffOp.REMOVE, '$."a b"', None),
    ]


def test_read_empty_diff_vector() -> None:
    # An unchanged column is logged as an empty diff vector (length 0).
    assert read_json_diffs(b"\x00\x00\x00\x00", 0) == ([], 4)


def test_read_diff_with_long_packed_value_length() -> None:
    # A 303-byte value (string of 300: 0x0c, varlen 0xac 0x02, bytes) needs a 252 prefix.
    value = b"\x0c\xac\x02" + b"s" * 300
    diff = b"\x00" + b"\x03$.s" + b"\xfc\x2f\x01" + value  # 1 + 4 + 3 + 303 = 311 = 0x137
    diffs, end = read_json_diffs(b"\x37\x01\x00\x00" + diff, 0)
    assert diffs == [JsonDiff(JsonDiffOp.REPLACE, "$.s", "s" * 300)]
    assert end == 4 + 311


def test_read_diff_with_empty_value_is_null() -> None:
    # json_binary::parse_binary(): a value of length 0 is the null literal.
    diffs, _ = read_json_diffs(b"\x06\x00\x00\x00" + b"\x00\x03$.n\x00", 0)  # 1 + 4 + 1
    assert diffs == [JsonDiff(JsonDiffOp.REPLACE, "$.n", None)]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x01\x00\x00", "length prefix"),
        (b"\x10\x00\x00\x00\x02\x01$", "run past"),
        (b"\x03\x00\x00\x00\x03\x01$", "unknown diff operation"),
        (b"\x03\x00\x00\x00\x02\x05$", "runs past the diff vector"),  # path longer than diffs
        (b"\x02\x00\x00\x00\x02\xfb", "invalid first byte"),  # 251 = NULL length
        (b"\x02\x00\x00\x00\x02\xfc", "truncated"),
        (b"\x03\x00\x00\x00\x02\x01a", "does not start with"),
        (b"\x05\x00\x00\x00\x02\x03$.*", "wildcard"),
        (b"\x06\x00\x00\x00\x02\x04$[*]", "array index expected"),
        (b"\x09\x00\x00\x00\x02\x07$[1 to 2]", "unsupported array leg"),
        (b"\x05\x00\x00\x00\x02\x03$**", "unsupported path leg"),
        (b"\x03\x00\x00\x00\x02\x01\xff", "UTF-8"),
        (b"\x06\x00\x00\x00\x00\x01$\x02\x04\x09", "unknown literal"),  # bad value
    ],
)
def test_malformed_diff_vectors(data: bytes, message: str) -> None:
    with pytest.raises(CorruptEventError, match=message) as info:
        read_json_diffs(data, 0, file="f", offset=99)
    assert (info.value.file, info.value.offset) == ("f", 99)


@pytest.mark.parametrize(
    ("path", "legs_ok"),
    [
        ("$", True),
        ("$.a", True),
        ('$."a.b"', True),
        ('$."quote\\"d"', True),
        ("$.a[0][last][last-2][last - 1]", True),
        (" $ .a [ 1 ] ", True),
        ("$.\\u0061", True),
        ("$[4294967296]", False),
        ('$."unterminated', False),
        ("$.", False),
        ("$[last-]", False),
        ("$[last 1]", False),
        ('$."\\ud800"', False),
    ],
)
def test_path_syntax(path: str, legs_ok: bool) -> None:
    raw = path.encode()
    diff = b"\x02" + bytes([len(raw)]) + raw
    data = struct.pack("<I", len(diff)) + diff
    if legs_ok:
        assert read_json_diffs(data, 0)[0] == [JsonDiff(JsonDiffOp.REMOVE, path)]
    else:
        with pytest.raises(CorruptEventError):
            read_json_diffs(data, 0)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200), st.integers(min_value=-2, max_value=8))
def test_random_diff_vectors_only_raise_corrupt(tail: bytes, pos: int) -> None:
    for data in (struct.pack("<I", len(tail)) + tail, tail):
        with contextlib.suppress(CorruptEventError):
            read_json_diffs(data, pos)


# --------------------------------------------------------------------------- applying diffs

# Keys in MySQL's order (length, then bytes), as a decoded document has them.
BEFORE = {"a b": 1, "age": 25, "obj": {"k": [10, 20, 30]}, "tags": ["p", "q"]}


def _diff(op: JsonDiffOp, path: str, value: object = None) -> JsonDiff:
    return JsonDiff(op, path, value)


REP, INS, REM = JsonDiffOp.REPLACE, JsonDiffOp.INSERT, JsonDiffOp.REMOVE


def test_apply_the_hand_written_vector() -> None:
    diffs, _ = read_json_diffs(DIFFS, 0)
    after = apply_json_diffs(BEFORE, diffs)
    assert after == {"age": 26, "tags": ["p", "x", "q"], "obj": {"k": [10, 20, 30]}}
    assert BEFORE == {"a b": 1, "age": 25, "obj": {"k": [10, 20, 30]}, "tags": ["p", "q"]}


@pytest.mark.parametrize(
    ("diffs", "expected"),
    [
        # REPLACE keeps the member's position.
        ([_diff(REP, "$.age", [1])], ["a b", "age", "obj", "tags"]),
        # INSERT places a member where MySQL's key order puts it (length, then bytes).
        ([_diff(INS, "$.zz", 0)], ["zz", "a b", "age", "obj", "tags"]),
        ([_diff(INS, "$.ahh", 0)], ["a b", "age", "ahh", "obj", "tags"]),
        ([_diff(INS, "$.tagz", 0)], ["a b", "age", "obj", "tags", "tagz"]),
        ([_diff(REM, "$.age")], ["a b", "obj", "tags"]),
    ],
)
def test_apply_member_order(diffs: list[JsonDiff], expected: list[str]) -> None:
    after = apply_json_diffs(BEFORE, diffs)
    assert isinstance(after, dict)
    assert list(after) == expected


@pytest.mark.parametrize(
    ("diff", "expected_k"),
    [
        (_diff(REP, "$.obj.k[0]", 1), [1, 20, 30]),
        (_diff(REP, "$.obj.k[last]", 3), [10, 20, 3]),
        (_diff(REP, "$.obj.k[last-2]", 1), [1, 20, 30]),
        (_diff(INS, "$.obj.k[0]", 0), [0, 10, 20, 30]),  # shifts the rest
        (_diff(INS, "$.obj.k[1]", 15), [10, 15, 20, 30]),
        (_diff(INS, "$.obj.k[3]", 40), [10, 20, 30, 40]),
        (_diff(INS, "$.obj.k[99]", 40), [10, 20, 30, 40]),  # past the end appends
        (_diff(INS, "$.obj.k[last]", 25), [10, 20, 25, 30]),  # before the last element
        (_diff(INS, "$.obj.k[last-9]", 5), [5, 10, 20, 30]),  # before the start -> 0
        (_diff(REM, "$.obj.k[1]"), [10, 30]),
        (_diff(REM, "$.obj.k[last]"), [10, 20]),
        (_diff(REP, '$."obj".k[1]', {"x": None}), [10, {"x": None}, 30]),
    ],
)
def test_apply_array_cells(diff: JsonDiff, expected_k: list[object]) -> None:
    after = apply_json_diffs(BEFORE, [diff])
    assert after["obj"]["k"] == expected_k  # type: ignore[index]
    assert BEFORE["obj"] == {"k": [10, 20, 30]}  # the input is not modified


def test_apply_in_sequence_and_whole_document() -> None:
    diffs = [_diff(INS, "$.tags[0]", "o"), _diff(REP, "$.tags[2]", "Q"), _diff(REM, "$.tags[0]")]
    assert apply_json_diffs(BEFORE, diffs)["tags"] == ["p", "Q"]  # type: ignore[index]
    assert apply_json_diffs(BEFORE, [_diff(REP, "$", [1])]) == [1]
    assert apply_json_diffs([1, 2], []) == [1, 2]


@pytest.mark.parametrize(
    "diff",
    [
        _diff(REP, "$.missing", 1),  # REPLACE needs the path
        _diff(REP, "$.tags[2]", 1),  # out of range
        _diff(REP, "$.tags.x", 1),  # a member leg on an array
        _diff(REP, "$.age[0]", 1),  # no auto-wrapping of scalars
        _diff(REP, "$[0]", 1),  # a cell leg on an object
        _diff(INS, "$.age", 1),  # member exists
        _diff(INS, "$.nope.x", 1),  # parent missing
        _diff(INS, "$.age.x", 1),  # parent is a scalar
        _diff(INS, "$.tags.x", 1),  # member insert into an array
        _diff(REM, "$.missing"),
        _diff(REM, "$.tags[5]"),
        _diff(REM, "$.obj[0]"),
        _diff(REM, "$"),
        _diff(INS, "$", 1),
    ],
)
def test_apply_rejected(diff: JsonDiff) -> None:
    with pytest.raises(CorruptEventError, match="cannot be applied") as info:
        apply_json_diffs(BEFORE, [diff], file="f", offset=7)
    assert (info.value.file, info.value.offset) == ("f", 7)


path_legs = st.lists(
    st.one_of(
        st.sampled_from([".a b", ".age", ".tags", ".obj", ".k", ".x", '."a b"']),
        st.integers(min_value=0, max_value=4).map(lambda n: f"[{n}]"),
        st.integers(min_value=0, max_value=4).map(lambda n: f"[last-{n}]"),
    ),
    max_size=4,
)


@given(st.sampled_from(list(JsonDiffOp)), path_legs, json_values)
def test_apply_random_diffs_only_raise_corrupt(
    op: JsonDiffOp, legs: list[str], value: object
) -> None:
    diff = JsonDiff(op, "$" + "".join(legs), None if op is JsonDiffOp.REMOVE else value)
    with contextlib.suppress(CorruptEventError):
        apply_json_diffs(BEFORE, [diff])
    assert BEFORE == {"a b": 1, "age": 25, "obj": {"k": [10, 20, 30]}, "tags": ["p", "q"]}


# --------------------------------------------------------------------------- real binlogs

CORPUS = Path("/work/shared/corpus")
WRITE_ROWS_V2, UPDATE_ROWS_V2, PARTIAL_UPDATE_ROWS = 30, 31, 39


def _corpus_file(relative: str) -> Path:
    path = CORPUS / relative
    if not path.is_file():
        pytest.skip(f"shared corpus file {relative} not available")
    return path


def _events(path: Path) -> Iterator[tuple[int, int, bytes]]:
    """(offset, type, body without the 19-byte header and the CRC32) for each event."""
    data = path.read_bytes()
    assert data[:4] == b"\xfebin"
    pos = 4
    while pos + 19 <= len(data):
        size = struct.unpack_from("<I", data, pos + 9)[0]
        yield pos, data[pos + 4], data[pos + 19:pos + size - 4]  # these files use CRC32
        pos += size


def _rows_start(body: bytes) -> int:
    """Rows v2: table id (6), flags (2), extra-data length (2, counts itself), extra data."""
    return 8 + struct.unpack_from("<H", body, 8)[0]


def _json_column(body: bytes, pos: int) -> tuple[bytes, int]:
    """A JSON column value: u32 length (table-map metadata 4), then the binary document."""
    length = struct.unpack_from("<I", body, pos)[0]
    return body[pos + 4:pos + 4 + length], pos + 4 + length


def test_real_json_opaque_values_mysql_9() -> None:
    """MySQL 9.0.1 ``create table test (a json)``, one opaque-bearing document per insert.

    Expected values: blackbeam/rust_mysql_common src/binlog/mod.rs (commit 0648371, the
    commit the corpus copy comes from), the ``json-opaque.binlog`` block of its binlog test,
    which asserts exactly these eight rows events in this order.
    """
    expected = [
        {"a": "base64:type15:VQ=="},
        {"b": "2012-03-18"},
        {"c": "2012-03-18 11:30:45.000000"},
        {"c": "87:31:46.654321"},
        {"d": "123.456"},
        {"e": "9.00"},
        {"e": [0, 1, True, False]},
        {"e": None},
    ]
    path = _corpus_file("libs/rust_mysql_common/json-opaque.binlog")
    decoded: list[Any] = []
    for offset, type_, body in _events(path):
        if type_ != WRITE_ROWS_V2:
            continue
        pos = _rows_start(body)
        assert body[pos:pos + 3] == b"\x01\xff\x00"  # 1 column, columns bitmap, null bitmap
        doc, end = _json_column(body, pos + 3)
        assert end == len(body)
        decoded.append(decode_json(doc, file=str(path), offset=offset))
    assert decoded == expected
    assert isinstance(decoded[4]["d"], JsonNumberText)  # numbers, not strings, in JSON
    assert isinstance(decoded[5]["e"], JsonNumberText)


def _t_row(body: bytes, pos: int) -> tuple[dict[str, object], int]:
    """A full row of ``t(id INT, json_col JSON, name VARCHAR(100) AS (json_col->>'$.name'),
    age INT AS (json_col->'$.age'))``: null bitmap, id, JSON, name (2-byte length), age."""
    assert body[pos] == 0  # no NULLs
    row_id = struct.unpack_from("<i", body, pos + 1)[0]
    doc, pos = _json_column(body, pos + 5)
    name_len = struct.unpack_from("<H", body, pos)[0]
    name = body[pos + 2:pos + 2 + name_len].decode()
    age = struct.unpack_from("<i", body, pos + 2 + name_len)[0]
    return {"id": row_id, "doc": doc, "name": name, "age": age}, pos + 2 + name_len + 4


def test_real_json_documents_match_generated_columns_mysql_8() -> None:
    """MySQL 8.0.22: the server computed ``name`` and ``age`` from each stored document
    (``json_col->>'$.name'``, ``json_col->'$.age'``) and logged them in the same row image."""
    path = _corpus_file("libs/rust_mysql_common/json.binlog.000001")
    rows = []
    for offset, type_, body in _events(path):
        if type_ not in (WRITE_ROWS_V2, UPDATE_ROWS_V2):
            continue
        pos = _rows_start(body)
        pos += 1 + (2 if type_ == UPDATE_ROWS_V2 else 1)  # column count 4, bitmap(s)
        while pos < len(body):
            row, pos = _t_row(body, pos)
            row["value"] = decode_json(row["doc"], file=str(path), offset=offset)  # type: ignore[arg-type]
            rows.append(row)
    assert len(rows) == 6 + 12  # 6 inserted rows, 6 updates with before and after images
    for row in rows:
        value = row["value"]
        assert isinstance(value, dict)
        assert value["name"] == row["name"]
        assert value["age"] == row["age"]
        # Keys in MySQL's stored order (length, then bytes): the 3 keys of the document.
        assert list(value) == ["age", "data", "name"]


def test_real_partial_json_update_mysql_8() -> None:
    """MySQL 8.0.22 PARTIAL_UPDATE_ROWS (binlog_row_image=MINIMAL): the after image of each
    row has a one-diff vector setting ``$.age``; the server logged the generated ``age`` of the
    updated document right after it, and the previous UPDATE's after image is the before."""
    path = _corpus_file("libs/rust_mysql_common/json.binlog.000001")
    events = list(_events(path))
    previous: dict[int, object] = {}
    for _, type_, body in events:
        if type_ != UPDATE_ROWS_V2:
            continue
        pos = _rows_start(body) + 3  # column count, two bitmaps
        while pos < len(body):
            _, pos = _t_row(body, pos)  # before image
            after, pos = _t_row(body, pos)
            previous[after["id"]] = decode_json(after["doc"])  # type: ignore[arg-type,index]
    [(offset, _, body)] = [e for e in events if e[1] == PARTIAL_UPDATE_ROWS]
    pos = _rows_start(body)
    assert body[pos:pos + 3] == b"\x04\x01\x0e"  # 4 columns; before: id; after: the other 3
    pos += 3
    seen = 0
    while pos < len(body):
        assert body[pos] == 0  # before image: null bitmap
        row_id = struct.unpack_from("<i", body, pos + 1)[0]
        pos += 5
        # After image: value options (packed, 1 = PARTIAL_JSON_UPDATES), partial bits
        # (bit 0 = the one JSON column is a diff), null bitmap of the 3 columns.
        assert body[pos:pos + 3] == b"\x01\x01\x00"
        diffs, pos = read_json_diffs(body, pos + 3, file=str(path), offset=offset)
        name_len = struct.unpack_from("<H", body, pos)[0]
        name = body[pos + 2:pos + 2 + name_len].decode()
        age = struct.unpack_from("<i", body, pos + 2 + name_len)[0]
        pos += 2 + name_len + 4
        assert diffs == [JsonDiff(JsonDiffOp.REPLACE, "$.age", age)]
        updated = apply_json_diffs(previous[row_id], diffs)
        assert isinstance(updated, dict)
        assert updated["age"] == age
        assert updated["name"] == name
        seen += 1
    assert seen == 6


def test_real_partial_json_update_with_full_before_image_mysql_8() -> None:
    """MySQL 8.0.40 file kept by MariaDB (mdev35643_mysql_80_binlog.000001).

    Before image: the document MariaDB's replica shows in its SELECT output (the corpus'
    ``.applied-mariadbd-11.8.6.result``).  The update, per the generating test case quoted
    in MariaDB's mysql-test/suite/rpl/t/rpl_from_mysql80.test, was
    ``UPDATE t2 SET b=JSON_REPLACE(b, '$.b', REPEAT("oOo", 50))``.
    """
    path = _corpus_file("mariadb-11.8/std_data/mdev35643_mysql_80_binlog.000001")
    result = _corpus_file(
        "mariadb-11.8/std_data/mdev35643_mysql_80_binlog.000001.applied-mariadbd-11.8.6.result"
    )
    lines = result.read_text().splitlines()
    row = lines[lines.index("SELECT * FROM t2 ORDER BY a;") + 2]
    assert row.startswith("1\t")
    reference = json.loads(row.split("\t", 1)[1])

    [(offset, _, body)] = [e for e in _events(path) if e[1] == PARTIAL_UPDATE_ROWS]
    pos = _rows_start(body)
    assert body[pos:pos + 3] == b"\x02\xff\xff"  # 2 columns (a INT, b JSON), full images
    pos += 3
    assert body[pos] == 0  # before image: null bitmap
    assert struct.unpack_from("<i", body, pos + 1)[0] == 1  # a = 1
    before_doc, pos = _json_column(body, pos + 5)
    before = decode_json(before_doc, file=str(path), offset=offset)
    assert before == reference

    assert body[pos:pos + 3] == b"\x01\x01\x00"  # value options, partial bits, null bitmap
    assert struct.unpack_from("<i", body, pos + 3)[0] == 1
    diffs, end = read_json_diffs(body, pos + 7, file=str(path), offset=offset)
    assert end == len(body)
    assert diffs == [JsonDiff(JsonDiffOp.REPLACE, "$.b", "oOo" * 50)]
    after = apply_json_diffs(before, diffs)
    assert after == {**reference, "b": "oOo" * 50}
    assert before == reference
