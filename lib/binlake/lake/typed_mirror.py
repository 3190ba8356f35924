"""The typed mirrors' merge: a folded delta MERGEd into a mirror on its primary key
(:func:`_merge_mirror`, Spark's fold when the executor's could not), or written as the data
files of a mirror created by this run (:func:`_apply_mirror`).
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..config import Settings
from .commit import fork_branch
from .moves import resolve_moves, same_key
from .tables import delete_where
from .typed_plan import (
    INTERNAL,
    Plan,
    _order_gt,
    lit,
    q,
)
from .typedconv import ORDER


def _merge_mirror(spark: Any, settings: Settings, delta: Any, mirror: str, plan: Plan,
                  pk_slots: list[str], partial: bool, empty: bool = False,
                  folded: bool = False, notes: list[str] | None = None,
                  moves: int | None = None) -> None:
    """Fold the delta per key (the latest change wins; with ``partial`` images, an update
    keeps the columns its image does not carry, also across several changes of one key) and
    MERGE it into the mirror.  Into a mirror created by this run (``empty``) the MERGE
    would only insert: the folded rows that are not deletes are appended instead (after
    deleting the source's rows: a retried append adds nothing twice).  A ``folded`` delta is
    one already folded (:func:`fold.fold_delta`: the typed columns, ``_op``, the order
    columns and ``_commit_ts``, one row per key).  With ``partial`` images, an update that
    moves a key first gets the columns its image lacks from the row it moves
    (:func:`binlake.lake.moves.resolve_moves`; ``notes`` says when it could not), unless
    ``moves`` is 0: the count of such updates, known to the caller (None: not known).  A
    ``folded`` delta with ``partial`` has the flag columns of :func:`fold.fold_partial`."""
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
                           F.col("_commit_ts").alias(TS),
                           *[(F.col(k) if partial else F.lit(False)).alias(k) for k in kfs])
        _apply_mirror(spark, settings, src, mirror, pk_slots, others, kfs, OP, ORD, TS,
                      partial, empty)
        return
    if partial and moves != 0:
        delta = resolve_moves(spark, settings, delta, mirror, plan, pk_slots, empty, notes)
    base = delta.select(
        F.col("_op").alias(OP), F.struct(*[F.col(c) for c in ORDER]).alias(ORD),
        F.col("_commit_ts").alias(TS), *[F.col(q(c)) for c in typed],
        *[F.col(o) for o in olds], "_absent")
    same = same_key(pk_slots, olds)
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
        fork_branch(spark, mirror)
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
    fork_branch(spark, mirror)
    spark.sql(
        f"MERGE INTO {mirror} t USING {view} s ON {on} "
        f"WHEN MATCHED AND s.{OP} = 'delete' AND {newer} THEN DELETE "
        f"WHEN MATCHED AND s.{OP} <> 'delete' AND {newer} THEN UPDATE SET {', '.join(sets)} "
        f"WHEN NOT MATCHED AND s.{OP} <> 'delete' THEN INSERT "
        f"({', '.join(q(c) for c in ins)}) VALUES ({', '.join('s.' + q(c) for c in ins)})")
