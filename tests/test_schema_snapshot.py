"""Schema snapshots (lib/binlake/schema/snapshot.py, lib/binlake/archive/snapshots.py,
docs/schema.md "Snapshots"): taken from a real MariaDB server at a binlog position (DML
between the reads is fine, DDL makes it retry, then refuse), the JSON Lines format, merging
into a history, stored beside the binlogs on a local directory and on moto S3 (sha256
checked, an unchanged schema writes nothing), the CLI and the archive step."""

from __future__ import annotations

import json
import subprocess
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from binlake.archive.objectstore import LocalStore, S3Store
from binlake.archive.snapshots import (
    SnapshotIntegrityError,
    list_snapshots,
    order_key,
    read_snapshot,
    source_uri,
    store_snapshot,
)
from binlake.schema import SchemaHistory, apply_ddl, build_history, from_information_schema
from binlake.schema.model import SNAPSHOT_POS, SchemaColumn, Version
from binlake.schema.snapshot import (
    Snapshot,
    SnapshotError,
    SnapshotFormatError,
    SnapshotPosition,
    SnapshotRaceError,
    apply_snapshot,
    parse_snapshot,
    snapshot_from_mysqldump,
    take_snapshot,
)
from binlake_dev.mariadb import MariaDBServer

from .s3 import moto_s3

# -- helpers --------------------------------------------------------------------------------

POS = SnapshotPosition("mariadb-bin.000003", 3, 1234)


def _col(name: str, type_: str = "int", nullable: bool = True) -> SchemaColumn:
    return SchemaColumn(name, type_, type_.split("(")[0].split(" ")[0], nullable)


def _v(db: str, table: str, *cols: SchemaColumn, pk: tuple[str, ...] = (),
       pos: SnapshotPosition | None = POS) -> Version:
    return Version(db, table, 1, pos.key if pos else SNAPSHOT_POS, pos.file if pos else None,
                   "information_schema", "snapshot", tuple(cols), pk)


def _snap(*versions: Version, pos: SnapshotPosition | None = POS,
          databases: list[str] | None = None, taken_at: str = "2026-11-26T10:00:00+00:00",
          flavor: str = "mariadb") -> Snapshot:
    at = [replace(v, start=pos.key if pos else SNAPSHOT_POS, file=pos.file if pos else None)
          for v in versions]
    return Snapshot(pos, at, "10.11.19-MariaDB-log", flavor, taken_at,
                    databases=databases if databases is not None else
                    sorted({v.db for v in versions}))


def _ddl(h: SchemaHistory, sql: str, pos: tuple[int, int], db: str = "d") -> None:
    apply_ddl(h, sql, db=db, pos=pos, file=f"mariadb-bin.{pos[0]:06d}", server_version=101100,
              mariadb=True)


def _cols(v: Version | None) -> list[str] | None:
    assert v is not None
    return None if v.columns is None else [f"{c.name} {c.type}" for c in v.columns]


# -- the format -----------------------------------------------------------------------------

def test_jsonl_round_trip_and_header() -> None:
    s = _snap(_v("d", "t", _col("id", nullable=False), _col("e", "enum('A','b')"), pk=("id",)),
              _v("d", "u", _col("x", "varchar(10)")))
    text = s.to_jsonl()
    lines = [json.loads(x) for x in text.splitlines()]
    assert lines[0]["snapshot"] == 1 and lines[0]["tables"] == 2
    assert lines[0]["position"] == {"file": "mariadb-bin.000003", "seq": 3, "pos": 1234}
    assert lines[0]["server"] == {"version": "10.11.19-MariaDB-log", "flavor": "mariadb"}
    assert [x["version"]["table"] for x in lines[1:]] == ["t", "u"]
    back = parse_snapshot(text, "x.jsonl")
    assert back.to_jsonl() == text and back.position == POS and back.start == (3, 1234)
    assert back.versions[0].columns == s.versions[0].columns
    # position-less: the versions sit at SNAPSHOT_POS
    p = _snap(_v("d", "t", _col("a"), pos=None), pos=None)
    assert parse_snapshot(p.to_jsonl()).start == SNAPSHOT_POS
    # the schema digest ignores position and time
    moved = _retake(s, SnapshotPosition("f.000009", 9, 9), "2027-01-01T00:00:00+00:00")
    assert moved.schema_sha256() == s.schema_sha256()


@pytest.mark.parametrize(("text", "line", "why"), [
    ("", None, "empty"),
    ('{"version": {}}\n', 1, "not a snapshot header"),
    ('{"snapshot": 2}\n', 1, "format 2"),
    ('{"snapshot": 1, "position": {"file": "f.000001"}}\n', 1, "bad header"),
    ('{"snapshot": 1, "position": null}\n{"version": {"db": "d"}}\n', 2, "bad version"),
    ('{"snapshot": 1, "position": null}\n\n{"nope": 1}\n', 3, "not a {\"version\""),
    ('{"snapshot": 1, "position": null}\n{"version": \n', 2, "not JSON"),
    ('{"snapshot": 1, "position": null, "tables": 2}\n', None, "truncated"),
])
def test_bad_snapshot_text_is_a_typed_error_naming_object_and_line(
        text: str, line: int | None, why: str) -> None:
    with pytest.raises(SnapshotFormatError) as e:
        parse_snapshot(text, "s3://b/x/_schema/y.jsonl")
    assert e.value.line == line and why in str(e.value)
    assert str(e.value).startswith("s3://b/x/_schema/y.jsonl" + (f" line {line}" if line
                                                                 else ""))


def test_version_at_another_position_is_refused() -> None:
    s = _snap(_v("d", "t", _col("a")))
    lines = s.to_jsonl().decode().splitlines()
    lines[1] = lines[1].replace('"pos": 1234', '"pos": 99')
    with pytest.raises(SnapshotFormatError, match=r"line 2: .*starts at"):
        parse_snapshot("\n".join(lines), "f")


def test_snapshot_from_mysqldump_position_and_databases() -> None:
    dump = ("-- MariaDB dump 10.19  Distrib 10.11.19-MariaDB\n"
            "-- Server version\t10.11.19-MariaDB-log\n"
            "-- CHANGE MASTER TO MASTER_LOG_FILE='mariadb-bin.000007', MASTER_LOG_POS=3456;\n"
            "CREATE DATABASE /*!32312 IF NOT EXISTS*/ `shop`;\nUSE `shop`;\n"
            "CREATE TABLE `orders` (`id` int NOT NULL, `j` longtext, PRIMARY KEY (`id`));\n"
            "CREATE DATABASE /*!32312 IF NOT EXISTS*/ `empty`;\n"
            "CREATE DATABASE other;\nUSE other;\nCREATE TABLE x (a INT);\n")
    snap, findings = snapshot_from_mysqldump(dump, "d.sql")
    assert not findings
    assert snap.position == SnapshotPosition("mariadb-bin.000007", 7, 3456)
    assert snap.flavor == "mariadb" and snap.origin == "mysqldump"
    assert snap.databases == ["empty", "other", "shop"]
    assert [(v.db, v.table, v.start, v.change) for v in snap.versions] == [
        ("other", "x", (7, 3456), "snapshot"), ("shop", "orders", (7, 3456), "snapshot")]
    only, _ = snapshot_from_mysqldump(dump, "d.sql", ["shop"])
    assert [v.table for v in only.versions] == ["orders"] and only.databases == ["shop"]
    # a dump of one database has no USE line: name it
    one = "CREATE TABLE t (a INT);\n"
    with pytest.raises(SnapshotError, match="--database"):
        snapshot_from_mysqldump(one, "one.sql")
    named, _ = snapshot_from_mysqldump(one, "one.sql", ["d1"])
    assert named.position is None and [(v.db, v.start) for v in named.versions] == [
        ("d1", SNAPSHOT_POS)]


# -- apply_snapshot -------------------------------------------------------------------------

def test_apply_snapshot_fills_tables_without_a_known_version() -> None:
    h = SchemaHistory()
    _ddl(h, "CREATE TABLE unknown_cols (a INT)", (1, 100))
    _ddl(h, "ALTER TABLE unknown_cols ADD COLUMN p POINT", (1, 200))  # unknown from here
    _ddl(h, "CREATE TABLE dropped (a INT)", (1, 300))
    _ddl(h, "DROP TABLE dropped", (2, 100))
    snap = _snap(_v("d", "never_seen", _col("a"), _col("b", "text")),
                 _v("d", "unknown_cols", _col("a"), _col("p", "point")),
                 _v("d", "dropped", _col("z", "bigint")))
    assert apply_snapshot(h, snap) == []
    assert _cols(h.at("d", "never_seen", (3, 1234))) == ["a int", "b text"]
    assert h.at("d", "never_seen", (3, 1233)) is None
    assert _cols(h.at("d", "unknown_cols", (3, 1234))) == ["a int", "p point"]
    assert _cols(h.at("d", "unknown_cols", (2, 0))) is None  # before it: unknown still
    new = h.at("d", "dropped", (4, 0))
    assert new is not None and new.exists and new.incarnation == 2
    assert new.change == "snapshot" and new.start == (3, 1234)


def test_apply_snapshot_disagreement_is_a_finding_and_the_server_wins() -> None:
    h = SchemaHistory()
    _ddl(h, "CREATE TABLE t (id INT PRIMARY KEY, a INT)", (1, 100))
    _ddl(h, "CREATE TABLE same (id INT NOT NULL, j JSON, PRIMARY KEY (id))", (1, 200))
    _ddl(h, "CREATE TABLE pk (id INT NOT NULL, b INT)", (1, 300))
    snap = _snap(_v("d", "t", _col("id", nullable=False), _col("a"), _col("b", "varchar(3)"),
                    pk=("id",)),
                 # MariaDB's information_schema says longtext for JSON: agrees
                 _v("D", "SAME", _col("ID", nullable=False), _col("j", "longtext"),
                    pk=("ID",)),
                 _v("d", "pk", _col("id", nullable=False), _col("b"), pk=("id",)))
    found = apply_snapshot(h, snap)
    assert [(f.kind, f.table) for f in found] == [("snapshot_disagrees", "d.pk"),
                                                  ("snapshot_disagrees", "d.t")]
    t = found[1]
    assert t.pos == (3, 1234) and t.file == "mariadb-bin.000003"
    assert "column names differ" in t.message and "mariadb-bin.000003:1234" in t.message
    assert t.expected == {"columns": ["id int NOT NULL", "a int"], "primary_key": ["id"]}
    assert t.found["columns"][-1] == "b varchar(3)"
    assert "primary key differs" in found[0].message
    assert h.findings[-2:] == found
    assert _cols(h.at("d", "t", (3, 1234))) == ["id int", "a int", "b varchar(3)"]
    assert _cols(h.at("d", "t", (3, 1233))) == ["id int", "a int"]
    assert len(h.versions[("d", "same")]) == 1  # agreeing: nothing added
    # applied again: everything agrees now, nothing is added (same position: allowed)
    n = sum(len(v) for v in h.versions.values())
    assert apply_snapshot(h, snap) == []
    assert sum(len(v) for v in h.versions.values()) == n


def test_apply_snapshot_leaves_tables_with_later_versions_and_drops_absent_ones() -> None:
    h = SchemaHistory()
    _ddl(h, "CREATE TABLE later (a INT)", (1, 100))
    _ddl(h, "ALTER TABLE later ADD COLUMN b INT", (5, 100))  # after the snapshot
    _ddl(h, "CREATE TABLE at_pos (a INT)", (3, 1234))  # an event at the position: after it
    _ddl(h, "CREATE TABLE gone (a INT)", (1, 200))
    _ddl(h, "CREATE TABLE elsewhere (a INT)", (1, 300), db="other")
    snap = _snap(_v("d", "later", _col("x")), _v("d", "at_pos", _col("y")), databases=["d"])
    found = apply_snapshot(h, snap)  # no ValueError: versions stay in position order
    assert len(h.versions[("d", "later")]) == 2 and len(h.versions[("d", "at_pos")]) == 1
    # "gone" is in a database the snapshot covers but not in it: dropped there
    assert [(f.kind, f.table) for f in found] == [("snapshot_disagrees", "d.gone")]
    assert found[0].expected == {"columns": ["a int"], "primary_key": []}
    assert not h.at("d", "gone", (3, 1234)).exists  # type: ignore[union-attr]
    assert h.at("d", "gone", (3, 1233)).exists  # type: ignore[union-attr]
    assert h.latest("other", "elsewhere").exists  # type: ignore[union-attr]


def test_position_less_snapshot_seeds_an_empty_history_then_the_binlog_follows() -> None:
    h = SchemaHistory()
    apply_snapshot(h, _snap(_v("d", "t", _col("a"), pos=None), pos=None))
    _ddl(h, "ALTER TABLE t ADD COLUMN b INT", (1, 100))
    assert _cols(h.latest("d", "t")) == ["a int", "b int"]
    assert not h.findings


# -- stored beside the binlogs --------------------------------------------------------------

def _retake(s: Snapshot, pos: SnapshotPosition, taken_at: str) -> Snapshot:
    return Snapshot(pos, [Version(v.db, v.table, 1, pos.key, pos.file, v.ddl, "snapshot",
                                  v.columns, v.primary_key) for v in s.versions],
                    s.server_version, s.flavor, taken_at, databases=s.databases)


def _store_round_trip(store: Any, tamper: Any, client: Any = None) -> None:
    first = _snap(_v("d", "t", _col("a")))
    r1 = store_snapshot(store, "src", first)
    assert r1.written and r1.uri.endswith("/src/_schema/mariadb-bin.000003-1234.jsonl")
    # an unchanged schema at a later position, later: nothing written
    again = _retake(first, SnapshotPosition("mariadb-bin.000004", 4, 500),
                    "2026-11-26T10:15:00+00:00")
    r2 = store_snapshot(store, "src", again)
    assert not r2.written and r2.uri == r1.uri and "identical" in r2.reason
    # a changed schema: stored
    changed = _snap(_v("d", "t", _col("a"), _col("b")),
                    pos=SnapshotPosition("mariadb-bin.000004", 4, 900),
                    taken_at="2026-11-26T10:30:00+00:00")
    r3 = store_snapshot(store, "src", changed)
    assert r3.written
    # the same position again, with another schema (a DDL the binlog does not hold)
    other = _snap(_v("d", "t", _col("c")), pos=SnapshotPosition("mariadb-bin.000004", 4, 900),
                  taken_at="2026-11-26T10:45:00+00:00")
    r4 = store_snapshot(store, "src", other)
    assert r4.written and r4.uri.endswith("mariadb-bin.000004-900-20261126T104500Z.jsonl")
    initial = _snap(_v("d", "t", _col("a"), pos=None), pos=None)
    r5 = store_snapshot(store, "src", initial)  # (not identical to the newest)
    assert r5.written and r5.uri.endswith("initial-20261126T100000Z.jsonl")
    listed = list_snapshots(source_uri(store, "src"), client=client)
    assert listed == [r5.uri, r1.uri, r3.uri, r4.uri]
    assert list_snapshots(store.root_uri, "src", client=client) == listed
    assert list_snapshots(source_uri(store, "nothing"), client=client) == []
    assert [read_snapshot(u, client=client).schema_sha256() for u in listed] == [
        initial.schema_sha256(), first.schema_sha256(), changed.schema_sha256(),
        other.schema_sha256()]
    assert read_snapshot(r3.uri, client=client).to_jsonl() == changed.to_jsonl()
    # binlog listings do not see _schema/
    assert store.list("src") == []
    tamper(r1.uri)
    with pytest.raises(SnapshotIntegrityError, match="recorded when it was stored"):
        read_snapshot(r1.uri, client=client)


def test_store_list_read_on_a_local_directory(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "archive")

    def tamper(uri: str) -> None:
        p = Path(uri)
        p.write_bytes(p.read_bytes().replace(b'"a"', b'"A"'))

    _store_round_trip(store, tamper)
    assert (tmp_path / "archive/src/_schema/_meta/mariadb-bin.000003-1234.jsonl.json").exists()
    # no sha256 recorded: refused, unless asked not to verify
    plain = tmp_path / "plain.jsonl"
    plain.write_bytes(_snap(_v("d", "t", _col("a"))).to_jsonl())
    with pytest.raises(SnapshotIntegrityError, match="no sha256 is recorded"):
        read_snapshot(str(plain))
    assert read_snapshot(str(plain), verify=False).versions[0].table == "t"
    # a tampered newest snapshot is not trusted as "the same schema": a new one is stored
    newest = Path(list_snapshots(str(tmp_path / "archive"), "src")[-1])
    tamper(str(newest))
    newest.write_bytes(newest.read_bytes().replace(b'"c"', b'"C"'))
    r = store_snapshot(store, "src", _snap(_v("d", "t", _col("c")),
                                           pos=SnapshotPosition("mariadb-bin.000009", 9, 4),
                                           taken_at="2026-11-27T00:00:00+00:00"))
    assert r.written


def test_store_list_read_on_s3() -> None:
    pytest.importorskip("moto")
    with moto_s3("snaps", {}) as endpoint:
        import boto3

        client = boto3.client("s3", endpoint_url=endpoint)
        store = S3Store("snaps", "binlogs", client=client)

        def tamper(uri: str) -> None:
            key = uri[len("s3://snaps/"):]
            head = client.head_object(Bucket="snaps", Key=key)
            body = client.get_object(Bucket="snaps", Key=key)["Body"].read()
            client.put_object(Bucket="snaps", Key=key, Body=body.replace(b'"a"', b'"A"'),
                              Metadata=head["Metadata"])

        _store_round_trip(store, tamper, client)
        head = client.head_object(Bucket="snaps",
                                  Key="binlogs/src/_schema/mariadb-bin.000004-900.jsonl")
        assert len(head["Metadata"]["sha256"]) == 64
        # the default client (BINLAKE_S3_ENDPOINT_URL, as the lake's executors have it)
        listed = list_snapshots("s3://snaps/binlogs/src")
        assert len(listed) == 4 and read_snapshot(listed[-1]).versions[0].table == "t"


def test_order_key() -> None:
    names = ["x/_schema/mariadb-bin.000010-4.jsonl", "x/_schema/mariadb-bin.000002-900.jsonl",
             "x/_schema/mariadb-bin.000002-900-20261126T104500Z.jsonl",
             "x/_schema/initial-20261126T100000Z.jsonl", "x/_schema/mariadb-bin.000002-10.jsonl"]
    assert sorted(names, key=order_key) == [names[3], names[4], names[1], names[2], names[0]]


# -- a real server ---------------------------------------------------------------------------

SCHEMA = [
    "CREATE DATABASE shop", "CREATE DATABASE crm",
    "CREATE TABLE shop.orders (id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, "
    "amount DECIMAL(10,2), note VARCHAR(20) CHARACTER SET latin1, state ENUM('New','done'), "
    "j JSON, g INT AS (id * 2) VIRTUAL, h INT INVISIBLE)",
    "CREATE TABLE shop.items (order_id INT NOT NULL, n SMALLINT NOT NULL, b BLOB, "
    "ts DATETIME(3), PRIMARY KEY (order_id, n))",
    "CREATE TABLE crm.`we ird` (`a``b` BIT(3), y YEAR, f FLOAT(7,2), s SET('x','y'))",
    "CREATE VIEW shop.v AS SELECT id FROM shop.orders",
]


def _shape(v: Version) -> tuple[Any, ...]:
    return (v.db, v.table, v.columns, v.primary_key)


@pytest.mark.integration
def test_snapshot_equals_information_schema(fresh_mariadb: MariaDBServer) -> None:
    srv = fresh_mariadb
    srv.execute(SCHEMA)
    conn = srv.connect()
    try:
        snap = take_snapshot(conn)
        truth = from_information_schema(conn, ["crm", "shop"])
    finally:
        conn.close()
    file, pos = srv.binlog_position()
    assert snap.position == SnapshotPosition(file, int(file.rsplit(".", 1)[1]), pos)
    assert snap.flavor == "mariadb" and "MariaDB" in (snap.server_version or "")
    assert snap.databases == ["crm", "shop"]  # test and the system databases: not by default
    assert sorted(map(_shape, snap.versions)) == sorted(map(_shape, truth.all_versions()))
    assert all(v.start == snap.start and v.change == "snapshot" and v.file == file
               for v in snap.versions)
    assert ("shop", "v") not in {(v.db, v.table) for v in snap.versions}  # views: no
    # and it agrees with the history the binlog itself gives
    srv.flush_binary_logs()
    h = build_history([str(f) for f in srv.binlog_files()]).history
    assert apply_snapshot(h, snap) == []
    assert all(len(vs) == 1 for vs in h.versions.values())


@pytest.mark.integration
def test_dml_between_the_reads_keeps_the_snapshot(fresh_mariadb: MariaDBServer) -> None:
    srv = fresh_mariadb
    srv.execute(SCHEMA[:4])
    before = srv.binlog_position()
    stop = threading.Event()

    def writer() -> None:  # another client writing all along
        c = srv.connect()
        try:
            with c.cursor() as cur:
                while not stop.is_set():
                    cur.execute("INSERT INTO shop.orders (amount) VALUES (1.5)")
        finally:
            c.close()

    calls: list[int] = []

    def between(attempt: int) -> None:  # and surely some DML between the reads
        calls.append(attempt)
        srv.execute(["INSERT INTO shop.items VALUES (1, 1, 'x', NOW())",
                     "FLUSH BINARY LOGS",  # across a rotation too
                     "UPDATE shop.items SET n = 2"])

    t = threading.Thread(target=writer)
    t.start()
    conn = srv.connect()
    try:
        snap = take_snapshot(conn, ["shop"], between_reads=between)
    finally:
        stop.set()
        t.join()
        conn.close()
    assert calls == [0]  # valid at the first try
    assert snap.position is not None
    assert (snap.position.seq, snap.position.pos) > (int(before[0].rsplit(".", 1)[1]), before[1])
    assert snap.position.file != before[0]
    assert [v.table for v in snap.versions] == ["items", "orders"]


@pytest.mark.integration
def test_ddl_between_the_reads_retries_then_refuses(fresh_mariadb: MariaDBServer) -> None:
    srv = fresh_mariadb
    srv.execute(SCHEMA[:4])
    calls: list[int] = []
    slept: list[float] = []

    def alter_once(attempt: int) -> None:
        calls.append(attempt)
        if attempt == 0:
            srv.execute(["USE shop", "ALTER TABLE orders ADD COLUMN late INT",
                         "FLUSH BINARY LOGS"], database="shop")

    conn = srv.connect()
    try:
        snap = take_snapshot(conn, ["shop"], between_reads=alter_once, sleep=slept.append)
        assert calls == [0, 1] and len(slept) == 1
        orders = next(v for v in snap.versions if v.table == "orders")
        assert orders.columns is not None and orders.columns[-1].name == "late"
        assert snap.position is not None
        # after the ALTER and the rotation (MariaDB may still add a Binlog_checkpoint)
        assert snap.position.file == srv.binlog_position()[0] == "mariadb-bin.000002"

        n = iter(range(100))

        def alter_always(attempt: int) -> None:
            srv.execute(f"ALTER TABLE shop.items ADD COLUMN c{next(n)} INT")

        slept.clear()
        with pytest.raises(SnapshotRaceError, match=r"ALTER TABLE shop\.items ADD COLUMN c2") \
                as e:
            take_snapshot(conn, ["shop"], between_reads=alter_always, attempts=3,
                          backoff=0.01, sleep=slept.append)
        assert e.value.attempts == 3 and slept == [0.01, 0.02]
        # DDL of other objects (a view, a temporary table) changes no table: no retry
        calls.clear()

        def other_ddl(attempt: int) -> None:
            calls.append(attempt)
            srv.execute(["CREATE OR REPLACE VIEW shop.v2 AS SELECT 1 AS one"])

        take_snapshot(conn, ["shop"], between_reads=other_ddl)
        assert calls == [0]
    finally:
        conn.close()


def _cli(*args: str) -> tuple[int, bytes, bytes]:
    import sys

    res = subprocess.run([sys.executable, "-m", "binlake.cli", *args], capture_output=True,
                         check=False)
    return res.returncode, res.stdout, res.stderr


def _settled_position(srv: MariaDBServer, timeout: float = 10.0) -> tuple[str, int]:
    """The binlog position once it stopped moving for 0.3 s."""
    import time

    end = time.monotonic() + timeout
    last = srv.binlog_position()
    while time.monotonic() < end:
        time.sleep(0.3)
        now = srv.binlog_position()
        if now == last:
            return now
        last = now
    return last


@pytest.mark.integration
def test_cli_schema_snapshot_end_to_end(fresh_mariadb: MariaDBServer, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    srv = fresh_mariadb
    monkeypatch.setenv("BINLAKE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MYSQL_PWD", "")
    # a table created before the archive begins: its CREATE is in a file nobody has
    srv.execute(SCHEMA[:4])
    srv.execute("INSERT INTO shop.orders (amount) VALUES (1)")
    archive = tmp_path / "archive"
    server = f"127.0.0.1:{srv.port}"
    rc, out, err = _cli("schema", "snapshot", "--from-server", server, "--to", str(archive),
                        "--source-name", "s1", "--database", "shop")
    assert rc == 0, err
    assert b"2 table(s) of 1 database(s), valid at mariadb-bin.000001:" in err
    assert b"stored: " in err and out == b""
    [uri] = list_snapshots(str(archive), "s1")
    stored = read_snapshot(uri)
    assert stored.position is not None and stored.position.file == "mariadb-bin.000001"
    # again, nothing changed: nothing written; also to a file and stdout
    rc, out, err = _cli("schema", "snapshot", "--from-server",
                        f"mysql://root@127.0.0.1:{srv.port}", "--to", str(archive),
                        "--source-name", "s1", "--database", "shop", "--out", "-")
    assert rc == 0, err
    assert b"identical to the newest stored snapshot" in err
    assert list_snapshots(str(archive), "s1") == [uri]
    assert parse_snapshot(out).schema_sha256() == stored.schema_sha256()
    snapfile = tmp_path / "snap.jsonl"
    rc, out, err = _cli("schema", "snapshot", "--from-server", str(srv.socket_path),
                        "--out", str(snapfile))
    assert rc == 0, err
    assert {v.db for v in parse_snapshot(snapfile.read_bytes()).versions} == {"shop"}
    # the binlog from here: the orders table gets a column; the history has the snapshot's
    # version of both tables and the ALTER applies to it
    srv.flush_binary_logs()
    srv.execute(["ALTER TABLE shop.orders ADD COLUMN later INT",
                 "INSERT INTO shop.items VALUES (1, 1, NULL, NULL)"])
    srv.flush_binary_logs()
    later = [str(f) for f in srv.closed_binlog_files()[1:]]
    rc, out, err = _cli("schema", "--snapshot", str(snapfile), *later)
    assert rc == 0, err
    rows = [json.loads(x) for x in out.splitlines()]
    versions = [r["version"] for r in rows if "version" in r]
    assert [(v["table"], v["change"]) for v in versions] == [
        ("items", "snapshot"), ("orders", "snapshot"), ("orders", "alter")]
    assert versions[2]["columns"][-1]["name"] == "later"
    assert not [r for r in rows if "finding" in r]  # the items Table_map agrees too
    # --from-file: mariadb-dump --no-data --master-data=2 gives the position (once the
    # Binlog_checkpoint event MariaDB writes after a rotation, in the background, is in)
    _settled_position(srv)
    dump = subprocess.run(["mariadb-dump", f"--socket={srv.socket_path}", "-uroot",
                           "--no-data", "--master-data=2", "--databases", "shop"],
                          capture_output=True, text=True, check=True).stdout
    dumpfile = tmp_path / "dump.sql"
    dumpfile.write_text(dump)
    rc, out, err = _cli("schema", "snapshot", "--from-file", str(dumpfile), "--to",
                        str(archive), "--source-name", "s1", "--out", "-")
    assert rc == 0, err
    from_dump = parse_snapshot(out)
    file, pos = srv.binlog_position()
    assert from_dump.position is not None and from_dump.position.file == file
    # (MariaDB may still append its Binlog_checkpoint event after the dump read the position)
    assert from_dump.position.pos in (pos, pos - 45) and from_dump.origin == "mysqldump"
    assert [v.table for v in from_dump.versions] == ["items", "orders"]
    assert len(list_snapshots(str(archive), "s1")) == 2  # the schema changed: stored
    # usage errors and a failing connection: one line, no traceback
    rc, _, err = _cli("schema", "snapshot", "--from-server", "h:x")
    assert rc == 2 and b"usage error" in err
    rc, _, err = _cli("schema", "snapshot")
    assert rc == 2 and b"--from-server DSN or --from-file" in err
    rc, _, err = _cli("schema", "--to", "x", "f.000001")
    assert rc == 2 and b"--to is an option of 'binlake schema snapshot'" in err
    rc, _, err = _cli("schema", "snapshot", "--from-server", "127.0.0.1:1")
    assert rc == 1 and err.startswith(b"binlake: error: cannot connect to 127.0.0.1:1")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"snapshot": 1, "position": null, "tables": 3}\n')
    rc, _, err = _cli("schema", "--snapshot", str(bad), *later)
    assert rc == 1 and b"truncated" in err and len(err.splitlines()) == 1


# -- the archive step ------------------------------------------------------------------------

@pytest.mark.integration
def test_archive_step_takes_a_snapshot_and_never_fails_for_it(
        fresh_mariadb: MariaDBServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    from binlake import orchestrate as O
    from binlake.config import load_settings

    srv = fresh_mariadb
    srv.execute(SCHEMA[:4])
    srv.flush_binary_logs()
    monkeypatch.setenv("BINLAKE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BINLAKE_SOURCE", "shop1")
    settings = load_settings()
    remote = {"host": "127.0.0.1", "port": srv.port, "user": "root", "password": ""}
    r1 = O.run_archive(settings, remote=remote)
    assert r1["archived"] and r1["schema_snapshot"]["ok"], r1["schema_snapshot"]
    assert r1["schema_snapshot"]["written"] and r1["schema_snapshot"]["tables"] == 2
    store = O.store_for(settings)
    uris = list_snapshots(source_uri(store, "shop1"))
    assert uris == [r1["schema_snapshot"]["uri"]]
    assert {v.table for v in read_snapshot(uris[0]).versions} == {"orders", "items"}
    json.dumps(r1)  # an XCom
    # every run takes one; unchanged: nothing written
    srv.execute("INSERT INTO shop.orders (amount) VALUES (2)")
    r2 = O.run_archive(settings, remote=remote)
    assert r2["schema_snapshot"]["ok"] and not r2["schema_snapshot"]["written"]
    assert list_snapshots(source_uri(store, "shop1")) == uris
    # a failed snapshot is a warning in the log and the result, the archive succeeds
    srv.flush_binary_logs()

    def broken(remote: dict[str, Any]) -> Any:
        raise ConnectionRefusedError("no route")

    with caplog.at_level("WARNING", logger="binlake.orchestrate"):
        r3 = O.run_archive(settings, remote=remote, connect=broken)
    assert r3["archived"] and not r3["schema_snapshot"]["ok"]
    assert "archive itself succeeded" in r3["schema_snapshot"]["warning"]
    assert "no route" in caplog.text
    # no server connection (a binlog directory): no snapshot
    monkeypatch.setenv("BINLAKE_ARCHIVE_SOURCE_DIR", str(srv.binlog_dir))
    assert "schema_snapshot" not in O.run_archive(load_settings())


_DAG_RUN = """
import json, sys
from airflow.dag_processing.dagbag import DagBag

bag = DagBag(dag_folder=sys.argv[1])
assert not bag.import_errors, bag.import_errors
dr = bag.dags["binlake_archive"].test()
print(json.dumps({"state": str(dr.state),
                  "tasks": {t.task_id: str(t.state) for t in dr.get_task_instances()}}))
"""


@pytest.mark.integration
@pytest.mark.slow
def test_archive_dag_stores_a_snapshot_through_the_source_connection(
        fresh_mariadb: MariaDBServer, tmp_path: Path) -> None:
    """dag.test() of binlake_archive (in a subprocess: a private AIRFLOW_HOME) with the
    source as an Airflow MySQL connection: each run archives and takes a snapshot; the
    second, with the schema unchanged, stores none."""
    import importlib.util
    import os
    import sys

    if importlib.util.find_spec("airflow") is None:
        pytest.skip("apache-airflow is not installed")
    srv = fresh_mariadb
    srv.execute(SCHEMA[:4])
    srv.flush_binary_logs()
    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "BINLAKE_"))}
    env.update({
        "AIRFLOW_HOME": str(tmp_path / "airflow"), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(root / "dags"),
        "AIRFLOW_CONN_BINLAKE_SOURCE": json.dumps(
            {"conn_type": "mysql", "host": "127.0.0.1", "port": srv.port, "login": "root",
             "password": ""}),
        "BINLAKE_HOME": str(tmp_path / "home"), "BINLAKE_SOURCE": "db1",
        "BINLAKE_ARCHIVE_URI": str(tmp_path / "archive"),
        "BINLAKE_AIRFLOW_SOURCE_CONN_ID": "binlake_source"})
    res = subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], env=env,
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr[-3000:]

    def run() -> dict[str, Any]:
        r = subprocess.run([sys.executable, "-c", _DAG_RUN, str(root / "dags")], env=env,
                           capture_output=True, text=True, check=False, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        out: dict[str, Any] = json.loads(r.stdout.strip().splitlines()[-1])
        return out

    first = run()
    assert first["tasks"] == {"archive": "success"}, first
    archived = LocalStore(tmp_path / "archive").list("db1")
    assert [o.name for o in archived] == [f.name for f in srv.closed_binlog_files()]
    snaps = list_snapshots(str(tmp_path / "archive"), "db1")
    assert len(snaps) == 1
    assert {v.table for v in read_snapshot(snaps[0]).versions} == {"orders", "items"}
    srv.execute("INSERT INTO shop.orders (amount) VALUES (3)")
    second = run()
    assert second["tasks"] == {"archive": "success"}, second
    assert list_snapshots(str(tmp_path / "archive"), "db1") == snaps
