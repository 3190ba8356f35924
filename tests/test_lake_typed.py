"""Typed changelog and mirror tables (binlake.lake.typed).

* Pure: the type mapping of every column type, the schema-evolution rules, table names.
* Synthetic (Spark, no server): MySQL-only types (JSON values of every kind, VECTOR, INT and
  BIGINT UNSIGNED, BIT(64), DECIMAL(40,10), undecodable text, zero/invalid dates, a reserved
  column name), MINIMAL images, a primary-key move, a layout change with an incompatible type,
  a row whose file has no recorded layout (the changelog waits, the mirror stops before it),
  idempotence, and a crash between the mirror MERGE and its watermark.
* Real (MariaDB + Spark): a workload over four binlog files -- every MariaDB column type, an
  ALTER TABLE in the middle (ADD/MODIFY wider/MODIFY incompatible/DROP COLUMN), primary-key
  moves (one row, and a multi-row shift), a table without a primary key, an XA prepared in
  one file and committed in the next, MINIMAL/NOBLOB images, several changes of one key in a
  batch -- loaded by ``run_load``.  Every mirror must equal the server's own final
  ``SELECT *`` (typed values: decimals exact, datetimes to the microsecond, BIGINT UNSIGNED
  max intact, bytes, NULLs), every changelog must have one row per ``row_changes`` row; a
  rerun, and a backfill of files 1..2, change nothing; a second lake loaded in two runs, the
  second one killed before the typed step and rerun, ends identical to the first; so does
  a lake whose deltas are over the executor fold's bounds (Spark folds them).

Expected values come from the server (``SELECT`` with a converter-less connection, put in the
decode contract's form by ``tests/reference.py``), never from binlake.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from binlake.lake import typed, typed_staged
from binlake.lake.typed_plan import (
    CL_META,
    Layout,
    Mapped,
    holds,
    map_column,
    plan_schema,
    table_names,
    widen,
)

from .binlog_files import copy_files
from .mirror_oracle import actual, expected
from .servers import start_server

TIMINGS: dict[str, float] = {}


# -- pure ------------------------------------------------------------------------------------


def _col(binlog_type: int, meta: int = 0, *, unsigned: bool = False,
         collation: int | None = None, name: str = "c", **kw: Any) -> dict[str, Any]:
    return {"index": 0, "name": name, "binlog_type": binlog_type, "meta": meta,
            "nullable": True, "unsigned": unsigned, "collation": collation, **kw}


@pytest.mark.parametrize(("col", "sql", "kind"), [
    (_col(1), "int", "cast"), (_col(1, unsigned=True), "int", "cast"),
    (_col(2, unsigned=True), "int", "cast"), (_col(9, unsigned=True), "int", "cast"),
    (_col(3), "int", "cast"), (_col(3, unsigned=True), "bigint", "cast"),
    (_col(8), "bigint", "cast"), (_col(8, unsigned=True), "decimal(20,0)", "cast"),
    (_col(246, 10 | 2 << 8), "decimal(10,2)", "cast"),
    (_col(246, 38 | 30 << 8), "decimal(38,30)", "cast"),
    (_col(246, 65 | 30 << 8), "string", "string"),
    (_col(4, 4), "float", "cast"), (_col(5, 8), "double", "cast"),
    (_col(16, 1), "bigint", "cast"), (_col(16, 7 << 8 | 7), "bigint", "cast"),
    (_col(16, 8 << 8), "decimal(20,0)", "cast"),
    (_col(13), "int", "cast"), (_col(10), "date", "date"),
    (_col(18, 6), "timestamp_ntz", "datetime"), (_col(12), "timestamp_ntz", "datetime"),
    (_col(17, 3), "timestamp", "timestamp"), (_col(7), "timestamp", "timestamp"),
    (_col(19, 6), "string", "string"), (_col(11), "string", "string"),
    (_col(15, 80, collation=45), "string", "text"),
    (_col(15, 80, collation=63), "binary", "binary"),
    (_col(254, 0xFE | 16 << 8, collation=63), "binary", "binary"),
    (_col(254, 0xFE | 80 << 8, collation=8), "string", "text"),
    (_col(254, 0xF7 | 1 << 8, members=["a", "b"]), "string", "string"),  # ENUM
    (_col(254, 0xF8 | 8 << 8, members=["a"]), "string", "string"),  # SET
    (_col(252, 2, collation=63), "binary", "binary"), (_col(252, 4, collation=46), "string",
                                                       "text"),
    (_col(252, 2), "string", "text"),  # no charset metadata: text
    (_col(255, 4, collation=63), "binary", "binary"), (_col(245, 4), "string", "json"),
    (_col(242, 4), "array<float>", "vector"),
])
def test_type_mapping(col: dict[str, Any], sql: str, kind: str) -> None:
    m = map_column(col)
    assert (m.sql, m.kind) == (sql, kind), m


def test_evolution_rules() -> None:
    assert holds("bigint", "int") and holds("double", "float") and holds("int", "int")
    assert holds("decimal(20,0)", "bigint") and not holds("decimal(18,0)", "bigint")
    assert holds("decimal(12,4)", "decimal(10,2)") and not holds("decimal(12,4)", "decimal(10,5)")
    assert not holds("string", "int") and not holds("timestamp", "timestamp_ntz")
    assert widen("int", "bigint") == "bigint" and widen("float", "double") == "double"
    assert widen("decimal(10,2)", "decimal(12,2)") == "decimal(12,2)"
    assert widen("decimal(10,4)", "decimal(12,2)") == "decimal(14,4)"
    assert widen("decimal(10,2)", "decimal(10,4)") is None  # a scale change
    assert widen("bigint", "decimal(20,0)") is None and widen("int", "string") is None

    def lay(*cols: tuple[str, str]) -> Layout:
        return Layout(1, 4, tuple((n, Mapped(t, "cast", t)) for n, t in cols), ("id",), True)

    l1 = lay(("id", "int"), ("a", "int"), ("b", "string"), ("d", "decimal(5,2)"), ("x", "int"))
    l2 = lay(("id", "int"), ("a", "bigint"), ("b", "int"), ("d", "decimal(9,2)"),
             ("c", "timestamp_ntz"))
    l3 = lay(("id", "int"), ("a", "int"), ("b", "string"), ("d", "decimal(9,3)"),
             ("_op", "string"))
    p = plan_schema([], [l1, l2, l3])
    assert p.columns == {"id": "int", "a": "bigint", "b": "string", "d": "decimal(9,2)",
                         "x": "int", "b__v2": "int", "c": "timestamp_ntz",
                         "d__v2": "decimal(9,3)", "_op__col": "string"}
    assert p.slots[1] == {"id": "id", "a": "a", "b": "b__v2", "d": "d", "c": "c"}
    assert p.slots[2] == {"id": "id", "a": "a", "b": "b", "d": "d__v2", "_op": "_op__col"}
    # replanning on the evolved schema changes nothing; the mapping is the same
    again = plan_schema(list(p.columns.items()), [l1, l2, l3])
    assert not again.actions and again.slots == p.slots and again.columns == p.columns


def test_table_names() -> None:
    assert table_names("shop", "orders") == ("changelog__shop__orders", "mirror__shop__orders")
    a, _ = table_names("Shop", "orders")
    b, _ = table_names("shop", "Orders")
    c, _ = table_names("sh-op", "orders")
    d, _ = table_names("a__b", "c")
    e, _ = table_names("a", "b__c")
    assert len({a, b, c, d, e, "changelog__shop__orders"}) == 6
    assert all(set(n) <= set("abcdefghijklmnopqrstuvwxyz0123456789_") for n in (a, b, c, d, e))
    assert a.startswith("changelog__shop__orders__")


# -- Spark -----------------------------------------------------------------------------------


def _settings(home: Path, catalog: str) -> Any:
    from binlake.config import load_settings

    return load_settings(env={"BINLAKE_HOME": str(home), "BINLAKE_CATALOG_NAME": catalog})


def _new_lake(tmp_path_factory: pytest.TempPathFactory, home: str, catalog: str) -> Any:
    """The settings of a fresh lake (its own home and catalog name), the shared session
    set up for its catalog (local[2])."""
    from binlake.lake.spark import build_session

    settings = _settings(tmp_path_factory.mktemp(home), catalog)
    build_session(settings, master="local[2]")
    return settings


@pytest.fixture(scope="module")
def spark(spark_lake: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The suite's shared session (conftest ``spark_lake``; stopping it here would break
    the modules that use it after this one), with this module's catalog registered."""
    from binlake.lake.spark import build_session

    t0 = time.monotonic()
    s = build_session(_settings(tmp_path_factory.mktemp("typed-boot"), "typed_boot"),
                      master="local[2]")
    TIMINGS["spark session"] = time.monotonic() - t0
    yield s
    print("\ntest_lake_typed timings: " + ", ".join(f"{k} {v:.1f}s" for k, v in
                                                    TIMINGS.items()))


def _rows(spark: Any, table: str) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in spark.table(table).collect()), key=repr)


def _typed_tables(spark: Any, settings: Any) -> dict[str, list[tuple[Any, ...]]]:
    out = {}
    for r in spark.sql(f"SHOW TABLES IN {settings.catalog_name}.{settings.namespace}").collect():
        if r.tableName.startswith(("changelog__", "mirror__")):
            out[r.tableName] = _rows(spark, settings.table(r.tableName))
    return out


# -- synthetic: MySQL-only types, partial images, crash points --------------------------------

SYN_L1 = [
    {"index": 0, "name": "id", "binlog_type": 3, "meta": 0, "nullable": False, "unsigned": False},
    {"index": 1, "name": "u32", "binlog_type": 3, "meta": 0, "nullable": True, "unsigned": True},
    {"index": 2, "name": "u64", "binlog_type": 8, "meta": 0, "nullable": True, "unsigned": True},
    {"index": 3, "name": "b64", "binlog_type": 16, "meta": 8 << 8, "nullable": True},
    {"index": 4, "name": "d40", "binlog_type": 246, "meta": 40 | 10 << 8, "nullable": True},
    {"index": 5, "name": "j", "binlog_type": 245, "meta": 4, "nullable": True},
    {"index": 6, "name": "v", "binlog_type": 242, "meta": 4, "nullable": True},
    {"index": 7, "name": "t", "binlog_type": 15, "meta": 400, "nullable": True,
     "collation": 255},
    {"index": 8, "name": "ts", "binlog_type": 17, "meta": 6, "nullable": True},
    {"index": 9, "name": "dt", "binlog_type": 18, "meta": 0, "nullable": True},
    {"index": 10, "name": "dd", "binlog_type": 10, "meta": 0, "nullable": True},
    {"index": 11, "name": "bin", "binlog_type": 254, "meta": 0xFE | 2 << 8, "nullable": True,
     "collation": 63},
    {"index": 12, "name": "_op", "binlog_type": 3, "meta": 0, "nullable": True,
     "unsigned": False},
    {"index": 13, "name": "we`ird.name", "binlog_type": 15, "meta": 40, "nullable": True,
     "collation": 255},
]
# after an ALTER: u32 becomes BIGINT UNSIGNED (not an Iceberg promotion), a new column
SYN_L2 = [dict(c) for c in SYN_L1] + [
    {"index": 14, "name": "extra", "binlog_type": 3, "meta": 0, "nullable": True,
     "unsigned": False}]
SYN_L2[1] = {**SYN_L1[1], "binlog_type": 8}

FULL1 = {"id": 1, "u32": 4294967295, "u64": 18446744073709551615, "b64": 18446744073709551615,
         "d40": "123456789012345678901234567890.0123456789", "j": {"k": [1, "x"], "n": None},
         "v": [1.5, -2.0], "t": "plain", "ts": "2024-02-29 12:34:56.654321",
         "dt": "0000-00-00 00:00:00", "dd": "2024-02-30", "bin": {"hex": "00ff"}, "_op": 7,
         "we`ird.name": "w"}
JSONS = {2: "a string", 3: 1.5, 4: True, 5: "true", 6: "{x", 7: [], 8: "[1]", 9: -3}


def _img(**kw: Any) -> str:
    return json.dumps(kw)


def _syn_changes() -> list[dict[str, Any]]:
    """(file, pos, order key, op, before, after) of the synthetic history."""
    ch: list[dict[str, Any]] = []

    def add(seq: int, pos: int, op: str, before: Any, after: Any, idx: int = 0) -> None:
        ch.append({"file": f"mysql-bin.{seq:06d}", "pos": pos, "order_seq": seq,
                   "order_pos": pos + 100, "order_idx": idx, "op": op,
                   "before": None if before is None else json.dumps(before),
                   "after": None if after is None else json.dumps(after)})

    base = {k: None for k in FULL1}
    add(1, 200, "insert", None, FULL1)
    for i, (k, j) in enumerate(JSONS.items()):
        add(1, 300, "insert", None, {**base, "id": k, "j": j,
                                     "t": {"hex": "ff41"} if k == 2 else "x"}, idx=i)
    add(1, 400, "update", {"id": 1}, {"u32": 5})  # MINIMAL: only the changed column
    add(1, 500, "update", {**base, "id": 3, "j": 1.5, "t": "x"},
        {**base, "id": 30, "j": 1.5, "t": "moved"})  # a primary-key move
    add(1, 600, "delete", {**base, "id": 4, "j": True, "t": "x"}, None)
    add(1, 6000, "insert", None, {**base, "id": 100, "u32": 18446744073709551615,
                                  "extra": 42})  # layout 2
    add(1, 6100, "update", {"id": 1}, {"extra": 1})  # MINIMAL, layout 2
    return ch


def _write_changes(spark: Any, settings: Any, changes: list[dict[str, Any]]) -> None:
    from binlake.lake.tables import ROW_CHANGES, ensure_tables

    ensure_tables(spark, settings)
    schema = spark.table(settings.table(ROW_CHANGES)).schema
    rows = []
    for c in changes:
        d = {"source": settings.source, "txn_id": f"t{c['order_pos']}",
             "commit_ts": datetime(2024, 3, 1, tzinfo=UTC), "db": "app", "tbl": "syn",
             "row": 0, "run_id": "r", **c}
        rows.append(tuple(d.get(f.name) for f in schema.fields))
    spark.createDataFrame(rows, schema).writeTo(settings.table(ROW_CHANGES)).append()


def _layout_rec(cols: list[dict[str, Any]], seq: int, pos: int) -> dict[str, Any]:
    return {"db": "app", "tbl": "syn", "columns": cols, "primary_key": ["id"],
            "has_names": True, "seq": seq, "pos": pos}


@pytest.mark.spark
def test_synthetic_mysql_types(spark: Any, tmp_path: Path) -> None:
    t0 = time.monotonic()
    settings = _settings(tmp_path, "typed_syn")
    from binlake.lake.spark import build_session

    spark = build_session(settings, master="local[2]")  # same session, this catalog too
    changes = _syn_changes()
    # a change in file 2, whose layouts no load has recorded yet
    late = {"file": "mysql-bin.000002", "pos": 300, "order_seq": 2, "order_pos": 400,
            "order_idx": 0, "op": "update", "before": json.dumps({"id": 2}),
            "after": json.dumps({"extra": 2})}
    _write_changes(spark, settings, [*changes, late])
    anon = {**_layout_rec([{**c, "name": None} for c in SYN_L1], 1, 50), "tbl": "anon",
            "has_names": False, "primary_key": None}
    seen = [_layout_rec(SYN_L1, 1, 150), _layout_rec(SYN_L2, 1, 5900), anon]
    rep = typed.apply(spark, settings, seen, "run1")
    assert "FULL" in rep["skipped"]["app.anon"]
    assert not spark.catalog.tableExists(settings.table("changelog__app__anon"))
    t = rep["tables"]["app.syn"]
    assert t["changelog_rows"] == len(changes)
    assert any("not recorded" in n for n in t["notes"]), t
    cl = settings.table("changelog__app__syn")
    mirror = settings.table("mirror__app__syn")
    schema = {f.name: f.dataType.simpleString() for f in spark.table(mirror).schema.fields}
    assert schema["u32"] == "bigint" and schema["u32__v2"] == "decimal(20,0)"
    assert schema["_op__col"] == "int" and schema["j"] == "string"
    assert schema["v"] == "array<float>" and schema["dt"] == "timestamp_ntz"
    assert schema["ts"] == "timestamp" and schema["bin"] == "binary" and schema["extra"] == "int"

    got = {r["id"]: r.asDict() for r in spark.table(mirror).collect()}
    assert sorted(got) == [1, 2, 5, 6, 7, 8, 9, 30, 100]  # 3 moved to 30, 4 deleted
    r1 = got[1]
    # the last change (MINIMAL, layout 2) keeps u64 (absent from its image); u32 is not in
    # layout 2 (its values go to u32__v2 now): NULL, and u32__v2 was never written for it
    assert r1["u64"] == Decimal("18446744073709551615")
    assert r1["u32"] is None and r1["u32__v2"] is None
    assert r1["b64"] == Decimal("18446744073709551615") and r1["extra"] == 1
    assert r1["d40"] == "123456789012345678901234567890.0123456789"
    assert json.loads(r1["j"]) == {"k": [1, "x"], "n": None} and r1["v"] == [1.5, -2.0]
    assert r1["dt"] is None and r1["dd"] is None  # zero datetime, invalid date
    assert r1["bin"] == b"\x00\xff" and r1["_op__col"] == 7 and r1["t"] == "plain"
    assert r1["we`ird.name"] == "w"
    assert spark.sql(f"SELECT unix_micros(ts) FROM {mirror} WHERE id = 1").collect()[0][0] \
        == int(datetime(2024, 2, 29, 12, 34, 56, 654321, tzinfo=UTC).timestamp()) * 10**6 \
        + 654321
    for k, j in JSONS.items():  # JSON text, strings quoted
        if k not in (3, 4):
            assert json.loads(got[k]["j"]) == j, (k, got[k]["j"])
    assert got[30]["j"] == "1.5"
    assert got[2]["t"] == "\ufffdA"  # bytes that did not decode
    assert got[30]["t"] == "moved" and got[100]["u32__v2"] == Decimal(18446744073709551615)
    assert got[100]["u32"] is None and got[100]["extra"] == 42
    assert got[2]["extra"] is None  # the file-2 change waits for its layout

    # changelog: the MINIMAL update carries its key; _absent names what the image lacks
    minimal = spark.sql(f"SELECT id, u32, _absent FROM {cl} WHERE _order_pos = 500").collect()
    assert minimal[0]["id"] == 1 and minimal[0]["u32"] == 5
    assert "id" not in minimal[0]["_absent"] and "_op__col" in minimal[0]["_absent"]
    before = _typed_tables(spark, settings)

    # a rerun after a crash between the mirror MERGE and its watermark (rewound here):
    # every change is offered again, nothing changes
    spark.sql(f"ALTER TABLE {mirror} SET TBLPROPERTIES ('binlake.watermark.default'='0,0,0')")
    rep = typed.apply(spark, settings, seen, "run3")
    assert rep["tables"]["app.syn"]["mirror_rows"] == len(changes)
    assert _typed_tables(spark, settings) == before

    # the layouts of file 2 arrive (a load of file 2): its change enters the changelog and
    # the mirror catches up
    rep = typed.apply(spark, settings, [_layout_rec(SYN_L2, 2, 100)], "run4", seqs=[2])
    assert rep["tables"]["app.syn"]["changelog_rows"] == 1
    assert rep["tables"]["app.syn"]["mirror_rows"] == 1
    assert spark.sql(f"SELECT extra, u32 FROM {mirror} WHERE id = 2").collect()[0] == (2, None)
    TIMINGS["synthetic"] = time.monotonic() - t0


# -- real: a MariaDB workload over four files --------------------------------------------------

DB = "wl"


def _file1() -> list[str]:
    from .workloads import ALL_TYPES, ROW_HUGE

    # every type, without the 3 MiB rows (they only make the test slow)
    stmts = [s for s in ALL_TYPES if s != ROW_HUGE and "CONCAT(lb, 'tail')" not in s]
    return [*stmts,
            f"CREATE TABLE {DB}.evo (id INT NOT NULL PRIMARY KEY, a INT, b VARCHAR(10), "
            "d DECIMAL(5,2), gone VARCHAR(5))",
            f"INSERT INTO {DB}.evo VALUES (1, 10, '1', 1.25, 'x'), (2, 20, '2', 2.50, 'y'), "
            "(3, 30, '3', 3.75, 'z')",
            f"CREATE TABLE {DB}.pk (id INT NOT NULL PRIMARY KEY, v VARCHAR(10))",
            f"INSERT INTO {DB}.pk VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')",
            f"CREATE TABLE {DB}.nopk (a INT, b VARCHAR(10))",
            f"INSERT INTO {DB}.nopk VALUES (1, 'a'), (1, 'a'), (2, 'b')"]


FILE2 = [
    f"UPDATE {DB}.evo SET a = 11 WHERE id = 1",
    f"ALTER TABLE {DB}.evo ADD COLUMN c DATETIME(3), MODIFY a BIGINT, MODIFY d DECIMAL(9,2), "
    "MODIFY b INT, DROP COLUMN gone",
    f"INSERT INTO {DB}.evo VALUES (4, 40000000000, 4, 1234567.89, '2024-01-02 03:04:05.678')",
    f"UPDATE {DB}.evo SET c = '2001-01-01 00:00:00.001', b = b + 100 WHERE id = 2",
    f"UPDATE {DB}.pk SET id = 20 WHERE id = 2",  # a primary-key move
    f"UPDATE {DB}.pk SET id = id + 1 ORDER BY id DESC",  # 20->21, 4->5, 3->4, 1->2
    f"DELETE FROM {DB}.nopk WHERE a = 2",
    f"UPDATE {DB}.nopk SET b = 'z' WHERE a = 1 LIMIT 1",
    f"INSERT INTO {DB}.nopk VALUES (3, 'c')",
]
XA_START = ["XA START 'x1'", f"INSERT INTO {DB}.pk VALUES (100, 'xa')", "XA END 'x1'",
            "XA PREPARE 'x1'"]


def _file3() -> list[str]:
    from .workloads import ROW_IMAGES

    return [
        f"INSERT INTO {DB}.pk VALUES (50, 'new')",  # several changes of one key in one batch
        f"UPDATE {DB}.pk SET v = 'upd' WHERE id = 50",
        f"DELETE FROM {DB}.pk WHERE id = 50",
        f"INSERT INTO {DB}.pk VALUES (50, 'again')",
        f"UPDATE {DB}.evo SET a = a + 1",  # every row, in the new layout
        *[s for s in ROW_IMAGES if not s.startswith("CREATE DATABASE")],
    ]


FILE4 = [
    f"INSERT INTO {DB}.evo (id, a, b, d) VALUES (5, 5, 5, 5.00)",
    f"UPDATE {DB}.pk SET v = 'last' WHERE id = 21",
]
MIRRORED = ("all_types", "evo", "pk", "images")
RENAMED = {("evo", "b"): "b__v2"}  # MODIFY b INT (was VARCHAR): a new column


def _server_state(srv: Any) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[Any]]]:
    from .reference import load_schema, server_text_to_contract

    with srv.connect() as conn:
        schema = load_schema(conn, [DB])
    state: dict[str, list[dict[str, Any]]] = {}
    with srv.connect(conv={}) as conn, conn.cursor() as cur:
        for (_, t), cols in schema.items():
            cur.execute(f"SELECT * FROM {DB}.{t}")
            state[t] = [{c.name or "": server_text_to_contract(v, c) for c, v in zip(cols, row)}
                        for row in cur.fetchall()]
    return state, {t: cols for (_, t), cols in schema.items()}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, mariadb_template: Path) -> dict[str, Any]:
    """Run the workload; the closed binlog files (copied) and the server's final state."""
    t0 = time.monotonic()
    base = tmp_path_factory.mktemp("typed-srv")
    srv = start_server(base, mariadb_template)
    try:
        with srv.connect(max_allowed_packet=64 << 20) as conn, conn.cursor() as cur:
            for sql in _file1():
                cur.execute(sql)
            srv.flush_binary_logs()
            for sql in FILE2:
                cur.execute(sql)
            with srv.connect() as xa, xa.cursor() as xcur:
                for sql in XA_START:
                    xcur.execute(sql)
                srv.flush_binary_logs()
                xcur.execute("XA COMMIT 'x1'")
            for sql in _file3():
                cur.execute(sql)
            srv.flush_binary_logs()
            for sql in FILE4:
                cur.execute(sql)
            srv.flush_binary_logs()
        state, columns = _server_state(srv)
        files = [str(p) for p in copy_files(srv.closed_binlog_files(), base / "binlogs")]
    finally:
        srv.stop(timeout=30)
    assert len(files) == 4
    TIMINGS["workload"] = time.monotonic() - t0
    return {"files": files, "state": state, "columns": columns}


def _load(spark: Any, settings: Any, files: list[str], reports: list[dict[str, Any]]) -> Any:
    from binlake.lake.job import run_load

    s = run_load(spark, settings, files)
    if s.typed:  # the typed step's report (none when it had nothing to do)
        reports.append(s.typed)
    assert not s.failed, s.files
    return s


def _killed_before_typed_fill(spark: Any, settings: Any, files: list[str]) -> None:
    """A load of ``files`` killed after the record tables are written and before the typed
    tables are filled (the job raises there)."""
    from binlake.lake.job import run_load

    def killed(*a: Any, **k: Any) -> None:
        raise RuntimeError("killed")

    mp = pytest.MonkeyPatch()
    mp.setattr(typed, "fill", killed)
    try:
        with pytest.raises(RuntimeError, match="killed"):
            run_load(spark, settings, files)
    finally:
        mp.undo()


@pytest.fixture(scope="module")
def lake(spark: Any, world: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
         ) -> dict[str, Any]:
    settings = _new_lake(tmp_path_factory, "typed-lake", "typed_a")
    reports: list[dict[str, Any]] = []
    t0 = time.monotonic()
    _load(spark, settings, world["files"], reports)
    TIMINGS["load 1..4"] = time.monotonic() - t0
    return {"settings": settings, "report": reports[0], "tables": _typed_tables(spark, settings)}


def _watermark_came_with_rows(spark: Any, settings: Any, mirror: str) -> bool:
    """Whether the metadata version that made ``mirror``'s current snapshot already held the
    watermark the mirror holds now: one commit for both (commit.operation_source), not the
    rows first and the watermark in a commit of its own."""
    from binlake.lake.commit import java_table
    from binlake.lake.typed_ddl import watermark_key

    ice = spark._jvm.org.apache.iceberg
    jtable = java_table(spark, mirror)
    now = jtable.operations().current()
    key = watermark_key(spark, settings)
    want = (now.currentSnapshot().snapshotId(), now.properties().get(key))
    assert want[1], f"{mirror}: no watermark"
    log = now.previousFiles()
    for path in [log.get(i).file() for i in range(log.size())] + [now.metadataFileLocation()]:
        meta = ice.TableMetadataParser.read(jtable.io(), path)
        snap = meta.currentSnapshot()
        if snap is not None and snap.snapshotId() == want[0]:  # the version that made it
            return bool(meta.properties().get(key) == want[1])
    raise AssertionError(f"{mirror}: no metadata version made its current snapshot")


def _mirror_vs_server(spark: Any, settings: Any, world: dict[str, Any], table: str) -> None:
    cols = world["columns"][table]
    mirror = settings.table(f"mirror__{DB}__{table}")
    names = [RENAMED.get((table, c.name), c.name) for c in cols]
    sel = [f"unix_micros(`{n}`)" if c.sql_type == "TIMESTAMP" else f"`{n}`"
           for n, c in zip(names, cols)]
    got = sorted(([actual(c, v) for c, v in zip(cols, r)]
                  for r in spark.sql(f"SELECT {', '.join(sel)} FROM {mirror}").collect()),
                 key=lambda r: r[0])
    want = sorted(([expected(c, row[c.name]) for c in cols] for row in world["state"][table]),
                  key=lambda r: r[0])
    assert [r[0] for r in got] == [r[0] for r in want], table
    for g, w in zip(got, want):
        for c, a, b in zip(cols, g, w):
            assert a == b, (table, g[0], c.name, a, b)


@pytest.mark.integration
@pytest.mark.spark
@pytest.mark.parametrize("table", MIRRORED)
def test_mirror_equals_server(spark: Any, lake: dict[str, Any], world: dict[str, Any],
                              table: str) -> None:
    _mirror_vs_server(spark, lake["settings"], world, table)


@pytest.mark.integration
@pytest.mark.spark
def test_nopk_mirror_is_the_servers_multiset(spark: Any, lake: dict[str, Any],
                                             world: dict[str, Any]) -> None:
    """A table without a primary key: the mirror holds the server's rows, duplicates
    included (an UPDATE ... LIMIT 1 of one of two equal rows changed exactly one)."""
    settings = lake["settings"]
    got = sorted(tuple(r) for r in spark.sql(
        f"SELECT a, b FROM {settings.table(f'mirror__{DB}__nopk')}").collect())
    want = sorted((r["a"], r["b"]) for r in world["state"]["nopk"])
    assert got == want and len(want) == 3
    # copies are numbered per value: (1, 'a') once now, so _dup 1
    dups = spark.sql(f"SELECT a, b, _dup FROM {settings.table(f'mirror__{DB}__nopk')}").collect()
    assert sorted(tuple(r) for r in dups) == sorted((*w, 1) for w in want)


@pytest.mark.integration
@pytest.mark.spark
def test_changelog_counts_and_report(spark: Any, lake: dict[str, Any]) -> None:
    settings = lake["settings"]
    counts = {(r[0], r[1]): r[2] for r in spark.sql(
        f"SELECT db, tbl, count(*) FROM {settings.table('row_changes')} GROUP BY db, tbl"
    ).collect()}
    rep = lake["report"]
    for (db, tbl), n in counts.items():
        if db != DB:
            continue
        cl = settings.table(f"changelog__{db}__{tbl}")
        assert spark.table(cl).count() == n, tbl
        assert rep["tables"][f"{db}.{tbl}"]["changelog_rows"] == n
        assert spark.table(cl).select("_source", "_order_seq", "_order_pos", "_order_idx") \
            .distinct().count() == n
    assert rep["tables"][f"{DB}.nopk"]["mirror"] == settings.table(f"mirror__{DB}__nopk")
    # the run's staged deltas are gone, and the staging directory with them
    from binlake.lake.staging import _stage_root

    stage = _stage_root(settings, "x")
    assert stage is not None and not os.path.exists(os.path.dirname(stage))
    # a first load: every mirror's delta (small: within DRIVER_FOLD_ROWS) was folded by the
    # driver (fold.fold_mirror, without a Spark job) and its rows written as the new
    # mirror's data files, the one with MINIMAL/NOBLOB images too (fold.fold_partial: no
    # key moves)
    folds = {k: t.get("mirror_fold") for k, t in rep["tables"].items() if t["mirror_rows"]}
    assert folds == {f"{DB}.{t}": "driver" for t in MIRRORED}, folds
    assert not rep["skipped"]
    # no-PK: the changelog replays to the server's multiset of rows
    ops = spark.sql(f"SELECT _op, a, b FROM {settings.table(f'changelog__{DB}__nopk')} "
                    "ORDER BY _order_seq, _order_pos, _order_idx").collect()
    assert [tuple(r) for r in ops] == [
        ("insert", 1, "a"), ("insert", 1, "a"), ("insert", 2, "b"), ("delete", 2, "b"),
        ("update", 1, "z"), ("insert", 3, "c")]


@pytest.mark.integration
@pytest.mark.spark
def test_commit_metrics_equal_icebergs_file_metrics(spark: Any, lake: dict[str, Any]) -> None:
    """The column statistics the driver's commits give a local data file
    (commit._local_footer_metrics: the footer read through Parquet's LocalInputFile) are
    Iceberg's own ``ParquetUtil.fileMetrics`` of the file, field for field (sizes, counts,
    bounds), for every data file of every table of the lake: every column type of the
    workload, partitioned and not, record tables and typed ones."""
    from binlake.lake.commit import _local_footer_metrics, data_file_builder, java_table
    from binlake.lake.sink import fs_path

    settings = lake["settings"]
    ice = spark._jvm.org.apache.iceberg
    to_json = ice.ContentFileParser.toJson
    files = 0
    tables = set()
    for r in spark.sql(f"SHOW TABLES IN {settings.catalog_name}.{settings.namespace}").collect():
        jt = java_table(spark, settings.table(r.tableName))
        spec, io = jt.spec(), jt.io()
        config = ice.MetricsConfig.forTable(jt)
        local = _local_footer_metrics(spark, config)
        assert local is not None
        build = data_file_builder(spark, jt)
        it = jt.newScan().planFiles().iterator()
        while it.hasNext():
            f = it.next().file()
            path = f.location()
            want = ice.DataFiles.builder(spec).copy(f).withMetrics(
                ice.parquet.ParquetUtil.fileMetrics(io.newInputFile(path), config)).build()
            got = ice.DataFiles.builder(spec).copy(f).withMetrics(local(fs_path(path))).build()
            assert to_json(got, spec) == to_json(want, spec), (r.tableName, path)
            if not spec.isPartitioned():  # the whole builder too (partition values: none)
                old = ice.DataFiles.builder(spec).withPath(path).withFormat(
                    ice.FileFormat.PARQUET).withFileSizeInBytes(
                    io.newInputFile(path).getLength()).withMetrics(
                    ice.parquet.ParquetUtil.fileMetrics(io.newInputFile(path), config)
                ).withPartition(ice.PartitionData(spec.partitionType())).build()
                assert to_json(build({"path": path, "partition": []}), spec) == to_json(
                    old, spec), path
            files += 1
            tables.add(r.tableName)
    assert files >= 40, files
    assert {"row_changes", "changelog__wl__all_types", "mirror__wl__all_types"} <= tables


@pytest.mark.integration
@pytest.mark.spark
def test_schema_evolution(spark: Any, lake: dict[str, Any]) -> None:
    settings = lake["settings"]
    cl = settings.table(f"changelog__{DB}__evo")
    schema = [(f.name, f.dataType.simpleString()) for f in spark.table(cl).schema.fields]
    assert schema[:7] == [("id", "int"), ("a", "bigint"), ("b", "string"),
                          ("d", "decimal(9,2)"), ("gone", "string"), ("b__v2", "int"),
                          ("c", "timestamp_ntz")]
    assert [n for n, _ in schema[7:]] == [n for n, _ in CL_META]
    assert not lake["report"]["evolved"]  # created with every layout known: no ALTER needed
    rows = spark.sql(f"SELECT id, a, b, d, gone, b__v2, c, _op FROM {cl} "
                     "ORDER BY _order_seq, _order_pos, _order_idx").collect()
    old = [tuple(r) for r in rows[:4]]  # before the ALTER: the old columns
    assert old == [(1, 10, "1", Decimal("1.25"), "x", None, None, "insert"),
                   (2, 20, "2", Decimal("2.50"), "y", None, None, "insert"),
                   (3, 30, "3", Decimal("3.75"), "z", None, None, "insert"),
                   (1, 11, "1", Decimal("1.25"), "x", None, None, "update")]
    new = [tuple(r) for r in rows[4:6]]  # after it: the new ones, the dropped one NULL
    assert new == [(4, 40000000000, None, Decimal("1234567.89"), None, 4,
                    datetime(2024, 1, 2, 3, 4, 5, 678000), "insert"),
                   (2, 20, None, Decimal("2.50"), None, 102,
                    datetime(2001, 1, 1, 0, 0, 0, 1000), "update")]


@pytest.mark.integration
@pytest.mark.spark
def test_primary_key_moves(spark: Any, lake: dict[str, Any]) -> None:
    settings = lake["settings"]
    got = sorted(tuple(r) for r in spark.sql(
        f"SELECT id, v FROM {settings.table(f'mirror__{DB}__pk')}").collect())
    assert got == [(2, "a"), (4, "c"), (5, "d"), (21, "last"), (50, "again"), (100, "xa")]


@pytest.mark.integration
@pytest.mark.spark
def test_rerun_and_backfill_change_nothing(spark: Any, lake: dict[str, Any],
                                           world: dict[str, Any]) -> None:
    settings = lake["settings"]
    t0 = time.monotonic()
    reports: list[dict[str, Any]] = []
    _load(spark, settings, world["files"], reports)
    TIMINGS["rerun 1..4"] = time.monotonic() - t0
    assert _typed_tables(spark, settings) == lake["tables"]
    assert reports == []  # every file skipped: the typed step has nothing to do
    t0 = time.monotonic()
    _load(spark, settings, world["files"][:2], reports)  # a backfill of files 1..2
    TIMINGS["backfill 1..2"] = time.monotonic() - t0
    assert _typed_tables(spark, settings) == lake["tables"]
    # files 2..3 decoded again (--reload): their changelog rows are replaced by the same
    # rows, the mirror (past them already) does not move
    from binlake.lake.job import run_load

    t0 = time.monotonic()
    s = run_load(spark, settings, world["files"][1:3], reload=True)
    TIMINGS["reload 2..3"] = time.monotonic() - t0
    assert not s.failed and s.typed["rows_merged"]["changelog"] > 0
    assert _typed_tables(spark, settings) == lake["tables"]


@pytest.mark.integration
@pytest.mark.spark
def test_killed_run_rerun_completes(spark: Any, lake: dict[str, Any], world: dict[str, Any],
                                    tmp_path_factory: pytest.TempPathFactory) -> None:
    """A second lake: file 1, file 2 (the ALTER: the typed tables evolve), then 3..4 killed
    after row_changes (before the typed step), then 3..4 again: the same typed tables as the
    one-run lake."""
    settings = _new_lake(tmp_path_factory, "typed-lake-b", "typed_b")
    files = world["files"]
    t0 = time.monotonic()
    reports: list[dict[str, Any]] = []
    _load(spark, settings, files[:1], reports)
    _load(spark, settings, files[1:2], reports)
    evolved = reports[1]["tables"][f"{DB}.evo"]["evolved"]
    assert len(evolved) == 2 * 4, evolved  # a, d widened; b__v2, c added; in both tables
    assert sum("ALTER COLUMN `a` TYPE bigint" in e for e in evolved) == 2
    # file 2 into existing mirrors: small deltas, folded on the driver (the executor's
    # function, without a Spark job), then MERGEd
    folds = {k: t.get("mirror_fold") for k, t in reports[1]["tables"].items()
             if t["mirror_rows"] and k != f"{DB}.images"}
    assert folds and set(folds.values()) == {"driver"}, folds
    # and each of those mirrors' watermark came with its rows, in the MERGE's own commit
    for k in folds:
        mirror = reports[1]["tables"][k]["mirror"]
        assert _watermark_came_with_rows(spark, settings, mirror), mirror

    _killed_before_typed_fill(spark, settings, files[2:])
    _load(spark, settings, files[2:], reports)
    TIMINGS["lake b: 4 runs"] = time.monotonic() - t0
    assert _typed_tables(spark, settings) == lake["tables"]
    for table in MIRRORED:
        _mirror_vs_server(spark, settings, world, table)


@pytest.mark.integration
@pytest.mark.spark
def test_tables_created_by_a_killed_run_are_built_whole(
        spark: Any, lake: dict[str, Any], world: dict[str, Any],
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """A third lake: file 1 loaded, then its typed tables dropped (the documented way to
    rebuild them); then files 2..4 in a run killed before the typed tables are filled (the
    plan created them again, empty); then files 2..4 again.  The rerun must build the typed
    tables from all of ``row_changes`` (file 1 included), not only from its own files: the
    same tables as the one-run lake."""
    settings = _new_lake(tmp_path_factory, "typed-lake-c", "typed_c")
    files = world["files"]
    _load(spark, settings, files[:1], [])
    for name in _typed_tables(spark, settings):
        spark.sql(f"DROP TABLE {settings.table(name)}")
    assert _typed_tables(spark, settings) == {}

    _killed_before_typed_fill(spark, settings, files[1:])
    assert all(not rows for rows in _typed_tables(spark, settings).values())  # created, empty
    _load(spark, settings, files[1:], [])
    got = _typed_tables(spark, settings)
    # (the tables of the files 2..4: a table only file 1 has is not created again)
    assert "mirror__wl__evo" in got and "changelog__wl__evo" in got
    assert got == {name: lake["tables"][name] for name in got}
    for table in MIRRORED:
        if f"mirror__wl__{table}" in got:
            _mirror_vs_server(spark, settings, world, table)


# ``binlake load`` in a process group of its own, SIGKILLed whole (driver, JVM, Python
# workers) by the driver when it reaches ``module.function``
_KILLED_AT = """
import importlib, os, signal, sys
module, name = sys.argv[1].rsplit(".", 1)
def die(*a, **k):
    os.killpg(0, signal.SIGKILL)
setattr(importlib.import_module(module), name, die)
from binlake.cli import main
sys.exit(main(["load", "--master", "local[2]", *sys.argv[2:]]))
"""


def _cli_load(settings: Any, files: list[str], kill_at: str | None = None
              ) -> subprocess.CompletedProcess[str]:
    """``binlake load FILES`` into ``settings``' lake in a process of its own; with
    ``kill_at``, SIGKILLed at that function (see _KILLED_AT)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BINLAKE_")}
    env.update(BINLAKE_HOME=str(settings.home), BINLAKE_CATALOG_NAME=settings.catalog_name)
    args = ([sys.executable, "-c", _KILLED_AT, kill_at] if kill_at else
            [sys.executable, "-m", "binlake.cli", "load", "--master", "local[2]"])
    return subprocess.run([*args, *files], env=env, capture_output=True, text=True,
                          timeout=600, check=False, start_new_session=True)


def _fresh_typed_tables(spark: Any, settings: Any) -> dict[str, list[tuple[Any, ...]]]:
    """:func:`_typed_tables` after another process wrote the lake (cached tables dropped)."""
    from binlake.lake.commit import refresh_table

    for r in spark.sql(f"SHOW TABLES IN {settings.catalog_name}.{settings.namespace}"
                       ).collect():
        refresh_table(spark, settings.table(r.tableName))
    return _typed_tables(spark, settings)


def _killed_and_rerun(spark: Any, world: dict[str, Any],
                      tmp_path_factory: pytest.TempPathFactory, name: str, point: str,
                      where_it_died: Callable[[Any, dict[str, Any]], None],
                      want: dict[str, list[tuple[Any, ...]]]) -> None:
    """A new lake takes file 1; the ``binlake load`` of file 2 is SIGKILLed at ``point``
    (``where_it_died(settings, typed tables before)`` checks what it left); file 2 loaded
    again must give the typed tables ``want``."""
    files = world["files"]
    settings = _new_lake(tmp_path_factory, f"typed-lake-{name}", f"typed_{name.replace('-', '_')}")
    _load(spark, settings, files[:1], [])
    before = _fresh_typed_tables(spark, settings)
    died = _cli_load(settings, files[1:2], kill_at=point)
    assert died.returncode == -9, (point, died.returncode, died.stderr[-2000:])
    where_it_died(settings, before)
    again = _cli_load(settings, files[1:2])
    assert again.returncode == 0, (point, again.stderr[-2000:])
    assert _fresh_typed_tables(spark, settings) == want, point


@pytest.fixture(scope="module")
def two_files(spark: Any, world: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
              ) -> tuple[Any, dict[str, list[tuple[Any, ...]]]]:
    """A lake that took file 1, then file 2, cleanly; its typed tables."""
    files = world["files"]
    ref = _new_lake(tmp_path_factory, "typed-lake-two-files", "typed_2f")
    _load(spark, ref, files[:1], [])
    _load(spark, ref, files[1:2], [])
    return ref, _typed_tables(spark, ref)


@pytest.mark.integration
@pytest.mark.spark
def test_nopk_mirror_applied_once_after_a_load_killed_around_its_write(
        spark: Any, world: dict[str, Any], two_files: tuple[Any, Any],
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """File 2 deletes, updates and inserts rows of ``nopk`` (no primary key: its mirror
    counts copies per value).  The ``binlake load`` of file 2 is SIGKILLed (1) as it starts
    the mirror's write; (2) right after the write committed, before the watermark moved past
    it.  File 2 loaded again must apply the changes once: (2) not remove and add the copies
    a second time.  The same typed tables as the clean lake's."""
    _ref, want = two_files
    mirror_name = f"mirror__{DB}__nopk"
    for n, point in enumerate(["binlake.lake.nopk._apply", "binlake.lake.nopk._set_watermark"]):
        def where_it_died(settings: Any, before: dict[str, Any], n: int = n,
                          point: str = point) -> None:
            # the mirror as file 1 left it; (2) file 2's copies written
            left = _fresh_typed_tables(spark, settings)[mirror_name]
            assert (left == before[mirror_name]) == (n == 0), (point, left)
            assert (left == want[mirror_name]) == (n == 1), (point, left)

        _killed_and_rerun(spark, world, tmp_path_factory, f"nopk-kill{n}", point,
                          where_it_died, want)


@pytest.mark.integration
@pytest.mark.spark
def test_alter_replayed_once_after_a_load_killed_around_the_replay(
        spark: Any, world: dict[str, Any], two_files: tuple[Any, Any],
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """File 2 ALTERs ``evo`` (b retyped to a new column, c added, a and d widened, a column
    dropped) and then changes some of its rows; the others keep file 1's values, which the
    load rewrites after the typed step (alters.apply_alters).  Lakes take file 1, then file
    2: one cleanly; in the others, the ``binlake load`` of file 2 is SIGKILLed (1) right
    after the typed step: the mirrors' rows and watermarks committed (past the ALTER), the
    ALTER not replayed; (2) right after the replay's UPDATE committed, before its marker.
    File 2 is loaded again: (1) must still replay the ALTER, (2) must not replay it a second
    time (that would move the NULLs the first replay left): the same typed tables as the
    clean lake."""
    ref, want = two_files
    # the premise: a row of file 1 that file 2 does not change holds the retyped b in b__v2
    old_rows = spark.sql(f"SELECT id, `b__v2`, b, gone FROM {ref.table('mirror__wl__evo')} "
                         "WHERE id = 3").collect()
    assert [tuple(r) for r in old_rows] == [(3, 3, None, None)], old_rows

    points = ["binlake.lake.land.apply_alters", "binlake.lake.alters._mark_replayed"]
    for n, point in enumerate(points):
        def where_it_died(settings: Any, _before: dict[str, Any], n: int = n,
                          point: str = point) -> None:
            # the watermark past the ALTER; (2) the replay's UPDATE committed
            from binlake.lake.commit import refresh_table

            mirror = settings.table("mirror__wl__evo")
            refresh_table(spark, mirror)
            left = spark.sql(f"SELECT `b__v2`, b FROM {mirror} WHERE id = 3").collect()
            assert [tuple(r) for r in left] == [[(None, "3")], [(3, None)]][n], (point, left)

        _killed_and_rerun(spark, world, tmp_path_factory, f"alter-kill{n}", point,
                          where_it_died, want)


@pytest.mark.integration
@pytest.mark.spark
def test_maintenance_between_a_killed_load_and_its_rerun_keeps_the_fences(
        spark: Any, world: dict[str, Any], two_files: tuple[Any, Any],
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """The two non-idempotent mirror writes of the tests above (``nopk``'s copy counts, the
    replay of ``evo``'s ALTER), each killed right after its write committed, before the
    commit that records it; then ``binlake maintain`` with no snapshot retained runs before
    the rerun.  The rerun finds the write committed by the killed load's snapshot in the
    mirror's history: maintenance must leave that mirror alone (a compaction then an expiry
    would take the snapshot away, and the rerun would apply the write a second time) and
    say why, while it compacts the other tables.  The same typed tables as the clean lake."""
    from binlake.lake.maintain import maintain

    _ref, want = two_files
    cases = [("binlake.lake.nopk._set_watermark", f"mirror__{DB}__nopk", "nopk-applying"),
             ("binlake.lake.alters._mark_replayed", "mirror__wl__evo", "replaying")]
    for n, (point, mirror, fence) in enumerate(cases):
        def maintained(settings: Any, _before: dict[str, Any], n: int = n,
                       mirror: str = mirror, fence: str = fence) -> None:
            done = {u.table.rsplit(".", 1)[1]: u for u in maintain(
                spark, settings, run_id=f"mt-fence{n}", retain_days=0)}
            assert not [u for u in done.values() if u.error], done
            left = done[mirror]
            assert left.skipped and f"binlake.{fence}." in left.skipped, left
            assert left.snapshots[0] == left.snapshots[1] >= 2, left
            rc = done["row_changes"]  # (the rest of the lake was maintained)
            assert not rc.skipped and rc.snapshots[1] < rc.snapshots[0], rc

        _killed_and_rerun(spark, world, tmp_path_factory, f"fence-kill{n}", point,
                          maintained, want)


@pytest.mark.integration
@pytest.mark.spark
def test_deltas_over_the_fold_bound_are_folded_by_spark(
        spark: Any, lake: dict[str, Any], world: dict[str, Any],
        tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fourth lake, with the executor fold's bounds set low: files 1..2 with a row bound
    of 1 (a delta of more than one row is too big), file 3 with the driver's fold bound 0
    (folded by the executor), file 4 with a byte bound of 1 (every staged delta is too
    big).  Those deltas are folded by Spark instead (a first load's append, then MERGEs
    into existing mirrors): the same typed tables as the one-run lake.  (One part at most:
    a delta over the bounds is not cut into parts, test_deltas_over_the_fold_bound_in_parts.)"""
    from binlake.lake import fold

    settings = _new_lake(tmp_path_factory, "typed-lake-d", "typed_d")
    files = world["files"]
    reports: list[dict[str, Any]] = []
    monkeypatch.setattr(fold, "FOLD_MAX_PARTS", 1)
    monkeypatch.setattr(fold, "FOLD_MAX_ROWS", 1)
    _load(spark, settings, files[:2], reports)
    monkeypatch.setattr(fold, "FOLD_MAX_ROWS", 4_000_000)
    # file 3: no delta is small enough for the driver: the executor folds them (MERGEd)
    monkeypatch.setattr(typed_staged, "DRIVER_FOLD_ROWS", 0)
    _load(spark, settings, files[2:3], reports)
    monkeypatch.setattr(fold, "FOLD_MAX_BYTES", 1)
    _load(spark, settings, files[3:], reports)
    first, third, second = ({k: (t["mirror_rows"], t.get("mirror_fold"))
                             for k, t in r["tables"].items() if t["mirror_rows"]}
                            for r in reports)
    assert first and all(fold == ("driver" if n == 1 else "spark")
                         for n, fold in first.values()), first
    assert any(n > 1 for n, _ in first.values()), first
    assert third and {fold for k, (_, fold) in third.items()
                      if k != f"{DB}.images"} == {"executor"}, third
    assert second and {fold for _, fold in second.values()} == {"spark"}, second
    assert _typed_tables(spark, settings) == lake["tables"]
    for table in MIRRORED:
        _mirror_vs_server(spark, settings, world, table)


@pytest.mark.integration
@pytest.mark.spark
def test_deltas_over_the_fold_bound_in_parts(
        spark: Any, lake: dict[str, Any], world: dict[str, Any],
        tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fifth lake, with a row bound of 1 and up to 64 parts: every delta of more than one
    row (the tables' keys are INT) is folded by several executor tasks, each keeping the
    keys of its part (fold.fold_parts): a first load's appended parts (files 1..2), then
    MERGEs of the parts' folded files into existing mirrors (files 3..4; the driver's fold
    bound 0).  File 2 moves primary keys (across parts: 2 -> 20 -> 21).  The same typed
    tables as the one-run lake."""
    from binlake.lake import fold

    settings = _new_lake(tmp_path_factory, "typed-lake-e", "typed_e")
    files = world["files"]
    reports: list[dict[str, Any]] = []
    monkeypatch.setattr(fold, "FOLD_MAX_ROWS", 1)
    monkeypatch.setattr(fold, "FOLD_MAX_PARTS", 64)
    monkeypatch.setattr(typed_staged, "DRIVER_FOLD_ROWS", 0)
    _load(spark, settings, files[:2], reports)
    _load(spark, settings, files[2:], reports)
    for rep in reports:
        folds = {k: (t["mirror_rows"], t.get("mirror_fold"))
                 for k, t in rep["tables"].items() if t["mirror_rows"] and k != f"{DB}.images"}
        assert folds, rep
        assert any(n > 1 for n, _ in folds.values()), folds
        for n, fold_ in folds.values():  # (the parts: a row each, at least one per core)
            assert fold_ == "executor" if n == 1 else (
                fold_.startswith("executor:") and int(fold_.split(":")[1]) >= max(n, 2)
            ), folds
    assert _typed_tables(spark, settings) == lake["tables"]
    for table in MIRRORED:
        _mirror_vs_server(spark, settings, world, table)


@pytest.mark.integration
@pytest.mark.spark
def test_text_keyed_deltas_folded_in_parts(
        spark: Any, mariadb_template: Path, tmp_path_factory: pytest.TempPathFactory,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A table keyed by text (VARCHAR, utf8mb4: non-ASCII and empty keys among them) on a
    real MariaDB server, with a row bound of 1: each load's delta is folded by several
    executor tasks, each keeping the keys whose byte sum falls in its part (fold.part_of):
    a first load's appended parts, then MERGEs into the mirror, with UPDATEs that move keys
    (across parts) and DELETEs.  The mirror holds the server's rows."""
    def night1(cur: Any) -> None:
        cur.execute("CREATE DATABASE tk")
        cur.execute("CREATE TABLE tk.codes (code VARCHAR(40) NOT NULL PRIMARY KEY, v INT) "
                    "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4")
        for n in range(60):
            cur.execute("INSERT INTO tk.codes VALUES (%s, %s)", (f"c-{n:03d}", n))
        cur.execute("INSERT INTO tk.codes VALUES ('\u00e9t\u00e9', -1), ('', -2)")

    def night2(cur: Any) -> None:
        for n in range(0, 60, 3):
            cur.execute("UPDATE tk.codes SET v = v + 100 WHERE code = %s", (f"c-{n:03d}",))
        for n in range(1, 60, 7):
            cur.execute("UPDATE tk.codes SET code = %s WHERE code = %s",
                        (f"moved-{n}", f"c-{n:03d}"))
        for n in range(2, 60, 11):
            cur.execute("DELETE FROM tk.codes WHERE code = %s", (f"c-{n:03d}",))
        cur.execute("UPDATE tk.codes SET code = '\u00c9T\u00c9-2', v = 7 "
                    "WHERE code = '\u00e9t\u00e9'")

    files, rows = _two_binlogs(tmp_path_factory.mktemp("textkey-srv"), mariadb_template,
                               night1, night2, "SELECT code, v FROM tk.codes")
    want = sorted(rows)
    assert len(files) == 2 and len(want) > 50
    got = _folded_in_parts(spark, tmp_path_factory, monkeypatch, files, "typed-lake-text",
                           "typed_t", "tk", "codes", "code, v")
    assert sorted(got) == want


def _two_binlogs(base: Path, template: Path, night1: Callable[[Any], None],
                 night2: Callable[[Any], None], select: str
                 ) -> tuple[list[str], list[tuple[Any, ...]]]:
    """A real MariaDB server under ``base`` runs ``night1(cursor)``, rotates, runs
    ``night2(cursor)`` and rotates: its two closed binlogs (copied) and the rows of
    ``select`` at the end."""
    srv = start_server(base, template)
    try:
        with srv.connect() as conn, conn.cursor() as cur:
            night1(cur)
            srv.flush_binary_logs()
            night2(cur)
            srv.flush_binary_logs()
            cur.execute(select)
            rows = list(cur.fetchall())
        files = [str(p) for p in copy_files(srv.closed_binlog_files(), base / "binlogs")]
    finally:
        srv.stop(timeout=30)
    return files, rows


def _folded_in_parts(spark: Any, tmp_path_factory: pytest.TempPathFactory,
                     monkeypatch: pytest.MonkeyPatch, files: list[str], home: str,
                     catalog: str, db: str, tbl: str, columns: str) -> list[tuple[Any, ...]]:
    """Load ``files`` one at a time into a new lake with a fold row bound of 1, so that each
    delta of ``db.tbl`` is folded by several executor tasks (never on the driver); checks
    that both loads folded it in at least two parts, not by Spark's window.  Returns the
    mirror's rows (``columns``)."""
    from binlake.lake import fold

    monkeypatch.setattr(fold, "FOLD_MAX_ROWS", 1)
    monkeypatch.setattr(fold, "FOLD_MAX_PARTS", 64)
    monkeypatch.setattr(typed_staged, "DRIVER_FOLD_ROWS", 0)
    settings = _new_lake(tmp_path_factory, home, catalog)
    reports: list[dict[str, Any]] = []
    _load(spark, settings, files[:1], reports)
    _load(spark, settings, files[1:], reports)
    assert len(reports) == 2
    for rep in reports:  # (folded in parts, not by Spark's window)
        fold_ = rep["tables"][f"{db}.{tbl}"].get("mirror_fold") or ""
        assert fold_.startswith("executor:") and int(fold_.split(":")[1]) >= 2, rep
    mirror = settings.table(table_names(db, tbl)[1])
    return [tuple(r) for r in spark.sql(f"SELECT {columns} FROM {mirror}").collect()]


@pytest.mark.integration
@pytest.mark.spark
def test_unsigned_bigint_keyed_deltas_folded_in_parts(
        spark: Any, mariadb_template: Path, tmp_path_factory: pytest.TempPathFactory,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A table keyed by BIGINT UNSIGNED (a DECIMAL(20,0) in the typed tables: keys up to
    2**64 - 1) on a real MariaDB server, with a row bound of 1: each load's delta is folded
    by several executor tasks, each keeping the keys whose decimal text falls in its part
    (fold.part_of), not by Spark's window; UPDATEs move keys (across parts), DELETEs.  The
    mirror holds the server's rows."""
    top = 2**64 - 1

    def night1(cur: Any) -> None:
        cur.execute("CREATE DATABASE uk")
        cur.execute("CREATE TABLE uk.nums (id BIGINT UNSIGNED NOT NULL PRIMARY KEY, v INT) "
                    "ENGINE=InnoDB")
        for n in range(25):  # (50 rows: within FOLD_MAX_PARTS parts of a row)
            cur.execute("INSERT INTO uk.nums VALUES (%s, %s), (%s, %s)", (n, n, top - n, -n))

    def night2(cur: Any) -> None:
        for n in range(0, 25, 3):
            cur.execute("UPDATE uk.nums SET v = v + 100 WHERE id = %s", (top - n,))
        for n in range(1, 25, 7):
            cur.execute("UPDATE uk.nums SET id = %s WHERE id = %s", (2**63 + n, n))
        for n in range(2, 25, 11):
            cur.execute("DELETE FROM uk.nums WHERE id = %s", (top - n,))
        cur.execute("UPDATE uk.nums SET id = 5000, v = 7 WHERE id = %s", (top - 1,))

    files, rows = _two_binlogs(tmp_path_factory.mktemp("ukey-srv"), mariadb_template,
                               night1, night2, "SELECT id, v FROM uk.nums")
    want = sorted((int(i), v) for i, v in rows)
    assert len(files) == 2 and len(want) > 40 and max(want)[0] == top
    got = _folded_in_parts(spark, tmp_path_factory, monkeypatch, files, "typed-lake-ukey",
                           "typed_u", "uk", "nums", "id, v")
    assert sorted((int(i), v) for i, v in got) == want


@pytest.mark.integration
@pytest.mark.spark
def test_small_flushes_same_tables(spark: Any, lake: dict[str, Any], world: dict[str, Any],
                                   tmp_path_factory: pytest.TempPathFactory) -> None:
    """Decode tasks that write their records after every event that gave some
    (``flush_bytes`` 1): many data files per range, and several typed reports per table and range (counts summed,
    order keys min/max, staged deltas together): the same typed tables as the one-write
    lake."""
    from binlake.config import load_settings
    from binlake.lake.spark import build_session

    settings = load_settings(env={"BINLAKE_HOME": str(tmp_path_factory.mktemp("typed-lake-f")),
                                  "BINLAKE_CATALOG_NAME": "typed_f",
                                  "BINLAKE_FLUSH_BYTES": "1"})
    assert settings.flush_bytes == 1
    build_session(settings, master="local[2]")
    reports: list[dict[str, Any]] = []
    _load(spark, settings, world["files"], reports)
    assert _typed_tables(spark, settings) == lake["tables"]
    for table in MIRRORED:
        _mirror_vs_server(spark, settings, world, table)

    def data_files(s: Any) -> int:
        return sum(spark.sql(f"SELECT count(*) n FROM {s.table(t)}.files").collect()[0]["n"]
                   for t in lake["tables"] if t.startswith("changelog__"))

    assert data_files(settings) > 2 * data_files(lake["settings"])

