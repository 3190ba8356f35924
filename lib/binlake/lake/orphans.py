"""Data files a killed load left behind: found and removed by the next load.

A load writes data files first (the executors' Parquet files, Spark's own for MERGE and
DELETE) and commits them afterwards; killed in between, its files are in the tables' data
directories but in no snapshot.  Nothing reads them, but they take space.

The next load of the same lake finds out that one was killed from the load lock
(:mod:`binlake.lake.lock`): a load writes its note (run id, source, since when) into the lock
file and clears it when it ends, killed or not -- a note still there when the lock is taken
again is a dead run's.  That load then lists the data directories of the tables loads write
(the record tables, ``typed_layouts``, ``changelog__*`` and ``mirror__*``) and deletes every file that

* no snapshot of the table references (``all_data_files`` and ``all_delete_files``: every
  snapshot of every branch, so a run written on a branch and not published yet keeps its
  files), and
* was written while the dead run could write: at or after its start and before this load
  took the lock; and
* is the dead run's for certain: with the SQLite catalog the lock is one per lake, so no
  other load wrote then; with any other catalog the lock is per source, so only the files
  whose name carries the dead run's id (the executors' files) qualify, and Spark's own files
  of that time only when older than :data:`ORPHAN_AGE`, when no live load can still be
  writing them.

A run killed while it created a table may have written the table's first
``metadata.json`` and not registered the table: that directory (in the namespace's
location, named as a table loads write, the catalog without such a table) is no table's,
and the same rules pick its files.

Tables with no file of that time are not asked for their file lists: after a kill, the
cost is one directory listing per table and two metadata queries per table the dead run
wrote into.  A load that was not preceded by a killed one does none of this.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..config import Settings
from .sink import fs_path
from .tables import DDL

log = logging.getLogger(__name__)

ORPHAN_AGE = 3 * 86400.0  # Iceberg's own default for remove_orphan_files
SLACK = 5.0  # seconds: file times and the note's time come from different clocks
LOADED_TABLES = re.compile(r"^(changelog__|mirror__|typed_layouts$)")


@dataclass(frozen=True)
class DeadRun:
    """What the lock file said of a load that did not finish (see :mod:`.lock`)."""

    run_id: str
    source: str
    since: float  # epoch seconds

    @classmethod
    def parse(cls, note: str) -> DeadRun | None:
        m = re.search(r"run (\S+), source (.*), since (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)",
                      note)
        if m is None:
            return None
        import calendar

        since = calendar.timegm(time.strptime(m.group(3), "%Y-%m-%dT%H:%M:%SZ"))
        return cls(m.group(1), m.group(2), float(since))


def _loaded_tables(spark: Any, settings: Settings) -> list[str]:
    """The tables loads write (none while the namespace does not exist: a load killed
    before it made any)."""
    spaces = spark.sql(f"SHOW NAMESPACES IN {settings.catalog_name}").collect()
    if settings.namespace not in {r[0] for r in spaces}:
        return []
    rows = spark.sql(f"SHOW TABLES IN {settings.catalog_name}.{settings.namespace}").collect()
    return sorted(r["tableName"] for r in rows
                  if r["tableName"] in DDL or LOADED_TABLES.match(r["tableName"]))


def _referenced(spark: Any, table: str) -> set[str]:
    """The data and delete files of every snapshot of every branch of ``table``."""
    rows = spark.sql(f"SELECT file_path FROM {table}.all_data_files UNION "
                     f"SELECT file_path FROM {table}.all_delete_files").collect()
    return {fs_path(r[0]) for r in rows}


# The metadata directory's files that a commit writes: ``NNNNN-<uuid>.metadata.json`` (the
# table's versions), ``snap-*.avro`` (a snapshot's manifest list) and ``<uuid>-mN.avro``
# (manifests).  Any other file there (statistics, a hint) is never swept.
METADATA_FILE = re.compile(r"(\.metadata\.json(\.gz)?|\.avro)$")


def _referenced_metadata(spark: Any, table: str, current: str) -> set[str]:
    """The metadata files ``table`` still uses: its ``current`` ``metadata.json`` and those
    of its metadata log (what ``write.metadata.previous-versions-max`` keeps), the manifest
    list of every snapshot it keeps (every branch's), and every manifest those list."""
    rows = spark.sql(f"SELECT file FROM {table}.metadata_log_entries UNION "
                     f"SELECT manifest_list FROM {table}.snapshots UNION "
                     f"SELECT path FROM {table}.all_manifests").collect()
    return {fs_path(r[0]) for r in rows if r[0]} | {fs_path(current)}


def remove_orphans(spark: Any, settings: Settings, dead: DeadRun, started: float,
                   *, global_lock: bool, staging: str | None = None) -> list[str]:
    """Delete the data files ``dead`` left (see the module), and its directory of staged
    mirror deltas under ``staging`` (the parent of the runs' staging directories, named
    ``<run id>-<random>``); ``started``: when this load took the lock; ``global_lock``: the
    lock is one per lake (SQLite catalog).  Returns the paths deleted.  Best effort: a file
    that cannot be listed or deleted stays."""
    import os
    import shutil

    removed: list[str] = []
    if staging is not None and os.path.isdir(staging):
        for name in os.listdir(staging):
            if name.startswith(f"{dead.run_id}-"):
                shutil.rmtree(os.path.join(staging, name), ignore_errors=True)
                removed.append(os.path.join(staging, name))
    now = time.time()

    def theirs(mtime: float, base_name: str) -> bool:
        if not dead.since - SLACK <= mtime < started + SLACK:
            return False
        return (global_lock or f"-{dead.run_id}-" in base_name
                or now - mtime > ORPHAN_AGE)

    tables = _loaded_tables(spark, settings)
    for name in tables:
        removed += _delete_unreferenced(spark, settings, name, theirs, "a killed run's files")
        removed += _delete_unreferenced(spark, settings, name, theirs,
                                        "a killed run's metadata files", metadata=True)
    removed += _delete_uncatalogued(spark, settings, tables, theirs)
    if removed:
        log.warning("removed %d file(s) that the killed run %s (source %s) had written "
                    "and not committed", len(removed), dead.run_id, dead.source)
    return removed


def _namespace_location(spark: Any, settings: Settings, tables: list[str]) -> str | None:
    """Where the catalog puts the namespace's new tables: the parent of a table's location
    (any of ``tables``), else the warehouse's ``<namespace>`` directory; None for a REST
    catalog without tables (its server chooses locations)."""
    from .commit import java_table

    if tables:
        location: str = java_table(spark, settings.table(tables[0])).location()
        return location.rstrip("/").rsplit("/", 1)[0]
    if settings.catalog_type == "rest":
        return None
    return settings.warehouse_resolved.rstrip("/") + "/" + settings.namespace


def _delete_uncatalogued(spark: Any, settings: Settings, tables: list[str],
                         chosen: Callable[[float, str], bool]) -> list[str]:
    """Delete the files that ``chosen(mtime, base name)`` picks under the directories of
    tables the catalog does not have (named as the tables loads write, in the namespace's
    location): a run killed while it created a table has written the table's first
    ``00000-<uuid>.metadata.json`` and not registered it, and the next run's CREATE writes
    another beside it.  A directory left empty goes too.  Best effort, as
    :func:`_delete_unreferenced`."""
    import pyarrow.fs as pafs

    from .sink import data_filesystem

    location = _namespace_location(spark, settings, tables)
    if location is None:
        return []
    try:
        fs, base = data_filesystem(location, settings.s3_endpoint_url)
        dirs = [i for i in fs.get_file_info(pafs.FileSelector(base, allow_not_found=True))
                if i.type == pafs.FileType.Directory and i.base_name not in tables
                and (i.base_name in DDL or LOADED_TABLES.match(i.base_name))]
    except OSError as exc:
        log.warning("cannot list %s for a killed run's new tables: %s", location, exc)
        return []
    removed = []
    for d in dirs:
        try:
            infos = fs.get_file_info(pafs.FileSelector(d.path, recursive=True))
        except OSError as exc:
            log.warning("cannot list %s for a killed run's new tables: %s", d.path, exc)
            continue
        files = [i for i in infos if i.type == pafs.FileType.File]
        gone = 0
        for info in files:
            if info.mtime is None or not chosen(info.mtime.timestamp(), info.base_name):
                continue
            try:
                fs.delete_file(info.path)
            except OSError as exc:
                log.warning("cannot delete %s: %s", info.path, exc)
                continue
            gone += 1
            if not info.base_name.startswith("."):  # (not a checksum file)
                removed.append(info.path)
        if gone == len(files):
            with contextlib.suppress(OSError):
                fs.delete_dir(d.path)
    return removed


def sweep_unreferenced(spark: Any, settings: Settings, name: str, before: float
                       ) -> tuple[list[str], list[str]]:
    """Delete the files under table ``name``'s data directory that no snapshot of any branch
    references, and the files under its metadata directory that the table no longer uses
    (:func:`_referenced_metadata`), last written before ``before`` (epoch seconds): what a
    killed ``expire_snapshots`` had still to delete, a run's uncommitted files, the
    ``metadata.json`` versions of a lake made before ``tables.METADATA_RETENTION``.  For
    :mod:`binlake.lake.maintain`, holding every load's lock: ``before`` is when it took them
    (SQLite catalog: no other writer then), else :data:`ORPHAN_AGE` ago, as Iceberg's own
    ``remove_orphan_files`` (a load of a source the configuration does not name takes a lock
    of its own and may be writing).  Returns the paths deleted (data files, metadata
    files).  Best effort."""
    def old(mtime: float, _: str) -> bool:
        return mtime < before - SLACK

    removed = _delete_unreferenced(spark, settings, name, old, "unreferenced files")
    if removed:
        log.warning("%s: removed %d data file(s) no snapshot references",
                    settings.table(name), len(removed))
    meta = _delete_unreferenced(spark, settings, name, old, "unused metadata files",
                                metadata=True)
    if meta:
        log.info("%s: removed %d metadata file(s) the table no longer uses",
                 settings.table(name), len(meta))
    return removed, meta


def _delete_unreferenced(spark: Any, settings: Settings, name: str,
                         chosen: Callable[[float, str], bool], purpose: str, *,
                         metadata: bool = False) -> list[str]:
    """Delete the files under table ``name``'s data directory that ``chosen(mtime, base
    name)`` picks and no snapshot of any branch references (``_referenced``, read only
    when some file is picked); with ``metadata``, the files of its metadata directory that
    :data:`METADATA_FILE` names, ``chosen`` picks and the table no longer uses
    (``_referenced_metadata``).  Returns the paths deleted; a directory that cannot be
    listed, or a file that cannot be deleted, is logged and left."""
    import pyarrow.fs as pafs

    from .commit import java_table
    from .sink import data_filesystem

    table = settings.table(name)
    jtable = java_table(spark, table)
    location = jtable.location().rstrip("/") + ("/metadata" if metadata else "/data")
    try:
        fs, base = data_filesystem(location, settings.s3_endpoint_url)
        infos = fs.get_file_info(pafs.FileSelector(base, recursive=True, allow_not_found=True))
    except OSError as exc:
        log.warning("%s: cannot list %s for %s: %s", table, location, purpose, exc)
        return []
    candidates = [i for i in infos if i.type == pafs.FileType.File and i.mtime is not None
                  and not i.base_name.startswith(".")  # (a checksum: with its file, below)
                  and (not metadata or METADATA_FILE.search(i.base_name))
                  and chosen(i.mtime.timestamp(), i.base_name)]
    if not candidates:
        return []
    referenced = (_referenced_metadata(spark, table,
                                       jtable.operations().current().metadataFileLocation())
                  if metadata else _referenced(spark, table))
    listed = {i.path for i in infos}
    removed = []
    for info in candidates:
        if info.path in referenced:
            continue
        try:
            fs.delete_file(info.path)
            removed.append(info.path)
        except OSError as exc:
            log.warning("%s: cannot delete %s: %s", table, info.path, exc)
            continue
        # Hadoop's local file system writes a checksum beside each file: ``.<name>.crc``
        crc = f"{info.path[:-len(info.base_name)]}.{info.base_name}.crc"
        if crc in listed:
            with contextlib.suppress(OSError):
                fs.delete_file(crc)
    return removed
