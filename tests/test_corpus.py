"""Every binlog of the shared corpus: clean files decode with no error and with the event
counts and checksum verdicts the MANIFEST's independent scanner recorded; damaged files give
the right typed error at the right byte offset."""

from __future__ import annotations

import logging

import pytest

from binlake.binlog.constants import EventType
from binlake.binlog.errors import (
    BinlogError,
    ChecksumError,
    CorruptEventError,
    EncryptedBinlogError,
    NotABinlogError,
    TruncatedError,
)
from binlake.binlog.reader import BinlogReader

from .corpus import CorpusFile, corpus_files, require_corpus

FILES = corpus_files()
CLEAN = [f for f in FILES if not f.broken]
BROKEN = {f.rel: f for f in FILES if f.broken}

# Expected outcomes for the damaged files, from the MANIFEST's notes (offsets worked out from
# the sizes it gives: e.g. "Previous_gtids event cut after 9 bytes" in a 129-byte file -> 120).
EXPECTED_ERRORS = {
    "mysql-8.0/std_data/binlog_no_fd_event.000001": (CorruptEventError, 4),
    "mysql-8.0/std_data/binlog_truncated_event.000001": (TruncatedError, 4),
    "mysql-8.0/std_data/binlog_truncated_prev_gtid_event.000001": (TruncatedError, 129 - 9),
    "mysql-8.0/std_data/rpl_nogtid_encryption_master-bin.000002": (EncryptedBinlogError, 0),
    "mysql-5.5/std_data/bug11747416_32228_binlog.000001": (TruncatedError, 8192 - 7876),
    "libs/canal/tsdb/mysql-bin.000001": (NotABinlogError, 0),
    "libs/mysql-binlog-connector-rust/non-binlog": (NotABinlogError, 0),
}


def _walk(f: CorpusFile) -> tuple[list, BinlogError | None]:
    events = []
    try:
        for ev in BinlogReader(f.path):
            events.append(ev)
    except BinlogError as exc:
        return events, exc
    return events, None


@pytest.fixture(autouse=True)
def _corpus() -> None:
    require_corpus()


@pytest.mark.parametrize("f", CLEAN, ids=[f.rel for f in CLEAN])
def test_clean_file_decodes(f: CorpusFile, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="binlake"):
        events, fatal = _walk(f)
    assert fatal is None, f"{f.rel}: {fatal}"
    errors = [ev.error for ev in events if ev.error is not None]
    checksum_errors = [e for e in errors if isinstance(e, ChecksumError)]
    other = [e for e in errors if not isinstance(e, ChecksumError)]
    assert not other, f"{f.rel}: {other[:3]}"
    # Top-level events (inner events of a Transaction_payload are not in the MANIFEST count).
    top = [ev for ev in events if ev.payload_index is None]
    if f.events is not None:
        assert len(top) == f.events, f"{f.rel}: {len(top)} events, MANIFEST says {f.events}"
    assert len(checksum_errors) == f.bad_checksums
    if f.ok_checksums is not None and "CRC32" in f.checksum:
        # The MANIFEST counts the verified events other than Format_description ones.
        fdes = sum(1 for ev in top if ev.type_code == EventType.FORMAT_DESCRIPTION)
        assert len(top) - fdes - len(checksum_errors) == f.ok_checksums
    # Every event type binlake knows is decoded, never passed through raw; a type no server
    # documents (Aurora's padding event, type 100) is passed through with a warning.
    known = set(EventType._value2member_map_)
    raw = [ev for ev in events if ev.data.get("unknown")]
    assert all(ev.type_code not in known for ev in raw), raw[:3]
    warned = [r for r in caplog.records if "unknown event type" in r.getMessage()]
    assert len(warned) == len({ev.type_code for ev in raw})


@pytest.mark.parametrize("rel", sorted(EXPECTED_ERRORS))
def test_damaged_file_gives_typed_error(rel: str) -> None:
    f = BROKEN[rel]
    cls, offset = EXPECTED_ERRORS[rel]
    _events, fatal = _walk(f)
    assert isinstance(fatal, cls), f"{rel}: {fatal!r}"
    assert fatal.offset == offset
    assert fatal.file is not None and f.path.name in fatal.file
    assert str(offset) in str(fatal)


def test_mariadb_encrypted_file_stops_at_start_encryption() -> None:
    f = BROKEN["mariadb-11.8/std_data/binlog_before_20574.bin"]
    events, fatal = _walk(f)
    assert isinstance(fatal, EncryptedBinlogError)
    assert events[-1].type_code == EventType.START_ENCRYPTION
    assert fatal.offset == events[-1].pos + events[-1].length


def test_every_broken_file_is_covered() -> None:
    """A flagged file without an expectation above would escape the checks."""
    handled = set(EXPECTED_ERRORS) | {"mariadb-11.8/std_data/binlog_before_20574.bin"}
    for rel, f in BROKEN.items():
        if rel in handled:
            continue
        # Flagged but readable (e.g. content-level corruption): must not crash the reader.
        events, fatal = _walk(f)
        assert fatal is None or isinstance(fatal, BinlogError), rel
        assert events, rel


def test_aurora_padding_event_passes_through_raw() -> None:
    f = next(f for f in FILES if f.rel.endswith("mysql-bin.aurora-padding"))
    events, fatal = _walk(f)
    assert fatal is None
    padding = [ev for ev in events if ev.type_code == 100]
    assert padding and all(ev.data["unknown"] and "raw_hex" in ev.data for ev in padding)


def test_corpus_is_present_and_large() -> None:
    assert len(FILES) > 100
    assert len(CLEAN) > 80


SURVEY_TYPES = frozenset({EventType.QUERY, EventType.QUERY_COMPRESSED, EventType.TABLE_MAP,
                          EventType.TRANSACTION_PAYLOAD})


def _scan(f: CorpusFile, **kw: object) -> tuple[list[tuple], str | None]:
    got = []
    reader = BinlogReader(f.path, decode=SURVEY_TYPES, verify_checksums=False, **kw)
    try:
        for ev in reader:
            got.append((ev.pos, ev.type_code, ev.payload_index, repr(ev.data),
                        repr(ev.error)))
    except BinlogError as exc:
        return got, f"{type(exc).__name__} at {exc.offset}"
    return got, None


@pytest.mark.parametrize("f", FILES, ids=[f.rel for f in FILES])
def test_only_decoded_scan_yields_the_decoded_events(f: CorpusFile) -> None:
    """A scan with ``only_decoded`` (the load's survey): exactly the events a plain scan
    yields of the decoded types (inside compressed transactions too), FDEs and damaged
    events, with the same data, and the same error where the file is damaged."""
    every, err = _scan(f)
    wanted = [e for e in every  # (the file's first event too: an FDE or a Start_v3)
              if e[1] in SURVEY_TYPES or e[1] in (EventType.FORMAT_DESCRIPTION,
                                                  EventType.START_ENCRYPTION)
              or e[4] != "None" or e[0] == 4]
    got, got_err = _scan(f, only_decoded=True)
    assert got == wanted
    assert got_err == err
    assert any(e[1] == EventType.TABLE_MAP for e in got) or not any(
        e[1] == EventType.TABLE_MAP for e in every)
