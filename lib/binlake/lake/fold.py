"""A mirror's staged delta folded by one executor task (Arrow, in memory): the latest change per
primary key (:func:`fold_delta`) and the task that folds one mirror's delta
(:func:`fold_mirror`), within the limits (``FOLD_MAX_ROWS``, ``FOLD_MAX_BYTES``) beyond which
Spark folds it instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .sink import DataSink, _order_beyond, data_filesystem, stage_columns
from .typedconv import ORDER

# A mirror's staged delta is folded in one executor task (Arrow, in memory) when it has at
# most this many rows and its staged files at most this many bytes (lz4 Parquet: a few
# times that in memory); a bigger one goes through Spark's fold, which spills.  A million
# narrow rows (about 130 bytes of binlog each) peak at about 950 MB in the folding worker.
FOLD_MAX_ROWS = 1_000_000


FOLD_MAX_BYTES = 128 << 20


@dataclass(frozen=True)
class FoldSpec:
    """What :func:`fold_mirror` needs: the staged delta files of one table (positional
    columns, see :func:`stage_columns`) and their column ``names``; the mirror's key columns
    ``pk`` (the old key of an update in ``olds``) and value columns ``typed``; ``blocked``:
    the first change not to apply (None: all).  ``mirror`` (a key of ``sink.tables``) set:
    the folded rows are written as that mirror's data files (a mirror created by this run,
    empty); otherwise the folded delta is written to ``out`` for the MERGE."""

    paths: tuple[str, ...]
    names: tuple[str, ...]
    pk: tuple[str, ...]
    olds: tuple[str, ...]
    typed: tuple[str, ...]
    blocked: tuple[int, int, int] | None
    sink: DataSink | None = None
    mirror: str | None = None
    out: str | None = None


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
        same = None
        for c, o in zip(pk, olds):
            a, b = table.column(c), table.column(o)
            eq = pc.or_(pc.fill_null(pc.equal(a, b), False),
                        pc.and_(pc.is_null(a), pc.is_null(b)))
            same = eq if same is None else pc.and_(same, eq)
        moved = pc.fill_null(pc.and_(pc.equal(table.column("_op"), "update"),
                                     pc.invert(same)), False)
        g = table.filter(moved)
        if g.num_rows:
            n = g.num_rows
            old_of = dict(zip(pk, olds))
            arrays = []
            for c in cols:
                typ = rows.schema.field(c).type
                if c in old_of:
                    arrays.append(g.column(old_of[c]).cast(typ))
                elif c == "_op":
                    arrays.append(pa.array(["delete"] * n, typ))
                elif c in ORDER or c == "_commit_ts":
                    arrays.append(g.column(c))
                else:
                    arrays.append(pa.nulls(n, typ))
            rows = pa.concat_tables([rows, pa.Table.from_arrays(arrays, schema=rows.schema)])
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


def fold_mirror(spec: FoldSpec) -> list[dict[str, Any]]:
    """Executor side: read a table's staged delta, keep the changes to apply (a known layout,
    before ``blocked``), fold them (:func:`fold_delta`) and write the result (see
    :class:`FoldSpec`).  Returns the WRITTEN records of the mirror's data files, or one
    record naming the folded file."""
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
    return spec.sink._write_parts(spec.mirror, "mirror", "",
                                  spec.sink.shaped(spec.mirror, rows), [])


def fold_staged(spec: FoldSpec) -> Any:
    """The staged delta of ``spec`` read, the changes to apply kept (a known layout, before
    ``blocked``) and folded (:func:`fold_delta`): an Arrow table."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    parts = [pq.read_table(p) for p in spec.paths]
    table = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
    del parts
    table = table.rename_columns(list(spec.names))
    keep = pc.greater_equal(table.column("__bl_layout"), 0)
    if spec.blocked is not None:
        keep = pc.and_(keep, _order_beyond(table, spec.blocked, False))
    table = table.filter(pc.fill_null(keep, False))
    return fold_delta(table, spec.pk, spec.olds, spec.typed)
