"""The lake's schema history (docs/lake.md "Schema history"): the driver's side.

A load builds the schema history its files are decoded with, before decoding them:

1. the versions earlier runs stored in ``<namespace>.schema_history`` (this source's, those
   starting before the run's first file; snapshots sit at seq -1 or at their position);
   those of loaded files between the run's files are merged at their positions;
2. the configured snapshots (``schema_snapshots``), merged at their positions;
3. the DDL statements the survey found in the run's files, in order
   (:func:`binlake.schema.ddl.apply_ddl`).

The decode tasks then name the columns of Table_maps logged without names
(:class:`binlake.schema.names.TableMapNamer`), and the survey's layouts are named the same
way here (:func:`name_layouts`): the typed tables are built for MINIMAL / NO_LOG binlogs as
for FULL ones.  The versions that start in the run's files replace what earlier runs stored
for those files (:func:`store_versions`): reruns and backfills leave one row per version.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..binlog.columns import GEOMETRY_NAMES, Column, TableMap, _resolve_meta
from ..binlog.fde import parse_version
from ..config import Settings
from ..schema.ddl import apply_ddl
from ..schema.model import Database, Finding, SchemaHistory, Version
from ..schema.names import named_copy
from ..schema.snapshot import (
    Snapshot,
    SnapshotError,
    apply_snapshot,
    is_snapshot_text,
    parse_snapshot,
    snapshot_from_mysqldump,
)
from ..schema.sqltext import version_number
from ..schema.types import check_table_map
from .defaults import image_default
from .tables import SCHEMA_HISTORY, delete_where
from .typed_plan import lit

_GEOMETRY_CODES = {v: k for k, v in GEOMETRY_NAMES.items()}


DATABASE = "database"  # schema_history rows of a database's default character set


@dataclass
class RunHistory:
    """The history a run decodes with, the versions that start in its files (to store),
    and what building it found."""

    history: SchemaHistory
    new: list[Version] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    # the files whose DDL the history applied (their sequence numbers): those given to the
    # run, skipped ones among them.  Their stored rows are what ``new`` replaces
    # (:func:`store_versions`), but for files that did not load now and whose stored rows
    # stay (``keep``: a file loaded before with other bytes, a file that failed)
    seqs: list[int] = field(default_factory=list)
    keep: set[int] = field(default_factory=set)

    def to_store(self, failed: Iterable[int] = ()) -> tuple[list[Version], list[int]]:
        """The versions to store and the files whose stored rows they replace, ``failed``
        (files that failed in this run) kept as stored."""
        keep = self.keep | set(failed)
        return ([v for v in self.new if v.start[0] not in keep],
                [s for s in self.seqs if s not in keep])


def stored_history(spark: Any, settings: Settings, run_seqs: Iterable[int]
                   ) -> tuple[list[Version], list[Database]]:
    """This source's stored versions that a run of the files ``run_seqs`` decodes with, in
    order: those before its first file, and those of files between its files that it does
    not load (a file loaded earlier, between the run's ones: the DDL in it reaches the
    run's later files only through what its own run stored).  The run's own files are left
    out (it derives their versions again), so are the files after its last.  With them the
    database default character sets stored for the same files, each with its position."""
    from .driver_read import all_of, eq, lt, read_rows

    run = {int(s) for s in run_seqs}
    got = read_rows(spark, settings, settings.table(SCHEMA_HISTORY),
                    all_of(eq("source", settings.source), lt("start_seq", max(run))),
                    ("change", "start_seq", "version"))
    rows = [r for r in zip(*(got.column(c).to_pylist() for c in ("change", "start_seq",
                                                                  "version")))
            if int(r[1]) not in run]
    out = [Version.from_dict(orjson.loads(r[2])) for r in rows if r[0] != DATABASE]
    out.sort(key=lambda v: (v.start, v.db.lower(), v.table.lower(), v.incarnation))
    dbs: list[Database] = []
    for r in rows:
        if r[0] == DATABASE:
            d = orjson.loads(r[2])
            dbs.append(Database(d["name"], d.get("charset"), d.get("collation"),
                                bool(d.get("exists", True)),
                                (int(d.get("seq", r[1])), int(d.get("pos", 0)))))
    dbs.sort(key=lambda db: db.start or (-2, 0))
    return out, dbs


def read_snapshot_file(uri: str) -> Snapshot:
    """A snapshot named by the ``schema_snapshots`` setting: ``binlake schema snapshot``
    JSON Lines (valid at its position), or ``mysqldump --no-data`` output (at the position
    its ``CHANGE MASTER TO`` line gives, else before any binlog)."""
    from ..binlog.errors import BinlogError
    from ..binlog.source import _open_raw, parse_location
    from ..config import ConfigError

    try:
        with _open_raw(parse_location(uri)) as fh:
            text = fh.read().decode("utf-8")
    except (OSError, UnicodeDecodeError, BinlogError) as exc:
        raise ConfigError(f"schema_snapshots: {uri}: cannot be read ({exc})") from None
    try:
        if is_snapshot_text(text):
            return parse_snapshot(text, uri)
        return snapshot_from_mysqldump(text, uri)[0]
    except SnapshotError as exc:
        raise ConfigError(f"schema_snapshots: {exc}") from None


_STORED = re.compile(r"\.(\d+)-(\d+)\.jsonl$")


def archived_snapshots(dirs: Iterable[str], first_seq: int, last_seq: int
                       ) -> tuple[list[Snapshot], list[Finding]]:
    """The snapshots stored beside the binlogs (``_schema/`` of each directory or prefix
    the run's files are in: :mod:`binlake.archive.snapshots`) that matter to a run of
    files ``first_seq``..``last_seq``: the position-less ones and those from the file
    before the first on.  One whose bytes differ from its recorded sha256, or that cannot
    be read, is a finding and is not used."""
    from ..archive.snapshots import list_snapshots, read_snapshot

    out: list[Snapshot] = []
    findings: list[Finding] = []
    for d in sorted(set(dirs)):
        try:
            uris = list_snapshots(d)
        except Exception as exc:  # an unlistable prefix: the run goes on without
            findings.append(Finding("snapshot_unreadable", f"{d}: {exc}"))
            continue
        for uri in uris:
            m = _STORED.search(uri)
            if m is not None and not first_seq - 1 <= int(m.group(1)) <= last_seq:
                continue
            try:
                out.append(read_snapshot(uri))
            except Exception as exc:  # SnapshotError, ObjectStoreError, I/O
                findings.append(Finding("snapshot_unreadable", f"{uri}: {exc} (not used)",
                                        uri))
    return out, findings


def build_run_history(stored: Iterable[Version], snapshots: Iterable[Snapshot],
                      files: list[tuple[str, int, dict[str, Any] | None, list[Any]]],
                      databases: Iterable[Database] = ()) -> RunHistory:
    """The history of a run.  ``files``: per file of the run in order, (name, seq, facts of
    its Format_description: ``server_version``/``flavor``, DDL events ``(pos, db, sql)``).
    ``stored``, ``databases``: what earlier runs stored (:func:`stored_history`); those of a
    file between the run's files are merged at their positions, as the snapshots are, between
    the DDL statements (:func:`binlake.schema.snapshot.apply_snapshot`)."""
    h = SchemaHistory()
    first = min((seq for _, seq, _, _ in files), default=None)
    events: list[tuple[tuple[int, int], int, Any]] = [
        (snap.start, 0, snap) for snap in snapshots]
    for v in stored:
        if first is None or v.start[0] < first:
            h.add(v)
        else:
            events.append((v.start, 1, v))
    for db in sorted(databases, key=lambda d: d.start or (-2, 0)):
        if first is None or db.start is None or db.start[0] < first:
            h.databases[db.name.lower()] = db
        else:
            events.append((db.start, 1, db))
    out = RunHistory(h)
    seen = {id(v) for _, kind, v in events if kind == 1} | {
        id(v) for vs in h.versions.values() for v in vs}
    for name, seq, fde, ddl in files:
        sv = str((fde or {}).get("server_version") or "")
        mariadb = (fde or {}).get("flavor") == "mariadb" or "mariadb" in sv.lower()
        number = version_number(parse_version(sv)) if sv else 999999
        events += [((seq, pos), 2, (name, db, sql, number, mariadb)) for pos, db, sql in ddl]
    events.sort(key=lambda e: (e[0], e[1]))  # a snapshot at a DDL's position: before it
    before = len(h.findings)
    for at, kind, item in events:
        if kind == 0:
            apply_snapshot(h, item)
        elif kind == 1 and isinstance(item, Database):
            h.databases[item.name.lower()] = item
        elif kind == 1:
            h.add(item)
        else:
            name, db, sql, number, mariadb = item
            apply_ddl(h, sql, db=db, pos=at, file=name, server_version=number,
                      mariadb=mariadb)
    out.seqs = sorted({seq for _, seq, _, _ in files})
    out.new = [v for vs in h.versions.values() for v in vs if id(v) not in seen]
    out.new.sort(key=lambda v: (v.start, v.db.lower(), v.table.lower()))
    out.findings = h.findings[before:]
    return out


def _table_map(rec: dict[str, Any]) -> TableMap:
    """A TableMap from a layout record (:func:`binlake.lake.records.layout_record`)."""
    cols = []
    for d in rec["columns"]:
        members = d.get("members")
        c = Column(int(d["index"]), int(d["binlog_type"]), int(d["binlog_type"]),
                   int(d.get("meta") or 0), bool(d.get("nullable", True)), d.get("name"),
                   bool(d.get("unsigned")), d.get("collation"),
                   tuple(members) if members is not None else None)
        g = d.get("geometry_type")
        c.geometry_type = _GEOMETRY_CODES.get(g, g) if g is not None else None
        c.visible = bool(d.get("visible", True))
        c.vector_dimensions = d.get("vector_dimensions")
        _resolve_meta(c)
        cols.append(c)
    names = [c.name for c in cols]
    pk = rec.get("primary_key")
    pk_idx = [names.index(k) for k in pk if k in names] if pk and rec.get("has_names") \
        else None
    return TableMap(0, rec["db"], rec["tbl"], 0, cols, pk_idx,
                    has_full_metadata=bool(rec.get("has_names")),
                    has_signedness=bool(rec.get("signedness")))


def _record(tm: TableMap, seq: int, pos: int) -> dict[str, Any]:
    names = tm.column_names
    return {"db": tm.db, "tbl": tm.table, "columns": [c.describe() for c in tm.columns],
            "primary_key": [names[i] for i in tm.primary_key] if tm.primary_key else None,
            "has_names": tm.named, "signedness": tm.has_signedness, "seq": seq, "pos": pos}


def with_defaults(rec: dict[str, Any], v: Version) -> dict[str, Any]:
    """A copy of layout record ``rec`` whose columns carry ``default`` (see
    :func:`image_default`) where the version in force ``v`` names a column of that name
    with a known one."""
    by_name = {c.name.lower(): c for c in v.columns or ()}
    cols = []
    for d in rec["columns"]:
        c = by_name.get(str(d.get("name") or "").lower())
        known, value = image_default(c) if c is not None else (False, None)
        cols.append({**d, "default": value} if known else d)
    return {**rec, "columns": cols}


def name_layouts(history: SchemaHistory, layouts: list[dict[str, Any]],
                 fdes: dict[int, dict[str, Any] | None]) -> list[dict[str, Any]]:
    """The survey's layout records with their columns named by ``history`` where the
    Table_map logged no names and agrees with the version in force (as the decode tasks
    name them), plus a record at each version that starts after an earlier layout of the
    table in the same file (a RENAME COLUMN changes no Table_map under MINIMAL metadata).
    ``fdes``: per file seq, its Format_description facts."""
    out: list[dict[str, Any]] = []
    by_table: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for rec in layouts:
        by_table.setdefault((rec["db"], rec["tbl"], int(rec["seq"])), []).append(rec)
    for (db, tbl, seq), recs in by_table.items():
        recs.sort(key=lambda r: int(r["pos"]))
        fde = fdes.get(seq) or {}
        mariadb = fde.get("flavor") == "mariadb"
        sv = parse_version(str(fde.get("server_version") or ""))
        starts = [v.start[1] for v in history.versions.get((db.lower(), tbl.lower()), [])
                  if v.start[0] == seq]
        points = sorted({int(r["pos"]) for r in recs} | {p for p in starts
                                                         if p > int(recs[0]["pos"])})
        k = -1
        for p in points:
            while k + 1 < len(recs) and int(recs[k + 1]["pos"]) <= p:
                k += 1
            raw = recs[k]
            if raw.get("has_names") and int(raw["pos"]) != p:
                continue
            tm = _table_map(raw)
            v = history.at(db, tbl, (seq, p))
            ok = check_table_map(tm, v, mariadb=mariadb, server_version=sv)[0]
            if ok and v is not None:
                out.append(with_defaults(raw if raw.get("has_names") else
                                         _record(named_copy(tm, v), seq, p), v))
            elif int(raw["pos"]) == p:
                out.append(raw)
    out.sort(key=lambda r: (int(r["seq"]), int(r["pos"])))
    return out


def store_versions(spark: Any, settings: Settings, new: list[Version], seqs: list[int],
                   run_id: str, databases: Iterable[Database] = ()) -> int:
    """Replace what earlier runs stored for the files ``seqs`` (the files whose DDL the
    run's history applied, :meth:`RunHistory.to_store`: skipped files given again among
    them, whose versions the run derived again) and for snapshots taken again with the
    run's versions, and the database default character sets the run's files set (rows with
    ``change = 'database'`` at the statement's position); returns the number of rows
    written."""
    table = settings.table(SCHEMA_HISTORY)
    src = lit(settings.source)
    run_seqs = ",".join(str(int(s)) for s in sorted(set(seqs))) or "-2"
    snap = [v for v in new if v.change == "snapshot"]
    cond = f"start_seq IN ({run_seqs})"
    if snap:
        cond += " OR (change = 'snapshot' AND (" + " OR ".join(
            f"(lower(db) = {lit(v.db.lower())} AND lower(tbl) = {lit(v.table.lower())} "
            f"AND start_seq = {v.start[0]} AND start_pos = {v.start[1]})" for v in snap) + "))"
    delete_where(spark, table, f"source = {src} AND ({cond})")
    in_run = set(seqs)
    rows: list[tuple[Any, ...]] = [
        (settings.source, db.name, "", None, None, db.start[0], db.start[1], DATABASE,
         db.exists, None, [], "",
         orjson.dumps({"name": db.name, "charset": db.charset, "collation": db.collation,
                       "exists": db.exists, "seq": db.start[0], "pos": db.start[1]}).decode(),
         run_id)
        for db in databases if db.start is not None and db.start[0] in in_run]
    if not new and not rows:
        return 0
    rows += [(settings.source, v.db, v.table, v.incarnation, v.file, v.start[0], v.start[1],
             v.change, v.exists,
             None if v.columns is None else orjson.dumps([c.to_dict() for c in v.columns]
                                                         ).decode(),
             list(v.primary_key), v.ddl, orjson.dumps(v.to_dict()).decode(), run_id)
            for v in new]
    from .commit import append_rows  # a few rows: written by the driver, no Spark job

    names = [f.name for f in spark.table(table).schema.fields]
    append_rows(spark, settings, table, [dict(zip(names, r)) for r in rows], run_id)
    return len(rows)
