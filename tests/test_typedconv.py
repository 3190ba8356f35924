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

from binlake.lake.typedconv import NO_LAYOUT, Converter, _arrow_column, converter, file_seq


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


# -- column-wise conversion == the per-value converters ----------------------------------------

# (kind, source sql, typed column sql, Arrow type, values the decoder writes and odd ones)
_COLUMNS: list[tuple[str, str, str, pa.DataType, list[Any]]] = [
    ("cast", "int", "int", pa.int32(),
     [0, -(1 << 31), (1 << 31) - 1, 1 << 31, -(1 << 31) - 1, True, "7", " 8 ", "x", 2.0, None]),
    ("cast", "int", "bigint", pa.int64(), [5, -5, 1 << 40, None, False]),
    ("cast", "bigint", "bigint", pa.int64(),
     [-(1 << 63), (1 << 63) - 1, 1 << 63, 1 << 64, None, "12"]),
    ("cast", "decimal(20,0)", "decimal(20,0)", pa.decimal128(20, 0),
     [0, (1 << 64) - 1, 1 << 63, -1, "123", 10 ** 20, None]),
    ("cast", "decimal(5,2)", "decimal(5,2)", pa.decimal128(5, 2),
     ["-123.45", "1.2", "1.255", "1234.5", "0.00", "1e2", "abc", 3, 1.5, None, " 1.25"]),
    ("cast", "decimal(5,2)", "decimal(9,2)", pa.decimal128(9, 2), ["1.25", "-999.99", None]),
    ("cast", "int", "decimal(20,0)", pa.decimal128(20, 0), [7, -7, None, True]),
    ("cast", "float", "float", pa.float32(),
     [1.1, -0.0, 3.4028234663852886e38, 1e39, 1e-46, 2, "1.5", True, None]),
    ("cast", "float", "double", pa.float64(), [1.1, 2.5, 1e39, None]),
    ("cast", "double", "double", pa.float64(), [1.1, 1e308, 5, -0.0, "2", None, False]),
    ("date", "date", "date", pa.date32(),
     ["2024-02-29", "2024-02-30", "0000-00-00", "0000-01-01", "0001-01-01", "9999-12-31",
      "2024-01-01 10:00:00", "20240101", 5, None]),
    ("datetime", "timestamp_ntz", "timestamp_ntz", pa.timestamp("us"),
     ["2024-02-29 12:34:56.5", "2024-02-29 12:34:56.123456", "2024-02-29 12:34:56",
      "2024-02-29 12:34:56.1", "2024-02-29 12:34:56.12", "2024-02-29 12:34:56.123",
      "2024-02-29 12:34:56.1234", "2024-02-29 12:34:56.12345", "0000-00-00 00:00:00",
      "0000-01-01 00:00:00", "2024-02-30 00:00:00", "2024-02-29", "2024-02-29T01:02:03",
      "9999-12-31 23:59:59.999999", "2024-02-29 12:34:56.1234567", 7, None]),
    ("timestamp", "timestamp", "timestamp", pa.timestamp("us", tz="UTC"),
     ["1970-01-01 00:00:01.000001", "2038-01-19 03:14:07", "0000-00-00 00:00:00",
      "2024-01-01 00:00:00+02:00", None]),
    ("text", "string", "string", pa.string(),
     ["plain", "", "\u00fc\U0001f600", {"hex": "ff41"}, {"hex": "zz"}, 3, None]),
    ("string", "string", "string", pa.string(), ["-838:59:59", 3, ["a"], None]),
    ("cast", "string", "string", pa.string(), ["x", 1, None]),
    ("binary", "binary", "binary", pa.binary(), [{"hex": "00ff"}, "x", None]),
    ("json", "string", "string", pa.string(), ["s", 1, {"a": [1, None]}, None]),
    ("vector", "array<float>", "array<float>", pa.list_(pa.float32()), [[1.5, -2], "x", None]),
]


def _per_value(kind: str, src: str, col: str, typ: pa.DataType, vals: list[Any]) -> pa.Array:
    conv = converter(kind, src, col)
    return pa.array([conv(v) for v in vals], typ)


@pytest.mark.parametrize(("kind", "src", "col", "typ", "values"), _COLUMNS,
                         ids=[f"{k}-{s}-{c}" for k, s, c, _, _ in _COLUMNS])
def test_column_conversion_equals_the_per_value_one(kind: str, src: str, col: str,
                                                    typ: pa.DataType,
                                                    values: list[Any]) -> None:
    """A column of one value each (every kind of value alone, so the column-wise path gets
    its chance), of the plain values together, and of all of them: each equal, value for
    value and type for type, to the per-value converter's result."""
    columns = [[v] for v in values] + [values, [v for v in values if v is not None] * 3]
    plain = [v for v in values if isinstance(v, str | int | float) and not isinstance(v, bool)]
    columns += [plain[:k] for k in range(1, len(plain) + 1)]
    for vals in columns:
        got = _arrow_column(kind, src, col, vals, typ)
        want = _per_value(kind, src, col, typ, vals)
        assert got.type == want.type and got.to_pylist() == want.to_pylist(), vals
        # the same Python types too (e.g. a Decimal, not an int; a date, not a datetime)
        assert [type(x) for x in got.to_pylist()] == [type(x) for x in want.to_pylist()]


def test_column_conversion_takes_the_column_wise_path_for_plain_values() -> None:
    """The fast path is used for the values the decoder writes (else the speed-up is gone
    without a test noticing)."""
    from binlake.lake.typedconv import _column_fast

    cases = [("cast", "int", "int", pa.int32(), [1, 2, None]),
             ("cast", "decimal(12,2)", "decimal(12,2)", pa.decimal128(12, 2), ["1.50", "-2.00"]),
             ("cast", "float", "float", pa.float32(), [1.5, 2]),
             ("datetime", "timestamp_ntz", "timestamp_ntz", pa.timestamp("us"),
              ["2024-01-01 00:00:00", "2024-01-01 00:00:00.5"]),
             ("date", "date", "date", pa.date32(), ["2024-01-01"]),
             ("text", "string", "string", pa.string(), ["a", None])]
    for kind, src, col, typ, vals in cases:
        assert _column_fast(kind, src, col, vals, typ) is not None, (kind, src)
    # and not for values it cannot convert exactly
    assert _column_fast("date", "date", "date", pa.date32(), ["0000-01-01"]) is None
    assert _column_fast("cast", "int", "int", pa.int32(), [1 << 31]) is None


def test_converter_batch_of_one_layout_with_a_minimal_update() -> None:
    """A batch whose rows all have one layout (converted without reordering), with a MINIMAL
    update (key from the before image), a delete and an insert."""
    schema = pa.schema([
        ("_txn_id", pa.string()), ("_op", pa.string()), ("_order_seq", pa.int32()),
        ("_order_pos", pa.int64()), ("_order_idx", pa.int32()),
        ("_commit_ts", pa.timestamp("us", tz="UTC")), ("__bl_layout", pa.int32()),
        ("__bl_in_cl", pa.bool_()), ("id", pa.int64()), ("v", pa.decimal128(6, 2)),
        ("_absent", pa.list_(pa.string())), ("__bl_mismatch", pa.bool_()),
        ("__bl_old0", pa.int64())])
    groups = {3: ([("id", "cast", "bigint", "id"), ("v", "cast", "decimal(6,2)", "v")],
                  [("id", "cast", "bigint", 0)])}
    conv = Converter({7: [(4, 3)]}, groups, [("id", "bigint"), ("v", "decimal(6,2)")],
                     ["id"], schema)
    base = {"txn_id": "t", "order_seq": 7, "order_idx": 0, "file": "b.000007"}
    rows = [
        {**base, "op": "insert", "order_pos": 1, "pos": 10, "after": '{"id": 1, "v": "1.50"}'},
        {**base, "op": "update", "order_pos": 2, "pos": 20, "before": '{"id": 1}',
         "after": '{"v": "2.25"}'},
        {**base, "op": "update", "order_pos": 3, "pos": 30,
         "before": '{"id": 1, "v": "2.25"}', "after": '{"id": 2, "v": "2.25"}'},
        {**base, "op": "delete", "order_pos": 4, "pos": 40, "before": '{"id": 2, "v": "2.25"}'},
    ]
    (out,) = list(conv(iter([_batch(rows)])))
    got = out.to_pylist()
    assert [r["__bl_layout"] for r in got] == [3, 3, 3, 3]
    assert [r["id"] for r in got] == [1, 1, 2, 2]
    assert [r["v"] for r in got] == [Decimal("1.50"), Decimal("2.25"), Decimal("2.25"),
                                     Decimal("2.25")]
    assert [r["__bl_old0"] for r in got] == [None, 1, 1, None]
    assert [r["_absent"] for r in got] == [[], [], [], []]
    assert [r["__bl_mismatch"] for r in got] == [False, False, False, False]


def test_converter_batch_of_rows_without_images_or_of_none() -> None:
    """Rows with no layout or no image at all, and an empty batch: typed columns NULL."""
    schema = pa.schema([
        ("_txn_id", pa.string()), ("_op", pa.string()), ("_order_seq", pa.int32()),
        ("_order_pos", pa.int64()), ("_order_idx", pa.int32()),
        ("_commit_ts", pa.timestamp("us", tz="UTC")), ("__bl_layout", pa.int32()),
        ("__bl_in_cl", pa.bool_()), ("id", pa.int64()),
        ("_absent", pa.list_(pa.string())), ("__bl_mismatch", pa.bool_()),
        ("__bl_old0", pa.int64())])
    groups = {0: ([("id", "cast", "bigint", "id")], [("id", "cast", "bigint", 0)])}
    conv = Converter({1: [(100, 0)]}, groups, [("id", "bigint")], ["id"], schema)
    base = {"txn_id": "t", "order_seq": 1, "order_idx": 0, "file": "b.000001"}
    rows = [{**base, "op": "insert", "order_pos": 1, "pos": 50, "after": '{"id": 1}'},
            {**base, "op": "insert", "order_pos": 2, "pos": 150}]  # layout 0, no image
    (out,) = list(conv(iter([_batch(rows)])))
    got = out.to_pylist()
    assert [r["__bl_layout"] for r in got] == [NO_LAYOUT, 0]
    assert [r["id"] for r in got] == [None, None]
    assert [r["_absent"] for r in got] == [None, None]
    (empty,) = list(conv(iter([_batch(rows).slice(0, 0)])))
    assert empty.num_rows == 0 and empty.schema == schema


def test_inserts_lacking_columns_take_the_layouts_defaults() -> None:
    """An INSERT's MINIMAL image has the columns the statement gave: the others take the
    default the layout carries (schemas.image_default); an UPDATE's missing columns stay
    absent, and so does a column without a known default."""
    schema = pa.schema([
        ("_txn_id", pa.string()), ("_op", pa.string()), ("_order_seq", pa.int32()),
        ("_order_pos", pa.int64()), ("_order_idx", pa.int32()),
        ("_commit_ts", pa.timestamp("us", tz="UTC")), ("__bl_layout", pa.int32()),
        ("__bl_in_cl", pa.bool_()), ("id", pa.int32()), ("i", pa.int32()),
        ("m", pa.decimal128(8, 3)), ("s", pa.string()), ("ts", pa.string()),
        ("_absent", pa.list_(pa.string())), ("__bl_mismatch", pa.bool_()),
        ("__bl_old0", pa.int32())])
    groups = {0: ([("id", "cast", "int", "id"), ("i", "cast", "int", "i"),
                   ("m", "cast", "decimal(8,3)", "m"), ("s", "text", "string", "s"),
                   ("ts", "string", "string", "ts")], [("id", "cast", "int", 0)])}
    conv = Converter({1: [(100, 0)]}, groups,
                     [("id", "int"), ("i", "int"), ("m", "decimal(8,3)"), ("s", "string"),
                      ("ts", "string")], ["id"], schema,
                     {0: {"i": 5, "m": "1.500", "s": None}})
    base = {"txn_id": "t", "order_seq": 1, "order_idx": 0, "file": "bin.000001", "pos": 200}
    rows = [
        {**base, "op": "insert", "order_pos": 1, "after": '{"id": 1}'},
        {**base, "op": "insert", "order_pos": 2, "after": '{"id": 2, "i": 7, "s": "x"}'},
        {**base, "op": "update", "order_pos": 3, "before": '{"id": 1}',
         "after": '{"id": 1, "s": "y"}'},
        {**base, "op": "insert", "order_pos": 4,
         "after": '{"id": 3, "i": 1, "m": "2.000", "s": "z", "ts": "t"}'},
    ]
    (out,) = list(conv(iter([_batch(rows)])))
    got = out.to_pylist()
    assert [(r["id"], r["i"], str(r["m"]), r["s"]) for r in got] == [
        (1, 5, "1.500", None), (2, 7, "1.500", "x"), (1, None, "None", "y"),
        (3, 1, "2.000", "z")]
    assert [r["_absent"] for r in got] == [["ts"], ["ts"], ["i", "m", "ts"], []]
