"""binlake.txn.checks: stream-level validity checks, on real binlogs only.

* the shared corpus (../shared/corpus, MANIFEST.md): every clean file passes with no ERROR and
  no WARNING except where the MANIFEST says why (the hand-edited crash-recovery files of the
  MySQL test suite; one MariaDB test file that jumps its GTID sequence with SET gtid_seq_no);
  the damaged files give the right finding at the right offset; the multi-file sets chain
  (and the mariadb-operator set, which lacks two files, shows exactly those two);
* a MySQL 8 file with one GTID event's ``transaction_length`` changed and its CRC32 recomputed;
* binlogs of a private MariaDB server (``integration``): a FLUSH BINARY LOGS sequence, and
  copies of it with a file removed, cut, flipped, or mixed with another server's file; and
  SET gtid_seq_no / SET SESSION server_id sequences checked against the server's own
  Gtid_list.

Every test asserts the exact set of ERROR (and WARNING) findings, so a missing check and an
over-eager one both fail.
"""

from __future__ import annotations

import contextlib
import logging
import random
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from binlake.binlog.constants import EventType
from binlake.binlog.errors import BinlogError
from binlake.binlog.reader import BinlogReader
from binlake.txn.checks import (
    GTID_OUT_OF_ORDER,
    IntervalSet,
    StreamChecker,
    _XidIndex,
    check_files,
)
from binlake.txn.findings import (
    CHECKSUM_MISMATCH,
    DECODE_ERROR,
    DUPLICATE_XID,
    ERROR,
    FILE_END_WITHOUT_ROTATE,
    FILE_NOT_CLOSED,
    GTID_DUPLICATE,
    GTID_GAP,
    GTID_HEADER_MISMATCH,
    INFO,
    MISSING_FILE,
    POSITION_GAP,
    ROTATE_MISMATCH,
    TRANSACTION_LENGTH_MISMATCH,
    TRUNCATED,
    WARNING,
    Finding,
)
from binlake_dev.mariadb import MariaDBServer, free_port

from .binlog_files import copy_files, top_events
from .corpus import CORPUS, CorpusFile, corpus_files, require_corpus

FILES = corpus_files()
CLEAN = [f for f in FILES if not f.broken]
BROKEN = [f for f in FILES if f.broken]

Key = tuple[str, int | None]  # (kind, pos)


def _by(findings: list[Finding], severity: str) -> set[Key]:
    return {(x.kind, x.pos) for x in findings if x.severity == severity}


def _kinds(findings: list[Finding], severity: str | None = None) -> set[str]:
    return {x.kind for x in findings if severity is None or x.severity == severity}


def _show(findings: list[Finding]) -> str:
    return "\n".join(str(x) for x in findings)


@pytest.fixture
def corpus() -> None:
    require_corpus()


# ---------------------------------------------------------------------------------------------
# The corpus, file by file
# ---------------------------------------------------------------------------------------------

# Clean (not TRUNCATED/CORRUPT/...) files that are *meant* to be invalid, with the ERROR findings
# they must give.  MANIFEST: "HAND-EDITED for crash-recovery tests: next_pos values do not match
# offsets (events removed)" or "1 event edited without CRC update"; the MySQL test suite made
# them for binlog::Binlog_recovery (extra/binlog_tests/recovery, xa_crash_safe_tests).
_R = "mysql-8.0/std_data/binlog_recovery/"
HAND_EDITED: dict[str, set[Key]] = {
    # the Xid of transaction :1 was removed: 31 bytes missing before :2, :1 too short
    _R + "ddl_in_transaction.000001": {(POSITION_GAP, 399), (TRANSACTION_LENGTH_MISMATCH, 157)},
    # the second Xid edited to repeat the first (53) without a CRC update
    _R + "duplicate_xid.000001": {(CHECKSUM_MISMATCH, 672), (DUPLICATE_XID, 672)},
    # the DDL's ddl_xid edited to repeat the Xid 62 of the transaction before it
    _R + "duplicate_xid_ddl.000001": {(CHECKSUM_MISMATCH, 507), (DUPLICATE_XID, 507)},
    # the XA PREPARE group :4 (382 bytes) removed before a second XA COMMIT of the same XID:
    # the GTIDs jump 3 -> 5.  (Committing XID 'x' twice is the XA layer's finding.)
    _R + "duplicate_xid_xa_commit.000001": {(POSITION_GAP, 980), (GTID_GAP, 980)},
    _R + "duplicate_xid_xa_rollback.000001": {(POSITION_GAP, 980), (GTID_GAP, 980)},
    # the second XA_PREPARE edited to prepare 'x' again: an XA matter apart from the CRC
    _R + "duplicate_xid_xa_prepare.000001": {(CHECKSUM_MISMATCH, 884)},
    # XA COMMIT/ROLLBACK text edited to an XID that does not parse: the CRC is what we see
    _R + "malformed_xid_xa_commit.000001": {(CHECKSUM_MISMATCH, 889)},
    _R + "malformed_xid_xa_rollback.000001": {(CHECKSUM_MISMATCH, 889)},
    # events removed from inside a transaction: the hole and the short transaction
    _R + "orphan_begin_start.000001": {(POSITION_GAP, 487), (TRANSACTION_LENGTH_MISMATCH, 157)},
    _R + "orphan_commit.000001": {(POSITION_GAP, 431), (TRANSACTION_LENGTH_MISMATCH, 352)},
    _R + "orphan_rollback.000001": {(POSITION_GAP, 589), (TRANSACTION_LENGTH_MISMATCH, 510)},
    _R + "orphan_xa_commit.000001": {(POSITION_GAP, 775), (TRANSACTION_LENGTH_MISMATCH, 430)},
    _R + "orphan_xa_prepare.000001": {(POSITION_GAP, 236), (TRANSACTION_LENGTH_MISMATCH, 157)},
    _R + "orphan_xa_rollback.000001": {(POSITION_GAP, 775), (TRANSACTION_LENGTH_MISMATCH, 430)},
    _R + "orphan_xid.000001": {(POSITION_GAP, 509), (TRANSACTION_LENGTH_MISMATCH, 430)},
}

# Clean files with a WARNING that is right: the MariaDB rpl_parallel_seq test jumps the
# sequence with SET gtid_seq_no=100 (0-1-1, then 0-1-100): legal in MariaDB, hence a warning.
EXPECTED_WARNINGS: dict[str, set[Key]] = {
    "mariadb-11.8/std_data/rpl/master-bin-seq_10.3.36.000001": {(GTID_GAP, 456)},
}

# The damaged files: the finding and its offset, from the MANIFEST's notes (the same offsets
# test_corpus.py derives: "Previous_gtids event cut after 9 bytes" in a 129-byte file -> 120).
EXPECTED_BROKEN: dict[str, set[Key]] = {
    "mysql-8.0/std_data/binlog_no_fd_event.000001": {(DECODE_ERROR, 4)},
    "mysql-8.0/std_data/binlog_truncated_event.000001": {(TRUNCATED, 4)},
    "mysql-8.0/std_data/binlog_truncated_prev_gtid_event.000001": {(TRUNCATED, 129 - 9)},
    "mysql-5.5/std_data/bug11747416_32228_binlog.000001": {(TRUNCATED, 8192 - 7876)},
    "mysql-8.0/std_data/rpl_nogtid_encryption_master-bin.000002": {(DECODE_ERROR, 0)},
    "libs/canal/tsdb/mysql-bin.000001": {(DECODE_ERROR, 0)},
    "libs/mysql-binlog-connector-rust/non-binlog": {(DECODE_ERROR, 0)},
    # encrypted after Start_encryption (event at 252, 44 bytes): reading stops after it
    "mariadb-11.8/std_data/binlog_before_20574.bin": {(DECODE_ERROR, 296)},
    # "CORRUPT (content-level)": a Query event read with the wrong (master's 5.0.30) FDE
    "mysql-8.0/std_data/corrupt-relay-bin.000624": {(DECODE_ERROR, 91204)},
    # Google 5.1.63 header extensions: readable, nothing to find
    "mariadb-11.8/std_data/mdev-4645-binlog_checksum.binlog": set(),
    "mariadb-11.8/std_data/mdev-4645-binlog_group_id.binlog": set(),
    "mariadb-11.8/std_data/mdev-4645-binlog_group_id_checksum.binlog": set(),
    # "3 bytes changed (an event timestamp)" in a 5.0 file without checksums: undetectable
    "libs/ybinlogp/mysql-bin.delayed-event": set(),
}


def _check_one(f: CorpusFile) -> list[Finding]:
    return check_files([str(f.path)])


@pytest.mark.parametrize("f", CLEAN, ids=[f.rel for f in CLEAN])
def test_clean_corpus_file(f: CorpusFile, corpus: None, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="binlake"):
        findings = _check_one(f)
    assert _by(findings, ERROR) == HAND_EDITED.get(f.rel, set()), _show(findings)
    assert _by(findings, WARNING) == EXPECTED_WARNINGS.get(f.rel, set()), _show(findings)
    # A single file is the newest of its stream: an unclosed file is INFO, and the MANIFEST's
    # independent scanner agrees on which files have the in-use flag.
    assert _kinds(findings, INFO) <= {FILE_END_WITHOUT_ROTATE, FILE_NOT_CLOSED}, _show(findings)
    in_use = any(x.kind == FILE_NOT_CLOSED for x in findings)
    assert in_use == ("FDE in-use flag set" in f.notes)


def test_hand_edited_list_is_in_the_corpus(corpus: None) -> None:
    clean = {f.rel: f for f in CLEAN}
    for rel in HAND_EDITED:
        assert rel in clean and "HAND-EDITED" in clean[rel].notes, rel
    # and every hand-edited file of the corpus is in the list
    assert {f.rel for f in CLEAN if "HAND-EDITED" in f.notes} == set(HAND_EDITED)


@pytest.mark.parametrize("f", BROKEN, ids=[f.rel for f in BROKEN])
def test_broken_corpus_file(f: CorpusFile, corpus: None) -> None:
    assert f.rel in EXPECTED_BROKEN, f"no expectation for {f.rel}: {f.notes}"
    findings = _check_one(f)
    assert _by(findings, ERROR) == EXPECTED_BROKEN[f.rel], _show(findings)
    assert not _by(findings, WARNING), _show(findings)


def test_hand_edited_details(corpus: None) -> None:
    findings = check_files([str(CORPUS / _R / "ddl_in_transaction.000001")])
    gap = next(x for x in findings if x.kind == POSITION_GAP)
    assert gap.detail == {"type": "GTID", "expected_next_pos": 476, "found_next_pos": 507,
                          "missing_bytes": 31}
    assert "31 bytes" in gap.message and "507" in gap.message and "476" in gap.message
    length = next(x for x in findings if x.kind == TRANSACTION_LENGTH_MISMATCH)
    assert length.detail["declared"] == 273 and length.detail["actual"] == 242
    assert length.detail["gtid"] == "03a2e8f9-8dc0-11ec-92b8-0010e0dc7238:1"
    assert length.file == "ddl_in_transaction.000001"

    findings = check_files([str(CORPUS / _R / "duplicate_xid.000001")])
    dup = next(x for x in findings if x.kind == DUPLICATE_XID)
    assert dup.detail["xid"] == 53 and dup.detail["first_pos"] == 399
    assert "399" in dup.message and "53" in dup.message

    findings = check_files([str(CORPUS / _R / "duplicate_xid_xa_commit.000001")])
    gap = next(x for x in findings if x.kind == GTID_GAP)
    assert gap.detail["missing"] == [4, 4]
    assert gap.detail["found"] == "8aeeb092-8dcf-11ec-905c-0010e0dc7238:5"


def test_truncated_offsets_match_the_reader(corpus: None) -> None:
    # The TRUNCATED position is the event the file ends inside: where the last complete event
    # (as the reader sees it) ends.
    for rel in ("mysql-8.0/std_data/binlog_truncated_prev_gtid_event.000001",
                "mysql-5.5/std_data/bug11747416_32228_binlog.000001"):
        last = None
        with contextlib.suppress(BinlogError):
            for ev in BinlogReader(CORPUS / rel):
                last = ev
        assert last is not None
        (finding,) = [x for x in check_files([str(CORPUS / rel)]) if x.kind == TRUNCATED]
        assert finding.pos == last.pos + last.length


# Relay logs and files with old position conventions, which the position check must accept.
POSITION_EXEMPT = {
    "mysql-8.0/std_data/bug33029-slave-relay-bin.000001": "relay log: second FDE (its source's)",
    "mysql-8.0/std_data/binlog_savepoint.000001": "relay log: second FDE from server 1",
    "mysql-8.0/std_data/rpl_gipk_equivalent_key.000001": "relay log: 0x40 on the first FDE",
    "mysql-8.0/std_data/rpl_unfiltered_hidden_gcol.000001": "relay log: 0x40 on the first FDE",
    "mysql-5.5/suite/binlog/std_data/ver_5_1-telco.001": "5.1: cache-relative positions",
    "mysql-8.0/suite/binlog/std_data/ver_5_1-wl2325_s.001": "5.2: cache-relative positions",
    "mysql-5.5/std_data/trunc_binlog.000001": "binlog v3: events of a transaction at BEGIN",
    "mysql-5.5/suite/binlog/std_data/binlog_old_version_4_1.000001": "binlog v3: own position",
    "mysql-5.5/std_data/master-bin.000001": "binlog v2: positions not checked",
}


@pytest.mark.parametrize("rel", sorted(POSITION_EXEMPT))
def test_position_conventions(rel: str, corpus: None) -> None:
    path = CORPUS / rel
    # these files really do have header positions that differ from pos + length ...
    events = [ev for ev in BinlogReader(path) if ev.payload_index is None]
    assert any(ev.next_pos not in (0, ev.pos + ev.length) for ev in events), rel
    # ... and they are not position findings
    findings = check_files([str(path)])
    assert not _kinds(findings) & {POSITION_GAP, "position_overlap"}, _show(findings)


# MySQL 8.0.2+ files whose GTID events declare transaction_length: all must pass the check.
TRX_LENGTH_FILES = [
    "libs/percona-binlog-server/data_80045_gtid/binlog.000001",
    "libs/percona-binlog-server/data_80045_gtid/binlog.000002",
    "libs/percona-binlog-server/data_80045_position/binlog.000001",
    "libs/percona-binlog-server/data_80045_position/binlog.000002",
    "libs/mysql-cdc-rs/events/8.0/02_query/binlog.000001",
    "libs/mysql-cdc-rs/events/8.0/02_query_bigger/binlog.000733",
    "libs/mysql-cdc-rs/events/8.0/19_30_Table_map_event_Write_rows_log_event/binlog.000018",
    "libs/mysql-cdc-rs/events/8.0/31_update_rows_v2/binlog.000001",
    "libs/mysql-cdc-rs/events/8.0/32_delete_rows_v2/binlog.000001",
    "libs/mysql-binlog-connector-rust/mysql-bin.000057",  # Transaction_payload
    "libs/mysql-binlog-connector-java/mysql-bin.compressed",  # Transaction_payload
    "mariadb-11.8/std_data/mdev35643_mysql_80_binlog.000001",  # payload of 100 rows
    "mysql-8.0/std_data/replicated-bin.000001",
    "mysql-8.0/std_data/replicated-bin.000002",
    "libs/rust_mysql_common/binlog_transaction_with_GTID_TAG.000001",  # GTID_TAGGED
    "libs/rust_mysql_common/vector.binlog",
]


@pytest.mark.parametrize("rel", TRX_LENGTH_FILES)
def test_transaction_length_holds(rel: str, corpus: None) -> None:
    path = CORPUS / rel
    declared = [ev for ev in BinlogReader(path)
                if ev.type_code in (EventType.GTID, EventType.ANONYMOUS_GTID,
                                    EventType.GTID_TAGGED)
                and ev.data.get("transaction_length")]
    assert declared, f"{rel}: no GTID event declares a transaction_length"
    findings = check_files([str(path)])
    assert TRANSACTION_LENGTH_MISMATCH not in _kinds(findings), _show(findings)
    assert not _by(findings, ERROR), _show(findings)


def _gtid_length_field(raw: bytes) -> tuple[int, int, int]:
    """(offset, width, value) of the transaction_length of an untagged MySQL 8 GTID event (raw
    event bytes): header(19) flags(1) sid(16) gno(8) lt_type(1)=2 last_committed(8)
    sequence_number(8) immediate_ts(7, bit 55: original_ts(7) follows) then the packed
    integer (control_events.cpp Gtid_event::write_data_body)."""
    at = 19 + 1 + 16 + 8
    assert raw[at] == 2, "no logical-clock typecode"
    at += 1 + 8 + 8
    immediate = int.from_bytes(raw[at:at + 7], "little")
    at += 14 if immediate & (1 << 55) else 7
    first = raw[at]
    if first < 251:
        return at, 1, first
    assert first == 0xFC, "this test only edits 1- or 3-byte lengths"
    return at + 1, 2, int.from_bytes(raw[at + 1:at + 3], "little")


def test_tampered_transaction_length(corpus: None, tmp_path: Path) -> None:
    src = CORPUS / "libs/percona-binlog-server/data_80045_gtid/binlog.000001"
    data = bytearray(src.read_bytes())
    gtid = next(ev for ev in BinlogReader(src)
                if ev.type_code == EventType.GTID and ev.data.get("transaction_length"))
    raw = bytes(data[gtid.pos:gtid.pos + gtid.length])
    at, width, value = _gtid_length_field(raw)
    assert value == gtid.data["transaction_length"]
    new_raw = bytearray(raw)
    new_raw[at:at + width] = (value + 1).to_bytes(width, "little")
    new_raw[-4:] = zlib.crc32(bytes(new_raw[:-4])).to_bytes(4, "little")  # CRC32 recomputed
    data[gtid.pos:gtid.pos + gtid.length] = new_raw
    copy = tmp_path / "binlog.000001"
    copy.write_bytes(bytes(data))
    # the copy is a well-formed binlog that declares one more byte
    edited = next(ev for ev in BinlogReader(copy) if ev.pos == gtid.pos)
    assert edited.error is None and edited.data["transaction_length"] == value + 1
    findings = check_files([str(copy)])
    assert _by(findings, ERROR) == {(TRANSACTION_LENGTH_MISMATCH, gtid.pos)}, _show(findings)
    assert not _by(findings, WARNING)
    (mismatch,) = [x for x in findings if x.kind == TRANSACTION_LENGTH_MISMATCH]
    assert mismatch.detail["declared"] == value + 1
    assert mismatch.detail["actual"] == value
    assert mismatch.detail["gtid"] == gtid.data["gtid"]


# ---------------------------------------------------------------------------------------------
# The corpus, file sets
# ---------------------------------------------------------------------------------------------


def _glob(pattern: str) -> list[str]:
    return sorted(str(p) for p in CORPUS.glob(pattern))


@pytest.mark.parametrize("pattern", [
    "libs/percona-binlog-server/data_80045_gtid/binlog.0*",
    "libs/percona-binlog-server/data_80045_position/binlog.0*",
    "mysql-8.0/std_data/replicated-bin.0*",
    "libs/mariadb-poc/binlogs/domain_id_1/mariadb-repl-bin.0*",
])
def test_corpus_chains_are_clean(pattern: str, corpus: None) -> None:
    files = _glob(pattern)
    assert len(files) >= 2
    shuffled = list(files)
    random.Random(1).shuffle(shuffled)
    for given in (files, shuffled[::-1]):
        findings = check_files(given)
        assert not _by(findings, ERROR) and not _by(findings, WARNING), _show(findings)


def test_corpus_chain_with_an_open_last_file(corpus: None) -> None:
    files = _glob("libs/canal/mysql-bin.0*")
    findings = check_files(files)
    assert _by(findings, INFO) == {(FILE_END_WITHOUT_ROTATE, 302), (FILE_NOT_CLOSED, 4)}
    assert not _by(findings, ERROR) and not _by(findings, WARNING), _show(findings)
    findings = check_files(files, newest_file_may_be_open=False)
    assert _by(findings, ERROR) == {(FILE_END_WITHOUT_ROTATE, 302)}


def test_corpus_chain_with_missing_files(corpus: None) -> None:
    # MANIFEST: "domain_id_0/...000003 and ...000008 are absent from the snapshot".
    files = _glob("libs/mariadb-poc/binlogs/domain_id_0/mariadb-repl-bin.0*")
    assert [Path(f).name[-2:] for f in files] == ["01", "02", "04", "05", "06", "07", "09", "10"]
    findings = check_files(files)
    errors = {(x.kind, x.file, x.pos) for x in findings if x.severity == ERROR}
    assert errors == {
        (MISSING_FILE, "mariadb-repl-bin.000004", None),
        (GTID_HEADER_MISMATCH, "mariadb-repl-bin.000004", 256),
        (MISSING_FILE, "mariadb-repl-bin.000009", None),
        (GTID_HEADER_MISMATCH, "mariadb-repl-bin.000009", 256),
    }, _show(findings)
    assert not _by(findings, WARNING), _show(findings)
    missing = next(x for x in findings if x.kind == MISSING_FILE)
    assert missing.detail["missing_from"] == "mariadb-repl-bin.000003"
    header = next(x for x in findings if x.kind == GTID_HEADER_MISMATCH)
    # 000002 ends at 0-10-254512; 000004 starts from 0-10-262175 (000003 had the rest)
    assert header.detail["different"] == {"0-10": [254512, 262175]}


def test_corpus_mysql_files_of_two_servers(corpus: None) -> None:
    # Two MySQL 8.0.45 datadirs (GTID mode on / off), both with binlog.000001 and binlog.000002:
    # the names chain, the Previous_gtids do not.
    base = CORPUS / "libs/percona-binlog-server"
    gtid, pos = base / "data_80045_gtid", base / "data_80045_position"
    findings = check_files([str(gtid / "binlog.000001"), str(pos / "binlog.000002")])
    assert _by(findings, ERROR) == {(GTID_HEADER_MISMATCH, 126)}, _show(findings)
    (header,) = findings
    assert header.detail["missing"] == "396e294c-1ca4-11f1-9ae7-00155da79c6b:1-4"
    assert header.detail["found"] == ""
    # The other way round the header brings GTIDs the stream never saw, below all it has of
    # their uuid: what SET GTID_PURGED leaves, so a warning.
    findings = check_files([str(pos / "binlog.000001"), str(gtid / "binlog.000002")])
    assert _by(findings, WARNING) == {(GTID_HEADER_MISMATCH, 126)}, _show(findings)
    assert not _by(findings, ERROR)


def test_checker_api_order(corpus: None) -> None:
    checker = StreamChecker()
    checker.begin_file("binlog.000001", seq=1)
    with pytest.raises(RuntimeError):
        checker.begin_file("binlog.000002", seq=2)
    for ev in BinlogReader(CORPUS / "libs/percona-binlog-server/data_80045_gtid/binlog.000001"):
        checker.event(ev)
    checker.end_file(end_offset=None, error=None, size=None)
    checker.finish()
    assert checker.findings == []


# ---------------------------------------------------------------------------------------------
# The data structures (bounded memory)
# ---------------------------------------------------------------------------------------------


def test_interval_set_against_a_python_set() -> None:
    rng = random.Random(7)
    for _ in range(200):
        s, ref = IntervalSet(), set[int]()
        for _ in range(40):
            a = rng.randint(0, 80)
            b = a + rng.randint(0, 6)
            s.add(a, b)
            ref.update(range(a, b + 1))
        assert all((x in s) == (x in ref) for x in range(-2, 95))
        flat = list(s)
        assert all(flat[i][1] + 1 < flat[i + 1][0] for i in range(len(flat) - 1)), flat
        o, oref = IntervalSet(), set[int]()
        for _ in range(8):
            a = rng.randint(0, 80)
            b = a + rng.randint(0, 10)
            o.add(a, b)
            oref.update(range(a, b + 1))
        got: set[int] = set()
        for a, b in s.difference(o):
            got.update(range(a, b + 1))
        assert got == ref - oref
    big = IntervalSet()
    for gno in range(1, 100_001):
        big.add(gno)
    assert len(big) == 1 and big.max() == 100_000


def test_xid_index_runs() -> None:
    rng = random.Random(3)
    values = rng.sample(range(1 << 40), 30_000)
    index = _XidIndex()
    for i, v in enumerate(values):
        assert index.get(v) is None
        index.add(v, i)
    assert all(index.get(v) == i for i, v in enumerate(values))
    assert len(index.recent) < _XidIndex.RECENT
    assert sum(len(keys) for keys, _ in index.runs) + len(index.recent) == len(values)
    assert len(index.runs) <= 4  # 30000 / 4096 = 7 flushes merged like a binary counter


# ---------------------------------------------------------------------------------------------
# A private MariaDB server
# ---------------------------------------------------------------------------------------------


def _start_server(tmp: Path, template: Path, **kw: Any) -> MariaDBServer:
    srv = MariaDBServer(tmp, port=free_port(), **kw)
    srv.init(template=template)
    return srv.start()


@pytest.fixture(scope="module")
def stream(tmp_path_factory: pytest.TempPathFactory, mariadb_template: Path
           ) -> Iterator[dict[str, Any]]:
    """A server's FLUSH BINARY LOGS sequence: three closed files and the open fourth."""
    srv = _start_server(tmp_path_factory.mktemp("checks-a"), mariadb_template)
    try:
        srv.execute(["CREATE DATABASE d",
                     "CREATE TABLE d.t (a INT PRIMARY KEY, b VARCHAR(20)) ENGINE=InnoDB",
                     "CREATE TABLE d.m (a INT PRIMARY KEY) ENGINE=MyISAM",
                     "INSERT INTO d.t VALUES (1, 'x'), (2, 'y')",
                     "INSERT INTO d.m VALUES (1)"])
        srv.flush_binary_logs()
        srv.execute(["BEGIN", "INSERT INTO d.t VALUES (3, 'z')",
                     "UPDATE d.t SET b = 'w' WHERE a = 1", "SAVEPOINT s",
                     "INSERT INTO d.t VALUES (4, 'v')", "ROLLBACK TO SAVEPOINT s", "COMMIT",
                     "ALTER TABLE d.t ADD COLUMN c INT",
                     "XA START 'x1'", "INSERT INTO d.t VALUES (10, 'xa', 1)", "XA END 'x1'",
                     "XA PREPARE 'x1'"])
        srv.flush_binary_logs()
        srv.execute(["XA COMMIT 'x1'", "DELETE FROM d.t WHERE a = 2",
                     "SET SESSION binlog_format = 'STATEMENT'", "INSERT INTO d.m VALUES (2)",
                     "DROP TABLE d.m"])
        srv.flush_binary_logs()
        files = srv.binlog_files()
        assert len(files) == 4
        yield {"server": srv, "files": files}
    finally:
        srv.stop(timeout=30)


@pytest.mark.integration
def test_mariadb_sequence_is_clean(stream: dict[str, Any]) -> None:
    files = stream["files"]
    closed = [str(f) for f in files[:3]]
    assert check_files(closed) == []
    assert check_files(closed[::-1]) == []
    # with the file being written: it has no Rotate yet and its in-use flag is set
    findings = check_files([str(f) for f in files])
    newest = files[3].name
    assert {(x.kind, x.severity, x.file) for x in findings} == {
        (FILE_END_WITHOUT_ROTATE, INFO, newest), (FILE_NOT_CLOSED, INFO, newest)}, \
        _show(findings)
    findings = check_files([str(f) for f in files], newest_file_may_be_open=False)
    assert {(x.kind, x.severity) for x in findings} == {
        (FILE_END_WITHOUT_ROTATE, ERROR), (FILE_NOT_CLOSED, INFO)}, _show(findings)
    # the checks read what they need: the same verdict without decoding row images
    assert check_files(closed, full_decode=False) == []


@pytest.mark.integration
def test_mariadb_missing_middle_file(stream: dict[str, Any]) -> None:
    f1, f2, f3 = stream["files"][:3]
    findings = check_files([str(f1), str(f3)])
    gtid_list = next(ev for ev in top_events(f3) if ev.type_code == EventType.MARIADB_GTID_LIST)
    assert {(x.kind, x.severity, x.file, x.pos) for x in findings} == {
        (MISSING_FILE, ERROR, f3.name, None),
        (GTID_HEADER_MISMATCH, ERROR, f3.name, gtid_list.pos),
    }, _show(findings)
    missing = next(x for x in findings if x.kind == MISSING_FILE)
    assert missing.detail["missing_from"] == f2.name
    assert f2.name in missing.message and f3.name in missing.message


@pytest.mark.integration
def test_mariadb_truncated_last_file(stream: dict[str, Any], tmp_path: Path) -> None:
    copies = copy_files(stream["files"][:3], tmp_path / "cut")
    last = top_events(copies[2])[-1]
    assert last.type_code == EventType.ROTATE
    size = copies[2].stat().st_size
    with open(copies[2], "r+b") as fh:
        fh.truncate(size - 10)
    findings = check_files([str(c) for c in copies])
    assert {(x.kind, x.severity, x.file, x.pos) for x in findings} == {
        (TRUNCATED, ERROR, copies[2].name, last.pos)}, _show(findings)
    assert findings[0].detail["file_size"] == size - 10


@pytest.mark.integration
def test_mariadb_file_cut_at_an_event_boundary(stream: dict[str, Any], tmp_path: Path) -> None:
    # A copy that stops between two events inside a transaction (before its Xid): no framing
    # error, but the file does not end with Rotate or Stop.
    copies = copy_files(stream["files"][:3], tmp_path / "boundary")
    xid = next(ev for ev in top_events(copies[2]) if ev.type_code == EventType.XID)
    with open(copies[2], "r+b") as fh:
        fh.truncate(xid.pos)
    findings = check_files([str(c) for c in copies])
    assert {(x.kind, x.severity, x.pos) for x in findings} == {
        (FILE_END_WITHOUT_ROTATE, INFO, xid.pos)}, _show(findings)
    findings = check_files([str(c) for c in copies], newest_file_may_be_open=False)
    assert {(x.kind, x.severity, x.pos) for x in findings} == {
        (FILE_END_WITHOUT_ROTATE, ERROR, xid.pos)}, _show(findings)
    # the same cut in the middle file: an error whatever the option, and the next file's
    # Gtid_list has the GTIDs of the lost tail (the ALTER and the XA PREPARE after that Xid)
    copies = copy_files(stream["files"][:3], tmp_path / "middle")
    middle = top_events(copies[1])
    xid = next(ev for ev in middle if ev.type_code == EventType.XID)
    lost = [ev.data["gtid"] for ev in middle
            if ev.type_code == EventType.MARIADB_GTID and ev.pos > xid.pos]
    assert lost == ["0-1-7", "0-1-8"]
    with open(copies[1], "r+b") as fh:
        fh.truncate(xid.pos)
    findings = check_files([str(c) for c in copies])
    assert {(x.kind, x.severity, x.file, x.pos) for x in findings} == {
        (FILE_END_WITHOUT_ROTATE, ERROR, copies[1].name, xid.pos),
        (GTID_HEADER_MISMATCH, ERROR, copies[2].name, 256)}, _show(findings)
    header = next(x for x in findings if x.kind == GTID_HEADER_MISMATCH)
    assert header.detail["different"] == {"0-1": [6, 8]}


@pytest.mark.integration
def test_mariadb_flipped_byte(stream: dict[str, Any], tmp_path: Path) -> None:
    copies = copy_files(stream["files"][:3], tmp_path / "flip")
    alter = next(ev for ev in top_events(copies[1])
                 if ev.type_code == EventType.QUERY and "ALTER TABLE" in ev.data["query"])
    at = alter.pos + alter.length - 4 - 2  # inside the statement text, before the CRC32
    data = bytearray(copies[1].read_bytes())
    assert chr(data[at]).isalpha()
    data[at] ^= 0x20  # 'N' -> 'n': the event still decodes, only its CRC32 disagrees
    copies[1].write_bytes(bytes(data))
    findings = check_files([str(c) for c in copies])
    assert {(x.kind, x.severity, x.file, x.pos) for x in findings} == {
        (CHECKSUM_MISMATCH, ERROR, copies[1].name, alter.pos)}, _show(findings)
    assert check_files([str(c) for c in copies], verify_checksums=False) == []


@pytest.mark.integration
def test_mariadb_files_of_two_servers(stream: dict[str, Any],
                                      mariadb_factory: Callable[..., MariaDBServer]) -> None:
    other = mariadb_factory(server_id=2, options={"log-bin": "other-bin"})
    other.execute("CREATE DATABASE d")
    other.execute("FLUSH BINARY LOGS")
    other.execute(["CREATE TABLE d.t (a INT PRIMARY KEY)", "INSERT INTO d.t VALUES (1)"])
    other.execute("FLUSH BINARY LOGS")
    b1, b2 = sorted(other.datadir.glob("other-bin.[0-9]*"))[:2]
    assert check_files([str(b1), str(b2)]) == []  # the other server's own chain is sound
    a1 = stream["files"][0]
    rotate = top_events(a1)[-1]
    gtid_list = next(ev for ev in top_events(b2) if ev.type_code == EventType.MARIADB_GTID_LIST)
    b_gtids = [ev for ev in top_events(b2) if ev.type_code == EventType.MARIADB_GTID]
    assert [ev.data["gtid"] for ev in b_gtids] == ["0-2-2", "0-2-3"]
    findings = check_files([str(a1), str(b2)])
    # a1 ends naming mariadb-bin.000002; b2 follows the other server's 0-2-1, and reuses
    # seq_no 2 and 3 of domain 0, which a1 holds as 0-1-2 and 0-1-3
    assert {(x.kind, x.severity, x.file, x.pos) for x in findings} == {
        (ROTATE_MISMATCH, ERROR, a1.name, rotate.pos),
        (GTID_HEADER_MISMATCH, ERROR, b2.name, gtid_list.pos),
        (GTID_DUPLICATE, ERROR, b2.name, b_gtids[0].pos),
        (GTID_DUPLICATE, ERROR, b2.name, b_gtids[1].pos),
    }, _show(findings)
    rot = next(x for x in findings if x.kind == ROTATE_MISMATCH)
    assert rot.detail == {"expected": "mariadb-bin.000002", "found": b2.name}


@pytest.mark.integration
def test_mariadb_gtid_sequence_rules(fresh_mariadb: MariaDBServer) -> None:
    """SET gtid_seq_no and SET SESSION server_id make the server write the sequences MariaDB
    tolerates with gtid_strict_mode off; the next file's Gtid_list is the server's own account
    of its state, which the checker must agree with."""
    srv = fresh_mariadb
    srv.execute(["CREATE DATABASE d", "CREATE TABLE d.t (a INT PRIMARY KEY)",
                 "INSERT INTO d.t VALUES (1)"])  # 0-1-1 .. 0-1-3
    srv.execute(["SET gtid_seq_no = 20", "INSERT INTO d.t VALUES (2)"])  # jump: 4-19 missing
    srv.execute(["SET SESSION server_id = 7", "SET gtid_seq_no = 10",
                 "INSERT INTO d.t VALUES (3)"])  # another server, behind the domain
    srv.execute(["SET gtid_seq_no = 15", "INSERT INTO d.t VALUES (4)"])  # server 1 goes back
    srv.execute(["SET gtid_seq_no = 3", "INSERT INTO d.t VALUES (5)"])  # seq_no 3 again
    srv.flush_binary_logs()
    first, second = srv.binlog_files()
    events = [ev for ev in top_events(first) if ev.type_code == EventType.MARIADB_GTID]
    assert [ev.data["gtid"] for ev in events] == [
        "0-1-1", "0-1-2", "0-1-3", "0-1-20", "0-7-10", "0-1-15", "0-1-3"]
    pos = {i: ev.pos for i, ev in enumerate(events)}
    findings = check_files([str(first), str(second)])
    assert {(x.kind, x.severity, x.pos) for x in findings
            if x.severity != INFO} == {
        (GTID_GAP, WARNING, pos[3]),  # 0-1-3 -> 0-1-20
        (GTID_OUT_OF_ORDER, WARNING, pos[4]),  # 0-7-10: server 7 never wrote above 10
        (GTID_OUT_OF_ORDER, ERROR, pos[5]),  # 0-1-15 after 0-1-20 from the same server
        (GTID_DUPLICATE, ERROR, pos[6]),  # 0-1-3 again
    }, _show(findings)
    gap = next(x for x in findings if x.kind == GTID_GAP)
    assert gap.detail["missing"] == [4, 19]
    # The server's Gtid_list keeps the *last* GTID per (domain, server), 0-1-3, not the highest:
    # no header finding means the checker expected exactly that.
    gtid_list = next(ev for ev in top_events(second) if ev.type_code == EventType.MARIADB_GTID_LIST)
    assert {(g["server_id"], g["seq_no"]) for g in gtid_list.data["gtids"]} == {(1, 3), (7, 10)}
    assert GTID_HEADER_MISMATCH not in _kinds(findings)
