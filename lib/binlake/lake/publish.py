"""Write-audit-publish: a load writes on an Iceberg branch, the checks read that branch, and
publishing makes it what analysts read (``main``); a run whose checks fail is discarded.

Every binlake table is created with ``write.wap.enabled``; :func:`binlake.lake.job.run_load`
with ``branch=B`` writes all of them on ``B`` (created from ``main`` by the first write).
:func:`publish` makes each table's ``main`` hold ``B``'s changes and drops ``B`` -- ``files``
last, so a file is never shown as loaded before its rows are visible.  Publishing again, or
after a crash halfway, finishes what is left.

Two ways, per table:

* ``main`` did not move since ``B`` was made (its head is an ancestor of ``B``'s): ``main``
  is fast-forwarded to ``B`` (``CALL system.fast_forward``).
* ``main`` moved: another source's night was published meanwhile (the sources share the
  tables; a night of source S writes, deletes and rewrites only S's rows, in files that hold
  only S's rows).  ``B``'s snapshots since the fork are *replayed* onto ``main``: the data and
  delete files they added, net of what they removed again, are added, and the files they
  removed are removed, in one ``RowDelta`` commit (so ``main`` = the other sources' new rows
  + S's rows as on ``B``).  The commit validates from the fork that no data file holding
  S's rows (``source`` / ``_source`` column, by file statistics) was added to ``main``
  meanwhile and that the files it removes are still there: an overlapping night *of the
  same source* fails loudly, as the fast-forward did, and nothing is overwritten.  The
  commit records ``binlake.published-branch`` / ``binlake.published-snapshot``, so a
  publish that crashed after it does not replay it twice.

What is not per branch in Iceberg: table schemas (a column a run added is visible on main,
empty, before publishing) and table properties (the mirror watermark is therefore kept
under a per-branch key and moved to the main key here).

**Without a JVM.** :func:`publish_in_catalog` does the fast-forwards through the catalog's own
API (pyiceberg: the SQL catalog, REST, Hive, Glue), each table's in one commit: ``main`` set
to the branch's head (asserting ``main`` is still where it was checked), the watermarks
moved, the branch dropped.  A night's publish thus takes about a second instead of a Spark
session's start (about 4 s).  The tables it cannot finish (``main`` moved: a replay; or an
error of pyiceberg's) are left to :func:`publish`, with ``files`` after them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from ..config import Settings
from .branch import check_branch_name
from .commit import has_branch, in_this_thread, java_table
from .tables import FILES
from .typed_plan import ALTERED, APPLYING, REPLAYING, WATERMARK

log = logging.getLogger("binlake.lake")


def _tables(spark: Any, settings: Settings) -> list[str]:
    rows = spark.sql(f"SHOW TABLES IN {settings.catalog_name}.{settings.namespace}").collect()
    names = sorted(r["tableName"] for r in rows)
    return [n for n in names if n != FILES] + ([FILES] if FILES in names else [])


def _watermark_keys(keys: Iterable[str], branch: str) -> dict[str, str]:
    """The branch's mirror watermark properties among ``keys`` (and the ALTER replays'
    markers, alters.py), each with main's key."""
    suffix = f"@{branch}"
    return {k: k[:-len(suffix)] for k in keys
            if k.startswith((WATERMARK, ALTERED, REPLAYING, APPLYING)) and k.endswith(suffix)}


def _move_watermarks(jtable: Any, branch: str, keep: bool) -> None:
    """The branch's mirror watermarks become main's (``keep``) or go, in one commit."""
    props = jtable.properties()
    moved = _watermark_keys((str(k) for k in props.keySet()), branch)
    if not moved:
        return
    update = jtable.updateProperties()
    for key, main_key in moved.items():
        if keep:
            update = update.set(main_key, str(props.get(key)))
        update = update.remove(key)
    update.commit()


def publish(spark: Any, settings: Settings, branch: str) -> list[str]:
    """Make ``branch`` the published state of every table that has it; returns the tables
    published (none: nothing was written on that branch, or it was published already)."""
    return _finish(spark, settings, branch, keep=True)


def discard(spark: Any, settings: Settings, branch: str) -> list[str]:
    """Drop ``branch`` everywhere (a run whose checks failed): main is untouched, and the
    run's files are loaded again by the next run."""
    return _finish(spark, settings, branch, keep=False)


def _finish(spark: Any, settings: Settings, branch: str, keep: bool) -> list[str]:
    check_branch_name(branch)
    if spark.conf.get("spark.wap.branch", None):
        spark.conf.unset("spark.wap.branch")
    # Through the Iceberg Java API of the catalog Spark holds: no Spark job per table (a
    # publish of ~20 tables was ~80 SQL statements and 20 jobs over the refs tables).
    def one(name: str) -> str | None:
        table = settings.table(name)
        jtable = java_table(spark, table)
        if not has_branch(jtable, branch):
            return None
        if keep:
            _publish_table(spark, settings, name, branch, jtable)
        _move_watermarks(jtable, branch, keep)
        jtable.manageSnapshots().removeBranch(branch).commit()
        spark.sql(f"REFRESH TABLE {table}")
        return name

    # The tables but ``files`` a few at once (their commits queue for the catalog's
    # connection), then ``files``: a file shows as loaded only once its rows are published.
    from concurrent.futures import ThreadPoolExecutor

    names = _tables(spark, settings)
    with ThreadPoolExecutor(max_workers=settings.typed_parallelism) as pool:
        done = [n for n in pool.map(one, [n for n in names if n != FILES]) if n]
    if FILES in names and one(FILES):
        done.append(FILES)
    return done


def publish_or_discard(settings: Settings, branch: str, keep: bool,
                       session: Callable[[], Any]) -> tuple[list[str], bool]:
    """``binlake publish`` (``keep``) or ``--discard``: the fast-forwards through the catalog
    (:func:`publish_in_catalog`), then the tables left, if any, through Spark (``session()``
    gives it, started only then). Returns the tables published or discarded, and whether
    Spark was needed."""
    check_branch_name(branch)
    try:
        quick = publish_in_catalog(settings, branch, keep)
    except Exception as exc:  # no pyiceberg route to this catalog: all of it through Spark
        log.warning("publish: the catalog through pyiceberg: %s; all through Spark", exc)
        quick = None
    done, left = quick if quick is not None else ([], None)
    if left is not None and not left:
        return done, False
    return done + _finish(session(), settings, branch, keep), True


def publish_in_catalog(settings: Settings, branch: str, keep: bool = True
                       ) -> tuple[list[str], list[str]] | None:
    """:func:`publish` (``keep``) or :func:`discard` of ``branch`` through pyiceberg, without
    Spark: returns the tables finished here and those left for :func:`publish` / :func:`discard`
    (in order, ``files`` last of them when any is left), or None when the catalog has no
    pyiceberg route (``hadoop``).  A table is left when ``main`` moved since the branch was
    made (a replay) or pyiceberg failed on it; each table is one commit, so a crash between
    them leaves every table either published or not, and publishing again finishes."""
    check_branch_name(branch)
    if settings.catalog_type == "hadoop":
        return None
    from .spark import pyiceberg_catalog

    catalog = pyiceberg_catalog(settings)
    names = sorted(str(t[-1]) for t in catalog.list_tables(settings.namespace))
    done: list[str] = []
    left: list[str] = []
    for name in [n for n in names if n != FILES] + ([FILES] if FILES in names else []):
        if name == FILES and left:
            left.append(name)  # a file shows as loaded only once its rows are published
            break
        try:
            finished = _finish_in_catalog(catalog.load_table((settings.namespace, name)),
                                          branch, keep)
        except Exception as exc:  # (a CommitFailedException: main moved meanwhile)
            log.warning("publish: %s of %s through the catalog: %s; left to Spark",
                        branch, name, exc)
            left.append(name)
            continue
        if finished is None:
            left.append(name)
        elif finished:
            done.append(name)
    return done, left


def _finish_in_catalog(table: Any, branch: str, keep: bool) -> bool | None:
    """One pyiceberg table: True when published (or discarded) here in one commit, False when
    it has no such branch, None when ``main`` moved since the branch was made."""
    from pyiceberg.table.refs import SnapshotRefType
    from pyiceberg.table.snapshots import ancestors_of
    from pyiceberg.table.update.snapshot import ManageSnapshots

    meta = table.metadata
    ref = meta.refs.get(branch)
    if ref is None or ref.snapshot_ref_type != SnapshotRefType.BRANCH:
        return False
    tx = table.transaction()
    snapshots = ManageSnapshots(tx)
    if keep:
        main = meta.refs.get("main")
        head = meta.snapshot_by_id(ref.snapshot_id)
        if main is not None and (head is None or all(
                s.snapshot_id != main.snapshot_id for s in ancestors_of(head, meta))):
            return None
        # (asserts main is still main.snapshot_id, or still absent, when committed)
        snapshots.set_current_snapshot(snapshot_id=ref.snapshot_id)
    snapshots.remove_branch(branch)
    snapshots.commit()  # (staged into tx: one commit with the properties below)
    moved = _watermark_keys(meta.properties, branch)
    if moved:
        if keep:
            tx.set_properties({main_key: meta.properties[key]
                               for key, main_key in moved.items()})
        tx.remove_properties(*moved)
    tx.commit_transaction()
    return True


PUBLISHED_BRANCH = "binlake.published-branch"
PUBLISHED_SNAPSHOT = "binlake.published-snapshot"


def _publish_table(spark: Any, settings: Settings, name: str, branch: str,
                   jtable: Any | None = None) -> str:
    """Make ``main`` of table ``name`` hold ``branch``'s changes: ``"fast_forward"``,
    ``"replayed"`` (``main`` had moved: see the module) or ``"done"`` (replayed already)."""
    table = settings.table(name)
    jtable = jtable if jtable is not None else java_table(spark, table)
    util = spark._jvm.org.apache.iceberg.util.SnapshotUtil
    head = jtable.snapshot(branch)
    main = jtable.currentSnapshot()
    if main is None or util.isAncestorOf(jtable, head.snapshotId(), main.snapshotId()):
        # (what CALL system.fast_forward does: main is made if the table has none yet)
        jtable.manageSnapshots().fastForwardBranch("main", branch).commit()
        return "fast_forward"
    own, snap = [], head  # the branch's snapshots since the fork, newest first
    while snap is not None and not util.isAncestorOf(jtable, main.snapshotId(),
                                                     snap.snapshotId()):
        own.append(snap)
        parent = snap.parentId()
        snap = jtable.snapshot(parent) if parent is not None else None
    fork = snap.snapshotId() if snap is not None else None
    for s in _main_since(jtable, main, fork):
        summary = s.summary()
        if summary.get(PUBLISHED_BRANCH) == branch and \
                summary.get(PUBLISHED_SNAPSHOT) == str(head.snapshotId()):
            return "done"  # a publish that crashed before dropping the branch
    data: tuple[dict[str, Any], dict[str, Any]] = ({}, {})  # (added, removed) by location
    deletes: tuple[dict[str, Any], dict[str, Any]] = ({}, {})
    io = jtable.io()
    for s in reversed(own):
        for (added, removed), adds, removes in (
                (data, s.addedDataFiles(io), s.removedDataFiles(io)),
                (deletes, s.addedDeleteFiles(io), s.removedDeleteFiles(io))):
            for f in _files(removes):
                loc = str(f.location())
                if added.pop(loc, None) is None:
                    removed[loc] = f
            for f in _files(adds):
                added[str(f.location())] = f
    if not any((*data, *deletes)):
        return "fast_forward"  # nothing written on the branch: main stays
    delta = in_this_thread(spark, jtable.newRowDelta())
    if fork is not None:
        delta = delta.validateFromSnapshot(fork)
    column = next((c for c in ("source", "_source") if jtable.schema().findField(c)), None)
    if column is not None:
        expr = spark._jvm.org.apache.iceberg.expressions.Expressions
        delta = delta.conflictDetectionFilter(expr.equal(column, settings.source)) \
            .validateNoConflictingDataFiles()
    delta = delta.validateDeletedFiles()
    for f in data[0].values():
        delta = delta.addRows(f)
    for f in data[1].values():
        delta = delta.removeRows(f)
    for f in deletes[0].values():
        delta = delta.addDeletes(f)
    for f in deletes[1].values():
        delta = delta.removeDeletes(f)
    delta.set(PUBLISHED_BRANCH, branch).set(PUBLISHED_SNAPSHOT, str(head.snapshotId()))
    delta.commit()
    spark.sql(f"REFRESH TABLE {table}")
    return "replayed"


def _main_since(jtable: Any, main: Any, fork: int | None) -> list[Any]:
    """``main``'s snapshots after ``fork`` (all of them when None), newest first."""
    out, snap = [], main
    while snap is not None and snap.snapshotId() != fork:
        out.append(snap)
        parent = snap.parentId()
        snap = jtable.snapshot(parent) if parent is not None else None
    return out


def _files(iterable: Any) -> list[Any]:
    """A Java ``Iterable`` of content files as a list."""
    it, out = iterable.iterator(), []
    while it.hasNext():
        out.append(it.next())
    return out
