"""Spark DDL of the typed tables: whether a table exists, its typed columns and properties,
creating (:func:`_create`) or evolving (:func:`_evolve`) a changelog or mirror to the planned
schema, and the mirrors' watermark property (:func:`watermark_key`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..config import Settings
from .tables import TBLPROPERTIES
from .typed_plan import (
    WATERMARK,
    holds,
    lit,
    q,
    widen,
)


def _exists(spark: Any, table: str) -> bool:
    return bool(spark.catalog.tableExists(table))


@dataclass(frozen=True)
class TableState:
    """What the typed step reads of a typed table before it fills it, read at once from the
    catalog (:func:`look`): whether it exists, whether it was ever written (a snapshot on
    some branch), its columns as Spark types (name, ``simpleString``) and its properties."""

    exists: bool
    written: bool = False
    columns: tuple[tuple[str, str], ...] = ()
    properties: dict[str, str] = field(default_factory=dict)


def look(spark: Any, table: str, keys: tuple[str, ...] = ()) -> TableState:
    """The state of ``table`` (a full name), fresh from the catalog: one load of the table
    (its cached entry dropped first), where asking Spark for its existence, its schema
    (``spark.table``: the analyser), its snapshots and its properties took a load each.
    ``keys``: the properties read (those the table has)."""
    import json

    from pyspark.sql.types import StructType

    from .commit import jclass

    found = jclass(spark, "org.apache.iceberg.spark.Spark3Util").catalogAndIdentifier(
        spark._jsparkSession, table)
    catalog, ident = found.catalog(), found.identifier()
    catalog.invalidateTable(ident)
    # (Spark's API: py4j finds no default method of an interface, TableCatalog.tableExists)
    if not spark.catalog.tableExists(table):
        return TableState(False)
    loaded = catalog.loadTable(ident)  # (Iceberg's SparkTable: cached by tableExists' load)
    schema = StructType.fromJson(json.loads(loaded.schema().json()))
    jtable = loaded.table()
    props = jtable.properties()
    values = {k: props.get(k) for k in keys}
    return TableState(
        True, bool(jtable.snapshots().iterator().hasNext()),
        tuple((f.name, f.dataType.simpleString()) for f in schema.fields),
        {k: str(v) for k, v in values.items() if v is not None})


def _typed_columns(spark: Any, table: str, meta: tuple[tuple[str, str], ...],
                   state: TableState | None = None) -> list[tuple[str, str]]:
    """The typed columns of ``table`` (those not in ``meta``), from ``state`` when given."""
    names = {n for n, _ in meta}
    if state is not None:
        return [(n, t) for n, t in state.columns if n not in names]
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
            meta: tuple[tuple[str, str], ...], state: TableState | None = None) -> list[str]:
    """Bring the typed columns of ``table`` to ``target`` (add missing ones after the last
    typed column, widen types); return the statements run.  ``state``: the table's, read
    before (:func:`look`), else its columns are read now."""
    have = dict(_typed_columns(spark, table, meta, state))
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


def watermark_key(spark: Any, settings: Settings, prefix: str = WATERMARK) -> str:
    """The mirror's watermark property: ``binlake.watermark.<source>`` on main; on a
    write-audit-publish branch ``...<source>@<branch>`` (table properties are not per branch:
    publishing moves the branch's value to the main key).  ``prefix``: another of the
    mirror's per-source properties, named the same way (``ALTERED``, ``REPLAYING``)."""
    branch = spark.conf.get("spark.wap.branch", None)
    return prefix + settings.source + (f"@{branch}" if branch else "")


def watermark_keys(spark: Any, settings: Settings, prefix: str = WATERMARK
                   ) -> tuple[str, str]:
    """The properties :func:`read_watermark` reads: the current branch's, main's."""
    return watermark_key(spark, settings, prefix), prefix + settings.source


def read_watermark(spark: Any, settings: Settings, mirror: str,
                   state: TableState | None = None) -> tuple[int, int, int] | None:
    """The order key up to which ``mirror`` holds the source's changes (its watermark
    property on the current branch, else main's), or None; from ``state`` (:func:`look`
    with :func:`watermark_keys`) when given."""
    from .commit import java_table

    # (a Java map: two lookups, no statement)
    props = state.properties if state is not None else java_table(spark, mirror).properties()
    branch_key, main_key = watermark_keys(spark, settings)
    raw = props.get(branch_key) or props.get(main_key)
    if not raw:
        return None
    s, p, i = (int(x) for x in raw.split(","))
    return (s, p, i)
