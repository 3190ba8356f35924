"""Nights of real MariaDB work through the nightly path (load on a branch, validate,
publish), every mirror checked against the server's own rows after every night
(tests/random_nights.py: the generator, the runner and the oracle).

* Scripted nights for the cases the random nights found broken:
  - a TRUNCATE after the night's first changes of a table: the mirror's DELETE on the
    branch failed (Iceberg judged whole-file deletes from main's files);
  - a RENAME TABLE followed, in the same run, by UPDATEs that move keys of the renamed
    table: the moved-in rows came back at the keys the updates had left (the changelog
    holds an update's new key only);
  - a mirror made by a RENAME TABLE with a column renamed before it: the next night's
    MERGE failed on the column the table no longer has;
  - ADD COLUMN with a BIT, hex, TIME, SET... default: the older mirror rows got NULL or a
    value the server does not hold;
  - validation warned on every night with a TRUNCATE, DROP, RENAME or new CREATE
    (``reconciliation.mirror_counts`` compared those mirrors with row changes alone).
  - ALTERs among updates with partial images (MINIMAL / NOBLOB): the updated rows lost the
    retyped, added or renamed column's value;
  - UPDATEs that move keys with partial images: the moved rows lost the columns their
    images lack;
  - a DATETIME / TIMESTAMP column retyped to text: the older rows' text lost the trailing
    zeros of its fractional seconds;
  - ALTERs of a table after a RENAME TABLE to its name, in one run: the rows the rename
    moved in missed them;
  - UPDATEs with partial images, in the RENAME's run, of rows it moves in: the rows held
    NULL in the columns the images lacked;
  - an online schema change's swap (gh-ost, pt-online-schema-change);
  - INSERTs that leave columns to their defaults, with MINIMAL images: NULL in the typed
    tables.
* Four seeds of the random generator, on servers logging FULL, NO_LOG, MINIMAL and NOBLOB
  (more: ``python -m tests.random_nights``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .random_nights import VARIANTS, run_script, run_seed
from .servers import start_server

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.slow]

pytest.importorskip("pyspark")


@pytest.fixture
def server(tmp_path: Path, mariadb_template: Path) -> Iterator[Any]:
    srv = start_server(tmp_path / "srv", mariadb_template)
    try:
        yield srv
    finally:
        srv.stop(timeout=30)


def _check(out: Any) -> None:
    assert out.files >= 1
    assert not out.problems, "\n".join([*out.problems, "-- statements:", *out.statements])


def _scripted(spark: Any, template: Path, tmp_path: Path, variant: str,
              script: list[list[str]], *, name: int) -> None:
    """:func:`run_script` on a fresh server that logs rows as ``variant``, checked."""
    srv = start_server(tmp_path / "srv", template, options=VARIANTS[variant])
    try:
        _check(run_script(spark, srv, tmp_path, script, name=name))
    finally:
        srv.stop(timeout=30)


ROWS = ", ".join(f"({i}, 'v{i}')" for i in (1, 2, 3, 5, 8, 9, 13))
FIRST_NIGHT = ["CREATE DATABASE rn", "CREATE TABLE rn.a (id INT PRIMARY KEY, v VARCHAR(10))",
               f"INSERT INTO rn.a VALUES {ROWS}"]


def test_truncate_in_the_middle_of_a_night(spark_lake: Any, server: Any, tmp_path: Path
                                           ) -> None:
    _check(run_script(spark_lake, server, tmp_path, [
        FIRST_NIGHT,
        ["INSERT INTO rn.a VALUES (20, 'x'), (21, 'y')",
         "UPDATE rn.a SET v = 'u' WHERE id = 2",
         "TRUNCATE TABLE rn.a",
         "INSERT INTO rn.a VALUES (1, 'after'), (30, 'z')",
         "DELETE FROM rn.a WHERE id = 30",
         "CREATE TABLE rn.b (id INT PRIMARY KEY, n INT)",
         "INSERT INTO rn.b VALUES (1, 1), (2, 2)",
         "DROP TABLE rn.b",
         "CREATE TABLE rn.b (id INT PRIMARY KEY, n INT)",
         "INSERT INTO rn.b VALUES (3, 3)"],
    ], name=101))


def test_rename_then_keys_moved_in_one_run(spark_lake: Any, server: Any, tmp_path: Path
                                           ) -> None:
    _check(run_script(spark_lake, server, tmp_path, [
        FIRST_NIGHT,
        ["UPDATE rn.a SET v = 'before' WHERE id = 3",
         "RENAME TABLE rn.a TO rn.b",
         "UPDATE rn.b SET id = id + 1 ORDER BY id DESC",  # every key moves, most onto others'
         "UPDATE rn.b SET id = 100 WHERE id = 6",
         "DELETE FROM rn.b WHERE id = 10",
         "FLUSH BINARY LOGS",  # the rest in the run's next file
         "UPDATE rn.b SET id = id + 50 WHERE id = 2"],
        ["RENAME TABLE rn.b TO rn.c",
         "INSERT INTO rn.c VALUES (1, 'new')"],
    ], name=102))


def test_rename_after_a_column_rename(spark_lake: Any, server: Any, tmp_path: Path) -> None:
    """The mirror a RENAME TABLE makes from the old name's keeps the old name's dropped and
    renamed columns, which the table's later changes do not carry: they are NULL in the
    rows those write (the driver's MERGE failed on the missing column)."""
    _check(run_script(spark_lake, server, tmp_path, [
        ["CREATE DATABASE rn",
         "CREATE TABLE rn.a (id INT PRIMARY KEY, c INT, gone INT, v VARCHAR(10))",
         "INSERT INTO rn.a VALUES (1, 10, 1, 'a'), (2, 20, 2, 'b')",
         "ALTER TABLE rn.a RENAME COLUMN c TO d",
         "ALTER TABLE rn.a DROP COLUMN gone",
         "UPDATE rn.a SET d = 11 WHERE id = 1",
         "RENAME TABLE rn.a TO rn.b"],
        ["UPDATE rn.b SET v = 'z' WHERE id = 2",
         "INSERT INTO rn.b VALUES (3, 30, 'c')"],
    ], name=103))


ADDED = ["a BIT(5) NOT NULL DEFAULT b'11101'", "b VARBINARY(16) DEFAULT X'0aff'",
         "c TIME DEFAULT '-5:03:09'", "d SET('x','y','z') DEFAULT 'z,x'", "e TIME(3) NOT NULL",
         "f VARBINARY(4) NOT NULL", "g DOUBLE DEFAULT 1.5e-05", "h INT DEFAULT 0x1f",
         "i DATETIME(6) DEFAULT '2020-01-02 03:04:05.1'", "j ENUM('a','b') DEFAULT 'B'",
         "k DECIMAL(10,2) DEFAULT -12.5", "l VARCHAR(10) DEFAULT 'it''s'", "m BLOB NOT NULL",
         "n SET('x','y') NOT NULL", "p DATE DEFAULT '2020-1-2'", "r CHAR(3) DEFAULT 'ab '",
         "s BIT(8) DEFAULT 7", "t YEAR DEFAULT 99", "u INT DEFAULT '12'",
         "x TINYINT DEFAULT TRUE", "y BINARY(4) DEFAULT 'ab'", "z TIME(2) DEFAULT '838:59:59.5'",
         "aa MEDIUMTEXT NOT NULL", "bb INT UNSIGNED NOT NULL", "cc ENUM('q','r') NOT NULL"]


def test_added_column_defaults(spark_lake: Any, server: Any, tmp_path: Path) -> None:
    """ALTER TABLE ... ADD COLUMN: the mirror's older rows get what the server wrote into
    them, for literal defaults of every kind (bit and hex literals, times, sets, two-digit
    years, padded BINARY) and the implicit ones of NOT NULL columns (BIT defaults were NULL)."""
    _check(run_script(spark_lake, server, tmp_path, [
        FIRST_NIGHT,
        [*[f"ALTER TABLE rn.a ADD COLUMN {c}" for c in ADDED],
         "UPDATE rn.a SET v = 'changed' WHERE id = 1"],  # the layout after the ALTERs
    ], name=104))


def test_temporal_columns_retyped_to_text(spark_lake: Any, server: Any, tmp_path: Path
                                          ) -> None:
    """MODIFY of a DATETIME / TIMESTAMP column to a text type: the server writes every
    fractional digit of the column into the older rows' text; Spark's cast dropped the
    trailing zeros ('.100000' came out '.1')."""
    _check(run_script(spark_lake, server, tmp_path, [
        ["CREATE DATABASE rn",
         "CREATE TABLE rn.a (id INT PRIMARY KEY, d6 DATETIME(6), d0 DATETIME, "
         "t3 TIMESTAMP(3) NULL, v VARCHAR(10))",
         "INSERT INTO rn.a VALUES (1, '2020-01-02 03:04:05.100000', '2020-01-02 03:04:05', "
         "'2021-02-03 04:05:06.120', 'a'), (2, '1999-12-31 23:59:59.000001', "
         "'1999-12-31 23:59:59', '2001-01-01 00:00:00.000', 'b'), (3, NULL, NULL, NULL, 'c')"],
        ["ALTER TABLE rn.a MODIFY d6 TEXT, MODIFY d0 VARCHAR(30), MODIFY t3 TEXT",
         "UPDATE rn.a SET v = 'z' WHERE id = 3"],  # the layout after the ALTER
    ], name=109))


@pytest.mark.parametrize("variant", ["noblob", "minimal"])
def test_alters_between_partial_updates(spark_lake: Any, mariadb_template: Path,
                                        tmp_path: Path, variant: str) -> None:
    """ALTERs among a night's UPDATEs whose images are partial (NOBLOB: a column retyped to
    TEXT is absent from the updates that leave it; MINIMAL: every column they leave): the
    updated rows kept the retyped column's new typed column, an added column and a renamed
    column NULL (the ALTER was replayed after the night's changes, on rows that were no
    longer older than it), for rows from earlier nights and rows the night wrote before the
    ALTER alike."""
    _scripted(spark_lake, mariadb_template, tmp_path, variant, [
        ["CREATE DATABASE rn",
         "CREATE TABLE rn.a (id INT PRIMARY KEY, c INT, v VARCHAR(10), w INT)",
         "INSERT INTO rn.a VALUES (1, 10, 'a', 1), (2, 20, 'b', 2), (3, 30, 'c', 3)"],
        ["INSERT INTO rn.a VALUES (4, 40, 'd', 4)",
         "UPDATE rn.a SET v = 'p' WHERE id = 3",
         "ALTER TABLE rn.a MODIFY c TEXT",
         "UPDATE rn.a SET v = 'x' WHERE id IN (1, 3, 4)",
         "ALTER TABLE rn.a ADD COLUMN d INT NOT NULL DEFAULT 7",
         "ALTER TABLE rn.a RENAME COLUMN w TO w2",
         "UPDATE rn.a SET v = 'y' WHERE id IN (1, 2)",
         "INSERT INTO rn.a VALUES (5, '50', 'e', 5, 8)"],
        ["UPDATE rn.a SET v = 'z' WHERE id IN (2, 3, 4, 5)"],
    ], name=105 if variant == "noblob" else 106)


@pytest.mark.parametrize("variant", ["full", "noblob"])
def test_alters_after_a_rename_in_one_run(spark_lake: Any, mariadb_template: Path,
                                          tmp_path: Path, variant: str) -> None:
    """A RENAME TABLE a TO b, then ALTERs of b, in one run (random nights seed 211,
    NOBLOB): the run replayed b's ALTERs before the rename moved a's rows into b's
    mirror, so the moved rows that nothing changed after held NULL in the added columns
    (the server: '' and 7), and a retyped column's value stayed in its old typed column."""
    _scripted(spark_lake, mariadb_template, tmp_path, variant, [
        ["CREATE DATABASE rn",
         "CREATE TABLE rn.a (id INT PRIMARY KEY, c INT, v VARCHAR(10))",
         "INSERT INTO rn.a VALUES (1, 10, 'a'), (2, 20, 'b')"],
        ["INSERT INTO rn.a VALUES (3, 30, 'c'), (4, 40, 'd')",
         "RENAME TABLE rn.a TO rn.b",
         "INSERT INTO rn.b VALUES (5, 50, 'e')",
         "ALTER TABLE rn.b ADD COLUMN n CHAR(8) NOT NULL",
         "ALTER TABLE rn.b ADD COLUMN d INT DEFAULT 7",
         "ALTER TABLE rn.b MODIFY c TEXT",
         # (a row written under the new name: the run has b's changes, and so replays
         # its ALTERs; updates of moved rows with partial images: the next test)
         "UPDATE rn.b SET v = 'x' WHERE id = 5"],
        ["UPDATE rn.b SET v = 'y' WHERE id IN (2, 4)"],
    ], name=110 if variant == "full" else 111)


@pytest.mark.parametrize("variant", ["minimal", "noblob"])
def test_partial_updates_of_renamed_rows_in_one_run(spark_lake: Any, mariadb_template: Path,
                                                    tmp_path: Path, variant: str) -> None:
    """UPDATEs with partial images (MINIMAL: key and changed columns; NOBLOB: no unchanged
    TEXT) of rows a RENAME TABLE in the same run moves in, around ALTERs of the new name:
    the run MERGEd the updates into b's mirror before the rename moved a's rows there, so
    the rows held NULL in every column the images lacked, and the move skipped their keys."""
    rows = ", ".join(f"({i}, {i * 10}, 'v{i}', 't{i}')" for i in range(1, 7))
    _scripted(spark_lake, mariadb_template, tmp_path, variant, [
        ["CREATE DATABASE rn",
         "CREATE TABLE rn.a (id INT PRIMARY KEY, c INT, v VARCHAR(10), t TEXT)",
         f"INSERT INTO rn.a VALUES {rows}"],
        ["UPDATE rn.a SET v = 'w' WHERE id = 6",
         "RENAME TABLE rn.a TO rn.b",
         "UPDATE rn.b SET v = 'x' WHERE id = 2",
         "UPDATE rn.b SET v = 'x2' WHERE id = 2",
         "ALTER TABLE rn.b MODIFY c TEXT",
         "UPDATE rn.b SET v = 'y' WHERE id = 3",
         "ALTER TABLE rn.b ADD COLUMN d INT DEFAULT 7",
         "UPDATE rn.b SET v = 'z', c = 'cz' WHERE id = 4",
         "UPDATE rn.b SET t = 'tt' WHERE id = 5",
         "DELETE FROM rn.b WHERE id = 6"],
        ["UPDATE rn.b SET d = 8 WHERE id = 1"],
    ], name=112 if variant == "minimal" else 113)


@pytest.mark.parametrize("variant", ["full", "minimal", "noblob"])
def test_online_schema_change_swap(spark_lake: Any, mariadb_template: Path, tmp_path: Path,
                                   variant: str) -> None:
    """An online schema change as gh-ost and pt-online-schema-change make it: a shadow
    table with the new columns filled from the table and kept in step, swapped in by one
    RENAME TABLE of two pairs, the old table dropped, and the night's changes going on to
    the swapped-in table (MINIMAL images after the swap: key and changed columns only)."""
    rows = ", ".join(f"({i}, {i * 10}, 'v{i}', 'b{i}')" for i in range(1, 7))
    _scripted(spark_lake, mariadb_template, tmp_path, variant, [
        ["CREATE DATABASE rn",
         "CREATE TABLE rn.t (id INT PRIMARY KEY, a INT, v VARCHAR(20), b TEXT)",
         f"INSERT INTO rn.t VALUES {rows}"],
        ["CREATE TABLE rn._t_gho LIKE rn.t",
         "ALTER TABLE rn._t_gho ADD COLUMN z INT DEFAULT 3, MODIFY a BIGINT",
         "INSERT INTO rn._t_gho (id, a, v, b) SELECT id, a, v, b FROM rn.t",
         "UPDATE rn.t SET v = 'u' WHERE id = 2",
         "UPDATE rn._t_gho SET v = 'u' WHERE id = 2",
         "RENAME TABLE rn.t TO rn._t_del, rn._t_gho TO rn.t",
         "DROP TABLE rn._t_del",
         "UPDATE rn.t SET a = 99 WHERE id = 3",
         "UPDATE rn.t SET z = 4 WHERE id = 5",
         "DELETE FROM rn.t WHERE id = 4",
         "INSERT INTO rn.t VALUES (7, 70, 'v7', 'b7', 5)"],
        ["UPDATE rn.t SET v = 'n3' WHERE id IN (1, 5)",
         "CREATE TABLE rn._t_gho LIKE rn.t",
         "INSERT INTO rn._t_gho SELECT * FROM rn.t",
         "RENAME TABLE rn.t TO rn._t_del, rn._t_gho TO rn.t",
         "DROP TABLE rn._t_del",
         "UPDATE rn.t SET b = 'bb' WHERE id = 6"],
    ], name={"full": 114, "minimal": 115, "noblob": 116}[variant])


@pytest.mark.parametrize("variant", ["minimal", "noblob"])
def test_inserts_that_leave_columns_to_their_defaults(spark_lake: Any,
                                                       mariadb_template: Path,
                                                       tmp_path: Path, variant: str) -> None:
    """INSERTs that name some columns only: a MINIMAL row image has those columns alone
    (``binlog_row_image``), and the typed tables held NULL where the server wrote the
    column's default.  Defaults of several types, changed by ALTER COLUMN SET / DROP
    DEFAULT, and of a column an ALTER added; INSERT ... ON DUPLICATE KEY UPDATE and
    INSERT ... SELECT."""
    _scripted(spark_lake, mariadb_template, tmp_path, variant, [
        ["CREATE DATABASE rn",
         "CREATE TABLE rn.d (id INT PRIMARY KEY, i INT DEFAULT 5, "
         "s VARCHAR(10) DEFAULT 'it''s', e ENUM('a','b') DEFAULT 'b', "
         "m DECIMAL(8,3) DEFAULT 1.5, f DOUBLE DEFAULT -2.5, n INT NULL, "
         "c CHAR(4) DEFAULT 'ab', u TINYINT UNSIGNED DEFAULT 200, "
         "b BIGINT NOT NULL DEFAULT -7, t TEXT, bn BINARY(3) DEFAULT X'0a', "
         "st SET('x','y','z') DEFAULT 'z,X', dt DATETIME(3) DEFAULT "
         "'2020-01-02 03:04:05.1', tm TIME DEFAULT '-5:06:07', bits BIT(5) DEFAULT "
         "b'00101', y YEAR DEFAULT 2024, dd DATE DEFAULT '2021-03-04')",
         "INSERT INTO rn.d (id) VALUES (1), (2)",
         "INSERT INTO rn.d (id, i, s) VALUES (3, 7, 'x')",
         "UPDATE rn.d SET i = 6 WHERE id = 2"],
        ["ALTER TABLE rn.d ALTER COLUMN i SET DEFAULT 9, ALTER COLUMN s DROP DEFAULT",
         "INSERT INTO rn.d (id) VALUES (4)",
         "ALTER TABLE rn.d ADD COLUMN z SMALLINT DEFAULT 3",
         "INSERT INTO rn.d (id, t) VALUES (5, 'tt')",
         # (not a REPLACE of a row that is there: MariaDB logs it as an UPDATE whose
         # MINIMAL image lacks the columns it reset to their defaults; docs/lake.md)
         "INSERT INTO rn.d (id, e) VALUES (6, 'a') ON DUPLICATE KEY UPDATE e = 'b'",
         "INSERT INTO rn.d (id, m) SELECT id + 10, 0.25 FROM rn.d WHERE id < 3",
         # NOT NULL columns without a DEFAULT: the type's implicit one, where the
         # server writes the row anyway
         "CREATE TABLE rn.nn (id INT PRIMARY KEY, a INT NOT NULL, "
         "m DECIMAL(6,2) NOT NULL, s VARCHAR(4) NOT NULL, e ENUM('q','r') NOT NULL, "
         "tm TIME(1) NOT NULL, b BINARY(2) NOT NULL, y YEAR NOT NULL)",
         "INSERT IGNORE INTO rn.nn (id) VALUES (1)",
         "INSERT IGNORE INTO rn.nn (id, s) VALUES (2, 'x')"],
    ], name=117 if variant == "minimal" else 118)


@pytest.mark.parametrize("variant", ["minimal", "noblob"])
def test_keys_moved_with_partial_images(spark_lake: Any, mariadb_template: Path,
                                        tmp_path: Path, variant: str) -> None:
    """UPDATEs that move keys, logged with partial images (MINIMAL: the after image has the
    key and the changed columns only; NOBLOB: no unchanged TEXT): the moved rows lost the
    columns their images lack (NULL in the mirror).  Rows from earlier nights, rows moved
    twice in a run (across a file), moved onto keys other rows left, a swap through a
    spare key, and a move after an ALTER that retyped a column."""
    rows = ", ".join(f"({i}, {i * 10}, 'v{i}', 't{i}')" for i in range(1, 9))
    _scripted(spark_lake, mariadb_template, tmp_path, variant, [
        ["CREATE DATABASE rn",
         "CREATE TABLE rn.a (id INT PRIMARY KEY, n INT, v VARCHAR(10), t TEXT)",
         f"INSERT INTO rn.a VALUES {rows}",
         "CREATE TABLE rn.b (k VARBINARY(8), d DATETIME(3), t TEXT, PRIMARY KEY (k))",
         "INSERT INTO rn.b VALUES (X'00ff', '2020-01-02 03:04:05.600', 'x'), "
         "(X'01', NULL, 'y')",
         "UPDATE rn.b SET k = X'02' WHERE k = X'01'"],
        ["UPDATE rn.a SET id = id + 100 WHERE id IN (1, 2)",
         "UPDATE rn.a SET n = 11 WHERE id = 101",
         "UPDATE rn.a SET id = 1 WHERE id = 101",  # back to a key it left
         "UPDATE rn.a SET id = id + 1 ORDER BY id DESC",  # every key, onto others'
         "FLUSH BINARY LOGS",
         "UPDATE rn.a SET id = 50, v = 'w' WHERE id = 4",
         "UPDATE rn.a SET id = 0 WHERE id = 5",  # swap 5 and 6 through 0
         "UPDATE rn.a SET id = 5 WHERE id = 6",
         "UPDATE rn.a SET id = 6 WHERE id = 0",
         "INSERT INTO rn.a VALUES (200, 2, 'new', 'x')",
         "UPDATE rn.a SET id = 201 WHERE id = 200",
         "UPDATE rn.b SET k = CONCAT(k, X'aa')"],
        ["ALTER TABLE rn.a MODIFY n VARCHAR(20)",
         "UPDATE rn.a SET id = id * 1000 WHERE id IN (3, 50)",
         "UPDATE rn.a SET t = 'changed', id = 7000 WHERE id = 7"],
    ], name=107 if variant == "minimal" else 108)


# (four seeds: CI's time; more with ``python -m tests.random_nights``)
@pytest.mark.parametrize(("seed", "variant"), [(1, "full"), (3, "no_log"), (11, "noblob"),
                                               (14, "minimal")])
def test_random_nights(spark_lake: Any, mariadb_template: Path, tmp_path: Path, seed: int,
                       variant: str) -> None:
    srv = start_server(tmp_path / "srv", mariadb_template, options=VARIANTS[variant])
    try:
        _check(run_seed(spark_lake, srv, tmp_path, seed, nights=3, ops=40, variant=variant))
    finally:
        srv.stop(timeout=30)
