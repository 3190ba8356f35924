"""A load given files with a loaded file between them (a file that failed in its night and
is loaded again later, beside the night's new files): the later files must be decoded with
the DDL of the loaded file in between.

The run's schema history started from the versions stored before its first file, then the
DDL of its own files: the versions of a loaded file in the middle were not in it, so a file
after it was decoded with the table as it was before.  Under MINIMAL metadata (no column
names in the Table_maps) that lost the column an ALTER in the middle file added: the rows'
layout no longer matched the history, and their images and typed rows went unnamed.

Input: real MariaDB binlogs (MINIMAL metadata and images), four files; the lake loaded as
files 1 and 3, then files 2 and 4, compared cell by cell (``tests/lake_dump.py``) with one
load of all four, but for the mirrors and what depends on the decode split."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from .lake_dump import diff_lakes, dump
from .random_nights import VARIANTS
from .servers import start_server

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.integration]

pytest.importorskip("pyspark")
pytest.importorskip("pyiceberg")

NIGHTS = [
    ["CREATE DATABASE gp",
     "CREATE TABLE gp.t (id INT PRIMARY KEY, a INT, v VARCHAR(20))",
     "INSERT INTO gp.t VALUES (1, 10, 'one'), (2, 20, 'two')"],
    ["INSERT INTO gp.t VALUES (3, 30, 'three')",
     "UPDATE gp.t SET a = 11 WHERE id = 1"],
    ["ALTER TABLE gp.t ADD COLUMN n INT DEFAULT 5 AFTER a",
     "ALTER TABLE gp.t MODIFY v VARCHAR(40)",
     "INSERT INTO gp.t VALUES (4, 40, 6, 'four')"],
    ["INSERT INTO gp.t VALUES (5, 50, 7, 'five')",
     "UPDATE gp.t SET n = 8, v = 'TWO' WHERE id = 2",
     "DELETE FROM gp.t WHERE id = 3"],
]

# what a load of the files out of order leaves otherwise by design: the mirrors (a file
# loaded behind a mirror's watermark does not touch it: docs/lake.md) and the tables that
# follow the runs and the decode ranges
BY_DESIGN = ("files", "stream_facts", "validation_results")


def _files(srv: Any, out: Path) -> list[Path]:
    first = srv.current_binlog_file()
    for night in NIGHTS:
        srv.execute(night)
        srv.flush_binary_logs()
    closed = srv.closed_binlog_files()
    closed = closed[closed.index(first):]
    assert len(closed) == len(NIGHTS)
    out.mkdir()
    for p in closed:
        shutil.copyfile(p, out / p.name)
    return [out / p.name for p in closed]


def _lake(spark: Any, home: Path, name: str, runs: list[list[Path]]) -> dict[str, Any]:
    from binlake.config import load_settings
    from binlake.lake.job import run_load
    from binlake.lake.spark import build_session

    settings = load_settings(env={"BINLAKE_HOME": str(home), "BINLAKE_CATALOG_NAME": name})
    build_session(settings, master="local[2]")
    for files in runs:
        s = run_load(spark, settings, [str(f) for f in files])
        assert not s.failed, s.files
    return dump(home, name=name)


def test_a_loaded_file_between_the_given_ones(spark_lake: Any, mariadb_template: Path,
                                              tmp_path: Path) -> None:
    srv = start_server(tmp_path / "srv", mariadb_template, options=VARIANTS["minimal"])
    try:
        f = _files(srv, tmp_path / "binlogs")
    finally:
        srv.stop(timeout=30)
    want = _lake(spark_lake, tmp_path / "one", "gap_one", [f])
    got = _lake(spark_lake, tmp_path / "gap", "gap_two", [[f[0], f[2]], [f[1], f[3]]])

    # the new column's values in the rows of file 4, as the server wrote them
    changes = [r for r in got["changelog__gp__t"].elements() if dict(r)["_op"] != "delete"]
    named = {(dict(r)["id"], dict(r).get("n")) for r in changes}
    assert {(5, 7), (2, 8)} <= named, named
    same = {t: rows for t, rows in got.items()
            if t not in BY_DESIGN and not t.startswith("mirror__")}
    assert not diff_lakes({t: want[t] for t in same if t in want}, same)
    assert set(same) == {t for t in want if t not in BY_DESIGN and not t.startswith("mirror__")}


def test_run_history_merges_the_loaded_files_between() -> None:
    """The same, on the history alone: the versions and database defaults stored for file 2
    reach file 3's DDL in a run of files 1 and 3, and are not stored again."""
    from binlake.lake.schemas import build_run_history

    def f(seq: int, *sql: str) -> tuple[str, int, dict[str, Any], list[Any]]:
        return (f"b.{seq:06d}", seq, {"server_version": "10.11.6-MariaDB", "flavor": "mariadb"},
                [(100 + 10 * i, "gp", s) for i, s in enumerate(sql)])

    f1 = f(1, "CREATE DATABASE gp CHARACTER SET latin1", "CREATE TABLE gp.t (id INT, a INT)")
    f2 = f(2, "ALTER TABLE gp.t ADD COLUMN n INT", "ALTER DATABASE gp CHARACTER SET utf8mb4")
    f3 = f(3, "ALTER TABLE gp.t ADD COLUMN z INT", "CREATE TABLE gp.u (k INT)")
    whole = build_run_history([], [], [f1, f2, f3])
    stored_2 = [v for v in whole.new if v.start[0] == 2]
    dbs = [d for d in whole.history.databases.values()]
    assert stored_2 and [d.start[0] for d in dbs] == [2]

    run = build_run_history(stored_2, [], [f1, f3], databases=dbs)

    def cols(h: Any, at: tuple[int, int]) -> list[str]:
        return [c.name for c in h.at("gp", "t", at).columns]

    assert cols(run.history, (3, 999)) == cols(whole.history, (3, 999)) == ["id", "a", "n", "z"]
    assert cols(run.history, (1, 999)) == ["id", "a"]
    assert run.history.database("gp").charset == "utf8mb4"
    assert run.seqs == [1, 3]
    assert {v.start[0] for v in run.new} == {1, 3}
    assert [(v.table, v.start) for v in run.new] == [
        (v.table, v.start) for v in whole.new if v.start[0] != 2]
