"""``binlake decode`` end to end: the real console entry point run as a subprocess on real
binlogs from the shared corpus (read-only; damaged copies are made in tmp_path).

The checks follow the contract in docs/decode-format.md: the JSON Lines shape of event mode and
row mode, --start-position/--stop-position selecting exactly the events with pos in
[start, stop), exit codes 0/1/2, errors on stderr naming file and byte offset, no tracebacks.
Positions and header fields are checked against a header walk written here (independent of
binlake), event counts against the MANIFEST's own scanner.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import struct
import subprocess
import sys
import zlib
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from .corpus import CORPUS, corpus_files, require_corpus

REQUIRED = ("file", "pos", "next_pos", "type", "type_code", "timestamp", "server_id", "flags",
            "length")
ROW_KEYS = ("file", "pos", "row", "db", "table", "op", "before", "after", "gtid")
HEADER = struct.Struct("<IBIIIH")  # timestamp, type, server_id, event_size, log_pos, flags

MANIFEST_EVENTS = {f.rel: f.events for f in corpus_files()}

MYSQL8 = "libs/percona-binlog-server/data_80045_gtid/binlog.000001"  # 8.0.45, GTID, CRC32
MYSQL8_ENUM = "libs/rust_mysql_common/mysql-enum-string-set.000001"  # 8.0.28, FULL metadata
MYSQL8_NONAMES = "libs/percona-binlog-server/data_80045_gtid/binlog.000002"  # 8.0.45, no names
MYSQL57_ANON = "libs/mysql-binlog-connector-java/mysql-bin.checksum-crc32"  # anonymous GTIDs
MYSQL8_PAYLOAD = "mariadb-11.8/std_data/mdev35643_mysql_80_binlog.000001"  # TRX_PAYLOAD
MYSQL8_ROWS_QUERY = "libs/mysql-binlog-connector-rust/mysql-bin.000057"  # Rows_query in payload
MARIADB = "libs/rust_mysql_common/mariadb-bin.000001"  # 10.5, Annotate_rows, FULL metadata
MARIADB_BIG = "mariadb-11.8/std_data/mdev6020-mysql-bin.000001"  # 10.0, 7754 events, no CRC
MARIADB_118 = "libs/mariadb-poc/binlogs/domain_id_0/mariadb-repl-bin.000005"  # 11.8.5
MARIADB_55_NOCRC = "mariadb-11.8/std_data/mariadb-5.5-binlog.000001"  # binlog_checksum=OFF
TRUNCATED = "mysql-8.0/std_data/binlog_truncated_prev_gtid_event.000001"  # cut at byte 120
TRUNCATED_55 = "mysql-5.5/std_data/bug11747416_32228_binlog.000001"  # event at 316 cut short

EVENT_MODE_FILES = [MYSQL8, MYSQL8_ENUM, MARIADB, MARIADB_BIG, MARIADB_118]
MARIADB_FILES = {MARIADB, MARIADB_BIG, MARIADB_118}


@pytest.fixture(autouse=True)
def _corpus() -> None:
    require_corpus()


# --- helpers -------------------------------------------------------------------------------


def cpath(rel: str) -> Path:
    return CORPUS / rel


def run(*args: str | os.PathLike[str], env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "binlake.cli", *map(os.fspath, args)],
                          capture_output=True, timeout=120, env=env)


def parse(stdout: bytes) -> list[dict[str, Any]]:
    out = []
    for line in stdout.decode("utf-8").splitlines():
        obj = json.loads(line)
        assert isinstance(obj, dict), line[:200]
        out.append(obj)
    return out


@cache
def decoded(*args: str) -> tuple[int, tuple[str, ...], str]:
    """(exit code, stdout lines, stderr) of ``binlake decode *args``, cached per session."""
    p = run("decode", *args)
    return p.returncode, tuple(p.stdout.decode().splitlines()), p.stderr.decode()


def full(rel: str, *opts: str) -> list[dict[str, Any]]:
    rc, lines, err = decoded(*opts, str(cpath(rel)))
    assert rc == 0, err
    return [json.loads(x) for x in lines]


def no_traceback(p: subprocess.CompletedProcess[bytes]) -> None:
    assert b"Traceback" not in p.stderr, p.stderr.decode()[-2000:]
    assert b"Traceback" not in p.stdout


def walk_headers(data: bytes) -> list[tuple[int, tuple[int, ...]]]:
    """An independent header walk: (pos, header fields) of every event from offset 4."""
    assert data[:4] == b"\xfebin"
    out = []
    pos = 4
    while pos + HEADER.size <= len(data):
        h = HEADER.unpack_from(data, pos)
        out.append((pos, h))
        assert h[3] >= HEADER.size
        pos += h[3]
    assert pos == len(data), "walk did not end at the end of the file"
    return out


def rebuild(events: list[bytes]) -> bytes:
    """A binlog from event byte strings: log_pos (end position) rewritten and CRC32 recomputed
    for every event after the first (the FDE is kept as is). Only for CRC32 binlogs."""
    out = bytearray(b"\xfebin") + events[0]
    for ev in events[1:]:
        b = bytearray(ev)
        struct.pack_into("<I", b, 13, len(out) + len(b))
        struct.pack_into("<I", b, len(b) - 4, zlib.crc32(b[:-4]))
        out += b
    return bytes(out)


# --- event mode ----------------------------------------------------------------------------


@pytest.mark.parametrize("rel", EVENT_MODE_FILES)
def test_event_mode_shape_positions_and_count(rel: str) -> None:
    path = cpath(rel)
    p = run("decode", path)
    assert p.returncode == 0, p.stderr.decode()
    assert p.stderr == b""
    events = parse(p.stdout)
    for ev in events:
        missing = [k for k in REQUIRED if k not in ev]
        assert not missing, (missing, ev)
        assert ev["file"] == path.name
        assert "payload_index" not in ev
        assert "error" not in ev, ev
        for k in ("pos", "next_pos", "type_code", "timestamp", "server_id", "flags", "length"):
            assert isinstance(ev[k], int) and ev[k] >= 0, (k, ev)
        assert isinstance(ev["type"], str) and ev["type"]

    first = events[0]
    assert (first["pos"], first["type"], first["type_code"]) == (4, "FORMAT_DESCRIPTION", 15)
    assert first["flavor"] == ("mariadb" if rel in MARIADB_FILES else "mysql")
    assert ("MariaDB" in first["server_version"]) == (rel in MARIADB_FILES)

    positions = [ev["pos"] for ev in events]
    assert all(a < b for a, b in itertools.pairwise(positions)), "positions not increasing"
    for a, b in itertools.pairwise(events):
        assert a["pos"] + a["length"] == b["pos"], (a["pos"], a["length"], b["pos"])
    assert events[-1]["pos"] + events[-1]["length"] == path.stat().st_size
    # Non-relay binlogs: the header's log_pos is the end of the event (MariaDB 11.8 writes 0
    # for the events inside a transaction).
    assert all(ev["next_pos"] in (0, ev["pos"] + ev["length"]) for ev in events)

    assert MANIFEST_EVENTS[rel] is not None
    assert len(events) == MANIFEST_EVENTS[rel]


@pytest.mark.parametrize("rel", EVENT_MODE_FILES)
def test_event_mode_header_fields_match_raw_bytes(rel: str) -> None:
    """type_code, timestamp, server_id, length and next_pos are the common header's."""
    path = cpath(rel)
    walked = walk_headers(path.read_bytes())
    events = full(rel)
    assert [ev["pos"] for ev in events] == [pos for pos, _ in walked]
    for ev, (_pos, (ts, code, server_id, size, log_pos, _flags)) in zip(events, walked):
        assert (ev["timestamp"], ev["type_code"], ev["server_id"], ev["length"],
                ev["next_pos"]) == (ts, code, server_id, size, log_pos)


def test_event_mode_flags_is_the_common_header_flags() -> None:
    path = cpath(MARIADB)
    walked = dict(walk_headers(path.read_bytes()))
    wrong = [(ev["pos"], ev["type"], ev["flags"], walked[ev["pos"]][5]) for ev in full(MARIADB)
             if ev["flags"] != walked[ev["pos"]][5]]
    assert not wrong, wrong


def test_event_mode_transaction_payload_inner_events() -> None:
    """Inner events carry the payload's pos/next_pos and payload_index 0..n-1; the top-level
    events chain and match the MANIFEST count (which does not count inner events)."""
    events = full(MYSQL8_PAYLOAD)
    top = [ev for ev in events if "payload_index" not in ev]
    assert len(top) == MANIFEST_EVENTS[MYSQL8_PAYLOAD]
    for a, b in itertools.pairwise(top):
        assert a["pos"] + a["length"] == b["pos"]
    payloads = [ev for ev in top if ev["type"] == "TRANSACTION_PAYLOAD"]
    assert payloads
    for pl in payloads:
        inner = [ev for ev in events if "payload_index" in ev and ev["pos"] == pl["pos"]]
        assert [ev["payload_index"] for ev in inner] == list(range(len(inner)))
        assert inner and all(ev["next_pos"] == pl["next_pos"] for ev in inner)
        # They come right after their payload event, in order.
        i = events.index(pl)
        assert events[i + 1:i + 1 + len(inner)] == inner
    positions = [ev["pos"] for ev in events]
    assert positions == sorted(positions)


# --- row mode ------------------------------------------------------------------------------

OPS = {"WRITE": "insert", "UPDATE": "update", "DELETE": "delete"}


def _op_of_type(type_name: str) -> str | None:
    for word, op in OPS.items():
        if type_name.startswith((word, "PARTIAL_" + word, "PRE_GA_" + word)):
            return op
    return None


def check_rows_against_events(rel: str) -> list[dict[str, Any]]:
    """--rows output is the event mode's rows events unrolled: same order, `row` counting from
    0 in every event, op from the event type, before/after the event's images (null where the
    operation has none), db/table from the event."""
    rows = full(rel, "--rows")
    events = full(rel)
    expected = []
    for ev in events:
        if "rows" not in ev:
            continue
        op = _op_of_type(ev["type"])
        assert op is not None, ev["type"]
        for i, image in enumerate(ev["rows"]):
            expected.append({"file": ev["file"], "pos": ev["pos"], "row": i, "db": ev["db"],
                             "table": ev["table"], "op": op, "before": image.get("before"),
                             "after": image.get("after"),
                             "payload_index": ev.get("payload_index")})
    got = [{k: r.get(k) for k in ("file", "pos", "row", "db", "table", "op", "before", "after",
                                  "payload_index")} for r in rows]
    assert got == expected
    for r in rows:
        missing = [k for k in ROW_KEYS if k not in r]
        assert not missing, (missing, r)
        assert r["op"] in ("insert", "update", "delete")
        assert (r["before"] is None) == (r["op"] == "insert")
        assert (r["after"] is None) == (r["op"] == "delete")
    return rows


def gtid_before(events: list[dict[str, Any]], pos: int, payload_index: int | None) -> Any:
    """The gtid of the last GTID-type event before the event at (pos, payload_index)."""
    gtid = None
    for ev in events:
        if ev["pos"] == pos and ev.get("payload_index") == payload_index:
            return gtid
        if ev["type"] in ("GTID", "ANONYMOUS_GTID", "GTID_TAGGED", "MARIADB_GTID"):
            gtid = ev.get("gtid")
    raise AssertionError(f"no event at {pos}")


def test_rows_full_metadata_column_names_ops_and_gtid() -> None:
    rows = check_rows_against_events(MYSQL8_ENUM)
    assert {r["op"] for r in rows} == {"insert", "update", "delete"}
    events = full(MYSQL8_ENUM)
    names = {}
    for ev in events:
        if ev["type"] == "TABLE_MAP":
            names[(ev["db"], ev["table"])] = [c["name"] for c in ev["columns"]]
    for r in rows:
        for image in (r["before"], r["after"]):
            if image is not None:
                assert list(image) and all(not k.startswith("@") for k in image), image
                assert set(image) <= set(names[(r["db"], r["table"])])
        assert re.fullmatch(r"[0-9a-f-]{36}:\d+", r["gtid"]), r["gtid"]
        assert r["gtid"] == gtid_before(events, r["pos"], r.get("payload_index"))


def test_rows_mariadb_names_gtid_and_statement() -> None:
    rows = check_rows_against_events(MARIADB)
    events = full(MARIADB)
    annotate = [ev for ev in events if ev["type"] == "ANNOTATE_ROWS"]
    assert [r["gtid"] for r in rows] == ["0-1-1", "0-1-2"]
    assert [r["statement_pos"] for r in rows] == [ev["pos"] for ev in annotate]
    assert [r["statement"] for r in rows] == [ev["query"] for ev in annotate]
    assert all(list(r["after"]) == ["id", "topic", "event_type", "event", "created"]
               for r in rows)


@pytest.mark.parametrize("rel", [MYSQL8_NONAMES, MYSQL57_ANON, MARIADB_BIG])
def test_rows_without_names_use_positional_keys(rel: str) -> None:
    rows = check_rows_against_events(rel)
    events = full(rel)
    assert {r["op"] for r in rows} >= {"update", "delete"}
    for r in rows:
        for image in (r["before"], r["after"]):
            if image is not None:
                assert image and all(re.fullmatch(r"@[1-9]\d*", k) for k in image), image
    # The row index restarts at 0 in every rows event, and some event has several rows.
    per_event: dict[tuple[int, Any], list[int]] = {}
    for r in rows:
        per_event.setdefault((r["pos"], r.get("payload_index")), []).append(r["row"])
    assert all(idx == list(range(len(idx))) for idx in per_event.values())
    assert max(len(idx) for idx in per_event.values()) > 1
    # GTID of the group: real GTIDs in GTID files, null for anonymous ones.
    for r in rows[:200]:
        assert r["gtid"] == gtid_before(events, r["pos"], r.get("payload_index"))
    if rel == MYSQL57_ANON:
        assert all(r["gtid"] is None for r in rows)
    else:
        assert all(r["gtid"] for r in rows)


@pytest.mark.parametrize("rel", [MARIADB, MYSQL8_ROWS_QUERY,
                                 "libs/mysql-cdc-rs/events/5.7/32_delete_rows_v2/log.bin"])
def test_rows_statement_first_row_only_unless_every_row(rel: str) -> None:
    default = full(rel, "--rows")
    every = full(rel, "--rows", "--statement-every-row")
    assert len(default) == len(every)
    for d, e in zip(default, every):
        assert {k: v for k, v in d.items() if k != "statement"} == \
               {k: v for k, v in e.items() if k != "statement"}
        assert ("statement" in e) == ("statement_pos" in e)
        if "statement" in d:
            assert d["statement"] == e["statement"]
    statements = [ev for ev in full(rel) if ev["type"] in ("ANNOTATE_ROWS", "ROWS_QUERY")]
    assert statements
    # Every statement event here produced rows: its text is given exactly once by default.
    assert sorted(d["statement"] for d in default if "statement" in d) == \
           sorted(ev["query"] for ev in statements)


def test_rows_statement_spanning_two_rows_events(tmp_path: Path) -> None:
    """One statement logged as two rows events (the first without STMT_END_F): the statement
    text is on the first row change only, statement_pos on both, and `row` restarts at 0.
    Built from mariadb-bin.000001 by duplicating its first WRITE_ROWS_V1 event."""
    src = cpath(MARIADB).read_bytes()
    events = full(MARIADB)
    chunks = [src[ev["pos"]:ev["pos"] + ev["length"]] for ev in events]
    i = next(k for k, ev in enumerate(events) if ev["type"] == "WRITE_ROWS_V1")
    first = bytearray(chunks[i])
    flags_at = 19 + 6  # common header, table_id(6), flags(2)
    assert struct.unpack_from("<H", first, flags_at)[0] & 1  # STMT_END_F
    struct.pack_into("<H", first, flags_at, struct.unpack_from("<H", first, flags_at)[0] & ~1)
    chunks[i:i] = [bytes(first)]
    crafted = tmp_path / "mariadb-bin.000001"
    crafted.write_bytes(rebuild(chunks))

    p = run("decode", "--rows", crafted)
    assert p.returncode == 0, p.stderr.decode()
    rows = parse(p.stdout)
    ann = next(ev for ev in events if ev["type"] == "ANNOTATE_ROWS")
    assert len(rows) == 3
    assert [r["row"] for r in rows] == [0, 0, 0]
    assert rows[0]["pos"] != rows[1]["pos"]
    assert rows[0]["statement_pos"] == rows[1]["statement_pos"] == ann["pos"]
    assert rows[0]["statement"] == ann["query"]
    assert "statement" not in rows[1]
    assert "statement" in rows[2]  # the next transaction's own Annotate_rows
    p = run("decode", "--rows", "--statement-every-row", crafted)
    assert p.returncode == 0
    assert [r.get("statement") for r in parse(p.stdout)][:2] == [ann["query"]] * 2


# --- --start-position / --stop-position ----------------------------------------------------


def _select(events: list[dict[str, Any]], start: int | None, stop: int | None
            ) -> list[dict[str, Any]]:
    return [ev for ev in events
            if (start is None or ev["pos"] >= start) and (stop is None or ev["pos"] < stop)]


GROUP_START = ("GTID", "ANONYMOUS_GTID", "GTID_TAGGED", "MARIADB_GTID")


@pytest.mark.parametrize("rel", [MYSQL8, MARIADB_BIG, MYSQL8_PAYLOAD])
def test_start_stop_select_exactly_the_range(rel: str) -> None:
    """Starts at group boundaries (GTID events: a rows event needs the Table_map of its own
    group), stops anywhere."""
    events = full(rel)
    top = [ev["pos"] for ev in events if "payload_index" not in ev]
    groups = [ev["pos"] for ev in events if ev["type"] in GROUP_START]
    n, g = len(top), len(groups)
    size = cpath(rel).stat().st_size
    cases: list[tuple[int | None, int | None]] = [
        (4, None), (groups[0], None), (groups[g // 3], groups[2 * g // 3]),
        (groups[g // 2], groups[g // 2] + 1),  # a stop inside an event keeps that event
        (groups[1], top[n // 2] + 3),
        (None, top[n // 4]), (top[n - 1], None), (groups[2], groups[2]),  # empty range
        (groups[g // 5], size + 1000), (None, top[2] - 1), (4, 5),
    ]
    payloads = [ev["pos"] for ev in events if ev["type"] == "TRANSACTION_PAYLOAD"]
    if payloads:
        cases.append((groups[0], payloads[-1] + 1))
    for start, stop in cases:
        opts = []
        if start is not None:
            opts += ["--start-position", str(start)]
        if stop is not None:
            opts += ["--stop-position", str(stop)]
        p = run("decode", *opts, cpath(rel))
        assert p.returncode == 0, (start, stop, p.stderr.decode())
        assert parse(p.stdout) == _select(events, start, stop), (start, stop)


def test_start_at_a_rows_event_without_its_table_map() -> None:
    """An event boundary inside a group: the rows event cannot be decoded without its
    Table_map; it is printed with a missing_table_map error, the rest follows, exit 1."""
    rel = MARIADB_BIG
    events = full(rel)
    i = next(k for k, ev in enumerate(events) if k > len(events) // 2
             and ev["type"].startswith("DELETE_ROWS") and events[k - 1]["type"] == "TABLE_MAP")
    start = events[i]["pos"]
    stop = events[i + 6]["pos"]
    p = run("decode", "--start-position", str(start), "--stop-position", str(stop), cpath(rel))
    no_traceback(p)
    assert p.returncode == 1
    err = p.stderr.decode()
    assert "rows event for a table id with no Table_map before it" in err
    assert Path(rel).name in err
    got = parse(p.stdout)
    assert got[0]["pos"] == start and got[0]["error"]["kind"] == "missing_table_map"
    assert got[1:] == events[i + 1:i + 6]


@pytest.mark.parametrize("rel", [MYSQL8, MARIADB_BIG])
def test_start_stop_in_row_mode(rel: str) -> None:
    """Starting at a GTID event (a group boundary) gives the same row changes as the full
    decode restricted to [start, stop)."""
    events = full(rel)
    rows = full(rel, "--rows")
    gtids = [ev["pos"] for ev in events if ev["type"] in ("GTID", "MARIADB_GTID")]
    start, stop = gtids[len(gtids) // 3], gtids[2 * len(gtids) // 3]
    p = run("decode", "--rows", "--start-position", str(start), "--stop-position", str(stop),
            cpath(rel))
    assert p.returncode == 0, p.stderr.decode()
    got = parse(p.stdout)
    assert got and got == _select(rows, start, stop)


def test_start_not_an_event_boundary_is_an_error() -> None:
    """CRC32 file: a start in the middle of any event after the FDE ends in exit 1 with the
    error on stderr naming the file and that offset, and no traceback."""
    events = full(MYSQL8)
    path = cpath(MYSQL8)
    for ev in events[1::5]:
        for start in (ev["pos"] + 1, ev["pos"] + ev["length"] // 2):
            p = run("decode", "--start-position", str(start), path)
            no_traceback(p)
            err = p.stderr.decode()
            assert p.returncode == 1, (start, err, p.stdout[:300])
            assert f"binlake: error: {path} at byte {start}:" in err, (start, err)


@pytest.mark.parametrize("value", ["3", "0", "-1"])
def test_start_below_4_is_a_usage_error(value: str) -> None:
    p = run("decode", "--start-position", value, cpath(MARIADB))
    assert p.returncode == 2
    assert b"usage error" in p.stderr and b"--start-position" in p.stderr
    assert p.stdout == b""
    no_traceback(p)


def test_start_inside_the_fde_is_an_error() -> None:
    p = run("decode", "--start-position", "100", cpath(MARIADB))
    assert p.returncode == 1, p.stdout[:200]


def test_start_not_a_boundary_without_checksums_is_an_error() -> None:
    boundaries = {ev["pos"] for ev in full(MARIADB_55_NOCRC)}
    assert 359 not in boundaries
    p = run("decode", "--start-position", "359", cpath(MARIADB_55_NOCRC))
    assert p.returncode == 1, p.stdout.decode()[:300]


def test_start_past_end_of_file_is_an_error() -> None:
    p = run("decode", "--start-position", "5000", cpath(MARIADB))
    assert p.returncode == 1


@pytest.mark.parametrize("opts", [("--start-position", "4", "--stop-position", "4"),
                                  ("--stop-position", "1")])
def test_stop_at_or_before_the_fde_selects_nothing(opts: tuple[str, ...]) -> None:
    p = run("decode", *opts, cpath(MARIADB))
    assert p.returncode == 0
    assert p.stdout == b""


# --- exit codes and errors -----------------------------------------------------------------


def test_truncated_corpus_file() -> None:
    path = cpath(TRUNCATED)
    p = run("decode", path)
    no_traceback(p)
    assert p.returncode == 1
    assert p.stderr.decode().strip().splitlines() == [
        f"binlake: error: {path} at byte 120: file ends inside an event header "
        "(expected '19 header bytes', found 9)"]
    events = parse(p.stdout)
    assert [(ev["pos"], ev["type"]) for ev in events] == [(4, "FORMAT_DESCRIPTION")]


def test_truncated_event_body_keeps_the_events_before() -> None:
    path = cpath(TRUNCATED_55)
    p = run("decode", path)
    no_traceback(p)
    assert p.returncode == 1
    assert f"binlake: error: {path} at byte 316: file ends inside an event" in p.stderr.decode()
    events = parse(p.stdout)
    assert len(events) == 4 and events[-1]["pos"] + events[-1]["length"] == 316


@pytest.mark.parametrize("mode", [(), ("--rows",)])
def test_truncated_copy_writes_everything_before_the_cut(tmp_path: Path,
                                                         mode: tuple[str, ...]) -> None:
    events = full(MARIADB_BIG)
    cut_event = events[len(events) // 2]
    cut = cut_event["pos"] + cut_event["length"] // 2
    copy = tmp_path / Path(MARIADB_BIG).name
    copy.write_bytes(cpath(MARIADB_BIG).read_bytes()[:cut])
    p = run("decode", *mode, copy)
    no_traceback(p)
    assert p.returncode == 1
    assert f"{copy} at byte {cut_event['pos']}: file ends inside an event" in p.stderr.decode()
    expected = _select(full(MARIADB_BIG, *mode), None, cut_event["pos"])
    assert parse(p.stdout) == expected


def test_many_damaged_corpus_files_in_one_run() -> None:
    """Each damaged file gives one error line naming it and the byte offset; decoding goes on
    with the next file; nothing is a traceback."""
    expected = [
        ("mysql-8.0/std_data/binlog_no_fd_event.000001", 4, "no Format_description"),
        ("mysql-8.0/std_data/binlog_truncated_event.000001", 4, "file ends"),
        (TRUNCATED, 120, "file ends"),
        ("mysql-8.0/std_data/rpl_nogtid_encryption_master-bin.000002", 0, "encrypted"),
        (TRUNCATED_55, 316, "file ends"),
        ("libs/canal/tsdb/mysql-bin.000001", 0, "not a binlog"),
        ("libs/mysql-binlog-connector-rust/non-binlog", 0, "not a binlog"),
        ("mariadb-11.8/std_data/binlog_before_20574.bin", 296, "encrypted"),
        (MARIADB, None, None),
    ]
    p = run("decode", *(cpath(rel) for rel, _, _ in expected))
    no_traceback(p)
    assert p.returncode == 1
    errors = p.stderr.decode().splitlines()
    want = [(rel, off, what) for rel, off, what in expected if off is not None]
    assert len(errors) == len(want), errors
    for line, (rel, off, what) in zip(errors, want):
        assert line.startswith(f"binlake: error: {cpath(rel)} at byte {off}: "), line
        assert what in line, line
    lines = parse(p.stdout)
    assert [ev for ev in lines if ev["file"] == Path(MARIADB).name] == full(MARIADB)


@pytest.mark.parametrize("broken_first", [True, False])
def test_one_broken_file_of_two(broken_first: bool) -> None:
    broken, clean = cpath(TRUNCATED), cpath(MARIADB)
    files = [broken, clean] if broken_first else [clean, broken]
    p = run("decode", *files)
    no_traceback(p)
    assert p.returncode == 1
    err = p.stderr.decode().splitlines()
    assert len(err) == 1 and err[0].startswith(f"binlake: error: {broken} at byte 120:")
    lines = parse(p.stdout)
    assert [ev for ev in lines if ev["file"] == clean.name] == full(MARIADB)
    assert [ev["pos"] for ev in lines if ev["file"] == broken.name] == [4]
    # Output is in argument order.
    names = [ev["file"] for ev in lines]
    assert names == sorted(names, key=[f.name for f in files].index)


def test_two_clean_files_exit_0() -> None:
    p = run("decode", cpath(MYSQL8), cpath(MYSQL8_NONAMES))
    assert p.returncode == 0 and p.stderr == b""
    assert parse(p.stdout) == full(MYSQL8) + full(MYSQL8_NONAMES)


@pytest.mark.parametrize("argv", [
    ("decode", "--bogus", "x.000001"),
    ("decode",),
    ("decode", "--rows"),
    (),
    ("frobnicate", "x"),
    ("decode", "--start-position", "abc", "x.000001"),
])
def test_usage_errors_exit_2(argv: tuple[str, ...]) -> None:
    p = subprocess.run([sys.executable, "-m", "binlake.cli", *argv], capture_output=True,
                       timeout=60)
    assert p.returncode == 2, p.stderr.decode()
    assert b"usage" in p.stderr
    assert p.stdout == b""
    no_traceback(p)


def test_missing_file_argument_message() -> None:
    p = run("decode")
    assert p.returncode == 2
    assert b"binlake: usage error: the following arguments are required: FILE" in p.stderr


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_unreadable_path_exit_1(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "nope.000001"
    if kind == "directory":
        path.mkdir()
    p = run("decode", path)
    no_traceback(p)
    assert p.returncode == 1
    assert p.stdout == b""
    err = p.stderr.decode()
    assert err.startswith(f"binlake: error: {path}: cannot open: "), err
    assert len(err.strip().splitlines()) == 1


def _corrupted_copy(tmp_path: Path) -> tuple[Path, dict[str, Any], bytes]:
    """MYSQL8 with one byte of the CREATE TABLE text flipped ('C' -> 'c'): the CRC32 no longer
    matches but the event still decodes."""
    events = full(MYSQL8)
    q = next(ev for ev in events if ev["type"] == "QUERY" and ev["query"].startswith("CREATE"))
    data = bytearray(cpath(MYSQL8).read_bytes())
    text_at = q["pos"] + q["length"] - 4 - len(q["query"].encode())
    assert data[text_at:text_at + 6] == b"CREATE"
    data[text_at] ^= 0x20
    copy = tmp_path / Path(MYSQL8).name
    copy.write_bytes(bytes(data))
    return copy, q, bytes(data)


def test_checksum_mismatch_exit_1_and_names_the_event(tmp_path: Path) -> None:
    copy, q, _ = _corrupted_copy(tmp_path)
    p = run("decode", copy)
    no_traceback(p)
    assert p.returncode == 1
    err = p.stderr.decode().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"binlake: error: {copy} at byte {q['pos']}: event checksum "
                             "mismatch"), err
    events = parse(p.stdout)
    assert len(events) == len(full(MYSQL8))  # the reader went on after the bad event
    bad = [ev for ev in events if "error" in ev]
    assert [ev["pos"] for ev in bad] == [q["pos"]]
    assert bad[0]["error"]["kind"] == "checksum"
    assert bad[0]["error"]["error"] == "ChecksumError"
    assert bad[0]["error"]["offset"] == q["pos"]
    assert bad[0]["error"]["file"] == str(copy)
    # --rows goes through the same reader: same error and exit status.
    p = run("decode", "--rows", copy)
    assert p.returncode == 1 and f"at byte {q['pos']}" in p.stderr.decode()
    assert parse(p.stdout) == full(MYSQL8, "--rows")


def test_no_verify_skips_checksums(tmp_path: Path) -> None:
    copy, q, _ = _corrupted_copy(tmp_path)
    p = run("decode", "--no-verify", copy)
    assert p.returncode == 0, p.stderr.decode()
    assert p.stderr == b""
    events = parse(p.stdout)
    reference = full(MYSQL8)
    assert len(events) == len(reference)
    changed = [(a, b) for a, b in zip(events, reference) if a != b]
    assert len(changed) == 1
    got, ref = changed[0]
    assert got["pos"] == q["pos"] and "error" not in got
    assert got["query"] == "c" + ref["query"][1:]


def test_not_a_binlog_exit_1(tmp_path: Path) -> None:
    junk = tmp_path / "junk.000001"
    junk.write_bytes(b"hello, this is not a binlog\n" * 10)
    p = run("decode", junk)
    no_traceback(p)
    assert p.returncode == 1
    assert f"binlake: error: {junk} at byte 0: not a binlog file: bad magic" in \
        p.stderr.decode()


# --- stdout closed early -------------------------------------------------------------------


@pytest.mark.parametrize("mode", [(), ("--rows",)])
def test_stdout_closed_early_no_traceback(mode: tuple[str, ...]) -> None:
    """`binlake decode big | head -1`: the reader goes away; binlake stops quietly."""
    proc = subprocess.Popen([sys.executable, "-m", "binlake.cli", "decode", *mode,
                             cpath(MARIADB_BIG), cpath(MARIADB_BIG)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    rc = proc.wait(timeout=60)
    proc.stderr.close()
    assert json.loads(first)["file"] == Path(MARIADB_BIG).name
    assert b"Traceback" not in err and b"BrokenPipe" not in err, err.decode()[-2000:]
    assert err == b""
    assert rc == 0


def test_head_pipeline_through_shell() -> None:
    script = (f"set -o pipefail; {sys.executable} -m binlake.cli decode "
              f"'{cpath(MARIADB_BIG)}' | head -1")
    p = subprocess.run(["bash", "-c", script], capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    assert p.stderr == b""
    assert json.loads(p.stdout)["pos"] == 4


# --- the installed console script ----------------------------------------------------------


def test_console_script_matches_module() -> None:
    script = Path(sys.executable).with_name("binlake")
    if not script.exists():
        pytest.skip("no binlake console script next to the interpreter")
    p = subprocess.run([script, "decode", "--rows", cpath(MARIADB)], capture_output=True,
                       timeout=60)
    assert p.returncode == 0
    assert parse(p.stdout) == full(MARIADB, "--rows")
    v = subprocess.run([script, "--version"], capture_output=True, timeout=60)
    assert v.returncode == 0 and v.stdout.startswith(b"binlake ")
