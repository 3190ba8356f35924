"""The split scan: walks one binlog file and finds where its groups (transactions) start.

Where groups start (MySQL ``rpl_trx_boundary_parser.cc``; MariaDB ``log_event.h``): at every
GTID, ANONYMOUS_GTID and GTID_TAGGED event (MySQL 5.6+; 5.7+ writes an anonymous one when
GTIDs are off) and at every MariaDB GTID event (MariaDB 10.0+ starts every group, DDL and XA
halves included, with one; there is no BEGIN query after it).  In files without GTID events
the header scan runs the WL#4162 boundary parser of ``txn.scangtidless``.

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

What makes an event a split point, and the file header: ``txn.scanbase``; reading the bytes:
``txn.scaninput``.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

from ..binlog.constants import CHECKSUM_LEN, EventType
from ..binlog.errors import BinlogError
from ..binlog.events import load_all
from ..binlog.reader import MAX_EVENT_SIZE
from .scanbase import _FDE_TYPES
from .scangtidless import _S_DML, _S_NONE, _GtidLessGroups
from .scaninput import CHUNK, S3_REOPEN_GAP, _Input  # by name: read as globals below

E = EventType

# Set to False to header-scan MySQL 8 files too (tests compare both ways; benchmarks).
USE_TRANSACTION_LENGTH = True
# The fast path on a local file: after a seek read this much (a GTID event and, with small
# transactions, the next few groups).  With txn.scaninput.READ_THROUGH, both 0: read exactly
# the GTID events and nothing else.
JUMP_READ = 64 << 10
# Compressed files: a transaction longer than this is walked event by event rather than
# buffered whole for the landing check (decompression reads it either way).
RETAIN_MAX = 8 << 20

_U32 = struct.Struct("<I")

_MYSQL_GTIDS = frozenset({E.GTID, E.ANONYMOUS_GTID, E.GTID_TAGGED})
_GTIDS = _MYSQL_GTIDS | {E.MARIADB_GTID}
# Events that can sit between two groups: besides a GTID, where a transaction_length jump may
# land (rpl_trx_boundary_parser.cc: EVENT_BOUNDARY_TYPE_IGNORE / INCIDENT).
_BETWEEN = frozenset({E.ROTATE, E.STOP, E.INCIDENT, E.HEARTBEAT, E.HEARTBEAT_V2,
                      E.PREVIOUS_GTIDS, E.FORMAT_DESCRIPTION, E.MARIADB_GTID_LIST,
                      E.BINLOG_CHECKPOINT})

# What the walk must look at: after the first GTID only GTIDs (and format changes); in a
# GTID-less file inside BEGIN ... COMMIT only what may end the transaction; else everything.
_WATCH_GTID = _GTIDS | _FDE_TYPES | {E.START_ENCRYPTION}
_WATCH_DML = _WATCH_GTID | {E.QUERY, E.XID, E.XA_PREPARE}
_WATCH_ALL = frozenset(range(256))

_DECODERS = load_all()


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


class _Scanner(_GtidLessGroups):
    """Walks one file and yields its group starts as ``(pos, epoch, count)``.

    ``count`` is the number of events walked since the start of ``epoch``; an epoch ends at
    each transaction_length jump (the events jumped over are not counted), so the number of
    events between two marks is known when both are in one epoch.
    """

    # -- GTID events and transaction_length jumps ----------------------------------------

    def _no_jump(self, pos: int, reason: str) -> None:
        if self.jump_enabled:
            self.jump_enabled = False
            self.inp.readahead = CHUNK
            self.stats.fallback_at = pos
            self.stats.fallback_reason = reason

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
