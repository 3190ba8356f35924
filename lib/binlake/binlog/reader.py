"""Reading a binlog file event by event.

:class:`BinlogReader` turns a file (or a byte range of one) into :class:`~binlake.binlog.event.Event`
records.  Memory is bounded by the largest event, not by the file: bytes are read in chunks and
an event body is cut out of the chunk it lies in.

Framing rules (MySQL ``sql/binlog_reader.h``, ``log_event.cc``; MariaDB ``log_event.cc``):

* a file starts with the 4-byte magic ``\\xfebin``; the first event is a Format_description
  (binlog v4) or a Start_v3 (binlog v3, MySQL 4.x);
* every event has a common header of ``fde.header_length`` bytes (19 normally, more in some
  Google builds) whose ``event_size`` gives the distance to the next event;
* with ``binlog_checksum=CRC32`` every event ends with a CRC32 of all its preceding bytes; the
  FDE's own CRC is computed with the LOG_EVENT_BINLOG_IN_USE_F flag cleared, because the
  server clears that flag in place when it closes the file (``log_event.cc``,
  Format_description_log_event::write / ``binlog.cc`` MYSQL_BIN_LOG::close).

Errors that break the framing (truncation, an impossible event size, a missing FDE) end the
iteration with a raised :class:`~binlake.binlog.errors.BinlogError`.  Errors inside one event (bad
checksum, a body its decoder rejects) are attached to that event as ``event.error`` and the
reader resumes at the next event boundary; ``strict=True`` raises them instead.
"""

from __future__ import annotations

import logging
import os
import struct
import zlib
from collections.abc import Iterable, Iterator
from typing import Any, cast

from .constants import (
    BINLOG_MAGIC,
    CHECKSUM_LEN,
    LOG_EVENT_BINLOG_IN_USE_F,
    MYSQL_ENCRYPTED_MAGIC,
    V4_HEADER_LEN,
    EventType,
)
from .context import DecodeContext
from .errors import (
    BinlogError,
    CorruptEventError,
    EncryptedBinlogError,
    NotABinlogError,
    SourceError,
    TruncatedError,
    UnsupportedFormatError,
)
from .event import Event
from .events import load_all
from .fde import FormatDescription, parse_fde, parse_start_v3
from .source import HashTap, OpenedBinlog, open_binlog, parse_location, size_of

log = logging.getLogger("binlake.binlog.reader")

_HEADER = struct.Struct("<IBIIIH")  # timestamp, type, server_id, event_size, log_pos, flags
CHUNK = 1 << 20
# max_allowed_packet tops out at 1 GiB; an event larger than that (plus headers) is garbage.
MAX_EVENT_SIZE = (1 << 30) + (1 << 20)

_FDE = EventType.FORMAT_DESCRIPTION
_START_V3 = EventType.START_V3
_PAYLOAD = EventType.TRANSACTION_PAYLOAD
_START_ENCRYPTION = EventType.START_ENCRYPTION

_DECODERS = load_all()
_KNOWN_TYPES = frozenset(int(t) for t in EventType)


class _Buffer:
    """A forward window over a stream: ``buf[i:]`` holds the bytes from file offset ``base``."""

    __slots__ = ("base", "buf", "eof", "i", "name", "stream")

    def __init__(self, stream: Any, base: int, name: str) -> None:
        self.stream = stream
        self.base = base  # file offset of buf[0]
        self.buf = b""
        self.i = 0
        self.eof = False
        self.name = name

    @property
    def offset(self) -> int:
        return self.base + self.i

    def available(self) -> int:
        return len(self.buf) - self.i

    def ensure(self, n: int) -> bool:
        """Make at least n bytes available from the current position; False at end of data."""
        have = len(self.buf) - self.i
        if have >= n:
            return True
        if self.eof:
            return False
        parts = [self.buf[self.i:]] if have else []
        missing = n - have
        while missing > 0:
            try:
                chunk = self.stream.read(max(missing, CHUNK))
            except BinlogError as exc:
                raise exc.with_location(self.name, self.base + len(self.buf)) from None
            except (OSError, EOFError, ValueError) as exc:  # corrupt gzip/zstd, I/O errors
                raise SourceError(f"reading failed: {exc}", file=self.name,
                                  offset=self.base + len(self.buf)) from exc
            except Exception as exc:  # zstd raises its own ZstdError
                raise SourceError(f"reading failed: {exc}", file=self.name,
                                  offset=self.base + len(self.buf)) from exc
            if not chunk:
                self.eof = True
                break
            parts.append(chunk)
            missing -= len(chunk)
        self.base += self.i
        self.buf = b"".join(parts)
        self.i = 0
        return len(self.buf) >= n

    def skip(self, n: int) -> None:
        self.i += n


class BinlogReader:
    """Iterate the events of one binlog file.

    ``source`` is a path or URI (``s3://bucket/key``; gzip/zstd compressed files are read
    transparently).  ``start``/``stop`` select the events whose position is in
    ``[start, stop)``; ``start`` must be an event boundary (the transaction layer's splitter
    produces such ranges).  The FDE at offset 4 is always read first, whatever ``start`` is.

    ``decode`` selects which event types get their bodies decoded (``None``: all); the others
    are yielded with ``data == {}``, which makes a header-only scan cheap, or not yielded at
    all with ``only_decoded`` (a scan for a few types: every header is still read, and
    checked, but no Event is made of the others; FDEs and Start_encryption still are).

    ``table_map_hook(tm, pos, fde)`` is called with every decoded Table_map; the TableMap it
    returns is the one the rows events are decoded with (a schema history names the columns
    of a Table_map logged without names: :mod:`binlake.schema.names`).
    """

    def __init__(self, source: str | os.PathLike[str], *, start: int | None = None,
                 stop: int | None = None, verify_checksums: bool = True, strict: bool = False,
                 decode: Iterable[int] | None = None, name: str | None = None,
                 tap: HashTap | None = None, table_map_hook: Any = None,
                 only_decoded: bool = False) -> None:
        self.table_map_hook = table_map_hook
        self.only_decoded = only_decoded and decode is not None
        self.source = os.fspath(source)
        self.tap = tap  # gets the stored bytes read (whole file reads only: no start/stop)
        self.start = start
        self.stop = stop
        self.verify = verify_checksums
        self.strict = strict
        self.decode_types = None if decode is None else frozenset(decode)
        self._name = name
        self.fde: FormatDescription | None = None
        self.in_use: bool | None = None  # LOG_EVENT_BINLOG_IN_USE_F on the first FDE
        self.first_event: Event | None = None  # the file's first event (FDE / Start_v3)
        self.compression: str | None = None
        self.events_read = 0
        self.end_offset: int | None = None  # offset after the last event read
        self.ctx: DecodeContext | None = None
        self._warned_types: set[int] = set()

    @property
    def name(self) -> str:
        """The binlog file name: last path component, compression suffix removed."""
        return self._name or parse_location(self.source).name

    def __iter__(self) -> Iterator[Event]:
        opened = open_binlog(self.source, tap=self.tap)
        self.compression = opened.compression
        try:
            yield from self._read(opened)
        finally:
            opened.close()

    # -- the header: magic and FDE ------------------------------------------------------------

    def _read_magic(self, b: _Buffer) -> None:
        if not b.ensure(4):
            raise TruncatedError("file ends inside the 4-byte binlog magic", file=self.source,
                                 offset=0, expected=4, actual=b.available(),
                                 raw=b.buf[b.i:])
        magic = b.buf[b.i:b.i + 4]
        if magic == MYSQL_ENCRYPTED_MAGIC:
            raise EncryptedBinlogError(
                "MySQL encrypted binlog (binlog_encryption=ON): binlake cannot read it without "
                "the keyring; decrypt it with the server first", file=self.source, offset=0,
                expected=BINLOG_MAGIC, actual=magic, raw=magic)
        if magic != BINLOG_MAGIC:
            raise NotABinlogError("not a binlog file: bad magic", file=self.source, offset=0,
                                  expected=BINLOG_MAGIC, actual=magic, raw=b.buf[b.i:b.i + 16])
        b.skip(4)

    def _read_first(self, b: _Buffer) -> Event:
        pos = b.offset
        if not b.ensure(V4_HEADER_LEN):
            raise TruncatedError("file ends inside the first event header", file=self.source,
                                 offset=pos, expected=V4_HEADER_LEN, actual=b.available(),
                                 raw=b.buf[b.i:])
        ts, type_code, server_id, size, log_pos, flags = _HEADER.unpack_from(b.buf, b.i)
        if type_code == _START_V3 and size == 13 + 56:
            raise UnsupportedFormatError(
                "binlog v1 (MySQL 3.23, 13-byte headers) is not supported", file=self.source,
                offset=pos, expected="binlog v3 or v4", actual="v1")
        if type_code not in (_FDE, _START_V3):
            raise CorruptEventError(
                "no Format_description event at the start of the file", file=self.source,
                offset=pos, expected=f"event type {int(_FDE)} (FORMAT_DESCRIPTION)",
                actual=type_code, raw=b.buf[b.i:b.i + V4_HEADER_LEN])
        self._check_size(b, pos, size, V4_HEADER_LEN)
        raw = b.buf[b.i:b.i + size]
        body = raw[V4_HEADER_LEN:]
        if type_code == _START_V3:
            fde = parse_start_v3(body, file=self.source, offset=pos + V4_HEADER_LEN)
        else:
            fde = parse_fde(body, file=self.source, offset=pos + V4_HEADER_LEN)
        self.fde = fde
        self.in_use = bool(flags & LOG_EVENT_BINLOG_IN_USE_F)
        self.ctx = DecodeContext(self.source, fde, self.table_map_hook)
        error = None
        checksum = None
        if fde.has_checksum:
            checksum = int.from_bytes(raw[-4:], "little")
            error = self._verify_fde(raw, pos, checksum)
            if error is not None and self.strict:
                raise error
        b.skip(size)
        data: dict[str, Any] = fde.to_dict()
        data["in_use"] = self.in_use
        return Event(self.name, pos, type_code, ts, server_id, size, log_pos, flags, data,
                     checksum, None, error)

    def _verify_fde(self, raw: bytes, pos: int, stored: int) -> BinlogError | None:
        if not self.verify:
            return None
        # The FDE's CRC is over the event with the in-use flag cleared (see module doc).
        cleared = raw[:17] + bytes([raw[17] & ~LOG_EVENT_BINLOG_IN_USE_F & 0xFF]) + raw[18:-4]
        actual = zlib.crc32(cleared)
        if actual != stored:
            return self._checksum_error(pos, stored, actual, raw)
        return None

    def _checksum_error(self, pos: int, stored: int, actual: int, raw: bytes) -> BinlogError:
        from .errors import ChecksumError

        return ChecksumError("event checksum mismatch", file=self.source, offset=pos,
                             expected=f"crc32 {stored:#010x} (stored)",
                             actual=f"crc32 {actual:#010x} (computed)", raw=raw)

    def _check_size(self, b: _Buffer, pos: int, size: int, header_len: int) -> None:
        if size < header_len or size > MAX_EVENT_SIZE:
            raise CorruptEventError(
                "impossible event size in header (garbage in place of an event?)",
                file=self.source, offset=pos,
                expected=f"{header_len}..{MAX_EVENT_SIZE} bytes", actual=size,
                raw=b.buf[b.i:b.i + header_len])
        if not b.ensure(size):
            raise TruncatedError("file ends inside an event", file=self.source, offset=pos,
                                 expected=f"{size} bytes of event", actual=b.available(),
                                 raw=b.buf[b.i:b.i + header_len])

    # -- the events ---------------------------------------------------------------------------

    def _read(self, opened: OpenedBinlog) -> Iterator[Event]:
        b = _Buffer(opened.stream, 0, self.source)
        self._read_magic(b)
        first = self._read_first(b)
        self.first_event = first  # the FDE (or Start_v3), also when a range starts later
        start = self.start if self.start is not None else 0
        stop = self.stop
        if start <= first.pos and (stop is None or first.pos < stop):
            yield first
        fde_end = b.offset
        if first.pos < start < fde_end:
            raise CorruptEventError("start position is inside the Format_description event",
                                    file=self.source, offset=start,
                                    expected=f"{first.pos} or >= {fde_end}", actual=start)
        if start > fde_end:
            if opened.seekable_ranges:
                size = size_of(self.source)
                if start > size:
                    raise CorruptEventError("start position is past the end of the file",
                                            file=self.source, offset=start,
                                            expected=f"<= {size}", actual=start)
                opened.stream.close()
                # Read to the end of the object: the last event may extend past ``stop``.
                reopened = open_binlog(self.source, start) if start < size else None
                if reopened is None:
                    self.end_offset = start
                    return
                opened.stream = reopened.stream
                b = _Buffer(reopened.stream, start, self.source)
            else:
                # Compressed: read forward, event by event, to the start position.
                while b.offset < start:
                    if not b.ensure(V4_HEADER_LEN):
                        raise CorruptEventError("start position is past the end of the file",
                                                file=self.source, offset=start,
                                                expected=f"<= {b.offset + b.available()}",
                                                actual=start)
                    size = _HEADER.unpack_from(b.buf, b.i)[3]
                    self._check_size(b, b.offset, size, V4_HEADER_LEN)
                    b.skip(size)
                if b.offset != start:
                    raise CorruptEventError("start position is not an event boundary",
                                            file=self.source, offset=start,
                                            expected="an event start", actual=b.offset)
            self._check_boundary(b, start)
        self.events_read = 1
        yield from self._events(b, stop)
        self.end_offset = b.offset
        if opened.truncated_container:
            raise TruncatedError(
                f"the {opened.compression} stream ends before its end marker (the compressed "
                "file was cut short); the events before this offset were read",
                file=self.source, offset=b.offset, expected="a complete compressed stream",
                actual="end of data")

    def _check_boundary(self, b: _Buffer, start: int) -> None:
        """A start position must be an event boundary: the event there must look like one.

        With checksums the event's CRC32 must match; without, its type must be one we know,
        its size sane, and the event after it (if any) must look sane too.
        """
        assert self.fde is not None
        hl = self.fde.header_length

        def bad(why: str) -> CorruptEventError:
            return CorruptEventError(f"start position is not an event boundary ({why})",
                                     file=self.source, offset=start,
                                     expected="the position of an event", actual=start)

        if not b.ensure(hl):
            if b.available() == 0:
                return  # nothing after start: an empty range
            raise bad("too few bytes for an event header")
        type_code, size = b.buf[b.i + 4], _HEADER.unpack_from(b.buf, b.i)[3]
        if size < hl or size > MAX_EVENT_SIZE or not b.ensure(size):
            raise bad(f"impossible event size {size}")
        if self.fde.has_checksum and type_code != _FDE:
            stored = int.from_bytes(b.buf[b.i + size - 4:b.i + size], "little")
            if zlib.crc32(memoryview(b.buf)[b.i:b.i + size - 4]) != stored:
                raise bad("no valid event checksum there")
            return
        if type_code not in _KNOWN_TYPES:
            raise bad(f"unknown event type {type_code}")
        if b.ensure(size + hl):
            nsize = _HEADER.unpack_from(b.buf, b.i + size)[3]
            ntype = b.buf[b.i + size + 4]
            if ntype not in _KNOWN_TYPES or nsize < hl or nsize > MAX_EVENT_SIZE:
                raise bad("the event after it is not a valid header")

    def _events(self, b: _Buffer, stop: int | None) -> Iterator[Event]:
        assert self.ctx is not None and self.fde is not None
        ctx = self.ctx
        name = self.name
        decode_types = self.decode_types
        only_decoded = self.only_decoded
        strict = self.strict
        unpack_header = _HEADER.unpack_from
        crc32 = zlib.crc32
        mv_of: bytes | None = None
        mv = memoryview(b"")
        fde: FormatDescription | None = None
        hl = crc_len = verify = 0
        permutation: dict[int, int] | None = None
        while True:
            if ctx.fde is not fde:  # (what the format says, looked up again only when it changes)
                fde = ctx.fde
                hl = fde.header_length
                crc_len = CHECKSUM_LEN if fde.has_checksum else 0
                verify = self.verify and crc_len
                permutation = fde.type_permutation
            pos = b.base + b.i
            if stop is not None and pos >= stop:
                return
            if len(b.buf) - b.i < hl and not b.ensure(hl):
                if b.available() == 0:
                    return
                raise TruncatedError("file ends inside an event header", file=self.source,
                                     offset=pos, expected=f"{hl} header bytes",
                                     actual=b.available(), raw=b.buf[b.i:])
            ts, type_code, server_id, size, log_pos, flags = unpack_header(b.buf, b.i)
            if permutation is not None:
                type_code = permutation.get(type_code, type_code)
            if size < hl + crc_len or size > MAX_EVENT_SIZE or (
                    len(b.buf) - b.i < size and not b.ensure(size)):
                self._check_size(b, pos, size, hl + crc_len)
            buf = b.buf
            if buf is not mv_of:
                mv_of = buf
                mv = memoryview(buf)  # CRC32 over a view: no copy of the event
            i = b.i
            end = i + size - crc_len
            error: BinlogError | None = None
            checksum = None
            if crc_len:
                checksum = int.from_bytes(buf[end:end + 4], "little")
                if verify:
                    if type_code == _FDE:
                        error = self._verify_fde(buf[i:i + size], pos, checksum)
                    elif crc32(mv[i:end]) != checksum:
                        error = self._checksum_error(pos, checksum, crc32(mv[i:end]),
                                                     buf[i:i + size])
                    if error is not None and strict:
                        raise error
            b.i = i + size
            self.events_read += 1
            data: dict[str, Any]
            if type_code == _FDE:
                # A relay log carries its master's FDE after its own: it governs what follows.
                try:
                    # The FDE's fields start after the 19-byte v4 header whatever common
                    # header length the previous FDE declared (log_event.cc reads it with
                    # LOG_EVENT_MINIMAL_HEADER_LEN).
                    new_fde = parse_fde(buf[i + V4_HEADER_LEN:end + crc_len], file=self.source,
                                        offset=pos + V4_HEADER_LEN)
                except BinlogError as exc:
                    raise exc.with_location(self.source, pos) from None
                ctx.fde = new_fde
                data = new_fde.to_dict()
                data["in_use"] = bool(flags & LOG_EVENT_BINLOG_IN_USE_F)
            elif decode_types is not None and type_code not in decode_types:
                if only_decoded and error is None and type_code != _START_ENCRYPTION:
                    continue
                data = {}
            else:
                ctx.flags = flags
                ctx.type_code = type_code
                ctx.server_id = server_id
                # (the body is copied only for an event that is decoded: a survey's scan
                # skips most events)
                data, derr = self._decode(ctx, type_code, buf[i + hl:end], pos + hl)
                if derr is not None:
                    if strict:
                        raise derr
                    error = error or derr
            ev = Event(name, pos, type_code, ts, server_id, size, log_pos, flags, data,
                       checksum, None, error)
            yield ev
            if type_code == _PAYLOAD and "_payload" in data:
                payload = cast(bytes, data.pop("_payload"))
                yield from self._payload_events(ev, payload)
            elif type_code == _START_ENCRYPTION:
                raise EncryptedBinlogError(
                    "MariaDB encrypted binlog (encrypt_binlog=ON): the events after "
                    "Start_encryption are encrypted and binlake does not decrypt them",
                    file=self.source, offset=b.offset, expected="plain events",
                    actual="encrypted events")

    def _decode(self, ctx: DecodeContext, type_code: int, body: bytes,
                pos: int) -> tuple[dict[str, Any], BinlogError | None]:
        decoder = _DECODERS.get(type_code)
        if decoder is None:
            if type_code not in self._warned_types:
                self._warned_types.add(type_code)
                log.warning("%s: unknown event type %d at byte %d passed through raw",
                            self.source, type_code, pos - ctx.fde.header_length)
            return {"unknown": True, "raw_hex": body.hex()}, None
        try:
            return decoder(ctx, body, pos), None
        except BinlogError as exc:
            return {"raw_hex": body[:256].hex()}, self._at_event(exc, pos)
        except (RecursionError, IndexError, ValueError, KeyError, TypeError, ArithmeticError,
                struct.error, UnicodeError, zlib.error) as exc:
            # A body its decoder could not make sense of: located, typed, and the reader
            # stays aligned because it resumes at the next event boundary.
            return {"raw_hex": body[:256].hex()}, self._at_event(CorruptEventError(
                f"cannot decode the event body ({type(exc).__name__}: {exc})", raw=body), pos)

    def _at_event(self, exc: BinlogError, body_pos: int) -> BinlogError:
        """Errors name the event's offset (where ``--start-position`` and hexdumps find it);
        a decoder's more precise offset inside the event goes into the message."""
        assert self.fde is not None
        event_pos = body_pos - self.fde.header_length
        if exc.offset is not None and exc.offset != event_pos:
            exc.message += f" (at byte {exc.offset}, inside the event)"
        exc.offset = event_pos
        exc.file = self.source
        exc.args = (str(exc),)
        return exc

    def _payload_events(self, outer: Event, payload: bytes) -> Iterator[Event]:
        """Yield the events compressed inside a Transaction_payload (MySQL 8.0.20+).

        Inner events have a common header and no checksum (``binlog/event/payload_event_
        buffer_istream``); their positions are the payload event's.
        """
        assert self.ctx is not None
        ctx = self.ctx
        hl = ctx.fde.header_length
        i = 0
        index = 0
        n = len(payload)
        while i < n:
            if n - i < hl:
                raise TruncatedError("Transaction_payload ends inside an inner event header",
                                     file=self.source, offset=outer.pos,
                                     expected=f"{hl} header bytes", actual=n - i)
            ts, type_code, server_id, size, _log_pos, flags = _HEADER.unpack_from(payload, i)
            if size < hl or i + size > n:
                raise CorruptEventError("inner event of a Transaction_payload has a bad size",
                                        file=self.source, offset=outer.pos,
                                        expected=f"{hl}..{n - i}", actual=size,
                                        raw=payload[i:i + hl])
            body = payload[i + hl:i + size]
            error = None
            if self.decode_types is not None and type_code not in self.decode_types:
                if self.only_decoded:
                    index += 1
                    i += size
                    continue
                data: dict[str, Any] = {}
            else:
                ctx.flags = flags
                ctx.type_code = type_code
                ctx.server_id = server_id
                # (errors inside a payload are located at the payload event)
                data, error = self._decode(ctx, type_code, body, outer.pos + hl)
                if error is not None and self.strict:
                    raise error
            yield Event(self.name, outer.pos, type_code, ts, server_id, size, outer.next_pos,
                        flags, data, None, index, error)
            index += 1
            i += size


def read_events(source: str | os.PathLike[str], **kwargs: Any) -> Iterator[Event]:
    """Shorthand for ``iter(BinlogReader(source, **kwargs))``."""
    return iter(BinlogReader(source, **kwargs))
