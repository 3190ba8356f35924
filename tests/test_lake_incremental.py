"""The shortcuts that keep a small load into a big lake fast, and that they are only taken
when they are safe: a rerun DELETE decided from Iceberg's metadata on the driver
(``tables.may_match``: no Spark job when no data file can hold the rows), never skipped when
earlier data (a killed run's, a reload's) is there."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from .test_lake_job import make_lake

pytestmark = [pytest.mark.spark, pytest.mark.integration]
pytest.importorskip("pyspark")


@pytest.fixture(scope="module")
def spark(spark_lake: Any) -> Any:
    return spark_lake


def _jobs_of(spark: Any, fn: Any) -> tuple[Any, list[int]]:
    """``fn()`` and the Spark jobs it ran (in a job group of its own)."""
    sc = spark.sparkContext
    group = f"probe-{uuid.uuid4().hex[:8]}"
    sc.setJobGroup(group, "probe")
    try:
        out = fn()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return out, list(sc.statusTracker().getJobIdsForGroup(group))


def _snapshots(spark: Any, table: str) -> int:
    from binlake.lake.tables import has_snapshots

    has_snapshots(spark, table)  # a REFRESH
    return int(spark.sql(f"SELECT count(*) FROM {table}.snapshots").collect()[0][0])


def _insert(spark: Any, table: str, seqs: list[int]) -> None:
    from pyspark.sql import functions as F

    rows = spark.createDataFrame([("s1", f"f{s}", s, p) for s in seqs for p in (100, 200)],
                                 "source STRING, end_file STRING, order_seq INT, order_pos BIGINT")
    cols = spark.table(table).schema.fields
    have = set(rows.columns)
    rows.select(*[(F.col(f.name) if f.name in have else F.lit(None)).cast(f.dataType)
                  .alias(f.name) for f in cols]).coalesce(1).writeTo(table).append()


def test_delete_where_decides_from_metadata(spark: Any, tmp_path: Path) -> None:
    from binlake.lake.tables import TRANSACTIONS, delete_where, ensure_tables, may_match

    settings = make_lake(spark, tmp_path, "incr_meta")
    ensure_tables(spark, settings)
    table = settings.table(TRANSACTIONS)
    # never written: nothing to read at all
    assert not delete_where(spark, table, "source = 's1' AND order_seq IN (1)")
    _insert(spark, table, [1, 2])
    n = _snapshots(spark, table)

    # new files (seq 3): every data file's statistics exclude them: no job, no snapshot
    (done, jobs) = _jobs_of(spark, lambda: delete_where(
        spark, table, "source = 's1' AND (order_seq IN (3))"))
    assert done is False and jobs == []
    assert not may_match(spark, table, "source = 's1' AND order_seq IN (3, 4)")
    assert not may_match(spark, table, "source = 's2' AND order_seq IN (1)")
    assert _snapshots(spark, table) == n

    # a rerun of seq 2 (its rows are there): the delete is done, and only seq 2's rows go
    assert may_match(spark, table, "source = 's1' AND (order_seq IN (2))")
    assert delete_where(spark, table, "source = 's1' AND (order_seq IN (2))")
    rows = spark.table(table).select("order_seq").collect()
    assert sorted(r[0] for r in rows) == [1, 1]
    assert _snapshots(spark, table) == n + 1

    # seq 2's data file is still there, its rows deleted (a delete file): the statistics do
    # not exclude it, so the count decides: nothing to delete, no empty snapshot
    assert may_match(spark, table, "source = 's1' AND (order_seq IN (2))")
    assert not delete_where(spark, table, "source = 's1' AND (order_seq IN (2))")
    assert _snapshots(spark, table) == n + 1

    # a condition Iceberg cannot use to prune (a function of the column): never skipped
    assert may_match(spark, table, "source = 's1' AND order_seq * 2 = 999")
    assert may_match(spark, table, "source = 's1' AND (order_seq IN (9) OR "
                                   "upper(end_file) = 'F1')")
    assert delete_where(spark, table, "source = 's1' AND (order_seq IN (9) OR "
                                      "upper(end_file) = 'F1')")
    assert spark.table(table).count() == 0


def test_delete_where_reads_the_branch(spark: Any, tmp_path: Path) -> None:
    """On a write-audit-publish branch, the rows a killed run wrote on that branch are seen
    (and deleted by its rerun), though main has none."""
    from binlake.lake.branch import on_branch
    from binlake.lake.tables import TRANSACTIONS, delete_where, ensure_tables, may_match

    settings = make_lake(spark, tmp_path, "incr_branch")
    ensure_tables(spark, settings)
    table = settings.table(TRANSACTIONS)
    _insert(spark, table, [1])
    with on_branch(spark, "b1"):
        _insert(spark, table, [5])
    cond = "source = 's1' AND (order_seq IN (5))"
    assert not may_match(spark, table, cond)  # main
    assert not delete_where(spark, table, cond)
    with on_branch(spark, "b1"):
        assert may_match(spark, table, cond)
        assert delete_where(spark, table, cond)
        assert sorted(r[0] for r in spark.table(table).select("order_seq").collect()) == [1, 1]


def _file_row(name: str, seq: int, status: str, run_id: str) -> tuple[Any, ...]:
    from binlake.lake.files import FILE_SCHEMA

    row: dict[str, Any] = {c.split()[0]: None for c in FILE_SCHEMA.split(", ")}
    row.update(source="s1", file=name, seq=seq, size=10, sha256="ab", status=status,
               first_ts=1_700_000_000, last_ts=1_700_000_100, run_id=run_id,
               engines=["d.t=1"])
    return tuple(row.values())


def test_files_rows_appended_or_merged(spark: Any, tmp_path: Path) -> None:
    """``files``: the rows of new files are appended by the driver (no Spark job); a file
    with a row already (failed before, a killed run's rerun of a grown file, a reload)
    has it replaced by the MERGE, never duplicated."""
    from binlake.lake.files import _record_files
    from binlake.lake.tables import FILES, ensure_tables

    settings = make_lake(spark, tmp_path, "incr_files", source="s1")
    ensure_tables(spark, settings)
    table = settings.table(FILES)

    def rows() -> list[tuple[Any, ...]]:
        return sorted((r["file"], r["seq"], r["status"], r["run_id"], r["engines"],
                       r["first_ts"] is not None and r["loaded_at"] is not None)
                      for r in spark.table(table).collect())

    _, jobs = _jobs_of(spark, lambda: _record_files(
        spark, settings, [_file_row("mariadb-bin.000001", 1, "failed", "r1"),
                          _file_row("mariadb-bin.000002", 2, "loaded", "r1")], "r1"))
    assert jobs == []
    assert rows() == [("mariadb-bin.000001", 1, "failed", "r1", ["d.t=1"], True),
                      ("mariadb-bin.000002", 2, "loaded", "r1", ["d.t=1"], True)]
    # new file 3: appended, no job; file 1 loaded again: MERGEd (replaced)
    _, jobs = _jobs_of(spark, lambda: _record_files(
        spark, settings, [_file_row("mariadb-bin.000003", 3, "loaded", "r2")], "r2"))
    assert jobs == []
    _record_files(spark, settings, [_file_row("mariadb-bin.000001", 1, "loaded", "r3")], "r3")
    assert rows() == [("mariadb-bin.000001", 1, "loaded", "r3", ["d.t=1"], True),
                      ("mariadb-bin.000002", 2, "loaded", "r1", ["d.t=1"], True),
                      ("mariadb-bin.000003", 3, "loaded", "r2", ["d.t=1"], True)]
    # a row an older binlake left without seq is found too (no duplicate)
    spark.sql(f"UPDATE {table} SET seq = NULL WHERE file = 'mariadb-bin.000002'")
    _record_files(spark, settings, [_file_row("mariadb-bin.000002", 2, "loaded", "r4")], "r4")
    assert [r[:4] for r in rows()] == [("mariadb-bin.000001", 1, "loaded", "r3"),
                                       ("mariadb-bin.000002", 2, "loaded", "r4"),
                                       ("mariadb-bin.000003", 3, "loaded", "r2")]
