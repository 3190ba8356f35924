"""A mirror's staged delta folded by executor tasks (Arrow, in memory): the latest change per
primary key (:func:`fold_delta`; with partial row images, :func:`fold_partial`) and the task
that folds one mirror's delta, or one part of its keys (:func:`fold_mirror`).  One task folds a delta within the limits (``FOLD_MAX_ROWS``,
``FOLD_MAX_BYTES``); a bigger one is cut into parts by its first key column (an integer,
text, binary or temporal column: :func:`part_of`), each part folded by a task of its own
(:func:`fold_parts`); beyond ``FOLD_MAX_PARTS`` parts, or with another key, Spark folds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .sink import DataSink, _order_beyond, _same_key, data_filesystem, stage_columns
from .typedconv import ORDER
from .worker import settle

# A mirror's staged delta is folded in one executor task (Arrow, in memory) when it has at
# most this many rows and its staged files at most this many bytes (lz4 Parquet: a few
# times that in memory); a bigger one goes through Spark's fold, which spills.  A million
# narrow rows (about 130 bytes of binlog each) peak at about 950 MB in the folding worker.
FOLD_MAX_ROWS = 1_000_000


FOLD_MAX_BYTES = 128 << 20

# A delta over those bounds is folded by this many executor tasks at most, each keeping the
# keys of its part (every task reads every staged file, one at a time, and keeps a part):
# beyond, Spark's fold
FOLD_MAX_PARTS = 8


def fold_parts(rows: int, nbytes: int, part_key: bool, cores: int) -> int | None:
    """How many executor tasks fold a staged delta of ``rows`` rows in ``nbytes`` bytes of
    files: 1 within ``FOLD_MAX_ROWS`` and ``FOLD_MAX_BYTES``; beyond, enough parts for each
    to be within them and at least one per core (``cores``), when the key's first column
    can be cut into parts (``part_key``: a type :func:`part_of` takes) and at most
    ``FOLD_MAX_PARTS`` are needed; None: Spark folds it."""
    need = max(1, -(-rows // FOLD_MAX_ROWS), -(-nbytes // FOLD_MAX_BYTES))
    if need == 1:
        return 1
    if not part_key or need > FOLD_MAX_PARTS:
        return None
    return min(max(need, cores), FOLD_MAX_PARTS)


@dataclass(frozen=True)
class FoldSpec:
    """What :func:`fold_mirror` needs: the staged delta files of one table (positional
    columns, see :func:`stage_columns`) and their column ``names``; the mirror's key columns
    ``pk`` (the old key of an update in ``olds``) and value columns ``typed``; ``blocked``:
    the first change not to apply (None: all); ``part``: (i, k), the keys whose first column's
    value is in part i of k (:func:`part_of`; NULL in part 0), (0, 1) every key.  ``mirror`` (a key of ``sink.tables``) set:
    the folded rows are written as that mirror's data files (a mirror created by this run,
    empty); otherwise the folded delta is written to ``out`` for the MERGE.  ``partial``:
    the updates may carry partial row images, folded by :func:`fold_partial` (the result has
    its flag columns)."""

    paths: tuple[str, ...]
    names: tuple[str, ...]
    pk: tuple[str, ...]
    olds: tuple[str, ...]
    typed: tuple[str, ...]
    blocked: tuple[int, int, int] | None
    sink: DataSink | None = None
    mirror: str | None = None
    out: str | None = None
    part: tuple[int, int] = (0, 1)
    partial: bool = False


def fold_delta(table: Any, pk: tuple[str, ...], olds: tuple[str, ...],
               typed: tuple[str, ...]) -> Any:
    """The latest change per key of the converted changes in ``table`` (Arrow; columns
    ``typed``, their old key ``olds``, ``_op``, the order columns, ``_commit_ts``), as
    Spark's fold in ``typed_mirror._merge_mirror`` gives it: an update that changes the key is a
    delete of the old key (the old key values, no others) and then the row at the new key;
    keys compare null-safely; the change latest in commit order wins (a delete included)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    cols = [*typed, "_op", *ORDER, "_commit_ts"]
    rows = table.select(cols)
    if pk:
        rows = pa.concat_tables([rows, _old_key_deletes(table, rows.schema, pk, olds)])
    if not rows.num_rows:
        return rows
    # rank in commit order, then the highest rank per key
    perm = pc.sort_indices(rows.select(list(ORDER)),
                           sort_keys=[(c, "ascending") for c in ORDER]).to_numpy()
    rank = np.empty(len(perm), dtype=np.int64)
    rank[perm] = np.arange(len(perm), dtype=np.int64)
    keys = rows.select(list(pk)).append_column("__rank", pa.array(rank))
    last = keys.group_by(list(pk), use_threads=False).aggregate([("__rank", "max")])
    picked = np.sort(perm[last.column("__rank_max").to_numpy()])
    return rows.take(pa.array(picked))


def _old_key_deletes(table: Any, schema: Any, pk: tuple[str, ...], olds: tuple[str, ...]
                     ) -> Any:
    """A delete of the old key (its values, no others; the update's order and commit time)
    for each update of ``table`` that moves its row to another key, in ``schema``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    moved = pc.fill_null(pc.and_(pc.equal(table.column("_op"), "update"),
                                 pc.invert(_same_key(table, list(pk), list(olds)))), False)
    g = table.filter(moved)
    n = g.num_rows
    old_of = dict(zip(pk, olds))
    arrays = []
    for f in schema:
        c, typ = f.name, f.type
        if c in old_of:
            arrays.append(g.column(old_of[c]).cast(typ))
        elif c == "_op":
            arrays.append(pa.array(["delete"] * n, typ))
        elif c in ORDER or c == "_commit_ts":
            arrays.append(g.column(c))
        else:
            arrays.append(pa.nulls(n, typ))
    return pa.Table.from_arrays(arrays, schema=schema)


def kept_flags(typed: tuple[str, ...], pk: tuple[str, ...]) -> list[tuple[str, str]]:
    """(value column, its flag column) of a partial fold (:func:`fold_partial`): the flag
    ``__bl_kf<i>`` of the i-th typed column that is not a key column."""
    return [(c, f"__bl_kf{i}") for i, c in enumerate(c for c in typed if c not in set(pk))]


def fold_partial(table: Any, pk: tuple[str, ...], olds: tuple[str, ...],
                 typed: tuple[str, ...]) -> Any:
    """The changes per key of a delta whose updates may carry partial row images
    (``binlog_row_image`` MINIMAL / NOBLOB: ``_absent`` names the columns an update's image
    lacks), as Spark's fold in ``typed_mirror._merge_mirror`` gives them with ``partial``.
    An update that moves its row to another key is a delete of the old key, then the row at
    the new one (:func:`fold_delta`).  Per key (NULLs equal), in commit order: a last change
    that is a delete stays as it is; otherwise the result is the last change's key,
    ``_op``, order and ``_commit_ts``, and each value column's value is the one of the
    latest change after the key's last delete that carries it, its flag (:func:`kept_flags`)
    True where no such change does (the MERGE keeps the mirror's value then, and a new
    row has NULL there).  Only an update that keeps its key keeps columns; a key-moving
    update with a partial image must be made whole first (``moves.resolve_moves``): the
    caller folds deltas with such moves in Spark.  Raises TypeError for a floating-point
    key column (NaN and -0.0 are grouped as Spark groups them only in Spark)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if any(pa.types.is_floating(table.schema.field(c).type) for c in pk):
        raise TypeError("a floating-point key: folded by Spark")
    flags = kept_flags(typed, pk)
    others = [c for c, _ in flags]
    cols = [*typed, "_op", *ORDER, "_commit_ts"]
    rows = table.select(cols)
    n0 = rows.num_rows
    # which value columns each update of an unchanged key keeps (its image lacks them)
    kept = np.zeros((n0, len(others)), dtype=bool)
    absent = table.column("_absent").combine_chunks()
    if n0 and others and len(pc.list_flatten(absent)):
        parents = pc.list_parent_indices(absent).to_numpy()
        at = pc.fill_null(pc.index_in(pc.list_flatten(absent), value_set=pa.array(others)),
                          -1).to_numpy()
        hit = at >= 0
        kept[parents[hit], at[hit]] = True
        same_upd = pc.fill_null(pc.and_(pc.equal(table.column("_op"), "update"),
                                        _same_key(table, list(pk), list(olds))), False)
        kept &= same_upd.to_numpy(zero_copy_only=False)[:, None]
    gone = _old_key_deletes(table, rows.schema, pk, olds)
    if gone.num_rows:
        rows = pa.concat_tables([rows, gone])
        kept = np.concatenate([kept, np.zeros((gone.num_rows, len(others)), dtype=bool)])
    n = rows.num_rows
    if not n:
        for _, f in flags:
            rows = rows.append_column(f, pa.array([], pa.bool_()))
        return rows
    # each key's changes together, in commit order
    order = pc.sort_indices(rows, sort_keys=[(c, "ascending") for c in (*pk, *ORDER)])
    rows = rows.take(order)
    kept = kept[order.to_numpy()]
    step = np.zeros(n, dtype=bool)  # the first change of a key
    step[0] = True
    for c in pk:
        a = rows.column(c).combine_chunks()
        x, y = a.slice(1), a.slice(0, n - 1)
        differ = pc.and_(pc.fill_null(pc.not_equal(x, y), True),
                         pc.invert(pc.and_(pc.is_null(x), pc.is_null(y))))
        step[1:] |= differ.to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(step)
    key_of = np.cumsum(step) - 1
    ends = np.append(starts[1:], n) - 1
    idx = np.arange(n)
    dele = pc.fill_null(pc.equal(rows.column("_op"), "delete"), False).to_numpy(
        zero_copy_only=False)
    after = idx > np.maximum.reduceat(np.where(dele, idx, -1), starts)[key_of]
    last_del = dele[ends]
    out = rows.take(pa.array(ends))
    for j, (c, f) in enumerate(flags):
        src = np.maximum.reduceat(np.where(after & ~kept[:, j], idx, -1), starts)
        src = np.where(last_del, ends, src)  # (a delete: its own row)
        none = src < 0
        values = rows.column(c).take(pa.array(np.where(none, 0, src), mask=none))
        out = out.set_column(out.schema.get_field_index(c), c, values)
        out = out.append_column(f, pa.array(none))
    return out


def fold_mirror(spec: FoldSpec) -> list[dict[str, Any]]:
    """Executor side: read a table's staged delta, keep the changes to apply (a known layout,
    before ``blocked``), fold them (:func:`fold_delta`) and write the result (see
    :class:`FoldSpec`).  Returns the WRITTEN records of the mirror's data files, or one
    record naming the folded file.  A worker settles after it (lake.worker)."""
    try:
        return _fold_mirror(spec)
    finally:
        settle()


def _fold_mirror(spec: FoldSpec) -> list[dict[str, Any]]:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    folded = fold_staged(spec)
    if spec.mirror is None:
        assert spec.out is not None
        fs, path = data_filesystem(spec.out.rsplit("/", 1)[0])
        pq.write_table(folded.rename_columns(stage_columns(folded.column_names)),
                       f"{path.rstrip('/')}/{spec.out.rsplit('/', 1)[1]}", filesystem=fs,
                       compression="lz4")
        return [{"folded": spec.out, "rows": folded.num_rows}]
    assert spec.sink is not None
    rows = folded.filter(pc.not_equal(folded.column("_op"), "delete"))
    if not rows.num_rows:
        return []
    i, k = spec.part
    return spec.sink._write_parts(spec.mirror, "mirror" if k == 1 else f"mirror-{i}-of-{k}",
                                  "", spec.sink.shaped(spec.mirror, rows), [])


def fold_staged(spec: FoldSpec) -> Any:
    """The staged delta of ``spec`` read, the changes to apply kept (a known layout, before
    ``blocked``, of the keys of ``part``) and folded (:func:`fold_delta`): an Arrow table.
    With parts, each file is cut to the part's changes as it is read (a part of a delta
    over the bounds in memory, not the delta): a change of a key of the part, or an update
    that moves a key of the part (its old key's delete belongs here; its new key's row is
    cut from the folded result when that key is another part's)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    i, k = spec.part
    parts = []
    for p in spec.paths:
        t = pq.read_table(p).rename_columns(list(spec.names))
        keep = pc.greater_equal(t.column("__bl_layout"), 0)
        if spec.blocked is not None:
            keep = pc.and_(keep, _order_beyond(t, spec.blocked, False))
        if k > 1:
            moved_here = pc.and_(pc.equal(t.column("_op"), "update"),
                                 _in_part(t.column(spec.olds[0]), i, k))
            keep = pc.and_(keep, pc.or_(_in_part(t.column(spec.pk[0]), i, k),
                                        pc.fill_null(moved_here, False)))
        parts.append(t.filter(pc.fill_null(keep, False)))
    table = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
    del parts
    folded = (fold_partial if spec.partial else fold_delta)(table, spec.pk, spec.olds,
                                                            spec.typed)
    if k > 1:
        folded = folded.filter(_in_part(folded.column(spec.pk[0]), i, k))
    return folded


def _in_part(column: Any, i: int, k: int) -> Any:
    """Mask of the values of ``column`` in part ``i`` of ``k`` (:func:`part_of`)."""
    import pyarrow as pa

    return pa.array(part_of(column, k) == i)


# the rows of a text column whose bytes are summed at once (part_of): a block's running sum
# is 8 bytes per byte of text
_SUM_ROWS = 1 << 14


def part_of(column: Any, k: int) -> Any:
    """Each value's part of ``k`` (a numpy array, 0 <= part < k) for an Arrow array or
    chunked array: an integer's value modulo ``k``; a date, time or timestamp's number (days,
    units since midnight or the epoch) modulo ``k``; a text or binary value's byte sum
    modulo ``k`` (whatever the chunks, slices or string type: a key's part is the same in
    every staged file); a decimal's text at its type's scale (``-12.50``: one text per value,
    as the column's type is the same in every staged file of a table), as a text's.  NULL is
    in part 0.  Raises TypeError for another type (floating point: 0.0 and -0.0 are one key
    of two texts)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    t = column.type
    if pa.types.is_decimal(t):  # (BIGINT UNSIGNED is DECIMAL(20,0) in the typed tables)
        column = column.cast(pa.string())
        t = column.type
    if pa.types.is_temporal(t) and not pa.types.is_interval(t):
        column = column.cast(pa.int32() if pa.types.is_date32(t) or t == pa.time32("s")
                             or t == pa.time32("ms") else pa.int64())
        t = column.type
    if pa.types.is_integer(t):
        return np.remainder(pc.fill_null(column, 0).to_numpy(), k)
    if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t)):
        raise TypeError(f"no parts of a {t} column")
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    out = [np.zeros(0, dtype=np.int64)]
    for chunk in chunks:
        b = chunk.cast(pa.large_binary())
        n = len(b)
        bufs = b.buffers()
        offs = np.frombuffer(bufs[1], dtype=np.int64)[b.offset:b.offset + n + 1]
        data = (np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None
                else np.zeros(0, dtype=np.uint8))
        sums = np.zeros(n, dtype=np.int64)
        for lo in range(0, n, _SUM_ROWS):
            hi = min(n, lo + _SUM_ROWS)
            first = offs[lo]
            run = np.concatenate(([0], np.cumsum(data[first:offs[hi]], dtype=np.int64)))
            sums[lo:hi] = run[offs[lo + 1:hi + 1] - first] - run[offs[lo:hi] - first]
        if b.null_count:
            sums[b.is_null().to_numpy(zero_copy_only=False)] = 0
        out.append(np.remainder(sums, k))
    return np.concatenate(out)
