"""Typed values of row images, converted in Python on the executors (``mapInArrow``).

:mod:`binlake.lake.typed` decides the typed columns of a source table and which layout is in
force for each row change; this module turns the JSON row images of ``row_changes`` (the
``binlake decode --rows`` value contract) into those columns.  One ``orjson.loads`` per image
and a small function per column: much cheaper than Spark's ``from_json`` with a schema per
layout and second parses for hex strings and JSON documents.

Conversions (the source column's typed form -> the typed column's type, which may be a wider
one after schema evolution); a value that does not fit its type is NULL, like ``try_cast``:

* integers, BIT, YEAR: JSON integers (booleans are not integers); BIGINT UNSIGNED and BIT(64)
  into ``decimal(20,0)``;
* DECIMAL: the exact digits (JSON strings) into ``decimal(p,s)``; beyond 38 digits, the text;
* FLOAT / DOUBLE: the number (a FLOAT column widened to DOUBLE holds the single-precision
  value, as a cast would);
* DATE, DATETIME, TIMESTAMP: ``YYYY-MM-DD[ HH:MM:SS[.f]]``; zero, partial or invalid dates
  (``0000-00-00``, ``2024-02-30``, year 0) are NULL; TIMESTAMP values are UTC instants;
* text: the string; ``{"hex": ...}`` (bytes that did not decode in the column's charset)
  decoded as UTF-8 with U+FFFD replacements;
* binary: the bytes of ``{"hex": ...}``;
* MySQL JSON: the JSON text of the value (strings quoted, ``null`` -> NULL), numbers with the
  digits the image has (the image is parsed keeping number literals as written);
* VECTOR: list of single-precision floats;
* anything else (TIME, ENUM, SET, ...): the string, or the JSON text of a non-string value.
"""

from __future__ import annotations

import bisect
import json
import re
import struct
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

import orjson

from ..txn.files import sequence_of

# layout ids of a converted row besides a group id
NO_LAYOUT = -1  # the row's file has no recorded layout (yet)
NO_NAMES = -2  # the layout in force does not name the columns
# a typed row's order key (its change's position in commit order), as the tables name it
ORDER = ("_order_seq", "_order_pos", "_order_idx")

_DEC = re.compile(r"^decimal\((\d+),(\d+)\)$")
_INT_RANGE = {"int": (-(1 << 31), (1 << 31) - 1), "bigint": (-(1 << 63), (1 << 63) - 1)}
_F32 = struct.Struct("<f")
_MISSING = object()

Conv = Callable[[Any], Any]


def file_seq(name: str | None) -> int:
    """The binlog file's sequence number (the order key's ``order_seq``), -1 without one."""
    seq = sequence_of(name) if name else None
    return -1 if seq is None else seq


# -- one value ------------------------------------------------------------------------------

def _integer(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        try:
            return int(v.strip())
        except ValueError:
            return None
    return None


def _in_range(sql: str) -> Conv:
    lo, hi = _INT_RANGE[sql]

    def conv(v: Any) -> int | None:
        n = v if type(v) is int else _integer(v)  # (the common case first)
        return n if n is not None and lo <= n <= hi else None
    return conv


def _decimal(p: int, s: int) -> Conv:
    quantum = Decimal(1).scaleb(-s)
    limit = Decimal(10) ** (p - s)

    def conv(v: Any) -> Decimal | None:
        if v is None or isinstance(v, bool | dict | list):
            return None
        try:
            d = v if isinstance(v, Decimal) else Decimal(v) if isinstance(v, str | int) \
                else Decimal(repr(v))
            if not d.is_finite():
                return None
            d = d.quantize(quantum, rounding="ROUND_HALF_UP")
        except (InvalidOperation, ValueError):
            return None
        return d if abs(d) < limit else None
    return conv


def _floating(single: bool) -> Conv:
    def conv(v: Any) -> float | None:
        if isinstance(v, bool) or v is None:
            return None
        try:
            f = float(v)
        except (TypeError, ValueError):
            return None
        if single:  # the single-precision value (what a FLOAT column holds)
            try:
                f = _F32.unpack(_F32.pack(f))[0]
            except OverflowError:
                return None
        return f
    return conv


_single = _floating(True)


def _date(v: Any) -> date | None:
    if not isinstance(v, str):
        return None
    try:
        return date.fromisoformat(v[:10])
    except ValueError:
        return None


def _datetime(v: Any) -> datetime | None:
    if not isinstance(v, str):
        return None
    try:
        return datetime.fromisoformat(v)
    except ValueError:
        return None


def _timestamp(v: Any) -> datetime | None:
    d = _datetime(v)
    return d.replace(tzinfo=UTC) if d is not None and d.tzinfo is None else d


def _binary(v: Any) -> bytes | None:
    if isinstance(v, dict) and isinstance(v.get("hex"), str):
        try:
            return bytes.fromhex(v["hex"])
        except ValueError:
            return None
    return None


def _json_text(v: Any) -> str:
    return orjson.dumps(v).decode()


def _text(v: Any) -> str | None:
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, dict) and isinstance(v.get("hex"), str) and len(v) == 1:
        try:
            return bytes.fromhex(v["hex"]).decode("utf-8", "replace")
        except ValueError:
            return None
    return _json_text(v)


def _string(v: Any) -> str | None:
    if v is None or isinstance(v, str):
        return v
    return _json_text(v)


def _vector(v: Any) -> list[float | None] | None:
    if not isinstance(v, list):
        return None
    return [_single(x) for x in v]


def _json(v: Any) -> str | None:
    """A MySQL JSON value (parsed with number literals kept: :func:`_parse_keep_numbers`)."""
    return None if v is None else _json_text(v)


def converter(kind: str, src_sql: str, col_sql: str) -> Conv:
    """Value of a source column (``kind``/``src_sql``, see ``typed.Mapped``) -> the typed
    column's value (``col_sql``: the same type or one that holds it)."""
    if kind == "cast":
        if src_sql in _INT_RANGE:
            first = _in_range(src_sql)
        elif (m := _DEC.match(src_sql)) is not None:
            first = _decimal(int(m.group(1)), int(m.group(2)))
        elif src_sql in ("float", "double"):
            first = _floating(src_sql == "float")
        else:
            first = _string
        if col_sql == src_sql:
            return first
        if (m := _DEC.match(col_sql)) is not None:
            second = _decimal(int(m.group(1)), int(m.group(2)))
            return lambda v: None if (x := first(v)) is None else second(x)
        return first  # int in bigint, float in double: the same Python value
    simple: dict[str, Conv] = {"date": _date, "datetime": _datetime, "timestamp": _timestamp,
                               "binary": _binary, "text": _text, "json": _json,
                               "vector": _vector}
    return simple.get(kind, _string)


# -- JSON documents with their number literals ------------------------------------------------

class _Num(str):
    """A JSON number literal as written (kept exact for MySQL JSON columns)."""


def _fragments(v: Any) -> Any:
    if isinstance(v, _Num):
        return orjson.Fragment(str(v))
    if isinstance(v, dict):
        return {k: _fragments(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_fragments(x) for x in v]
    return v


def _parse_keep_numbers(text: str) -> Any:
    return json.loads(text, parse_float=_Num, parse_int=_Num)


# -- a batch of row changes -------------------------------------------------------------------

class Converter:
    """Picklable description of one source table's conversion, built on the driver:

    ``points``: per file sequence, the sorted (position, group id) where a layout takes effect;
    ``groups``: group id -> (columns: [(source name, kind, source sql, typed column)],
    key sources: [(source name, kind, source sql, key index)]);
    ``columns``: typed columns in table order with their types; ``pk``: the key columns.
    """

    def __init__(self, points: dict[int, list[tuple[int, int]]],
                 groups: dict[int, tuple[list[tuple[str, str, str, str]],
                                         list[tuple[str, str, str, int]]]],
                 columns: list[tuple[str, str]], pk: list[str], arrow_schema: Any) -> None:
        self.points = points
        self.groups = groups
        self.columns = columns
        self.pk = pk
        self.arrow_schema = arrow_schema

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        col_index = {c: i for i, (c, _) in enumerate(self.columns)}
        width = len(self.columns)
        npk = len(self.pk)
        pk_index = [col_index[c] for c in self.pk]
        # per group: [(source, value index, conv)], [(source, key index, conv)], names
        plans: dict[int, Any] = {}
        for gid, (cols, keys) in self.groups.items():
            conv_cols = [(s, col_index[c], converter(k, sql, self.columns[col_index[c]][1]))
                         for s, k, sql, c in cols]
            conv_keys = [(s, i, converter(k, sql, self.columns[pk_index[i]][1]))
                         for s, k, sql, i in keys]
            srcs = [s for s, _, _, _ in cols]
            slot = {s: c for s, _, _, c in cols}
            json_srcs = [s for s, k, _, _ in cols if k == "json"]
            # (n_conv, n_srcs: an image with every column has n_conv hits and n_srcs keys)
            plans[gid] = (conv_cols, conv_keys, srcs, set(srcs), slot, json_srcs,
                          len(conv_cols), len(set(srcs)))
        points = {s: ([p for p, _ in pts], [g for _, g in pts])
                  for s, pts in self.points.items()}
        loads = orjson.loads
        pk_set = set(self.pk)
        for b in batches:
            n = b.num_rows
            # only the columns read here become Python objects (not the timestamps, ids...)
            files, poss, ops, befores, afters = (
                b.column(c).to_pylist() for c in ("file", "pos", "op", "before", "after"))
            layout: list[int] = [NO_LAYOUT] * n
            values: list[list[Any]] = [[None] * n for _ in range(width)]
            absent: list[list[str] | None] = [None] * n
            mismatch: list[bool | None] = [None] * n
            olds: list[list[Any]] = [[None] * n for _ in range(npk)]
            seq_cache: dict[str, int] = {}
            for r in range(n):
                f = files[r]
                seq = seq_cache.get(f)
                if seq is None:
                    seq = seq_cache[f] = file_seq(f)
                pts = points.get(seq)
                if pts is None:
                    continue
                k = bisect.bisect_right(pts[0], poss[r]) - 1
                if k < 0:
                    continue
                gid = pts[1][k]
                layout[r] = gid
                plan = plans.get(gid)
                if plan is None:
                    continue
                conv_cols, conv_keys, srcs, src_set, slot, json_srcs, n_conv, n_srcs = plan
                op = ops[r]
                text = befores[r] if op == "delete" else afters[r]
                if text is None:
                    continue
                img = loads(text)
                if json_srcs and any(s in img for s in json_srcs):
                    exact = _parse_keep_numbers(text)
                    for s in json_srcs:
                        if s in img:
                            img[s] = _fragments(exact[s])
                hits = 0
                for s, i, conv in conv_cols:
                    v = img.get(s, _MISSING)
                    if v is not _MISSING:
                        hits += 1
                        values[i][r] = conv(v)
                if hits == n_conv and len(img) == n_srcs:  # a full image (the usual case)
                    miss = []
                    mismatch[r] = False
                else:
                    miss = [slot[s] for s in srcs if s not in img]
                    mismatch[r] = any(s not in src_set for s in img)
                if op == "update" and npk:
                    before = befores[r]
                    if conv_keys and before is not None:
                        old = loads(before)
                        for s, i, conv in conv_keys:
                            if s in old:
                                olds[i][r] = conv(old[s])
                    # an after image without a key column (MINIMAL) keeps the before value
                    for i, c in enumerate(self.pk):
                        if c in miss:
                            values[pk_index[i]][r] = olds[i][r]
                    miss = [c for c in miss if c not in pk_set]
                absent[r] = miss
            arrays = [b.column("txn_id"), b.column("op"), b.column("order_seq"),
                      b.column("order_pos"), b.column("order_idx"), b.column("commit_ts"),
                      pa.array(layout, pa.int32()), b.column("__bl_in_cl")]
            schema = self.arrow_schema
            base = len(arrays)
            for i in range(width):
                arrays.append(pa.array(values[i], schema.field(base + i).type))
            arrays.append(pa.array(absent, schema.field(base + width).type))
            arrays.append(pa.array(mismatch, pa.bool_()))
            for i in range(npk):
                arrays.append(pa.array(olds[i], schema.field(base + width + 2 + i).type))
            yield pa.RecordBatch.from_arrays(
                [a.cast(schema.field(j).type) if a.type != schema.field(j).type else a
                 for j, a in enumerate(arrays)], schema=schema)
