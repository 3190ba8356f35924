"""The lake's Iceberg tables (docs/lake.md describes each column for analysts).

Keys make every load idempotent: a row is identified by (source, order key) in row_changes,
(source, order_seq, order_pos) in transactions, (source, prepare_seq, prepare_pos) in
xa_prepares, (source, file) in files; loads insert what is missing and never duplicate.
"""

from __future__ import annotations

from typing import Any

from ..config import Settings
from .commit import fork_branch, java_table
from .spark import SMALL_FILE_OPEN_COST

FILES = "files"
TRANSACTIONS = "transactions"
ROW_CHANGES = "row_changes"
XA_PREPARES = "xa_prepares"
XA_PENDING = "xa_pending"
STATEMENTS = "statements"
SCHEMA_HISTORY = "schema_history"
STREAM_FACTS = "stream_facts"

DDL: dict[str, tuple[str, str]] = {
    FILES: ("""
        source STRING NOT NULL, file STRING NOT NULL, seq INT, size BIGINT, sha256 STRING,
        uri STRING, server_version STRING, flavor STRING, checksum_alg STRING,
        in_use BOOLEAN, closed_cleanly BOOLEAN, first_ts TIMESTAMP, last_ts TIMESTAMP,
        first_gtid STRING, last_gtid STRING, events BIGINT, transactions BIGINT,
        row_changes BIGINT, ranges INT, status STRING, error STRING, error_offset BIGINT,
        run_id STRING, loaded_at TIMESTAMP, engines ARRAY<STRING>""", "source"),
    TRANSACTIONS: ("""
        source STRING NOT NULL, txn_id STRING, gtid STRING, kind STRING, status STRING,
        begin_file STRING, begin_pos BIGINT, end_file STRING, end_pos BIGINT,
        commit_ts TIMESTAMP, end_event STRING, xid BIGINT, xa_format_id INT, xa_gtrid STRING,
        xa_bqual STRING, one_phase BOOLEAN, prepare_file STRING, prepare_pos BIGINT,
        prepare_gtid STRING, inserts BIGINT, updates BIGINT, deletes BIGINT,
        tables ARRAY<STRING>, nontransactional BOOLEAN, statements ARRAY<STRING>,
        order_seq INT NOT NULL, order_pos BIGINT NOT NULL, run_id STRING""",
                   "source, days(commit_ts)"),
    ROW_CHANGES: ("""
        source STRING NOT NULL, txn_id STRING, gtid STRING, order_seq INT NOT NULL,
        order_pos BIGINT NOT NULL, order_idx INT NOT NULL, commit_ts TIMESTAMP,
        db STRING, tbl STRING, op STRING, before STRING, after STRING, pk STRING,
        statement STRING, statement_pos BIGINT, file STRING, pos BIGINT, row INT,
        run_id STRING, payload_index INT, statement_payload_index INT""",
                  "days(commit_ts), db, tbl"),
    STATEMENTS: ("""
        source STRING NOT NULL, file STRING NOT NULL, pos BIGINT NOT NULL, statement STRING,
        run_id STRING, payload_index INT""", "source"),
    XA_PREPARES: ("""
        source STRING NOT NULL, xa_format_id INT, xa_gtrid STRING, xa_bqual STRING,
        prepare_seq INT NOT NULL, prepare_pos BIGINT NOT NULL, prepare_end_pos BIGINT,
        prepare_file STRING, prepare_gtid STRING, prepared_ts TIMESTAMP, rows BIGINT,
        state STRING, pks STRING, run_id STRING""", "source"),
    XA_PENDING: ("""
        source STRING NOT NULL, xa_format_id INT, xa_gtrid STRING, xa_bqual STRING,
        prepare_seq INT, prepare_pos BIGINT, prepare_file STRING, prepare_gtid STRING,
        prepared_ts TIMESTAMP, age_seconds DOUBLE, rows BIGINT, as_of_file STRING,
        run_id STRING""", "source"),
    # one row per version of a source table's schema (docs/lake.md "Schema history");
    # `version` is the whole version as JSON (binlake.schema.Version.to_dict)
    SCHEMA_HISTORY: ("""
        source STRING NOT NULL, db STRING NOT NULL, tbl STRING NOT NULL, incarnation INT,
        start_file STRING, start_seq INT NOT NULL, start_pos BIGINT NOT NULL, change STRING,
        `exists` BOOLEAN, columns STRING, primary_key ARRAY<STRING>, ddl STRING,
        version STRING, run_id STRING""", "source"),
    # what validation reads of the event stream, gathered by the load's own decode pass
    # (binlake.txn.streamfacts: one row per range, group, GTID, xid, damaged event, finding)
    STREAM_FACTS: ("""
        source STRING NOT NULL, file STRING NOT NULL, seq INT, range_index INT, kind STRING,
        pos BIGINT, end_pos BIGINT, record STRING, group_kind STRING, status STRING,
        end_event STRING, gtid STRING, ts BIGINT, xa_xid STRING, inserts BIGINT,
        updates BIGINT, deletes BIGINT, nt_inserts BIGINT, nt_updates BIGINT,
        nt_deletes BIGINT, gtid_uuid STRING, gtid_tag STRING, gtid_gno BIGINT,
        gtid_domain BIGINT, gtid_server BIGINT, gtid_seq BIGINT, xid BIGINT,
        event_type STRING, checksum STRING, error STRING, meta STRING, run_id STRING""",
                   "source"),
}


# Every binlake table: Iceberg v2, row-level deletes as delete files, no shuffle before a
# write (fan-out writers instead of a sort), and write-audit-publish allowed (a run may write
# on a branch that publishing fast-forwards main to).
# (``read.split.open-file-cost``: a night of many small binlogs leaves many small files in
# each table; every reader of the table, SQL included, packs them as lake.spark.read_table
# does for binlake's own reads.)  Every commit writes a new ``*.metadata.json``: the
# ``METADATA_RETENTION`` properties keep the newest ``METADATA_VERSIONS`` of them and delete
# the older ones at each commit (Spark and pyiceberg both honour them; Iceberg's default
# keeps every one, forever).  Tables made before get them from ``binlake maintain``.
METADATA_VERSIONS = 100
METADATA_RETENTION = {"write.metadata.delete-after-commit.enabled": "true",
                      "write.metadata.previous-versions-max": str(METADATA_VERSIONS)}


def sql_properties(props: dict[str, str]) -> str:
    """``'k'='v', ...``: table properties as ``TBLPROPERTIES (...)`` lists them."""
    return ", ".join(f"'{k}'='{v}'" for k, v in props.items())


TBLPROPERTIES = ("'format-version'='2', 'write.merge.mode'='merge-on-read', "
                 "'write.update.mode'='merge-on-read', 'write.delete.mode'='merge-on-read', "
                 "'write.distribution-mode'='none', 'write.spark.fanout.enabled'='true', "
                 f"'write.wap.enabled'='true', {sql_properties(METADATA_RETENTION)}, "
                 f"'read.split.open-file-cost'='{SMALL_FILE_OPEN_COST}'")


# Per table, more properties at creation: the tables a load deletes from by binlog file name
# keep whole column statistics of ``file`` (Iceberg cuts a string's bounds to 16 characters
# by default: "mariadb-bin.0000", which rules out no file of another binlog, so a load's
# delete of what its files gave before had to count rows in Spark).
EXTRA_PROPERTIES: dict[str, dict[str, str]] = {
    STATEMENTS: {"write.metadata.metrics.column.file": "full"},
    STREAM_FACTS: {"write.metadata.metrics.column.file": "full"},
    FILES: {"write.metadata.metrics.column.file": "full"},
}


# Columns added after a table's first version: (table, column, type).  A lake made before
# gets them (ALTER TABLE ... ADD COLUMN, NULL in the rows already there).
ADDED_COLUMNS: tuple[tuple[str, str, str], ...] = (
    (FILES, "engines", "ARRAY<STRING>"),
    (ROW_CHANGES, "payload_index", "INT"),
    (ROW_CHANGES, "statement_payload_index", "INT"),
    (STATEMENTS, "payload_index", "INT"),
)


def ensure_tables(spark: Any, settings: Settings) -> None:
    """Create the lake's tables that do not exist, and add the columns of
    ``ADDED_COLUMNS`` to tables made before them.  One listing of the namespace, and the
    Iceberg schema of the tables that may lack a column, when they all exist (every load
    but the first)."""
    namespace = f"{settings.catalog_name}.{settings.namespace}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")
    existing = {r["tableName"] for r in spark.sql(f"SHOW TABLES IN {namespace}").collect()}
    for name, (cols, partitioning) in DDL.items():
        if name in existing:
            continue
        more = EXTRA_PROPERTIES.get(name)
        extra = f", {sql_properties(more)}" if more else ""
        spark.sql(f"CREATE TABLE IF NOT EXISTS {settings.table(name)} ({cols}) USING iceberg "
                  f"PARTITIONED BY ({partitioning}) TBLPROPERTIES ({TBLPROPERTIES}{extra})")
    schemas: dict[str, Any] = {}
    for name, column, sql_type in ADDED_COLUMNS:
        if name not in existing:
            continue  # created just now, with every column
        if name not in schemas:
            schemas[name] = spark._jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
                spark._jsparkSession, settings.table(name)).schema()
        if schemas[name].findField(column) is None:
            spark.sql(f"ALTER TABLE {settings.table(name)} ADD COLUMN {column} {sql_type}")


def has_snapshots(spark: Any, table: str) -> bool:
    """The Iceberg table has a snapshot on some branch (it was ever written), read from the
    catalog without a Spark job."""
    return bool(java_table(spark, table).snapshots().iterator().hasNext())


def may_match(spark: Any, table: str, condition: str) -> bool:
    """Whether a data file of ``table`` may hold a row matching ``condition``, from Iceberg's
    metadata on the driver, without a Spark job: the files Spark's own scan of
    ``table WHERE condition`` would read (the same snapshot or write-audit-publish branch,
    the filters Spark pushes down, then Iceberg's partition and column-statistics pruning).
    False only when that scan reads no file at all; True whenever it may read one (a file
    whose statistics do not exclude the condition, even if its rows are deleted), or when
    the plan is not the Iceberg scan expected (nothing is skipped on a guess)."""
    try:
        leaves = spark.table(table).where(condition)._jdf.queryExecution() \
            .optimizedPlan().collectLeaves().iterator()
        scans = 0
        while leaves.hasNext():
            leaf = leaves.next()
            if leaf.getClass().getSimpleName() != "DataSourceV2ScanRelation":
                return True
            scan = leaf.scan()
            if scan.getClass().getName() != "org.apache.iceberg.spark.source.SparkBatchQueryScan":
                return True
            if len(scan.toBatch().planInputPartitions()):
                return True
            scans += 1
        return scans == 0  # no scan in the plan at all: not what we expect, so check
    except Exception:  # any doubt: the Spark count decides
        return True


def may_hold(spark: Any, table: str, condition: str) -> bool:
    """Whether a data file of ``table`` may hold a row matching ``condition`` (SQL), without
    a Spark job: Iceberg's plan of the snapshot Spark would read, by pyiceberg on the driver
    (:func:`driver_read.plan_matches`), else, when that cannot tell (a condition its parser
    does not take), Spark's own plan (:func:`has_snapshots`, :func:`may_match`)."""
    from .driver_read import plan_matches

    found = plan_matches(spark, table, condition)
    if found is not None:
        return found
    return has_snapshots(spark, table) and may_match(spark, table, condition)


def delete_where(spark: Any, table: str, condition: str) -> bool:
    """DELETE the rows matching ``condition``, only if there are any: a DELETE that matches
    nothing would still commit an (empty) snapshot into the table's history.  Usually free:
    a table never written (no snapshot) is not read at all, and when the files' partition
    values and column statistics rule every one of them out (:func:`may_hold`: the usual
    case for a load of new files) no Spark job runs; else a count decides."""
    if not may_hold(spark, table, condition) \
            or not spark.table(table).where(condition).limit(1).count():
        return False
    fork_branch(spark, table)
    spark.sql(f"DELETE FROM {table} WHERE {condition}")
    return True


def _q(s: str) -> str:
    return s.replace("'", "''")


def _in(names: list[str]) -> str:
    return ",".join(f"'{_q(n)}'" for n in names) or "''"
