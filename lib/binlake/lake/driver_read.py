"""Small reads of a lake table on the driver, without a Spark job (:func:`read_rows`): the
snapshot Spark would read (the write-audit-publish branch's when one is set and exists, else
main's), planned and read by pyiceberg from that table's current metadata file.

The catalog is asked only through Spark's connection (the Java table, as every commit does: a
second SQLite client would meet "database is locked"); pyiceberg reads the metadata, manifest
and data files themselves, which are immutable.  For the load's small lookups (which files
are loaded, the stored schema history, the pending XAs): a Spark job costs 0.3-1 s each,
this a few tens of milliseconds.  Position deletes are applied (pyiceberg's scan); binlake
writes no equality deletes.
"""

from __future__ import annotations

from typing import Any

from ..config import Settings
from .commit import has_branch, java_table


def io_properties(settings: Settings) -> dict[str, str]:
    """pyiceberg FileIO properties of the warehouse: the S3 endpoint, and the ``s3.*``
    catalog properties (credentials come from the environment, as for the executors)."""
    props = {k: v for k, v in settings.catalog_properties.items() if k.startswith("s3.")}
    if settings.s3_endpoint_url:
        props["s3.endpoint"] = settings.s3_endpoint_url
    return props


def read_rows(spark: Any, settings: Settings, table: str, row_filter: Any,
              columns: tuple[str, ...], branch: str | None = None) -> Any:
    """The rows of ``table`` (a full name) matching ``row_filter`` (a pyiceberg expression,
    or its filter text: ``source = 'x' AND status = 'loaded'``), only ``columns``: an Arrow
    table (empty, with those columns, when the table was never written).  ``branch``: read
    that branch when the table has it (default: the load's write-audit-publish branch when
    one is set), else main."""
    static, scan = _scan(spark, table, io_properties(settings), row_filter, columns, branch)
    if scan is None:
        from pyiceberg.io.pyarrow import schema_to_pyarrow

        return schema_to_pyarrow(static.schema().select(*columns)).empty_table()
    return scan.to_arrow()


def count_rows(spark: Any, settings: Settings, table: str, row_filter: Any,
               columns: tuple[str, ...], *, snapshot_id: int | None = None
               ) -> dict[tuple[Any, ...], int]:
    """Rows of ``table`` matching ``row_filter``, counted per value of ``columns``, read
    on the driver one record batch at a time (memory bounded by a batch, not the rows: a
    night's ``row_changes`` are millions).  The snapshot: ``snapshot_id`` when given, else
    the one Spark reads (:func:`_snapshot`)."""
    from collections import Counter

    import pyarrow as pa

    _, scan = _scan(spark, table, io_properties(settings), row_filter, columns,
                    snapshot_id=snapshot_id)
    if scan is None:
        return {}
    out: Counter[tuple[Any, ...]] = Counter()
    for batch in scan.to_arrow_batch_reader():
        if not batch.num_rows:
            continue
        agg = pa.Table.from_batches([batch]).group_by(list(columns)).aggregate(
            [([], "count_all")])
        for row in agg.to_pylist():
            out[tuple(row[c] for c in columns)] += row["count_all"]
    return dict(out)


def plan_matches(spark: Any, table: str, condition: str) -> bool | None:
    """Whether the snapshot Spark would read of ``table`` has a data file that may hold a
    row matching ``condition`` (SQL of the simple kind: comparisons, IN, IS NULL, AND, OR),
    from Iceberg's plan by pyiceberg (partition values and column statistics; no file is
    read).  False when the table has no snapshot there; None when pyiceberg cannot tell
    (its parser does not take the condition, or the plan fails): ask Spark."""
    import os

    try:
        from pyiceberg.expressions.parser import parse

        expr = parse(condition)
        props = {}
        if os.environ.get("BINLAKE_S3_ENDPOINT_URL"):  # (set by build_session)
            props["s3.endpoint"] = os.environ["BINLAKE_S3_ENDPOINT_URL"]
        _, scan = _scan(spark, table, props, expr)
        return scan is not None and any(True for _ in scan.plan_files())
    except Exception:  # any doubt: Spark's plan decides
        return None


def _scan(spark: Any, table: str, props: dict[str, str], row_filter: Any,
          columns: tuple[str, ...] = ("*",), branch: str | None = None,
          snapshot_id: int | None = None) -> tuple[Any, Any]:
    """(the pyiceberg table of ``table``'s current metadata, its scan of ``snapshot_id`` or
    else the snapshot Spark reads, :func:`_snapshot`: None when never written there)."""
    from pyiceberg.table import StaticTable

    jtable = java_table(spark, table)
    if snapshot_id is None:
        snap = _snapshot(spark, jtable, branch)
        snapshot_id = None if snap is None else int(snap.snapshotId())
    static = StaticTable.from_metadata(
        jtable.operations().current().metadataFileLocation(), properties=props)
    if snapshot_id is None:
        return static, None
    return static, _scan_class()(table_metadata=static.metadata, io=static.io,
                                 row_filter=row_filter, selected_fields=columns,
                                 snapshot_id=snapshot_id)


# branch_base(): the branch's head, and where it left main (None: the table was created on
# the branch, or main has no snapshot the branch descends from)
BranchBase = tuple[int, int | None]


def branch_base(spark: Any, table: str, branch: str) -> BranchBase | None:
    """(``branch``'s head snapshot, the snapshot it was forked from) of ``table`` (a full
    name), read from the table's metadata without a Spark job; None when the table has no
    such branch.  The fork point is the newest ancestor of the branch's head that is also an
    ancestor of main (main may have moved on since: another source's night published), or
    None when there is none (the table did not exist on main when the branch was made).
    Raises LookupError when an ancestor on the way has expired from the metadata: the fork
    point cannot be known."""
    jtable = java_table(spark, table)
    if not has_branch(jtable, branch):
        return None
    head = jtable.snapshot(branch)

    def parent(snap: Any) -> Any:
        pid = snap.parentId()
        if pid is None:
            return None
        found = jtable.snapshot(int(pid))
        if found is None:
            raise LookupError(f"{table}: snapshot {int(pid)} (an ancestor of branch "
                              f"{branch}) has expired")
        return found

    on_main: set[int] = set()
    snap = jtable.currentSnapshot()
    while snap is not None:
        on_main.add(int(snap.snapshotId()))
        pid = snap.parentId()
        snap = None if pid is None else jtable.snapshot(int(pid))
    snap = head
    while snap is not None:
        if int(snap.snapshotId()) in on_main:
            return int(head.snapshotId()), int(snap.snapshotId())
        snap = parent(snap)
    return int(head.snapshotId()), None


def _snapshot(spark: Any, jtable: Any, branch: str | None = None) -> Any:
    """The snapshot Spark reads: ``branch``'s (default: the write-audit-publish branch, when
    one is set) when the table has it, else main's (None: never written there)."""
    branch = branch or spark.conf.get("spark.wap.branch", None)
    return (jtable.snapshot(branch) if branch and has_branch(jtable, branch)
            else jtable.currentSnapshot())


def _scan_class() -> Any:
    """pyiceberg's scan, reading a snapshot with the table's current schema, as Spark reads a
    branch's or main's snapshot (pyiceberg's own takes the schema the snapshot was written
    with: a column dropped and added again since would come back with its old values)."""
    from pyiceberg.schema import Schema
    from pyiceberg.table import DataScan

    class CurrentSchemaScan(DataScan):
        def projection(self) -> Schema:
            schema = self.table_metadata.schema()
            if "*" in self.selected_fields:
                return schema
            return schema.select(*self.selected_fields, case_sensitive=self.case_sensitive)

    return CurrentSchemaScan


# pyiceberg's filter expressions, built here (its classes' annotations are pydantic's: mypy
# does not take their plain positional arguments): equal, less than, not null, and / or.

def _expressions() -> Any:
    from pyiceberg import expressions

    return expressions


def eq(column: str, value: Any) -> Any:
    return _expressions().EqualTo(column, value)


def lt(column: str, value: Any) -> Any:
    return _expressions().LessThan(column, value)


def is_in(column: str, values: Any) -> Any:
    return _expressions().In(column, set(values))


def not_null(column: str) -> Any:
    return _expressions().NotNull(column)


def all_of(*exprs: Any) -> Any:
    from functools import reduce

    return reduce(_expressions().And, exprs)


def any_of(*exprs: Any) -> Any:
    from functools import reduce

    return reduce(_expressions().Or, exprs)
