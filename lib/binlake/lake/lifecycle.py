"""Table lifecycle on the typed tables (docs/lake.md "Table lifecycle"): what TRUNCATE,
DROP, CREATE and RENAME TABLE do to the mirrors and changelogs, applied at their binlog
positions after a load has merged its row changes.

Every mirror row carries the order key of the change that wrote it, and a DDL statement at
``(seq, pos)`` sits between the transactions that end before ``pos`` and those after, so:

* ``TRUNCATE``, ``DROP`` (also ``DROP DATABASE``) and a ``CREATE`` (a new incarnation: after
  a DROP, or ``CREATE OR REPLACE``) leave the table without the rows it had before: the
  mirror loses every row whose last change is older than the statement; rows written after
  it (the new incarnation's) stay.
* ``RENAME TABLE a TO b`` (several pairs, applied in order, so a swap ``a TO tmp, b TO a,
  tmp TO b`` works; ``ALTER TABLE ... RENAME TO``) moves the identity: the rows ``a``'s
  mirror held before the statement move to ``b``'s mirror (created when missing), except
  the keys ``b``'s own later changes already settled (changed or deleted after the rename);
  then ``a``'s mirror keeps only rows written after the rename (a new ``a``'s).
* The changelog of the table gets one row per statement: ``_op`` ``truncate``, ``drop``,
  ``rename_out`` or ``rename_in`` (not ``create``: a changelog starts at its table's creation), its order key ``(seq, pos, 0)``, the other
  columns NULL (a replay of the changelog in order then empties the table there).

All of it is idempotent: a rerun deletes nothing more and moves nothing twice (moved rows
keep their order keys, older than the rename, and the keys already present are skipped).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ..config import Settings
from ..schema.model import Position, SchemaHistory
from .commit import fork_branch
from .spark import read_table
from .tables import delete_where
from .typed_ddl import _exists
from .typed_plan import INTERNAL, MIRROR_META, lit, older_than, q, table_names
from .typed_table import _TableJob, keys_left_after, partial_keys_after
from .typedconv import ORDER

CLEARING = ("truncate", "drop", "create")
Name = tuple[str, str]


def _mirror(settings: Settings, name: Name) -> str:
    return settings.table(table_names(*name)[1])


def _changelog(settings: Settings, name: Name) -> str:
    return settings.table(table_names(*name)[0])


def apply_lifecycle(spark: Any, settings: Settings, history: SchemaHistory, seqs: set[int],
                    built: list[Name] | None = None, jobs: list[_TableJob] | None = None
                    ) -> dict[str, Any]:
    """Apply the lifecycle statements of the run's files (``seqs``) in position order; for
    the mirrors this run built whole (``built``), the newest such statement anywhere in the
    history too.  ``jobs``: the run's typed steps (the rename's target's layouts, to read
    the keys its later changes took away).  Returns ``{"cleared": {db.tbl: "seq,pos"},
    "moved": {...}}``."""
    by_name = {(j.db.lower(), j.tbl.lower()): j for j in jobs or ()}
    report: dict[str, Any] = {"cleared": {}, "moved": {}}
    points: dict[Position, dict[str, Any]] = defaultdict(lambda: {"clear": [], "renames": []})
    for vs in history.versions.values():
        for v in vs:
            if v.start[0] in seqs and v.change in CLEARING:
                points[v.start]["clear"].append(((v.db, v.table), v.change))
    for pos, old, new in history.renames:
        if pos[0] in seqs:
            points[pos]["renames"].append((old, new))
    for db, tbl in built or ():
        vs = history.versions.get((db.lower(), tbl.lower()), [])
        last = [v for v in vs if v.change in (*CLEARING, "rename_in", "rename_out")]
        if last and last[-1].start[0] not in seqs:
            points[last[-1].start]["clear"].append(((db, tbl), None))
    for pos in sorted(points):
        ev = points[pos]
        if ev["renames"]:
            _renames(spark, settings, history, pos, ev["renames"], report, by_name)
        for name, change in ev["clear"]:
            _clear(spark, settings, name, pos, report)
            if change is not None and change != "create":
                _mark(spark, settings, name, pos, change)
    return report


def last_points(history: SchemaHistory, seqs: set[int]) -> dict[Name, Position]:
    """Per table, its last lifecycle statement (CLEARING or a rename) in the run's files."""
    out: dict[Name, Position] = {}
    for vs in history.versions.values():
        for v in vs:
            if v.start[0] in seqs and v.change in (*CLEARING, "rename_in", "rename_out"):
                out[(v.db, v.table)] = max(out.get((v.db, v.table), v.start), v.start)
    return out


def _clear(spark: Any, settings: Settings, name: Name, pos: Position,
           report: dict[str, Any]) -> None:
    mirror = _mirror(settings, name)
    if _exists(spark, mirror) and delete_where(
            spark, mirror, f"_source = {lit(settings.source)} AND {older_than(pos)}"):
        report["cleared"][f"{name[0]}.{name[1]}"] = f"{pos[0]},{pos[1]}"


def _mark(spark: Any, settings: Settings, name: Name, pos: Position, op: str) -> None:
    """The statement's row in the table's changelog (replaced on a rerun)."""
    cl = _changelog(settings, name)
    if not _exists(spark, cl):
        return
    where = (f"_source = {lit(settings.source)} AND _op = {lit(op)} AND "
             f"_order_seq = {int(pos[0])} AND _order_pos = {int(pos[1])}")
    delete_where(spark, cl, where)
    fields = spark.table(cl).schema.fields
    values = {"_op": lit(op), "_order_seq": str(int(pos[0])), "_order_pos": str(int(pos[1])),
              "_order_idx": "0", "_source": lit(settings.source),
              "_absent": "array()"}
    sel = ", ".join(f"CAST({values.get(f.name, 'NULL')} AS {f.dataType.simpleString()}) "
                    f"AS {q(f.name)}" for f in fields)
    fork_branch(spark, cl)
    spark.sql(f"INSERT INTO {cl} SELECT {sel}")


def _renames(spark: Any, settings: Settings, history: SchemaHistory, pos: Position,
             pairs: list[tuple[Name, Name]], report: dict[str, Any],
             jobs: dict[Name, _TableJob]) -> None:
    """One RENAME statement's pairs, composed (a swap moves each table's rows once)."""
    holder: dict[Name, Name] = {}  # name after the statement -> the table it was before
    for old, new in pairs:
        holder[new] = holder.pop(old, old)
    moves = {new: orig for new, orig in holder.items() if new != orig}
    src = lit(settings.source)
    captured: dict[Name, Any] = {}
    for new, orig in moves.items():
        m = _mirror(settings, orig)
        if _exists(spark, m):  # the rows before the rename, kept before any mirror changes
            df = read_table(spark, m).where(f"_source = {src} AND {older_than(pos)}")
            captured[new] = df.localCheckpoint(eager=True)
    names = {n for pair in pairs for n in pair}
    for name in sorted(names):
        _clear(spark, settings, name, pos, report)
    for old, new in pairs:
        _mark(spark, settings, old, pos, "rename_out")
        _mark(spark, settings, new, pos, "rename_in")
    for new, rows in captured.items():
        job = jobs.get((new[0].lower(), new[1].lower()))
        n = _move_in(spark, settings, history, pos, new, rows, job)
        orig = moves[new]
        report["moved"][f"{orig[0]}.{orig[1]} -> {new[0]}.{new[1]}"] = n


def _move_in(spark: Any, settings: Settings, history: SchemaHistory, pos: Position,
             new: Name, rows: Any, job: _TableJob | None = None) -> int:
    """``rows`` (a mirror's rows before the rename) into ``new``'s mirror: created like the
    source mirror when missing; keys the mirror holds already, or that ``new``'s changes
    after the rename settled, are skipped: the keys its changelog has after the rename, and
    the keys its changes of the run (``job``) took away, a delete's or the one an UPDATE
    moved a row from (the changelog has only the new key of those).  Returns the rows
    added."""
    from pyspark.sql import functions as F

    target = _mirror(settings, new)
    if not _exists(spark, target):
        from .tables import TBLPROPERTIES

        view = f"__bl_moved_{abs(hash((target, pos))) % 10**12}"
        rows.limit(0).createOrReplaceTempView(view)
        spark.sql(f"CREATE TABLE IF NOT EXISTS {target} USING iceberg "
                  f"TBLPROPERTIES ({TBLPROPERTIES}) AS SELECT * FROM {view}")
    tcols = spark.table(target).schema.fields
    have = set(rows.columns)
    aligned = rows.select(*[
        (F.col(q(f.name)) if f.name in have else F.lit(None)).cast(f.dataType).alias(f.name)
        for f in tcols])
    # The ALTERs of ``new`` after the rename that this run replayed on its mirror already
    # (alters.apply_alters, or between the run's changes: typed_table._merge_in_segments)
    # ran before this move: the moved rows take them here, in the same commit
    for at, sets in (job.alters if job is not None else ()):
        if tuple(at) > tuple(pos[:2]):
            aligned = aligned.selectExpr(*[
                f"{sets[f.name]} AS {q(f.name)}" if f.name in sets else q(f.name)
                for f in tcols])
    version = history.at(new[0], new[1], pos)
    pk = [c for c in (version.primary_key if version is not None else ())
          if c in have and c in {f.name for f in tcols}]
    fill = None
    if pk:
        src = lit(settings.source)
        settled = read_table(spark, target).where(f"_source = {src}").select(*[q(c) for c in pk])
        cl = _changelog(settings, new)
        if _exists(spark, cl):
            later = read_table(spark, cl).where(
                f"_source = {src} AND NOT {older_than(pos)} AND _op IN "
                "('insert', 'update', 'delete')").select(*[q(c) for c in pk])
            settled = settled.unionByName(later)
        gone = keys_left_after(spark, settings, job, *pos) if job is not None else None
        if gone is not None and len(gone.columns) == len(pk):
            settled = settled.unionByName(gone.toDF(*pk))
        fill = _partial_fill(spark, settings, job, pos, aligned, pk, tcols)
        cond = [aligned[q(c)].eqNullSafe(settled[q(c)]) for c in pk]
        aligned = aligned.join(settled.distinct(), cond, "left_anti")
    aligned = aligned.localCheckpoint(eager=True)
    n = aligned.count()
    if fill is not None:
        _merge_moved(spark, settings, target, aligned, fill, pk, tcols)
    elif n:
        fork_branch(spark, target)
        aligned.writeTo(target).append()
    return n


def _partial_fill(spark: Any, settings: Settings, job: _TableJob | None, pos: Position,
                  moved: Any, pk: list[str], tcols: list[Any]) -> Any | None:
    """The moved rows (``moved``, aligned to the mirror) of the keys whose every change
    after the rename, already MERGEd into the mirror, is an UPDATE with a partial image
    (MINIMAL / NOBLOB): the mirror made those rows from the images alone, NULL in the
    columns no image carried (``__bl_a<i>`` of the i-th column of :func:`_values`, True
    there); None when there are none."""
    if job is None or not job.rep.get("partial_images"):
        return None
    values = _values(tcols, pk)
    part = partial_keys_after(spark, settings, job, *pos, values, job.alters)
    if part is None or not values:
        return None
    cond = [moved[q(c)].eqNullSafe(part[q(c)]) for c in pk]
    fill = moved.join(part, cond, "inner").select(
        moved["*"], *[part[f"{INTERNAL}a{i}"] for i in range(len(values))])
    fill = fill.localCheckpoint(eager=True)
    return fill if fill.take(1) else None


def _values(tcols: list[Any], pk: list[str]) -> list[str]:
    """The mirror's value columns: neither key nor bookkeeping (``_source``, order, commit
    time)."""
    meta = {n for n, _ in MIRROR_META}
    return [f.name for f in tcols if f.name not in pk and f.name not in meta]


def _merge_moved(spark: Any, settings: Settings, target: str, moved: Any, fill: Any,
                 pk: list[str], tcols: list[Any]) -> None:
    """The moved rows into the mirror in one commit: ``moved`` (keys it lacks) added, and
    the rows of ``fill``'s keys given the moved row's value in each column no partial
    image after the rename carried (:func:`_partial_fill`)."""
    from pyspark.sql import functions as F

    values = _values(tcols, pk)
    flags = [f"{INTERNAL}a{i}" for i in range(len(values))]
    both = moved.select("*", *[F.lit(None).cast("int").alias(f) for f in flags],
                        F.lit(True).alias(f"{INTERNAL}new")).unionByName(
        fill.withColumn(f"{INTERNAL}new", F.lit(False)))
    view = f"{INTERNAL}moved_{abs(hash((target, 'fill'))) % 10**12}"
    both.createOrReplaceTempView(view)
    names = [f.name for f in tcols]
    on = " AND ".join([f"t._source = {lit(settings.source)}",
                       *(f"t.{q(c)} <=> s.{q(c)}" for c in pk)])
    sets = ", ".join(f"t.{q(c)} = CASE WHEN s.{f} = 1 THEN s.{q(c)} ELSE t.{q(c)} END"
                     for c, f in zip(values, flags))
    fork_branch(spark, target)
    spark.sql(
        f"MERGE INTO {target} t USING {view} s ON {on} "
        f"WHEN MATCHED AND NOT s.{INTERNAL}new THEN UPDATE SET {sets} "
        f"WHEN NOT MATCHED AND s.{INTERNAL}new THEN INSERT "
        f"({', '.join(q(c) for c in names)}) VALUES ({', '.join('s.' + q(c) for c in names)})")

__all__ = ["ORDER", "apply_lifecycle"]
