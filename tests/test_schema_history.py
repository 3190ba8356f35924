"""The schema history (lib/binlake/schema, docs/schema.md): DDL in the binlog -> versions
keyed by position, checked against a real MariaDB server's information_schema and against
every Table_map the server wrote; the MySQL 8 corpus files; unit tests of the pieces."""

from __future__ import annotations

import re
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


def _cs(h: SchemaHistory, db: str, t: str
        ) -> tuple[tuple[str | None, str | None], dict[str, tuple[str | None, str | None]]]:
    """A version's table default, and the (charset, collation) of its columns that have one."""
    v = h.latest(db, t)
    assert v is not None and v.columns is not None, [str(f) for f in h.findings]
    return (v.charset, v.collation), {c.name: (c.charset, c.collation) for c in v.columns
                                      if c.charset or c.collation}


def test_charsets_from_column_table_and_database() -> None:
    h = _h("CREATE DATABASE gaps CHARACTER SET utf8mb4",
           "CREATE TABLE gaps.td (a VARCHAR(5), n INT, b BLOB, j JSON) DEFAULT CHARSET=latin1",
           "CREATE TABLE gaps.co (a VARCHAR(5) COLLATE latin1_bin, b TEXT CHARACTER SET 'greek',"
           " c CHAR(2) COLLATE utf8_bin, d NCHAR(2), e VARCHAR(2) COLLATE uca1400_ai_ci,"
           " f VARCHAR(2) ASCII, g CHAR(1) CHARACTER SET binary)",
           "CREATE DATABASE gd DEFAULT CHARACTER SET = latin1 DEFAULT COLLATE = latin1_german2_ci",
           "CREATE TABLE gd.dd (a VARCHAR(5), e ENUM('x'), s SET('y'), t TINYTEXT, i INT)",
           "CREATE TABLE gd.tc (a VARCHAR(5)) COLLATE=cp1251_bin",
           "CREATE TABLE gd.ds (a VARCHAR(5)) CHARACTER SET = DEFAULT",
           "CREATE TABLE gd.dc (a VARCHAR(5)) CHARSET utf8mb4 COLLATE utf8mb4_bin",
           "CREATE TABLE gd.u8 (a VARCHAR(5)) ENGINE=InnoDB DEFAULT CHARSET=utf8"
           " COLLATE=utf8_bin",
           "CREATE TABLE unknown (a VARCHAR(5), b TEXT)")
    assert not h.findings
    assert _cs(h, "gaps", "td") == (("latin1", None), {"a": ("latin1", None)})
    assert _cs(h, "gaps", "co") == (("utf8mb4", None), {
        "a": ("latin1", "latin1_bin"), "b": ("greek", None), "c": ("utf8mb3", "utf8_bin"),
        "d": ("utf8mb3", None), "e": ("utf8mb4", "uca1400_ai_ci"), "f": ("latin1", None),
        "g": ("binary", None)})
    dflt = ("latin1", "latin1_german2_ci")
    assert _cs(h, "gd", "dd") == (dflt, {c: dflt for c in "aest"})
    assert _cs(h, "gd", "tc") == (("cp1251", "cp1251_bin"), {"a": ("cp1251", "cp1251_bin")})
    assert _cs(h, "gd", "ds") == (dflt, {"a": dflt})
    assert _cs(h, "gd", "dc") == (("utf8mb4", "utf8mb4_bin"), {"a": ("utf8mb4", "utf8mb4_bin")})
    assert _cs(h, "gd", "u8") == (("utf8", "utf8_bin"), {"a": ("utf8", "utf8_bin")})
    # nothing known (a database made before the binlog, the server's default): no guess
    assert _cs(h, "d", "unknown") == ((None, None), {})


def test_alter_table_default_charset() -> None:
    h = _h("CREATE TABLE t (a VARCHAR(5), b VARCHAR(5)) CHARSET=latin1",
           "ALTER TABLE t DEFAULT CHARSET=cp1251",
           "ALTER TABLE t ADD COLUMN c TEXT, CHARACTER SET koi8r",
           "ALTER TABLE t MODIFY b VARCHAR(6)",
           "ALTER TABLE t CHANGE a a2 VARCHAR(5) CHARACTER SET latin1",
           "ALTER TABLE t ADD INDEX ix (a2)", "TRUNCATE TABLE t",
           "ALTER TABLE t COLLATE latin2_bin", "ALTER TABLE t ADD COLUMN d CHAR(1)",
           "CREATE TABLE l LIKE t", "ALTER TABLE l ADD e TEXT",
           "RENAME TABLE l TO other.l2", "ALTER TABLE other.l2 ADD f ENUM('x')",
           "ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4")
    latin1, koi8r, latin2 = ("latin1", None), ("koi8r", None), ("latin2", "latin2_bin")
    # the default changes for the columns added or redefined after it, not the others
    assert h.at("d", "t", (1, 250)).charset == "cp1251"  # type: ignore[union-attr]
    v = h.at("d", "t", (1, 250))
    assert v is not None and v.columns is not None
    assert [c.charset for c in v.columns] == ["latin1", "latin1"]
    at = {p: h.at("d", "t", (1, p)) for p in (350, 450, 550, 750, 850)}
    assert {c.name: c.charset for c in at[350].columns} == {  # type: ignore[union-attr]
        "a": "latin1", "b": "latin1", "c": "koi8r"}  # an option anywhere in the statement
    assert {c.name: c.charset for c in at[450].columns}["b"] == "koi8r"  # type: ignore
    assert {c.name: c.charset for c in at[550].columns}["a2"] == "latin1"  # type: ignore
    assert (at[750].charset, at[750].collation) == koi8r  # type: ignore[union-attr]
    assert (at[850].charset, at[850].collation) == latin2  # type: ignore[union-attr]
    assert _cs(h, "other", "l2") == (latin2, {"a2": latin1, "b": koi8r, "c": koi8r,
                                             "d": latin2, "e": latin2, "f": latin2})
    assert not h.latest("d", "l").exists  # type: ignore[union-attr]
    # CONVERT TO CHARACTER SET: every character column and the default take it
    last = h.latest("d", "t")
    assert last is not None and last.charset == "utf8mb4" and last.columns is not None
    assert {c.charset for c in last.columns if c.base in ("char", "varchar")} == {"utf8mb4"}
    assert not h.findings


def test_database_default_charset_across_statements() -> None:
    h = _h("CREATE DATABASE a CHARACTER SET latin1", "ALTER DATABASE a CHARACTER SET greek",
           "CREATE TABLE a.t1 (x VARCHAR(1))",
           "ALTER DATABASE a COLLATE latin2_bin", "CREATE TABLE t2 (x VARCHAR(1))",
           "ALTER TABLE t1 ADD y VARCHAR(1)",  # the table's default, not the database's
           "ALTER SCHEMA COMMENT = 'c'",  # (no name: the default database)
           "ALTER DATABASE CHARACTER SET cp1250", "CREATE TABLE t3 (x TEXT)",
           "CREATE DATABASE IF NOT EXISTS a CHARACTER SET utf8mb4",  # it exists: no change
           "CREATE TABLE t4 (x TEXT)",
           # b may have existed before the binlog: its default is not known
           "CREATE DATABASE IF NOT EXISTS b CHARACTER SET utf8mb4", "CREATE TABLE b.t (x TEXT)",
           "DROP DATABASE a", "CREATE DATABASE IF NOT EXISTS a CHARACTER SET ascii",
           "CREATE TABLE t5 (x TEXT)",
           "CREATE OR REPLACE DATABASE a", "CREATE TABLE t6 (x TEXT)",
           "ALTER DATABASE a DEFAULT CHARSET = 'latin1'", "CREATE TABLE t7 (x TEXT)",
           "ALTER DATABASE a UPGRADE DATA DIRECTORY NAME", "CREATE TABLE t8 (x TEXT)",
           "ALTER DATABASE a CHARACTER SET DEFAULT", "CREATE TABLE t9 (x TEXT)",
           "ALTER DATABASE a COLLATE 'koi8u_bin'", "ALTER DATABASE a WHATEVER",
           "CREATE TABLE t10 (x TEXT)", db="a")

    def cs(t: str, db: str = "a") -> list[str | None]:
        v = h.versions[(db, t)][0]  # (the tables of `a` are dropped later)
        assert v.columns is not None
        return [c.charset for c in v.columns]

    t1 = h.versions[("a", "t1")]
    assert [v.change for v in t1] == ["create", "alter", "drop"]
    assert [c.charset for c in t1[1].columns or ()] == ["greek", "greek"]
    t2 = h.versions[("a", "t2")][0]
    assert (t2.charset, t2.collation) == ("latin2", "latin2_bin")
    assert [cs(t) for t in ("t3", "t4")] == [["cp1250"], ["cp1250"]]
    assert cs("t", "b") == [None] and h.database("b") is None
    assert cs("t5") == ["ascii"]
    assert not h.latest("a", "t5").exists  # type: ignore[union-attr]
    assert [cs(t)[0] for t in ("t6", "t7", "t8", "t9", "t10")] == [None, "latin1", "latin1",
                                                                 None, None]
    assert h.database("A") is not None and h.database("A").exists  # type: ignore[union-attr]
    assert [f.kind for f in h.findings] == ["uninterpreted"]
    assert "ALTER DATABASE a not interpreted" in h.findings[0].message


def test_float_double_decimal_unsigned_zerofill() -> None:
    from binlake.schema.ddl import _prepare

    assert _prepare("CREATE TABLE t (a FLOAT UNSIGNED, b FLOAT(7,3) UNSIGNED ZEROFILL,"
                    " c FLOAT4 SIGNED)") == \
        "CREATE TABLE t (a FLOAT ZEROFILL, b FLOAT(7,3) ZEROFILL, c FLOAT4 )"
    sql = ("CREATE TABLE t (i INT ZEROFILL UNSIGNED, d DOUBLE PRECISION SIGNED UNSIGNED NOT NULL,"
           " m DECIMAL(5,2) UNSIGNED ZEROFILL, `unsigned` INT, `float` VARCHAR(3)"
           " COMMENT 'FLOAT UNSIGNED', s INT SIGNED, u INT UNSIGNED UNSIGNED)")
    assert _prepare(sql) == sql.replace("ZEROFILL UNSIGNED", "UNSIGNED ZEROFILL").replace(
        "SIGNED UNSIGNED NOT", "UNSIGNED NOT").replace("INT SIGNED", "INT ").replace(
        "UNSIGNED UNSIGNED", "UNSIGNED")
    h = _h("CREATE TABLE t (a FLOAT UNSIGNED, b DOUBLE UNSIGNED, c DECIMAL(6,2) UNSIGNED ZEROFILL,"
           " d FLOAT(7,3) ZEROFILL UNSIGNED, e FLOAT(30) UNSIGNED NOT NULL, f FLOAT SIGNED,"
           " g REAL, h NUMERIC(4) UNSIGNED, i FLOAT8 UNSIGNED, j DOUBLE(5,1) ZEROFILL)",
           "CREATE TABLE u (a FLOAT UNSIGNED, b DOUBLE UNSIGNED, c DECIMAL(6,2) UNSIGNED ZEROFILL,"
           " d FLOAT(7,3) ZEROFILL UNSIGNED, e FLOAT(30) UNSIGNED NOT NULL, f FLOAT SIGNED,"
           " h NUMERIC(4) UNSIGNED, i FLOAT8 UNSIGNED, j DOUBLE(5,1) ZEROFILL)",
           "ALTER TABLE u ADD COLUMN k FLOAT UNSIGNED, MODIFY f FLOAT(5,2) UNSIGNED")
    assert _cols(h, "d", "t") is None  # REAL: the statement is not interpreted, as before
    v = h.latest("d", "u")
    assert v is not None and v.columns is not None
    assert [(c.name, c.type, c.nullable) for c in v.columns] == [
        ("a", "float unsigned", True), ("b", "double unsigned", True),
        ("c", "decimal(6,2) unsigned", True), ("d", "float(7,3) unsigned", True),
        ("e", "double unsigned", False), ("f", "float(5,2) unsigned", True),
        ("h", "decimal(4,0) unsigned", True), ("i", "double unsigned", True),
        ("j", "double(5,1) unsigned", True), ("k", "float unsigned", True)]
    assert all(c.unsigned for c in v.columns)
    assert [f.kind for f in h.findings] == ["uninterpreted"]


def test_version_dict_keeps_the_table_default() -> None:
    import json
    from dataclasses import replace

    from binlake.schema.model import Version

    h = _h("CREATE TABLE t (a VARCHAR(3) COLLATE latin1_bin, b INT) CHARSET=cp1251"
           " COLLATE=cp1251_bin", "CREATE TABLE u (a INT)")
    v = h.latest("d", "t")
    assert v is not None
    d = v.to_dict()
    assert (d["charset"], d["collation"]) == ("cp1251", "cp1251_bin")
    assert d["columns"][0] == {"name": "a", "type": "varchar(3)", "nullable": True,
                               "length": 3, "charset": "latin1", "collation": "latin1_bin"}
    assert Version.from_dict(json.loads(json.dumps(d))) == v
    old = {k: x for k, x in d.items() if k not in ("charset", "collation")}
    assert Version.from_dict(old) == replace(v, charset=None, collation=None)
    u = h.latest("d", "u")
    assert u is not None and "charset" not in u.to_dict() and "collation" not in u.to_dict()


def test_named_copy_character_sets() -> None:
    from binlake.binlog.charsets import charset_of
    from binlake.binlog.columns import Column, TableMap
    from binlake.schema.model import Version
    from binlake.schema.names import named_copy

    cols = [Column(i, T.VARCHAR, T.VARCHAR, 20, True) for i in range(4)]
    cols += [Column(4, T.BLOB, T.BLOB, 2, True), Column(5, T.STRING, T.STRING, 0xFE0A, True)]
    tm = TableMap(7, "d", "t", 0, cols)
    v = Version("d", "t", 1, (1, 4), None, "", "create", (
        SchemaColumn("a", "varchar(5)", "varchar", length=5, collation="latin1_bin"),
        SchemaColumn("b", "varchar(5)", "varchar", length=5, charset="greek"),
        SchemaColumn("c", "varchar(5)", "varchar", length=5),
        SchemaColumn("d", "varchar(5)", "varchar", length=5, charset="binary"),
        SchemaColumn("e", "text", "text", charset="koi8r", collation="koi8r_bin"),
        SchemaColumn("f", "char(10)", "char", length=10, collation="utf8_general_ci")))
    n = named_copy(tm, v)
    assert [c.name for c in n.columns] == list("abcdef")
    # a bare collation's charset (histories written before columns took it), the column's
    # own, none known (UTF-8 where valid), binary, and a text column logged as BLOB
    assert [charset_of(c.collation) if c.collation is not None else None
            for c in n.columns] == ["latin1", "greek", None, "binary", "koi8r", "utf8mb3"]
    assert all(c.collation is None for c in tm.columns)  # tm is not changed


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
    texts = 0
    for key, v in truth.current().items():
        assert _comparable(seeded.current()[key]) == _comparable(v), key
        # the dump's table defaults (DEFAULT CHARSET=... COLLATE=...) give every text
        # column the character set information_schema gives it
        got = seeded.current()[key].columns or ()
        assert [(c.name, c.charset) for c in got] == \
            [(c.name, c.charset) for c in v.columns or ()], key
        texts += sum(c.charset is not None for c in got)
    assert texts >= 10


CHARSET_WORKLOAD = [
    "CREATE DATABASE cs1 CHARACTER SET latin1",
    "CREATE DATABASE cs2 DEFAULT CHARSET=utf8mb4 COLLATE utf8mb4_bin", "CREATE DATABASE cs4",
    "USE cs1",
    "CREATE TABLE a (v VARCHAR(5), t TEXT, e ENUM('x'), s SET('p'), c CHAR(2), n INT, b BLOB)",
    "CREATE TABLE b (v VARCHAR(5)) DEFAULT CHARSET=cp1251",
    "CREATE TABLE c (v VARCHAR(5) COLLATE utf8mb4_unicode_ci, w VARCHAR(5) CHARACTER SET greek,"
    " x VARCHAR(3)) COLLATE=latin2_bin",
    "CREATE TABLE d (v VARCHAR(5)) CHARACTER SET = DEFAULT",
    "ALTER TABLE b DEFAULT CHARACTER SET koi8r, ADD COLUMN w TEXT",
    "ALTER TABLE b ADD COLUMN x CHAR(1)", "ALTER TABLE b MODIFY v VARCHAR(6)",
    "ALTER TABLE b CHANGE x y ENUM('a','b')",
    "ALTER TABLE b ADD COLUMN z VARCHAR(3), CHARACTER SET hebrew",
    "ALTER DATABASE cs1 CHARACTER SET latin2", "CREATE TABLE e (v VARCHAR(5))",
    "ALTER TABLE a ADD COLUMN w VARCHAR(3)",
    "ALTER DATABASE COLLATE latin7_bin",
    "CREATE TABLE f (v VARCHAR(5), n NCHAR(2), k VARCHAR(2) COLLATE utf8_bin)",
    "CREATE TABLE g LIKE c", "ALTER TABLE g ADD COLUMN z TINYTEXT",
    "RENAME TABLE g TO cs2.g", "ALTER TABLE cs2.g ADD COLUMN zz TEXT",
    "CREATE TABLE cs2.h (v VARCHAR(5))",
    "CREATE TABLE cs2.i (v VARCHAR(5)) DEFAULT COLLATE=latin1_german2_ci",
    "CREATE TABLE cs2.j (a FLOAT UNSIGNED, b DOUBLE UNSIGNED, c DECIMAL(6,2) UNSIGNED ZEROFILL,"
    " d FLOAT(7,3) ZEROFILL UNSIGNED, e INT ZEROFILL UNSIGNED, f DOUBLE PRECISION ZEROFILL"
    " UNSIGNED, g FLOAT4 ZEROFILL, h FLOAT(30) UNSIGNED)",
    "INSERT INTO cs2.j VALUES (1.5, 2.5, 3.25, 4.125, 5, 6, 7, 8)",
    "CREATE TABLE cs2.k (v VARCHAR(3)) CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
    "ALTER TABLE cs2.k CONVERT TO CHARACTER SET latin1",
    "CREATE DATABASE IF NOT EXISTS cs1 CHARACTER SET utf8mb4", "CREATE TABLE cs1.l (v VARCHAR(2))",
    "CREATE OR REPLACE DATABASE cs3 CHARACTER SET ascii", "CREATE TABLE cs3.m (v VARCHAR(2))",
    "CREATE OR REPLACE DATABASE cs3 CHARACTER SET swe7", "CREATE TABLE cs3.m (v VARCHAR(2))",
    "CREATE TABLE cs4.n (v VARCHAR(2))",
    "INSERT INTO cs1.a (v) VALUES ('x')", "INSERT INTO cs1.b (v) VALUES ('x')",
]


@pytest.mark.integration
def test_mariadb_charsets_match_server(fresh_mariadb: Any) -> None:
    """Each text column's character set (and collation when the history has one) and each
    table's default, as the history tells them from the DDL (column, table and database
    defaults, ALTERs of them), equal information_schema's; FLOAT / DOUBLE / DECIMAL UNSIGNED
    [ZEROFILL] columns parse, and their Table_maps (FULL: with signedness) agree."""
    srv = fresh_mariadb
    _run(srv, CHARSET_WORKLOAD)
    conn = srv.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, CHARACTER_SET_NAME,"
                        " COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA"
                        " LIKE 'cs_' ORDER BY 1, 2, ORDINAL_POSITION")
            columns = cur.fetchall()
            cur.execute("SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_COLLATION FROM"
                        " information_schema.TABLES WHERE TABLE_SCHEMA LIKE 'cs_'")
            tables = cur.fetchall()
    finally:
        conn.close()
    srv.flush_binary_logs()
    res = build_history([str(f) for f in srv.binlog_files()])
    h = res.history
    assert not res.errors and not res.disagreed and res.checked >= 3
    assert not h.findings, [str(f) for f in h.findings]
    from binlake.schema.types import charset_of_collation

    checked = 0
    for db, t, name, cs, coll in columns:
        if (db, t) == ("cs4", "n"):
            continue
        v = h.latest(db, t)
        assert v is not None and v.columns is not None, (db, t)
        c = v.column(name)
        assert c is not None and c.charset == cs, (db, t, name, c, cs)
        # (the history spells a collation as the DDL did: MySQL 5.7's utf8_bin is utf8mb3_bin)
        assert c.collation is None or re.sub("^utf8_", "utf8mb3_", c.collation) == coll, \
            (db, t, name, c, coll)
        checked += cs is not None
    assert checked >= 25
    for db, t, coll in tables:
        v = h.latest(db, t)
        assert v is not None
        if (db, t) == ("cs4", "n"):  # the server's default: not known, not guessed
            assert (v.charset, v.collation) == (None, None)
            assert v.columns is not None and v.columns[0].charset is None
        else:
            assert v.charset == charset_of_collation(coll), (db, t, v.charset, coll)
            assert v.collation in (None, coll), (db, t, v.collation, coll)
    j = h.latest("cs2", "j")
    assert j is not None and j.columns is not None
    assert [c.type for c in j.columns] == [
        "float unsigned", "double unsigned", "decimal(6,2) unsigned", "float(7,3) unsigned",
        "int unsigned", "double unsigned", "float unsigned", "double unsigned"]


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


def test_convert_to_character_set() -> None:
    """ALTER TABLE ... CONVERT TO CHARACTER SET (sqlglot cannot parse it): every character
    column and the table's default take the charset; binary columns keep none; combined
    with another action it stays unparsed (unknown schema, never a guess)."""
    h = _h("CREATE TABLE t (id INT PRIMARY KEY, b VARCHAR(10), x TEXT, bb BLOB, "
           "e ENUM('a')) DEFAULT CHARSET=utf8mb4",
           "ALTER TABLE t CONVERT TO CHARACTER SET latin1",
           "ALTER TABLE `d`.`t` CONVERT TO CHARSET utf8mb4 COLLATE utf8mb4_bin")
    vs = h.versions[("d", "t")]
    assert [(c.name, c.charset) for c in vs[1].columns or ()] == [
        ("id", None), ("b", "latin1"), ("x", "latin1"), ("bb", None), ("e", "latin1")]
    assert vs[1].charset == "latin1"
    assert {c.collation for c in vs[2].columns or () if c.charset} == {"utf8mb4_bin"}
    assert not h.findings
    h2 = _h("CREATE TABLE t (id INT PRIMARY KEY, b VARCHAR(10))",
            "ALTER TABLE t CONVERT TO CHARACTER SET latin1, ADD COLUMN q INT")
    assert h2.latest("d", "t").columns is None  # type: ignore[union-attr]
    assert [f.kind for f in h2.findings] == ["unparsed"]
