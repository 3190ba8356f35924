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
import time
from dataclasses import dataclass
from typing import Any

import orjson

from ..config import Settings
from .spark import read_table
from .tables import ROW_CHANGES, TBLPROPERTIES, delete_where
from .typed_plan import (
    LAYOUTS,
    LAYOUTS_DDL,
    Layout,
    lit,
    table_names,
)
from .typed_staged import _fill_fast
from .typed_table import _converter, _fill_table, _prepare_table, _TableJob

# -- the step ------------------------------------------------------------------------------


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
    from .driver_read import all_of, any_of, eq, read_rows

    keys = sorted({(r["db"], r["tbl"]) for r in tables_seen})
    got = read_rows(spark, settings, table, all_of(eq("source", settings.source), any_of(
        *(all_of(eq("db", d), eq("tbl", t)) for d, t in keys))),
        ("db", "tbl", "seq", "pos", "layout"))
    cols = [got.column(c).to_pylist() for c in ("db", "tbl", "seq", "pos", "layout")]
    points = {(d, t, s, p): lid for d, t, s, p, lid in zip(*cols)}
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
        for r in read_table(spark, table).where(
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
        out[(db, tbl)].append(Layout(seq, pos, lay.columns, lay.pk, lay.has_names,
                                     lay.defaults))
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
    # Schemas first, a few tables at once (each a few catalog reads and maybe a write; the
    # writes queue for the catalog's connection).
    from concurrent.futures import ThreadPoolExecutor

    def one(key: tuple[str, str]) -> _TableJob:
        t0 = time.time()
        job = _prepare_table(spark, settings, key[0], key[1], layouts[key], seqs)
        job.rep["seconds"] = round(time.time() - t0, 3)
        return job

    with ThreadPoolExecutor(max_workers=settings.typed_parallelism) as pool:
        return list(pool.map(one, sorted(layouts)))


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
        older = {(r[0], r[1]) for r in read_table(spark, settings.table(ROW_CHANGES)).where(
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
    files, both of the files that decoded cleanly; ``commit(table, written, props=None)``
    adds data files in one Iceberg commit, setting table properties ``props`` too), the
    others from ``row_changes``."""
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
