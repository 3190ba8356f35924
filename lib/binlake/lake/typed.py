"""Typed per-table lake tables: a changelog and a mirror of every source table whose columns
are named, by the binlog (``binlog_row_metadata=FULL``) or by the schema history the load
decodes with (MINIMAL / NO_LOG: :mod:`binlake.lake.schemas`).

For source table ``db.tbl`` (of any source label):

``<catalog>.<namespace>.changelog__<db>__<tbl>``
    One row per committed row change, in the table's own column types: the image after the
    change (``insert``/``update``) or before it (``delete``), plus ``_op``, ``_order_seq``,
    ``_order_pos``, ``_order_idx`` (the order key: sorting by it replays the changes in commit
    order), ``_commit_ts``, ``_txn_id``, ``_source`` and ``_absent`` (the names of the columns
    the image does not carry -- ``binlog_row_image=MINIMAL``/``NOBLOB`` -- empty when it is
    complete; an absent column is NULL in the row, which is not the same as a NULL value).
    Partitioned by ``days(_commit_ts)``.  Holds the changes of the run's files: what they
    gave the changelog before is deleted, then their changes are added, so a rerun, a
    backfill over loaded files, or a rerun after a run killed between ``row_changes`` and
    this step, all leave exactly one changelog row per change.  A load converts them while
    it decodes (:func:`prepare`, :func:`fill`: the decode tasks write the changelog's data
    files); :func:`apply` converts them from ``row_changes`` in a Spark job (and so does a
    load for a new typed table whose older changes are only in ``row_changes``).

``<catalog>.<namespace>.mirror__<db>__<tbl>``
    The table's current state (tables with a primary key only): the typed columns plus
    ``_source``, ``_order_seq``, ``_order_pos``, ``_order_idx``, ``_commit_ts`` of the change
    that wrote the row.  One row per ``(_source, primary key)``.

Table names are the database and table names lower-cased with every character outside
``[a-z0-9_]`` replaced by ``_``.  When that changes a name (upper case, ``-``, non-ASCII...)
or either name contains ``__`` (which would make ``db__tbl`` ambiguous), an 8-hex-digit hash
of the exact ``db`` and ``tbl`` is appended (``changelog__my_db__t__1a2b3c4d``): two source
tables never share a typed table.  Column names are kept as the binlog spells them, except
that a source column whose name is one of the metadata columns above (compared
case-insensitively) or starts with ``__bl_`` gets the suffix ``__col``.

Type mapping (MySQL/MariaDB column type as the Table_map gives it -> Spark type -> Iceberg)
-------------------------------------------------------------------------------------------

=====================================  =================  ===================================
source column                          Spark              Iceberg / notes
=====================================  =================  ===================================
TINYINT, SMALLINT, MEDIUMINT (any      INT                int (unsigned ranges fit)
sign), INT signed, YEAR
INT UNSIGNED                           BIGINT             long
BIGINT signed                          BIGINT             long
BIGINT UNSIGNED                        DECIMAL(20,0)      decimal(20,0): 18446744073709551615
                                                          intact
DECIMAL(p,s), p <= 38                  DECIMAL(p,s)       decimal(p,s), exact
DECIMAL(p,s), p > 38                   STRING             the exact digits as the server
                                                          prints them (Iceberg decimals stop
                                                          at 38 digits)
FLOAT                                  FLOAT              float
DOUBLE                                 DOUBLE             double
BIT(n), n < 64                         BIGINT             long
BIT(64)                                DECIMAL(20,0)      decimal(20,0)
DATE                                   DATE               date
DATETIME(fsp)                          TIMESTAMP_NTZ      timestamp (without zone: the wall
                                                          clock value, no time-zone shift),
                                                          microseconds
TIMESTAMP(fsp)                         TIMESTAMP          timestamptz (UTC instant),
                                                          microseconds
TIME(fsp)                              STRING             ``[-]HH:MM:SS[.ffffff]`` as the
                                                          server prints it (Spark has no time
                                                          type and TIME is a duration up to
                                                          +-838:59:59)
CHAR, VARCHAR, TEXT (a character set)  STRING             (bytes that did not decode in the
                                                          column's charset: decoded as UTF-8
                                                          with U+FFFD replacements)
ENUM, SET                              STRING             member names (``"a,c"`` for a SET;
                                                          the index as text when the binlog
                                                          has no member names)
JSON (MySQL)                           STRING             the JSON text of the value
                                                          (strings quoted; JSON ``null`` is
                                                          NULL), compact, numbers with the
                                                          digits the binlog gave; a partial
                                                          update the binlog gives only as
                                                          ``{"json_diff": ...}`` is stored as
                                                          that object
JSON (MariaDB: a LONGTEXT)             STRING             the text
BINARY, VARBINARY, BLOB (binary        BINARY             binary, the exact bytes (BINARY(n)
charset), GEOMETRY, MariaDB INET4,                        padded to n bytes like the server
INET6, UUID                                               returns it; GEOMETRY as stored:
                                                          4-byte SRID + WKB)
VECTOR (MySQL 9)                       ARRAY<FLOAT>       list<float>
anything else                          STRING             the JSON text of the decoded value
=====================================  =================  ===================================

Zero and invalid dates (``0000-00-00``, ``2024-02-00``, ``0000-00-00 00:00:00``, and any date
Spark cannot represent) are NULL in the typed column; the value as written stays in
``row_changes.before``/``after``.  Every typed column is nullable (zero dates, absent columns).

Schema evolution
----------------

A table's layouts (every Table_map layout a load has seen, with its file sequence number and
position; ``layout`` identifies the column list) are kept in ``<namespace>.typed_layouts``;
each row image is converted with the
layout in force at its rows event (the last Table_map of that table before it in the same
file), so rows logged before an ``ALTER TABLE`` keep the old columns.  The typed tables hold
the union of all layouts, evolved with Iceberg's schema evolution, by these rules, applied to
every layout in binlog order:

* a new column: ``ADD COLUMN`` (after the existing typed columns, before the metadata ones);
  earlier rows have it NULL;
* a dropped column: kept (nullable) and no longer filled: NULL in changelog rows of later
  changes, and NULL in mirror rows written by later changes (rows no change touched since
  keep their last value);
* a type change: the new type goes into the first column of the chain ``name``,
  ``name__v2``, ``name__v3``... that can hold it exactly (the same type, or a wider one: INT
  in BIGINT, FLOAT in DOUBLE, INT/BIGINT in a DECIMAL with enough integer digits, DECIMAL in
  a DECIMAL with at least its scale and integer digits); else into the first one Iceberg can
  widen to hold it (INT -> BIGINT, FLOAT -> DOUBLE, DECIMAL(p,s) -> DECIMAL(p',s) with the
  same scale, p' <= 38: ``ALTER COLUMN ... TYPE``); else (an incompatible change: INT ->
  VARCHAR, a DECIMAL scale change, BIGINT -> BIGINT UNSIGNED, DATE -> DATETIME...) into a new
  column ``name__vN`` (the next free N, from 2); ``name`` then stops being filled;
* a renamed column is a dropped column plus a new column;
* an ALTER rewrites the server's rows but logs no row changes: a mirror row no change has
  touched since keeps the values (and columns) of its last change -- e.g. after
  ``MODIFY b INT`` (was VARCHAR) it has ``b`` set and ``b__v2`` NULL until it changes;
* a table whose layouts never name their columns (no ``binlog_row_metadata=FULL``: images
  are keyed ``@1``..``@n``) gets no typed tables (the report says so); rows logged under a
  layout without names are left out of the typed tables of a table that has named layouts.

The column mapping depends only on the table's existing Iceberg schema and its layouts, so
reruns and overlapping backfills change nothing; a backfill of never-loaded files whose older
layout is incompatible with the table adds a ``__vN`` column like any type change.

Mirror semantics
----------------

The mirror applies the changes of ``row_changes`` newer than its watermark (the table
property ``binlake.watermark.<source>`` = ``"seq,pos,idx"``, the order key of the last
applied change, set after each MERGE) in commit order: per primary key the latest change
among them wins (an UPDATE that changes the primary key deletes the row at the old key and
writes the new one), then one MERGE: a delete -> DELETE the matched row; an insert/update ->
UPDATE the matched row / INSERT when not matched; matched rows are only touched when the
change's order key is greater than the row's.  Hence: a backfill over older files never
resurrects rows (they are below the watermark), and a rerun after a crash between the MERGE
and the watermark update changes nothing (the order guard).  A mirror that does not exist is
built by replaying all of ``row_changes`` of the table; dropping a mirror table rebuilds it on
the next load that sees the table (do that after backfilling files older than the watermark,
which the mirror otherwise ignores).

Partial images (``binlog_row_image=MINIMAL``/``NOBLOB``): an UPDATE writes the columns its
after image carries and keeps the others (also across several changes of one key in one
batch); an INSERT leaves the columns it does not carry NULL (the binlog does not say the
server's default); an UPDATE that moves a row to another primary key leaves the columns its
after image does not carry NULL.

The mirror's key is the primary key of the newest layout; rows are matched on
``(_source, key columns)``, NULL-safe (a zero date in a key column is NULL).  When the newest
layout has no primary key (``DROP PRIMARY KEY``), an existing mirror is no longer maintained
(the report says so); the changelog goes on.

Tables without a primary key get a mirror with a replica's semantics (a multiset of rows,
:mod:`binlake.lake.nopk`); TRUNCATE / DROP / CREATE / RENAME TABLE and ALTER TABLE rewrites
are applied to the mirrors by :mod:`binlake.lake.lifecycle` and :mod:`binlake.lake.alters`.

Changes whose file has no known layout (a run killed after ``row_changes`` and before this
step, followed by a run over other files) are not converted: the changelog takes them once a
load of their file has recorded its layouts, and the mirror stops just before the first of
them (the report says where) until then.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from ..binlog.columns import Column, _resolve_meta, type_name
from ..binlog.constants import ColumnType as T
from ..binlog.rowcodec import column_codec
from ..config import Settings
from .tables import ROW_CHANGES, TBLPROPERTIES, delete_where, has_snapshots
from .typedconv import NO_LAYOUT, NO_NAMES, ORDER

LAYOUTS = "typed_layouts"
CHANGELOG_PREFIX = "changelog__"
MIRROR_PREFIX = "mirror__"
WATERMARK = "binlake.watermark."
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

# -- names ---------------------------------------------------------------------------------


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


# -- type mapping --------------------------------------------------------------------------


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


# -- layouts -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    seq: int
    pos: int
    columns: tuple[tuple[str, Mapped], ...]  # (source name, typed form); empty without names
    pk: tuple[str, ...] | None
    has_names: bool

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
        return cls(int(r["seq"]), int(r["pos"]), mapped, tuple(pk) if pk else None, named)


# -- schema planning (pure) ----------------------------------------------------------------

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


# -- Spark helpers -------------------------------------------------------------------------


def _props(spark: Any, table: str) -> dict[str, str]:
    return {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}


def _exists(spark: Any, table: str) -> bool:
    return bool(spark.catalog.tableExists(table))


def _typed_columns(spark: Any, table: str, meta: tuple[tuple[str, str], ...]
                   ) -> list[tuple[str, str]]:
    names = {n for n, _ in meta}
    return [(f.name, f.dataType.simpleString()) for f in spark.table(table).schema.fields
            if f.name not in names]


def _coldef(name: str, sql: str, comment: str | None = None) -> str:
    return f"{q(name)} {sql}" + (f" COMMENT {lit(comment)}" if comment else "")


def _create(spark: Any, table: str, typed: list[tuple[str, str]], comments: dict[str, str],
            meta: tuple[tuple[str, str], ...], partitioning: str | None) -> None:
    cols = [_coldef(n, t, comments.get(n)) for n, t in typed] + [_coldef(n, t) for n, t in meta]
    spark.sql(f"CREATE TABLE IF NOT EXISTS {table} ({', '.join(cols)}) USING iceberg "
              + (f"PARTITIONED BY ({partitioning}) " if partitioning else "")
              + f"TBLPROPERTIES ({TBLPROPERTIES})")


def _evolve(spark: Any, table: str, target: dict[str, str], comments: dict[str, str],
            meta: tuple[tuple[str, str], ...]) -> list[str]:
    """Bring the typed columns of ``table`` to ``target`` (add missing ones after the last
    typed column, widen types); return the statements run."""
    have = dict(_typed_columns(spark, table, meta))
    lower = {c.lower(): c for c in have}
    done = []
    last = list(have)[-1] if have else None
    for name, sql in target.items():
        cur = lower.get(name.lower())
        if cur is None:
            where = f" AFTER {q(last)}" if last else " FIRST"
            stmt = f"ALTER TABLE {table} ADD COLUMN {_coldef(name, sql, comments.get(name))}"
            spark.sql(stmt + where)
            done.append(stmt + where)
            last = name
        elif have[cur] != sql:
            if widen(have[cur], sql) is None and not holds(sql, have[cur]):
                raise ValueError(f"{table}.{cur}: cannot change {have[cur]} to {sql}")
            stmt = f"ALTER TABLE {table} ALTER COLUMN {q(cur)} TYPE {sql}"
            spark.sql(stmt)
            done.append(stmt)
        if cur is not None:
            last = cur
    return done


# -- conversion ----------------------------------------------------------------------------

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


# -- the step ------------------------------------------------------------------------------


def watermark_key(spark: Any, settings: Settings) -> str:
    """The mirror's watermark property: ``binlake.watermark.<source>`` on main; on a
    write-audit-publish branch ``...<source>@<branch>`` (table properties are not per branch:
    publishing moves the branch's value to the main key)."""
    branch = spark.conf.get("spark.wap.branch", None)
    return WATERMARK + settings.source + (f"@{branch}" if branch else "")


def _layout_id(r: dict[str, Any]) -> str:
    key = [r["columns"], r.get("primary_key"), bool(r.get("has_names"))]
    return hashlib.sha1(orjson.dumps(key, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def _sync_layouts(spark: Any, settings: Settings, tables_seen: list[dict[str, Any]],
                  run_id: str) -> dict[tuple[str, str], list[Layout]]:
    """Record this run's layouts in ``typed_layouts`` (once per table, file sequence and
    position) and return every recorded layout of the run's tables, in binlog order."""
    from pyspark.sql import functions as F

    table = settings.table(LAYOUTS)
    spark.sql(f"CREATE TABLE IF NOT EXISTS {table} ({LAYOUTS_DDL}) USING iceberg "
              f"TBLPROPERTIES ({TBLPROPERTIES})")
    keys = sorted({(r["db"], r["tbl"]) for r in tables_seen})
    where = f"source = {lit(settings.source)} AND (" + " OR ".join(
        f"(db = {lit(d)} AND tbl = {lit(t)})" for d, t in keys) + ")"
    points = {(r[0], r[1], r[2], r[3]): r[4] for r in spark.table(table).where(where).select(
        "db", "tbl", "seq", "pos", "layout").collect()} if has_snapshots(spark, table) else {}
    defs: dict[str, dict[str, Any]] = {}
    new = {}
    changed = []
    for r in tables_seen:
        lid = _layout_id(r)
        defs[lid] = r
        key = (r["db"], r["tbl"], int(r["seq"]), int(r["pos"]))
        if points.get(key) != lid:
            if key in points:  # named now (a schema history), or a file's bytes changed
                changed.append(key)
            points[key] = lid
            new[key] = (settings.source, *key, lid, orjson.dumps(r["columns"]).decode(),
                        orjson.dumps(r.get("primary_key")).decode(),
                        bool(r.get("has_names")), run_id)
    if changed:
        delete_where(spark, table, f"source = {lit(settings.source)} AND (" + " OR ".join(
            f"(db = {lit(d)} AND tbl = {lit(t)} AND seq = {s} AND pos = {p})"
            for d, t, s, p in changed) + ")")
    if new:  # a few rows: written by the driver, no Spark job
        from .commit import append_rows

        names = [c.split()[0] for c in LAYOUTS_DDL.split(", ")]
        append_rows(spark, settings, table, [dict(zip(names, v)) for v in new.values()],
                    run_id)
    missing = sorted(set(points.values()) - set(defs))
    if missing:
        for r in spark.table(table).where(
                f"source = {lit(settings.source)} AND layout IN "
                f"({', '.join(lit(x) for x in missing)})").groupBy("layout").agg(
                *[F.first(c) for c in ("columns", "primary_key", "has_names")]).collect():
            defs[r[0]] = {"columns": r[1], "primary_key": r[2], "has_names": r[3]}
    out: dict[tuple[str, str], list[Layout]] = {k: [] for k in keys}
    cache: dict[str, Layout] = {}
    for (db, tbl, seq, pos), lid in sorted(points.items()):
        if lid not in cache:
            cache[lid] = Layout.from_record({**defs[lid], "seq": 0, "pos": 0})
        lay = cache[lid]
        out[(db, tbl)].append(Layout(seq, pos, lay.columns, lay.pk, lay.has_names))
    return out


def apply(spark: Any, settings: Settings, tables_seen: list[dict[str, Any]],
          run_id: str, seqs: list[int] | None = None) -> dict[str, Any]:
    """Create/evolve and fill the typed changelog and mirror tables of every table seen in
    this run (see the module doc), from ``row_changes``.  Returns a report: ``tables`` (per
    ``db.tbl``: table names, ``created``, ``evolved`` statements, ``changelog_rows``
    inserted, ``mirror_rows`` (changes applied), ``skipped`` reason, ``notes``), plus
    totals."""
    if not tables_seen:
        return _report()
    jobs = _prepare_all(spark, settings, tables_seen, run_id, seqs)
    return _fill_all(spark, settings, jobs, lambda job: _fill_table(spark, settings, job))


def _report() -> dict[str, Any]:
    return {"tables": {}, "created": [], "evolved": [],
            "rows_merged": {"changelog": 0, "mirror": 0}, "skipped": {}}


def _prepare_all(spark: Any, settings: Settings, tables_seen: list[dict[str, Any]],
                 run_id: str, seqs: list[int] | None) -> list[_TableJob]:
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {settings.catalog_name}.{settings.namespace}")
    layouts = _sync_layouts(spark, settings, tables_seen, run_id)
    # Schemas first, one table after the other (each a catalog write).
    jobs = []
    for key in sorted(layouts):
        t0 = time.time()
        job = _prepare_table(spark, settings, key[0], key[1], layouts[key], seqs)
        job.rep["seconds"] = round(time.time() - t0, 3)
        jobs.append(job)
    return jobs


def _fill_all(spark: Any, settings: Settings, jobs: list[_TableJob],
              fill: Any) -> dict[str, Any]:
    report = _report()

    def one(job: _TableJob) -> dict[str, Any]:
        t0 = time.time()
        if job.plan is not None:
            fill(job)
        job.rep["seconds"] = round(job.rep["seconds"] + time.time() - t0, 3)
        return job.rep

    # Tables are independent (their own Iceberg commits): several at once keep the cores
    # busy while one table's small stages or commits run.
    from concurrent.futures import ThreadPoolExecutor

    if not jobs:
        return report
    with ThreadPoolExecutor(max_workers=min(settings.typed_parallelism, len(jobs))) as pool:
        reps = list(pool.map(one, jobs))
    for job, rep in zip(jobs, reps):
        key = f"{job.db}.{job.tbl}"
        report["tables"][key] = rep
        report["created"] += rep["created"]
        report["evolved"] += rep["evolved"]
        report["rows_merged"]["changelog"] += rep["changelog_rows"]
        report["rows_merged"]["mirror"] += rep["mirror_rows"]
        if rep["skipped"]:
            report["skipped"][key] = rep["skipped"]
    return report


# -- converted on the executors, while they decode ------------------------------------------

@dataclass
class Prepared:
    """The typed step of a load, prepared before its files are decoded (:func:`prepare`):
    every table's schema is done; ``fast`` are the tables whose changelog rows (and mirror
    delta) the decode tasks convert and write themselves; the others are filled from
    ``row_changes`` afterwards, as :func:`apply` does."""

    jobs: list[_TableJob]
    fast: dict[tuple[str, str], Any]  # (db, tbl) -> sink.TypedOut
    stage_ddl: dict[tuple[str, str], str]  # the staged delta's schema, per fast table


def prepare(spark: Any, settings: Settings, tables_seen: list[dict[str, Any]], run_id: str,
            seqs: list[int], stage_root: str | None) -> Prepared:
    """Sync the layouts of the files about to be decoded (``tables_seen``: their TABLE
    records, from the plan's survey), create or evolve every typed table, and say which
    tables the decode tasks fill: all of them, except a table whose typed tables are new
    while ``row_changes`` holds changes of it outside this run's files (it is built from
    ``row_changes``, which has them all) and, when ``stage_root`` is None (no local staging
    directory: the warehouse is not local), a table with a mirror."""
    from .sink import TypedOut

    if not tables_seen:
        return Prepared([], {}, {})
    jobs = _prepare_all(spark, settings, tables_seen, run_id, seqs)
    full = [job for job in jobs if job.plan is not None and job.full]
    older: set[tuple[str, str]] = set()
    if full:
        where = " OR ".join(f"(db = {lit(j.db)} AND tbl = {lit(j.tbl)})" for j in full)
        older = {(r[0], r[1]) for r in spark.table(settings.table(ROW_CHANGES)).where(
            f"source = {lit(settings.source)} AND NOT order_seq IN "
            f"({', '.join(str(n) for n in seqs)}) AND ({where})").select(
            "db", "tbl").distinct().collect()}
    fast: dict[tuple[str, str], Any] = {}
    ddls: dict[tuple[str, str], str] = {}
    for job in jobs:
        if job.plan is None or (job.db, job.tbl) in older:
            continue
        if job.pk_slots and stage_root is None:
            continue
        conv, ddl = _converter(job.layouts, job.named, job.slots_of, job.plan, None,
                               job.pk_slots)
        cl = job.rep["changelog"]
        stage = (f"{stage_root.rstrip('/')}/{table_names(job.db, job.tbl)[0]}"
                 if job.pk_slots and stage_root is not None else None)
        fast[(job.db, job.tbl)] = TypedOut(job.db, job.tbl, cl, conv, stage, job.wm)
        ddls[(job.db, job.tbl)] = ddl
    return Prepared(jobs, fast, ddls)


def fill(spark: Any, settings: Settings, prepared: Prepared, stats: list[dict[str, Any]],
         written: list[dict[str, Any]], commit: Any, run_id: str) -> dict[str, Any]:
    """Fill the typed tables after the record tables are written: a fast table from what
    the decode tasks gave (``stats``: their TYPED records, ``written``: the changelog data
    files, both of the files that decoded cleanly; ``commit(table, written)`` adds data
    files in one Iceberg commit), the others from ``row_changes``."""
    def one(job: _TableJob) -> None:
        spec = prepared.fast.get((job.db, job.tbl))
        if spec is None:
            _fill_table(spark, settings, job)
            return
        mine = [s for s in stats if s["table"] == spec.table]
        files = [w for w in written if w["table"] == spec.table]
        _fill_fast(spark, settings, job, spec, prepared.stage_ddl[(job.db, job.tbl)], mine,
                   files, commit, run_id)

    return _fill_all(spark, settings, prepared.jobs, one)


def _fill_fast(spark: Any, settings: Settings, job: _TableJob, spec: Any, ddl: str,
               stats: list[dict[str, Any]], files: list[dict[str, Any]], commit: Any,
               run_id: str) -> None:
    from pyspark.sql.types import StructType, _parse_datatype_string

    from .fold import FOLD_MAX_BYTES, FOLD_MAX_ROWS

    assert job.plan is not None
    total: dict[str, Any] = {
        k: sum(int(s[k] or 0) for s in stats)
        for k in ("cl", "delta", "todo", "no_layout", "no_names", "mismatch")}
    total["partial"] = any(s["partial"] for s in stats)
    blocked = [tuple(s["blocked"]) for s in stats if s["blocked"] is not None]
    last = [tuple(s["last"]) for s in stats if s["last"] is not None]
    total["blocked"] = min(blocked) if blocked else None
    total["last"] = max(last) if last else None
    staged = [s["staged"] for s in stats if s["staged"]]
    conv = None
    struct = _parse_datatype_string(ddl)
    assert isinstance(struct, StructType)
    if staged:
        conv = _read_staged(spark, struct.fields, staged)
    src = lit(settings.source)
    seqs = job.seqs or []
    cl_delete = f"_source = {src}" + ("" if job.full else
                                     f" AND _order_seq IN ({', '.join(str(n) for n in seqs)})")
    cl = job.rep["changelog"]

    def write_changelog() -> None:
        delete_where(spark, cl, cl_delete)
        if files:
            commit(cl, files)

    mirror = job.rep["mirror"] or settings.table(table_names(job.db, job.tbl)[1])
    fold = None
    staged_bytes = sum(os.path.getsize(p) for p in staged)
    if staged and not total["partial"] and total["delta"] <= FOLD_MAX_ROWS \
            and staged_bytes <= FOLD_MAX_BYTES:
        here = total["delta"] <= DRIVER_FOLD_ROWS and staged_bytes <= DRIVER_FOLD_BYTES

        def fold(blocked: tuple[int, int, int] | None) -> str:
            assert job.plan is not None and spec.stage is not None
            return _fold_fast(spark, settings, mirror, job, spec.stage, staged, struct,
                              blocked, commit, run_id, here)
    _fill(spark, settings, conv, cl, cl_delete, mirror, job.plan, job.pk_slots, job.wm,
          job.rep, stats=total, write_changelog=write_changelog, mirror_new=job.mirror_new,
          fold=fold)


# A staged delta this small is folded on the driver (no Spark job; the fold holds it in
# memory, a few times its staged bytes): the usual incremental load's
DRIVER_FOLD_ROWS = 50_000
DRIVER_FOLD_BYTES = 8 << 20


def _fold_fast(spark: Any, settings: Settings, mirror: str, job: _TableJob, stage: str,
               staged: list[str], struct: Any, blocked: tuple[int, int, int] | None,
               commit: Any, run_id: str, here: bool = False) -> str:
    """Apply a table's staged delta to its mirror, folded by one executor task
    (:func:`fold.fold_mirror`: Arrow in memory, the delta having at most
    ``FOLD_MAX_ROWS`` rows in at most ``FOLD_MAX_BYTES`` of staged files) rather than by
    Spark's window and sort.  A mirror created by this run (empty, not partitioned) gets
    the folded rows as data files, in one commit after its source's rows are deleted (a
    retry adds nothing twice); an existing one MERGEs the folded delta, folded on the
    driver when ``here`` (a small delta: ``DRIVER_FOLD_ROWS``, ``DRIVER_FOLD_BYTES``; the
    same function, without a Spark job).  Returns where it was folded: ``executor`` or
    ``driver``."""

    from .commit import table_out
    from .fold import FoldSpec, fold_mirror
    from .sink import DataSink

    assert job.plan is not None
    pk = tuple(job.pk_slots)
    spec = FoldSpec(tuple(staged), tuple(struct.names), pk,
                    tuple(f"{INTERNAL}old{i}" for i in range(len(pk))),
                    tuple(job.plan.columns), blocked)
    sc = spark.sparkContext
    if job.mirror_new:
        out = table_out(spark, mirror)
        if not out.partition:
            sink = DataSink({mirror: out}, settings.source, run_id, settings.s3_endpoint_url,
                            attempt=uuid.uuid4().hex[:8])
            spec = replace(spec, sink=sink, mirror=mirror)
            written = sc.parallelize([spec], 1).flatMap(fold_mirror).collect()
            delete_where(spark, mirror, f"_source = {lit(settings.source)}")
            if written:
                commit(mirror, written)
            return "executor"
    path = f"{stage.rstrip('/')}/folded-{uuid.uuid4().hex[:8]}.parquet"
    if here:
        fold_mirror(replace(spec, out=path))
    else:
        sc.parallelize([replace(spec, out=path)], 1).flatMap(fold_mirror).collect()
    fields = {f.name: f for f in struct.fields}
    folded = _read_staged(spark, [fields[n] for n in (*job.plan.columns, "_op", *ORDER,
                                                      "_commit_ts")], [path])
    _merge_mirror(spark, settings, folded, mirror, job.plan, job.pk_slots, False,
                  job.mirror_new, folded=True)
    return "driver" if here else "executor"


def _read_staged(spark: Any, fields: list[Any], paths: list[str]) -> Any:
    """A DataFrame of Parquet files staged by the executors with positional column names
    (:func:`sink.stage_columns`), named and typed as ``fields`` (StructFields)."""
    from pyspark.sql.types import StructType

    from .sink import stage_columns

    names = [f.name for f in fields]
    pos = StructType([f.__class__(c, f.dataType, f.nullable)
                      for c, f in zip(stage_columns(names), fields)])
    # pyarrow writes proleptic Gregorian dates: no rebase (year 1 stays year 1)
    return spark.read.schema(pos).option("datetimeRebaseMode", "CORRECTED").option(
        "int96RebaseMode", "CORRECTED").parquet(*paths).toDF(*names)


@dataclass
class _TableJob:
    """One source table's typed step: its schema done (:func:`_prepare_table`), its rows to
    convert and merge (:func:`_fill_table`)."""

    db: str
    tbl: str
    rep: dict[str, Any]
    layouts: list[Layout]
    named: list[Layout] = field(default_factory=list)
    plan: Plan | None = None  # None: nothing to fill (skipped)
    slots_of: dict[int, dict[str, str]] = field(default_factory=dict)
    pk_slots: list[str] = field(default_factory=list)
    full: bool = False
    wm: tuple[int, int, int] | None = None
    seqs: list[int] | None = None
    mirror_new: bool = False  # the mirror was created by this run: it is empty


def _prepare_table(spark: Any, settings: Settings, db: str, tbl: str,
                   layouts: list[Layout], seqs: list[int] | None) -> _TableJob:
    cl_name, m_name = table_names(db, tbl)
    cl, mirror = settings.table(cl_name), settings.table(m_name)
    rep: dict[str, Any] = {"changelog": cl, "mirror": None, "created": [], "evolved": [],
                           "changelog_rows": 0, "mirror_rows": 0, "skipped": None,
                           "notes": []}
    named = [lay for lay in layouts if lay.has_names]
    if not named:
        rep["changelog"] = None
        rep["skipped"] = ("the binlog does not name the columns (binlog_row_metadata is not "
                          "FULL): no typed tables")
        return _TableJob(db, tbl, rep, layouts)

    # Schema: plan on the changelog, then bring the mirror to the same typed columns.
    cl_exists = _exists(spark, cl)
    mirror_existed = _exists(spark, mirror)
    # created but never written (no snapshot: the typed tables are created before the files
    # are decoded, and that run may have been killed): built like new ones
    cl_filled = cl_exists and has_snapshots(spark, cl)
    existing = _typed_columns(spark, cl, CL_META) if cl_exists else []
    plan = plan_schema(existing, named)
    if not cl_exists:
        _create(spark, cl, list(plan.columns.items()), plan.comments, CL_META,
                "days(_commit_ts)")
        rep["created"].append(cl)
    elif plan.actions:
        rep["evolved"] += _evolve(spark, cl, plan.columns, plan.comments, CL_META)
    slots_of = {id(lay): s for lay, s in zip(named, plan.slots)}
    newest = named[-1]
    slots = slots_of[id(newest)]
    pk_slots = [slots[c] for c in newest.pk] if newest.pk and all(
        c in slots for c in newest.pk) else []
    # Only the run's files' changes, unless a typed table is new (then all of row_changes).
    mirror_filled = mirror_existed and bool(pk_slots) and has_snapshots(spark, mirror)
    full = seqs is None or not cl_filled or bool(pk_slots and not mirror_filled)
    if pk_slots:
        rep["mirror"] = mirror
        if not mirror_existed:
            _create(spark, mirror, list(plan.columns.items()), plan.comments, MIRROR_META,
                    None)
            rep["created"].append(mirror)
        else:
            rep["evolved"] += _evolve(spark, mirror, plan.columns, plan.comments, MIRROR_META)
    else:
        rep["notes"].append("no primary key: changelog only (no mirror)"
                            + (f"; {mirror} is no longer maintained"
                               if _exists(spark, mirror) else ""))
    wm = None
    if pk_slots:
        props = _props(spark, mirror)
        raw = props.get(watermark_key(spark, settings)) or props.get(WATERMARK + settings.source)
        if raw:
            s, p, i = (int(x) for x in raw.split(","))
            wm = (s, p, i)
    return _TableJob(db, tbl, rep, layouts, named, plan, slots_of, pk_slots, full, wm, seqs,
                     bool(pk_slots) and not mirror_filled)


def _fill_table(spark: Any, settings: Settings, job: _TableJob) -> None:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    db, tbl, rep, layouts, named, plan = (job.db, job.tbl, job.rep, job.layouts, job.named,
                                          job.plan)
    assert plan is not None
    slots_of, pk_slots, full, wm, seqs = job.slots_of, job.pk_slots, job.full, job.wm, job.seqs
    cl, mirror = rep["changelog"], rep["mirror"] or settings.table(table_names(db, tbl)[1])
    # Candidates: the changes of the run's files (the changelog's rows for those files are
    # replaced; the mirror takes those newer than its watermark).
    src = lit(settings.source)
    scope = "" if full else f" AND order_seq IN ({', '.join(str(n) for n in seqs or [])})"
    cand = spark.table(settings.table(ROW_CHANGES)).where(
        f"source = {src} AND db = {lit(db)} AND tbl = {lit(tbl)}{scope}").select(
        "txn_id", "order_seq", "order_pos", "order_idx", "commit_ts", "op", "before", "after",
        "file", "pos", F.lit(None).cast("boolean").alias(f"{INTERNAL}in_cl"))
    cl_delete = f"_source = {src}" + ("" if full else scope.replace("order_seq", "_order_seq"))
    cand = cand.withColumn(f"{INTERNAL}seq", F.expr(
        "coalesce(try_cast(regexp_extract(file, '\\\\.([0-9]+)$', 1) AS INT), -1)"))
    cand_seqs: set[int] | None = None
    if len({lay.seq for lay in layouts}) > MAX_POINTS:  # only the candidates' files
        cand = cand.persist(StorageLevel.MEMORY_AND_DISK)
        cand_seqs = {r[0] for r in cand.select(f"{INTERNAL}seq").distinct().collect()}
    try:
        conv = _convert(cand, layouts, named, slots_of, plan, cand_seqs, pk_slots)
        conv = conv.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            _fill(spark, settings, conv, cl, cl_delete, mirror, plan, pk_slots, wm, rep,
                  mirror_new=job.mirror_new)
        finally:
            conv.unpersist()
    finally:
        cand.unpersist()


def _convert(cand: Any, layouts: list[Layout], named: list[Layout], slots_of: dict[int, Any],
             plan: Plan, seqs: set[int] | None, pk_slots: list[str]) -> Any:
    """The candidates with their typed columns, converted in Python on the executors
    (:mod:`binlake.lake.typedconv`): ``_txn_id``, ``_op``, the order key, ``_commit_ts``,
    the layout group in force, the typed columns, ``_absent``, a mismatch flag and, for
    updates of a table with a key, the key's values before the change."""
    conv, ddl = _converter(layouts, named, slots_of, plan, seqs, pk_slots)
    return cand.mapInArrow(conv, ddl)


def _converter(layouts: list[Layout], named: list[Layout], slots_of: dict[int, Any],
               plan: Plan, seqs: set[int] | None, pk_slots: list[str]) -> tuple[Any, str]:
    """The :class:`typedconv.Converter` of :func:`_convert` and its output schema (DDL)."""
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType, _parse_datatype_string

    from .typedconv import Converter

    # Layout groups (layouts converting identically) and the change points of the files
    # the candidates come from (the layout in force: the last one before the row, same file).
    groups: dict[Any, _Group] = {}
    gid_of: dict[int, int] = {}
    for lay in named:
        slots = slots_of[id(lay)]
        sig = (lay.columns, tuple(sorted(slots.items())))
        if sig not in groups:
            groups[sig] = _Group(len(groups), lay, slots)
        gid_of[id(lay)] = groups[sig].gid
    points: list[tuple[int, int, int]] = []
    for lay in layouts:
        if seqs is not None and lay.seq not in seqs:
            continue
        gi = gid_of[id(lay)] if lay.has_names else NO_NAMES
        if points and points[-1][0] == lay.seq and points[-1][2] == gi:
            continue
        points.append((lay.seq, lay.pos, gi))
    by_seq: dict[int, list[tuple[int, int]]] = {}
    for ps, pp, gi in points:
        by_seq.setdefault(ps, []).append((pp, gi))
    used = {gi for _, _, gi in points}
    conv_groups = {}
    for g in groups.values():
        if g.gid not in used:
            continue
        cols, taken = [], set()
        for src, m in g.layout.columns:
            if g.slots[src] not in taken:  # the first source of a typed column fills it
                taken.add(g.slots[src])
                cols.append((src, m.kind, m.sql, g.slots[src]))
        kinds = dict(g.layout.columns)
        inv: dict[str, str] = {}
        for src, c in g.slots.items():
            inv.setdefault(c, src)
        keys = [(inv[c], kinds[inv[c]].kind, kinds[inv[c]].sql, i)
                for i, c in enumerate(pk_slots) if c in inv]
        conv_groups[g.gid] = (cols, keys)
    fields = [("_txn_id", "string"), ("_op", "string"), ("_order_seq", "int"),
              ("_order_pos", "bigint"), ("_order_idx", "int"), ("_commit_ts", "timestamp"),
              (f"{INTERNAL}layout", "int"), (f"{INTERNAL}in_cl", "boolean"),
              *plan.columns.items(), ("_absent", "array<string>"),
              (f"{INTERNAL}mismatch", "boolean"),
              *[(f"{INTERNAL}old{i}", plan.columns[c]) for i, c in enumerate(pk_slots)]]
    ddl = ", ".join(f"{q(n)} {t}" for n, t in fields)
    struct = _parse_datatype_string(ddl)
    assert isinstance(struct, StructType)
    conv = Converter(by_seq, conv_groups, list(plan.columns.items()), list(pk_slots),
                     to_arrow_schema(struct))
    return conv, ddl


def _fill(spark: Any, settings: Settings, conv: Any, cl: str, cl_delete: str, mirror: str,
          plan: Plan, pk_slots: list[str], wm: tuple[int, int, int] | None,
          rep: dict[str, Any], stats: dict[str, Any] | None = None,
          write_changelog: Any = None, mirror_new: bool = False, fold: Any = None) -> None:
    """Fill the changelog (its rows of the run's files replaced: ``cl_delete``) and MERGE the
    mirror.  Tables are filled in threads; their commits queue for the catalog's connection
    (one per JVM on SQLite: see :func:`binlake.lake.spark.jdbc_catalog_properties`).
    ``fold(blocked)``, when given, applies the delta to the mirror in place of
    :func:`_merge_mirror` (see :func:`_fold_fast`; it returns where the delta was folded)."""
    from pyspark.sql import functions as F

    t0 = time.time()
    steps = rep.setdefault("steps", {})

    def step(name: str) -> None:
        nonlocal t0
        steps[name] = round(time.time() - t0, 3)
        t0 = time.time()

    L = f"{INTERNAL}layout"
    new_cl = f"{INTERNAL}in_cl IS NULL AND {L} >= 0"
    delta = _after(wm) if pk_slots else "false"
    okey = "struct(_order_seq, _order_pos, _order_idx)"
    if stats is None:
        stats = _stats(conv, new_cl, delta, okey)
    step("convert")
    if stats["no_layout"]:
        rep["notes"].append(f"{stats['no_layout']} change(s) in files whose layouts are not "
                            "recorded: left for a load of those files")
    if stats["no_names"]:
        rep["notes"].append(f"{stats['no_names']} change(s) logged without column names: "
                            "not in the typed tables")
    if stats["mismatch"]:
        rep["notes"].append(f"{stats['mismatch']} change(s) whose image has columns the layout "
                            "in force does not name")
    typed = list(plan.columns)

    def changelog() -> None:
        if write_changelog is not None:
            write_changelog()
            return
        delete_where(spark, cl, cl_delete)
        if stats["cl"]:
            cols = [f.name for f in spark.table(cl).schema.fields]
            conv.where(new_cl).select(
                *[F.col(q(c)) for c in typed], "_op", *ORDER, "_commit_ts", "_txn_id",
                F.lit(settings.source).alias("_source"), "_absent").select(
                *[F.col(q(c)) for c in cols]).writeTo(cl).append()

    changelog()
    rep["changelog_rows"] = int(stats["cl"] or 0)
    step("changelog")
    if not pk_slots or not stats["delta"]:
        return
    last = stats["last"]
    cond = delta
    if stats["blocked"] is not None:
        b = tuple(stats["blocked"])
        rep["notes"].append(f"mirror stopped before change {b[0]},{b[1]},{b[2]}: its file's "
                            "layouts are not recorded (rerun the load of that file)")
        cond += f" AND NOT {_after(b, strict=False)}"
        last, n = conv.where(cond).agg(
            F.max(F.expr(okey)), F.sum(F.expr(f"CASE WHEN {L} >= 0 THEN 1 ELSE 0 END"))
        ).collect()[0]
    else:
        n = stats["todo"]
    if n and fold is not None:
        blocked = tuple(stats["blocked"]) if stats["blocked"] is not None else None
        rep["mirror_fold"] = fold(blocked) or "executor"
    elif n:
        rep["mirror_fold"] = "spark"
        _merge_mirror(spark, settings, conv.where(cond).where(f"{L} >= 0"), mirror, plan,
                      pk_slots, bool(stats["partial"]), mirror_new)
    step("mirror")
    rep["mirror_rows"] = int(n or 0)
    if last is not None:
        spark.sql(f"ALTER TABLE {mirror} SET TBLPROPERTIES "
                  f"({lit(watermark_key(spark, settings))} = '{last[0]},{last[1]},{last[2]}')")
        step("watermark")


def _stats(conv: Any, new_cl: str, delta: str, okey: str) -> dict[str, Any]:
    """What :func:`_fill` needs to know of the converted candidates (one Spark job)."""
    from pyspark.sql import functions as F

    L = f"{INTERNAL}layout"
    return conv.agg(
        F.sum(F.expr(f"CASE WHEN {new_cl} THEN 1 ELSE 0 END")).alias("cl"),
        F.sum(F.expr(f"CASE WHEN {delta} THEN 1 ELSE 0 END")).alias("delta"),
        F.sum(F.expr(f"CASE WHEN {delta} AND {L} >= 0 THEN 1 ELSE 0 END")).alias("todo"),
        F.max(F.expr(f"{delta} AND {L} >= 0 AND _op = 'update' AND size(_absent) > 0"))
        .alias("partial"),
        F.min(F.expr(f"CASE WHEN {delta} AND {L} = {NO_LAYOUT} THEN {okey} END"))
        .alias("blocked"),
        F.max(F.expr(f"CASE WHEN {delta} THEN {okey} END")).alias("last"),
        F.sum(F.expr(f"CASE WHEN {L} = {NO_LAYOUT} THEN 1 ELSE 0 END")).alias("no_layout"),
        F.sum(F.expr(f"CASE WHEN {L} = {NO_NAMES} THEN 1 ELSE 0 END")).alias("no_names"),
        F.sum(F.expr(f"CASE WHEN {INTERNAL}mismatch THEN 1 ELSE 0 END")).alias("mismatch"),
    ).collect()[0].asDict()


def _merge_mirror(spark: Any, settings: Settings, delta: Any, mirror: str, plan: Plan,
                  pk_slots: list[str], partial: bool, empty: bool = False,
                  folded: bool = False) -> None:
    """Fold the delta per key (the latest change wins; with ``partial`` images, an update
    keeps the columns its image does not carry, also across several changes of one key) and
    MERGE it into the mirror.  Into a mirror created by this run (``empty``) the MERGE
    would only insert: the folded rows that are not deletes are appended instead (after
    deleting the source's rows: a retried append adds nothing twice).  A ``folded`` delta is
    one already folded (:func:`fold.fold_delta`: the typed columns, ``_op``, the order
    columns and ``_commit_ts``, one row per key)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    typed = list(plan.columns)
    others = [c for c in typed if c not in set(pk_slots)]
    OP, ORD, TS, KEEP, LAST = (f"{INTERNAL}{x}" for x in ("op", "ord", "ts", "keep", "last"))
    olds = [f"{INTERNAL}old{i}" for i in range(len(pk_slots))]
    kfs = [f"{INTERNAL}kf{i}" for i in range(len(others))]
    if folded:
        src = delta.select(*[F.col(q(c)) for c in typed], F.col("_op").alias(OP),
                           F.struct(*[F.col(c) for c in ORDER]).alias(ORD),
                           F.col("_commit_ts").alias(TS), *[F.lit(False).alias(k) for k in kfs])
        _apply_mirror(spark, settings, src, mirror, pk_slots, others, kfs, OP, ORD, TS,
                      partial, empty)
        return
    base = delta.select(
        F.col("_op").alias(OP), F.struct(*[F.col(c) for c in ORDER]).alias(ORD),
        F.col("_commit_ts").alias(TS), *[F.col(q(c)) for c in typed],
        *[F.col(o) for o in olds], "_absent")
    same = F.lit(True)
    for c, o in zip(pk_slots, olds):
        same = same & F.col(q(c)).eqNullSafe(F.col(o))
    upd = F.col(OP) == "update"
    # An update that changes the key: a delete of the old key, then the row at the new one.
    gone = base.where(upd & ~same).select(
        F.lit("delete").alias(OP), ORD, TS,
        *[F.col(o).alias(c) for c, o in zip(pk_slots, olds)],
        *[F.lit(None).cast(plan.columns[c]).alias(c) for c in others],
        F.array().cast("array<string>").alias(KEEP))
    keep = F.when(upd & same, F.col("_absent")).otherwise(F.array().cast("array<string>"))
    rows = base.select(OP, ORD, TS, *[F.col(q(c)) for c in typed], keep.alias(KEEP))
    changes = rows.unionByName(gone)
    w = Window.partitionBy(*[F.col(q(c)) for c in pk_slots])
    o_ = F.col(ORD)
    changes = changes.withColumn(LAST, F.max(o_).over(w))
    if not partial:
        src = changes.where(F.col(LAST) == o_).select(
            *[F.col(q(c)) for c in typed], OP, ORD, TS,
            *[F.lit(False).alias(k) for k in kfs])
    else:
        lastdel = f"{INTERNAL}lastdel"
        changes = changes.withColumn(lastdel, F.max(F.when(F.col(OP) == "delete", o_)).over(w))
        dels = changes.where((F.col(LAST) == o_) & (F.col(OP) == "delete")).select(
            *[F.col(q(c)) for c in typed], OP, ORD, TS, *[F.lit(False).alias(k) for k in kfs])
        # After the key's last delete: per column, the latest value of a change that carries
        # it (kept when none does).
        ups = changes.where(F.col(lastdel).isNull() | (F.col(lastdel) < o_))
        aggs = [F.max_by(F.col(OP), o_).alias(OP), F.max(o_).alias(ORD),
                F.max_by(F.col(TS), o_).alias(TS)]
        for c, k in zip(others, kfs):
            kept = F.array_contains(F.col(KEEP), c)
            aggs.append(F.max_by(F.col(q(c)), F.when(~kept, o_)).alias(c))
            aggs.append(F.min(kept).alias(k))
        ups = ups.groupBy(*[F.col(q(c)) for c in pk_slots]).agg(*aggs)
        cols = [*typed, OP, ORD, TS, *kfs]
        src = ups.select(*[F.col(q(c)) for c in cols]).unionByName(
            dels.select(*[F.col(q(c)) for c in cols]))
    _apply_mirror(spark, settings, src, mirror, pk_slots, others, kfs, OP, ORD, TS, partial,
                  empty)


def _apply_mirror(spark: Any, settings: Settings, src: Any, mirror: str, pk_slots: list[str],
                  others: list[str], kfs: list[str], OP: str, ORD: str, TS: str,
                  partial: bool, empty: bool) -> None:
    """The folded changes ``src`` (one per key) into the mirror: appended when it is
    ``empty``, MERGEd otherwise (see :func:`_merge_mirror`)."""
    from pyspark.sql import functions as F

    src = src.select(F.lit(settings.source).alias("_source"), "*",
                     *[F.col(ORD).getField(c).alias(c) for c in ORDER],
                     F.col(TS).alias("_commit_ts"))
    ins = [*pk_slots, *others, "_source", *ORDER, "_commit_ts"]
    if empty:
        delete_where(spark, mirror, f"_source = {lit(settings.source)}")
        names = [f.name for f in spark.table(mirror).schema.fields]
        src.where(F.col(OP) != "delete").select(*[F.col(q(c)) for c in ins]).select(
            *[F.col(q(c)) for c in names]).writeTo(mirror).append()
        return
    view = f"{INTERNAL}mirror_src_{hashlib.sha1(mirror.encode()).hexdigest()[:12]}"
    src.createOrReplaceTempView(view)  # one view per table: tables run in threads
    on = " AND ".join(["t._source = s._source",
                       *(f"t.{q(c)} <=> s.{q(c)}" for c in pk_slots)])
    newer = _order_gt("s", "t")
    if partial:
        sets = [f"t.{q(c)} = CASE WHEN s.{k} THEN t.{q(c)} ELSE s.{q(c)} END"
                for c, k in zip(others, kfs)]
    else:
        sets = [f"t.{q(c)} = s.{q(c)}" for c in others]
    sets += [f"t.{c} = s.{c}" for c in (*ORDER, "_commit_ts")]
    spark.sql(
        f"MERGE INTO {mirror} t USING {view} s ON {on} "
        f"WHEN MATCHED AND s.{OP} = 'delete' AND {newer} THEN DELETE "
        f"WHEN MATCHED AND s.{OP} <> 'delete' AND {newer} THEN UPDATE SET {', '.join(sets)} "
        f"WHEN NOT MATCHED AND s.{OP} <> 'delete' THEN INSERT "
        f"({', '.join(q(c) for c in ins)}) VALUES ({', '.join('s.' + q(c) for c in ins)})")

