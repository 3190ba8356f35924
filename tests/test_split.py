"""``binlake.txn.split``: transaction-aligned byte ranges that decode independently.

Real files only: every binlog of the shared corpus (read-only; edited copies are made in
tmp_path) and a file written by a private MariaDB server.  For each file the ranges must

* cover ``[first event after the FDE, end of file)`` with no gap or overlap;
* each decode on its own (``BinlogReader(uri, start=r.start, stop=r.end)``) without an error
  the whole-file decode does not have (no MissingTableMapError, no "not an event boundary");
* concatenated, give exactly the events of one whole-file decode (the FDE, which every range
  reads but none yields, aside) -- ``(pos, type, payload_index, data, error)`` of each -- and
  the same row changes (``iter_row_changes``);
* start at group starts only: the GTID events of a GTID file (the reference list comes from
  the whole-file decode, not from the splitter).

For MySQL 8 files the transaction_length fast path must read nothing but the file header, the
GTID events and the events between groups (never an event inside a transaction), and find the
same split points as the header scan; a copy with one GTID's transaction_length edited (CRC32
recomputed) must still split correctly.
"""

from __future__ import annotations

import gzip
import itertools
import os
import shutil
import struct
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import zstandard

from binlake.binlog.constants import EventType as E
from binlake.binlog.errors import BinlogError
from binlake.binlog.event import Event
from binlake.binlog.reader import BinlogReader
from binlake.binlog.rowchanges import iter_row_changes
from binlake.txn import scan as scan_mod
from binlake.txn import scaninput
from binlake.txn import split as split_mod
from binlake.txn.split import ByteRange, ScanStats, split_file, transaction_starts

from .corpus import CORPUS, corpus_files, require_corpus
from .s3 import moto_s3

GTID_TYPES = frozenset({E.GTID, E.ANONYMOUS_GTID, E.GTID_TAGGED, E.MARIADB_GTID})
MYSQL_GTID_TYPES = frozenset({E.GTID, E.ANONYMOUS_GTID, E.GTID_TAGGED})
# Events that sit between groups (a transaction_length jump may land on them).
BETWEEN = frozenset({E.ROTATE, E.STOP, E.INCIDENT, E.HEARTBEAT, E.HEARTBEAT_V2,
                     E.PREVIOUS_GTIDS, E.FORMAT_DESCRIPTION, E.MARIADB_GTID_LIST,
                     E.BINLOG_CHECKPOINT})

MYSQL8 = "libs/percona-binlog-server/data_80045_gtid/binlog.000001"  # 8.0.45, GTID, CRC32
MYSQL8_ANON = "libs/percona-binlog-server/data_80045_position/binlog.000001"  # anonymous
MYSQL8_PAYLOAD = "mariadb-11.8/std_data/mdev35643_mysql_80_binlog.000001"  # TRX_PAYLOAD
MYSQL8_ROWS_QUERY = "libs/mysql-binlog-connector-rust/mysql-bin.000057"  # payload, 8.0.31
MYSQL8_BIGGER = "libs/mysql-cdc-rs/events/8.0/02_query_bigger/binlog.000733"  # 11 groups
MYSQL9_TAGGED = "libs/rust_mysql_common/binlog_transaction_with_GTID_TAG.000001"
# MySQL 8.0.2+ files whose transaction_length values are all right: the fast path covers them.
FAST_PATH_FILES = [
    MYSQL8, MYSQL8_ANON,
    "libs/percona-binlog-server/data_80045_gtid/binlog.000002",
    MYSQL8_PAYLOAD, MYSQL8_ROWS_QUERY, MYSQL8_BIGGER, MYSQL9_TAGGED,
    "libs/mysql-binlog-connector-java/mysql-bin.compressed",
    "libs/rust_mysql_common/transaction_compression.000001",
    "libs/rust_mysql_common/json.binlog.000001",
    "libs/rust_mysql_common/vector.binlog",
    "libs/mysql-cdc-rs/events/8.0/32_delete_rows_v2/binlog.000001",
    "mysql-8.0/std_data/replicated-bin.000001",
    "mysql-8.0/std_data/rpl_binlog_with_gipk_info_full_metadata.000001",
    "mariadb-11.8/std_data/rpl/mysql-8.0.13-stm-temporal-round-binlog.000001",
]
# MySQL 8.0.30 files hand-edited for crash-recovery tests (events removed, GTIDs kept): their
# transaction_length values are wrong, and the splitter must notice and fall back.
EDITED_BY_MYSQL = [
    "mysql-8.0/std_data/binlog_recovery/orphan_commit.000001",
    "mysql-8.0/std_data/binlog_recovery/orphan_xa_prepare.000001",
    "mysql-8.0/std_data/binlog_recovery/orphan_xid.000001",
]
MYSQL57_ANON = "libs/mysql-binlog-connector-java/mysql-bin.checksum-crc32"
MYSQL51 = "mysql-8.0/suite/binlog/std_data/ver_5_1_23.001"  # rows without BEGIN, LOAD DATA
MYSQL50_RELAY = "mysql-8.0/std_data/bug33029-slave-relay-bin.000001"  # Intvar, 2 FDEs
MARIADB_BIG = "mariadb-11.8/std_data/mdev6020-mysql-bin.000001"  # 10.0, 1381 groups, no CRC
MARIADB_118 = "libs/mariadb-poc/binlogs/domain_id_0/mariadb-repl-bin.000002"  # 3.7 MB
SAKILA_GZ = "libs/mysql-binlog-connector-java/mysql-bin.sakila.gz"  # 5.5, gzip, no GTIDs
BAD_CRC = "mysql-8.0/std_data/binlog_recovery/duplicate_xid.000001"  # one event, CRC not fixed

CORPUS_FILES = corpus_files()


@pytest.fixture(autouse=True)
def _corpus() -> None:
    require_corpus()


def cpath(rel: str) -> str:
    return str(CORPUS / rel)


# -- decoding and checking ---------------------------------------------------------------------


@dataclass
class Decoded:
    events: list[Event]
    error: tuple[str, int | None] | None  # the error that ended the decode, if any


def decode(uri: str, start: int | None = None, stop: int | None = None) -> Decoded:
    events: list[Event] = []
    try:
        for ev in BinlogReader(uri, start=start, stop=stop):
            events.append(ev)
    except BinlogError as exc:
        return Decoded(events, (type(exc).__name__, exc.offset))
    return Decoded(events, None)


def key(ev: Event) -> tuple[Any, ...]:
    err = None if ev.error is None else (type(ev.error).__name__, ev.error.offset)
    return (ev.pos, ev.type_code, ev.payload_index, ev.data, err)


def uncompressed_size(uri: str) -> int:
    data = Path(uri).read_bytes()
    if data[:2] == b"\x1f\x8b":
        return len(gzip.decompress(data))
    if data[:4] == b"\x28\xb5\x2f\xfd":
        return len(zstandard.ZstdDecompressor().decompressobj().decompress(data))
    return len(data)


def check_ranges(uri: str, ranges: list[ByteRange], size: int, whole: Decoded | None = None
                 ) -> Decoded:
    """The ranges tile the file and decode, one by one, to exactly the whole-file decode."""
    whole = whole or decode(uri)
    fde = whole.events[0]
    assert fde.pos == 4 and fde.type_code in (E.FORMAT_DESCRIPTION, E.START_V3)
    assert ranges, "at least one range"
    assert ranges[0].start == fde.end_pos, "range 0 starts at the first event after the FDE"
    for a, b in itertools.pairwise(ranges):
        assert a.end == b.start, f"gap or overlap between {a} and {b}"
    assert ranges[-1].end == size
    assert all(r.uri == uri and r.start <= r.first_event <= r.end for r in ranges)
    starts = set(transaction_starts(uri))
    whole_errors = {(ev.pos, type(ev.error)) for ev in whole.events if ev.error is not None}
    concatenated: list[Event] = []
    rows: list[dict[str, Any]] = []
    error = None
    for n, r in enumerate(ranges):
        part = decode(uri, r.start, r.end)
        if part.error is not None:
            # Only the damage the whole file has, in the range that holds it.
            assert n == len(ranges) - 1 and part.error == whole.error, (r, part.error)
            error = part.error
        # No event error the whole-file decode does not have (MissingTableMapError, ...).
        assert {(ev.pos, type(ev.error)) for ev in part.events
                if ev.error is not None} <= whole_errors, r
        concatenated.extend(part.events)
        rows.extend(iter_row_changes(part.events))
        top = [ev for ev in part.events if ev.payload_index is None]
        if r.events is not None:
            assert r.events == len(top), r
        in_range = sorted(s for s in starts if r.start <= s < r.end)
        assert r.transactions == len(in_range), r
        assert r.first_event == (in_range[0] if in_range else r.end), r
    assert [key(ev) for ev in concatenated] == [key(ev) for ev in whole.events[1:]]
    assert error == whole.error
    assert rows == list(iter_row_changes(whole.events))
    return whole


def gtid_positions(whole: Decoded) -> list[int]:
    """The reference split points of a GTID file: its GTID events (that the reader accepts as
    a start: whole and with a valid checksum)."""
    return [ev.pos for ev in whole.events
            if ev.type_code in GTID_TYPES and ev.payload_index is None and ev.error is None]


# -- the corpus ------------------------------------------------------------------------------


@pytest.mark.parametrize("cf", CORPUS_FILES, ids=[f.rel for f in CORPUS_FILES])
def test_corpus_file_splits_into_independent_ranges(cf: Any) -> None:
    uri = str(cf.path)
    whole = decode(uri)
    if not whole.events:  # not a binlog, encrypted, no FDE, cut inside the FDE
        assert whole.error is not None
        with pytest.raises(BinlogError) as info:
            split_file(uri)
        assert (type(info.value).__name__, info.value.offset) == whole.error
        return
    size = uncompressed_size(uri)
    # One range per group: the hardest split of the file.
    stats = ScanStats()
    one_each = split_file(uri, target_bytes=1, min_bytes=0, stats=stats)
    check_ranges(uri, one_each, size, whole)
    assert stats.end == size
    if any(ev.type_code in GTID_TYPES for ev in whole.events) and stats.stopped_at is None:
        assert list(transaction_starts(uri)) == gtid_positions(whole)
    # About three ranges.
    third = max(1, (size - one_each[0].start) // 3)
    check_ranges(uri, split_file(uri, target_bytes=third, min_bytes=0), size, whole)
    # The default target: one range for these small files.
    (only,) = split_file(uri)
    assert (only.start, only.end) == (one_each[0].start, size)


@pytest.mark.parametrize("rel", [MYSQL57_ANON, MYSQL51, MYSQL50_RELAY, SAKILA_GZ,
                                 "mysql-8.0/std_data/bug27213339-bin.000001"])
def test_gtid_less_and_old_files_split_at_wl4162_boundaries(rel: str) -> None:
    whole = decode(cpath(rel))
    starts = list(transaction_starts(cpath(rel)))
    assert starts == sorted(set(starts)) and len(starts) > 2
    by_pos = {ev.pos: ev for ev in whole.events if ev.payload_index is None}
    for s in starts:
        ev = by_pos[s]
        if ev.type_code == E.QUERY:
            q = ev.data["query"].strip().upper()
            assert q not in ("COMMIT", "ROLLBACK"), f"a group cannot start at {q} ({s})"
        else:
            assert ev.type_code in GTID_TYPES | {E.INTVAR, E.RAND, E.USER_VAR, E.TABLE_MAP,
                                                 E.BEGIN_LOAD_QUERY}, (s, ev.type)
    # Every BEGIN outside GTID groups is a split point; no point falls between BEGIN and the
    # COMMIT/XID that ends it.
    open_at = None
    for ev in whole.events:
        if ev.type_code == E.QUERY and ev.data["query"] == "BEGIN":
            if not any(g.type_code in GTID_TYPES for g in whole.events):
                assert ev.pos in starts
            open_at = ev.pos
        elif ev.type_code == E.XID or (ev.type_code == E.QUERY
                                       and ev.data["query"] in ("COMMIT", "ROLLBACK")):
            if open_at is not None:
                assert not [s for s in starts if open_at < s <= ev.pos], (open_at, ev.pos)
            open_at = None


def test_statements_with_intvar_rand_user_var_start_at_the_first_pre_statement_event() -> None:
    starts = list(transaction_starts(cpath(MYSQL51)))
    # ver_5_1_23.001: CREATE x3, three rows statements on MyISAM without BEGIN (Table_map +
    # rows with STMT_END_F), BEGIN..XID, User_var+INSERT, Rand+INSERT, Intvar+INSERT, and a
    # LOAD DATA (Begin_load_query, Append_block, Execute_load_query).
    assert starts == [106, 220, 334, 425, 516, 626, 708, 1044, 1183, 1331, 1480]


def test_relay_log_with_two_fdes_splits_after_the_master_fde() -> None:
    whole = decode(cpath(MYSQL50_RELAY))
    fdes = [ev.pos for ev in whole.events if ev.type_code == E.FORMAT_DESCRIPTION]
    assert len(fdes) == 2
    ranges = split_file(cpath(MYSQL50_RELAY), target_bytes=1, min_bytes=0)
    assert ranges[0].start < fdes[1] < ranges[0].end  # the master's FDE: in range 0
    assert len(ranges) > 20


# -- the transaction_length fast path ----------------------------------------------------------


def spans(whole: Decoded) -> list[tuple[int, int, int]]:
    return [(ev.pos, ev.pos + ev.length, ev.type_code) for ev in whole.events
            if ev.payload_index is None]


def touched_types(reads: list[tuple[int, int]], whole: Decoded) -> set[int]:
    """Type codes of the events (or the file header, -1) whose bytes the reads touched."""
    out: set[int] = set()
    evs = spans(whole)
    for off, length in reads:
        end = off + length
        if off < evs[0][1]:
            out.add(-1)  # magic + FDE
        out.update(t for s, e, t in evs if s < end and off < e)
    return out


def only_gtids_and_between(spans_: list[tuple[int, int]], whole: Decoded) -> None:
    """The byte ranges lie in the file header (magic, FDE, the events before the first GTID),
    in GTID events or in events between groups: never in an event inside a transaction."""
    first_gtid = min(ev.pos for ev in whole.events if ev.type_code in MYSQL_GTID_TYPES)
    head = [(o, n) for o, n in spans_ if o < first_gtid]
    rest = [(o, n) for o, n in spans_ if o >= first_gtid]
    assert all(o + n <= first_gtid for o, n in head)
    assert touched_types(rest, whole) <= MYSQL_GTID_TYPES | BETWEEN


@pytest.mark.parametrize("rel", FAST_PATH_FILES)
def test_fast_path_examines_only_gtid_events(rel: str, monkeypatch: pytest.MonkeyPatch) -> None:
    uri = cpath(rel)
    whole = decode(uri)
    gtids = [ev for ev in whole.events if ev.type_code in MYSQL_GTID_TYPES]
    assert gtids and all(ev.data["transaction_length"] for ev in gtids)
    stats = ScanStats(record=True)
    starts = list(transaction_starts(uri, stats=stats))
    assert stats.fast_path and stats.fallback_at is None and stats.stopped_at is None
    assert stats.gtids == len(gtids) and stats.jumps == len(gtids)
    only_gtids_and_between(stats.examined, whole)
    # With no read-ahead and no reading through short gaps, it reads nothing else either.
    monkeypatch.setattr(scan_mod, "JUMP_READ", 0)
    monkeypatch.setattr(scaninput, "READ_THROUGH", 0)
    exact = ScanStats(record=True)
    assert list(transaction_starts(uri, stats=exact)) == starts
    only_gtids_and_between(exact.reads, whole)
    inside = sum(ev.length for ev in whole.events if ev.payload_index is None
                 and ev.pos > gtids[0].pos and ev.type_code not in GTID_TYPES | BETWEEN)
    assert exact.bytes_read + inside <= os.path.getsize(uri)
    assert exact.bytes_skipped >= inside and exact.bytes_read_through == 0
    # The same split points as the header scan, and as the GTID events themselves.
    assert starts == gtid_positions(whole)
    monkeypatch.setattr(scan_mod, "USE_TRANSACTION_LENGTH", False)
    slow = ScanStats()
    assert list(transaction_starts(uri, stats=slow)) == starts
    assert slow.jumps == 0 and not slow.fast_path
    # Ranges from either scan are the same (the fast path does not count the events it
    # jumped over).
    scanned = split_file(uri, target_bytes=1, min_bytes=0)
    monkeypatch.setattr(scan_mod, "USE_TRANSACTION_LENGTH", True)
    fast = split_file(uri, target_bytes=1, min_bytes=0)
    assert [(r.start, r.end, r.transactions) for r in fast] == [
        (r.start, r.end, r.transactions) for r in scanned]
    assert all(r.events is not None for r in scanned)


@pytest.mark.parametrize("rel", EDITED_BY_MYSQL)
def test_wrong_transaction_length_in_real_files_falls_back(rel: str) -> None:
    uri = cpath(rel)
    stats = ScanStats()
    ranges = split_file(uri, target_bytes=1, min_bytes=0, stats=stats)
    assert stats.fallback_at is not None and "transaction_length" in (stats.fallback_reason or "")
    whole = check_ranges(uri, ranges, os.path.getsize(uri))
    assert list(transaction_starts(uri)) == gtid_positions(whole)


def _transaction_length_field(event: bytes) -> tuple[int, int, int]:
    """(offset in the event, width, value) of a MySQL GTID event's transaction_length."""
    at = 19 + 1 + 16 + 8  # header, flags, sid, gno
    assert event[at] == 2  # logical timestamps follow
    at += 1 + 8 + 8
    ts = int.from_bytes(event[at:at + 7], "little")
    at += 14 if ts & (1 << 55) else 7
    first = event[at]
    if first < 251:
        return at, 1, first
    width = {0xFC: 2, 0xFD: 3, 0xFE: 8}[first]
    return at, 1 + width, int.from_bytes(event[at + 1:at + 1 + width], "little")


def edit_transaction_length(src: str, dst: Path, gtid_pos: int,
                            new: Callable[[int], int]) -> tuple[int, int]:
    """Copy ``src`` to ``dst`` with the transaction_length of the GTID at ``gtid_pos`` replaced
    (same encoded width) and that event's CRC32 recomputed; return (old, new) values."""
    data = bytearray(Path(src).read_bytes())
    size = struct.unpack_from("<I", data, gtid_pos + 9)[0]
    event = data[gtid_pos:gtid_pos + size]
    at, width, old = _transaction_length_field(bytes(event))
    value = new(old)
    if width == 1:
        assert value < 251
        event[at] = value
    else:
        assert value < 1 << (8 * (width - 1))
        event[at + 1:at + width] = value.to_bytes(width - 1, "little")
    struct.pack_into("<I", event, size - 4, zlib.crc32(bytes(event[:-4])))
    data[gtid_pos:gtid_pos + size] = event
    dst.write_bytes(bytes(data))
    return old, value


def _edits(whole: Decoded) -> dict[str, Callable[[int], int]]:
    gtids = [ev for ev in whole.events if ev.type_code in MYSQL_GTID_TYPES]
    last_event = max((ev for ev in whole.events if ev.pos < gtids[2].pos), key=lambda e: e.pos)
    return {
        "one_byte_short": lambda n: n - 1,  # lands inside the last event: no valid CRC32
        "one_byte_long": lambda n: n + 1,
        # Lands exactly on the last event of the transaction (the XID): a valid event,
        # checksum and all, but not one that can follow a group.
        "one_event_short": lambda n: n - last_event.length,
        "past_the_end": lambda n: n + 60000,
        # Two groups long: lands on the next group's successor, a real GTID: accepted, so one
        # split point is missed, but no group is cut.
        "two_groups": lambda n: n + gtids[2].data["transaction_length"],
    }


@pytest.mark.parametrize("edit", ["one_byte_short", "one_byte_long", "one_event_short",
                                  "past_the_end", "two_groups"])
def test_edited_transaction_length_still_splits_correctly(tmp_path: Path, edit: str) -> None:
    orig = decode(cpath(MYSQL8))
    gtids = [ev for ev in orig.events if ev.type_code in MYSQL_GTID_TYPES]
    assert len(gtids) >= 4
    copy = tmp_path / "binlog.000001"
    old, new = edit_transaction_length(cpath(MYSQL8), copy, gtids[1].pos, _edits(orig)[edit])
    assert old != new
    whole = decode(str(copy))
    assert all(ev.error is None for ev in whole.events)  # the CRC32 was recomputed
    stats = ScanStats(record=True)
    starts = list(transaction_starts(str(copy), stats=stats))
    expected = gtid_positions(whole)
    if edit == "two_groups":
        assert stats.fallback_at is None
        assert starts == [p for p in expected if p != gtids[2].pos]
    else:
        assert stats.fallback_at == gtids[1].pos
        assert f"transaction_length {new} " in (stats.fallback_reason or "")
        assert starts == expected
    ranges = split_file(str(copy), target_bytes=1, min_bytes=0)
    check_ranges(str(copy), ranges, copy.stat().st_size, whole)


def test_fast_path_seeks_over_the_transaction_bodies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without read-ahead the fast path reads one GTID event per transaction (in two reads:
    header, rest) and seeks over everything else."""
    monkeypatch.setattr(scan_mod, "JUMP_READ", 0)
    monkeypatch.setattr(scaninput, "READ_THROUGH", 0)
    uri = cpath(MYSQL8_BIGGER)
    whole = decode(uri)
    gtid_bytes = sum(ev.length for ev in whole.events if ev.type_code in MYSQL_GTID_TYPES)
    stats = ScanStats(record=True)
    list(transaction_starts(uri, stats=stats))
    assert stats.jumps == stats.gtids == 11
    first_gtid = min(ev.pos for ev in whole.events if ev.type_code in MYSQL_GTID_TYPES)
    assert stats.bytes_read - first_gtid <= gtid_bytes  # the file header, then GTIDs only
    assert stats.bytes_read + stats.bytes_skipped == os.path.getsize(uri)
    assert stats.read_calls <= 4 + 2 * stats.gtids  # FDE, header events, GTIDs


# -- packing ------------------------------------------------------------------------------------


def _group_ends(starts: list[int], end: int) -> dict[int, int]:
    return dict(zip(starts, [*starts[1:], end]))


@pytest.mark.parametrize("rel", [MARIADB_BIG, MARIADB_118])
@pytest.mark.parametrize("target", [4096, 65536, 300_000])
def test_packing_fills_ranges_up_to_target(rel: str, target: int) -> None:
    uri = cpath(rel)
    size = os.path.getsize(uri)
    starts = list(transaction_starts(uri))
    ends = _group_ends(starts, size)
    ranges = split_file(uri, target_bytes=target, min_bytes=0)
    for a, b in itertools.pairwise(ranges):
        # Never more than target unless a single group is larger ...
        assert a.size <= target or a.transactions == 1, a
        # ... and cut at the last group start that keeps it within target: the next group
        # would not have fit.
        assert ends[b.start] - a.start > target, (a, b)
    assert sum(r.transactions for r in ranges) == len(starts)


@pytest.mark.parametrize("min_bytes", [1, 20_000, 200_000])
def test_min_bytes_merges_short_ranges(min_bytes: int) -> None:
    uri = cpath(MARIADB_BIG)
    size = os.path.getsize(uri)
    ranges = split_file(uri, target_bytes=50_000, min_bytes=min_bytes)
    assert len(ranges) == 1 or all(r.size >= min_bytes for r in ranges)
    check_ranges(uri, ranges, size)


def test_a_group_larger_than_target_stays_whole() -> None:
    uri = cpath(MYSQL51)  # a 131 KB + 17 KB LOAD DATA group at 1480
    ranges = split_file(uri, target_bytes=1000, min_bytes=0)
    load = [r for r in ranges if r.start == 1480]
    assert len(load) == 1 and load[0].end == os.path.getsize(uri) and load[0].size > 1000


def test_default_target_gives_one_range_for_a_small_file() -> None:
    uri = cpath(MARIADB_118)
    (only,) = split_file(uri)
    whole = decode(uri)
    assert only.start == whole.events[1].pos and only.end == os.path.getsize(uri)
    assert only.events == len(whole.events) - 1
    assert only.transactions == len(gtid_positions(whole))
    with pytest.raises(ValueError):
        split_file(uri, target_bytes=0)


@pytest.mark.parametrize("slots", [1, 2, 3, 8])
def test_grouped_ranges_fill_rounds_of_tasks_and_stay_independent(slots: int) -> None:
    """The load's decode ranges: fine ranges joined (``group_ranges``).  Every joined range
    must still be a valid range (check_ranges: independent decode, counts, first event);
    their number is what ranges of the target would give, rounded up to full rounds of
    ``slots`` tasks; each file's ranges are as even as its fine boundaries allow."""
    uris = [cpath(MARIADB_BIG), cpath(MARIADB_118), cpath(MYSQL8_BIGGER)]
    sizes = [os.path.getsize(u) for u in uris]
    fine = [split_file(u, target_bytes=16_384, min_bytes=0) for u in uris]
    target = 200_000
    grouped = split_mod.group_ranges(fine, slots, target)
    for uri, size, rs in zip(uris, sizes, grouped):
        check_ranges(uri, rs, size)
        assert {(r.start, r.end) for r in rs} <= {(a.start, b.end) for a in fine[uris.index(
            uri)] for b in fine[uris.index(uri)]}  # joined at fine boundaries only
    total = sum(len(rs) for rs in grouped)
    plain = sum(max(1, -(-(rs[-1].end - rs[0].start) // target)) for rs in fine)
    assert total == min(-(-plain // slots) * slots, sum(len(rs) for rs in fine)), (total, plain)
    for f, rs in zip(fine, grouped):
        step = max(r.size for r in f)  # a cut is at most one fine range from its ideal place
        ideal = (f[-1].end - f[0].start) / len(rs)
        assert all(abs(r.size - ideal) <= 2 * step for r in rs), ([r.size for r in rs], ideal)
    # one fine range per file cannot be joined or cut: the files' ranges as they are
    assert split_mod.group_ranges([f[:1] for f in fine], slots, 1) == [f[:1] for f in fine]
    with pytest.raises(ValueError):
        split_mod.group_ranges(fine, 0, target)


def test_verify_checksums_stops_split_points_at_a_bad_event() -> None:
    uri = cpath(BAD_CRC)
    whole = decode(uri)
    bad = [ev.pos for ev in whole.events if ev.error is not None]
    assert len(bad) == 1
    stats = ScanStats()
    starts = list(transaction_starts(uri, verify_checksums=True, stats=stats))
    assert stats.stopped_at == bad[0] and "checksum" in (stats.stopped_reason or "")
    assert starts == [p for p in gtid_positions(whole) if p < bad[0]]
    assert list(transaction_starts(uri)) == gtid_positions(whole)


# -- compressed and S3 -------------------------------------------------------------------------


CODECS: dict[str, tuple[str, Callable[[bytes], bytes]]] = {
    "gzip": (".gz", gzip.compress),
    "zstd": (".zst", lambda data: zstandard.ZstdCompressor(level=3).compress(data)),
}


@pytest.mark.parametrize("codec", sorted(CODECS))
@pytest.mark.parametrize("rel", [MYSQL8, MYSQL8_PAYLOAD, MARIADB_BIG, MYSQL51])
def test_compressed_copy_splits_like_the_plain_file(tmp_path: Path, rel: str,
                                                    codec: str) -> None:
    suffix, compress = CODECS[codec]
    copy = tmp_path / (Path(rel).name + suffix)
    copy.write_bytes(compress(Path(cpath(rel)).read_bytes()))
    plain = split_file(cpath(rel), target_bytes=2000, min_bytes=0)
    stats = ScanStats()
    packed = split_file(str(copy), target_bytes=2000, min_bytes=0, stats=stats)
    assert [(r.start, r.end, r.first_event, r.events, r.transactions) for r in packed] == [
        (r.start, r.end, r.first_event, r.events, r.transactions) for r in plain]
    assert stats.fallback_at is None
    check_ranges(str(copy), packed, os.path.getsize(cpath(rel)))


def test_compressed_long_transactions_are_walked(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan_mod, "RETAIN_MAX", 100)  # no transaction fits: walk them all
    copy = tmp_path / "binlog.000001.zst"
    copy.write_bytes(CODECS["zstd"][1](Path(cpath(MYSQL8)).read_bytes()))
    stats = ScanStats()
    assert list(transaction_starts(str(copy), stats=stats)) == list(
        transaction_starts(cpath(MYSQL8)))
    assert stats.jumps == 0 and stats.fallback_at is None


BUCKET = "binlake-split-test"


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    require_corpus()
    pytest.importorskip("moto")
    with moto_s3(BUCKET, {Path(rel).name: Path(cpath(rel)).read_bytes()
                          for rel in (MYSQL8, MYSQL8_BIGGER, MARIADB_BIG)}) as endpoint:
        yield endpoint


@pytest.mark.parametrize(("rel", "reopen"), [
    (MYSQL8, False), (MYSQL8_BIGGER, False), (MARIADB_BIG, False),
    (MYSQL8, True), (MYSQL8_BIGGER, True),
])
def test_s3_object_splits_like_the_local_file(s3_endpoint: str, rel: str, reopen: bool,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    if reopen:  # small reads, and every jump re-opens the object at the landing point
        for mod in (scaninput, scan_mod):  # txn.scan imports both by name
            monkeypatch.setattr(mod, "S3_REOPEN_GAP", 0)
            monkeypatch.setattr(mod, "CHUNK", 64)
    uri = f"s3://{BUCKET}/{Path(rel).name}"
    target = 60_000 if rel == MARIADB_BIG else 3000
    local = split_file(cpath(rel), target_bytes=target, min_bytes=0)
    stats = ScanStats()
    remote = split_file(uri, target_bytes=target, min_bytes=0, stats=stats)
    assert [(r.start, r.end, r.first_event, r.events, r.transactions) for r in remote] == [
        (r.start, r.end, r.first_event, r.events, r.transactions) for r in local]
    assert stats.fallback_at is None
    if reopen:
        assert stats.bytes_skipped > 0
    check_ranges(uri, remote, os.path.getsize(cpath(rel)), decode(cpath(rel)))


# -- a file from a real MariaDB server ---------------------------------------------------------


def _run_workload(srv: Any, n: int = 2000) -> dict[str, int]:
    """n small transactions on one connection, XA transactions prepared on two others and
    committed or rolled back a few transactions later, DDL, statement-logged DML (Intvar)
    and a few big transactions.  Returns what was done."""
    a = srv.connect()
    b = srv.connect()
    c = srv.connect()
    done = {"xa_commit": 0, "xa_rollback": 0, "big": 0, "ddl": 0}
    try:
        srv.execute(["CREATE DATABASE s",
                     "CREATE TABLE s.t (id INT PRIMARY KEY, v VARCHAR(200), n INT) ENGINE=InnoDB",
                     "CREATE TABLE s.auto (id INT AUTO_INCREMENT PRIMARY KEY, v INT) "
                     "ENGINE=InnoDB",
                     "CREATE TABLE s.m (id INT PRIMARY KEY, v INT) ENGINE=MyISAM"], conn=a)
        pending: dict[Any, list[str]] = {b: [], c: []}
        with a.cursor() as ca, b.cursor() as cb, c.cursor() as cc:
            cursors = {b: cb, c: cc}
            for i in range(n):
                k = i % 10
                if k in (0, 5):  # prepare an XA transaction on b (0) or c (5)
                    conn = b if k == 0 else c
                    xid = f"'x{i}'"
                    cur = cursors[conn]
                    cur.execute(f"XA START {xid}")
                    cur.execute("INSERT INTO s.t VALUES (%s, %s, %s)", (1_000_000 + i,
                                                                        f"xa {i}", i))
                    cur.execute("UPDATE s.t SET n = n + 1 WHERE id = %s", (1_000_000 + i,))
                    cur.execute(f"XA END {xid}")
                    cur.execute(f"XA PREPARE {xid}")
                    pending[conn].append(xid)
                elif k in (3, 8):  # finish the one prepared three transactions ago
                    conn = b if k == 3 else c
                    xid = pending[conn].pop()
                    if i % 30 == 8:
                        cursors[conn].execute(f"XA ROLLBACK {xid}")
                        done["xa_rollback"] += 1
                    else:
                        cursors[conn].execute(f"XA COMMIT {xid}")
                        done["xa_commit"] += 1
                elif i % 97 == 0:  # a big transaction
                    ca.execute("BEGIN")
                    ca.executemany("INSERT INTO s.t VALUES (%s, %s, %s)",
                                   [(2_000_000 + i * 1000 + j, "x" * 150, j)
                                    for j in range(60)])
                    ca.execute("COMMIT")
                    done["big"] += 1
                elif i % 251 == 0:
                    ca.execute(f"ALTER TABLE s.m ADD COLUMN c{i} INT")
                    done["ddl"] += 1
                elif i % 7 == 0:  # statement format: Intvar + Query inside the group
                    ca.execute("SET SESSION binlog_format = 'STATEMENT'")
                    ca.execute("INSERT INTO s.auto (v) VALUES (%s)", (i,))
                    ca.execute("SET SESSION binlog_format = 'ROW'")
                elif i % 5 == 1:
                    ca.execute("BEGIN")
                    ca.execute("INSERT INTO s.t VALUES (%s, %s, %s)", (i, f"v{i}", i))
                    ca.execute("INSERT INTO s.m (id, v) VALUES (%s, %s)", (i, i))
                    ca.execute("UPDATE s.t SET n = n * 2 WHERE id = %s", (i,))
                    ca.execute("COMMIT")
                else:
                    ca.execute("INSERT INTO s.t VALUES (%s, %s, %s)", (i, f"value {i}", i))
            for conn, xids in pending.items():
                for xid in xids:
                    cursors[conn].execute(f"XA COMMIT {xid}")
                    done["xa_commit"] += 1
    finally:
        for conn in (a, b, c):
            conn.close()
    return done


@pytest.mark.integration
def test_mariadb_server_file_splits_into_independent_ranges(
        fresh_mariadb: Any, tmp_path: Path) -> None:
    srv = fresh_mariadb
    done = _run_workload(srv)
    assert done["xa_commit"] > 300 and done["xa_rollback"] > 30 and done["big"] > 10
    srv.flush_binary_logs()
    (path,) = srv.closed_binlog_files()
    uri = str(tmp_path / path.name)
    shutil.copyfile(path, uri)
    size = os.path.getsize(uri)
    whole = decode(uri)
    assert whole.error is None and not [ev for ev in whole.events if ev.error]
    gtids = [ev for ev in whole.events if ev.type_code == E.MARIADB_GTID]
    assert len(gtids) > 2000
    stats = ScanStats()
    ranges = split_file(uri, target_bytes=4096, min_bytes=0, stats=stats)
    assert not stats.fast_path and stats.stopped_at is None
    assert list(transaction_starts(uri)) == [ev.pos for ev in gtids]
    check_ranges(uri, ranges, size, whole)
    assert len(ranges) > 100
    assert all(r.size <= 4096 or r.transactions == 1 for r in ranges[:-1])
    # XA: prepared and committed halves are separate groups, and some ranges split them.
    by_pos = {ev.pos: ev for ev in gtids}
    prepared = {ev.data["xid"]["gtrid"]: ev.pos for ev in gtids
                if "prepared_xa" in ev.data["flags2_names"]}
    completed = {ev.data["xid"]["gtrid"]: ev.pos for ev in gtids
                 if "completed_xa" in ev.data["flags2_names"]}
    assert len(prepared) == len(completed) > 300
    cut_between = sum(1 for g, p in prepared.items()
                      if any(p < r.start <= completed[g] for r in ranges))
    assert cut_between > 100
    assert all(p in by_pos for p in prepared.values())
    # The default target: one range; a mid target: a few.
    assert len(split_file(uri)) == 1
    check_ranges(uri, split_file(uri, target_bytes=size // 4, min_bytes=size // 10), size,
                 whole)


@pytest.mark.integration
def test_splitting_a_file_while_the_server_appends_to_it(fresh_mariadb: Any) -> None:
    """The ranges of a file still being written cover what was there when the scan ran; each
    range holds whole groups (the server writes a group at once)."""
    srv = fresh_mariadb
    srv.execute(["CREATE DATABASE s", "CREATE TABLE s.t (id INT PRIMARY KEY, v INT)"])
    stop = threading.Event()

    def writer() -> None:
        conn = srv.connect()
        try:
            with conn.cursor() as cur:
                i = 0
                while not stop.is_set() and i < 20000:
                    cur.execute("INSERT INTO s.t VALUES (%s, %s)", (i, i))
                    i += 1
        finally:
            conn.close()

    t = threading.Thread(target=writer)
    t.start()
    try:
        path = srv.current_binlog_file()
        assert path is not None
        for _ in range(3):
            ranges = split_file(str(path), target_bytes=2048, min_bytes=0)
            for r in ranges[:-1]:
                part = decode(str(path), r.start, r.end)
                assert part.error is None and not [ev for ev in part.events if ev.error]
                assert part.events[-1].type_code in (E.XID, E.QUERY, E.BINLOG_CHECKPOINT)
    finally:
        stop.set()
        t.join()


# -- decode tasks: small ranges packed (split.pack_tasks) --------------------------------------

MB = 1 << 20


def _check_packing(sizes: list[int], slots: int, target: int) -> list[list[int]]:
    tasks = split_mod.pack_tasks(sizes, slots, target)
    flat = [i for t in tasks for i in t]
    assert sorted(flat) == list(range(len(sizes)))  # every range once
    assert all(t == sorted(t) for t in tasks)  # in order within a task
    for t in tasks:  # a big range alone
        assert len(t) == 1 or all(sizes[i] < target // 4 for i in t)
    return tasks


def test_small_ranges_packed_in_full_rounds_of_the_cores() -> None:
    # 200 binlogs of 1 MB on two cores: tasks of about 32 MB, a multiple of two of them,
    # the bytes spread evenly
    tasks = _check_packing([MB] * 200, 2, 64 * MB)
    assert len(tasks) == 8
    assert {len(t) for t in tasks} == {25}
    # mixed sizes: the largest first into the emptiest task, so no task holds more than the
    # others plus one range
    sizes = [(k % 7 + 1) * MB // 2 for k in range(60)]
    tasks = _check_packing(sizes, 4, 64 * MB)
    loads = [sum(sizes[i] for i in t) for t in tasks]
    assert len(tasks) % 4 == 0 and max(loads) - min(loads) <= max(sizes)


def test_big_ranges_keep_a_task_each() -> None:
    # a night of big files cut in ranges of ~54 MB: as many tasks as ranges, as before
    assert _check_packing([54 * MB] * 28, 2, 64 * MB) == [[i] for i in range(28)]
    # big ranges alone, the small tail files of the night packed beside them
    tasks = _check_packing([54 * MB] * 4 + [MB] * 3, 2, 64 * MB)
    assert [t for t in tasks if len(t) == 1 and t[0] < 4] == [[0], [1], [2], [3]]
    assert len([t for t in tasks if t[0] >= 4]) == 2
    assert _check_packing([], 2, 64 * MB) == []
    assert _check_packing([MB], 2, 64 * MB) == [[0]]
    with pytest.raises(ValueError):
        split_mod.pack_tasks([MB], 0, 64 * MB)
