"""The executor-side conversion of JSON row images to typed values (lake/typedconv.py).

Expected values are written out by hand from the MySQL types' definitions; the end-to-end
behaviour (mirror == server SELECT, schema evolution, MINIMAL images) is in
tests/test_lake_typed.py.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import orjson
import pyarrow as pa
import pytest

from binlake.lake.typedconv import NO_LAYOUT, Converter, converter, file_seq


@pytest.mark.parametrize(("kind", "src", "col", "value", "want"), [
    ("cast", "int", "int", 2147483647, 2147483647),
    ("cast", "int", "int", 2147483648, None),  # out of range: NULL, like try_cast
    ("cast", "int", "bigint", -5, -5),
    ("cast", "int", "int", True, None),  # a JSON boolean is not an integer
    ("cast", "bigint", "bigint", -(1 << 63), -(1 << 63)),
    ("cast", "decimal(20,0)", "decimal(20,0)", 18446744073709551615,
     Decimal("18446744073709551615")),
    ("cast", "decimal(5,2)", "decimal(5,2)", "-123.45", Decimal("-123.45")),
    ("cast", "decimal(5,2)", "decimal(5,2)", "1234.5", None),  # 4 integer digits > 3
    ("cast", "decimal(5,2)", "decimal(9,2)", "1.25", Decimal("1.25")),  # widened
    ("cast", "int", "decimal(20,0)", 7, Decimal(7)),
    ("cast", "float", "float", 1.1, 1.100000023841858),  # the single-precision value
    ("cast", "float", "double", 1.1, 1.100000023841858),
    ("cast", "double", "double", 1.1, 1.1),
    ("date", "date", "date", "2024-02-29", date(2024, 2, 29)),
    ("date", "date", "date", "2024-02-30", None),
    ("date", "date", "date", "0000-00-00", None),
    ("datetime", "timestamp_ntz", "timestamp_ntz", "2024-02-29 12:34:56.5",
     datetime(2024, 2, 29, 12, 34, 56, 500000)),
    ("datetime", "timestamp_ntz", "timestamp_ntz", "0000-00-00 00:00:00", None),
    ("timestamp", "timestamp", "timestamp", "1970-01-01 00:00:01.000001",
     datetime(1970, 1, 1, 0, 0, 1, 1, tzinfo=UTC)),
    ("binary", "binary", "binary", {"hex": "00ff"}, b"\x00\xff"),
    ("binary", "binary", "binary", "not hex", None),
    ("text", "string", "string", "plain", "plain"),
    ("text", "string", "string", {"hex": "ff41"}, "\ufffdA"),
    ("string", "string", "string", 3, "3"),  # an ENUM without member names
    ("string", "string", "string", "-838:59:59", "-838:59:59"),  # TIME
    ("json", "string", "string", "a string", '"a string"'),
    ("json", "string", "string", None, None),
    ("vector", "array<float>", "array<float>", [1.5, -2], [1.5, -2.0]),
])
def test_converter(kind: str, src: str, col: str, value: Any, want: Any) -> None:
    got = converter(kind, src, col)(value)
    assert got == want and type(got) is type(want)


def test_file_seq() -> None:
    assert file_seq("mysql-bin.000012") == 12 and file_seq("x") == -1 and file_seq(None) == -1


def _batch(rows: list[dict[str, Any]]) -> pa.RecordBatch:
    cols = {"txn_id": pa.string(), "op": pa.string(), "order_seq": pa.int32(),
            "order_pos": pa.int64(), "order_idx": pa.int32(),
            "commit_ts": pa.timestamp("us", tz="UTC"), "file": pa.string(),
            "pos": pa.int64(), "before": pa.string(), "after": pa.string(),
            "__bl_in_cl": pa.bool_()}
    return pa.RecordBatch.from_arrays(
        [pa.array([r.get(c) for r in rows], t) for c, t in cols.items()], names=list(cols))


def test_converter_batch_layouts_minimal_images_and_exact_json() -> None:
    schema = pa.schema([
        ("_txn_id", pa.string()), ("_op", pa.string()), ("_order_seq", pa.int32()),
        ("_order_pos", pa.int64()), ("_order_idx", pa.int32()),
        ("_commit_ts", pa.timestamp("us", tz="UTC")), ("__bl_layout", pa.int32()),
        ("__bl_in_cl", pa.bool_()), ("id", pa.int32()), ("j", pa.string()),
        ("b", pa.string()), ("b__v2", pa.int32()), ("_absent", pa.list_(pa.string())),
        ("__bl_mismatch", pa.bool_()), ("__bl_old0", pa.int32())])
    # group 0: (id INT, j JSON, b VARCHAR); group 1 from position 500 of file 1: b is INT now
    groups = {0: ([("id", "cast", "int", "id"), ("j", "json", "string", "j"),
                   ("b", "text", "string", "b")], [("id", "cast", "int", 0)]),
              1: ([("id", "cast", "int", "id"), ("b", "cast", "int", "b__v2")],
                  [("id", "cast", "int", 0)])}
    conv = Converter({1: [(100, 0), (500, 1)]}, groups,
                     [("id", "int"), ("j", "string"), ("b", "string"), ("b__v2", "int")],
                     ["id"], schema)
    base = {"txn_id": "t", "order_seq": 1, "order_idx": 0, "file": "bin.000001"}
    doc = '{"id": 1, "j": {"d": 12345678901234567890.123456789, "n": [1, 2.50]}, "b": "x"}'
    rows = [
        {**base, "op": "insert", "order_pos": 1, "pos": 200, "after": doc},
        # MINIMAL update under layout 1: the key is absent from the after image
        {**base, "op": "update", "order_pos": 2, "pos": 600, "before": '{"id": 1}',
         "after": '{"b": 5}'},
        {**base, "op": "delete", "order_pos": 3, "pos": 700, "before": '{"id": 1, "z": 0}'},
        {**base, "op": "insert", "order_pos": 4, "pos": 50, "after": '{"id": 9}'},  # no layout
        {**base, "op": "insert", "order_pos": 5, "pos": 200, "file": "bin.000002",
         "after": '{"id": 9}'},  # a file without recorded layouts
    ]
    (out,) = list(conv(iter([_batch(rows)])))
    got = out.to_pylist()
    assert [r["__bl_layout"] for r in got] == [0, 1, 1, NO_LAYOUT, NO_LAYOUT]
    first = got[0]
    assert first["id"] == 1 and first["b"] == "x" and first["b__v2"] is None
    # the JSON document keeps its number literals exactly
    assert first["j"] == '{"d":12345678901234567890.123456789,"n":[1,2.50]}'
    assert orjson.loads(first["j"])["n"] == [1, 2.5]
    assert first["_absent"] == [] and first["__bl_mismatch"] is False
    upd = got[1]
    assert upd["id"] == 1 and upd["__bl_old0"] == 1 and upd["b__v2"] == 5
    assert upd["_absent"] == []  # the key came from the before image
    dele = got[2]
    assert dele["id"] == 1 and dele["_absent"] == ["b__v2"] and dele["__bl_mismatch"] is True
    assert got[3]["id"] is None and got[3]["_absent"] is None
    assert got[4]["id"] is None
