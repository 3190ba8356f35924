"""Typed values of row images, converted in Python on the executors (``mapInArrow``).

:mod:`binlake.lake.typed` decides the typed columns of a source table and which layout is in
force for each row change; this module turns the JSON row images of ``row_changes`` (the
``binlake decode --rows`` value contract) into those columns.  One ``orjson.loads`` per image,
then column by column: a column of plain values (integers, digit strings, ISO dates and times,
text) is cast in Arrow, any other one goes value by value through the small functions below,
which define the conversion (the Arrow casts give the same values, or give up).  Much cheaper
than Spark's ``from_json`` with a schema per layout and second parses for hex strings and JSON
documents.

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

import json
import re
import struct
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from operator import itemgetter
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
    """Value of a source column (``kind``/``src_sql``, see ``typed_plan.Mapped``) -> the typed
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

def _arrow_column(kind: str, src_sql: str, col_sql: str, vals: list[Any], typ: Any
                  ) -> Any:
    """``vals`` converted as ``converter(kind, src_sql, col_sql)`` converts each one, as an
    Arrow array of ``typ``: column-wise in Arrow when every value has the plain form the
    decoder writes (integers, digit strings, ISO dates...), else value by value.  The
    column-wise path gives up (returns to the per-value one) rather than guess: Arrow's
    parse fails on zero, partial or invalid dates, lossy decimals and the like, and the
    results are range-checked where Arrow is laxer than Python (year 0, FLOAT overflow)."""
    import pyarrow as pa

    fast = _column_fast(kind, src_sql, col_sql, vals, typ)
    if fast is not None:
        return fast
    conv = converter(kind, src_sql, col_sql)
    return pa.array([conv(v) for v in vals], typ)


_MIN_DATE = date(1, 1, 1)
_MIN_DATETIME = datetime(1, 1, 1)


def _column_fast(kind: str, src_sql: str, col_sql: str, vals: list[Any], typ: Any) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    if kind in ("json", "binary", "vector"):
        return None
    try:
        arr = pa.array(vals)  # inferred: every value of one JSON type, or it raises
    except (pa.ArrowException, OverflowError, TypeError, ValueError):
        return None
    t = arr.type
    if pa.types.is_null(t):
        return pa.nulls(len(vals), typ)
    text = pa.types.is_string(t)
    whole = pa.types.is_int64(t)
    try:
        if kind == "cast" and src_sql in _INT_RANGE:
            if not whole:
                return None
            lo, hi = _INT_RANGE[src_sql]
            mm = pc.min_max(arr)
            if mm["min"].as_py() < lo or mm["max"].as_py() > hi:
                return None
            out = arr
        elif kind == "cast" and (m := _DEC.match(src_sql)) is not None:
            p, sc = int(m.group(1)), int(m.group(2))
            if p > 38 or not (text or whole):
                return None
            out = arr.cast(pa.decimal128(p, sc))  # fails on a lossy rescale or overflow
        elif kind == "cast" and src_sql in ("float", "double"):
            if not (whole or pa.types.is_float64(t)):
                return None
            out = arr.cast(pa.float64())
            if src_sql == "float":  # the single-precision value; overflow is NULL there
                out = out.cast(pa.float32(), safe=False)
                if pc.any(pc.is_inf(out)).as_py():
                    return None
        elif kind in ("date", "datetime", "timestamp"):
            if not text:
                return None
            if kind == "date":
                out = pc.utf8_slice_codeunits(arr, 0, 10).cast(pa.date32())
                low: Any = _MIN_DATE
            else:
                out = arr.cast(pa.timestamp("us"))
                low = _MIN_DATETIME
            least = pc.min(out).as_py()
            if least is not None and least < low:  # Python has no year 0
                return None
            if kind == "timestamp":
                out = out.cast(pa.timestamp("us", tz="UTC"))  # the text is a UTC instant
        elif kind in ("text", "string", "cast"):  # ("cast" of any other type: the string)
            if not text:
                return None
            out = arr
        else:
            return None
        if col_sql != src_sql and not (_DEC.match(col_sql) or (src_sql, col_sql) in _WIDER):
            return None
        return out.cast(typ)
    except (pa.ArrowException, OverflowError, ValueError):
        return None


# widenings whose per-value conversion keeps the source's Python value
_WIDER = {("int", "bigint"), ("float", "double")}


def _assemble(arrays: list[Any], typ: Any, take: Any) -> Any:
    """The arrays of a column's groups, one after the other, followed by a null, and taken
    into the batch's row order by ``take`` (None: they are in that order already)."""
    import pyarrow as pa

    whole = pa.concat_arrays([a.cast(typ) for a in arrays]) if arrays else pa.nulls(0, typ)
    if take is None:
        return whole
    return pa.concat_arrays([whole, pa.nulls(1, typ)]).take(take)


class Converter:
    """Picklable description of one source table's conversion, built on the driver:

    ``points``: per file sequence, the sorted (position, group id) where a layout takes effect;
    ``groups``: group id -> (columns: [(source name, kind, source sql, typed column)],
    key sources: [(source name, kind, source sql, key index)]);
    ``columns``: typed columns in table order with their types; ``pk``: the key columns.

    A batch is converted column by column: each row's layout (a search of its file's
    points), then per layout its rows' images parsed and each typed column built from one
    list of source values (:func:`_arrow_column`).
    """

    def __init__(self, points: dict[int, list[tuple[int, int]]],
                 groups: dict[int, tuple[list[tuple[str, str, str, str]],
                                         list[tuple[str, str, str, int]]]],
                 columns: list[tuple[str, str]], pk: list[str], arrow_schema: Any,
                 defaults: dict[int, dict[str, Any]] | None = None) -> None:
        self.points = points
        self.groups = groups
        self.columns = columns
        self.pk = pk
        self.arrow_schema = arrow_schema
        # group id -> {source: the value an INSERT's image that lacks the column stands for}
        self.defaults = defaults or {}

    def _layouts(self, b: Any, points: dict[int, tuple[Any, Any]]) -> Any:
        """Each row's layout id (a numpy int32 array); ``points``: per file sequence, the
        positions where a layout takes effect and its ids (numpy arrays)."""
        import numpy as np
        import pyarrow.compute as pc

        n = b.num_rows
        layout = np.full(n, NO_LAYOUT, dtype=np.int32)
        files = pc.dictionary_encode(b.column("file"))
        poss = pc.fill_null(b.column("pos"), 0).to_numpy(zero_copy_only=False)
        codes = pc.fill_null(files.indices, -1).to_numpy(zero_copy_only=False)
        for code, name in enumerate(files.dictionary.to_pylist()):
            pts = points.get(file_seq(name))
            if pts is None:
                continue
            at, gids = pts
            rows = np.nonzero(codes == code)[0]
            k = np.searchsorted(at, poss[rows], side="right") - 1
            layout[rows] = np.where(k >= 0, gids[np.maximum(k, 0)], NO_LAYOUT)
        return layout

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        col_index = {c: i for i, (c, _) in enumerate(self.columns)}
        width = len(self.columns)
        npk = len(self.pk)
        pk_index = [col_index[c] for c in self.pk]
        schema = self.arrow_schema
        base = schema.get_field_index("__bl_in_cl") + 1  # the typed columns follow it
        points = {seq: (np.array([p for p, _ in pts], dtype=np.int64),
                        np.array([g for _, g in pts], dtype=np.int32))
                  for seq, pts in self.points.items() if pts}
        col_types = [schema.field(base + i).type for i in range(width)]
        old_types = [schema.field(base + width + 2 + i).type for i in range(npk)]
        # per group: [(source, value index, kind, sql, col sql)], [(source, key index, ...)]
        plans: dict[int, Any] = {}
        for gid, (cols, keys) in self.groups.items():
            conv_cols = [(s, col_index[c], k, sql, self.columns[col_index[c]][1])
                         for s, k, sql, c in cols]
            conv_keys = [(s, i, k, sql, self.columns[pk_index[i]][1]) for s, k, sql, i in keys]
            srcs = [s for s, _, _, _ in cols]
            slot = {s: c for s, _, _, c in cols}
            json_srcs = [s for s, k, _, _ in cols if k == "json"]
            plans[gid] = (conv_cols, conv_keys, srcs, set(srcs), slot, json_srcs,
                          self.defaults.get(gid, {}))
        loads = orjson.loads
        pk_set = set(self.pk)
        for b in batches:
            n = b.num_rows
            layout = self._layouts(b, points)
            is_delete = pc.fill_null(pc.equal(b.column("op"), "delete"), False)
            image = pc.if_else(is_delete, b.column("before"), b.column("after"))
            has_image = pc.is_valid(image).to_numpy(zero_copy_only=False)
            # typed values land in one Arrow array per (group, column); rows of no group
            # (no layout, no plan, no image) take the null at the end of the concatenation
            parts: list[list[Any]] = [[] for _ in range(width)]
            old_parts: list[list[Any]] = [[] for _ in range(npk)]
            absent: list[list[str] | None] = [None] * n
            mismatch: list[bool | None] = [None] * n
            where = np.full(n, -1, dtype=np.int64)  # row -> its place in the concatenation
            done = 0
            for gid in np.unique(layout).tolist():
                plan = plans.get(gid)
                if plan is None:
                    continue
                conv_cols, conv_keys, srcs, src_set, slot, json_srcs, dflt = plan
                rows = np.nonzero((layout == gid) & has_image)[0]
                m = len(rows)
                if not m:
                    continue
                idx = None if m == n else pa.array(rows, pa.int64())

                def pick(column: Any, idx: Any = idx) -> list[Any]:
                    """This group's values of ``column`` (a batch column) in Python."""
                    return (column if idx is None else column.take(idx)).to_pylist()

                texts = pick(image)
                imgs = [loads(x) for x in texts]
                if json_srcs:
                    for j, img in enumerate(imgs):
                        if any(s in img for s in json_srcs):
                            exact = _parse_keep_numbers(texts[j])
                            for s in json_srcs:
                                if s in img:
                                    img[s] = _fragments(exact[s])
                del texts
                missing = False
                got: dict[int, Any] = {}
                columns: list[Any] | None = None
                inserts: list[bool] | None = None  # (when an image lacks a column)
                if len(conv_cols) > 1:
                    try:  # every image has every column (the usual case): transposed in C
                        columns = list(zip(*map(itemgetter(*(c[0] for c in conv_cols)),
                                                imgs)))
                    except KeyError:
                        columns = None
                for k, (s, i, kind, sql, col_sql) in enumerate(conv_cols):
                    if columns is not None:
                        vals = list(columns[k])
                    else:
                        vals = [img.get(s, _MISSING) for img in imgs]
                        if _MISSING in vals:
                            missing = True
                            if s in dflt:  # an INSERT's MINIMAL image: the default
                                if inserts is None:
                                    inserts = [o == "insert" for o in pick(b.column("op"))]
                                d = dflt[s]
                                vals = [(d if ins else None) if v is _MISSING else v
                                        for v, ins in zip(vals, inserts)]
                            else:
                                vals = [None if v is _MISSING else v for v in vals]
                    got[i] = _arrow_column(kind, sql, col_sql, vals, col_types[i])
                # the images' shapes: full (the usual case) or not
                nsrc = len(src_set)
                rows_l = rows.tolist()
                if not missing and all(len(img) == nsrc for img in imgs):
                    for r in rows_l:
                        absent[r] = []
                        mismatch[r] = False
                    misses: list[list[str]] | None = None
                else:
                    misses = []
                    if dflt and inserts is None:
                        inserts = [o == "insert" for o in pick(b.column("op"))]
                    for j, (r, img) in enumerate(zip(rows_l, imgs)):
                        miss = [slot[s] for s in srcs if s not in img
                                and not (inserts is not None and inserts[j] and s in dflt)]
                        mismatch[r] = any(s not in src_set for s in img)
                        misses.append(miss)
                olds: dict[int, Any] = {}
                if npk:
                    ops = pick(b.column("op"))
                    befores = pick(b.column("before"))
                    old_imgs = [loads(x) if o == "update" and x is not None else None
                                for o, x in zip(ops, befores)]
                    if conv_keys and any(o is not None for o in old_imgs):
                        for s, i, kind, sql, col_sql in conv_keys:
                            vals = [None if o is None else o.get(s) for o in old_imgs]
                            olds[i] = _arrow_column(kind, sql, col_sql, vals, old_types[i])
                    if misses is not None:
                        # an after image without a key column (MINIMAL) keeps the before value
                        for k, c in enumerate(self.pk):
                            fill = [o == "update" and c in miss for o, miss in zip(ops, misses)]
                            if any(fill):
                                old = olds.get(k, pa.nulls(m, old_types[k]))
                                pi = pk_index[k]
                                got[pi] = pc.if_else(pa.array(fill), old.cast(col_types[pi]),
                                                     got.get(pi, pa.nulls(m, col_types[pi])))
                        misses = [[c for c in miss if c not in pk_set] if o == "update"
                                  else miss for o, miss in zip(ops, misses)]
                if misses is not None:
                    for r, miss in zip(rows_l, misses):
                        absent[r] = miss
                for i in range(width):
                    parts[i].append(got.get(i, pa.nulls(m, col_types[i])))
                for i in range(npk):
                    old_parts[i].append(olds.get(i, pa.nulls(m, old_types[i])))
                where[rows] = np.arange(done, done + m)
                done += m
            placed = done == n and bool((where == np.arange(n)).all())
            take = None if placed else pa.array(np.where(where < 0, done, where), pa.int64())

            arrays = [b.column("txn_id"), b.column("op"), b.column("order_seq"),
                      b.column("order_pos"), b.column("order_idx"), b.column("commit_ts"),
                      pa.array(layout, pa.int32()), b.column("__bl_in_cl")]
            for i in range(width):
                arrays.append(_assemble(parts[i], col_types[i], take))
            arrays.append(pa.array(absent, schema.field(base + width).type))
            arrays.append(pa.array(mismatch, pa.bool_()))
            for i in range(npk):
                arrays.append(_assemble(old_parts[i], old_types[i], take))
            yield pa.RecordBatch.from_arrays(
                [a.cast(schema.field(j).type) if a.type != schema.field(j).type else a
                 for j, a in enumerate(arrays)], schema=schema)
