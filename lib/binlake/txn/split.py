"""Splitting one binlog file into transaction-aligned byte ranges that decode independently.

A Spark job decodes a big file on many cores by giving each executor one :class:`ByteRange`;
the executor reads only that slice (``BinlogReader(uri, start=r.start, stop=r.end)``: the
reader reads the FDE at offset 4, then jumps to ``start``).  A range may start only where no
transaction is open -- at the first event of a group -- so that every rows event finds its
Table_map in the same range and every group is decoded whole by one executor.

Where groups start (MySQL ``rpl_trx_boundary_parser.cc`` and WL#4162; MariaDB
``log_event.h``):

* at every GTID, ANONYMOUS_GTID and GTID_TAGGED event (MySQL 5.6+; 5.7+ writes an anonymous
  one when GTIDs are off) and at every MariaDB GTID event (MariaDB 10.0+ starts every group,
  DDL and XA halves included, with one; there is no BEGIN query after it);
* in files without GTID events (MySQL 5.5 and older, 5.6 with ``gtid_mode=OFF``, MariaDB 5.x):
  at a ``BEGIN`` (or ``XA START``) query, at a self-contained statement outside a transaction
  (DDL, a statement-logged DML on a non-transactional table), at the first Intvar / Rand /
  User_var event before such a statement, at a Begin_load_query / Create_file event that
  opens a LOAD DATA outside a transaction, and at a Table_map outside a transaction (old
  servers logged row events on non-transactional tables without BEGIN; such a statement ends
  at the rows event carrying STMT_END_F).

Events between groups (Rotate, Stop, Incident, a MariaDB Binlog_checkpoint, ...) stay with the
group before them; the FDE and the file-header events (Previous_gtids, Gtid_list,
Binlog_checkpoint) belong to range 0, which starts at the first event after the FDE.  An XA
PREPARE group and its XA COMMIT group are separate groups and may land in different ranges:
pairing them is the transaction layer's job, across ranges and files.

Two ways of finding the groups, chosen per file and switched as the file demands:

* **transaction_length jumps** (MySQL 8.0.2+): a GTID event carries the size of its whole
  group, so the scan reads the GTID event, checks that ``transaction_length`` bytes further on
  there is an event boundary that may follow a group (a GTID, or a Rotate/Stop/... between
  groups: sane size, valid CRC32 when the file has checksums, else a decodable GTID whose
  ``log_pos`` agrees), and goes straight there: it examines nothing but the GTID events (and
  the file header, and events between groups).  On a local file it seeks over gaps longer
  than ``READ_THROUGH`` and reads ``JUMP_READ`` bytes after a seek (with both 0 it reads
  exactly the GTID events; the defaults make small transactions as cheap as a header scan).
  On S3 it reads forward and re-opens the object at the landing point for jumps longer than
  ``S3_REOPEN_GAP``; in a compressed file it decompresses through.  A declared
  length that does not lead to such a boundary (a damaged or hand-edited file) turns the
  jumps off for the rest of the file, which is then header-scanned from the event after
  that GTID: the splitter stays correct and the transaction layer reports the mismatch.
* **header scan** (everything else): read each event's common header and skip its body; only
  GTID events (and, in GTID-less files, Query/Intvar/Table_map/rows headers) are looked into.
  MariaDB files need nothing but the type codes.

A split point is only ever an event the reader will accept as a range start: whole in the
file, a valid CRC32 when the file has checksums (else a sane event after it).  From a point
where the framing breaks (an impossible event size, a truncated event), an encrypted tail
(MariaDB Start_encryption), or a later FDE describing another format (relay logs), no more
split points are made: the rest of the file is one range, and the reader reports the damage
there exactly as a whole-file decode does.
"""

from __future__ import annotations

import bisect
import heapq
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..binlog.constants import (
    BINLOG_MAGIC,
    CHECKSUM_LEN,
    LOG_EVENT_BINLOG_IN_USE_F,
    MYSQL_ENCRYPTED_MAGIC,
    V4_HEADER_LEN,
    EventType,
)
from ..binlog.context import DecodeContext
from ..binlog.errors import (
    BinlogError,
    CorruptEventError,
    EncryptedBinlogError,
    NotABinlogError,
    SourceError,
    TruncatedError,
    UnsupportedFormatError,
)
from ..binlog.events import load_all
from ..binlog.fde import FormatDescription, parse_fde, parse_start_v3
from ..binlog.reader import MAX_EVENT_SIZE
from ..binlog.source import open_binlog, size_of

__all__ = ["ByteRange", "ScanStats", "split_file", "transaction_starts"]

E = EventType

# Set to False to header-scan MySQL 8 files too (tests compare both ways; benchmarks).
USE_TRANSACTION_LENGTH = True
CHUNK = 1 << 20  # read size of the header scan
# The fast path on a local file: after a seek read this much (a GTID event and, with small
# transactions, the next few groups), and read through a gap this short rather than seek
# (a read from the page cache is cheaper than a seek plus a read per transaction).  Both 0:
# read exactly the GTID events and nothing else.
JUMP_READ = 64 << 10
READ_THROUGH = 64 << 10
# S3: a forward gap longer than this re-opens the object at the landing point (a new ranged
# GET) instead of reading through; shorter jumps read through (and keep the bytes, so a
# failed landing check can step back without a new request).
S3_REOPEN_GAP = 8 << 20
# Compressed files: a transaction longer than this is walked event by event rather than
# buffered whole for the landing check (decompression reads it either way).
RETAIN_MAX = 8 << 20

_U32 = struct.Struct("<I")
_U16 = struct.Struct("<H")

_MYSQL_GTIDS = frozenset({E.GTID, E.ANONYMOUS_GTID, E.GTID_TAGGED})
_GTIDS = _MYSQL_GTIDS | {E.MARIADB_GTID}
# Events that can sit between two groups: besides a GTID, where a transaction_length jump may
# land (rpl_trx_boundary_parser.cc: EVENT_BOUNDARY_TYPE_IGNORE / INCIDENT).
_BETWEEN = frozenset({E.ROTATE, E.STOP, E.INCIDENT, E.HEARTBEAT, E.HEARTBEAT_V2,
                      E.PREVIOUS_GTIDS, E.FORMAT_DESCRIPTION, E.MARIADB_GTID_LIST,
                      E.BINLOG_CHECKPOINT})
_KNOWN = frozenset(int(t) for t in EventType)
_FDE_TYPES = frozenset({E.FORMAT_DESCRIPTION, E.START_V3})

# Event classes of the GTID-less boundary parser (WL#4162).
_C_IGNORE, _C_BEGIN, _C_END, _C_STMT, _C_PRE, _C_LOAD, _C_MAP, _C_ROWS, _C_INSIDE = range(9)
# Parser states: outside a group; waiting for the statement that ends a group opened by
# pre-statement events (Intvar/Rand/User_var) or a LOAD DATA block; inside BEGIN ... COMMIT;
# inside a rows statement logged without BEGIN (ends at STMT_END_F).
_S_NONE, _S_WAIT, _S_DML, _S_ROWS = range(4)

# What the walk must look at: after the first GTID only GTIDs (and format changes); in a
# GTID-less file inside BEGIN ... COMMIT only what may end the transaction; else everything.
_WATCH_GTID = _GTIDS | _FDE_TYPES | {E.START_ENCRYPTION}
_WATCH_DML = _WATCH_GTID | {E.QUERY, E.XID, E.XA_PREPARE}
_WATCH_ALL = frozenset(range(256))

_ROWS_EVENTS = frozenset({E.PRE_GA_WRITE_ROWS, E.PRE_GA_UPDATE_ROWS, E.PRE_GA_DELETE_ROWS,
                          E.WRITE_ROWS_V1, E.UPDATE_ROWS_V1, E.DELETE_ROWS_V1, E.WRITE_ROWS,
                          E.UPDATE_ROWS, E.DELETE_ROWS, E.PARTIAL_UPDATE_ROWS,
                          E.WRITE_ROWS_COMPRESSED_V1, E.UPDATE_ROWS_COMPRESSED_V1,
                          E.DELETE_ROWS_COMPRESSED_V1, E.WRITE_ROWS_COMPRESSED,
                          E.UPDATE_ROWS_COMPRESSED, E.DELETE_ROWS_COMPRESSED})
_STMT_END_F = 0x1
_CLASS: dict[int, int] = {
    **{t: _C_ROWS for t in _ROWS_EVENTS},
    E.TABLE_MAP: _C_MAP,
    E.ROWS_QUERY: _C_MAP,  # precedes the Table_maps of its statement
    E.ANNOTATE_ROWS: _C_MAP,
    E.INTVAR: _C_PRE, E.RAND: _C_PRE, E.USER_VAR: _C_PRE,
    E.BEGIN_LOAD_QUERY: _C_LOAD, E.CREATE_FILE: _C_LOAD,
    E.APPEND_BLOCK: _C_INSIDE,
    E.EXECUTE_LOAD_QUERY: _C_STMT, E.EXEC_LOAD: _C_STMT, E.DELETE_FILE: _C_STMT,
    E.LOAD: _C_STMT, E.NEW_LOAD: _C_STMT, E.QUERY_COMPRESSED: _C_STMT,
    E.TRANSACTION_PAYLOAD: _C_STMT,  # a whole transaction (MySQL 8 has GTIDs anyway)
    E.XID: _C_END, E.XA_PREPARE: _C_END,
    E.TRANSACTION_CONTEXT: _C_INSIDE, E.VIEW_CHANGE: _C_INSIDE,
}

_DECODERS = load_all()


@dataclass(frozen=True)
class ByteRange:
    """A transaction-aligned slice ``[start, end)`` of a binlog file (offsets in the
    uncompressed file); decode it with ``BinlogReader(uri, start=start, stop=end)``.

    ``first_event``: offset of the first event of the range's first transaction -- ``start``
    for every range but the first, where the file-header events (Previous_gtids, Gtid_list,
    ...) come before it; ``end`` when the range holds no transaction.  ``events``: how many
    events the range holds (the FDE at offset 4, which no range yields, not counted; events
    inside a Transaction_payload not counted), ``None`` when the scan jumped over them.
    ``transactions``: how many groups start in the range.
    """

    uri: str
    start: int
    end: int
    first_event: int
    events: int | None
    transactions: int

    @property
    def size(self) -> int:
        return self.end - self.start


@dataclass
class ScanStats:
    """What a scan did (pass one to :func:`transaction_starts` / :func:`split_file`).

    With ``record`` set, ``examined`` lists ``(offset, length)`` of every byte range the scan
    looked at (headers parsed, bodies decoded, checksums computed) and ``reads`` every read
    from the source.  On the fast path the scan examines nothing but the file header, the
    GTID events and the events between groups; what it *reads* around them depends on
    ``JUMP_READ`` / ``READ_THROUGH`` (both 0: exactly what it examines).
    """

    record: bool = False
    examined: list[tuple[int, int]] = field(default_factory=list)
    reads: list[tuple[int, int]] = field(default_factory=list)
    read_calls: int = 0
    bytes_read: int = 0
    bytes_skipped: int = 0  # jumped over without reading (seek, or an S3 re-open)
    bytes_read_through: int = 0  # read only to get past them (a short gap, S3, compressed)
    events: int = 0  # event headers looked at
    gtids: int = 0
    jumps: int = 0  # transaction_length jumps taken
    fast_path: bool = False  # the file was read with transaction_length jumps at first
    fallback_at: int | None = None  # the GTID whose transaction_length ended the jumps
    fallback_reason: str | None = None
    stopped_at: int | None = None  # no split points from here on
    stopped_reason: str | None = None
    end: int | None = None  # the file's (uncompressed) size
    transactions: int = 0  # split points found


def _gtid_length(buf: bytes, i: int, end: int) -> int | None:
    """transaction_length of the GTID / ANONYMOUS_GTID body ``buf[i:end]`` (None: absent).

    Layout (events/gtid.py): flags(1) sid(16) gno(8) lt_type(1)=2 last_committed(8)
    sequence_number(8) immediate_commit_timestamp(7; bit 55: original_commit_timestamp(7)
    follows) transaction_length(length-encoded integer) ...
    """
    at = i + 42
    if end < at + 8 or buf[i + 25] != 2:
        return None
    if buf[at + 6] & 0x80:
        at += 7
    at += 7
    if at >= end:
        return None
    first = buf[at]
    if first < 251:
        return first or None
    width = _PACKED_WIDTH.get(first)
    if width is None or at + 1 + width > end:
        return None
    return int.from_bytes(buf[at + 1:at + 1 + width], "little") or None


_PACKED_WIDTH = {252: 2, 253: 3, 254: 8}
# Where the inlined fast path may land (the FDE, with its special CRC, goes the long way).
_INLINE_LANDING = (_GTIDS | _BETWEEN) - {E.FORMAT_DESCRIPTION}


# -- input -----------------------------------------------------------------------------------


class _Input:
    """A window over the file: ``buf`` holds the bytes from offset ``base``.

    ``fill(pos, n)`` makes ``[pos, pos + n)`` available (fewer bytes only at the end of the
    file), reading at least ``readahead`` bytes at a time: ``CHUNK`` for a header scan,
    ``JUMP_READ`` on a local file's fast path.
    """

    def __init__(self, uri: str, stats: ScanStats) -> None:
        self.uri = uri
        self.stats = stats
        opened = open_binlog(uri)
        self._opened = opened
        self.compressed = opened.compression is not None
        self.seekable = opened.seekable_ranges
        self.local = self.seekable and opened.location.scheme == "file"
        stream: Any = opened.stream
        # A local file is read unbuffered so a seek skips the bytes for real.
        self.stream: Any = getattr(stream, "raw", stream) if self.local else stream
        self.size: int | None = size_of(uri) if self.seekable else None
        self.eof_at: int | None = self.size  # the file's size, once known
        self.buf = b""
        self.base = 0
        self.readahead = CHUNK
        self.record = stats.record

    def close(self) -> None:
        try:
            self.stream.close()
        finally:
            self._opened.close()

    def _read(self, n: int) -> bytes:
        try:
            data = self.stream.read(n)
        except BinlogError as exc:
            raise exc.with_location(self.uri, self.base + len(self.buf)) from None
        except Exception as exc:  # I/O, corrupt gzip/zstd, S3
            raise SourceError(f"reading failed: {exc}", file=self.uri,
                              offset=self.base + len(self.buf)) from exc
        return data or b""

    def _reposition(self, pos: int) -> None:
        """Point the stream at ``pos`` and empty the window."""
        at = self.base + len(self.buf)  # where the stream is
        gap = pos - at
        if self.local and not 0 < gap <= READ_THROUGH:
            if gap > 0:
                self.stats.bytes_skipped += gap
            self.stream.seek(pos)
        elif gap >= 0 and (self.local or self.compressed or gap <= S3_REOPEN_GAP):
            left = gap  # read through (and drop) the gap
            while left > 0:
                chunk = self._read(min(left, CHUNK))
                if not chunk:
                    self.eof_at = pos - left
                    break
                left -= len(chunk)
                self.stats.bytes_read_through += len(chunk)
        elif self.compressed:
            raise SourceError("internal error: cannot step back in a compressed stream",
                              file=self.uri, offset=pos)
        else:  # S3: a long jump forward, or a step back: a new ranged GET from pos
            assert self.size is not None
            if pos > at:
                self.stats.bytes_skipped += pos - at
            self.stream.close()
            if pos < self.size:
                self.stream = open_binlog(self.uri, pos).stream
            else:
                self.stream = _Empty()
        self.buf = b""
        self.base = pos

    def fill(self, pos: int, n: int, look: bool = True) -> int:
        """Make ``buf[pos - base : pos - base + n]`` hold the file's bytes; return how many of
        the ``n`` bytes there are (fewer only at the end of the file).  ``look``: the caller
        examines them (recorded in the stats)."""
        if self.record and look:
            self.stats.examined.append((pos, n))
        base = self.base
        end = base + len(self.buf)
        if base <= pos and pos + n <= end:
            return n
        if pos < base or pos > end:
            self._reposition(pos)
            base = end = pos
        if self.eof_at is not None and end >= self.eof_at:
            return max(0, min(n, end - pos))
        keep = self.buf[pos - base:]
        parts = [keep] if keep else []
        missing = pos + n - end
        at = end
        while missing > 0:
            chunk = self._read(max(missing, self.readahead))
            if not chunk:
                self.eof_at = at
                break
            stats = self.stats
            stats.read_calls += 1
            stats.bytes_read += len(chunk)
            if self.record:
                stats.reads.append((at, len(chunk)))
            parts.append(chunk)
            at += len(chunk)
            missing -= len(chunk)
        self.buf = b"".join(parts) if len(parts) != 1 else parts[0]
        self.base = pos
        return min(n, len(self.buf))

    def file_end(self) -> int:
        """The file's (uncompressed) size; a compressed file is read to its end for it."""
        if self.eof_at is None:
            at = self.base + len(self.buf)
            while True:
                chunk = self._read(CHUNK)
                if not chunk:
                    break
                at += len(chunk)
            self.eof_at = at
        return self.eof_at


class _Empty:
    def read(self, n: int = -1) -> bytes:
        return b""

    def close(self) -> None:
        pass


# -- the scan ----------------------------------------------------------------------------------


def _same_format(a: FormatDescription, b: FormatDescription) -> bool:
    """Would the events after ``b`` be decoded the same under ``a``?  The decoders depend on
    the flavor, the header and post-header lengths, the checksum algorithm and the drop-tree
    type permutation, not on the server version string."""
    return (a.binlog_version, a.header_length, a.post_header_lengths, a.checksum_alg,
            a.flavor, a.type_permutation) == (
            b.binlog_version, b.header_length, b.post_header_lengths, b.checksum_alg,
            b.flavor, b.type_permutation)


class _Scanner:
    """Walks one file and yields its group starts as ``(pos, epoch, count)``.

    ``count`` is the number of events walked since the start of ``epoch``; an epoch ends at
    each transaction_length jump (the events jumped over are not counted), so the number of
    events between two marks is known when both are in one epoch.
    """

    def __init__(self, uri: str, *, verify_checksums: bool, stats: ScanStats | None) -> None:
        self.uri = uri
        self.verify = verify_checksums
        self.stats = stats if stats is not None else ScanStats()
        self.fde: FormatDescription | None = None
        self.fde_end = 0
        self.end = 0  # file size, once the scan has finished
        self.end_mark: tuple[int, int, int | None] = (0, 0, 0)
        self.epoch = 0
        self.count = 0
        self.jumped = False
        self.splitting = True
        self.jump_enabled = False
        self.gtid_seen = False
        self.state = _S_NONE
        self.out: list[tuple[int, int, int]] = []
        self.logpos_ok = False  # log_pos of the events agrees with their offsets
        self.verified = -1  # a landing point whose event was checked whole
        # set from the FDE by _set_format / __iter__:
        self.hl = V4_HEADER_LEN
        self.crc_len = 0
        self.minsize = V4_HEADER_LEN
        self.perm: dict[int, int] | None = None
        self.inp: _Input
        self.ctx: DecodeContext

    # -- file header ---------------------------------------------------------------------

    def _header(self, inp: _Input) -> None:
        uri = self.uri
        have = inp.fill(0, 4 + V4_HEADER_LEN)
        buf = inp.buf
        magic = buf[:4]
        if have < 4:
            raise TruncatedError("file ends inside the 4-byte binlog magic", file=uri,
                                 offset=0, expected=4, actual=have, raw=buf)
        if magic == MYSQL_ENCRYPTED_MAGIC:
            raise EncryptedBinlogError(
                "MySQL encrypted binlog (binlog_encryption=ON): binlake cannot read it without "
                "the keyring; decrypt it with the server first", file=uri, offset=0,
                expected=BINLOG_MAGIC, actual=magic, raw=magic)
        if magic != BINLOG_MAGIC:
            raise NotABinlogError("not a binlog file: bad magic", file=uri, offset=0,
                                  expected=BINLOG_MAGIC, actual=magic, raw=buf[:16])
        if have < 4 + V4_HEADER_LEN:
            raise TruncatedError("file ends inside the first event header", file=uri,
                                 offset=4, expected=V4_HEADER_LEN, actual=have - 4,
                                 raw=buf[4:])
        type_code = buf[8]
        size = _U32.unpack_from(buf, 13)[0]
        if type_code == E.START_V3 and size == 13 + 56:
            raise UnsupportedFormatError(
                "binlog v1 (MySQL 3.23, 13-byte headers) is not supported", file=uri,
                offset=4, expected="binlog v3 or v4", actual="v1")
        if type_code not in _FDE_TYPES:
            raise CorruptEventError(
                "no Format_description event at the start of the file", file=uri, offset=4,
                expected=f"event type {int(E.FORMAT_DESCRIPTION)} (FORMAT_DESCRIPTION)",
                actual=type_code, raw=buf[4:4 + V4_HEADER_LEN])
        if size < V4_HEADER_LEN or size > MAX_EVENT_SIZE:
            raise CorruptEventError(
                "impossible event size in header (garbage in place of an event?)", file=uri,
                offset=4, expected=f"{V4_HEADER_LEN}..{MAX_EVENT_SIZE} bytes", actual=size,
                raw=buf[4:4 + V4_HEADER_LEN])
        if inp.fill(4, size) < size:
            raise TruncatedError("file ends inside an event", file=uri, offset=4,
                                 expected=f"{size} bytes of event",
                                 actual=len(inp.buf) - (4 - inp.base))
        i = 4 - inp.base
        body = inp.buf[i + V4_HEADER_LEN:i + size]
        if type_code == E.START_V3:
            self.fde = parse_start_v3(body, file=uri, offset=4 + V4_HEADER_LEN)
        else:
            self.fde = parse_fde(body, file=uri, offset=4 + V4_HEADER_LEN)
        self.fde_end = 4 + size
        self.ctx = DecodeContext(uri, self.fde)

    # -- helpers -------------------------------------------------------------------------

    def _stop(self, pos: int, reason: str) -> None:
        if self.splitting:
            self.splitting = False
            self.stats.stopped_at = pos
            self.stats.stopped_reason = reason

    def _no_jump(self, pos: int, reason: str) -> None:
        if self.jump_enabled:
            self.jump_enabled = False
            self.inp.readahead = CHUNK
            self.stats.fallback_at = pos
            self.stats.fallback_reason = reason

    def _crc_ok(self, i: int, size: int, type_code: int) -> bool:
        buf = self.inp.buf
        stored = _U32.unpack_from(buf, i + size - CHECKSUM_LEN)[0]
        if type_code == E.FORMAT_DESCRIPTION:  # CRC computed with the in-use flag cleared
            raw = bytearray(buf[i:i + size - CHECKSUM_LEN])
            raw[17] &= ~LOG_EVENT_BINLOG_IN_USE_F & 0xFF
            return zlib.crc32(raw) == stored
        return zlib.crc32(memoryview(buf)[i:i + size - CHECKSUM_LEN]) == stored

    def _sane_header(self, i: int) -> bool:
        buf = self.inp.buf
        type_code = self._type(buf[i + 4])
        size = _U32.unpack_from(buf, i + 9)[0]
        return type_code in _KNOWN and self.minsize <= size <= MAX_EVENT_SIZE

    def _type(self, code: int) -> int:
        perm = self.perm
        return perm.get(code, code) if perm else code

    def _start_ok(self, pos: int, size: int) -> bool:
        """Will the reader accept ``pos`` as a range start (BinlogReader._check_boundary)?"""
        inp = self.inp
        if pos == self.verified:
            return True  # checked as the landing point of the jump that led here
        crc = self.crc_len
        want = size if crc else size + self.hl
        have = inp.fill(pos, want)
        if have < size:
            return False  # the event is cut off by the end of the file
        i = pos - inp.base
        if crc:
            return self._crc_ok(i, size, E.QUERY)
        return have < want or self._sane_header(i + size)

    def _mark(self, pos: int) -> None:
        if self.splitting:
            self.out.append((pos, self.epoch, self.count))
            self.stats.transactions += 1

    # -- GTID events and transaction_length jumps ----------------------------------------

    def _gtid(self, pos: int, type_code: int, size: int) -> int:
        self.stats.gtids += 1
        inp = self.inp
        inp.readahead = JUMP_READ if self.jump_enabled and inp.local else CHUNK
        if not self.gtid_seen:
            self.gtid_seen = True
            self.state = _S_NONE
        nxt = pos + size
        if not self._start_ok(pos, size):
            return nxt  # not a usable boundary: it stays inside the range before it
        self._mark(pos)
        if not self.jump_enabled or type_code not in _MYSQL_GTIDS:
            return nxt
        length = self._transaction_length(pos, type_code, size)
        if not length:
            self._no_jump(pos, "a GTID event without transaction_length")
            return nxt
        landing = self._landing(pos, size, pos + length)
        if landing is None:
            return nxt  # compressed and too long to buffer: walk this one
        if landing is False:
            self._no_jump(pos, f"transaction_length {length} of the GTID event at {pos} does "
                               "not lead to an event boundary between groups")
            return nxt
        self.stats.jumps += 1
        self.jumped = True
        return pos + length

    def _transaction_length(self, pos: int, type_code: int, size: int) -> int | None:
        inp = self.inp
        i = pos - inp.base + self.hl
        end = pos - inp.base + size - self.crc_len
        if type_code != E.GTID_TAGGED:
            return _gtid_length(inp.buf, i, end)
        ctx = self.ctx
        ctx.type_code = type_code
        try:
            data = _DECODERS[type_code](ctx, bytes(inp.buf[i:end]), pos + self.hl)
        except BinlogError:
            return None
        length = data.get("transaction_length")
        return int(length) if length else None

    def _landing(self, pos: int, gsize: int, q: int) -> bool | None:
        """Is there, at ``q``, an event that may follow a group?  None: not checked."""
        inp = self.inp
        hl = self.hl
        if q <= pos + gsize:
            return False
        if inp.local or (inp.seekable and q - pos > S3_REOPEN_GAP):
            if inp.size is not None and q >= inp.size:
                return q == inp.size  # exactly at the end of the file: the last group
            if inp.fill(q, hl) < hl:
                return False
        else:
            if q - pos > RETAIN_MAX and inp.compressed:
                return None
            have = inp.fill(pos, q - pos + hl, False)  # keeps [pos, q) for a step back
            if self.stats.record:
                self.stats.examined.append((q, hl))
            if have < q - pos:
                return False
            if have == q - pos:
                return True  # the group ends the file
            if have < q - pos + hl:
                return False
        i = q - inp.base
        buf = inp.buf
        type_code = self._type(buf[i + 4])
        size = _U32.unpack_from(buf, i + 9)[0]
        if type_code not in _GTIDS and type_code not in _BETWEEN:
            return False
        if size < self.minsize or size > MAX_EVENT_SIZE:
            return False
        if inp.fill(q, size) < size:
            return False
        i = q - inp.base
        if self.crc_len:
            if not self._crc_ok(i, size, type_code):
                return False
            if type_code in _GTIDS:
                self.verified = q
            return True
        # No checksums: a GTID must decode, and log_pos must agree where the file keeps it.
        if type_code in _MYSQL_GTIDS:
            ctx = self.ctx
            ctx.type_code = type_code
            try:
                _DECODERS[type_code](ctx, inp.buf[i + hl:i + size], q + hl)
            except BinlogError:
                return False
        if self.logpos_ok:
            return _U32.unpack_from(inp.buf, i + 13)[0] == (q + size) & 0xFFFFFFFF
        return True

    # -- GTID-less files: the WL#4162 boundary parser -------------------------------------

    def _classic(self, pos: int, type_code: int, size: int) -> None:
        cls = _CLASS.get(type_code, _C_IGNORE)
        if type_code == E.QUERY:
            cls = self._query_class(pos, size)
        elif cls == _C_ROWS and self.state in (_S_NONE, _S_ROWS):
            if self._stmt_end(pos, size):
                self.state = _S_NONE
            else:
                self.state = _S_ROWS
            return
        if cls in (_C_IGNORE, _C_ROWS):
            return
        state = self.state
        if state == _S_NONE:
            if cls == _C_BEGIN:
                self.state = _S_DML
            elif cls in (_C_PRE, _C_LOAD):
                self.state = _S_WAIT
            elif cls == _C_MAP:
                self.state = _S_ROWS
            elif cls != _C_STMT:
                return  # an END or INSIDE event outside a group: it stays where it is
            if self._start_ok(pos, size):
                self._mark(pos)
        elif state == _S_WAIT:
            if cls in (_C_STMT, _C_END):
                self.state = _S_NONE
            elif cls == _C_BEGIN:
                self.state = _S_DML
        elif state == _S_DML:
            if cls == _C_END:
                self.state = _S_NONE
            elif cls == _C_BEGIN and self._start_ok(pos, size):
                self._mark(pos)  # the transaction before never ended (a crash)
        elif cls == _C_END:  # _S_ROWS: only a COMMIT or the STMT_END_F rows event ends it
            self.state = _S_NONE

    def _query_class(self, pos: int, size: int) -> int:
        fde = self.fde
        assert fde is not None
        inp = self.inp
        hl = self.hl
        post = fde.post_header_len(E.QUERY, 13)
        body_end = size - self.crc_len
        if body_end < hl + post or inp.fill(pos, hl + post) < hl + post:
            return _C_STMT  # a damaged event: the reader reports it
        i = pos - inp.base + hl
        buf = inp.buf
        db_len = buf[i + 8]
        status_len = _U16.unpack_from(buf, i + 11)[0] if post >= 13 else 0
        start = hl + post + status_len + db_len + 1  # the query text, from the event start
        stop = min(body_end, start + 16)  # enough to tell BEGIN/COMMIT/XA ... apart
        if stop <= start or inp.fill(pos, stop) < stop:
            return _C_STMT
        i = pos - inp.base
        head = inp.buf[i + start:i + stop].strip().upper()
        if head == b"BEGIN" or head.startswith(b"XA START"):
            return _C_BEGIN
        if head in (b"COMMIT", b"ROLLBACK"):
            return _C_END
        if head.startswith((b"XA COMMIT", b"XA ROLLBACK")) and self.state == _S_DML:
            return _C_END
        return _C_STMT

    def _stmt_end(self, pos: int, size: int) -> bool:
        fde = self.fde
        assert fde is not None
        at = self.hl + fde.table_id_size
        inp = self.inp
        if inp.fill(pos, at + 2) < at + 2 or size < at + 2:
            return False
        return bool(_U16.unpack_from(inp.buf, pos - inp.base + at)[0] & _STMT_END_F)

    # -- a later FDE (relay logs) ---------------------------------------------------------

    def _later_fde(self, pos: int, type_code: int, size: int) -> bool:
        inp = self.inp
        if inp.fill(pos, size) < size:
            return True  # cut off: the main loop finds the truncation
        i = pos - inp.base
        body = inp.buf[i + V4_HEADER_LEN:i + size]
        if type_code != E.FORMAT_DESCRIPTION:
            self._stop(pos, "a Start_v3 event after the start of the file")
            return True
        try:
            fde = parse_fde(body, file=self.uri, offset=pos + V4_HEADER_LEN)
        except BinlogError:
            self._stop(pos, "a Format_description event that does not parse")
            return False
        assert self.fde is not None
        if not _same_format(fde, self.fde):
            # A range after it would be decoded with the first FDE: no more split points.
            self._stop(pos, "a Format_description event describing another format")
        self._set_format(fde)
        return True

    def _set_format(self, fde: FormatDescription) -> None:
        self.hl = fde.header_length
        self.crc_len = CHECKSUM_LEN if fde.has_checksum else 0
        self.minsize = self.hl + self.crc_len
        self.perm = fde.type_permutation

    # -- the walk --------------------------------------------------------------------------

    def __iter__(self) -> Iterator[tuple[int, int, int]]:
        stats = self.stats
        inp = self.inp = _Input(self.uri, stats)
        try:
            if inp.local:
                inp.readahead = JUMP_READ  # the file header: little more than the FDE
            self._header(inp)
            fde = self.fde
            assert fde is not None
            self._set_format(fde)
            # Verifying checksums means reading every event: no jumps then.
            self.jump_enabled = (USE_TRANSACTION_LENGTH and not self.verify
                                 and fde.flavor == "mysql" and fde.version >= (8, 0, 2))
            stats.fast_path = self.jump_enabled
            inp.readahead = JUMP_READ if self.jump_enabled and inp.local else CHUNK
            yield from self._walk()
        finally:
            inp.close()

    def _walk(self) -> Iterator[tuple[int, int, int]]:
        inp = self.inp
        out = self.out
        unpack = _U32.unpack_from
        pos = self.fde_end
        count = 0  # events walked in this epoch
        walked = 0  # events walked in the epochs before
        hl, minsize, perm = self.hl, self.minsize, self.perm
        buf, base = inp.buf, inp.base
        blen = len(buf)
        watched = _WATCH_ALL
        complete = True  # every event up to the end of the file was walked
        stats = self.stats
        record = stats.record
        small_reads = inp.readahead < CHUNK
        crc32 = zlib.crc32
        mv = memoryview(buf)
        # Inlined jumps need checksums (else: the general path) and the verified landing.
        verified = -1
        self.logpos_ok = False
        while True:
            i = pos - base
            if i < 0 or i + hl > blen:
                have = inp.fill(pos, hl, False)
                buf, base = inp.buf, inp.base
                blen = len(buf)
                mv = memoryview(buf)
                i = pos - base
                if have < hl:
                    if have or pos != inp.file_end():
                        self._stop(pos, "the file ends inside an event")
                        complete = False
                    break
            type_code = buf[i + 4]
            if perm:
                type_code = perm.get(type_code, type_code)
            size = unpack(buf, i + 9)[0]
            if size < minsize or size > MAX_EVENT_SIZE:
                self._stop(pos, f"impossible event size {size}")
                complete = False
                break
            if self.verify and self.crc_len and self.splitting:
                if inp.fill(pos, size) < size:
                    self._stop(pos, "the file ends inside an event")
                    complete = False
                    break
                buf, base = inp.buf, inp.base
                blen = len(buf)
                mv = memoryview(buf)
                i = pos - base
                if not self._crc_ok(i, size, type_code):
                    self._stop(pos, "event checksum mismatch")
            if pos == verified and type_code in _MYSQL_GTIDS and i + size <= blen:
                # The fast path's common case, kept free of calls: a GTID checked whole as
                # the landing point of the jump that led here, whose own jump lands inside
                # the buffer on an event with a valid CRC32.
                length = _gtid_length(buf, i + hl, i + size - CHECKSUM_LEN)
                if length:
                    j = i + length
                    if j + hl <= blen:
                        size2 = unpack(buf, j + 9)[0]
                        end2 = j + size2 - CHECKSUM_LEN
                        if (buf[j + 4] in _INLINE_LANDING and minsize <= size2 <= MAX_EVENT_SIZE
                                and end2 + CHECKSUM_LEN <= blen
                                and crc32(mv[j:end2]) == unpack(buf, end2)[0]):
                            stats.gtids += 1
                            stats.jumps += 1
                            if record:
                                stats.examined += [(pos, size), (pos + length, size2)]
                            if self.splitting:
                                stats.transactions += 1
                                yield (pos, self.epoch, count)
                            self.epoch += 1
                            walked += count + 1
                            count = 0
                            pos += length
                            verified = pos if buf[j + 4] in _GTIDS else -1
                            continue
            if type_code in watched:
                if record:
                    self.stats.examined.append((pos, hl))
                self.count = count
                if type_code in _GTIDS:
                    if self.jump_enabled and not self.logpos_ok:
                        self.logpos_ok = unpack(buf, i + 13)[0] == (pos + size) & 0xFFFFFFFF
                    nxt = self._gtid(pos, type_code, size)
                elif type_code in _FDE_TYPES:
                    if not self._later_fde(pos, type_code, size):
                        complete = False
                        break
                    hl, minsize, perm = self.hl, self.minsize, self.perm
                    nxt = pos + size
                elif type_code == E.START_ENCRYPTION:
                    self._stop(pos, "the events after Start_encryption are encrypted")
                    complete = False
                    break
                else:
                    self._classic(pos, type_code, size)
                    nxt = pos + size
                if out:
                    yield from out
                    out.clear()
                if self.jumped:
                    self.jumped = False
                    self.epoch += 1
                    walked += count + 1
                    count = 0
                else:
                    count += 1
                buf, base = inp.buf, inp.base
                blen = len(buf)
                mv = memoryview(buf)
                pos = nxt
                small_reads = inp.readahead < CHUNK
                verified = self.verified if self.jump_enabled and self.crc_len else -1
                if self.gtid_seen:
                    watched = _WATCH_GTID
                else:
                    watched = _WATCH_DML if self.state == _S_DML else _WATCH_ALL
            else:
                if record:
                    self.stats.examined.append((pos, hl))
                if small_reads and type_code not in _BETWEEN:
                    inp.readahead = CHUNK  # walking a transaction: read ahead in chunks
                    small_reads = False
                count += 1
                pos += size
        self.stats.events = walked + count
        self.end = inp.file_end()
        self.stats.end = self.end
        self.end_mark = (self.end, self.epoch, count if complete else None)


# -- public API -------------------------------------------------------------------------------


def transaction_starts(uri: str, *, verify_checksums: bool = False,
                       stats: ScanStats | None = None) -> Iterator[int]:
    """Offsets in ``uri`` where a transaction (group) starts: the split points of the file.

    ``verify_checksums``: read every event and check its CRC32 (this turns the
    transaction_length jumps off); from the first mismatch on no split point is made.
    ``stats`` collects what the scan did (see :class:`ScanStats`).
    """
    scan = _Scanner(str(uri), verify_checksums=verify_checksums, stats=stats)
    for pos, _epoch, _count in scan:
        yield pos


def split_file(uri: str, *, target_bytes: int = 64 << 20, min_bytes: int = 1 << 20,
               stats: ScanStats | None = None) -> list[ByteRange]:
    """Cut ``uri`` into transaction-aligned ranges of about ``target_bytes`` each.

    The ranges cover ``[first event after the FDE, end of file)`` without gaps or overlaps;
    each holds whole groups (a group larger than ``target_bytes`` gets a range of its own,
    never cut).  A range is cut at the last group start that keeps it within
    ``target_bytes``, and is never made shorter than ``min_bytes`` (a short tail joins the
    range before it).  There is always at least one range.
    """
    if target_bytes <= 0:
        raise ValueError("target_bytes must be positive")
    uri = str(uri)
    scan = _Scanner(uri, verify_checksums=False, stats=stats)
    marks = iter(scan)
    ranges: list[ByteRange] = []

    def events(a: tuple[int, int, int | None], b: tuple[int, int, int | None]) -> int | None:
        if a[1] != b[1] or a[2] is None or b[2] is None:
            return None
        return b[2] - a[2]

    def emit(a: tuple[int, int, int | None], b: tuple[int, int, int | None], n: int,
             first: int | None) -> None:
        ranges.append(ByteRange(uri, a[0], b[0], b[0] if first is None else first,
                                events(a, b), n))

    # cur: the start of the range being built; prev: the latest group start in it; n: the
    # group starts in [cur, prev).
    cur: tuple[int, int, int | None] | None = None
    prev: tuple[int, int, int] | None = None
    first: int | None = None
    n = 0
    for m in marks:
        if cur is None:
            cur = (scan.fde_end, 0, 0)
        s = m[0]
        while True:
            if prev is None:
                prev, first, n = m, s, 0
                break
            if s - cur[0] <= target_bytes:
                n += 1
                prev = m
                break
            if prev[0] > cur[0] and prev[0] - cur[0] >= min_bytes:
                emit(cur, prev, n, first)
                cur, first, n = prev, prev[0], 0
                continue
            if s - cur[0] >= min_bytes:
                emit(cur, m, n + 1, first)
                cur, first, n, prev = m, s, 0, m
                break
            n += 1
            prev = m
            break
    if cur is None:
        cur = (scan.fde_end, 0, 0)
    end = scan.end_mark
    if (prev is not None and end[0] - cur[0] > target_bytes and prev[0] > cur[0]
            and prev[0] - cur[0] >= min_bytes):
        # The last group does not fit either: it gets a range of its own.
        emit(cur, prev, n, first)
        cur, first, n = prev, prev[0], 0
    tail_n = n + (1 if prev is not None else 0)
    if ranges and end[0] - cur[0] < min_bytes:
        last = ranges.pop()  # a short tail joins the range before it
        tail_events = events(cur, end)
        merged = None
        if last.events is not None and tail_events is not None:
            merged = last.events + tail_events
        ranges.append(ByteRange(uri, last.start, end[0], last.first_event, merged,
                                last.transactions + tail_n))
    else:
        emit(cur, end, tail_n, first)
    return ranges


def group_ranges(files: list[list[ByteRange]], slots: int, target_bytes: int
                 ) -> list[list[ByteRange]]:
    """Join each file's consecutive fine ranges (:func:`split_file` with a target well
    below ``target_bytes``) into decode ranges, balanced for ``slots`` tasks at a time.

    The number of decode ranges is the one ranges of ``target_bytes`` would give (at least
    one per file), rounded up to a multiple of ``slots``: the last round of tasks then
    keeps every core busy instead of leaving one range to run alone.  Each file gets its
    share of them (one more goes to the file whose ranges are largest), and a file's ranges
    are cut where they come nearest to equal bytes.  A range is never cut inside a fine
    range, so a file has at most as many decode ranges as fine ones."""
    if slots < 1 or target_bytes < 1:
        raise ValueError("slots and target_bytes must be positive")
    sizes = [rs[-1].end - rs[0].start if rs else 0 for rs in files]
    want = sum(max(1, -(-size // target_bytes)) for size in sizes)
    want = -(-want // slots) * slots
    count = [1] * len(files)
    # one more range at a time to the file whose ranges are largest (the first on a tie)
    heap: list[tuple[float, int]] = [(-float(size), i) for i, (size, rs)
                                     in enumerate(zip(sizes, files)) if len(rs) > 1]
    heapq.heapify(heap)
    for _ in range(max(0, want - sum(count))):
        if not heap:
            break
        _, i = heapq.heappop(heap)
        count[i] += 1
        if count[i] < len(files[i]):
            heapq.heappush(heap, (-sizes[i] / count[i], i))
    return [_cut(rs, n) if rs else [] for rs, n in zip(files, count)]


def _cut(fine: list[ByteRange], n: int) -> list[ByteRange]:
    """``fine`` (consecutive ranges of one file) joined into ``n`` ranges of bytes as equal
    as the fine boundaries allow."""
    start = fine[0].start
    total = fine[-1].end - start
    ends = [r.end - start for r in fine]  # cumulative bytes at each fine boundary
    cuts: list[int] = []  # index of the last fine range of each group but the last
    prev = -1
    for k in range(1, n):
        goal = total * k / n
        lo, hi = prev + 1, len(fine) - 1 - (n - k)  # leave a fine range for each group after
        # the boundary nearest the goal: the last one below it or the first at or above it
        j = bisect.bisect_left(ends, goal, lo, hi + 1)
        best = min((c for c in (j - 1, j) if lo <= c <= hi), key=lambda c: abs(ends[c] - goal))
        cuts.append(best)
        prev = best
    out: list[ByteRange] = []
    first = 0
    for last in [*cuts, len(fine) - 1]:
        out.append(_join(fine[first:last + 1]))
        first = last + 1
    return out


def _join(group: list[ByteRange]) -> ByteRange:
    if len(group) == 1:
        return group[0]
    events = [r.events for r in group]
    # the first event of the first transaction: the first fine range holding one
    first_event = next((r.first_event for r in group if r.first_event < r.end), group[-1].end)
    return ByteRange(group[0].uri, group[0].start, group[-1].end, first_event,
                     None if None in events else sum(e for e in events if e is not None),
                     sum(r.transactions for r in group))
