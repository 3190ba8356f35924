"""What every split scan (``txn.scan``) stands on: the file header, the format the events are
in, and the checks that make an event a split point.

A split point is only ever an event the reader will accept as a range start
(``BinlogReader._check_boundary``): whole in the file, a valid CRC32 when the file has
checksums (else a sane event after it).  From a point where the framing breaks (an impossible
event size, a truncated event), an encrypted tail (MariaDB Start_encryption), or a later FDE
describing another format (relay logs), no more split points are made (:meth:`_ScanBase._stop`):
the rest of the file is one range, and the reader reports the damage there exactly as a
whole-file decode does.
"""

from __future__ import annotations

import struct
import zlib

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
    TruncatedError,
    UnsupportedFormatError,
)
from ..binlog.fde import FormatDescription, parse_fde, parse_start_v3
from ..binlog.reader import MAX_EVENT_SIZE
from .scaninput import ScanStats, _Input

E = EventType

_U32 = struct.Struct("<I")

_KNOWN = frozenset(int(t) for t in EventType)
_FDE_TYPES = frozenset({E.FORMAT_DESCRIPTION, E.START_V3})


def _same_format(a: FormatDescription, b: FormatDescription) -> bool:
    """Would the events after ``b`` be decoded the same under ``a``?  The decoders depend on
    the flavor, the header and post-header lengths, the checksum algorithm and the drop-tree
    type permutation, not on the server version string."""
    return (a.binlog_version, a.header_length, a.post_header_lengths, a.checksum_alg,
            a.flavor, a.type_permutation) == (
            b.binlog_version, b.header_length, b.post_header_lengths, b.checksum_alg,
            b.flavor, b.type_permutation)


class _ScanBase:
    """One scan's state, the file header and the range-start checks; the walk itself
    (``txn.scan._Scanner``) and the GTID-less group parser (``txn.scangtidless``) build on it.
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
