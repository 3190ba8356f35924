"""The driver's small reads and writes of a lake table without a Spark job
(lake/driver_read.read_rows, lake/commit.replace_source_rows): against what Spark itself reads
of the same table, on main and on a write-audit-publish branch."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.fixture
def lake(spark_lake: Any, tmp_path: Path) -> Any:
    from binlake.config import load_settings
    from binlake.lake.spark import build_session

    name = f"dr_{tmp_path.name[-12:].replace('-', '_').lower()}"
    settings = load_settings(env={"BINLAKE_HOME": str(tmp_path), "BINLAKE_CATALOG_NAME": name,
                                  "BINLAKE_SOURCE": "s1"})
    spark = build_session(settings, master="local[2]")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {settings.catalog_name}.{settings.namespace}")
    table = settings.table("t")
    spark.sql(f"CREATE TABLE {table} (source STRING NOT NULL, k BIGINT, v STRING, "
              "ts TIMESTAMP, run_id STRING) USING iceberg PARTITIONED BY (source) "
              "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read', "
              "'write.wap.enabled'='true')")
    return SimpleNamespace(spark=spark, settings=settings, table=table)


def _spark_rows(lake: Any, where: str, branch: str | None = None) -> list[tuple[Any, ...]]:
    at = f" VERSION AS OF '{branch}'" if branch else ""
    return sorted(tuple(r) for r in lake.spark.sql(
        f"SELECT source, k, v FROM {lake.table}{at} WHERE {where}").collect())


def _read(lake: Any, expr: Any) -> list[tuple[Any, ...]]:
    from binlake.lake.driver_read import read_rows

    t = read_rows(lake.spark, lake.settings, lake.table, expr, ("source", "k", "v"))
    return sorted(zip(*(t.column(c).to_pylist() for c in ("source", "k", "v"))))


def test_reads_what_spark_reads(lake: Any) -> None:
    from binlake.lake.branch import on_branch

    # never written: no rows, the columns asked for
    from binlake.lake.driver_read import all_of, any_of, eq, is_in, lt, not_null, read_rows

    empty = read_rows(lake.spark, lake.settings, lake.table, eq("source", "s1"), ("k", "v"))
    assert empty.num_rows == 0 and empty.column_names == ["k", "v"]
    lake.spark.sql(f"INSERT INTO {lake.table} VALUES ('s1', 1, 'a', NULL, 'r'), "
                   "('s1', 2, NULL, NULL, 'r'), ('s2', 1, 'b', NULL, 'r'), "
                   "('s1', 3, 'it\\'s', NULL, 'r')")
    lake.spark.sql(f"DELETE FROM {lake.table} WHERE k = 2 AND source = 's1'")  # a delete file
    assert _read(lake, eq("source", "s1")) == _spark_rows(lake, "source = 's1'") == [
        ("s1", 1, "a"), ("s1", 3, "it's")]
    assert _read(lake, all_of(eq("source", "s1"), lt("k", 3))) == [("s1", 1, "a")]
    assert _read(lake, any_of(eq("v", "b"), is_in("k", [3]))) == \
        _spark_rows(lake, "v = 'b' OR k IN (3)")
    assert _read(lake, not_null("v")) == _spark_rows(lake, "v IS NOT NULL")
    # on a branch: the branch's rows; main keeps its own
    with on_branch(lake.spark, "b1"):
        lake.spark.sql(f"INSERT INTO {lake.table} VALUES ('s1', 9, 'branch', NULL, 'r')")
        assert ("s1", 9, "branch") in _read(lake, eq("source", "s1"))
    assert ("s1", 9, "branch") not in _read(lake, eq("source", "s1"))
    assert _read(lake, eq("source", "s1")) == _spark_rows(lake, "source = 's1'")


def test_replace_source_rows(lake: Any) -> None:
    from binlake.lake.branch import on_branch
    from binlake.lake.commit import replace_source_rows

    lake.spark.sql(f"INSERT INTO {lake.table} VALUES ('s1', 1, 'old', NULL, 'r0'), "
                   "('s2', 1, 'theirs', NULL, 'r0')")
    replace_source_rows(lake.spark, lake.settings, lake.table,
                        [{"k": 5, "v": "new", "ts": 1_700_000_000_000_000},
                         {"k": 6, "v": None, "ts": None}], "r1")
    assert _spark_rows(lake, "true") == [("s1", 5, "new"), ("s1", 6, None),
                                         ("s2", 1, "theirs")]
    got = lake.spark.sql(f"SELECT CAST(ts AS LONG), run_id FROM {lake.table} "
                         "WHERE k = 5").collect()
    assert [tuple(r) for r in got] == [(1_700_000_000, "r1")]
    # nothing left of the source: its rows go, the others stay
    with on_branch(lake.spark, "b2"):
        replace_source_rows(lake.spark, lake.settings, lake.table, [], "r2")
    assert _spark_rows(lake, "true", branch="b2") == [("s2", 1, "theirs")]
    assert len(_spark_rows(lake, "true")) == 3  # main untouched


def test_current_schema_as_spark(lake: Any) -> None:
    """A column dropped and added again reads NULL in the rows written before (Spark reads
    main and branches with the table's current schema; pyiceberg's plain snapshot scan
    would take the snapshot's, and the old values with it)."""
    from binlake.lake.driver_read import eq, read_rows

    lake.spark.sql(f"INSERT INTO {lake.table} VALUES ('s1', 1, 'a', NULL, 'r')")
    lake.spark.sql(f"ALTER TABLE {lake.table} DROP COLUMN v")
    lake.spark.sql(f"ALTER TABLE {lake.table} ADD COLUMN v STRING")
    assert [tuple(r) for r in lake.spark.sql(f"SELECT k, v FROM {lake.table}").collect()] == \
        [(1, None)]
    got = read_rows(lake.spark, lake.settings, lake.table, eq("source", "s1"), ("k", "v"))
    assert got.to_pylist() == [{"k": 1, "v": None}]
