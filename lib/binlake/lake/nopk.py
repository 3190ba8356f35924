"""Mirrors of tables without a primary key, with a replica's semantics (docs/lake.md).

A replica applies a row event of such a table by finding *a* row equal to the before image:
an UPDATE or DELETE takes exactly one row equal to it, an INSERT adds one; duplicate rows
stay duplicates.  The mirror is therefore a multiset: per distinct row value, the number of
copies.  Its rows carry ``_dup`` (the copy number, 1..n, per ``(_source, value)``) besides
the metadata columns of every mirror, so that each copy keeps the order key of the change
that wrote it and copies are added or removed one by one.

A load converts the table's changes newer than the mirror's watermark (and, when the run's
files TRUNCATE, DROP, re-CREATE or rename the table, only those after the last such
statement: the older ones are erased by it, :mod:`binlake.lake.lifecycle`), counts per
value the copies they add (INSERT, UPDATE's after image) and take (DELETE, UPDATE's before
image), then removes the highest-numbered copies and appends new ones, in one commit.  Rows whose
images are partial (``binlog_row_image`` MINIMAL / NOBLOB) cannot be matched: the mirror of
such a table is not maintained (the report says so).

Applying counts is not idempotent (the same changes applied twice remove or add their copies
twice), and the watermark is a commit of its own after it, so the write is fenced: before
it, the mirror's ``binlake.nopk-applying.<source>`` names the watermark it is for, the
snapshot it starts from and the Spark application; the watermark's commit removes it.  A
rerun after a kill between the two finds the application's snapshot after that one
(:func:`binlake.lake.commit.fence_committed`) and takes the watermark as moved.
"""

from __future__ import annotations

import time
from typing import Any

from ..config import Settings
from .commit import (
    fence_committed,
    fence_what,
    fork_branch,
    java_table,
    refresh_table,
    set_fence,
    set_properties,
)
from .spark import read_table
from .tables import ROW_CHANGES
from .typed_ddl import _create, _evolve, look, read_watermark, watermark_key, watermark_keys
from .typed_plan import APPLYING, INTERNAL, MIRROR_META, _after, lit, q, table_names
from .typed_table import _convert
from .typedconv import ORDER

DUP = "_dup"
NOPK_META: tuple[tuple[str, str], ...] = (*MIRROR_META, (DUP, "int"))


def fill_nopk_mirrors(spark: Any, settings: Settings, jobs: list[Any],
                      since: dict[tuple[str, str], tuple[int, int]]) -> dict[str, Any]:
    """The mirrors of the run's tables without a primary key (``jobs``: the typed step's
    :class:`typed_table._TableJob` list); ``since``: per table, the position of the last
    lifecycle statement in the run's files.  Returns per ``db.tbl`` what was done."""
    out: dict[str, Any] = {}
    for job in jobs:
        if job.plan is None or job.pk_slots:
            continue
        key = (job.db, job.tbl)
        cut = since.get(key) or next((p for (d, t), p in since.items()
                                      if d.lower() == job.db.lower()
                                      and t.lower() == job.tbl.lower()), None)
        t0 = time.time()
        rep = _fill_one(spark, settings, job, cut)
        rep["seconds"] = round(time.time() - t0, 3)
        out[f"{job.db}.{job.tbl}"] = rep
        job.rep["mirror"] = rep.get("mirror")
        job.rep["notes"] = [n for n in job.rep["notes"] if not n.startswith("no primary key")]
    return out


def _fill_one(spark: Any, settings: Settings, job: Any, cut: tuple[int, int] | None
              ) -> dict[str, Any]:
    from pyspark.sql import functions as F

    plan = job.plan
    mirror = settings.table(table_names(job.db, job.tbl)[1])
    rep: dict[str, Any] = {"mirror": mirror, "copies_added": 0, "copies_removed": 0}
    # (the mirror read once from the catalog, as typed_table._prepare_table reads its own)
    state = look(spark, mirror, (*watermark_keys(spark, settings),
                                 *watermark_keys(spark, settings, APPLYING)))
    existed = state.exists
    if not existed:
        _create(spark, mirror, list(plan.columns.items()), plan.comments, NOPK_META, None)
        job.rep["created"].append(mirror)
    else:
        if DUP not in {n for n, _ in state.columns}:  # a mirror of the table when it had a key
            rep["skipped"] = f"{mirror} has no {DUP} column (the table had a primary key)"
            return rep
        _evolve(spark, mirror, plan.columns, plan.comments, NOPK_META, state)
    filled = existed and state.written
    wm = _watermark(spark, settings, mirror, state) if filled else None
    src = lit(settings.source)
    scope = ("" if not filled or not job.seqs else
             f" AND order_seq IN ({', '.join(str(n) for n in job.seqs)})")
    cand = read_table(spark, settings.table(ROW_CHANGES)).where(
        f"source = {src} AND db = {lit(job.db)} AND tbl = {lit(job.tbl)}{scope}").select(
        "txn_id", "order_seq", "order_pos", "order_idx", "commit_ts", "op", "before", "after",
        "file", "pos", F.lit(None).cast("boolean").alias(f"{INTERNAL}in_cl"))
    typed = list(plan.columns)
    # every column is the "key": the converter then gives an UPDATE's before image as the
    # old key columns (__bl_old<i>)
    conv = _convert(cand, job.layouts, job.named, job.slots_of, plan, None, typed)
    cond = f"{INTERNAL}layout >= 0 AND " + _after(wm)
    if cut is not None:
        # a DDL statement at (seq, pos) ends the transactions whose order_pos <= pos
        cond += f" AND {_after((cut[0], cut[1], 2**31 - 1))}"
    todo = conv.where(cond)
    partial = todo.where(F.size("_absent") > 0).limit(1).count()
    if partial:
        rep["skipped"] = ("row images are partial (binlog_row_image MINIMAL/NOBLOB): rows of a "
                          "table without a primary key cannot be matched; mirror not updated")
        return rep
    olds = [f"{INTERNAL}old{i}" for i in range(len(typed))]
    okey = F.struct(*[F.col(c) for c in ORDER])
    adds = todo.where(F.col("_op").isin("insert", "update")).select(
        *[F.col(q(c)) for c in typed], F.lit(1).alias("__d"), okey.alias("__o"),
        F.col("_commit_ts").alias("__ts"))
    takes = todo.where(F.col("_op") == "delete").select(
        *[F.col(q(c)) for c in typed], F.lit(-1).alias("__d"), okey.alias("__o"),
        F.col("_commit_ts").alias("__ts"))
    moved = todo.where(F.col("_op") == "update").select(
        *[F.col(o).alias(c) for o, c in zip(olds, typed)], F.lit(-1).alias("__d"),
        okey.alias("__o"), F.col("_commit_ts").alias("__ts"))
    net = adds.unionByName(takes).unionByName(moved).groupBy(*[q(c) for c in typed]).agg(
        # the copies added carry the latest change that added one (as a run per change
        # would leave them)
        F.sum("__d").alias("__net"), F.max(F.when(F.col("__d") > 0, F.col("__o"))).alias("__o"),
        F.max_by(F.when(F.col("__d") > 0, F.col("__ts")), F.when(F.col("__d") > 0, F.col("__o"))
                 ).alias("__ts")).where("__net != 0").localCheckpoint(eager=True)
    last = todo.agg(F.max(okey)).collect()[0][0]
    if net.limit(1).count():
        have = read_table(spark, mirror).where(f"_source = {src}")
        counts = have.groupBy(*[q(c) for c in typed]).agg(F.max(DUP).alias("__n"))
        on = [net[q(c)].eqNullSafe(counts[q(c)]) for c in typed]
        j = net.join(counts, on, "left").select(
            *[net[q(c)].alias(c) for c in typed], "__net", "__o", "__ts",
            F.coalesce(counts["__n"], F.lit(0)).alias("__n")).localCheckpoint(eager=True)
        # copies taken: the highest-numbered ones
        gone = j.where("__net < 0").select(*[q(c) for c in typed],
                                           (F.col("__n") + F.col("__net")).alias("__keep"))
        rep["copies_removed"] = int(j.where("__net < 0").agg(
            F.coalesce(F.sum(F.least(-F.col("__net"), F.col("__n"))), F.lit(0))).collect()[0][0])
        added = j.where("__net > 0").select(
            *[q(c) for c in typed], "__o", "__ts",
            F.explode(F.sequence(F.col("__n") + 1, F.col("__n") + F.col("__net"))).alias(DUP))
        rep["copies_added"] = int(j.where("__net > 0").agg(
            F.coalesce(F.sum("__net"), F.lit(0))).collect()[0][0])
        if rep["copies_removed"] or rep["copies_added"]:
            assert last is not None
            _apply(spark, settings, mirror, typed, gone if rep["copies_removed"] else None,
                   added if rep["copies_added"] else None, tuple(last))
    if last is not None:
        _set_watermark(spark, settings, mirror, tuple(last))
    return rep


def _watermark(spark: Any, settings: Settings, mirror: str, state: Any
               ) -> tuple[int, int, int] | None:
    """The mirror's watermark; or the one a killed run's write was for (its
    ``nopk-applying`` property) when that write committed (see the module doc)."""
    wm = read_watermark(spark, settings, mirror, state)
    branch_key, main_key = watermark_keys(spark, settings, APPLYING)
    fence = state.properties.get(branch_key) or state.properties.get(main_key)
    if fence:
        key = tuple(int(x) for x in fence_what(fence).split(","))
        if len(key) == 3 and (wm is None or key > wm) and fence_committed(
                spark, mirror, fence):
            # (recorded now: the snapshots that tell it may be expired by a later run)
            _set_watermark(spark, settings, mirror, key)
            return (key[0], key[1], key[2])
    return wm


def _apply(spark: Any, settings: Settings, mirror: str, typed: list[str], gone: Any,
           added: Any, last: tuple[int, ...]) -> None:
    """One commit: the copies ``gone`` names removed (per value, those numbered above
    ``__keep``) and the rows ``added`` appended, fenced for the watermark ``last``."""
    from pyspark.sql import functions as F

    src = lit(settings.source)
    fork_branch(spark, mirror)
    set_fence(spark, mirror, watermark_key(spark, settings, APPLYING),
              f"{last[0]},{last[1]},{last[2]}")
    names = [f.name for f in spark.table(mirror).schema.fields]
    if gone is None:  # only copies added: an append
        cols = {c: F.col(q(c)) for c in typed}
        cols.update({"_source": F.lit(settings.source), "_commit_ts": F.col("__ts"),
                     DUP: F.col(DUP)})
        cols.update({c: F.col("__o").getField(c) for c in ORDER})
        added.select(*[(cols[n] if n in cols else F.lit(None)).alias(n)
                       for n in names]).writeTo(mirror).append()
        return
    # removals, and additions if any, in one MERGE: a removal matches the copies of its
    # value above __keep; an addition (a copy number the value does not have) matches
    # nothing and is inserted
    source = gone.withColumn("__kind", F.lit("gone"))
    if added is not None:
        source = source.unionByName(added.withColumn("__kind", F.lit("add")),
                                    allowMissingColumns=True)
    view = f"{INTERNAL}nopk_apply_{abs(hash(mirror)) % 10**12}"
    source.createOrReplaceTempView(view)
    match = " AND ".join(f"t.{q(c)} <=> s.{q(c)}" for c in typed)
    values = {q(c): f"s.{q(c)}" for c in typed}
    values.update({"_source": src, "_commit_ts": "s.__ts", DUP: f"s.{DUP}"})
    values.update({c: f"s.__o.{c}" for c in ORDER})
    insert = (" WHEN NOT MATCHED AND s.__kind = 'add' THEN INSERT "
              f"({', '.join(q(n) for n in names)}) VALUES "
              f"({', '.join(values.get(q(n), values.get(n, 'NULL')) for n in names)})"
              if added is not None else "")
    which = (f"((s.__kind = 'gone' AND t.{DUP} > s.__keep) OR "
             f"(s.__kind = 'add' AND t.{DUP} = s.{DUP}))" if added is not None else
             f"t.{DUP} > s.__keep")
    spark.sql(f"MERGE INTO {mirror} t USING {view} s ON t._source = {src} AND {match} AND "
              f"{which} WHEN MATCHED AND s.__kind = 'gone' THEN DELETE{insert}")


def _set_watermark(spark: Any, settings: Settings, mirror: str, last: tuple[int, ...]
                   ) -> None:
    """The mirror's watermark moves to ``last``; the write's fence goes (one commit)."""
    set_properties(java_table(spark, mirror),
                   {watermark_key(spark, settings): f"{last[0]},{last[1]},{last[2]}"},
                   remove=(watermark_key(spark, settings, APPLYING),))
    refresh_table(spark, mirror)
