"""The reference decoder (mariadb-binlog + tests/reference.py) proven against a live server.

Every expected value here comes from the test's own SQL or from the server's ``SELECT``, never
from mariadb-binlog, so a passing run shows the parser reads mariadb-binlog's output correctly.
"""

from __future__ import annotations

import os
import signal
import struct
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from binlake_dev.mariadb import MariaDBServer, ServerError, free_port

from .reference import (
    ColumnDef,
    RefRow,
    encode_charset,
    load_schema,
    mariadb_binlog_events,
    mariadb_binlog_rows,
    render_quoted,
    table_definitions,
)
from .workloads import DB, FULL_IMAGE_TABLES, STATEMENT_LOGGED_IDS, run_all_types

pytestmark = pytest.mark.integration

ROWS_EVENT_TYPES = {23, 24, 25, 30, 31, 32, 166, 167, 168, 169, 170, 171}


def _event_at(path: Path, pos: int) -> tuple[int, int]:
    """(type code, event size) of the event at ``pos`` -- read straight from the file."""
    with open(path, "rb") as fh:
        fh.seek(pos)
        head = fh.read(19)
    return head[4], struct.unpack("<I", head[9:13])[0]


def _rows(server: MariaDBServer, schema: Any = None) -> list[RefRow]:
    server.flush_binary_logs()
    out: list[RefRow] = []
    for f in server.closed_binlog_files():
        out += mariadb_binlog_rows(f, schema=schema)
    return out


# --------------------------------------------------------------------------------------------
# devserver


def test_devserver_lifecycle(tmp_path: Path, mariadb_template: Path) -> None:
    port = free_port()
    srv = MariaDBServer(tmp_path / "srv", port=port, server_id=7)
    srv.init(template=mariadb_template)
    with srv:
        assert srv.running
        pid = srv.pid
        assert pid is not None
        assert srv.execute("SELECT @@server_id, @@binlog_format, @@bind_address, @@time_zone") == [
            (7, "ROW", "127.0.0.1", "+00:00")
        ]
        # a second server on the same port is refused before it starts
        with pytest.raises(ServerError, match="in use"):
            MariaDBServer(tmp_path / "other", port=port).start()
        first = srv.binlog_files()
        assert len(first) == 1 and first[0].parent == tmp_path / "srv" / "binlog"
        new = srv.flush_binary_logs()
        assert srv.binlog_files() == [*first, new]
        assert srv.closed_binlog_files() == first
        assert srv.binlog_index_path.exists()
        # FLUSH BINARY LOGS works while another connection holds a prepared XA transaction
        srv.execute(["CREATE DATABASE x", "CREATE TABLE x.t (a INT) ENGINE=InnoDB"])
        xa = srv.connect()
        with xa.cursor() as cur:
            for sql in (
                "XA START 'a'",
                "INSERT INTO x.t VALUES (1)",
                "XA END 'a'",
                "XA PREPARE 'a'",
            ):
                cur.execute(sql)
        srv.flush_binary_logs()
        with xa.cursor() as cur:
            cur.execute("XA COMMIT 'a'")
        xa.close()
    assert not srv.running
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not srv.socket_path.exists()


def test_session_server_fixture(mariadb: MariaDBServer) -> None:
    assert mariadb.running
    assert mariadb.execute("SELECT @@log_bin, @@binlog_row_metadata") == [(1, "FULL")]


def test_devserver_start_failure_reports_error_log(tmp_path: Path, mariadb_template: Path) -> None:
    srv = MariaDBServer(tmp_path / "bad", port=free_port(), options={"no-such-option": "1"})
    srv.init(template=mariadb_template)
    with pytest.raises(ServerError, match="no-such-option"):
        srv.start()
    assert not srv.running


def test_devserver_stop_escalates_to_sigkill(tmp_path: Path, mariadb_template: Path) -> None:
    srv = MariaDBServer(tmp_path / "stuck", port=free_port())
    srv.init(template=mariadb_template)
    srv.start()
    pid = srv.pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # a stopped process ignores SIGTERM until continued
    srv.stop(timeout=1)
    assert not srv.running
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_devserver_option_override(mariadb_factory: Callable[..., MariaDBServer]) -> None:
    srv = mariadb_factory(options=["--binlog-row-image=MINIMAL", "--log-bin-compress"])
    assert srv.execute("SELECT @@binlog_row_image, @@log_bin_compress") == [("MINIMAL", 1)]
    cmd = srv.command()
    assert "--binlog-row-image=FULL" not in cmd and "--binlog-row-image=MINIMAL" in cmd


# --------------------------------------------------------------------------------------------
# the parser on a small, fully known workload

SMALL_DDL = (
    "CREATE TABLE p.t (id INT NOT NULL PRIMARY KEY, y YEAR, a INT, u INT UNSIGNED, "
    "tu TINYINT UNSIGNED, d DATE, dt DATETIME(3), ts TIMESTAMP(6) NULL, tm TIME(1), "
    "v VARCHAR(20) CHARACTER SET latin1, w VARCHAR(20) CHARACTER SET utf16, b VARBINARY(8), "
    "bn BINARY(4), e ENUM('x','y'), s SET('p','q','r'), bt BIT(10), dc DECIMAL(7,3), "
    "f FLOAT, db DOUBLE) DEFAULT CHARSET=utf8mb4"
)
INS1 = (
    "INSERT INTO p.t VALUES (1, 1999, -1, 4294967295, 200, '2020-02-29', "
    "'2020-02-29 23:59:59.125', '2001-09-09 01:46:40.5', '-01:02:03.4', 'caf\u00e9 \u20ac', "
    "'\u00e9\U0001f600', X'00010a27', X'41000000', 'y', 'p,r', b'1000000001', '-12.500', "
    "0.5, -1e-300)"
)
INS2 = "INSERT INTO p.t (id, y) VALUES (2, 0)"
UPD = "UPDATE p.t SET a = 7, v = 'x\\\\y''z', e = 'x', s = '' WHERE id = 1"
DEL = "DELETE FROM p.t WHERE id = 2"

ROW1 = {
    1: 1, 2: 1999, 3: -1, 4: 4294967295, 5: 200, 6: "2020-02-29", 7: "2020-02-29 23:59:59.125",
    8: "2001-09-09 01:46:40.500000", 9: "-01:02:03.4", 10: "caf\u00e9 \u20ac",
    11: "\u00e9\U0001f600", 12: {"hex": "00010a27"}, 13: {"hex": "41000000"}, 14: "y",
    15: "p,r", 16: 0b1000000001, 17: "-12.500", 18: 0.5, 19: -1e-300,
}  # fmt: skip
ROW2 = {1: 2, 2: 0, **{c: None for c in range(3, 20)}}
ROW1_UPDATED = {**ROW1, 3: 7, 10: "x\\y'z", 14: "x", 15: ""}


def test_parser_small_workload(fresh_mariadb: MariaDBServer) -> None:
    srv = fresh_mariadb
    srv.execute(["CREATE DATABASE p", SMALL_DDL, INS1, INS2, UPD, DEL])
    with srv.connect() as conn:
        schema = load_schema(conn, ["p"])
    rows = _rows(srv, schema)
    assert [(r.op, r.db, r.table) for r in rows] == [
        ("insert", "p", "t"), ("insert", "p", "t"), ("update", "p", "t"), ("delete", "p", "t"),
    ]  # fmt: skip
    ins1, ins2, upd, dele = rows
    assert ins1.after == ROW1 and ins1.before is None
    assert ins2.after == ROW2
    assert upd.before == ROW1 and upd.after == ROW1_UPDATED
    assert dele.before == ROW2 and dele.after is None
    # both readings of integers are kept; ENUM/SET codes too
    assert ins1.alt_after[3] == 4294967295 and ins1.alt_after[4] == -1 and ins1.alt_after[5] == -56
    assert ins1.alt_after[14] == 2 and ins1.alt_after[15] == 0b101
    assert ins1.raw_after is not None and ins1.raw_after[6] == b"'2020:02:29'"
    assert ins1.raw_after[8] == b"1000000000.500000"
    assert ins1.lossy == {18: "FLOAT printed with 6 significant digits"}
    # the statement and the column names
    assert [r.statement for r in rows] == [INS1, INS2, UPD, DEL]
    assert ins1.col_names[2] == "y" and ins1.named()["dc"] == "-12.500"
    # positions are those of real rows events
    path = srv.closed_binlog_files()[-1]
    for r, code in zip(rows, (30, 30, 31, 32)):
        etype, size = _event_at(path, r.pos)
        assert etype in (code, code - 7), (r, etype)  # v2 or (MariaDB) v1 rows event
        assert r.pos + size == r.end_log_pos
        assert r.row_index == 0
    # the server agrees on the final state
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT COUNT(*), MIN(v) FROM p.t")
        assert cur.fetchone() == (1, "x\\y'z")


def test_parser_metadata_matches_schema_and_fixes_year_signedness(
    fresh_mariadb: MariaDBServer,
) -> None:
    """Without a schema the --print-table-metadata block is used.  mariadb-binlog 10.11 shifts
    SIGNEDNESS bits after a YEAR column; the parser's fix must give the schema's answer."""
    srv = fresh_mariadb
    srv.execute(["CREATE DATABASE p", SMALL_DDL, INS1])
    with srv.connect() as conn:
        schema = load_schema(conn, ["p"])
    rows_meta = _rows(srv)  # no schema
    path = srv.closed_binlog_files()[-1]
    with_schema = mariadb_binlog_rows(path, schema=schema)
    assert rows_meta[0].after == with_schema[0].after == ROW1
    defs = table_definitions(path)[("p", "t")]
    truth = {c.name: c.unsigned for c in schema[("p", "t")]}
    # the bit of the last numeric column is never printed (it went to the YEAR column)
    assert [c.name for c in defs if c.unsigned is None] == ["db"]
    assert {
        c.name: c.unsigned for c in defs if c.unsigned is not None and c.sql_type != "YEAR"
    } == {k: v for k, v in truth.items() if k not in ("db", "y")}
    # and without the fix the misreading is visible: `a` would be unsigned, `u` signed
    unfixed = mariadb_binlog_rows(path, mariadb_signedness_fix=False)[0]
    assert unfixed.after is not None
    assert unfixed.after[3] == 4294967295 and unfixed.after[4] == -1


def test_parser_statement_spanning_many_rows_events(fresh_mariadb: MariaDBServer) -> None:
    srv = fresh_mariadb
    srv.execute([
        "CREATE DATABASE p",
        "CREATE TABLE p.m (id INT PRIMARY KEY, v VARCHAR(50))",
        "INSERT INTO p.m SELECT seq, CONCAT('value number ', seq) FROM p.seq_1_to_2000",
        "UPDATE p.m SET v = 'x' WHERE id > 10",
    ])  # fmt: skip
    rows = _rows(srv)
    path = srv.closed_binlog_files()[-1]
    inserts = [r for r in rows if r.op == "insert"]
    updates = [r for r in rows if r.op == "update"]
    assert [r.image[1] for r in inserts] == list(range(1, 2001))
    assert [r.image[1] for r in updates] == list(range(11, 2001))
    per_event = Counter(r.pos for r in inserts)
    assert len(per_event) > 3  # 8 KiB rows events
    events = {e.pos: e for e in mariadb_binlog_events(path) if e.pos is not None}
    for pos, n in per_event.items():
        etype, size = _event_at(path, pos)
        assert etype in ROWS_EVENT_TYPES and events[pos].kind == "Write_rows"
        rows_here = [r for r in inserts if r.pos == pos]
        assert [r.row_index for r in rows_here] == list(range(n))
        assert all(r.end_log_pos == pos + size for r in rows_here)
    assert sorted(per_event) == [p for p in sorted(events) if events[p].kind == "Write_rows"]


# --------------------------------------------------------------------------------------------
# the ALL_TYPES workload


def _same(ref: Any, srv: Any, raw: bytes | None, cdef: ColumnDef) -> bool:
    if ref == srv:
        return True
    if raw is None or srv is None or not isinstance(srv, str) or not cdef.charset:
        return False
    # the printed text is ambiguous (literal "\x0a" vs an escaped newline): compare forwards
    return render_quoted(encode_charset(srv, cdef.charset)) == raw


@pytest.mark.slow
def test_all_types_workload_parses_completely(fresh_mariadb: MariaDBServer) -> None:
    srv = fresh_mariadb
    result = run_all_types(srv)
    rows = _rows(srv, result["schema"])

    # 1. every changed row is parsed, per table and operation
    parsed: dict[str, dict[str, int]] = {}
    for r in rows:
        c = parsed.setdefault(f"{r.db}.{r.table}", {"insert": 0, "update": 0, "delete": 0})
        c[r.op] += 1
    assert parsed == result["changes"]
    assert sum(sum(c.values()) for c in parsed.values()) == len(rows)

    # 2. replaying the rows gives the server's final state
    ambiguous: list[tuple[str, int, str]] = []
    for table in (*FULL_IMAGE_TABLES, "images"):
        name = f"{DB}.{table}"
        cols = result["columns"][name]
        state: dict[Any, dict[str, tuple[Any, bytes | None]]] = {}
        for r in rows:
            if f"{r.db}.{r.table}" != name:
                continue
            assert r.pos > 0
            if r.op == "insert":
                assert r.after is not None and r.raw_after is not None
                state[r.after[1]] = {c.name or "": (None, None) for c in cols}
            key = (r.before or r.after or {})[1]
            if r.before is not None and table in FULL_IMAGE_TABLES:
                # a full before image is the row as the replay has it so far
                assert r.raw_before is not None
                for n, v in r.before.items():
                    have, have_raw = state[key][cols[n - 1].name or ""]
                    assert (v, r.raw_before[n]) == (have, have_raw), (name, key, n)
            if r.op == "delete":
                del state[key]
                continue
            assert r.after is not None and r.raw_after is not None
            for n, v in r.after.items():
                state[key][cols[n - 1].name or ""] = (v, r.raw_after[n])
            if r.op == "update" and r.after.get(1, key) != key:
                state[r.after[1]] = state.pop(key)
        skip = STATEMENT_LOGGED_IDS.get(table, set())
        expected = {row["id"]: row for row in result["contract"][name] if row["id"] not in skip}
        assert sorted(state) == sorted(expected), name
        for key, row in expected.items():
            for c in cols:
                got, raw = state[key][c.name or ""]
                if got != row[c.name]:
                    assert _same(got, row[c.name], raw, c), (name, key, c.name, got, row[c.name])
                    ambiguous.append((name, key, c.name or ""))
    # the one value whose text is genuinely ambiguous: literal \x0a in wl.all_types id 6
    assert ambiguous == [("wl.all_types", 6, "v_utf8")]

    # 3. the event kinds the workload is meant to produce are there
    kinds: Counter[str] = Counter()
    for f in srv.closed_binlog_files():
        kinds.update(e.kind for e in mariadb_binlog_events(f))
    for kind in (
        "Write_compressed_rows", "Update_compressed_rows", "Delete_compressed_rows",
        "Query_compressed", "Intvar", "Rand", "User_var", "Write_rows", "Update_rows",
        "Delete_rows", "Annotate_rows", "Table_map",
    ):  # fmt: skip
        assert kinds[kind] > 0, kind
    assert kinds["Intvar"] >= 3 and kinds["User_var"] >= 4
    # a statement spread over several compressed rows events
    comp = Counter(r.pos for r in rows if r.event_type == "Write_compressed_rows")
    assert len(comp) >= 2

    # 4. where mariadb-binlog's output is lossy, the parser says so
    f_rows = [r for r in rows if r.table == "all_types" and r.op == "insert" and r.image.get(16)]
    assert all("6 significant digits" in r.lossy.get(16, "") for r in f_rows)
    wide = [r for r in rows if r.table == "wide"]
    assert len(wide[0].after or {}) == 260
