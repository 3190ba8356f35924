"""Every table of a lake, read with pyiceberg (no Spark), as multisets of rows: for comparing
two lakes cell by cell (``diff_lakes``).  Columns that name the writing run (``run_id``,
``loaded_at``) and the decode split (``ranges``) differ between equal loads by design and are
left out; so is ``xa_prepares.pks`` beyond the tables the XA changed (what a decode range saw
before the PREPARE: see test_lake_job's ``_xa_tables_pks``)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

RUN_COLUMNS = frozenset({"run_id", "loaded_at", "ranges"})


def catalog(home: Path, name: str = "binlake") -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog(name, uri=f"sqlite:///{home}/catalog.db",
                      warehouse=f"file://{home}/warehouse")


def _cell(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_cell(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _cell(x)) for k, x in v.items()))
    return v


def _narrow_pks(row: dict[str, Any]) -> dict[str, Any]:
    from binlake.txn.xa import load_pending

    if row.get("pks") is None or row.get("state") is None:
        return row
    touched = {f"{c.db}.{c.table}" for t in load_pending(row["state"]) for c in t.changes}
    pks = json.loads(row["pks"])
    return {**row, "pks": json.dumps({k: pks[k] for k in sorted(pks) if k in touched})}


def dump(home: Path | None, namespace: str = "binlog", name: str = "binlake",
         ref: str | None = None, cat: Any = None) -> dict[str, Counter[tuple[Any, ...]]]:
    """table name -> Counter of rows (sorted (column, value) tuples); ``ref``: a branch.
    ``cat``: a pyiceberg catalog to read instead of the SQLite one under ``home`` (a
    PostgreSQL catalog, say: ``binlake.lake.spark.pyiceberg_catalog(settings)``)."""
    if cat is None:
        assert home is not None
        cat = catalog(home, name)
    out: dict[str, Counter[tuple[Any, ...]]] = {}
    for ident in cat.list_tables(namespace):
        table = cat.load_table(ident)
        if ref is not None and table.metadata.refs.get(ref) is None:
            continue
        scan = table.scan() if ref is None else table.scan().use_ref(ref)
        rows = scan.to_arrow().to_pylist()
        if ident[-1] == "xa_prepares":
            rows = [_narrow_pks(r) for r in rows]
        out[ident[-1]] = Counter(tuple(sorted((k, _cell(v)) for k, v in r.items()
                                              if k not in RUN_COLUMNS)) for r in rows)
    return out


def diff_lakes(a: dict[str, Counter[Any]], b: dict[str, Counter[Any]]) -> str:
    """'' when every table holds the same rows, else the first differences per table."""
    lines = []
    for t in sorted(set(a) | set(b)):
        if t not in a or t not in b:
            lines.append(f"{t}: only in the {'left' if t in a else 'right'} lake")
            continue
        ca, cb = a[t], b[t]
        if ca == cb:
            continue
        only_a, only_b = list((ca - cb).elements()), list((cb - ca).elements())
        lines.append(f"{t}: {len(only_a)} row(s) only left, {len(only_b)} only right "
                     f"(of {sum(ca.values())} / {sum(cb.values())})")
        lines += [f"   left:  {str(r)[:300]}" for r in sorted(only_a, key=repr)[:3]]
        lines += [f"   right: {str(r)[:300]}" for r in sorted(only_b, key=repr)[:3]]
    return "\n".join(lines)


def unreferenced_files(home: Path, namespace: str = "binlog", name: str = "binlake"
                       ) -> list[str]:
    """Files under the tables' data directories that no snapshot (of any branch) references."""
    import os

    from binlake.lake.sink import fs_path

    cat = catalog(home, name)
    out = []
    for ident in cat.list_tables(namespace):
        table = cat.load_table(ident)
        referenced: set[str] = set()
        for snap in table.metadata.snapshots:
            for manifest in snap.manifests(table.io):
                referenced |= {fs_path(e.data_file.file_path)
                               for e in manifest.fetch_manifest_entry(table.io, discard_deleted=False)}
        data = fs_path(table.metadata.location) + "/data"
        for d, _, files in os.walk(data):
            out += [os.path.join(d, f) for f in files
                    if os.path.join(d, f) not in referenced and not f.startswith(".")]
    return sorted(out)


def unused_metadata_files(home: Path, before: float, namespace: str = "binlog",
                          name: str = "binlake") -> list[str]:
    """Files under the tables' metadata directories of the kinds a commit writes
    (``*.metadata.json``, ``*.avro``), last written before ``before`` (epoch seconds), that
    the table does not use: not its current version nor one of its metadata log, not the
    manifest list of a snapshot it keeps nor a manifest one lists (read with pyiceberg, apart
    from the Spark metadata tables binlake uses); and any file under a directory beside the
    tables' own that is no table's.  (``before``: a run's own commits may leave
    such a file, an attempt that lost a commit race, for the next run's sweep.)"""
    import os

    from binlake.lake.sink import fs_path

    cat = catalog(home, name)
    out = []
    tables: set[str] = set()
    parent = ""
    for ident in cat.list_tables(namespace):
        table = cat.load_table(ident)
        md = table.metadata
        used = {fs_path(table.metadata_location)} | {fs_path(e.metadata_file)
                                                     for e in md.metadata_log}
        for snap in md.snapshots:
            used.add(fs_path(snap.manifest_list))
            used |= {fs_path(m.manifest_path) for m in snap.manifests(table.io)}
        meta = fs_path(md.location) + "/metadata"
        for d, _, files in os.walk(meta):
            out += [os.path.join(d, f) for f in files
                    if (f.endswith(".metadata.json") or f.endswith(".avro"))
                    and os.path.join(d, f) not in used
                    and os.path.getmtime(os.path.join(d, f)) < before]
        tables.add(os.path.basename(fs_path(md.location).rstrip("/")))
        parent = os.path.dirname(fs_path(md.location).rstrip("/"))
    # and every file in a directory beside them that is no table's (a killed CREATE TABLE's
    # first metadata.json: in no table at all)
    for name in sorted(os.listdir(parent)) if parent else []:
        if name not in tables and os.path.isdir(os.path.join(parent, name)):
            for d, _, files in os.walk(os.path.join(parent, name)):
                out += [os.path.join(d, f) for f in files
                        if os.path.getmtime(os.path.join(d, f)) < before]
    return sorted(out)
