"""Shared helpers of the control/query/gtid/load decoders: a bounds-checked cursor over an
event body, the error-converting decorator, and a few small encodings used by several events.

Every read goes through :class:`Cursor`, which raises a located
:class:`~binlake.binlog.errors.CorruptEventError` (through ``ctx.corrupt``) naming the field that ran
past the end of the body, the absolute file offset, and how many bytes were needed and left.
:func:`guarded` is the safety net around a whole decoder: whatever low-level exception escapes
(``ShortBuffer`` from :mod:`binlake.binlog.packed`, ``struct.error``, ``IndexError``,
``UnicodeDecodeError``, ``zlib.error`` ...) becomes the same located error, so a decoder never
leaks a bare Python exception to the reader.
"""

from __future__ import annotations

import functools
import struct
import zlib
from collections.abc import Callable
from typing import Any

from ..context import DecodeContext
from ..errors import BinlogError
from ..packed import ShortBuffer

Decoder = Callable[[DecodeContext, bytes, int], dict[str, Any]]

_F64 = struct.Struct("<d")


class Cursor:
    """Sequential little-endian reads over ``buf``; ``base`` is the file offset of ``buf[0]``."""

    __slots__ = ("base", "buf", "ctx", "pos", "what")

    def __init__(self, ctx: DecodeContext, buf: bytes, base: int, what: str, pos: int = 0) -> None:
        self.ctx = ctx
        self.buf = buf
        self.base = base
        self.what = what
        self.pos = pos

    # -- bookkeeping ----------------------------------------------------------------------

    @property
    def remaining(self) -> int:
        return len(self.buf) - self.pos

    @property
    def offset(self) -> int:
        """Absolute file offset of the next byte to read."""
        return self.base + self.pos

    def corrupt(self, message: str, *, at: int | None = None, expected: Any = None,
                actual: Any = None) -> BinlogError:
        where = self.base + (self.pos if at is None else at)
        return self.ctx.corrupt(f"{self.what}: {message}", where, expected=expected,
                                actual=actual, raw=self.buf)

    def need(self, n: int, field: str) -> None:
        if n < 0 or self.pos + n > len(self.buf):
            raise self.corrupt(f"{field} runs past the end of the event body",
                               expected=f"{n} bytes", actual=f"{max(0, self.remaining)} left")

    # -- fixed-size reads -----------------------------------------------------------------

    def uint(self, n: int, field: str) -> int:
        self.need(n, field)
        p = self.pos
        self.pos = p + n
        return int.from_bytes(self.buf[p:p + n], "little")

    def u8(self, field: str) -> int:
        self.need(1, field)
        v = self.buf[self.pos]
        self.pos += 1
        return v

    def u16(self, field: str) -> int:
        return self.uint(2, field)

    def u24(self, field: str) -> int:
        return self.uint(3, field)

    def u32(self, field: str) -> int:
        return self.uint(4, field)

    def u64(self, field: str) -> int:
        return self.uint(8, field)

    def i32(self, field: str) -> int:
        self.need(4, field)
        p = self.pos
        self.pos = p + 4
        return int.from_bytes(self.buf[p:p + 4], "little", signed=True)

    def i64(self, field: str) -> int:
        self.need(8, field)
        p = self.pos
        self.pos = p + 8
        return int.from_bytes(self.buf[p:p + 8], "little", signed=True)

    def f64(self, field: str) -> float:
        self.need(8, field)
        p = self.pos
        self.pos = p + 8
        return float(_F64.unpack_from(self.buf, p)[0])

    def take(self, n: int, field: str) -> bytes:
        self.need(n, field)
        p = self.pos
        self.pos = p + n
        return bytes(self.buf[p:p + n])

    def rest(self) -> bytes:
        p = self.pos
        self.pos = len(self.buf)
        return bytes(self.buf[p:])

    def skip(self, n: int, field: str) -> None:
        self.need(n, field)
        self.pos += n

    def cstring(self, field: str, max_len: int | None = None) -> bytes:
        """Bytes up to a NUL terminator (consumed, not returned)."""
        end = self.buf.find(b"\0", self.pos)
        if end < 0 or (max_len is not None and end - self.pos > max_len):
            raise self.corrupt(f"{field} is not NUL-terminated within the event body",
                               expected="a NUL byte", actual=f"{self.remaining} bytes without one")
        value = bytes(self.buf[self.pos:end])
        self.pos = end + 1
        return value

    # -- variable-size integers -----------------------------------------------------------

    def packed(self, field: str) -> int:
        """MySQL's length-encoded integer (net_field_length_ll); 251 (NULL) is rejected."""
        first = self.u8(field)
        if first < 251:
            return first
        if first == 251:
            raise self.corrupt(f"{field} is a NULL length-encoded integer", at=self.pos - 1,
                               expected="a number", actual="0xfb (NULL)")
        return self.uint({252: 2, 253: 3, 254: 8}[first], field)

    def varlen_u(self, field: str, max_bits: int = 64) -> int:
        """An unsigned integer of MySQL's serialization library (libs/mysql/serialization/
        variable_length_integers.h): the count of trailing 1 bits of the first byte, plus one,
        is the byte count; the value follows the terminating 0 bit (none for 9 bytes)."""
        self.need(1, field)
        first = self.buf[self.pos]
        n = 1
        while n < 9 and first & (1 << (n - 1)):
            n += 1
        self.need(n, field)
        if n == 9:
            value = int.from_bytes(self.buf[self.pos + 1:self.pos + 9], "little")
        else:
            value = first >> n
            if n > 1:
                value |= int.from_bytes(self.buf[self.pos + 1:self.pos + n], "little") << (8 - n)
        if value >> max_bits:
            raise self.corrupt(f"{field} does not fit in {max_bits} bits", expected="a smaller "
                               "value", actual=value)
        self.pos += n
        return value

    def varlen_i(self, field: str) -> int:
        """A signed serialization-library integer: the low bit is the sign, the rest the
        magnitude (x >= 0 -> x << 1; x < 0 -> ((-(x + 1)) << 1) | 1)."""
        raw = self.varlen_u(field)
        return -(raw >> 1) - 1 if raw & 1 else raw >> 1


def guarded(what: str) -> Callable[[Decoder], Decoder]:
    """Turn any low-level exception escaping a decoder into a located ``ctx.corrupt`` error."""

    def wrap(fn: Decoder) -> Decoder:
        @functools.wraps(fn)
        def decode(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
            try:
                return fn(ctx, body, pos)
            except BinlogError:
                raise
            except ShortBuffer as exc:
                raise ctx.corrupt(f"{what}: body too short", pos + exc.pos,
                                  expected=f"{exc.need} bytes", actual=f"{exc.have} left",
                                  raw=body) from None
            except (struct.error, IndexError, KeyError, ValueError, OverflowError,
                    UnicodeError, zlib.error) as exc:
                raise ctx.corrupt(f"{what}: cannot decode the body ({type(exc).__name__}: "
                                  f"{exc})", pos, raw=body) from None

        return decode

    return wrap


# -- small shared encodings -----------------------------------------------------------------

def ident(raw: bytes) -> str:
    """A name the server stores in its system character set (utf8): database, table, user,
    host, file and variable names.  Undecodable bytes are kept as backslash escapes."""
    return raw.decode("utf-8", "backslashreplace")


def uuid_text(raw: bytes) -> str:
    """16 bytes as MySQL prints a server UUID: lower-case 8-4-4-4-12 hex groups."""
    h = raw.hex()
    return f"{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def xid_dict(format_id: int, data: bytes, gtrid_len: int) -> dict[str, Any]:
    """An XA transaction id (X/Open XID).  gtrid and bqual are arbitrary bytes (XA START
    X'..',X'..'), so they are kept as hex; ``format_id`` -1 is the null XID."""
    return {"format_id": format_id, "gtrid": data[:gtrid_len].hex(),
            "bqual": data[gtrid_len:].hex()}


def mariadb_uncompress(cur: Cursor, data: bytes, field: str) -> bytes:
    """MariaDB's compressed record (sql/log_event.cc binlog_buf_uncompress): a header byte
    ``0x80 | algorithm << 4 | lenlen`` (algorithm 0 = zlib is the only one), the uncompressed
    length in ``lenlen`` (1-4) big-endian bytes, then a zlib stream."""
    if not data:
        raise cur.corrupt(f"{field}: empty compressed record")
    head = data[0]
    lenlen = head & 0x07
    if head & 0x80 == 0 or (head >> 4) & 0x07 != 0 or not 1 <= lenlen <= 4:
        raise cur.corrupt(f"{field}: bad compressed-record header byte",
                          expected="0x80 | zlib(0) << 4 | lenlen(1..4)", actual=hex(head))
    if len(data) < 1 + lenlen:
        raise cur.corrupt(f"{field}: compressed record ends inside its length",
                          expected=1 + lenlen, actual=len(data))
    size = int.from_bytes(data[1:1 + lenlen], "big")
    inflater = zlib.decompressobj()
    try:  # never inflate more than the declared size (+1 to notice a longer stream)
        out = inflater.decompress(data[1 + lenlen:], size + 1)
    except zlib.error as exc:
        raise cur.corrupt(f"{field}: zlib stream is damaged ({exc})") from None
    if len(out) != size or not inflater.eof:
        raise cur.corrupt(f"{field}: uncompressed length differs from the declared one",
                          expected=size, actual=len(out))
    return out


def decode_sql_text(raw: bytes, collation_id: int | None) -> tuple[str, str]:
    """SQL text exactly as logged: ``(text, charset)``.

    Valid UTF-8 is returned as is (``"utf8"``).  Otherwise the bytes are decoded with the
    client character set (the Query event's Q_CHARSET_CODE) through :mod:`binlake.binlog.charsets`,
    and failing that as MySQL's latin1 (cp1252 with the five undefined bytes as C1 controls),
    which maps every byte and so never loses one.
    """
    try:
        return raw.decode("utf-8"), "utf8"
    except UnicodeDecodeError:
        pass
    try:
        from .. import charsets
    except ImportError:  # pragma: no cover - charsets.py is part of the package
        return raw.decode("latin-1"), "latin1"
    if collation_id is not None:
        codec = charsets.codec_of(collation_id)
        if codec is not None:
            text = charsets.decode_text(raw, codec)
            if isinstance(text, str):
                return text, charsets.charset_of(collation_id) or codec
    latin1 = charsets.decode_text(raw, charsets.codec_of(8))  # 8 = latin1_swedish_ci
    if isinstance(latin1, str):
        return latin1, "latin1"
    return raw.decode("latin-1"), "latin1"  # pragma: no cover - cp1252 decodes every byte
