"""A night of many small binlogs (a server that rotates often): several files to a task.

A Spark task costs about 0.1 s of its own, and a survey or decode task per 1 MB binlog spent
most of its time on that.  The load now surveys many files in at most four rounds of the
cores and packs small ranges several to a decode task (``txn.split.pack_tasks``).  A real
MariaDB server with a 64 KB ``max_binlog_size`` writes about forty files; they are loaded
packed and, into another lake, one range per task as before: the two lakes are the same,
cell by cell, the packed load ran fewer decode tasks than ranges, and the mirror holds the
server's rows.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .lake_dump import diff_lakes, dump
from .test_lake_job import load, make_lake

pytestmark = [pytest.mark.integration]


def test_many_small_binlogs_packed_into_fewer_tasks(
        spark_lake: Any, mariadb_factory: Callable[..., Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from binlake.lake import land
    from binlake.lake.typed_plan import table_names

    srv = mariadb_factory(options={"max-binlog-size": "65536"})
    first = srv.current_binlog_file()
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE DATABASE small")
        cur.execute("CREATE TABLE small.orders (id INT PRIMARY KEY, status VARCHAR(16), "
                    "note VARCHAR(200)) ENGINE=InnoDB")
        n = 0
        while len(srv.binlog_files()) < 42:
            n += 1
            cur.execute("INSERT INTO small.orders VALUES (%s, 'new', %s)", (n, "x" * (n % 150)))
            if n % 3 == 0:
                cur.execute("UPDATE small.orders SET status = 'paid' WHERE id = %s", (n - 1,))
            if n % 17 == 0:
                cur.execute("DELETE FROM small.orders WHERE id = %s", (n - 5,))
        cur.execute("SELECT id, status, note FROM small.orders")
        want = sorted(cur.fetchall())
    out = tmp_path / "binlogs"
    out.mkdir()
    written = srv.binlog_files()
    for f in written[written.index(first):-1]:  # the closed ones
        shutil.copyfile(f, out / f.name)
    assert len(list(out.iterdir())) >= 40

    packed: list[tuple[int, int]] = []  # (ranges, tasks) of each load's decode
    real = land.pack_tasks

    def spy(sizes: list[int], slots: int, target: int) -> list[list[int]]:
        tasks = real(sizes, slots, target)
        packed.append((len(sizes), len(tasks)))
        return tasks

    monkeypatch.setattr(land, "pack_tasks", spy)
    a = make_lake(spark_lake, tmp_path, "packed")
    summary = load(spark_lake, a, [out], "packed-1")
    assert not summary.failed and summary.ranges >= 40
    assert packed == [(summary.ranges, 2)], packed  # (a few MB: one round of two tasks)

    monkeypatch.setattr(land, "pack_tasks",
                        lambda sizes, slots, target: [[i] for i in range(len(sizes))])
    b = make_lake(spark_lake, tmp_path, "single")
    assert not load(spark_lake, b, [out], "single-1").failed

    lake_a = dump(tmp_path / "packed", name=a.catalog_name)
    lake_b = dump(tmp_path / "single", name=b.catalog_name)
    assert sum(lake_a["row_changes"].values()) > 1000
    assert diff_lakes(lake_a, lake_b) == ""
    mirror = a.table(table_names("small", "orders")[1])
    got = sorted((r["id"], r["status"], r["note"])
                 for r in spark_lake.sql(f"SELECT id, status, note FROM {mirror}").collect())
    assert got == want

    # A record table holds a small data file per binlog; Iceberg's default open cost (4 MB,
    # with its 16 MB adaptive split) made a Spark task of every 4 of them. The lake's tables
    # are created with a 1 MB open cost: any reader, SQL included, packs them 16 to a task
    # (validation's 1,083 tasks -> 378 on a night of 200 binlogs); binlake's own reads
    # (read_table) do it for a table created without the property (an older lake).
    from binlake.lake.spark import read_table

    facts = a.table("stream_facts")
    files = spark_lake.sql(f"SELECT count(*) FROM {facts}.files").first()[0]
    assert files >= 40
    packed_tasks = -(-files // 16)
    rows = sorted(spark_lake.table(facts).collect())
    assert spark_lake.table(facts).rdd.getNumPartitions() <= packed_tasks
    spark_lake.sql(f"ALTER TABLE {facts} UNSET TBLPROPERTIES ('read.split.open-file-cost')")
    older, fewer = spark_lake.table(facts), read_table(spark_lake, facts)
    assert fewer.rdd.getNumPartitions() <= packed_tasks < older.rdd.getNumPartitions()
    assert sorted(fewer.collect()) == sorted(older.collect()) == rows
