"""A small folded delta MERGEd into a mirror by the driver, without a Spark job
(:func:`merge_on_driver`): what Spark's merge-on-read MERGE (``typed_mirror._apply_mirror``)
writes, written here.

The mirror's live rows of the delta's keys are found from Iceberg's scan plan (the files the
keys' column statistics do not rule out) and those files' key and order columns, read with
pyarrow (field ids, not names: a renamed column is still found) less the rows earlier position
deletes removed.  A matched row the delta's change is newer than is deleted (a position delete
file); the delta's rows that are not deletes, and are new keys or newer than their match, are
appended (a data file); both in one Iceberg row-delta commit, validated against the snapshot
read (a data file removed meanwhile, by compaction, fails it rather than losing a delete).

A partial fold (``binlog_row_image`` MINIMAL / NOBLOB: :func:`fold.fold_partial`) has
value columns its updates keep: those are read from the matched rows too, and the row that
replaces one takes its values there.

It declines (returns None, the caller MERGEs through Spark) what it does not handle: a
partitioned mirror or one of format version 1, a NULL key in the delta, equality deletes or
deletion vectors in the mirror, key types pyarrow cannot join on.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from ..config import Settings
from .commit import (
    commit_operation,
    data_file_builder,
    java_table,
    operation_source,
    parquet_size_and_metrics,
    remove_files,
    table_out,
)
from .driver_read import _snapshot
from .sink import DataSink, data_filesystem
from .typedconv import ORDER

# The Iceberg spec's field ids of a position delete file's columns.
DELETE_PATH_ID = 2147483546
DELETE_POS_ID = 2147483545
# Keys listed in the scan's filter (file pruning by column statistics) up to this many (each
# is a round trip to the JVM); more are filtered by their range.
FILTER_MAX_KEYS = 64
_S = "__bl_s"  # prefix of the delta's order columns after the join
_T = "__bl_t_"  # prefix of the mirror's value columns read for a partial fold's kept values


# Tries of one MERGE when its commit fails validation (a compaction or another writer
# committed to the mirror between its read and its commit): each reads the mirror again.
MERGE_ATTEMPTS = 3


def merge_on_driver(spark: Any, settings: Settings, mirror: str, folded: Any,
                    pk: Sequence[str], run_id: str,
                    flags: Sequence[tuple[str, str]] = (),
                    props: dict[str, str] | None = None) -> dict[str, int] | None:
    """MERGE ``folded`` (Arrow: one change per key; the typed columns, ``_op``, the order
    columns, ``_commit_ts``) into ``mirror`` (keys ``pk``) as :func:`typed_mirror._apply_mirror`
    would, in one commit; on the write-audit-publish branch when one is set.  Returns the
    counts (``deleted`` rows, ``inserted`` rows), or None when declined (see the module).
    ``flags``: (value column, flag column) of a partial fold (:func:`fold.fold_partial`): a
    row that replaces a mirror's row takes that row's value where its flag is set (the
    mirror's values of those columns are read too).  ``props``: table properties set by the
    MERGE's commit (the mirror's watermark, see :func:`commit.operation_source`); a MERGE
    that changes nothing (no row deleted or inserted) commits nothing, them included.

    A commit that fails Iceberg's validation (a data file it deletes rows of was rewritten
    meanwhile: a compaction) commits nothing; its files are removed and the MERGE starts
    again from the mirror's new snapshot, up to ``MERGE_ATTEMPTS`` times in all, then the
    ``ValidationException`` is raised."""
    for _ in range(MERGE_ATTEMPTS - 1):
        try:
            return _merge_once(spark, settings, mirror, folded, pk, run_id, flags, props)
        except Exception as exc:
            if not _validation_failed(exc):
                raise
    return _merge_once(spark, settings, mirror, folded, pk, run_id, flags, props)  # last


def _validation_failed(exc: BaseException) -> bool:
    """Whether ``exc`` is Iceberg's ``ValidationException`` out of a commit (through Py4J)."""
    java = getattr(exc, "java_exception", None)
    try:
        return java is not None and java.getClass().getName() == \
            "org.apache.iceberg.exceptions.ValidationException"
    except Exception:  # the gateway is gone: not a validation to retry
        return False


def _merge_once(spark: Any, settings: Settings, mirror: str, folded: Any,
                pk: Sequence[str], run_id: str, flags: Sequence[tuple[str, str]] = (),
                props: dict[str, str] | None = None) -> dict[str, int] | None:
    """One try of :func:`merge_on_driver`: read, write, commit (its files removed when the
    commit fails)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    pk = list(pk)
    if not folded.num_rows:
        return {"deleted": 0, "inserted": 0}
    if any(folded.column(c).null_count for c in pk):
        return None
    jtable = java_table(spark, mirror)
    if not jtable.spec().isUnpartitioned() or jtable.operations().current().formatVersion() < 2:
        return None
    snap = _snapshot(spark, jtable)
    # the value columns some row keeps from the mirror's (a partial fold's flags)
    kept = [(c, f) for c, f in flags if pc.any(folded.column(f)).as_py()]
    live = _live_rows(spark, settings, jtable, snap, folded, pk, [c for c, _ in kept])
    if live is None:
        return None
    delta = folded.select(pk).append_column("__bl_row", pa.array(
        range(folded.num_rows), pa.int64()))
    for c in ORDER:
        delta = delta.append_column(_S + c, folded.column(c))
    try:
        joined = live.join(delta, keys=pk, join_type="inner")
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
        return None  # a key type the hash join does not take: Spark's MERGE
    newer = _order_gt(joined, [_S + c for c in ORDER], list(ORDER))
    gone = joined.filter(newer).select(["__bl_path", "__bl_pos"])
    # a delta row is applied when its key is new or it is newer than a row it matched
    matched = pc.is_in(delta.column("__bl_row"), value_set=joined.column("__bl_row"))
    won = pc.is_in(delta.column("__bl_row"), value_set=joined.filter(newer).column("__bl_row"))
    applies = pc.or_(pc.invert(matched), won)
    ins = pc.and_(applies, pc.not_equal(folded.column("_op"), "delete"))
    if kept:
        folded = _keep_values(folded, joined.filter(newer), kept)
        if folded is None:
            return None
    rows = folded.filter(ins)
    if not gone.num_rows and not rows.num_rows:
        return {"deleted": 0, "inserted": 0}

    out = table_out(spark, mirror)
    sink = DataSink({mirror: out}, settings.source, run_id, settings.s3_endpoint_url,
                    attempt=uuid.uuid4().hex[:8])
    written = (sink._write_parts(mirror, "merge", "", sink.shaped(mirror, rows), [])
               if rows.num_rows else [])
    deletes = []
    if gone.num_rows:
        order = pc.sort_indices(gone, sort_keys=[("__bl_path", "ascending"),
                                                 ("__bl_pos", "ascending")])
        gone = gone.take(order)
        schema = pa.schema([
            pa.field("file_path", pa.string(), nullable=False,
                     metadata={b"PARQUET:field_id": str(DELETE_PATH_ID).encode()}),
            pa.field("pos", pa.int64(), nullable=False,
                     metadata={b"PARQUET:field_id": str(DELETE_POS_ID).encode()})])
        posdel = pa.Table.from_arrays([gone.column(0).cast(pa.string()),
                                       gone.column(1).cast(pa.int64())], schema=schema)
        deletes = sink._write_files(mirror, "deletes", "", [((), posdel)])
    try:
        _commit(spark, jtable, mirror, written, deletes,
                sorted(set(gone.column("__bl_path").to_pylist())), snap, run_id, props)
    except Exception:
        # nothing of it is committed (an Iceberg commit is all or nothing): its files are
        # no table's; a kill here leaves them to the next load's orphan sweep
        remove_files([w["path"] for w in (*written, *deletes)])
        raise
    return {"deleted": gone.num_rows, "inserted": rows.num_rows}


def _keep_values(folded: Any, won: Any, kept: Sequence[tuple[str, str]]) -> Any:
    """``folded`` with each flagged value (a column a partial update kept) taken from the
    mirror's row it replaces (``won``: the joined live rows the delta's rows are newer than,
    ``__bl_row`` the delta's row, :data:`_T` + column the mirror's value); None when a
    mirror value does not cast to the delta's type (the caller declines)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    src = np.full(folded.num_rows, -1, dtype=np.int64)
    src[won.column("__bl_row").to_numpy()] = np.arange(won.num_rows, dtype=np.int64)
    has = src >= 0
    at = pa.array(np.where(has, src, 0), mask=~has)
    for c, f in kept:
        typ = folded.schema.field(c).type
        try:
            old = won.column(_T + c).take(at).cast(typ)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return None
        use = pc.and_(pc.fill_null(folded.column(f), False), pa.array(has))
        folded = folded.set_column(folded.schema.get_field_index(c), c,
                                   pc.if_else(use, old, folded.column(c)))
    return folded


def _order_gt(t: Any, a: list[str], b: list[str]) -> Any:
    """Mask: the order key in columns ``a`` is after the one in ``b`` (lexicographic)."""
    import pyarrow.compute as pc

    out = None
    for x, y in zip(reversed(a), reversed(b)):
        gt = pc.greater(t.column(x), t.column(y))
        out = gt if out is None else pc.or_(gt, pc.and_(pc.equal(t.column(x), t.column(y)),
                                                        out))
    return pc.fill_null(out, False)


def _live_rows(spark: Any, settings: Settings, jtable: Any, snap: Any, folded: Any,
               pk: list[str], values: Sequence[str] = ()) -> Any:
    """The mirror's live rows of the source whose first key column takes a value of the
    delta's: the key columns, the order columns, ``__bl_path`` and ``__bl_pos`` (the data
    file and the row's position in it), and the value columns ``values`` named :data:`_T` +
    column.  None: a file this does not read (see the module; a data file without one of
    the columns, written before an ALTER added it, too)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    schema = jtable.schema()
    cols = [*pk, *ORDER, "_source"]
    ids = {}
    for c in cols:
        f = schema.findField(c)
        if f is None:
            return None
        ids[int(f.fieldId())] = c
    for c in values:
        f = schema.findField(c)
        if f is None:
            return None
        ids[int(f.fieldId())] = _T + c
    empty = pa.schema([*(folded.schema.field(c) for c in pk),
                       *(folded.schema.field(c) for c in ORDER),
                       pa.field("__bl_path", pa.string()), pa.field("__bl_pos", pa.int64()),
                       *(folded.schema.field(c).with_name(_T + c) for c in values)])
    if snap is None:
        return empty.empty_table()
    keys = pc.unique(folded.column(pk[0]))
    tasks = _plan(spark, settings, jtable, snap, pk[0], keys, folded.schema.field(pk[0]).type)
    if tasks is None:
        return None
    deletes: dict[str, Any] = {}
    parts = []
    for path, dels in tasks:
        t = _read_columns(path, ids, settings)
        if t is None:
            return None
        t = t.append_column("__bl_pos", pa.array(range(t.num_rows), pa.int64()))
        dead = [_deleted_positions(d, path, deletes, settings) for d in dels]
        mask = pc.and_(pc.equal(t.column("_source"), settings.source),
                       pc.is_in(t.column(pk[0]), value_set=keys.cast(t.column(pk[0]).type)))
        for d in dead:
            if d is not None and len(d):
                mask = pc.and_(mask, pc.invert(pc.is_in(t.column("__bl_pos"), value_set=d)))
        t = t.filter(pc.fill_null(mask, False))
        if not t.num_rows:
            continue
        t = t.append_column("__bl_path", pa.array([path] * t.num_rows, pa.string()))
        try:
            parts.append(t.select([f.name for f in empty]).cast(empty))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return None  # (a value column that does not cast to the delta's type)
    return pa.concat_tables(parts) if parts else empty.empty_table()


def _plan(spark: Any, settings: Settings, jtable: Any, snap: Any, key: str, keys: Any,
          key_type: Any) -> list[tuple[str, list[str]]] | None:
    """(data file, its position delete files) of the snapshot's files that may hold the
    source's rows of these keys (Iceberg's own pruning, on integer or string keys: the keys
    listed in the filter when they are few, else their range)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .commit import jclass

    E = jclass(spark, "org.apache.iceberg.expressions.Expressions")
    expr = E.equal("_source", settings.source)
    if pa.types.is_integer(key_type) or pa.types.is_string(key_type):
        if len(keys) <= FILTER_MAX_KEYS:
            values = spark._jvm.java.util.ArrayList()
            for v in keys.to_pylist():
                values.add(v)
            expr = getattr(E, "and")(expr, getattr(E, "in")(key, values))
        elif pc.count(keys).as_py():  # (a round trip per key listed: their range instead)
            lo, hi = pc.min_max(keys).values()
            expr = getattr(E, "and")(expr, getattr(E, "and")(
                E.greaterThanOrEqual(key, lo.as_py()), E.lessThanOrEqual(key, hi.as_py())))
    it = jtable.newScan().useSnapshot(snap.snapshotId()).filter(expr).planFiles().iterator()
    out = []
    try:
        while it.hasNext():
            task = it.next()
            dels = []
            # (by index: py4j's iterator of a Java list ends in a Java exception, which
            # pyspark's handler inspects in several round trips: most of a small MERGE's
            # planning time)
            jdels = task.deletes()
            for d in (jdels.get(i) for i in range(jdels.size())):
                if d.content().toString() != "POSITION_DELETES" \
                        or d.format().toString() != "PARQUET":
                    return None
                dels.append(d.location())
            out.append((task.file().location(), dels))
    finally:
        it.close()
    return out


def _open(path: str, settings: Settings) -> Any:
    import pyarrow.parquet as pq

    fs, p = data_filesystem(path.rsplit("/", 1)[0], settings.s3_endpoint_url)
    return pq.ParquetFile(fs.open_input_file(p.rstrip("/") + "/" + path.rsplit("/", 1)[1]))


def _read_columns(path: str, ids: dict[int, str], settings: Settings) -> Any:
    """The columns of a data file with these Iceberg field ids, named as the ids say."""
    pf = _open(path, settings)
    names = {}
    for f in pf.schema_arrow:
        fid = (f.metadata or {}).get(b"PARQUET:field_id")
        if fid is not None and int(fid) in ids:
            names[f.name] = ids[int(fid)]
    if len(names) != len(ids):
        return None
    t = pf.read(columns=list(names))
    return t.rename_columns([names[n] for n in t.column_names])


def _deleted_positions(delete_path: str, data_path: str, cache: dict[str, Any],
                       settings: Settings) -> Any:
    """The positions of ``data_path`` that a position delete file removes."""
    import pyarrow.compute as pc

    if delete_path not in cache:
        cache[delete_path] = _open(delete_path, settings).read(columns=["file_path", "pos"])
    t = cache[delete_path]
    return t.filter(pc.equal(t.column("file_path"), data_path)).column("pos")


def _commit(spark: Any, jtable: Any, mirror: str, written: list[dict[str, Any]],
            deletes: list[dict[str, Any]], referenced: list[str], snap: Any,
            run_id: str, props: dict[str, str] | None = None) -> None:
    """One row-delta commit: the new rows' data files, the position delete file; validated
    from the snapshot read (the referenced data files still there, no conflicting deletes);
    table properties ``props`` set by the same commit."""
    ice = spark._jvm.org.apache.iceberg
    spec = jtable.spec()
    source, txn = operation_source(spark, jtable, mirror, props)
    delta = source.newRowDelta()
    data_file = data_file_builder(spark, jtable)
    for w in written:
        delta.addRows(data_file(w))
    if deletes:
        delete_metrics = parquet_size_and_metrics(
            spark, jtable.io(), ice.MetricsConfig.forPositionDelete(jtable))
    for d in deletes:
        size, metrics = delete_metrics(d["path"])
        delta.addDeletes(ice.FileMetadata.deleteFileBuilder(spec).ofPositionDeletes()
                         .withPath(d["path"]).withFormat(ice.FileFormat.PARQUET)
                         .withFileSizeInBytes(size).withMetrics(metrics).build())
    if snap is not None:
        delta.validateFromSnapshot(snap.snapshotId())
    if referenced:
        paths = spark._jvm.java.util.ArrayList()
        for p in referenced:
            paths.add(p)
        delta.validateDataFilesExist(paths)
        delta.validateDeletedFiles()
        delta.validateNoConflictingDeleteFiles()
    commit_operation(spark, delta, mirror, run_id, txn, props)  # (the branch read, if any)
