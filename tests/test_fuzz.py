"""Untrusted bytes: truncated and mutated real binlogs raise only BinlogError subclasses,
never a bare IndexError/struct.error/UnicodeDecodeError, and never hang."""

from __future__ import annotations

import logging
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlake.binlog.errors import BinlogError
from binlake.binlog.reader import BinlogReader

from .corpus import CORPUS, require_corpus

# Small real files covering many event types: MySQL 8 rows + GTIDs, MySQL 8 payload events,
# MariaDB GTIDs/annotate, MySQL 5.1 statement events, partial JSON.
SAMPLES = [
    "mysql-8.0/std_data/replicated-bin.000001",
    "libs/rust_mysql_common/json.binlog.000001",
    "libs/binlog-parser/mysql-bin.07",
    "mysql-8.0/suite/binlog/std_data/ver_5_1_23.001",
    "libs/mysql-binlog-connector-java/mysql-bin.compressed",
    "mariadb-11.8/std_data/mdev-4645-binlog_group_id_checksum.binlog",
]


@contextmanager
def deadline(seconds: int) -> Iterator[None]:
    def boom(signum: int, frame: object) -> None:
        raise TimeoutError(f"reader did not finish within {seconds}s")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def read_all(path: Path, verify: bool) -> int:
    n = 0
    try:
        with deadline(20):
            for ev in BinlogReader(path, verify_checksums=verify):
                n += 1
                if ev.error is not None:
                    assert isinstance(ev.error, BinlogError)
    except BinlogError:
        pass
    return n


def _sample_bytes() -> list[tuple[str, bytes]]:
    out = []
    for rel in SAMPLES:
        p = CORPUS / rel
        if p.is_file():
            out.append((rel, p.read_bytes()))
    return out


@pytest.fixture(scope="module")
def samples() -> list[tuple[str, bytes]]:
    require_corpus()
    got = _sample_bytes()
    assert len(got) == len(SAMPLES), "a sample file is missing from the corpus"
    return got


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_truncated_files_raise_only_binlog_errors(samples, tmp_path: Path, data) -> None:
    _rel, raw = data.draw(st.sampled_from(samples))
    cut = data.draw(st.integers(min_value=0, max_value=len(raw) - 1))
    p = tmp_path / "cut.bin"
    p.write_bytes(raw[:cut])
    logging.disable(logging.WARNING)
    try:
        read_all(p, verify=True)
    finally:
        logging.disable(logging.NOTSET)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_files_raise_only_binlog_errors(samples, tmp_path: Path, data) -> None:
    _rel, raw = data.draw(st.sampled_from(samples))
    buf = bytearray(raw)
    for _ in range(data.draw(st.integers(min_value=1, max_value=8))):
        i = data.draw(st.integers(min_value=0, max_value=len(buf) - 1))
        buf[i] = data.draw(st.integers(min_value=0, max_value=255))
    p = tmp_path / "mut.bin"
    p.write_bytes(bytes(buf))
    logging.disable(logging.WARNING)
    try:
        # Without checksum verification the mutated bytes reach the event decoders.
        read_all(p, verify=False)
        read_all(p, verify=True)
    finally:
        logging.disable(logging.NOTSET)


def test_a_flipped_byte_is_caught_by_the_checksum(samples, tmp_path: Path) -> None:
    _rel, raw = samples[0]
    buf = bytearray(raw)
    buf[400] ^= 0x01  # inside an event body of replicated-bin.000001
    p = tmp_path / "flip.bin"
    p.write_bytes(bytes(buf))
    errors = [ev.error for ev in BinlogReader(p) if ev.error is not None]
    assert len(errors) == 1
    assert type(errors[0]).__name__ == "ChecksumError"
    assert errors[0].offset is not None and errors[0].offset <= 400


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(blob=st.binary(min_size=0, max_size=600))
def test_random_bytes_after_the_magic(tmp_path: Path, blob: bytes) -> None:
    p = tmp_path / "rand.bin"
    p.write_bytes(b"\xfebin" + blob)
    logging.disable(logging.WARNING)
    try:
        read_all(p, verify=False)
    finally:
        logging.disable(logging.NOTSET)


def test_rows_of_no_bytes_are_corrupt_not_endless() -> None:
    """A rows event over a Table_map of no columns (a damaged one): each row image is zero
    bytes, so the loop over the rows would never end (found by the mutation test above,
    which then held the suite's memory until the machine killed it)."""
    from binlake.binlog.columns import TableMap
    from binlake.binlog.constants import EventType as E
    from binlake.binlog.context import DecodeContext
    from binlake.binlog.errors import BinlogError
    from binlake.binlog.events.rows import _rows

    ctx = DecodeContext("f.000001", None)  # type: ignore[arg-type]
    tm = TableMap(7, "d", "t", 0, [])
    for code in (E.WRITE_ROWS, E.UPDATE_ROWS, E.DELETE_ROWS):
        with pytest.raises(BinlogError, match="takes no bytes") as info:
            _rows(ctx, tm, code, b"\x00\x01\x02", 0, 1234, 0, 0)
        assert info.value.offset == 1234 and info.value.file == "f.000001"
