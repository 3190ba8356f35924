"""The schema history (lib/binlake/schema, docs/schema.md): DDL in the binlog -> versions
keyed by position, checked against a real MariaDB server's information_schema and against
every Table_map the server wrote; the MySQL 8 corpus files; unit tests of the pieces."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from binlake.binlog.constants import ColumnType as T
from binlake.schema import (
    SchemaHistory,
    apply_ddl,
    binlog_type,
    build_history,
    from_information_schema,
    from_mysqldump,
)
from binlake.schema.model import SchemaColumn
from binlake.schema.sqltext import ddl_kind, expand_versioned, split_statements

from .corpus import CORPUS, require_corpus

# -- unit tests -----------------------------------------------------------------------------


def _h(*stmts: str, db: str = "d", version: int = 101100, mariadb: bool = True) -> SchemaHistory:
    h = SchemaHistory()
    for i, s in enumerate(stmts):
        apply_ddl(h, s, db=db, pos=(1, 100 * (i + 1)), file="f.000001",
                  server_version=version, mariadb=mariadb)
    return h


def _cols(h: SchemaHistory, db: str, t: str) -> list[str] | None:
    v = h.latest(db, t)
    assert v is not None
    return None if v.columns is None else [f"{c.name} {c.type}" for c in v.columns]


def test_versioned_comments() -> None:
    sql = "CREATE TABLE t (a INT /*!50100 , b INT */ /*!80000 , c INT */ /*M!100100 , d INT */)"
    assert "b INT" in expand_versioned(sql, 50744, mariadb=False)
    assert "c INT" not in expand_versioned(sql, 50744, mariadb=False)
    assert "c INT" in expand_versioned(sql, 80030, mariadb=False)
    assert "d INT" not in expand_versioned(sql, 80030, mariadb=False)  # /*M! is MariaDB's
    assert "d INT" in expand_versioned(sql, 101100, mariadb=True)
    # a comment marker inside a string is not a comment
    assert expand_versioned("SELECT '/*!1 x */'", 1) == "SELECT '/*!1 x */'"
    assert _cols(_h(sql, version=50744, mariadb=False), "d", "t") == ["a int", "b int"]
    assert _cols(_h(sql, version=80030, mariadb=False), "d", "t") == ["a int", "b int", "c int"]
    assert _cols(_h(sql, version=101100), "d", "t") == ["a int", "b int", "c int", "d int"]


def test_unparseable_is_a_finding_not_a_guess() -> None:
    h = _h("CREATE TABLE t (a INT, b INT)", "ALTER TABLE t ADD COLUMN p POINT",
           "CREATE TABLE r (x REAL)", "ALTER TABLE t ADD COLUMN q INT")
    kinds = [(f.kind, f.pos, f.table) for f in h.findings]
    assert ("unparsed", (1, 200), "d.t") in kinds
    assert ("uninterpreted", (1, 300), "d.r") in kinds
    assert h.findings[0].statement == "ALTER TABLE t ADD COLUMN p POINT"
    assert h.findings[0].file == "f.000001"
    # before the bad ALTER: the CREATE's version; from it on: unknown, never a guess
    v = h.at("d", "t", (1, 150))
    assert v is not None and v.columns is not None and len(v.columns) == 2
    v = h.at("d", "t", (1, 250))
    assert v is not None and v.columns is None
    assert _cols(h, "d", "r") is None
    assert _cols(h, "d", "t") is None  # a later ALTER does not revive a guessed schema
    assert h.at("d", "t", (1, 50)) is None  # before the CREATE


def test_alter_forms_rename_swap_and_history_lookup() -> None:
    h = _h("CREATE TABLE `T 1` (id INT UNSIGNED NOT NULL, v VARCHAR(10) CHARACTER SET latin1,"
           " d DECIMAL(10,2), PRIMARY KEY (id))",
           "ALTER TABLE `T 1` ADD COLUMN x INT AFTER id, DROP COLUMN d, MODIFY v BIGINT FIRST,"
           " CHANGE x y TEXT, RENAME COLUMN y TO z, DROP PRIMARY KEY, ADD PRIMARY KEY (id, v)",
           "ALTER TABLE `T 1` RENAME TO other.u",
           "CREATE TABLE a (i INT)", "CREATE TABLE b (j TEXT NOT NULL)",
           "RENAME TABLE a TO tmp, b TO a, tmp TO b",
           "TRUNCATE TABLE a", "DROP TABLE IF EXISTS b", "CREATE TABLE b (k DATETIME(6))",
           "ALTER TABLE b DISABLE KEYS", "ALTER TABLE `b` ENABLE KEYS",
           "ALTER TABLE b ADD PARTITION (PARTITION p3 VALUES LESS THAN (30))")
    u = h.latest("other", "u")
    assert u is not None and u.columns is not None
    assert [(c.name, c.type, c.nullable) for c in u.columns] == [
        ("v", "bigint", False), ("id", "int unsigned", False), ("z", "text", True)]
    assert u.primary_key == ("id", "v")
    assert u.incarnation == 1 and u.change == "rename_in"
    assert not h.latest("d", "T 1").exists  # type: ignore[union-attr]
    assert _cols(h, "d", "a") == ["j text"]
    assert h.latest("d", "a").change == "truncate"  # type: ignore[union-attr]
    assert _cols(h, "d", "b") == ["k datetime(6)"]
    assert h.latest("d", "b").incarnation == 3  # type: ignore[union-attr]
    assert _cols(h, "d", "tmp") is None and not h.latest("d", "tmp").exists  # type: ignore
    # in force at a position: the swap at 600, the truncate at 700, the drop at 800
    assert [c.name for c in h.at("d", "b", (1, 650)).columns] == ["i"]  # type: ignore
    assert h.at("d", "b", (1, 850)) is not None and not h.at("d", "b", (1, 850)).exists  # type: ignore
    assert h.at("d", "b", (2, 0)).columns[0].name == "k"  # type: ignore[index,union-attr]
    assert not h.findings


def test_rename_if_exists_and_uninterpreted_rename() -> None:
    h = _h("CREATE TABLE t (a INT)", "RENAME TABLE IF EXISTS gone TO g2, t TO u",
           "CREATE TABLE v (b INT)", "RENAME TABLE v TO w x")
    assert _cols(h, "d", "u") == ["a int"] and not h.latest("d", "t").exists  # type: ignore
    # a source the history never saw: the target's schema is unknown (not skipped, not guessed)
    assert _cols(h, "d", "g2") is None
    assert [f.kind for f in h.findings] == ["unknown_table", "uninterpreted"]
    assert h.latest("d", "to") is None
    # the tables a RENAME not interpreted names are unknown from it, not left as they were
    assert _cols(h, "d", "v") is None and _cols(h, "d", "w") is None


def test_create_like_select_and_database() -> None:
    h = _h("CREATE TABLE s (a INT PRIMARY KEY, b ENUM('x','y''z'))",
           "CREATE TABLE IF NOT EXISTS s (zz INT)", "CREATE TABLE c LIKE s",
           "CREATE TABLE cs (n INT) SELECT a AS n FROM s", "CREATE TABLE cz SELECT * FROM s",
           "DROP DATABASE d")
    assert [f.kind for f in h.findings] == ["create_select", "create_select"]
    assert h.findings[1].table == "d.cz"
    v = h.at("d", "s", (1, 250))
    assert v is not None and v.change == "create_skipped" and v.column("zz") is None
    v = h.at("d", "c", (1, 350))
    assert v is not None and v.primary_key == ("a",)
    assert v.columns is not None and v.columns[1].members == ("x", "y'z")
    assert h.at("d", "cz", (1, 550)).columns is None  # type: ignore[union-attr]
    assert all(not h.latest("d", t).exists for t in ("s", "c", "cs", "cz"))  # type: ignore


def test_ddl_kind_and_split() -> None:
    assert ddl_kind("/* x */ create table t (a int)") == "table"
    assert ddl_kind("CREATE OR REPLACE TABLE t (a int)") == "table"
    assert ddl_kind("CREATE VIEW v AS SELECT 1") == "other"
    assert ddl_kind("INSERT INTO t VALUES (1)") is None
    assert ddl_kind("BEGIN") is None
    assert split_statements("USE `a;b`;\n-- c;\nCREATE TABLE t (s VARCHAR(3) DEFAULT ';');\n"
                            "DELIMITER ;;\nCREATE TRIGGER x BEFORE INSERT ON t FOR EACH ROW "
                            "BEGIN SET @a=1; END ;;\nDELIMITER ;\n") == [
        "USE `a;b`", "CREATE TABLE t (s VARCHAR(3) DEFAULT ';')",
        "CREATE TRIGGER x BEFORE INSERT ON t FOR EACH ROW BEGIN SET @a=1; END"]


def test_binlog_type_codes() -> None:
    def code(t: str, mariadb: bool = False, version: tuple[int, int, int] = (8, 0, 30)) -> int:
        h = _h(f"CREATE TABLE t (c {t})", mariadb=mariadb)
        v = h.latest("d", "t")
        assert v is not None and v.columns is not None, h.findings
        got = binlog_type(v.columns[0], mariadb=mariadb, version=version)
        assert got is not None
        return got

    assert code("VARCHAR(3)") == T.VARCHAR and code("VARBINARY(3)") == T.VARCHAR
    assert code("CHAR(3)") == T.STRING and code("BINARY(2)") == T.STRING
    assert code("ENUM('a')") == T.STRING and code("SET('a')") == T.STRING
    assert code("DATETIME(3)") == T.DATETIME2 and code("TIMESTAMP") == T.TIMESTAMP2
    assert code("TIME") == T.TIME2 and code("DATETIME", version=(5, 5, 0)) == T.DATETIME
    assert code("DECIMAL(5,2)") == T.NEWDECIMAL and code("NUMERIC") == T.NEWDECIMAL
    assert code("TEXT") == T.BLOB and code("LONGBLOB") == T.BLOB
    assert code("JSON") == T.JSON and code("JSON", mariadb=True) == T.BLOB
    assert code("BOOL") == T.TINY and code("YEAR") == T.YEAR and code("BIT(3)") == T.BIT
    assert code("GEOMETRY") == T.GEOMETRY and code("MEDIUMINT") == T.INT24
    assert code("BIGINT UNSIGNED") == T.LONGLONG and code("DOUBLE") == T.DOUBLE
    assert code("FLOAT(30)") == T.DOUBLE and code("FLOAT") == T.FLOAT
    assert code("DATE") == T.DATE
    col = SchemaColumn("x", "inet6", "inet6")
    assert binlog_type(col, mariadb=True) is None  # unknown: no guess


def test_from_mysqldump_text() -> None:
    text = ("/*!40101 SET NAMES utf8mb4 */;\nCREATE DATABASE /*!32312 IF NOT EXISTS*/ `db1`;\n"
            "USE `db1`;\nDROP TABLE IF EXISTS `t`;\n/*!40101 SET character_set_client = utf8 */;"
            "\nCREATE TABLE `t` (\n  `id` int(11) NOT NULL,\n  `s` varchar(5) DEFAULT ';',\n"
            "  PRIMARY KEY (`id`)\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;\nUSE db2;\n"
            "CREATE TABLE u (a int);\n")
    h = from_mysqldump(text)
    assert _cols(h, "db1", "t") == ["id int", "s varchar(5)"]
    assert h.latest("db1", "t").primary_key == ("id",)  # type: ignore[union-attr]
    assert _cols(h, "db2", "u") == ["a int"]
    assert not h.findings


# -- a real MariaDB server ------------------------------------------------------------------

WORKLOAD = [
    "CREATE DATABASE db1", "CREATE DATABASE db2", "USE db1",
    "CREATE TABLE t1 (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, a VARCHAR(20),"
    " b DECIMAL(10,2) UNSIGNED, c DATETIME(3), d TIMESTAMP(2) NULL, e TIME, f YEAR,"
    " g ENUM('x','y') NOT NULL DEFAULT 'x', h SET('p','q'), i BIT(5), j JSON, k TEXT,"
    " l BLOB, m CHAR(3), n BINARY(4), o VARBINARY(7), p BOOL, q GEOMETRY, r DOUBLE,"
    " s FLOAT, u BIGINT UNSIGNED, v MEDIUMINT, w SMALLINT, x TINYINT, y DATE, z LONGTEXT)",
    "INSERT INTO t1 (a) VALUES ('one')",
    "ALTER TABLE t1 ADD COLUMN a2 INT NOT NULL DEFAULT 0 AFTER a, DROP COLUMN s,"
    " MODIFY r DECIMAL(5,1) FIRST, CHANGE x x2 SMALLINT, RENAME COLUMN w TO w2",
    "INSERT INTO t1 (a) VALUES ('two')",
    "ALTER TABLE t1 DROP PRIMARY KEY, ADD PRIMARY KEY (id, a2)",
    "INSERT INTO t1 (a) VALUES ('three')",
    "TRUNCATE TABLE t1", "INSERT INTO t1 (a) VALUES ('four')",
    "CREATE TABLE `we ird``name` (`col one` INT, `select` VARCHAR(5))",
    "INSERT INTO `we ird``name` VALUES (1, 'a')",
    "DROP TABLE `we ird``name`",
    "CREATE TABLE `we ird``name` (`col one` VARCHAR(9) NOT NULL, z2 DOUBLE, PRIMARY KEY"
    " (`col one`))",
    "INSERT INTO `we ird``name` VALUES ('b', 2)",
    "CREATE TABLE a (x INT)", "CREATE TABLE b (y VARCHAR(3), z INT)",
    "INSERT INTO a VALUES (1)", "INSERT INTO b VALUES ('q', 2)",
    "RENAME TABLE a TO tmp, b TO a, tmp TO b",
    "INSERT INTO a VALUES ('r', 3)", "INSERT INTO b VALUES (4)",
    "CREATE TABLE c LIKE a", "INSERT INTO c VALUES ('s', 5)",
    "CREATE TABLE ai (n INT AUTO_INCREMENT, e ENUM('UNSIGNED', 'b'), UNIQUE KEY (n))",
    "INSERT INTO ai (e) VALUES ('b')",
    "CREATE TABLE cs (k INT NOT NULL PRIMARY KEY) SELECT x AS k FROM b",
    "INSERT INTO cs VALUES (9)",
    "CREATE TABLE part (id INT NOT NULL, v INT, PRIMARY KEY (id)) PARTITION BY RANGE (id)"
    " (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN (100))",
    "INSERT INTO part VALUES (1, 1), (50, 2)",
    "ALTER TABLE part ADD PARTITION (PARTITION p2 VALUES LESS THAN (1000))",
    "ALTER TABLE part ADD COLUMN w INT", "INSERT INTO part VALUES (500, 3, 3)",
    "CREATE TABLE vc (a INT /*!50100 , b INT */ /*!999999 , c INT */ /*M!100100 , d INT */)"
    " /*!50100 COMMENT 'versioned' */",
    "INSERT INTO vc VALUES (1, 2, 3)",
    "CREATE TABLE IF NOT EXISTS t1 (zzz INT)", "DROP TABLE IF EXISTS nonexistent",
    "ALTER TABLE c ADD INDEX ix (z), ENGINE=InnoDB", "CREATE INDEX i2 ON c (y)",
    "ALTER TABLE c ALTER COLUMN z SET DEFAULT 7", "INSERT INTO c (y) VALUES ('t')",
    "USE db2",
    "CREATE TABLE t2 (a INT, b INT AS (a + 1) VIRTUAL, c INT INVISIBLE, d INT AS (a * 2)"
    " PERSISTENT)",
    "INSERT INTO t2 (a, c) VALUES (1, 2)",
    "ALTER TABLE db1.t1 ADD COLUMN from_db2 INT FIRST", "INSERT INTO db1.t1 (a) VALUES ('5')",
    "CREATE TABLE db1.crossing (a INT)", "RENAME TABLE db1.crossing TO db2.crossed",
    "INSERT INTO crossed VALUES (1)",
    "CREATE DATABASE db3", "CREATE TABLE db3.g (a INT)", "INSERT INTO db3.g VALUES (1)",
    "DROP DATABASE db3",
    "CREATE TEMPORARY TABLE tt (a INT)", "DROP TEMPORARY TABLE tt",
]


def _run(srv: Any, statements: list[str]) -> None:
    conn = srv.connect()
    try:
        with conn.cursor() as cur:
            for s in statements:
                cur.execute(s)
    finally:
        conn.close()


def _comparable(v: Any, mariadb: bool = True) -> tuple[Any, ...]:
    cols = []
    for c in v.columns:
        t = "longtext" if (mariadb and c.base == "json") else c.type
        cols.append((c.name, t, c.nullable, c.generated, c.invisible))
    return (tuple(cols), tuple(p.lower() for p in v.primary_key))


@pytest.mark.integration
def test_mariadb_workload_history_matches_server(fresh_mariadb: Any) -> None:
    srv = fresh_mariadb
    _run(srv, WORKLOAD)
    srv.flush_binary_logs()
    files = [str(f) for f in srv.binlog_files()]
    res = build_history(files)
    h = res.history
    assert not res.errors
    assert not [f for f in h.findings], [str(f) for f in h.findings]
    # every Table_map agrees with the version in force (types, count, FULL metadata names)
    assert len(res.checks) >= 20
    assert not res.disagreed, res.disagreed
    # the final versions equal information_schema, table by table
    conn = srv.connect()
    try:
        truth = from_information_schema(conn, ["db1", "db2", "db3"])
    finally:
        conn.close()
    got = {k: v for k, v in h.current().items() if k[0] in ("db1", "db2", "db3")}
    assert sorted(got) == sorted(truth.current())
    for key, v in truth.current().items():
        assert _comparable(got[key]) == _comparable(v), key
    # things the workload did, as the history tells them
    t1 = h.latest("db1", "t1")
    assert t1 is not None and t1.columns is not None
    assert [c.name for c in t1.columns][:5] == ["from_db2", "r", "id", "a", "a2"]
    assert t1.primary_key == ("id", "a2")
    assert h.latest("db1", "we ird`name").incarnation == 2  # type: ignore[union-attr]
    assert [c.name for c in h.latest("db1", "a").columns] == ["y", "z"]  # type: ignore
    assert [c.name for c in h.latest("db1", "vc").columns] == ["a", "b", "d"]  # type: ignore
    assert not h.latest("db3", "g").exists  # type: ignore[union-attr]
    assert h.latest("db2", "tt") is None
    changes = {v.change for v in h.all_versions()}
    # (MariaDB 10.11 does not log a CREATE TABLE IF NOT EXISTS of an existing table)
    assert {"create", "alter", "truncate", "drop", "rename_in", "rename_out",
            "index"} <= changes


@pytest.mark.integration
def test_ddl_not_logged_makes_table_maps_disagree(fresh_mariadb: Any) -> None:
    srv = fresh_mariadb
    _run(srv, ["CREATE DATABASE s", "USE s", "CREATE TABLE t (a INT)",
               "INSERT INTO t VALUES (1)", "SET sql_log_bin = 0",
               "ALTER TABLE t ADD COLUMN b VARCHAR(3)", "SET sql_log_bin = 1",
               "INSERT INTO t VALUES (2, 'x')"])
    srv.flush_binary_logs()
    res = build_history([str(f) for f in srv.binlog_files()])
    assert [c.agrees for c in res.checks] == [True, False]
    bad = [f for f in res.history.findings if f.kind == "table_map_mismatch"]
    assert len(bad) == 1
    assert bad[0].table == "s.t" and bad[0].expected == ["a"] and bad[0].found == ["a", "b"]
    assert bad[0].pos == res.checks[1].pos
    # no version was made up for the DDL the binlog does not hold
    assert len(res.history.versions[("s", "t")]) == 1


@pytest.mark.integration
def test_seeds_from_dump_and_information_schema_agree(fresh_mariadb: Any) -> None:
    srv = fresh_mariadb
    _run(srv, [s for s in WORKLOAD if not s.startswith(("INSERT", "DROP DATABASE db3"))])
    dump = subprocess.run(["mariadb-dump", f"--socket={srv.socket_path}", "-uroot",
                           "--no-data", "--databases", "db1", "db2"],
                          capture_output=True, text=True, check=True).stdout
    seeded = from_mysqldump(dump, server_version=101100, mariadb=True)
    assert not seeded.findings, [str(f) for f in seeded.findings]
    conn = srv.connect()
    try:
        truth = from_information_schema(conn, ["db1", "db2"])
    finally:
        conn.close()
    assert sorted(seeded.current()) == sorted(truth.current())
    for key, v in truth.current().items():
        assert _comparable(seeded.current()[key]) == _comparable(v), key


# -- the MySQL 8 corpus ---------------------------------------------------------------------


def _mysql8_files() -> list[Path]:
    return sorted(p for p in (CORPUS / "mysql-8.0").rglob("*") if p.is_file()
                  and p.suffix not in (".md", ".txt", ".result", ".json", ".test", ".inc", ".sql",
                                                ".index"))


def test_mysql8_corpus_table_maps_after_create_agree() -> None:
    require_corpus()
    checked = agreed = 0
    for f in _mysql8_files():
        res = build_history([str(f)])  # must not raise
        h = res.history
        for c in res.checks:
            db, _, table = c.table.partition(".")
            v = h.at(db, table, c.pos)
            if v is None or v.columns is None:
                continue  # no CREATE in the file (or one not interpreted, with a finding)
            checked += 1
            assert c.agrees, (str(f), c)
            agreed += 1
    assert checked >= 10 and agreed == checked


def test_cli_schema_json_lines(capsysbinary: pytest.CaptureFixture[bytes],
                               tmp_path: Path) -> None:
    """``binlake schema`` on a corpus file, with a mysqldump snapshot."""
    import json

    from binlake.cli import main

    require_corpus()
    f = CORPUS / "mysql-8.0" / "std_data" / "replicated-bin.000001"
    snap = tmp_path / "dump.sql"
    snap.write_text("USE mtr;\nCREATE TABLE test_suppressions (pattern VARCHAR(255) NOT NULL);\n")
    assert main(["schema", "--snapshot", str(snap), str(f)]) == 0
    out, err = capsysbinary.readouterr()
    lines = [json.loads(x) for x in out.splitlines()]
    versions = [x["version"] for x in lines if "version" in x]
    assert [(v["db"], v["table"], v["change"]) for v in versions] == [
        ("mtr", "test_suppressions", "create"), ("test", "t1", "create")]
    assert versions[0]["start"] == {"file": str(snap), "seq": -1, "pos": 0}
    assert versions[1]["start"]["seq"] == 1 and versions[1]["ddl"] == "create table t1(i int)"
    assert versions[1]["columns"] == [{"name": "i", "type": "int", "nullable": True}]
    assert not [x for x in lines if "finding" in x]  # every Table_map agrees
    assert b"4 Table_map(s) checked, 0 disagree(s)" in err
