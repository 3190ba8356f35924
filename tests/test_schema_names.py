"""Naming the columns of MINIMAL / NO_LOG binlogs from a schema history (``--schema F`` of
``binlake decode`` and ``binlake transactions``; lib/binlake/schema/names.py and jsonl.py).

The same workload runs on three private MariaDB servers, with ``binlog_row_metadata`` FULL,
MINIMAL and NO_LOG.  ``binlake schema`` on a server's own binlogs gives F; decoding the
MINIMAL / NO_LOG binlogs with ``--schema F`` must give exactly the row images (names and
values) that the FULL binlogs give without it, and the FULL images themselves are checked
against what the server's SELECT returns.  A DDL run with ``sql_log_bin=0`` makes the
following rows keep ``@n`` names and gives a ``table_map_mismatch`` finding on stderr."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from binlake.cli import main
from binlake.schema import SchemaFileError, SchemaHistory, apply_ddl, load_history

from .conftest import HAVE_MARIADB

MODES = ("FULL", "MINIMAL", "NO_LOG")

# db `n`: what every mode must name exactly as FULL does.  db `hidden`: a DDL the binlog
# does not hold.  dbs `gaps*`: text columns whose DDL names no character set (table and
# database defaults, a bare COLLATE; NO_LOG logs none: the history must give it), and
# FLOAT / DOUBLE / DECIMAL UNSIGNED [ZEROFILL].
WORKLOAD = [
    "CREATE DATABASE n", "USE n",
    "CREATE TABLE t (id INT NOT NULL PRIMARY KEY, u INT UNSIGNED, bu BIGINT UNSIGNED,"
    " tu TINYINT UNSIGNED NOT NULL DEFAULT 0, du DECIMAL(12,3) UNSIGNED,"
    " e ENUM('red','green','blue'), s SET('a','b','c'), l VARCHAR(20) CHARACTER SET latin1,"
    " b BLOB, vb VARBINARY(8), dt DATETIME(6))",
    "INSERT INTO t VALUES (1, 4294967295, 18446744073709551615, 255, 999999999.999, 'blue',"
    " 'a,c', 'café ñ', x'ff00fe80', x'00ff', '2024-02-29 12:34:56.123456')",
    "INSERT INTO t VALUES (2, 0, 0, 0, 0, 'red', '', 'x', '', '', '1000-01-01 00:00:00'),"
    " (3, NULL, NULL, 7, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    "UPDATE t SET u = 4294967294, e = 'green', s = 'b', l = 'Grüße' WHERE id = 1",
    "DELETE FROM t WHERE id = 2",
    "ALTER TABLE t ADD COLUMN added SMALLINT UNSIGNED NOT NULL DEFAULT 65535 AFTER u",
    "INSERT INTO t (id, u, added, tu, l, b) VALUES (4, 123, 40000, 200, 'Ærø', x'c328')",
    "UPDATE t SET added = 1, b = x'80' WHERE id = 3",
    "FLUSH BINARY LOGS",
    "ALTER TABLE t DROP COLUMN tu",
    "INSERT INTO t (id, bu, e, s) VALUES (5, 9223372036854775808, 'blue', 'a,b,c')",
    "UPDATE t SET bu = bu - 1, du = 0.5 WHERE id = 5",
    "ALTER TABLE t CHANGE COLUMN e colour ENUM('red','green','blue')",
    "BEGIN",
    "UPDATE t SET colour = 'red', dt = '2000-01-01 00:00:00.000001' WHERE id = 1",
    "INSERT INTO t (id, colour, l) VALUES (6, 'green', 'ÿ')",
    "COMMIT",
    "ALTER TABLE t MODIFY u BIGINT UNSIGNED",
    "UPDATE t SET u = 18446744073709551615 WHERE id = 4",
    "DELETE FROM t WHERE id = 3",
    "CREATE TABLE a (x INT UNSIGNED NOT NULL, y VARCHAR(5) CHARACTER SET latin1)",
    "CREATE TABLE b (p ENUM('p','q'), q BIGINT UNSIGNED, r VARBINARY(4))",
    "INSERT INTO a VALUES (4294967295, 'é'), (1, 'a')",
    "INSERT INTO b VALUES ('q', 18446744073709551615, x'fe')",
    "FLUSH BINARY LOGS",
    "RENAME TABLE a TO tmp, b TO a, tmp TO b",
    "INSERT INTO a VALUES ('p', 1, x'ff')", "INSERT INTO b VALUES (4000000000, 'ü')",
    "UPDATE a SET p = 'q' WHERE q = 1", "DELETE FROM b WHERE x = 1",
    # the unlogged DDL
    "CREATE DATABASE hidden",
    "CREATE TABLE hidden.h (a INT UNSIGNED NOT NULL, e ENUM('x','y'))",
    "INSERT INTO hidden.h VALUES (4294967295, 'y')",
    "SET sql_log_bin = 0", "ALTER TABLE hidden.h ADD COLUMN c VARCHAR(3)",
    "SET sql_log_bin = 1",
    "INSERT INTO hidden.h VALUES (4294967294, 'x', 'zz')",
    "UPDATE hidden.h SET c = 'q'",
    # default character sets (NO_LOG logs no charset: the history must say it)
    "CREATE DATABASE gaps CHARACTER SET utf8mb4",
    "CREATE TABLE gaps.table_default (a VARCHAR(5)) DEFAULT CHARSET=latin1",
    "CREATE TABLE gaps.collation_only (a VARCHAR(5) COLLATE latin1_bin)",
    "CREATE DATABASE gaps_db CHARACTER SET latin1",
    "CREATE TABLE gaps_db.database_default (a VARCHAR(5))",
    "INSERT INTO gaps.table_default VALUES ('é')",
    "INSERT INTO gaps.collation_only VALUES ('ø')",
    "INSERT INTO gaps_db.database_default VALUES ('ñ')",
    # a new table default: for the columns added (or redefined) after it, not the others
    "CREATE TABLE gaps.altered_default (a VARCHAR(5), b VARCHAR(5))",
    "ALTER TABLE gaps.altered_default DEFAULT CHARSET=cp1251, ADD COLUMN c TEXT",
    "ALTER TABLE gaps.altered_default MODIFY b VARCHAR(6)",
    "INSERT INTO gaps.altered_default VALUES ('é', 'Жё', 'Щ')",
    # a new database default: for the tables created after it
    "ALTER DATABASE gaps_db CHARACTER SET greek",
    "CREATE TABLE gaps_db.altered_database (a VARCHAR(5), e ENUM('x','y'))",
    "INSERT INTO gaps_db.altered_database VALUES ('λ', 'y')",
    "CREATE TABLE gaps.unsigned_floats (f FLOAT UNSIGNED, d DOUBLE UNSIGNED,"
    " z DECIMAL(6,2) UNSIGNED ZEROFILL, g FLOAT(7,3) ZEROFILL UNSIGNED, t VARCHAR(3))",
    "INSERT INTO gaps.unsigned_floats VALUES (1.5, 2.25, 3.5, 4.125, 'ü')",
    # last: every row of n.t, n.a, n.b touched (FULL images of their final state)
    "BEGIN",
    "UPDATE n.t SET vb = CONCAT(IFNULL(vb, ''), x'01')",
    "UPDATE n.a SET r = CONCAT(IFNULL(r, ''), x'02')",
    "UPDATE n.b SET y = CONCAT(IFNULL(y, ''), 'ø')",
    "COMMIT",
]

# the final columns: how the server's SELECT gives them as binlake renders them
FINAL = {
    "t": [("id", "int"), ("u", "int"), ("added", "int"), ("bu", "int"), ("du", "text"),
          ("colour", "text"), ("s", "text"), ("l", "text"), ("b", "hex"), ("vb", "hex"),
          ("dt", "text")],
    "a": [("p", "text"), ("q", "int"), ("r", "hex")],
    "b": [("x", "int"), ("y", "text")],
}


def _truth(conn: Any) -> dict[str, list[dict[str, Any]]]:
    """The final rows of n.t, n.a, n.b as the server SELECTs them (text for DECIMAL,
    ENUM, SET and DATETIME; hex for binary strings), sorted."""
    out: dict[str, list[dict[str, Any]]] = {}
    with conn.cursor() as cur:
        for table, cols in FINAL.items():
            exprs = [c if k == "int" else f"CAST({c} AS CHAR)" if k == "text"
                     else f"LOWER(HEX({c}))" for c, k in cols]
            cur.execute(f"SELECT {', '.join(exprs)} FROM n.{table}")
            rows = []
            for r in cur.fetchall():
                rows.append({c: ({"hex": v} if k == "hex" and v is not None else v)
                             for (c, k), v in zip(cols, r)})
            out[table] = sorted(rows, key=_key)
    return out


def _key(d: Any) -> str:
    return json.dumps(d, sort_keys=True)


class Run:
    def __init__(self, mode: str, files: list[Path], schema: Path,
                 truth: dict[str, list[dict[str, Any]]]) -> None:
        self.mode = mode
        self.files = [str(f) for f in files]
        self.schema = str(schema)
        self.truth = truth


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, mariadb_template: Path
         ) -> Iterator[dict[str, Run]]:
    """The workload on a FULL, a MINIMAL and a NO_LOG server (stopped after it); each
    one's closed binlogs, the `binlake schema` output of them, and the final rows."""
    from .servers import start_server

    if not HAVE_MARIADB:
        pytest.skip("mariadbd / mariadb-install-db not on PATH")
    out: dict[str, Run] = {}
    for mode in MODES:
        base = tmp_path_factory.mktemp(f"names-{mode.lower()}")
        srv = start_server(base, mariadb_template, options={"binlog-row-metadata": mode})
        try:
            conn = srv.connect()
            try:
                with conn.cursor() as cur:
                    cur.execute("SELECT @@binlog_row_metadata")
                    assert cur.fetchone()[0] == mode
                    for s in WORKLOAD:
                        cur.execute(s)
                truth = _truth(conn)
            finally:
                conn.close()
            srv.flush_binary_logs()
            files = srv.closed_binlog_files()
        finally:
            srv.stop(timeout=30)
        assert len(files) >= 3
        schema = base / "schema.jsonl"
        out[mode] = Run(mode, files, schema, truth)
    yield out


def _cli(capsysbinary: pytest.CaptureFixture[bytes], *args: str) -> tuple[int, bytes, str]:
    capsysbinary.readouterr()
    rc = main(list(args))
    o, e = capsysbinary.readouterr()
    return rc, o, e.decode()


def _schema_file(run: Run, capsysbinary: pytest.CaptureFixture[bytes]) -> str:
    if not Path(run.schema).exists():
        rc, o, _ = _cli(capsysbinary, "schema", *run.files)
        assert rc == 0
        Path(run.schema).write_bytes(o)
    return run.schema


def _rows(stdout: bytes) -> list[dict[str, Any]]:
    return [json.loads(x) for x in stdout.splitlines()]


def _image(r: dict[str, Any]) -> tuple[Any, ...]:
    return (r["db"], r["table"], r["op"], r["before"], r["after"])


def _decode(capsysbinary: pytest.CaptureFixture[bytes], run: Run, *extra: str
            ) -> tuple[list[dict[str, Any]], str]:
    rc, o, e = _cli(capsysbinary, "decode", "--rows", *extra, *run.files)
    assert rc == 0, e
    return _rows(o), e


def _schema_lines(stderr: str) -> list[str]:
    return [x for x in stderr.splitlines() if x.startswith("binlake: schema: ")]


def _compared(rows: list[dict[str, Any]], mode: str) -> list[tuple[Any, ...]]:
    """The row changes every mode must name as FULL does: all but db `hidden`."""
    return [_image(r) for r in rows if r["db"] != "hidden"]


integration = pytest.mark.integration


@integration
def test_full_decode_matches_the_server(runs: dict[str, Run],
                                        capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    """The reference itself: FULL's images of the last transaction (which touches every
    row of n.t, n.a, n.b) are the rows the server's SELECT gives."""
    for mode in MODES:  # the same workload gave the same rows everywhere
        assert runs[mode].truth == runs["FULL"].truth
    full = runs["FULL"]
    rows, err = _decode(capsysbinary, full)
    assert not _schema_lines(err)
    last_gtid = rows[-1]["gtid"]
    last = [r for r in rows if r["gtid"] == last_gtid]
    for table, want in full.truth.items():
        got = sorted((r["after"] for r in last if r["table"] == table), key=_key)
        assert got == want, table
    t = {r["after"]["id"]: r["after"] for r in last if r["table"] == "t"}
    assert t[4]["u"] == 18446744073709551615 and t[1]["l"] == "Grüße"
    assert t[1]["b"] == {"hex": "ff00fe80"} and t[1]["colour"] == "red"


@integration
@pytest.mark.parametrize("mode", ["MINIMAL", "NO_LOG"])
def test_decode_rows_with_schema_equals_full(runs: dict[str, Run], mode: str,
                                             capsysbinary: pytest.CaptureFixture[bytes]
                                             ) -> None:
    full_rows, _ = _decode(capsysbinary, runs["FULL"])
    run = runs[mode]
    schema = _schema_file(run, capsysbinary)
    rows, err = _decode(capsysbinary, run, "--schema", schema)
    want = _compared(full_rows, mode)
    got = _compared(rows, mode)
    assert len(got) == len(want) >= 25
    for g, w in zip(got, want):
        assert g == w
    # the only findings: the table whose DDL the binlog does not hold
    lines = _schema_lines(err)
    assert lines and all("table_map_mismatch" in x and "hidden.h" in x for x in lines), err

    # a later file alone, F of them all: positions are (the file's seq, pos)
    tail_full = Run("FULL", [Path(f) for f in runs["FULL"].files[1:]], Path(), {})
    tail = Run(mode, [Path(f) for f in run.files[1:]], Path(schema), {})
    want = _compared(_decode(capsysbinary, tail_full)[0], mode)
    got = _compared(_decode(capsysbinary, tail, "--schema", schema)[0], mode)
    assert got == want and len(want) >= 10

    # without --schema: @1..@n, and (NO_LOG) values that differ too
    plain, err = _decode(capsysbinary, run)
    assert not _schema_lines(err)
    assert len(plain) == len(full_rows)
    for p, f in zip(plain, full_rows):
        for img, fimg in ((p["before"], f["before"]), (p["after"], f["after"])):
            assert (img is None) == (fimg is None)
            if img is not None:
                assert list(img) == [f"@{i}" for i in range(1, len(fimg) + 1)]
    if mode == "NO_LOG":
        u = [p["after"]["@2"] for p in plain if p["table"] == "t" and p["op"] == "insert"
             and p["after"]["@1"] == 1]
        assert u == [-1]  # 4294967295 read as signed: the schema's signedness matters


@integration
@pytest.mark.parametrize("mode", ["MINIMAL", "NO_LOG"])
def test_decode_events_with_schema_equals_full(runs: dict[str, Run], mode: str,
                                               capsysbinary: pytest.CaptureFixture[bytes]
                                               ) -> None:
    """Without --rows: the rows events' images too."""
    def images(run: Run, *extra: str) -> list[Any]:
        rc, o, e = _cli(capsysbinary, "decode", *extra, *run.files)
        assert rc == 0, e
        return [(ev.get("db"), ev.get("table"), ev["rows"]) for ev in _rows(o)
                if "rows" in ev and ev.get("db") != "hidden"]

    want = images(runs["FULL"])
    got = images(runs[mode], "--schema", _schema_file(runs[mode], capsysbinary))
    assert got == want and len(got) >= 20


def _txns(capsysbinary: pytest.CaptureFixture[bytes], run: Run, *extra: str
          ) -> tuple[list[dict[str, Any]], str]:
    rc, o, e = _cli(capsysbinary, "transactions", "--changes", *extra, *run.files)
    assert rc == 0, e
    return _rows(o), e


def _txn_view(txns: list[dict[str, Any]], mode: str) -> list[Any]:
    out = []
    for t in txns:
        changes = [(*_image(c), c["applied"]) for c in t.get("changes", [])
                   if c["db"] != "hidden"]
        out.append((t["kind"], t["status"], changes))
    return out


@integration
@pytest.mark.parametrize("mode", ["MINIMAL", "NO_LOG"])
def test_transactions_with_schema_equals_full(runs: dict[str, Run], mode: str,
                                              capsysbinary: pytest.CaptureFixture[bytes]
                                              ) -> None:
    full, _ = _txns(capsysbinary, runs["FULL"])
    run = runs[mode]
    got, err = _txns(capsysbinary, run, "--schema", _schema_file(run, capsysbinary))
    want = _txn_view(full, mode)
    assert len(got) == len(full)
    assert _txn_view(got, mode) == want
    assert sum(len(c) for _, _, c in want) >= 25
    lines = _schema_lines(err)
    assert lines and all("table_map_mismatch" in x and "hidden.h" in x for x in lines), err
    plain, err = _txns(capsysbinary, run)
    assert not _schema_lines(err)
    keys = {k for t in plain for c in t.get("changes", []) for img in (c["before"], c["after"])
            if img for k in img}
    assert keys and all(k.startswith("@") for k in keys)


@integration
@pytest.mark.parametrize("mode", ["MINIMAL", "NO_LOG"])
def test_unlogged_ddl_keeps_at_names(runs: dict[str, Run], mode: str,
                                     capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    """After ``SET sql_log_bin=0; ALTER TABLE hidden.h ADD COLUMN c``: the row before it is
    named as FULL names it, the rows after it are the unnamed ones (never wrong names), one
    table_map_mismatch line per file on stderr, exit 0."""
    run = runs[mode]
    full = [r for r in _decode(capsysbinary, runs["FULL"])[0] if r["db"] == "hidden"]
    plain = [r for r in _decode(capsysbinary, run)[0] if r["db"] == "hidden"]
    named, err = _decode(capsysbinary, run, "--schema", _schema_file(run, capsysbinary))
    named = [r for r in named if r["db"] == "hidden"]
    assert [r["op"] for r in full] == ["insert", "insert", "update", "update"]
    assert _image(named[0]) == _image(full[0])
    assert full[0]["after"] == {"a": 4294967295, "e": "y"}
    assert [_image(r) for r in named[1:]] == [_image(r) for r in plain[1:]]
    assert list(named[1]["after"]) == ["@1", "@2", "@3"]
    lines = _schema_lines(err)
    assert len(lines) == 1, err
    assert "table_map_mismatch" in lines[0] and "hidden.h" in lines[0]
    assert "column count differs" in lines[0]


_GAPS = {"table_default": ("gaps", {"a": "é"}), "collation_only": ("gaps", {"a": "ø"}),
         "database_default": ("gaps_db", {"a": "ñ"}),
         "altered_default": ("gaps", {"a": "é", "b": "Жё", "c": "Щ"}),
         "altered_database": ("gaps_db", {"a": "λ", "e": "y"}),
         "unsigned_floats": ("gaps", {"f": 1.5, "d": 2.25, "z": "3.50", "g": 4.125,
                                      "t": "ü"})}
# the character sets the history gives the text columns of the `gaps*` tables
_GAP_CHARSETS = {"table_default": {"a": "latin1"}, "collation_only": {"a": "latin1"},
                 "database_default": {"a": "latin1"},
                 "altered_default": {"a": "utf8mb4", "b": "cp1251", "c": "cp1251"},
                 "altered_database": {"a": "greek", "e": "greek"},
                 "unsigned_floats": {"t": "utf8mb4"}}


@integration
@pytest.mark.parametrize("table", sorted(_GAPS))
def test_default_charsets_on_minimal(runs: dict[str, Run], table: str,
                                     capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    """MINIMAL logs each column's charset: text read right whatever the history says."""
    db, after = _GAPS[table]
    full = [r["after"] for r in _decode(capsysbinary, runs["FULL"])[0] if r["table"] == table]
    run = runs["MINIMAL"]
    rows, _ = _decode(capsysbinary, run, "--schema", _schema_file(run, capsysbinary))
    assert full == [after]
    assert [r["after"] for r in rows if r["db"] == db and r["table"] == table] == full


@integration
@pytest.mark.parametrize("table", sorted(_GAPS))
def test_default_charsets_on_no_log(runs: dict[str, Run], table: str,
                                    capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    """NO_LOG logs no charset: the history's (a table's or database's default, a bare
    COLLATE's) reads the text as FULL does."""
    db, after = _GAPS[table]
    run = runs["NO_LOG"]
    schema = _schema_file(run, capsysbinary)
    rows, _ = _decode(capsysbinary, run, "--schema", schema)
    assert [r["after"] for r in rows if r["db"] == db and r["table"] == table] == [after]
    h = load_history(schema)
    v = h.latest(db, table)
    assert v is not None and v.columns is not None
    assert {c.name: c.charset for c in v.columns if c.charset} == _GAP_CHARSETS[table]


# -- load_history and the option, without a server ------------------------------------------


def _lines(h: SchemaHistory) -> list[str]:
    out = [json.dumps({"version": v.to_dict()}) for v in h.all_versions()]
    return [*out, json.dumps({"finding": "unparsed", "message": "x", "file": None})]


def _history() -> SchemaHistory:
    h = SchemaHistory()
    for i, s in enumerate(["CREATE TABLE a (i INT)", "CREATE TABLE b (j TEXT NOT NULL)",
                           "RENAME TABLE a TO tmp, b TO a, tmp TO b",
                           "ALTER TABLE a ADD COLUMN k INT"]):
        apply_ddl(h, s, db="d", pos=(1 + i // 2, 100 * (i + 1)), file="f",
                  server_version=101100, mariadb=True)
    return h


@pytest.mark.parametrize("shuffle", [False, True])
def test_load_history_round_trip(tmp_path: Path, shuffle: bool) -> None:
    h = _history()
    lines = _lines(h)
    if shuffle:  # versions of other positions out of order: added in position order
        lines = [lines[-2], *lines[:-2], "", lines[-1]]
    p = tmp_path / "h.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for got in (load_history(p), load_history(str(p)), load_history(iter(lines))):
        assert got.all_versions() == h.all_versions()
        assert not got.findings
        for pos in [(1, 50), (1, 150), (1, 250), (2, 300), (2, 350), (2, 450), (3, 0)]:
            for t in ("a", "b", "tmp"):
                assert got.at("d", t, pos) == h.at("d", t, pos), (t, pos)
    # the swap's versions of one table at one position keep their order
    a = load_history(iter(lines)).versions[("d", "a")]
    assert [v.change for v in a] == ["create", "rename_out", "rename_in", "alter"]


@pytest.mark.parametrize("bad, why", [
    ("{not json", "not a JSON line"),
    ("[1, 2]", "not a JSON object"),
    ('{"table": "x"}', "neither a \"version\" nor a \"finding\""),
    ('{"version": 3}', "\"version\" is not an object"),
    ('{"version": {"db": "d", "table": "t"}}', "version without 'start'"),
    ('{"version": {"db": "d", "table": "t", "start": {"seq": "x", "pos": 1}}}',
     "not a readable version"),
    ('{"version": {"db": "d", "table": "t", "start": {"seq": 1, "pos": 1}, '
     '"columns": [{"type": "int"}]}}', "version without 'name'"),
])
def test_load_history_bad_line(tmp_path: Path, bad: str, why: str,
                               capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    lines = _lines(_history())
    p = tmp_path / "h.jsonl"
    p.write_text("\n".join([lines[0], "", bad, *lines[1:]]) + "\n", encoding="utf-8")
    with pytest.raises(SchemaFileError) as exc:
        load_history(p)
    assert exc.value.file == str(p) and exc.value.line == 3
    assert str(exc.value).startswith(f"{p}:3: {why}"), str(exc.value)
    # the command line: a usage error naming the file and line, exit 2, nothing decoded
    for verb in (["decode", "--rows"], ["transactions"]):
        rc, o, e = _cli(capsysbinary, *verb, "--schema", str(p), str(tmp_path / "x.000001"))
        assert rc == 2 and not o
        assert f"binlake: usage error: --schema {p}:3: {why}" in e, e


def test_load_history_missing_file(tmp_path: Path,
                                   capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    with pytest.raises(SchemaFileError, match="cannot read the file"):
        load_history(tmp_path / "nope.jsonl")
    rc, _, e = _cli(capsysbinary, "decode", "--schema", str(tmp_path / "nope.jsonl"),
                    str(tmp_path / "x.000001"))
    assert rc == 2 and "--schema" in e and "nope.jsonl" in e


def test_help_mentions_schema(capsys: pytest.CaptureFixture[str]) -> None:
    for verb in ("decode", "transactions"):
        with pytest.raises(SystemExit):
            main([verb, "--help"])
        assert "--schema F" in capsys.readouterr().out
