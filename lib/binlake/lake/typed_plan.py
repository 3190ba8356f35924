"""The pure part of the typed tables (no Spark): their names (:func:`table_names`,
:func:`column_base`, SQL quoting), the mapping of a binlog column type to a lake type
(:func:`map_column`), a table's layouts (:class:`Layout`), the schema planned from them
(:func:`plan_schema`: which type holds every layout's values, widened as the table evolves),
and the SQL of order-key comparisons.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..binlog.columns import Column, _resolve_meta, type_name
from ..binlog.constants import ColumnType as T
from ..binlog.rowcodec import column_codec
from .typedconv import ORDER

LAYOUTS = "typed_layouts"


CHANGELOG_PREFIX = "changelog__"


MIRROR_PREFIX = "mirror__"


WATERMARK = "binlake.watermark."


# a mirror's ALTER replays (alters.py): every ALTER at or before this position has been
# replayed on its rows; and the replay under way (its position, and the snapshot before it)
ALTERED = "binlake.altered."
REPLAYING = "binlake.replaying."
# a no-primary-key mirror's write under way (nopk.py): the watermark it is for, the snapshot
# before it and the Spark application
APPLYING = "binlake.nopk-applying."
# the fences (commit.set_fence): a write under way that the next load must find committed or
# not in the mirror's history (maintenance leaves a mirror holding one alone)
FENCES = (REPLAYING, APPLYING)


LAYOUTS_DDL = ("source STRING NOT NULL, db STRING NOT NULL, tbl STRING NOT NULL, "
               "seq INT NOT NULL, pos BIGINT NOT NULL, layout STRING, columns STRING, "
               "primary_key STRING, has_names BOOLEAN, run_id STRING")


MAX_POINTS = 64  # more layout records than this: restrict them to the candidates' files


RC_ORDER = ("order_seq", "order_pos", "order_idx")


CL_META: tuple[tuple[str, str], ...] = (
    ("_op", "string"), ("_order_seq", "int"), ("_order_pos", "bigint"), ("_order_idx", "int"),
    ("_commit_ts", "timestamp"), ("_txn_id", "string"), ("_source", "string"),
    ("_absent", "array<string>"))


MIRROR_META: tuple[tuple[str, str], ...] = (
    ("_source", "string"), ("_order_seq", "int"), ("_order_pos", "bigint"),
    ("_order_idx", "int"), ("_commit_ts", "timestamp"))


RESERVED = frozenset(n for n, _ in CL_META)


INTERNAL = "__bl_"


def q(name: str) -> str:
    """A Spark SQL identifier."""
    return "`" + name.replace("`", "``") + "`"


def lit(s: str) -> str:
    """A Spark SQL string literal."""
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _part(s: str) -> str:
    return re.sub(r"[^a-z0-9_]", "_", s.lower())


def table_names(db: str, tbl: str) -> tuple[str, str]:
    """(changelog, mirror) table names (without catalog and namespace) of ``db.tbl``."""
    a, b = _part(db), _part(tbl)
    base = f"{a}__{b}"
    if a != db or b != tbl or "__" in db or "__" in tbl:
        base += "__" + hashlib.sha1(f"{db}\0{tbl}".encode()).hexdigest()[:8]
    return CHANGELOG_PREFIX + base, MIRROR_PREFIX + base


def column_base(src: str) -> str:
    """The Iceberg column name of source column ``src`` (before any ``__vN`` suffix)."""
    low = src.lower()
    if low in RESERVED or low.startswith(INTERNAL):
        return src + "__col"
    return src


@dataclass(frozen=True)
class Mapped:
    """A source column's typed form: ``sql`` (Spark type, lower-case simpleString), ``kind``
    (how a JSON value becomes it) and ``mysql`` (the source type, for the column comment)."""

    sql: str
    kind: str  # cast | date | datetime | timestamp | string | text | binary | json | vector
    mysql: str


_BLOBS = frozenset({T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB, T.BLOB})


_STRINGS = frozenset({T.VARCHAR, T.VAR_STRING, T.STRING})


def map_column(d: dict[str, Any]) -> Mapped:
    """The typed form of a Table_map column (its ``describe()`` dict)."""
    members = d.get("members")
    col = Column(int(d.get("index", 0)), int(d["binlog_type"]), int(d["binlog_type"]),
                 int(d.get("meta") or 0), bool(d.get("nullable", True)), d.get("name"),
                 bool(d.get("unsigned")), d.get("collation"),
                 tuple(members) if members is not None else None)
    _resolve_meta(col)
    t = col.type
    desc = type_name(col) + (" UNSIGNED" if col.unsigned else "")
    if t in (T.TINY, T.SHORT, T.INT24, T.YEAR):
        return Mapped("int", "cast", desc)
    if t == T.LONG:
        return Mapped("bigint" if col.unsigned else "int", "cast", desc)
    if t == T.LONGLONG:
        return Mapped("decimal(20,0)" if col.unsigned else "bigint", "cast", desc)
    if t == T.NEWDECIMAL:
        if 0 < col.precision <= 38:
            return Mapped(f"decimal({col.precision},{col.scale})", "cast", desc)
        return Mapped("string", "string", desc)
    if t == T.FLOAT:
        return Mapped("float", "cast", desc)
    if t == T.DOUBLE:
        return Mapped("double", "cast", desc)
    if t == T.BIT:
        return Mapped("bigint" if col.length < 64 else "decimal(20,0)", "cast", desc)
    if t in (T.DATE, T.NEWDATE):
        return Mapped("date", "date", desc)
    if t in (T.DATETIME, T.DATETIME2):
        return Mapped("timestamp_ntz", "datetime", desc)
    if t in (T.TIMESTAMP, T.TIMESTAMP2):
        return Mapped("timestamp", "timestamp", desc)
    if t in (T.TIME, T.TIME2):
        return Mapped("string", "string", desc)
    if t in (T.ENUM, T.SET):
        return Mapped("string", "string", desc)
    if t in _STRINGS or t in _BLOBS:
        if column_codec(col) is None:
            return Mapped("binary", "binary", desc)
        return Mapped("string", "text", desc)
    if t == T.GEOMETRY:
        return Mapped("binary", "binary", desc)
    if t == T.JSON:
        return Mapped("string", "json", desc)
    if t == T.VECTOR:
        return Mapped("array<float>", "vector", desc)
    return Mapped("string", "string", desc)


@dataclass(frozen=True)
class Layout:
    seq: int
    pos: int
    columns: tuple[tuple[str, Mapped], ...]  # (source name, typed form); empty without names
    pk: tuple[str, ...] | None
    has_names: bool
    # (source name, value as JSON text) of the columns whose value an INSERT that leaves
    # them out gets (lake/defaults.py: a MINIMAL row image has only the columns it gave)
    defaults: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> Layout:
        cols = r["columns"]
        if isinstance(cols, str):
            cols = orjson.loads(cols)
        pk = r.get("primary_key")
        if isinstance(pk, str):
            pk = orjson.loads(pk)
        named = bool(r.get("has_names")) and all(c.get("name") for c in cols)
        mapped = tuple((c["name"], map_column(c)) for c in cols) if named else ()
        defaults = tuple((c["name"], orjson.dumps(c["default"]).decode())
                         for c in cols if "default" in c) if named else ()
        return cls(int(r["seq"]), int(r["pos"]), mapped, tuple(pk) if pk else None, named,
                   defaults)


_DEC = re.compile(r"^decimal\((\d+),(\d+)\)$")


_INT_DIGITS = {"int": 10, "bigint": 19}


def _dec(t: str) -> tuple[int, int] | None:
    m = _DEC.match(t)
    return (int(m.group(1)), int(m.group(2))) if m else None


def holds(have: str, new: str) -> bool:
    """Can a column of type ``have`` hold every value of type ``new`` exactly?"""
    if have == new:
        return True
    if (have, new) in (("bigint", "int"), ("double", "float")):
        return True
    h = _dec(have)
    if h is None:
        return False
    n = _dec(new)
    if n is not None:
        return h[1] >= n[1] and h[0] - h[1] >= n[0] - n[1]
    return new in _INT_DIGITS and h[0] - h[1] >= _INT_DIGITS[new]


def widen(have: str, new: str) -> str | None:
    """The type Iceberg can promote ``have`` to so that it holds ``new``, or None."""
    if (have, new) == ("int", "bigint"):
        return "bigint"
    if (have, new) == ("float", "double"):
        return "double"
    h, n = _dec(have), _dec(new)
    if h is not None and n is not None and n[1] <= h[1]:
        need = h[1] + max(h[0] - h[1], n[0] - n[1])
        if need <= 38:
            return f"decimal({need},{h[1]})"
    return None


@dataclass
class Plan:
    columns: dict[str, str]  # typed column -> Spark type, in table order
    comments: dict[str, str]
    actions: list[tuple[str, str, str]] = field(default_factory=list)  # (add|alter, col, type)
    slots: list[dict[str, str]] = field(default_factory=list)  # per layout: source -> column


def plan_schema(existing: list[tuple[str, str]], layouts: list[Layout]) -> Plan:
    """Map every layout's columns to typed columns, evolving ``existing`` (the table's typed
    columns, in order) by the rules of the module doc."""
    plan = Plan(dict(existing), {})
    lower = {c.lower(): c for c in plan.columns}
    cache: dict[tuple[tuple[str, Mapped], ...], dict[str, str]] = {}

    def chain(base: str) -> list[str]:
        out = [lower[base.lower()]] if base.lower() in lower else []
        n = 2
        while f"{base}__v{n}".lower() in lower:
            out.append(lower[f"{base}__v{n}".lower()])
            n += 1
        return out

    def slot(src: str, m: Mapped) -> str:
        base = column_base(src)
        names = chain(base)
        for c in names:
            if holds(plan.columns[c], m.sql):
                return c
        for c in names:
            w = widen(plan.columns[c], m.sql)
            if w is not None:
                plan.columns[c] = w
                plan.actions.append(("alter", c, w))
                return c
        new = base if not names else f"{base}__v{len(names) + 1}"
        plan.columns[new] = m.sql
        plan.comments[new] = f"MySQL {m.mysql}"
        lower[new.lower()] = new
        plan.actions.append(("add", new, m.sql))
        return new

    for lay in layouts:
        if lay.columns not in cache:
            cache[lay.columns] = {src: slot(src, m) for src, m in lay.columns}
        plan.slots.append(cache[lay.columns])
    return plan


@dataclass
class _Group:
    """Layouts that convert identically (one converter per group)."""

    gid: int
    layout: Layout
    slots: dict[str, str]  # source -> typed column


def _order_gt(a: str, b: str) -> str:
    s, p, i = ORDER
    return (f"({a}.{s} > {b}.{s} OR ({a}.{s} = {b}.{s} AND ({a}.{p} > {b}.{p} OR "
            f"({a}.{p} = {b}.{p} AND {a}.{i} > {b}.{i}))))")


def _after(wm: tuple[int, int, int] | None, cols: tuple[str, str, str] = ORDER,
           strict: bool = True) -> str:
    """SQL: the order key in ``cols`` is after ``wm`` (at or after it when not strict)."""
    if wm is None:
        return "true"
    s, p, i = wm
    a, b, c = cols
    op = ">" if strict else ">="
    return f"({a} >= {s} AND ({a} > {s} OR {b} > {p} OR ({b} = {p} AND {c} {op} {i})))"


def older_than(pos: tuple[int, int]) -> str:
    """SQL: the order key is before the DDL statement at ``pos``: a transaction's
    ``order_pos`` is its end offset, at most the statement's position when it ends before
    it (where no GTID event comes between them, equal to it)."""
    seq, p = int(pos[0]), int(pos[1])
    return f"(_order_seq < {seq} OR (_order_seq = {seq} AND _order_pos <= {p}))"
