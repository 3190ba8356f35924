"""The typed tables a load's decode tasks filled (:func:`binlake.lake.typed.fill`): each
table's changelog data files committed, and its mirror brought up to date from the deltas
the tasks staged, folded by executor tasks (in parts by the first key column, for a big
delta) or on the driver (a small one), then added to a new mirror or MERGEd into an
existing one."""

from __future__ import annotations

import os
import uuid
from dataclasses import replace
from functools import partial
from typing import Any

from ..config import Settings
from .tables import delete_where
from .typed_mirror import _merge_mirror
from .typed_plan import INTERNAL, lit, table_names
from .typed_table import _fill, _TableJob
from .typedconv import ORDER


def _fill_fast(spark: Any, settings: Settings, job: _TableJob, spec: Any, ddl: str,
               stats: list[dict[str, Any]], files: list[dict[str, Any]], commit: Any,
               run_id: str) -> None:
    from pyspark.sql.types import StructType, _parse_datatype_string

    from .fold import fold_parts

    assert job.plan is not None
    total: dict[str, Any] = {
        k: sum(int(s.get(k) or 0) for s in stats)
        for k in ("cl", "delta", "todo", "no_layout", "no_names", "mismatch", "moves")}
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
        # read by Spark only if Spark is to fold them (a delta over the fold's bounds, or
        # one stopped at a blocked change): a Spark read of the staged files lists them in a
        # job of its own, a tenth of a second to seconds, for nothing when the fold is ours
        conv = LazyFrame(partial(_read_staged, spark, struct.fields, staged))
    src = lit(settings.source)
    seqs = job.seqs or []
    cl_delete = f"_source = {src}" + ("" if job.full else
                                     f" AND _order_seq IN ({', '.join(str(n) for n in seqs)})")
    cl = job.rep["changelog"]

    def write_changelog() -> None:
        if not job.cl_new:  # (a changelog never written holds nothing to replace)
            delete_where(spark, cl, cl_delete)
        if files:
            commit(cl, files)

    mirror = job.rep["mirror"] or settings.table(table_names(job.db, job.tbl)[1])
    fold = None
    staged_bytes = sum(os.path.getsize(p) for p in staged)
    parts = fold_parts(total["delta"], staged_bytes, _part_key(struct, job.pk_slots),
                       spark.sparkContext.defaultParallelism) if staged else None
    images = "partial" if total["partial"] else "full"
    # partial images: ours too, but for key moves (made whole by Spark: resolve_moves), an
    # ALTER among the changes (the delta MERGEd in segments: typed_table._fill) and a
    # floating-point key (fold.fold_partial)
    if parts is not None and (images == "full" or (
            not total["moves"] and not job.alters and not _float_key(struct, job.pk_slots))):
        here = parts == 1 and total["delta"] <= DRIVER_FOLD_ROWS \
            and staged_bytes <= DRIVER_FOLD_BYTES

        def fold(blocked: tuple[int, int, int] | None,
                 props: dict[str, str] | None = None) -> tuple[str, bool]:
            assert job.plan is not None and spec.stage is not None and parts is not None
            return _fold_fast(spark, settings, mirror, job, spec.stage, staged, struct,
                              blocked, commit, run_id, here, parts, images == "partial",
                              props)
    job.altered = _fill(spark, settings, conv, cl, cl_delete, mirror, job.plan, job.pk_slots,
                        job.wm, job.rep, stats=total, write_changelog=write_changelog,
                        mirror_new=job.mirror_new, fold=fold, alters=job.alters,
                        altered=job.altered_through)


# A staged delta this small is folded on the driver (no Spark job; the fold holds it in
# memory, a few times its staged bytes): the usual incremental load's
DRIVER_FOLD_ROWS = 50_000
DRIVER_FOLD_BYTES = 8 << 20


def _float_key(struct: Any, pk: list[str]) -> bool:
    """Whether a key column of a typed table (``struct``: its staged columns) is FLOAT or
    DOUBLE."""
    from pyspark.sql.types import DoubleType, FloatType

    fields = {f.name: f for f in struct.fields}
    return any(isinstance(fields[c].dataType, (FloatType, DoubleType)) for c in pk
               if c in fields)


def _part_key(struct: Any, pk: list[str]) -> bool:
    """Whether the first primary key column of a typed table (``struct``: its staged
    columns) cuts a big delta's fold into parts (fold.fold_parts, fold.part_of): an
    integer, decimal (BIGINT UNSIGNED among them), text, binary, date or timestamp column."""
    from pyspark.sql.types import (
        BinaryType,
        ByteType,
        DateType,
        DecimalType,
        IntegerType,
        LongType,
        ShortType,
        StringType,
        TimestampNTZType,
        TimestampType,
    )

    fields = {f.name: f for f in struct.fields}
    return bool(pk) and pk[0] in fields and isinstance(
        fields[pk[0]].dataType, (ByteType, ShortType, IntegerType, LongType, DecimalType,
                                 StringType, BinaryType, DateType, TimestampType,
                                 TimestampNTZType))


def _fold_fast(spark: Any, settings: Settings, mirror: str, job: _TableJob, stage: str,
               staged: list[str], struct: Any, blocked: tuple[int, int, int] | None,
               commit: Any, run_id: str, here: bool = False, parts: int = 1,
               partial: bool = False, props: dict[str, str] | None = None
               ) -> tuple[str, bool]:
    """Apply a table's staged delta to its mirror, folded by executor tasks
    (:func:`fold.fold_mirror`: Arrow in memory, one task per part of ``parts``, each part
    within ``FOLD_MAX_ROWS`` rows and ``FOLD_MAX_BYTES`` of staged files, see
    :func:`fold.fold_parts`) rather than by Spark's window and sort.  A mirror created by
    this run (empty, not partitioned) gets the folded rows as data files, in one commit
    (folded and written by the driver when ``here``); an existing one
    MERGEs the folded delta (the parts' files together), folded on the
    driver when ``here`` (a small delta: ``DRIVER_FOLD_ROWS``, ``DRIVER_FOLD_BYTES``; the
    same function, without a Spark job), and then MERGEd by the driver too
    (:func:`mirror_merge.merge_on_driver`: no Spark job at all) unless it declines.  Returns
    where it was folded and merged: ``executor`` (then Spark's MERGE), ``driver`` (both on
    the driver) or ``driver-fold`` (folded on the driver, MERGEd by Spark); ``executor``
    is ``executor:k`` when k tasks folded it.  ``partial``: updates with partial row images
    (:func:`fold.fold_partial`; the driver's MERGE takes the columns they keep from the
    mirror's rows).  ``props``: table properties (the mirror's watermark) for the mirror's
    commit, where the driver commits it (a new mirror's rows, the driver's MERGE); the
    second value returned says whether they were committed."""

    from .commit import table_out
    from .fold import FoldSpec, fold_mirror, kept_flags
    from .sink import DataSink

    assert job.plan is not None
    pk = tuple(job.pk_slots)
    spec = FoldSpec(tuple(staged), tuple(struct.names), pk,
                    tuple(f"{INTERNAL}old{i}" for i in range(len(pk))),
                    tuple(job.plan.columns), blocked, partial=partial)
    flags = kept_flags(spec.typed, pk) if partial else []
    sc = spark.sparkContext
    done = "executor" if parts == 1 else f"executor:{parts}"
    if job.mirror_new:
        out = table_out(spark, mirror)
        if not out.partition:
            sink = DataSink({mirror: out}, settings.source, run_id, settings.s3_endpoint_url,
                            attempt=uuid.uuid4().hex[:8])
            specs = [replace(spec, sink=sink, mirror=mirror, part=(i, parts))
                     for i in range(parts)]
            # a small delta folded and written here: no Spark job (a run's new mirrors are
            # as many as the tables it meets first, hundreds in a first load)
            written = (fold_mirror(specs[0]) if here else
                       sc.parallelize(specs, parts).flatMap(fold_mirror).collect())
            # (no rows to replace: the mirror had no snapshot when the run prepared it)
            if written:
                commit(mirror, written, props)
            return ("driver" if here else done), bool(written)
    name = f"{stage.rstrip('/')}/folded-{uuid.uuid4().hex[:8]}"
    paths = [f"{name}.parquet"] if parts == 1 else [f"{name}-{i}.parquet"
                                                    for i in range(parts)]
    if here:
        # folded here, and MERGEd here too when the mirror is one the driver's merge takes
        from .fold import fold_staged
        from .mirror_merge import merge_on_driver

        folded = fold_staged(spec)
        merged = merge_on_driver(spark, settings, mirror, folded, pk, run_id, flags, props)
        if merged is not None:
            return "driver", bool(merged["deleted"] or merged["inserted"])
        fold_mirror(replace(spec, out=paths[0]))
    else:
        sc.parallelize([replace(spec, out=path, part=(i, parts))
                        for i, path in enumerate(paths)], parts).flatMap(fold_mirror).collect()
    from pyspark.sql.types import BooleanType, StructField

    fields = {f.name: f for f in struct.fields}
    folded = _read_staged(spark, [*(fields[n] for n in (*job.plan.columns, "_op", *ORDER,
                                                        "_commit_ts")),
                                  *(StructField(f, BooleanType()) for _, f in flags)], paths)
    _merge_mirror(spark, settings, folded, mirror, job.plan, job.pk_slots, partial,
                  job.mirror_new, folded=True)
    return ("driver-fold" if here else done), False


class LazyFrame:
    """A DataFrame made on first use: ``make()``, then every attribute is the frame's."""

    def __init__(self, make: Any) -> None:
        self._make = make
        self._frame: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._frame is None:
            self._frame = self._make()
        return getattr(self._frame, name)


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


