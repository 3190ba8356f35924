"""Commits to the catalog: where executors write a table's data files (:func:`table_out`) and
the one Iceberg append that adds them (:func:`add_data_files`), through Spark's catalog in this
JVM."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..config import Settings
from .sink import DataSink, TableOut, data_filesystem, fs_path

# Java classes of a session's JVM, looked up once (a lookup by attribute, ``spark._jvm.org.
# apache...``, is a round trip to the JVM per name in the path: a few milliseconds, paid by
# every table of every run otherwise): (gateway, dotted name) -> (gateway, class)
_CLASSES: dict[tuple[int, str], tuple[Any, Any]] = {}


def jclass(spark: Any, dotted: str) -> Any:
    """The Java class (or package, if there is no such class) ``dotted`` in the session's
    JVM, looked up once per JVM."""
    def find() -> Any:
        found = spark._jvm
        for part in dotted.split("."):
            found = getattr(found, part)
        return found

    return _once(spark, dotted, find)


def _once(spark: Any, name: str, make: Any) -> Any:
    """``make()``, made once per JVM (a Java class, or an immutable Java object) and kept
    under ``name``."""
    gateway = spark.sparkContext._gateway
    got = _CLASSES.get((id(gateway), name))
    if got is None or got[0] is not gateway:
        got = _CLASSES[(id(gateway), name)] = (gateway, make())
    return got[1]


def table_out(spark: Any, name: str) -> TableOut:
    """Where and how executors write data files of table ``name`` (a full name): its data
    directory, as the catalog knows it, its Arrow schema (Iceberg field ids included) and
    its partition fields."""
    import json

    from pyiceberg.io.pyarrow import schema_to_pyarrow
    from pyiceberg.schema import Schema

    jtable = java_table(spark, name)
    schema = Schema.model_validate_json(
        jclass(spark, "org.apache.iceberg.SchemaParser").toJson(jtable.schema()))
    partition = []
    # (the spec as JSON: one round trip, where its fields' Java list would take several)
    spec = json.loads(jclass(spark, "org.apache.iceberg.PartitionSpecParser").toJson(
        jtable.spec()))
    for pf in spec["fields"]:
        transform = pf["transform"]
        if transform not in ("identity", "day"):
            raise ValueError(f"{name}: partition transform {transform} "
                             "is not one binlake writes")
        column = schema.find_column_name(pf["source-id"])
        if column is None:
            raise ValueError(f"{name}: partition field {pf['name']} has no source column")
        partition.append((column, transform))
    location = jtable.locationProvider().newDataLocation("x").rsplit("/", 1)[0]
    return TableOut(location, schema_to_pyarrow(schema), tuple(partition))


def java_table(spark: Any, name: str) -> Any:
    """The Iceberg Java ``Table`` behind a Spark table name (fresh from the catalog)."""
    refresh_table(spark, name)
    return jclass(spark, "org.apache.iceberg.spark.Spark3Util").loadIcebergTable(
        spark._jsparkSession, name)


def refresh_table(spark: Any, name: str) -> None:
    """Drop table ``name`` (a full name) from its Spark catalog's cache, so that the next
    read or load of it (Spark's or :func:`java_table`'s) sees the catalog's current
    metadata: what ``REFRESH TABLE`` does to the catalog, without a SQL statement (about
    2 ms against 11-14 ms; binlake caches no table's data in Spark for it to re-cache)."""
    util = jclass(spark, "org.apache.iceberg.spark.Spark3Util")
    found = util.catalogAndIdentifier(spark._jsparkSession, name)
    found.catalog().invalidateTable(found.identifier())


def has_branch(jtable: Any, branch: str) -> bool:
    """Whether the Iceberg Java table has a branch (not a tag) of that name."""
    ref = jtable.refs().get(branch)
    return ref is not None and bool(ref.isBranch())


def head_snapshot(spark: Any, jtable: Any) -> int | None:
    """The snapshot id a write to Iceberg table ``jtable`` starts from: the head of the
    write-audit-publish branch when one is set and the table has it, else main's."""
    branch = spark.conf.get("spark.wap.branch", None)
    snap = jtable.snapshot(branch) if branch else None
    if snap is None:
        snap = jtable.currentSnapshot()
    return None if snap is None else int(snap.snapshotId())


def committed_since(spark: Any, name: str, before: int | None, app: str) -> bool:
    """Whether Spark application ``app`` committed a write to table ``name`` after snapshot
    ``before`` (None: the table had none then): a snapshot of ``app`` (its summary's
    ``spark.app.id``), not a compaction's (``replace``), after ``before`` in the history of
    the head a write starts from (:func:`head_snapshot`).  Read it before the rerun writes
    the table."""
    jtable = java_table(spark, name)
    sid = head_snapshot(spark, jtable)
    while sid is not None and sid != before:
        snap = jtable.snapshot(sid)
        if snap is None:
            break
        if str(snap.operation()) != "replace" and snap.summary().get("spark.app.id") == app:
            return True
        parent = snap.parentId()
        sid = None if parent is None else int(parent)
    return False


def set_fence(spark: Any, name: str, key: str, what: str) -> None:
    """Before a write to table ``name`` that must not run twice (alters.py, nopk.py): table
    property ``key`` = ``what@snapshot@application``, ``what`` the caller's words for the
    write, the snapshot it starts from (:func:`head_snapshot`) and this Spark application.
    The caller removes it in the commit that records the write as done; a rerun that finds
    it asks :func:`fence_committed` whether the write committed."""
    jtable = java_table(spark, name)
    head = head_snapshot(spark, jtable)
    set_properties(jtable, {key: f"{what}@{head if head is not None else ''}"
                                 f"@{spark.sparkContext.applicationId}"})
    refresh_table(spark, name)


def fence_what(fence: str) -> str:
    """The ``what`` of a :func:`set_fence` property value."""
    return fence.split("@")[0]


def fence_committed(spark: Any, name: str, fence: str) -> bool:
    """Whether the write a :func:`set_fence` property value ``fence`` fenced committed
    (:func:`committed_since`: the application's snapshot after the one it started from)."""
    _, snap, app = [*fence.split("@"), "", ""][:3]
    return committed_since(spark, name, int(snap) if snap else None, app)


def fork_branch(spark: Any, name: str) -> bool:
    """Before a write to table ``name`` (a full name) on the write-audit-publish branch, when
    one is set: the branch made at main's current snapshot if the table has none yet.
    Iceberg makes it at the first commit too, but then that commit's snapshot summary counts
    the table's totals (``total-records``, ``total-data-files``, ...) from zero, and every
    later snapshot, main's once published, carries the error on.  A table never written has
    no snapshot: its first commit makes the branch, and counts from zero rightly.  Returns
    whether it made the branch."""
    branch = spark.conf.get("spark.wap.branch", None)
    if not branch:
        return False
    jtable = java_table(spark, name)
    snap = jtable.currentSnapshot()
    if snap is None or has_branch(jtable, branch):
        return False
    jtable.manageSnapshots().createBranch(branch, snap.snapshotId()).commit()
    refresh_table(spark, name)
    return True


def operation_source(spark: Any, jtable: Any, name: str,
                     props: dict[str, str] | None) -> tuple[Any, Any]:
    """What a commit's snapshot operation of table ``name`` is made from (``newAppend()``,
    ``newRowDelta()``...), and the transaction to pass to :func:`commit_operation`: ``jtable``
    itself and None, or, when table properties ``props`` are to be set by the same commit,
    a transaction of the table and that transaction.  One catalog commit then holds both
    (a mirror's rows and its watermark: about 30-80 ms each on SQLite, queued on the
    catalog's one connection), and a kill cannot come between them.  The write-audit-publish
    branch is forked first (:func:`fork_branch`), so that the transaction starts from a
    table that has it."""
    if not props:
        return jtable, None
    if fork_branch(spark, name):
        jtable = java_table(spark, name)
    txn = jtable.newTransaction()
    return txn, txn


def set_properties(target: Any, props: dict[str, str], remove: tuple[str, ...] = ()) -> None:
    """Set table properties ``props`` on ``target`` (an Iceberg Java table, or a transaction
    of one: then they commit with it), and remove those named in ``remove``."""
    update = target.updateProperties()
    for k, v in props.items():
        update.set(k, v)
    for k in remove:
        update.remove(k)
    update.commit()


def data_file_builder(spark: Any, jtable: Any) -> Any:
    """A function of a WRITTEN record (path, rows, partition values) to the Iceberg Java
    ``DataFile`` of ``jtable``; column statistics from the file's Parquet footer, as
    Iceberg's ``ParquetUtil.fileMetrics`` gives them (:func:`_local_footer_metrics` for a
    local file)."""
    spec = jtable.spec()
    metrics_config = jclass(spark, "org.apache.iceberg.MetricsConfig").forTable(jtable)
    # (Java classes looked up once: every lookup is a round trip to the JVM)
    partition_data = jclass(spark, "org.apache.iceberg.PartitionData")
    builder = jclass(spark, "org.apache.iceberg.DataFiles").builder
    parquet = jclass(spark, "org.apache.iceberg.FileFormat").PARQUET
    ptype = spec.partitionType()
    size_and_metrics = parquet_size_and_metrics(spark, jtable.io(), metrics_config)

    def data_file(w: dict[str, Any]) -> Any:
        path = w["path"]
        size, metrics = size_and_metrics(path)
        part = partition_data(ptype)
        for i, v in enumerate(w["partition"]):
            part.set(i, v)
        return (builder(spec).withPath(path).withFormat(parquet).withFileSizeInBytes(size)
                .withMetrics(metrics).withPartition(part).build())

    return data_file


def parquet_size_and_metrics(spark: Any, io: Any, metrics_config: Any) -> Any:
    """A function of a Parquet file's path to its size and Iceberg ``Metrics`` under
    ``metrics_config`` (a data file's, a position delete file's): a local file's footer
    through :func:`_local_footer_metrics`, any other through ``io`` and
    ``ParquetUtil.fileMetrics`` (which makes read options from a new Hadoop configuration,
    parsing its XML resources, for every file)."""
    file_metrics = jclass(spark, "org.apache.iceberg.parquet.ParquetUtil").fileMetrics
    local_metrics = _local_footer_metrics(spark, metrics_config)

    def size_and_metrics(path: str) -> tuple[int, Any]:
        local = fs_path(path) if path.startswith(("file:", "/")) else None
        if local is not None and local_metrics is not None:
            return os.path.getsize(local), local_metrics(local)
        inp = io.newInputFile(path)
        return inp.getLength(), file_metrics(inp, metrics_config)

    return size_and_metrics


def _local_footer_metrics(spark: Any, metrics_config: Any) -> Any:
    """A function of a local Parquet file's path to its Iceberg ``Metrics``: what
    ``ParquetUtil.fileMetrics`` computes (``footerMetrics`` of the file's footer, no name
    mapping), the footer read through Parquet's ``LocalInputFile`` with read options made
    once.  ``fileMetrics`` on a Hadoop input file builds read options from the Hadoop
    configuration for every file: about 6 ms of a data file's 8-11 ms in the commit of a
    big load (hundreds of files), against about 2 ms this way.  None when the Iceberg
    runtime in the session does not have the relocated Parquet classes this uses (then
    ``fileMetrics``)."""
    from py4j.java_gateway import JavaClass

    shaded = "org.apache.iceberg.shaded.org.apache.parquet."
    classes = tuple(jclass(spark, shaded + c) for c in (
        "hadoop.ParquetFileReader", "io.LocalInputFile", "ParquetReadOptions"))
    if not all(isinstance(c, JavaClass) for c in classes):
        return None
    open_reader, local_file, options_class = classes
    # (immutable: made once per JVM, about 15 ms each time otherwise)
    options = _once(spark, "footer read options", lambda: options_class.builder().build())
    footer_metrics = jclass(spark, "org.apache.iceberg.parquet.ParquetUtil").footerMetrics
    no_field_metrics = jclass(spark, "java.util.stream.Stream").empty
    jfile = jclass(spark, "java.io.File")

    def metrics(path: str) -> Any:
        reader = open_reader.open(local_file(jfile(path).toPath()), options)
        try:
            footer = reader.getFooter()
        finally:
            reader.close()
        return footer_metrics(footer, no_field_metrics(), metrics_config)

    return metrics


def add_data_files(spark: Any, settings: Settings, table: str,
                   written: list[dict[str, Any]], run_id: str,
                   props: dict[str, str] | None = None) -> None:
    """One Iceberg commit (an append snapshot) adding Parquet data files written by the
    executors: ``written`` are their WRITTEN records (path, rows, partition values).  The
    commit goes through Spark's catalog in this JVM (the same connection pool Spark's own
    writes use: a second SQLite client would meet "database is locked"), on the
    write-audit-publish branch when one is set (created from main's current snapshot, as
    Spark's own writes do).  Column statistics come from each file's Parquet footer.
    ``props``: table properties set by the same commit (see :func:`operation_source`)."""
    name = table if "." in table else settings.table(table)  # a full name: as is
    jtable = java_table(spark, name)
    data_file = data_file_builder(spark, jtable)
    # Each file's footer is read for its column statistics: a few files at once (the JVM
    # serves each Python thread on its own thread).
    with ThreadPoolExecutor(max_workers=4) as pool:
        files = list(pool.map(data_file, written))
    source, txn = operation_source(spark, jtable, name, props)
    append = source.newAppend()
    for f in files:
        append.appendFile(f)
    commit_operation(spark, append, name, run_id, txn, props)


def in_this_thread(spark: Any, op: Any) -> Any:
    """``op`` (an Iceberg Java snapshot operation) doing its manifest work in the committing
    thread (``scanManifestsWith`` a direct executor) instead of Iceberg's worker pool.  The
    pool's callers wait for it in ``Tasks.waitFor``, which polls every 10 ms: several such
    waits per commit, each for work of a millisecond or two on the small manifests of a
    night's commit, about a third of the Iceberg stacks sampled in a 200-table night's typed
    phase.  ``op`` unchanged when the session's Iceberg runtime has no relocated Guava."""
    from py4j.java_gateway import JavaClass

    executors = jclass(spark, "org.apache.iceberg.relocated.com.google.common.util."
                              "concurrent.MoreExecutors")
    if not isinstance(executors, JavaClass):
        return op
    direct = _once(spark, "direct executor", executors.newDirectExecutorService)
    return op.scanManifestsWith(direct)


def commit_operation(spark: Any, op: Any, name: str, run_id: str, txn: Any = None,
                     props: dict[str, str] | None = None) -> None:
    """Commit an Iceberg Java snapshot operation of table ``name``: tagged with the run,
    on the write-audit-publish branch when one is set (see ``on_branch``), Spark's cached
    table refreshed after.  ``txn``: the transaction ``op`` was made from (see
    :func:`operation_source`), committed with table properties ``props`` set too."""
    op.set("binlake.run_id", run_id)
    in_this_thread(spark, op)
    branch = spark.conf.get("spark.wap.branch", None)
    if branch:
        if txn is None:  # (a transaction's table was forked before it began)
            fork_branch(spark, name)
        op.toBranch(branch)
    op.commit()
    if txn is not None:
        if props:
            set_properties(txn, props)
        txn.commitTransaction()
    refresh_table(spark, name)


def append_rows(spark: Any, settings: Settings, table: str, rows: list[dict[str, Any]],
                run_id: str) -> None:
    """Append a few rows from the driver in one Iceberg commit, without a Spark job: the
    driver writes them as the executors write theirs (one Parquet data file per partition
    value, :class:`sink.DataSink`; ``source`` and ``run_id`` filled in, every other
    column from the rows, None when a row lacks it; timestamps as epoch microseconds), then
    :func:`add_data_files`.  Files written and never committed (a kill in between) are a
    killed run's, removed by the next load (:mod:`binlake.lake.orphans`)."""
    if not rows:
        return
    name = table if "." in table else settings.table(table)
    add_data_files(spark, settings, name, _write_rows(spark, settings, name, rows, run_id),
                   run_id)


def _write_rows(spark: Any, settings: Settings, name: str, rows: list[dict[str, Any]],
                run_id: str) -> list[dict[str, Any]]:
    """``rows`` written by the driver as data files of table ``name`` (see
    :func:`append_rows`); their WRITTEN records."""
    import uuid

    out = table_out(spark, name)
    sink = DataSink({name: out}, settings.source, run_id, settings.s3_endpoint_url,
                    attempt=uuid.uuid4().hex[:8])
    columns = {f.name: [r.get(f.name) for r in rows] for f in out.schema
               if f.name not in ("source", "run_id")}
    return sink.write(name, "driver", "", columns, len(rows))


def replace_source_rows(spark: Any, settings: Settings, table: str,
                        rows: list[dict[str, Any]], run_id: str) -> None:
    """Replace every row of the source in ``table`` (a full name; a table partitioned by
    ``source``, as the lake's derived ones are) with ``rows``, in one Iceberg commit from
    the driver, without a Spark job: the rows written as :func:`append_rows` writes them,
    the source's data files removed by the same overwrite; on the write-audit-publish
    branch when one is set."""
    written = _write_rows(spark, settings, table, rows, run_id) if rows else []
    jtable = java_table(spark, table)
    data_file = data_file_builder(spark, jtable)
    op = jtable.newOverwrite().overwriteByRowFilter(
        spark._jvm.org.apache.iceberg.expressions.Expressions.equal("source", settings.source))
    for w in written:
        op.addFile(data_file(w))
    commit_operation(spark, op, table, run_id)


def remove_files(paths: list[str]) -> None:
    """Delete data files that will not be committed (their binlog failed); best effort:
    an unreferenced file is never read."""
    for path in paths:
        try:
            fs, p = data_filesystem(path.rsplit("/", 1)[0])
            fs.delete_file(p.rstrip("/") + "/" + path.rsplit("/", 1)[1])
        except OSError:
            pass
