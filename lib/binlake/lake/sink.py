"""Table data written by the executors: :class:`DataSink` turns a decode task's records into
Parquet data files of the record tables and of the typed changelogs (and stages the mirrors'
deltas), reporting each file as a ``WRITTEN`` record for the driver's commits; with the
tables' locations (:class:`TableOut`, :class:`TypedOut`) and their filesystems
(:func:`data_filesystem`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from ..txn.streamfacts import FACT_NAMES
from .records import CHANGE, FACT, STATEMENT, STREAM_FACTS, TXN, XA_PREPARE
from .transport import _CHANGE_NAMES
from .typedconv import NO_LAYOUT, NO_NAMES, ORDER

# A decode task hands its records to ``flush`` (the DataSink: Parquet data files) each time
# it has read this many bytes of binlog since the last time, so that it holds the records
# of at most about this many bytes (as Python objects about 3 times that) and of the
# transaction still open, up to the same size (a bigger one spills to disk), whatever the
# range's size, the rows' width and the transactions' size.
FLUSH_BYTES = 32 << 20
# ... or when it holds this many records: narrow rows cost more as Python objects than
# their bytes say (a 130-byte row change is about 1.5 KB of record)
FLUSH_ROWS = 100_000

WRITTEN = "written"  # a Parquet data file an executor wrote (table, path, rows, partition)


_DAY_US = 86_400 * 1_000_000


_DICT_COLS = ["source", "gtid", "db", "tbl", "op", "file", "run_id", "kind", "status",
              "begin_file", "end_file", "end_event", "prepare_file", "_op", "_source"]


@dataclass(frozen=True)
class TableOut:
    """One table the executors write data files of: its data directory (local path,
    ``file:`` or ``s3://`` URI), its Arrow schema (Iceberg field ids included) and its
    partition fields as (column, transform), the transform ``identity`` or ``day``."""

    location: str
    schema: Any  # pyarrow.Schema
    partition: tuple[tuple[str, str], ...]


TYPED = "typed"  # what one range gave one typed table (counts, order keys, staged delta)


def stage_columns(names: list[str]) -> list[str]:
    """The staged delta's column names: positional (a source column name need not be one
    Parquet readers take); the reader renames them back."""
    return [f"c{i}" for i in range(len(names))]


@dataclass(frozen=True)
class TypedOut:
    """One source table whose typed changelog the executors write (see
    :meth:`DataSink.write_typed`): ``table`` is the changelog's full name (a key of
    ``DataSink.tables``), ``converter`` a :class:`typedconv.Converter`, ``stage`` the local
    directory where the changes newer than the mirror's watermark ``wm`` are staged (None:
    no mirror)."""

    db: str
    tbl: str
    table: str
    converter: Any
    stage: str | None
    wm: tuple[int, int, int] | None


@dataclass
class DataSink:
    """Where the executors write the data files of the lake's record tables
    (``row_changes``, ``transactions``, ``statements``, ``xa_prepares``).  The driver adds the
    files of the binlogs that decoded cleanly, one Iceberg commit per table; the others are
    deleted, and the files of a killed run are never referenced."""

    tables: dict[str, TableOut]
    source: str
    run_id: str
    s3_endpoint: str | None = None
    # in the file names: new for each load attempt (a retried Airflow task keeps its run id,
    # and must not overwrite files an earlier attempt committed); a retried Spark task of
    # the same attempt overwrites its own files
    attempt: str = ""
    # source tables whose typed changelog (and mirror delta) is written here too
    typed: dict[tuple[str, str], TypedOut] = field(default_factory=dict)
    # a decode task writes its records every this many bytes of binlog (decode_range)
    flush_bytes: int = FLUSH_BYTES
    # a decode task decides an XA whose COMMIT/ROLLBACK is in its range (decode_range)
    local_xa: bool = True

    def write(self, table: str, tag: str, file: str, columns: dict[str, list[Any]],
              n: int, keep: list[tuple[tuple[Any, ...], Any]] | None = None
              ) -> list[dict[str, Any]]:
        """Write ``n`` rows of binlog ``file`` into ``table``: ``columns`` by column name
        (``source`` and ``run_id`` are filled in; timestamps as epoch microseconds).  One
        data file per partition value; ``tag`` makes the names unique within the run.
        ``keep`` gets each (partition value, Arrow table) written."""
        if not n:
            return []
        import pyarrow as pa

        out_t = self.tables[table]
        keys: list[Any] = []
        for col, transform in out_t.partition:
            pvals: list[Any] = [self.source] * n if col == "source" else columns[col]
            keys.append([None if v is None else v // _DAY_US for v in pvals]
                        if transform == "day" else pvals)
        groups = _partition_groups(keys, n)
        if len(groups) > 1:
            # the rows in partition order, as Python sequences (cheaper than Arrow takes of
            # the converted columns, which copy every string): each partition is then a
            # slice; itemgetter picks them in C
            pick = itemgetter(*(i for rows in groups.values() for i in rows))
            columns = {c: pick(vals) for c, vals in columns.items()
                       if c in out_t.schema.names}
        arrays = []
        for f in out_t.schema:
            vals: list[Any] = ([self.source] * n if f.name == "source" else
                               [self.run_id] * n if f.name == "run_id" else columns[f.name])
            arrays.append(_arrow_array(vals, f.type))
        data = pa.Table.from_arrays(arrays, schema=out_t.schema)
        pieces = []
        at = 0
        for key, rows in groups.items():
            pieces.append((key, data.slice(at, len(rows))))
            at += len(rows)
        return self._write_files(table, tag, file, pieces, keep)

    def _write_parts(self, table: str, tag: str, file: str, data: Any,
                     keys: list[list[Any]],
                     keep: list[tuple[tuple[Any, ...], Any]] | None = None
                     ) -> list[dict[str, Any]]:
        """``data`` (an Arrow table in ``table``'s schema) as one data file per partition
        value; ``keys``: per partition field, every row's partition value."""
        import pyarrow as pa

        groups = _partition_groups(keys, data.num_rows)
        pieces = [(key, data.take(pa.array(rows, pa.int64())) if len(groups) > 1 else data)
                  for key, rows in groups.items()]
        return self._write_files(table, tag, file, pieces, keep)

    def _write_files(self, table: str, tag: str, file: str,
                     pieces: list[tuple[tuple[Any, ...], Any]],
                     keep: list[tuple[tuple[Any, ...], Any]] | None = None
                     ) -> list[dict[str, Any]]:
        """One data file of ``table`` per (partition value, Arrow table) of ``pieces``."""
        import pyarrow.parquet as pq

        out_t = self.tables[table]
        fs, base = data_filesystem(out_t.location, self.s3_endpoint)
        out = []
        short = table.rsplit(".", 1)[-1]
        for k, (key, part) in enumerate(pieces):
            name = f"{short}-{_safe(self.run_id)}-{self.attempt}-{tag}-{k}.parquet"
            pq.write_table(part, f"{base.rstrip('/')}/{name}", filesystem=fs,
                           compression="zstd",
                           use_dictionary=[c for c in _DICT_COLS if c in part.column_names])
            out.append({"table": table, "file": file, "rows": part.num_rows,
                        "path": _uri(out_t.location, name), "partition": list(key)})
            if keep is not None:
                keep.append((key, part))
        return out

    def write_typed(self, tag: str, file: str,
                    parts: list[tuple[dict[str, Any], Any]]) -> list[tuple[str, Any]]:
        """The typed changelog rows of the tables in ``typed``, converted here
        (:class:`typedconv.Converter`, the conversion the typed step runs in Spark
        otherwise) from ``parts``: the row changes as written to ``row_changes``, (partition
        values by column, Arrow table) per data file.  They are written as data files of the
        changelog tables; the changes newer than a mirror's watermark are staged as Parquet
        for its MERGE.  Returns a WRITTEN record per data file and a TYPED record per table
        (counts and order keys: what the driver needs to commit and merge)."""
        if not self.typed:
            return []
        import pyarrow as pa

        by_table: dict[tuple[str, str], list[Any]] = {}
        if parts and not {"db", "tbl"} <= set(parts[0][0]):  # not partitioned by table
            import pyarrow.compute as pc

            whole = pa.concat_tables([p for _, p in parts])
            for t in self.typed:
                mask = pc.and_(pc.equal(whole.column("db"), t[0]),
                               pc.equal(whole.column("tbl"), t[1]))
                picked = whole.filter(pc.fill_null(mask, False))
                if picked.num_rows:
                    by_table[t] = [picked]
        for key, part in parts:
            if {"db", "tbl"} <= set(key) and (key["db"], key["tbl"]) in self.typed:
                by_table.setdefault((key["db"], key["tbl"]), []).append(part)
        out: list[tuple[str, Any]] = []
        for t, tabs in by_table.items():
            spec = self.typed[t]
            rows = pa.concat_tables(tabs) if len(tabs) > 1 else tabs[0]
            cand = rows.select(["txn_id", "order_seq", "order_pos", "order_idx", "commit_ts",
                                "op", "before", "after", "file", "pos"])
            cand = cand.append_column("__bl_in_cl", pa.nulls(cand.num_rows, pa.bool_()))
            conv = pa.Table.from_batches(list(spec.converter(iter(cand.to_batches()))))
            del cand, rows
            out += self._typed_one(tag, file, spec, conv)
        return out

    def shaped(self, table: str, rows: Any) -> Any:
        """``rows`` (an Arrow table with the typed table's columns but ``_source``) in the
        Arrow schema of ``table``, a typed changelog or mirror: ``_source`` filled in, each
        column cast to its type.  A column of the table that ``rows`` lacks is NULL: a mirror
        made by a RENAME TABLE from the old name's mirror keeps columns the table no longer
        has (a column renamed or dropped before the rename)."""
        import pyarrow as pa

        out_t = self.tables[table]
        have = set(rows.column_names)
        arrays = []
        for f in out_t.schema:
            if f.name == "_source":
                a = pa.array([self.source] * rows.num_rows, pa.string())
            elif f.name in have or not f.nullable:
                a = rows.column(f.name)
            else:
                a = pa.nulls(rows.num_rows, f.type)
            arrays.append(a.cast(f.type) if a.type != f.type else a)
        return pa.Table.from_arrays(arrays, schema=out_t.schema)

    def _typed_one(self, tag: str, file: str, spec: TypedOut, conv: Any
                   ) -> list[tuple[str, Any]]:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        layout = conv.column("__bl_layout")
        ok = pc.greater_equal(layout, 0)
        # every row, or those after the mirror's watermark
        delta = pc.is_valid(layout) if spec.wm is None else _order_beyond(conv, spec.wm, True)

        def count(mask: Any) -> int:
            return int(pc.sum(pc.cast(mask, pa.int64())).as_py() or 0)

        def okeys(mask: Any) -> list[tuple[int, int, int]]:
            t = conv.select(list(ORDER)).filter(mask)
            return list(zip(*(t.column(k).to_pylist() for k in range(3))))

        todo = pc.and_(delta, ok)
        lacking = pc.and_(todo, pc.and_(
            pc.equal(conv.column("_op"), "update"),
            pc.greater(pc.fill_null(pc.list_value_length(conv.column("_absent")), 0), 0)))
        partial = count(lacking) > 0
        # updates with a partial image that move a key (moves.resolve_moves makes them whole)
        moves = count(pc.and_(lacking, pc.invert(_same_key(
            conv, spec.converter.pk, [f"__bl_old{i}" for i in range(len(spec.converter.pk))]
        )))) if partial and spec.converter.pk else 0
        n_delta = count(delta) if spec.stage is not None else 0
        blocked_rows = (okeys(pc.and_(delta, pc.equal(layout, NO_LAYOUT)))
                        if spec.stage is not None else [])
        last_rows = okeys(delta) if n_delta else []
        stats: dict[str, Any] = {
            "table": spec.table, "db": spec.db, "tbl": spec.tbl, "file": file,
            "cl": count(ok), "delta": n_delta, "todo": count(todo) if n_delta else 0,
            "partial": partial, "moves": moves, "blocked": list(min(blocked_rows)) if blocked_rows else None,
            "last": list(max(last_rows)) if last_rows else None,
            "no_layout": count(pc.equal(layout, NO_LAYOUT)),
            "no_names": count(pc.equal(layout, NO_NAMES)),
            "mismatch": count(pc.fill_null(conv.column("__bl_mismatch"), False)),
            "staged": None}
        out: list[tuple[str, Any]] = []
        if stats["cl"]:
            rows = conv.filter(ok)
            data = self.shaped(spec.table, rows)
            us = rows.column("_commit_ts").cast(pa.int64()).to_pylist()
            keys = [[None if v is None else v // _DAY_US for v in us]]
            out += [(WRITTEN, w) for w in self._write_parts(spec.table, tag, file, data, keys)]
        if n_delta and spec.stage is not None:
            fs, base = data_filesystem(spec.stage)
            path = f"{base.rstrip('/')}/{_safe(tag)}.parquet"
            staged = conv.filter(delta)
            staged = staged.rename_columns(stage_columns(staged.column_names))
            pq.write_table(staged, path, filesystem=fs, compression="lz4")
            stats["staged"] = path
        out.append((TYPED, stats))
        return out

    def write_records(self, tag: str, file: str, records: list[tuple[str, Any]]
                      ) -> list[tuple[str, Any]]:
        """Write a range's row changes, transactions, statements, XA prepares and stream
    facts (``stream_facts``, when the sink has that table); returns
        the records left for Spark (the XA prepares stay: the XA pairing reads them) and a
        WRITTEN record per data file."""
        by_kind: dict[str, list[Any]] = {CHANGE: [], TXN: [], STATEMENT: [], XA_PREPARE: [],
                                         FACT: []}
        rest: list[tuple[str, Any]] = []
        for k, r in records:
            if k in by_kind:
                by_kind[k].append(r)
                if k != XA_PREPARE:
                    continue
            rest.append((k, r))
        written = []
        changes = by_kind[CHANGE]
        typed_out: list[tuple[str, Any]] = []
        if changes:
            cols = dict(zip(_CHANGE_NAMES, (list(c) for c in zip(*changes))))
            cols["commit_ts"] = cols["commit_us"]
            parts: list[tuple[tuple[Any, ...], Any]] | None = [] if self.typed else None
            written += self.write("row_changes", tag, file, cols, len(changes), parts)
            del cols
            if parts:
                names = [c for c, _ in self.tables["row_changes"].partition]
                typed_out = self.write_typed(
                    tag, file, [(dict(zip(names, key)), part) for key, part in parts])
                del parts
        facts = by_kind[FACT]
        if facts and STREAM_FACTS in self.tables:
            written += self.write(STREAM_FACTS, tag, file,
                                  dict(zip(FACT_NAMES, (list(c) for c in zip(*facts)))),
                                  len(facts))
        for kind, table, rename, scale in (
                (TXN, "transactions", {"commit_ts": "commit_us"}, {}),
                (STATEMENT, "statements", {"pos": "statement_pos"}, {}),
                (XA_PREPARE, "xa_prepares", {}, {"prepared_ts": 1_000_000})):
            recs = by_kind[kind]
            if recs:
                written += self.write(table, tag, file,
                                      _columns(recs, self.tables[table].schema, rename, scale),
                                      len(recs))
        return rest + [(WRITTEN, w) for w in written] + typed_out


def _same_key(table: Any, pk: list[str], olds: list[str]) -> Any:
    """Mask: each row's key columns ``pk`` equal its old key ``olds``, NULLs equal."""
    import pyarrow.compute as pc

    same = None
    for c, o in zip(pk, olds):
        a, b = table.column(c), table.column(o)
        eq = pc.or_(pc.fill_null(pc.equal(a, b), False), pc.and_(pc.is_null(a), pc.is_null(b)))
        same = eq if same is None else pc.and_(same, eq)
    return same


def _partition_groups(keys: list[list[Any]], n: int) -> dict[tuple[Any, ...], list[int]]:
    """The indexes of ``n`` rows by partition value (``keys``: per partition field, every
    row's value; none: one group of every row), groups in order of first appearance."""
    if not keys:
        return {(): list(range(n))}
    groups: dict[tuple[Any, ...], list[int]] = {}
    get = groups.get
    for i, key in enumerate(zip(*keys)):
        rows = get(key)
        if rows is None:
            groups[key] = [i]
        else:
            rows.append(i)
    return groups


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def _columns(recs: list[dict[str, Any]], schema: Any, rename: dict[str, str],
             scale: dict[str, int]) -> dict[str, list[Any]]:
    names = [n for n in schema.names if n not in ("source", "run_id")]
    keys = [rename.get(n, n) for n in names]
    columns: Iterable[Any] | None = None
    try:  # every record has every key (the usual case): all columns in one transposition
        if len(keys) > 1:
            columns = zip(*map(itemgetter(*keys), recs))
    except KeyError:
        pass
    if columns is None:
        columns = ([r.get(k) for r in recs] for k in keys)
    cols: dict[str, Any] = {}
    for name, vals in zip(names, columns):
        cols[name] = ([None if v is None else v * scale[name] for v in vals]
                      if name in scale else vals)
    return cols


def _arrow_array(vals: list[Any], typ: Any) -> Any:
    """``vals`` as an Arrow array of ``typ``; timestamps from epoch microseconds; an integer
    out of the type's range is NULL (as Spark's JSON reading of the records made it)."""
    import pyarrow as pa

    if pa.types.is_timestamp(typ):
        return pa.array(vals, pa.int64()).cast(typ)
    if pa.types.is_integer(typ):
        try:
            return pa.array(vals, typ)
        except (OverflowError, pa.ArrowInvalid):
            half = 1 << (typ.bit_width - 1)  # (the types written are signed)
            return pa.array([v if v is None or -half <= v < half else None for v in vals], typ)
    return pa.array(vals, typ)


def _uri(location: str, name: str) -> str:
    return f"{location.rstrip('/')}/{name}"


def fs_path(uri: str) -> str:
    """A data file or directory URI as a path of the pyarrow filesystem
    :func:`data_filesystem` gives for it (``s3://b/k`` -> ``b/k``, ``file:///p`` or
    ``file:/p`` -> ``/p``)."""
    if "://" in uri and not uri.startswith("file:"):
        return uri.split("://", 1)[1]
    path = uri[len("file:"):] if uri.startswith("file:") else uri
    while path.startswith("//"):
        path = path[1:]
    return path


def data_filesystem(location: str, s3_endpoint: str | None = None) -> tuple[Any, str]:
    """(pyarrow filesystem, path in it) of a data directory URI."""
    import pyarrow.fs as pafs

    if location.startswith("s3://") or location.startswith("s3a://"):
        import os

        endpoint = s3_endpoint or os.environ.get("BINLAKE_S3_ENDPOINT_URL")
        kw: dict[str, Any] = {}
        if endpoint:
            kw["endpoint_override"] = endpoint
            kw["scheme"] = "https" if endpoint.startswith("https") else "http"
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        if region:
            kw["region"] = region
        return pafs.S3FileSystem(**kw), fs_path(location)
    path = fs_path(location)
    local = pafs.LocalFileSystem()
    local.create_dir(path, recursive=True)
    return local, path


def _order_beyond(table: Any, key: tuple[int, int, int], after: bool) -> Any:
    """Mask of the rows of ``table`` (Arrow) whose order key is strictly after ``key``
    (``after``) or strictly before it; a NULL order key is neither."""
    import pyarrow.compute as pc

    cmp = pc.greater if after else pc.less
    (seq, pos, idx), (s, p, i) = (table.column(c) for c in ORDER), key
    return pc.fill_null(pc.or_(cmp(seq, s), pc.and_(pc.equal(seq, s), pc.or_(
        cmp(pos, p), pc.and_(pc.equal(pos, p), cmp(idx, i))))), False)
