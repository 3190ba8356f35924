"""Lake upkeep (``binlake maintain``; the ``binlake_maintain`` DAG, weekly): what keeps a lake
that is loaded every night as quick to load, validate and read as a new one.

Every night adds to each table it writes: data files (the record tables and changelogs get one
per binlog and table, so that a failed binlog lands nothing: a server that rotates often
leaves hundreds a night), a snapshot, and, for the mirrors, position delete files (the rows
the night's changes replaced).  Left alone, every read plans and opens more files each
night (validation, the mirror MERGE of the next night, analysts' queries) and the metadata
grows without end.  Per table of the lake's namespace, :func:`maintain` runs Iceberg's own
procedures through Spark:

1. ``rewrite_data_files`` (bin-pack): a partition's small files (two or more: Iceberg's
   default waits for five, and a day's partition of a server that rotates once a night
   never gets five) joined into files of the table's target size
   (``write.target-file-size-bytes``, Iceberg's 512 MB), data files with position
   deletes rewritten without the deleted rows, and the delete files that then point at
   nothing dropped (``remove-dangling-deletes``); committed in groups
   (``partial-progress.enabled``), so a kill loses at most the group being written;
2. ``rewrite_position_delete_files``: the delete files left joined;
3. ``expire_snapshots``: snapshots older than ``retain_days`` dropped (at least the newest
   one kept), and the files only they referenced deleted.  Snapshots a branch references
   are kept by Iceberg;
4. the files under the table's data directory that no snapshot references, and those under
   its metadata directory that it no longer uses (``metadata.json`` versions out of its
   metadata log, manifest lists and manifests of no snapshot it keeps), written before the
   lock was taken, deleted (:func:`orphans.sweep_unreferenced`): what a maintenance killed
   inside ``expire_snapshots`` had still to delete (the next load's cleanup takes only files
   written while the killed run held the lock), and the metadata versions of a table made
   before binlake kept only the newest (``tables.METADATA_RETENTION``).  With per-source
   locks (a shared catalog) only those older than three days, as Iceberg's
   ``remove_orphan_files``.

Before those, every table made before ``METADATA_RETENTION`` gets its properties (its
commits from then on delete the ``metadata.json`` versions beyond the newest 100), skipped
tables included.

It holds the load lock (:mod:`binlake.lake.lock`: every configured source's where the lock is
per source), so no load commits meanwhile; its note in the lock file is a load's, so a
maintenance that is killed leaves its unreferenced files to the next load's cleanup
(:mod:`binlake.lake.orphans`), as a killed load does.

A table that has a branch besides ``main`` (a night loaded and not published yet, or one
whose validation failed and waits for a decision) is left alone: a ``main`` moved under it
would turn its publish from a fast-forward into a replay.  So is a mirror that holds a fence
(``binlake.replaying.*``, ``binlake.nopk-applying.*``: a load killed around a write that
must not run twice, :func:`binlake.lake.commit.set_fence`): its rerun tells whether the write
committed by finding the killed load's snapshot in the mirror's history, which a compaction
and ``expire_snapshots`` would take away (the write then applied a second time).  Both are
reported as skipped.
"""

from __future__ import annotations

import logging
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from typing import Any

from ..config import Settings
from .commit import java_table
from .lock import load_lock, lock_is_global
from .orphans import ORPHAN_AGE, sweep_unreferenced
from .tables import METADATA_RETENTION, sql_properties
from .typed_plan import FENCES

log = logging.getLogger(__name__)


@dataclass
class TableUpkeep:
    """What :func:`maintain` did to one table (counts before and after from the table's
    snapshots' summaries and its snapshot list)."""

    table: str
    skipped: str | None = None  # why the table was left alone
    error: str | None = None  # the procedure that failed, and its error
    data_files: tuple[int, int] = (0, 0)  # (before, after) of main's snapshot
    delete_files: tuple[int, int] = (0, 0)
    snapshots: tuple[int, int] = (0, 0)
    rewritten_data_files: int = 0
    added_data_files: int = 0
    removed_delete_files: int = 0
    expired_files: int = 0  # data and delete files deleted with the expired snapshots
    swept_files: int = 0  # files no snapshot references, deleted (a killed run's)
    swept_metadata_files: int = 0  # metadata files the table no longer uses, deleted
    retention_set: bool = False  # METADATA_RETENTION was missing, and set
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def maintain(spark: Any, settings: Settings, *, run_id: str, retain_days: float | None = None,
             tables: list[str] | None = None) -> list[TableUpkeep]:
    """Compact and expire every table of the lake's namespace (or only ``tables``, short
    names), under the load lock (see the module).  ``retain_days``: the snapshots kept for
    time travel (default ``settings.snapshot_retain_days``).  One table's failure is
    recorded in its :class:`TableUpkeep` and the others go on."""
    days = settings.snapshot_retain_days if retain_days is None else retain_days
    if days < 0:
        raise ValueError(f"retain_days: {days} is negative")
    out: list[TableUpkeep] = []
    with ExitStack() as locks:
        for s in lock_settings(settings):
            locks.enter_context(load_lock(s, run_id, killed=_cleanup(spark, s, run_id)))
        locked = time.time()
        # files no snapshot references are garbage when written before the lock was taken
        # (the SQLite catalog's one lock: no other writer since); else Iceberg's margin
        sweep_before = locked if lock_is_global(settings) else locked - ORPHAN_AGE
        for name in _tables(spark, settings, tables):
            out.append(_one(spark, settings, name, days, sweep_before))
    return out


def lock_settings(settings: Settings) -> list[Settings]:
    """The settings whose load locks keep every load of the lake out: the lake's one lock
    (SQLite catalog), else one per configured source."""
    if lock_is_global(settings) or not settings.sources:
        return [settings]
    return [settings.for_source(n) for n in settings.source_names]


def _cleanup(spark: Any, settings: Settings, run_id: str) -> Any:
    """The lock's ``killed`` callback: the files of loads (or maintenances) killed before
    are removed first, as a load does (:func:`binlake.lake.job.after_killed`)."""
    def run(notes: list[str]) -> None:
        from .job import after_killed

        for finding in after_killed(spark, settings, run_id, notes):
            log.warning("%s", finding["message"])
    return run


def _tables(spark: Any, settings: Settings, only: list[str] | None) -> list[str]:
    ns = f"{settings.catalog_name}.{settings.namespace}"
    if not spark.catalog.databaseExists(ns):
        return []
    names = sorted(r.tableName for r in spark.sql(f"SHOW TABLES IN {ns}").collect())
    if only is not None:
        missing = sorted(set(only) - set(names))
        if missing:
            raise ValueError(f"no table {', '.join(missing)} in {ns}")
        names = [n for n in names if n in only]
    return names


def _state(spark: Any, full: str) -> tuple[Any, int, int, int]:
    """(the Java table, data files, delete files, snapshots) as the catalog has it now.  The
    live files are counted in the current snapshot's manifests (their added and existing
    entries), not taken from its summary: a summary's totals are wrong on a lake whose
    nights were published before ``commit.fork_branch`` (see there)."""
    jt = java_table(spark, full)  # (refreshed)
    snap = jt.currentSnapshot()
    data = deletes = 0
    if snap is not None:
        for m in snap.allManifests(jt.io()):
            n = int(m.addedFilesCount() or 0) + int(m.existingFilesCount() or 0)
            if str(m.content()) == "DATA":
                data += n
            else:
                deletes += n
    return jt, data, deletes, sum(1 for _ in jt.snapshots())


def _one(spark: Any, settings: Settings, name: str, days: float,
         sweep_before: float) -> TableUpkeep:
    t0 = time.time()
    full = f"{settings.catalog_name}.{settings.namespace}.{name}"
    ident = f"{settings.namespace}.{name}"
    up = TableUpkeep(full)
    jt, files0, deletes0, snaps0 = _state(spark, full)
    refs = jt.refs()
    branches = sorted(str(b) for b in refs.keySet() if b != "main" and refs.get(b).isBranch())
    up.data_files = (files0, files0)
    up.delete_files = (deletes0, deletes0)
    up.snapshots = (snaps0, snaps0)
    # a table made before binlake set them gets the metadata retention properties (a value
    # set by hand stays); a properties-only commit, harmless to a branch waiting to publish
    props = jt.properties()
    missing = {k: v for k, v in METADATA_RETENTION.items() if not props.containsKey(k)}
    if missing:
        try:
            spark.sql(f"ALTER TABLE {full} SET TBLPROPERTIES ({sql_properties(missing)})")
            up.retention_set = True
        except Exception as exc:
            if not _spark_error(exc):
                raise
            up.error = f"metadata retention: {str(exc).strip().splitlines()[0][:500]}"
            log.warning("maintain: %s: %s", full, up.error)
    fences = sorted(str(k) for k in props.keySet() if str(k).startswith(FENCES))
    if branches:
        up.skipped = f"branch {', '.join(branches)} not published"
    elif fences:
        up.skipped = f"a killed load's write awaits its rerun ({', '.join(fences)})"
    elif jt.currentSnapshot() is None:
        up.skipped = "never written"
    if up.skipped:
        # (a fence left by a killed load is worth a look: its source's next load settles it)
        (log.warning if fences and not branches else log.info)(
            "maintain: %s skipped: %s", full, up.skipped)
        up.seconds = time.time() - t0
        return up
    call = f"CALL {settings.catalog_name}.system"
    step = "rewrite_data_files"
    try:
        r = spark.sql(f"""{call}.rewrite_data_files(table => '{ident}', options => map(
            'min-input-files', '2', 'delete-file-threshold', '1',
            'remove-dangling-deletes', 'true',
            'use-starting-sequence-number', 'false',
            'partial-progress.enabled', 'true'))""").collect()[0]
        up.rewritten_data_files = int(r["rewritten_data_files_count"])
        up.added_data_files = int(r["added_data_files_count"])
        up.removed_delete_files = int(r["removed_delete_files_count"])
        step = "rewrite_position_delete_files"
        if _state(spark, full)[2]:
            r = spark.sql(f"{call}.rewrite_position_delete_files(table => '{ident}')").collect()[0]
            up.removed_delete_files += max(0, int(r["rewritten_delete_files_count"])
                                           - int(r["added_delete_files_count"]))
        step = "expire_snapshots"
        # the cutoff taken now, after the rewrite: with --retain-days 0 the snapshots of
        # its partial-progress commits expire too (each but the last references files the
        # rewrite replaced, which would stay on disk until the next maintenance)
        older_than = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(time.time() - days * 86400.0))
        r = spark.sql(f"{call}.expire_snapshots(table => '{ident}', "
                      f"older_than => TIMESTAMP '{older_than}+00:00', retain_last => 1)").collect()[0]
        up.expired_files = int(r["deleted_data_files_count"]) + int(
            r["deleted_position_delete_files_count"]) + int(
            r["deleted_equality_delete_files_count"])
        step = "sweep"
        swept, swept_meta = sweep_unreferenced(spark, settings, name, sweep_before)
        up.swept_files, up.swept_metadata_files = len(swept), len(swept_meta)
    except Exception as exc:  # a Java or Spark error (Py4J, PySpark): recorded, next table
        if not _spark_error(exc):
            raise
        error = f"{step}: {str(exc).strip().splitlines()[0][:500]}"
        up.error = f"{up.error}; {error}" if up.error else error
        log.warning("maintain: %s: %s", full, error)
    _, files1, deletes1, snaps1 = _state(spark, full)
    up.data_files = (files0, files1)
    up.delete_files = (deletes0, deletes1)
    up.snapshots = (snaps0, snaps1)
    up.seconds = round(time.time() - t0, 2)
    log.info("maintain: %s: data files %d -> %d, delete files %d -> %d, snapshots %d -> %d "
             "(%.1f s)", full, files0, files1, deletes0, deletes1, snaps0, snaps1, up.seconds)
    return up


def _spark_error(exc: BaseException) -> bool:
    """A Java or Spark error (Py4J, PySpark): recorded for its table, and the next one goes
    on; any other is a bug, raised."""
    return any(c.__module__.split(".")[0] in ("py4j", "pyspark") for c in type(exc).__mro__)
