"""Typed tables of binlogs that do not name their columns (binlake.lake.schemas).

One workload, run on three private MariaDB 10.11 servers, one per ``binlog_row_metadata``
(FULL, MINIMAL, NO_LOG -- the last two log no column names).  Some tables are created
before the archive starts (rows inserted, then ``FLUSH BINARY LOGS``; the earlier files are
not loaded: those tables are known from a ``mariadb-dump --no-data`` snapshot taken at that
point, ``Settings.schema_snapshots``); others inside the archive.  Inside the archive, over
four binlog files: every column type that needs the schema to be read right (INT / BIGINT /
TINYINT UNSIGNED at their maxima, DECIMAL, ENUM, SET, latin1 text -- column, table and
database default charset --, BLOB with bytes that are not UTF-8, VARBINARY, DATE,
DATETIME(6), TIMESTAMP(3), NULLs), ALTER TABLE ADD COLUMN (FIRST / AFTER), DROP COLUMN,
CHANGE COLUMN, RENAME COLUMN, MODIFY INT -> BIGINT, CONVERT TO CHARACTER SET, DEFAULT
CHARSET with ADD COLUMN, TRUNCATE then inserts, DROP TABLE and a
CREATE TABLE of the same name with other column types, CREATE TABLE ... LIKE, CREATE TABLE
... SELECT, RANGE / HASH partitioned tables (and ADD PARTITION), RENAME TABLE (only: nothing
crashes), a table without a primary key.  Per mode:

* every mirror equals the server's own final ``SELECT *``, cell by cell (each row is
  written after its table's last DDL, so a mirror's dropped / renamed / older-type columns
  must be NULL); the mirrors are the server's tables with a primary key (a table without
  one may have a replica's mirror, lake/nopk.py: then it holds the server's multiset of
  rows);
* ``schema_history`` holds one row per version (snapshot and DDL) of the source;
* MINIMAL / NO_LOG: the ``row_changes`` images are keyed by column names, not ``@n``;
* a table created before the archive that no snapshot names: a ``no_schema`` finding, no
  mirror, images keyed ``@n`` (MINIMAL / NO_LOG);
* NO_LOG: an ``ALTER TABLE`` run with ``sql_log_bin=0``: a ``table_map_mismatch`` finding,
  and the rows logged after it are not put under wrong names;
* the files loaded in three runs into one lake (the last one without the snapshot: the
  history comes from the lake's ``schema_history``) give the same mirrors as one run.

Expected values come from the server (``SELECT`` with a converter-less connection, put in the
decode contract's form by ``tests/reference.py``), never from binlake.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from .servers import start_server

MODES = ("FULL", "MINIMAL", "NO_LOG")
DB = "sch"  # most tables
NSD = "nsd"  # a database the snapshot leaves out (created before the archive)
LAT = "lat"  # a database created inside the archive with latin1 as its default charset
TIMINGS: dict[str, float] = {}

TYPES_COLS = ("id INT NOT NULL PRIMARY KEY, u32 INT UNSIGNED NOT NULL, u64 BIGINT UNSIGNED, "
              "u8 TINYINT UNSIGNED NOT NULL, amount DECIMAL(12,3), "
              "e ENUM('small','medium','large') NOT NULL, s SET('red','green','blue'), "
              "txt VARCHAR(40) {cs}, bl BLOB, vb VARBINARY(16), d DATE, dt DATETIME(6), "
              "ts TIMESTAMP(3) NULL, n INT NULL")
TYPES_ROWS = [
    "(1, 4294967295, 18446744073709551615, 255, 999999999.999, 'large', 'red,blue', "
    "'café Ørsted ÿ', X'00FF80FEC3', X'DEADBEEF00', '2024-02-29', "
    "'9999-12-31 23:59:59.999999', '2038-01-19 03:14:07.999', NULL)",
    "(2, 0, 0, 0, -999999999.999, 'small', '', 'àéîõü ß', X'C3', X'', '1000-01-01', "
    "'1000-01-01 00:00:00.000000', '1970-01-01 00:00:01.000', 42)",
    "(3, 2147483648, 9223372036854775808, 128, 0.001, 'medium', 'red,green,blue', 'plain', "
    "X'', NULL, NULL, NULL, NULL, -7)",
]


def _types_row(id_: int, u32: str, u64: str, txt: str, bl: str) -> str:
    return (f"({id_}, {u32}, {u64}, 254, 12.5, 'medium', 'green', {txt}, {bl}, X'01', "
            "'2001-02-03', '2001-02-03 04:05:06.000007', '2001-02-03 04:05:06.789', 5)")


PRE = [
    f"CREATE DATABASE {DB}",
    f"CREATE DATABASE {NSD}",
    f"CREATE TABLE {DB}.types_pre ({TYPES_COLS.format(cs='CHARACTER SET latin1')}) "
    "DEFAULT CHARSET=utf8mb4",
    f"INSERT INTO {DB}.types_pre VALUES {', '.join(TYPES_ROWS)}",
    f"CREATE TABLE {DB}.evolve_pre (id INT NOT NULL PRIMARY KEY, a INT NOT NULL, "
    "b VARCHAR(10), c INT)",
    f"INSERT INTO {DB}.evolve_pre VALUES (1, 10, 'one', 100), (2, 20, 'two', 200), "
    "(3, 30, 'three', 300)",
    f"CREATE TABLE {DB}.trunc_pre (id INT NOT NULL PRIMARY KEY, "
    "v VARCHAR(10) CHARACTER SET latin1)",
    f"INSERT INTO {DB}.trunc_pre VALUES (1, 'à'), (2, 'b'), (3, 'c')",
    f"CREATE TABLE {DB}.nopk_pre (a INT, b VARCHAR(10))",
    f"CREATE TABLE {NSD}.nosnap (id INT NOT NULL PRIMARY KEY, v VARCHAR(10), u INT UNSIGNED)",
    f"INSERT INTO {NSD}.nosnap VALUES (1, 'a', 4294967295)",
]

# Statements of the archive's four binlog files ("hidden": NO_LOG only)
FILE1 = [
    f"INSERT INTO {DB}.types_pre VALUES "
    + _types_row(4, "4294967295", "18446744073709551614", "'Ærø'", "X'FF'"),
    f"UPDATE {DB}.types_pre SET n = 7 WHERE id = 2",
    f"DELETE FROM {DB}.types_pre WHERE id = 3",
    f"INSERT INTO {NSD}.nosnap VALUES (2, 'b', 4294967294)",
    f"UPDATE {NSD}.nosnap SET v = 'A' WHERE id = 1",
    f"INSERT INTO {DB}.nopk_pre VALUES (3, 'z'), (3, 'z'), (4, NULL)",
    f"UPDATE {DB}.nopk_pre SET b = 'w' WHERE a = 4",
    f"UPDATE {DB}.evolve_pre SET a = a + 1",  # every row, in the snapshot's layout
    # the table's default charset latin1: txt is latin1 without saying so
    f"CREATE TABLE {DB}.types_in ({TYPES_COLS.format(cs='')}) DEFAULT CHARSET=latin1",
    f"INSERT INTO {DB}.types_in VALUES {', '.join(TYPES_ROWS)}",
    f"CREATE TABLE {DB}.like_t LIKE {DB}.types_in",
    f"INSERT INTO {DB}.like_t SELECT * FROM {DB}.types_in",
    f"UPDATE {DB}.like_t SET u8 = u8 - 1, txt = CONCAT(txt, 'ñ') WHERE id = 1",
    f"CREATE TABLE {DB}.ctas (PRIMARY KEY (id)) SELECT id, u32, u64, txt, e, bl "
    f"FROM {DB}.types_in",
    f"CREATE TABLE {DB}.rpart (id INT NOT NULL, k INT UNSIGNED NOT NULL, v VARCHAR(20), "
    "PRIMARY KEY (id)) PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (100), "
    "PARTITION p1 VALUES LESS THAN (1000))",
    f"INSERT INTO {DB}.rpart VALUES (1, 4294967295, 'p0'), (150, 0, 'p1'), (500, 5, 'ü')",
    f"CREATE TABLE {DB}.hpart (id BIGINT UNSIGNED NOT NULL PRIMARY KEY, "
    "v VARCHAR(10) CHARACTER SET latin1) PARTITION BY HASH (id) PARTITIONS 3",
    f"INSERT INTO {DB}.hpart VALUES (18446744073709551615, 'max'), (0, 'zéro'), (7, 'sept')",
    f"CREATE TABLE {DB}.recreate (id INT NOT NULL PRIMARY KEY, v VARCHAR(10), w INT)",
    f"INSERT INTO {DB}.recreate VALUES (1, 'a', 1), (2, 'b', 2)",
    f"CREATE TABLE {DB}.trunc_in (id INT NOT NULL PRIMARY KEY, v INT)",
    f"INSERT INTO {DB}.trunc_in VALUES (1, 1), (2, 2)",
    f"CREATE TABLE {DB}.ren_a (id INT NOT NULL PRIMARY KEY, v INT)",
    f"INSERT INTO {DB}.ren_a VALUES (1, 1)",
    # a RENAME swap moves each mirror's rows to the other name
    f"CREATE TABLE {DB}.swap_a (id INT NOT NULL PRIMARY KEY, v VARCHAR(10))",
    f"INSERT INTO {DB}.swap_a VALUES (1, 'a1'), (2, 'a2'), (3, 'a3')",
    f"CREATE TABLE {DB}.swap_b (id INT NOT NULL PRIMARY KEY, v VARCHAR(10))",
    f"INSERT INTO {DB}.swap_b VALUES (10, 'b10'), (11, 'b11')",
    # ALTERs that rewrite rows no later change touches (the lake replays them)
    f"CREATE TABLE {DB}.alt (id INT NOT NULL PRIMARY KEY, a INT, b VARCHAR(10), r INT, "
    "x INT, gone INT)",
    f"INSERT INTO {DB}.alt VALUES (1, 1, '12', 5, 7, 0), (2, 2, '34', 6, 8, 0), "
    "(3, 3, '56', 7, 9, 0)",
    f"CREATE DATABASE {LAT} CHARACTER SET latin1",
    f"CREATE TABLE {LAT}.dbcs (id INT NOT NULL PRIMARY KEY, v VARCHAR(20))",
    f"INSERT INTO {LAT}.dbcs VALUES (1, 'Ærø ñandú')",
    f"CREATE TABLE {DB}.conv (id INT NOT NULL PRIMARY KEY, t VARCHAR(20), "
    "e ENUM('x','y') NOT NULL) DEFAULT CHARSET=utf8mb4",
    f"INSERT INTO {DB}.conv VALUES (1, 'é', 'x'), (2, 'ÿ', 'y')",
]
HIDDEN1 = [
    f"CREATE TABLE {DB}.hidden (id INT NOT NULL PRIMARY KEY, a INT, b VARCHAR(10))",
    f"INSERT INTO {DB}.hidden VALUES (1, 10, 'x'), (2, 20, 'y')",
    f"CREATE TABLE {DB}.hidden_cs (id INT NOT NULL PRIMARY KEY, v VARCHAR(20)) "
    "DEFAULT CHARSET=utf8mb4",
    f"INSERT INTO {DB}.hidden_cs VALUES (1, 'é')",
]
FILE2 = [
    f"ALTER TABLE {DB}.evolve_pre ADD COLUMN x INT FIRST",
    f"INSERT INTO {DB}.evolve_pre (x, id, a, b, c) VALUES (-1, 4, 40, 'four', 400)",
    f"ALTER TABLE {DB}.evolve_pre ADD COLUMN y VARCHAR(5) CHARACTER SET latin1 AFTER id",
    f"UPDATE {DB}.evolve_pre SET y = 'ñ' WHERE id = 1",
    f"ALTER TABLE {DB}.evolve_pre DROP COLUMN c",
    f"UPDATE {DB}.evolve_pre SET x = 5 WHERE id = 2",
    f"ALTER TABLE {DB}.evolve_pre CHANGE COLUMN b bb VARCHAR(12)",
    f"INSERT INTO {DB}.evolve_pre (id, x, y, a, bb) VALUES (5, 5, 'é', 50, 'five')",
    f"DELETE FROM {DB}.evolve_pre WHERE id = 3",
    f"ALTER TABLE {DB}.types_pre ADD COLUMN extra VARCHAR(8) AFTER u8",
    f"UPDATE {DB}.types_pre SET extra = CONCAT('e', id)",  # every row, in the new layout
    f"TRUNCATE TABLE {DB}.trunc_in",
    f"INSERT INTO {DB}.trunc_in VALUES (3, 3)",
    f"UPDATE {DB}.trunc_pre SET v = 'bb' WHERE id = 2",
    f"ALTER TABLE {DB}.rpart ADD PARTITION (PARTITION p2 VALUES LESS THAN (10000))",
    f"INSERT INTO {DB}.rpart VALUES (5000, 1, 'p2')",
    f"UPDATE {DB}.rpart SET k = k - 1 WHERE id = 1",
    f"UPDATE {DB}.types_in SET amount = amount / 2, s = 'blue' WHERE id = 3",
]
FILE3 = [
    f"ALTER TABLE {DB}.evolve_pre RENAME COLUMN a TO aa",
    f"UPDATE {DB}.evolve_pre SET aa = aa + 1 WHERE id = 1",
    f"ALTER TABLE {DB}.evolve_pre MODIFY aa BIGINT NOT NULL",
    f"UPDATE {DB}.evolve_pre SET aa = aa * 100000000",  # every row, in the last layout
    f"TRUNCATE TABLE {DB}.trunc_pre",
    f"INSERT INTO {DB}.trunc_pre VALUES (4, 'ø'), (5, 'e')",
    f"DROP TABLE {DB}.recreate",
    f"CREATE TABLE {DB}.recreate (id BIGINT NOT NULL PRIMARY KEY, v DATETIME(6), "
    "w VARCHAR(20) CHARACTER SET latin1)",
    f"INSERT INTO {DB}.recreate VALUES (2, '2020-01-01 00:00:00.5', 'ü'), (3, NULL, 'x')",
    f"RENAME TABLE {DB}.ren_a TO {DB}.ren_b",
    f"INSERT INTO {DB}.ren_b VALUES (2, 2)",
    f"RENAME TABLE {DB}.swap_a TO {DB}.swap_tmp, {DB}.swap_b TO {DB}.swap_a, "
    f"{DB}.swap_tmp TO {DB}.swap_b",
    f"DELETE FROM {DB}.swap_b WHERE id = 2",
    f"UPDATE {DB}.swap_b SET v = 'new3' WHERE id = 3",
    f"INSERT INTO {DB}.swap_a VALUES (12, 'b12')",
    f"ALTER TABLE {DB}.alt MODIFY b INT",
    f"ALTER TABLE {DB}.alt RENAME COLUMN r TO r2",
    f"ALTER TABLE {DB}.alt CHANGE x x2 BIGINT, DROP COLUMN gone",
    f"ALTER TABLE {DB}.alt ADD COLUMN n INT NOT NULL, ADD COLUMN s VARCHAR(5) DEFAULT 'dd', "
    "ADD COLUMN z INT NOT NULL DEFAULT 42 FIRST",
    f"UPDATE {DB}.alt SET a = 99 WHERE id = 3",  # one row: the others keep the ALTERs' rows
    f"UPDATE {LAT}.dbcs SET v = CONCAT(v, '!') WHERE id = 1",
    # charsets changed by ALTER TABLE: the default of added columns, every text column
    f"ALTER TABLE {DB}.trunc_in DEFAULT CHARSET=latin1, ADD COLUMN t2 VARCHAR(10)",
    f"UPDATE {DB}.trunc_in SET t2 = CONCAT('ø', id)",  # every row, in the new layout
    f"ALTER TABLE {DB}.conv CONVERT TO CHARACTER SET latin1",
    f"UPDATE {DB}.conv SET t = CONCAT(t, 'ü')",  # every row, in the new layout
    f"INSERT INTO {LAT}.dbcs VALUES (2, 'ÿ')",
]
HIDDEN4 = [
    "SET sql_log_bin = 0",
    f"ALTER TABLE {DB}.hidden ADD COLUMN z INT FIRST",
    # same type and nullability, another charset (the Table_map's VARCHAR byte length
    # changes: 80 -> 20)
    f"ALTER TABLE {DB}.hidden_cs MODIFY v VARCHAR(20) CHARACTER SET latin1",
    "SET sql_log_bin = 1",
    f"INSERT INTO {DB}.hidden_cs VALUES (2, 'ü')",
    f"UPDATE {DB}.hidden_cs SET v = 'ÿé' WHERE id = 1",
    f"INSERT INTO {DB}.hidden (z, id, a, b) VALUES (333, 3, 30, 'z')",
    f"UPDATE {DB}.hidden SET a = 11 WHERE id = 1",
]
FILE4 = [
    f"INSERT INTO {DB}.types_in VALUES "
    + _types_row(4, "4294967295", "18446744073709551615", "'ÿÿ'", "X'80'"),
    f"UPDATE {DB}.types_pre SET u64 = 18446744073709551615 WHERE id = 4",
    f"DELETE FROM {DB}.types_in WHERE id = 2",
    f"UPDATE {DB}.ctas SET u32 = 4294967295, txt = 'ça' WHERE id = 2",
    f"INSERT INTO {DB}.hpart VALUES (9223372036854775808, 'mid')",
    # several changes in one statement, a quoted name with a space
    f"ALTER TABLE {DB}.like_t ADD COLUMN c1 INT UNSIGNED NOT NULL DEFAULT 4294967295 AFTER id, "
    "DROP COLUMN vb, MODIFY u8 SMALLINT UNSIGNED NOT NULL, CHANGE COLUMN n `Odd Name` BIGINT",
    f"UPDATE {DB}.like_t SET u8 = u8 + 1000",  # every row, in the new layout
    f"DELETE FROM {DB}.nopk_pre WHERE a = 3 LIMIT 1",
    f"INSERT INTO {DB}.conv VALUES (3, 'Ø', 'y')",
]

# DDL statements per table (snapshot versions come on top): the versions schema_history holds
DDL_COUNT = {
    "types_pre": 1, "evolve_pre": 6, "trunc_pre": 1, "nopk_pre": 0, "types_in": 1,
    "like_t": 2, "ctas": 1, "rpart": 2, "hpart": 1, "recreate": 3, "trunc_in": 3, "hidden": 1, "hidden_cs": 1,
    "conv": 2, "swap_a": 3, "swap_b": 3, "alt": 5,  # a swap: rename_out + rename_in
}
SNAPSHOT = ("types_pre", "evolve_pre", "trunc_pre", "nopk_pre")
# the tables whose mirror is compared with the server (hidden: its own test)
MIRRORED = ("types_pre", "evolve_pre", "trunc_pre", "types_in", "like_t", "ctas", "rpart",
            "hpart", "recreate", "trunc_in", f"{LAT}.dbcs", f"{NSD}.nosnap", "ren_b",
            "swap_a", "swap_b", "alt")
NOT_COMPARED: set[tuple[str, str]] = set()
# ALTER TABLE ... CONVERT TO CHARACTER SET: its own test (the others leave this table out)
CONV = f"{DB}.conv"
# NO_LOG: a charset change run with sql_log_bin=0: its own test (likewise)
HIDDEN_CS = f"{DB}.hidden_cs"


def _qual(table: str) -> tuple[str, str]:
    db, _, tbl = table.rpartition(".")
    return (db or DB, tbl)


def _files(mode: str) -> list[list[str]]:
    hidden = mode == "NO_LOG"
    return [FILE1 + (HIDDEN1 if hidden else []), FILE2, FILE3,
            (HIDDEN4 if hidden else []) + FILE4]


@pytest.fixture(scope="module", autouse=True)
def _timings() -> Any:
    yield
    print("\ntest_lake_schema timings: " + ", ".join(f"{k} {v:.1f}s" for k, v in
                                                     TIMINGS.items()))


# -- the server --------------------------------------------------------------------------------


def _read_state(srv: Any, dbs: list[str]) -> dict[str, Any]:
    """The server's tables: columns (tests/reference.py ColumnDef), rows in contract form,
    primary keys."""
    from .reference import load_schema, server_text_to_contract

    with srv.connect() as conn:
        schema = load_schema(conn, dbs)
        with conn.cursor() as cur:
            cur.execute("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema."
                        "TABLE_CONSTRAINTS WHERE CONSTRAINT_TYPE = 'PRIMARY KEY' AND "
                        "TABLE_SCHEMA IN (" + ",".join(["%s"] * len(dbs)) + ")", dbs)
            pk = {(d, t) for d, t in cur.fetchall()}
    state: dict[tuple[str, str], list[dict[str, Any]]] = {}
    with srv.connect(conv={}) as conn, conn.cursor() as cur:
        for (db, t), cols in schema.items():
            cur.execute(f"SELECT * FROM `{db}`.`{t}`")
            state[(db, t)] = [{c.name or "": server_text_to_contract(v, c)
                               for c, v in zip(cols, row)} for row in cur.fetchall()]
    return {"columns": schema, "rows": state, "pk": pk}


def _run(cur: Any, statements: list[str]) -> None:
    for sql in statements:
        try:
            cur.execute(sql)
        except Exception as exc:
            raise AssertionError(f"{sql}: {exc}") from exc


@pytest.fixture(scope="module", params=MODES)
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
          mariadb_template: Path) -> dict[str, Any]:
    """The workload on a server of its own with ``binlog_row_metadata`` = the mode: the
    archive's binlog files (copied), the snapshot (mariadb-dump --no-data of ``sch`` when the
    archive starts), the server's final state."""
    mode = request.param
    t0 = time.monotonic()
    base = tmp_path_factory.mktemp(f"schema-srv-{mode.lower()}")
    srv = start_server(base, mariadb_template, options={"binlog-row-metadata": mode})
    try:
        with srv.connect() as conn, conn.cursor() as cur:
            cur.execute("SELECT @@binlog_row_metadata")
            assert cur.fetchone()[0] == mode
            _run(cur, PRE)
            srv.flush_binary_logs()
            before = {f.name for f in srv.binlog_files()[:-1]}  # not given to the load
            dump = subprocess.run(
                ["mariadb-dump", "--no-defaults", f"--socket={srv.socket_path}", "-uroot",
                 "--no-data", "--databases", DB], capture_output=True, text=True, check=True
            ).stdout
            snapshot = base / "snapshot.sql"
            snapshot.write_text(dump)
            hidden_before = None
            for k, statements in enumerate(_files(mode)):
                if k == 3 and mode == "NO_LOG":
                    hidden_before = _read_state(srv, [DB])["rows"][(DB, "hidden")]
                _run(cur, statements)
                srv.flush_binary_logs()
        state = _read_state(srv, [DB, NSD, LAT])
        out = base / "binlogs"
        out.mkdir()
        files = []
        for f in srv.closed_binlog_files():
            if f.name not in before:
                shutil.copy(f, out / f.name)
                files.append(str(out / f.name))
    finally:
        srv.stop(timeout=30)
    assert len(files) == 4, files
    TIMINGS[f"{mode} workload"] = time.monotonic() - t0
    return {"mode": mode, "files": files, "snapshot": str(snapshot), "hidden_before":
            hidden_before, **state}


# -- the lake ----------------------------------------------------------------------------------


def _settings(home: Path, catalog: str, snapshots: tuple[str, ...] = ()) -> Any:
    from binlake.config import load_settings

    env = {"BINLAKE_HOME": str(home), "BINLAKE_CATALOG_NAME": catalog}
    if snapshots:
        env["BINLAKE_SCHEMA_SNAPSHOTS"] = ",".join(snapshots)
    s = load_settings(env=env)
    assert s.schema_snapshots == snapshots
    return s


def _new_lake(spark: Any, tmp_path_factory: pytest.TempPathFactory, name: str,
              snapshots: tuple[str, ...] = ()) -> Any:
    from binlake.lake.spark import build_session

    settings = _settings(tmp_path_factory.mktemp(name), name, snapshots)
    build_session(settings, master="local[2]")  # the shared session, this catalog too
    return settings


def _load(spark: Any, settings: Any, files: list[str]) -> Any:
    from binlake.lake.job import run_load

    s = run_load(spark, settings, files)
    assert not s.failed, s.files
    return s


@pytest.fixture(scope="module")
def lake(spark_lake: Any, world: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
         ) -> dict[str, Any]:
    """The four files in one run, the snapshot configured."""
    mode = world["mode"]
    settings = _new_lake(spark_lake, tmp_path_factory, f"schema_{mode.lower()}",
                         (world["snapshot"],))
    t0 = time.monotonic()
    summary = _load(spark_lake, settings, world["files"])
    TIMINGS[f"{mode} load"] = time.monotonic() - t0
    print(f"\n{mode} load phases: {summary.timings}")
    return {"settings": settings, "summary": summary}


def _mirrors(spark: Any, settings: Any) -> set[str]:
    return {r.tableName for r in spark.sql(
        f"SHOW TABLES IN {settings.catalog_name}.{settings.namespace}").collect()
        if r.tableName.startswith("mirror__")}


def _mirror_name(db: str, tbl: str) -> str:
    from binlake.lake.typed_plan import table_names

    return table_names(db, tbl)[1]


def _expected(cdef: Any, v: Any) -> Any:
    """A contract value as the typed column should hold it (comparable form); after
    tests/test_lake_typed.py."""
    if v is None:
        return None
    t = cdef.sql_type
    if t == "DATE":
        return date.fromisoformat(v)
    if t in ("DATETIME", "TIMESTAMP"):
        head, _, frac = v.partition(".")
        dt = datetime.strptime(head, "%Y-%m-%d %H:%M:%S")
        dt = dt.replace(microsecond=int(frac.ljust(6, "0")) if frac else 0)
        if t == "TIMESTAMP":
            return int(dt.replace(tzinfo=UTC).timestamp()) * 10**6 + dt.microsecond
        return dt
    if isinstance(v, dict) and "hex" in v:
        return bytes.fromhex(v["hex"])
    return v


def _actual(cdef: Any, v: Any) -> Any:
    if v is None:
        return None
    if cdef.sql_type == "DECIMAL":
        return v if isinstance(v, str) else format(v, "f")
    if isinstance(v, Decimal):
        return int(v)  # BIGINT UNSIGNED
    if isinstance(v, bytearray):
        return bytes(v)
    return v


def _slot(mirror_cols: list[str], name: str) -> str:
    """The mirror column of the server's column ``name``: ``name`` or its newest
    ``name__vN`` (an incompatible type change: a new column)."""
    cands = [c for c in mirror_cols if c.lower() == name.lower()
             or (c.lower().startswith(name.lower() + "__v") and c.rsplit("__v", 1)[1].isdigit())]
    assert cands, (name, mirror_cols)
    return max(cands, key=lambda c: int(c.rsplit("__v", 1)[1]) if "__v" in c else 1)


def _mirror_rows(spark: Any, settings: Any, db: str, tbl: str, cols: list[Any]
                 ) -> list[list[Any]]:
    mirror = settings.table(_mirror_name(db, tbl))
    names = [f.name for f in spark.table(mirror).schema.fields]
    slots = [_slot(names, c.name) for c in cols]
    sel = [f"unix_micros(`{s}`)" if c.sql_type == "TIMESTAMP" else f"`{s}`"
           for s, c in zip(slots, cols)]
    rows = [[_actual(c, v) for c, v in zip(cols, r)]
            for r in spark.sql(f"SELECT {', '.join(sel)} FROM {mirror}").collect()]
    return sorted(rows, key=lambda r: r[_key(cols)] if r[_key(cols)] is not None else -1)


def _key(cols: list[Any]) -> int:
    return [c.name for c in cols].index("id")


def _server_rows(cols: list[Any], rows: list[dict[str, Any]]) -> list[list[Any]]:
    return sorted(([_expected(c, row[c.name]) for c in cols] for row in rows),
                  key=lambda r: r[_key(cols)])


def _compare(spark: Any, settings: Any, world: dict[str, Any], db: str, tbl: str) -> None:
    cols = world["columns"][(db, tbl)]
    got = _mirror_rows(spark, settings, db, tbl, cols)
    want = _server_rows(cols, world["rows"][(db, tbl)])
    where = (world["mode"], f"{db}.{tbl}")
    k = _key(cols)
    assert [r[k] for r in got] == [r[k] for r in want], (where, got, want)
    bad = [(f"id={g[k]}", c.name, a, b) for g, w in zip(got, want)
           for c, a, b in zip(cols, g, w) if a != b]
    assert not bad, (where, "(row, column, mirror, server)", bad)
    # every row was written after the table's last DDL: the mirror's other columns (dropped,
    # renamed, or of an older type) hold nothing
    mirror = settings.table(_mirror_name(db, tbl))
    names = [f.name for f in spark.table(mirror).schema.fields]
    stale = sorted(set(names) - {_slot(names, c.name) for c in cols}
                   - {n for n in names if n.startswith("_")})
    if stale:
        held = spark.sql(f"SELECT {', '.join(f'count(`{n}`)' for n in stale)} "
                         f"FROM {mirror}").collect()[0]
        assert not any(held), (where, dict(zip(stale, held)))


def _no_names(mode: str, db: str, tbl: str) -> bool:
    """The table whose columns no snapshot names (MINIMAL / NO_LOG: no mirror)."""
    return mode != "FULL" and (db, tbl) == (NSD, "nosnap")


# -- tests ---------------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.spark
@pytest.mark.parametrize("table", MIRRORED)
def test_mirror_equals_server(spark_lake: Any, world: dict[str, Any], lake: dict[str, Any],
                              table: str) -> None:
    db, tbl = _qual(table)
    if _no_names(world["mode"], db, tbl):
        pytest.skip("no snapshot names it: test_table_without_snapshot")
    _compare(spark_lake, lake["settings"], world, db, tbl)


@pytest.mark.integration
@pytest.mark.spark
def test_mirrors_are_the_tables_with_a_primary_key(spark_lake: Any, world: dict[str, Any],
                                                   lake: dict[str, Any]) -> None:
    """Every server table with a primary key has a mirror, and no other table does -- but
    for the tables without one, whose mirror (if the lake makes one: a replica's multiset
    of rows) must then hold the server's rows."""
    settings = lake["settings"]
    want = {_mirror_name(d, t) for d, t in world["pk"]
            if (d, t) not in NOT_COMPARED and not _no_names(world["mode"], d, t)}
    got = _mirrors(spark_lake, settings) - {_mirror_name(*k) for k in NOT_COMPARED}
    # a table renamed away (or dropped) keeps its mirror, empty
    gone = {m for m in got - want if m not in {_mirror_name(*k) for k in world["columns"]}}
    for m in gone:
        assert spark_lake.table(settings.table(m)).count() == 0, m
    got -= gone
    nopk = {_mirror_name(*k): k for k in world["columns"] if k not in world["pk"]}
    assert (DB, "nopk_pre") in nopk.values()
    assert got - set(nopk) == want, (world["mode"], sorted((got - set(nopk)) ^ want))
    for m in got & set(nopk):  # a multiset of the server's rows
        cols = world["columns"][nopk[m]]
        rows = spark_lake.sql(f"SELECT {', '.join(f'`{c.name}`' for c in cols)} "
                              f"FROM {settings.table(m)}").collect()
        assert sorted(([_actual(c, v) for c, v in zip(cols, r)] for r in rows), key=repr) \
            == sorted(([_expected(c, row[c.name]) for c in cols]
                       for row in world["rows"][nopk[m]]), key=repr), m


def _schema_findings(summary: Any) -> list[dict[str, Any]]:
    return [f for f in summary.findings
            if "schema" in str(f.get("kind")) or "table_map" in str(f.get("kind"))]


@pytest.mark.integration
@pytest.mark.spark
def test_schema_findings(world: dict[str, Any], lake: dict[str, Any]) -> None:
    """The only schema findings: the table no snapshot names (MINIMAL / NO_LOG) and the
    table altered with sql_log_bin=0 (NO_LOG)."""
    mode = world["mode"]
    got = sorted((str(f["kind"]), str(f.get("table"))) for f in _schema_findings(
        lake["summary"]) if f.get("table") not in (CONV, HIDDEN_CS))
    kinds = {t: {k for k, tt in got if tt == t} for _, t in got}
    want_tables = set()
    if mode != "FULL":
        want_tables.add(f"{NSD}.nosnap")
        assert any("no_schema" in k for k in kinds.get(f"{NSD}.nosnap", ())), got
    if mode == "NO_LOG":
        want_tables.add(f"{DB}.hidden")
        assert any("table_map_mismatch" in k for k in kinds.get(f"{DB}.hidden", ())), got
    assert set(kinds) == want_tables, (mode, lake["summary"].findings)


@pytest.mark.integration
@pytest.mark.spark
def test_schema_history_rows(spark_lake: Any, world: dict[str, Any],
                             lake: dict[str, Any]) -> None:
    settings = lake["settings"]
    rows = spark_lake.sql(
        f"SELECT db, tbl, start_seq, start_pos, change, version FROM "
        f"{settings.table('schema_history')} WHERE source = '{settings.source}'").collect()
    assert rows
    # (a RENAME swap gives a table two versions at one position: renamed out, then in)
    keys = [(r.db, r.tbl, r.start_seq, r.start_pos, r.change) for r in rows]
    assert len(keys) == len(set(keys)), "one row per version"
    per: dict[str, list[Any]] = {}
    for r in rows:
        per.setdefault(f"{r.db}.{r.tbl}", []).append(r)
    for tbl, n in DDL_COUNT.items():
        if tbl.startswith("hidden") and world["mode"] != "NO_LOG":
            continue
        got = per.get(f"{DB}.{tbl}", [])
        snaps = [r for r in got if r.start_seq == -1]  # before any binlog
        assert len(snaps) == (tbl in SNAPSHOT), (tbl, [r.change for r in got])
        assert len(got) == n + (tbl in SNAPSHOT), (tbl, sorted(
            (r.start_seq, r.start_pos, r.change) for r in got))
    # each row's version is the whole version, as JSON (rows of a database's defaults
    # aside: change 'database', no table)
    for r in rows:
        if r.change == "database":
            assert r.tbl == "", r
            continue
        v = json.loads(r.version)
        assert (v["db"], v["table"], v["start"]["seq"], v["start"]["pos"]) == \
            (r.db, r.tbl, r.start_seq, r.start_pos)
    # the last version of a table holds the server's columns, in order
    for (db, tbl), cols in world["columns"].items():
        if (db, tbl) == (DB, "hidden") or db == NSD or f"{db}.{tbl}" == CONV:
            continue
        # (at one position -- a RENAME swap -- the new incarnation comes last)
        last = max(per[f"{db}.{tbl}"], key=lambda r: (
            r.start_seq, r.start_pos, json.loads(r.version)["incarnation"]))
        assert [c["name"] for c in json.loads(last.version)["columns"]] == \
            [c.name for c in cols], (db, tbl)


@pytest.mark.integration
@pytest.mark.spark
def test_images_keyed_by_names(spark_lake: Any, world: dict[str, Any],
                               lake: dict[str, Any]) -> None:
    """Every ``row_changes`` image has the column names of its table (the version in force:
    the server's columns for the tables not altered), not ``@1``..``@n`` -- but for the
    table no snapshot names (MINIMAL / NO_LOG) and the rows after an unlogged ALTER."""
    settings = lake["settings"]
    mode = world["mode"]
    rows = spark_lake.sql(
        f"SELECT db, tbl, file, pos, op, before, after FROM {settings.table('row_changes')}"
    ).collect()
    assert rows
    unnamed: dict[str, int] = {}
    for r in rows:
        for img in (r.before, r.after):
            if img is None:
                continue
            keys = list(json.loads(img))
            anon = [k for k in keys if k.startswith("@")]
            if anon:
                assert len(anon) == len(keys), (r.db, r.tbl, keys)
                unnamed[f"{r.db}.{r.tbl}"] = unnamed.get(f"{r.db}.{r.tbl}", 0) + 1
    want = set()
    if mode != "FULL":
        want.add(f"{NSD}.nosnap")
    if mode == "NO_LOG":
        want.add(f"{DB}.hidden")
    unnamed.pop(CONV, None)
    unnamed.pop(HIDDEN_CS, None)
    assert set(unnamed) == want, (mode, unnamed)
    # tables with no column change in the archive: exactly the server's names
    for tbl in ("types_in", "ctas", "hpart", "rpart", "nopk_pre"):
        cols = [c.name for c in world["columns"][(DB, tbl)]]
        for r in rows:
            if (r.db, r.tbl) == (DB, tbl) and r.after is not None:
                assert list(json.loads(r.after)) == cols, (tbl, r.after)
    names = {r.db + "." + r.tbl for r in rows}
    assert f"{DB}.types_pre" in names and f"{LAT}.dbcs" in names


@pytest.mark.integration
@pytest.mark.spark
def test_table_without_snapshot(spark_lake: Any, world: dict[str, Any],
                                lake: dict[str, Any]) -> None:
    """nsd.nosnap, created before the archive and not in the snapshot: FULL names it
    itself (its mirror: test_mirror_equals_server); MINIMAL / NO_LOG: a no_schema finding,
    no mirror, its images keyed @n."""
    settings = lake["settings"]
    mode = world["mode"]
    mirror = _mirror_name(NSD, "nosnap")
    found = [f for f in lake["summary"].findings if "no_schema" in str(f.get("kind"))]
    imgs = [json.loads(r.after) for r in spark_lake.sql(
        f"SELECT after FROM {settings.table('row_changes')} WHERE db = '{NSD}' "
        "AND tbl = 'nosnap' AND after IS NOT NULL").collect()]
    assert len(imgs) == 2
    if mode == "FULL":
        assert not found
        assert mirror in _mirrors(spark_lake, settings)
        assert all(list(i) == ["id", "v", "u"] for i in imgs), imgs
        return
    assert [f.get("table") for f in found] == [f"{NSD}.nosnap"], found
    assert mirror not in _mirrors(spark_lake, settings)
    assert all(list(i) == ["@1", "@2", "@3"] for i in imgs), imgs
    # MINIMAL logs signedness: the unsigned value reads right even without names
    if mode == "MINIMAL":
        assert sorted(i["@3"] for i in imgs) == [4294967294, 4294967295]


@pytest.mark.integration
@pytest.mark.spark
def test_unlogged_alter(spark_lake: Any, world: dict[str, Any], lake: dict[str, Any]) -> None:
    """NO_LOG: ``ALTER TABLE hidden ADD COLUMN z INT FIRST`` run with sql_log_bin=0, then an
    insert and an update: a table_map_mismatch finding naming the table; the rows logged after
    it keep @n (no wrong names); the mirror holds the rows as they were before it."""
    if world["mode"] != "NO_LOG":
        pytest.skip("NO_LOG only")
    settings = lake["settings"]
    found = [f for f in lake["summary"].findings
             if "table_map_mismatch" in str(f.get("kind"))
             and f.get("table") not in (CONV, HIDDEN_CS)]
    assert [f.get("table") for f in found] == [f"{DB}.hidden"], found
    ch = spark_lake.sql(
        f"SELECT file, pos, op, before, after FROM {settings.table('row_changes')} "
        f"WHERE db = '{DB}' AND tbl = 'hidden' ORDER BY order_seq, order_pos, order_idx"
    ).collect()
    keys = [(r.op, list(json.loads(r.after or r.before))) for r in ch]
    assert keys == [("insert", ["id", "a", "b"]), ("insert", ["id", "a", "b"]),
                    ("insert", ["@1", "@2", "@3", "@4"]),
                    ("update", ["@1", "@2", "@3", "@4"])], keys
    assert json.loads(ch[2].after) == {"@1": 333, "@2": 3, "@3": 30, "@4": "z"}
    # the mirror: the rows before the ALTER, in their columns
    cols = [c for c in world["columns"][(DB, "hidden")] if c.name != "z"]
    got = _mirror_rows(spark_lake, settings, DB, "hidden", cols)
    want = _server_rows(cols, world["hidden_before"])
    assert got == want == [[1, 10, "x"], [2, 20, "y"]], got
    mcols = [f.name for f in spark_lake.table(
        settings.table(_mirror_name(DB, "hidden"))).schema.fields]
    assert not any(c.startswith("@") or c == "z" for c in mcols), mcols


@pytest.mark.integration
@pytest.mark.spark
def test_split_runs_same_mirrors(spark_lake: Any, world: dict[str, Any], lake: dict[str, Any],
                                 tmp_path_factory: pytest.TempPathFactory) -> None:
    """File 1 in a run with the snapshot configured, file 2 in a second run with it still
    configured (a nightly load: the snapshot's versions must not be stored twice), files
    3..4 in a third run without it: that run's history comes from the lake's schema_history
    (the snapshot's versions and the DDL of files 1..2 the earlier runs stored).  Same
    mirrors as the one-run lake, and the same schema_history."""
    mode = world["mode"]
    if mode != "NO_LOG":
        pytest.skip("NO_LOG only (the costliest mode; one split is enough)")
    name = f"schema_{mode.lower()}_split"
    first = _new_lake(spark_lake, tmp_path_factory, name, (world["snapshot"],))
    t0 = time.monotonic()
    _load(spark_lake, first, world["files"][:1])
    _load(spark_lake, first, world["files"][1:2])
    # the same lake (home, catalog), no snapshot configured
    second = _settings(Path(first.home), first.catalog_name)
    summary = _load(spark_lake, second, world["files"][2:])
    TIMINGS[f"{mode} three runs"] = time.monotonic() - t0
    assert [f["status"] for f in summary.files] == ["loaded", "loaded"], summary.files
    # the tables of files 1..2 and of the snapshot were known: no finding for them
    assert {f.get("table") for f in _schema_findings(summary)} <= {
        f"{NSD}.nosnap", f"{DB}.hidden", CONV, HIDDEN_CS}, summary.findings
    one = lake["settings"]
    assert _mirrors(spark_lake, second) == _mirrors(spark_lake, one)
    assert _mirror_name(DB, "evolve_pre") in _mirrors(spark_lake, one)
    for m in sorted(_mirrors(spark_lake, one)):
        a, b = (sorted((tuple(r) for r in spark_lake.table(s.table(m)).collect()), key=repr)
                for s in (one, second))
        assert a == b, m

    def history(s: Any) -> list[tuple[Any, ...]]:
        return sorted(tuple(r) for r in spark_lake.sql(
            f"SELECT db, tbl, start_seq, start_pos, change, version FROM "
            f"{s.table('schema_history')} WHERE change <> 'database'").collect())

    # (rows of database defaults are stored at each run's last file: not compared)
    assert history(second) == history(one)


@pytest.mark.integration
@pytest.mark.spark
def test_convert_to_character_set(spark_lake: Any, world: dict[str, Any],
                                  lake: dict[str, Any]) -> None:
    """``ALTER TABLE conv CONVERT TO CHARACTER SET latin1`` (utf8mb4 before), then an update
    of every row and an insert: no schema finding for the table, its images keyed by names,
    its mirror equal to the server (latin1 text read as latin1 under NO_LOG)."""
    settings = lake["settings"]
    found = [f for f in _schema_findings(lake["summary"]) if f.get("table") == CONV]
    names = [c.name for c in world["columns"][_qual(CONV)]]
    imgs = [list(json.loads(r.after)) for r in spark_lake.sql(
        f"SELECT after FROM {settings.table('row_changes')} WHERE db = '{DB}' "
        "AND tbl = 'conv' AND after IS NOT NULL").collect()]
    problems = []
    if found:
        problems.append(("findings", [(f["kind"], f.get("message")) for f in found]))
    if any(i != names for i in imgs):
        problems.append(("images", imgs))
    try:
        _compare(spark_lake, settings, world, *_qual(CONV))
    except AssertionError as exc:
        problems.append(("mirror", str(exc).splitlines()[0]))
    assert not problems, (world["mode"], problems)


@pytest.mark.integration
@pytest.mark.spark
def test_unlogged_charset_change(spark_lake: Any, world: dict[str, Any],
                                 lake: dict[str, Any]) -> None:
    """NO_LOG: ``ALTER TABLE hidden_cs MODIFY v VARCHAR(20) CHARACTER SET latin1`` (utf8mb4
    before) run with sql_log_bin=0, then an insert and an update.  The history still says
    utf8mb4; the Table_map's VARCHAR length in bytes says otherwise (20, not 80).  No wrong
    value: either the rows after it keep @n (a table_map_mismatch finding; the mirror keeps
    the row as it was before), or they are read right -- never latin1 bytes read as UTF-8."""
    if world["mode"] != "NO_LOG":
        pytest.skip("NO_LOG only")
    settings = lake["settings"]
    mismatch = [f for f in lake["summary"].findings if f.get("table") == HIDDEN_CS
                and "table_map_mismatch" in str(f.get("kind"))]
    cols = world["columns"][_qual(HIDDEN_CS)]
    got = {r[0]: r for r in _mirror_rows(spark_lake, settings, *_qual(HIDDEN_CS), cols)}
    want = {r[0]: r for r in _server_rows(cols, world["rows"][_qual(HIDDEN_CS)])}
    if mismatch:
        assert got == {1: [1, "é"]}, got  # as before the ALTER
    else:
        assert got == want, ("named with the old charset: wrong text", got, want)
