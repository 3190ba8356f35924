"""A damaged event inside a transaction (one flipped byte in a rows event of a real corpus
binlog: its CRC32 no longer matches) fails that transaction and its file loudly in
``binlake transactions`` and ``binlake verify`` (exit 1, the file and the byte offset on
stderr), and no transaction is ever printed without the rows the damaged event held.  The
transaction layer withholds the group itself (:class:`binlake.txn.build.GroupBuilder`), so
the lake's decode tasks, which build on it, never see it either, and fail the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from binlake.binlog.reader import BinlogReader
from binlake.cli import main
from binlake.txn import findings as F
from binlake.txn.build import TransactionStream

from .corpus import CORPUS, require_corpus

# Clean binlogs with CRC32 checksums and row events, MySQL and MariaDB, GTID and not
FILES = [
    "mysql-8.0/std_data/replicated-bin.000001",  # MySQL 8.0.29, GTIDs, Xid
    "mysql-8.0/std_data/rpl_binlog_with_gipk_info_full_metadata.000001",  # 8.0.32, anonymous
    "libs/rust_mysql_common/mariadb-bin.000001",  # MariaDB, full row metadata
    "mysql-8.0/std_data/rpl_gipk_equivalent_key.000001",  # MySQL 5.7.41
]
ROWS_TYPES = ("WRITE_ROWS", "UPDATE_ROWS", "DELETE_ROWS")


def rows_events(path: Path) -> list[tuple[int, int]]:
    """(pos, length) of the top-level rows events of a file."""
    return [(ev.pos, ev.length) for ev in BinlogReader(path)
            if ev.type.startswith(ROWS_TYPES) and ev.payload_index is None]


def damaged_cases() -> list[tuple[str, int, int]]:
    """(file, rows event position, position of the flipped byte): the first byte of the
    body, the middle, the last byte before the checksum and a byte of the checksum, in the
    first three rows events of each file."""
    if not (CORPUS / FILES[0]).is_file():
        return [("corpus missing", 0, 0)]
    out = []
    for rel in FILES:
        events = rows_events(CORPUS / rel)
        assert events, rel
        for pos, length in events[:3]:
            for at in (pos + 19, pos + length // 2, pos + length - 5, pos + length - 2):
                out.append((rel, pos, at))
    return out


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(args)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def flipped(tmp_path: Path, rel: str, at: int) -> Path:
    raw = bytearray((CORPUS / rel).read_bytes())
    raw[at] ^= 0x10
    path = tmp_path / Path(rel).name
    path.write_bytes(bytes(raw))
    return path


def covers(t: dict[str, Any], pos: int) -> bool:
    return t["begin_pos"] <= pos < t["end_pos"]


@pytest.mark.parametrize(("rel", "event_pos", "at"), damaged_cases())
def test_damaged_rows_event_fails_its_transaction_and_file(
        rel: str, event_pos: int, at: int, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    require_corpus()
    rc, out, err = run(["transactions", str(CORPUS / rel)], capsys)
    assert rc == 0, err
    clean = [json.loads(line) for line in out.splitlines()]
    assert sum(covers(t, event_pos) and bool(t["rows"]) for t in clean) == 1, clean

    path = flipped(tmp_path, rel, at)
    rc, out, err = run(["transactions", str(path)], capsys)
    printed = [json.loads(line) for line in out.splitlines()]
    assert rc == 1
    # one line names the file and the damaged event's offset
    assert f"binlake: error: {path} at byte {event_pos}: event checksum mismatch" in err, err
    assert f"damaged_transaction at {path.name}:" in err, err
    # every other transaction, exactly as from the undamaged file; none with the event's
    # rows missing (the user's report: the transaction printed with "rows": {})
    assert not any(covers(t, event_pos) for t in printed), printed
    assert printed == [t for t in clean if not covers(t, event_pos)]

    rc, out, err = run(["verify", str(path)], capsys)
    assert rc == 1
    assert f"checksum_mismatch at {path.name}:{event_pos}:" in out, out
    assert f"damaged_transaction at {path.name}:" in out, out
    assert f"binlake: error: {path.name} at byte {event_pos}: " in err, err
    assert "INVALID" in err


def test_the_library_withholds_the_group_and_fails_the_file(tmp_path: Path) -> None:
    """TransactionStream (and GroupBuilder under it) keep the damaged group aside, and the
    file's info says it failed, at the event."""
    require_corpus()
    rel = FILES[0]
    pos, length = rows_events(CORPUS / rel)[1]
    path = flipped(tmp_path, rel, pos + length // 2)
    stream = TransactionStream([path])
    txns = list(stream)
    (info,) = stream.files
    assert [e.offset for e in info.errors] == [pos] and info.error is None  # read to its end
    assert not any(t.part.begin_pos <= pos < t.part.end_pos for t in txns)
    (kept,) = stream.builder.damaged  # (what could be decoded of it: here no rows at all)
    assert kept.part.begin_pos <= pos < kept.part.end_pos
    (found,) = [f for f in stream.findings if f.kind == F.DAMAGED_TRANSACTION]
    assert found.severity == F.ERROR and found.detail["event_pos"] == pos


def test_the_lake_decode_task_fails_the_file_and_lands_nothing_of_it(tmp_path: Path) -> None:
    """The lake's decode task (lake/extract.decode_range) builds on GroupBuilder: the range
    says the file failed at the event (the load job then marks the file failed and lands
    none of its data files), and it emits no transaction record for the damaged group."""
    from binlake.lake import extract as X
    from binlake.lake.records import CHANGE, FINDING, RANGE, TXN
    from binlake.lake.transport import CHANGE_FIELDS

    require_corpus()
    rel = FILES[0]
    pos, _ = rows_events(CORPUS / rel)[1]
    path = flipped(tmp_path, rel, pos + 19)
    task = X.RangeTask(str(path), path.name, 1, 4, path.stat().st_size, 0, True)
    records = X.decode_range(task)
    (info,) = [r for k, r in records if k == RANGE]
    assert info["error_offset"] == pos and info["error_kind"] == "checksum", info
    txns = [r for k, r in records if k == TXN]
    assert txns and not any(t["begin_pos"] <= pos < t["end_pos"] for t in txns), txns
    at = [n for n, _ in CHANGE_FIELDS].index("pos")
    changes = [r for k, r in records if k == CHANGE]
    assert changes and not any(r[at] == pos for r in changes)
    kinds = {r["kind"] for k, r in records if k == FINDING}
    assert F.DAMAGED_TRANSACTION in kinds, kinds


def test_a_damaged_xa_prepare_withholds_its_commit(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The XA COMMIT (and the later XA ROLLBACK) of an XA whose PREPARE group held the
    damaged rows event are not printed as an XA decided with no rows."""
    require_corpus()
    rel = "mysql-8.0/std_data/binlog_recovery/duplicate_xid_xa_rollback.000001"
    rc, out, err = run(["transactions", str(CORPUS / rel)], capsys)
    clean = [json.loads(line) for line in out.splitlines()]
    assert [t["status"] for t in clean] == ["committed", "xa_committed", "xa_rolled_back"]
    xa = clean[1]
    (pos, length), = [(p, n) for p, n in rows_events(CORPUS / rel)
                      if xa["prepare"]["begin_pos"] <= p < xa["prepare"]["end_pos"]]
    path = flipped(tmp_path, rel, pos + length // 2)
    rc, out, err = run(["transactions", str(path)], capsys)
    assert rc == 1
    assert [json.loads(line) for line in out.splitlines()] == clean[:1]
    assert f"{path} at byte {pos}: event checksum mismatch" in err, err
    assert f"XA COMMIT of X'78',X'',1 not applied: its PREPARE at {path.name}:" \
           f"{xa['prepare']['begin_pos']} is damaged" in err, err
