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
"""

from __future__ import annotations

from typing import Any

from ..config import Settings
from .branch import check_branch_name
from .commit import has_branch, java_table
from .tables import FILES
from .typed_plan import WATERMARK


def _tables(spark: Any, settings: Settings) -> list[str]:
    rows = spark.sql(f"SHOW TABLES IN {settings.catalog_name}.{settings.namespace}").collect()
    names = sorted(r["tableName"] for r in rows)
    return [n for n in names if n != FILES] + ([FILES] if FILES in names else [])


def _move_watermarks(jtable: Any, branch: str, keep: bool) -> None:
    """The branch's mirror watermarks become main's (``keep``) or go, in one commit."""
    suffix = f"@{branch}"
    props = jtable.properties()
    moved = [(str(k), str(props.get(k))) for k in props.keySet()
             if str(k).startswith(WATERMARK) and str(k).endswith(suffix)]
    if not moved:
        return
    update = jtable.updateProperties()
    for key, value in moved:
        if keep:
            update = update.set(key[:-len(suffix)], value)
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
    delta = jtable.newRowDelta()
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
