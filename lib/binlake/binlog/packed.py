"""Byte-level reading: little-endian integers, packed lengths, bitmaps.

Knows nothing about MySQL types or events.  Every function takes ``(buf, pos)`` and returns
the value and the new position; a short buffer raises :class:`ShortBuffer`, which callers turn
into a located :class:`~binlake.binlog.errors.BinlogError`.
"""

from __future__ import annotations

import struct

U8 = struct.Struct("<B")
U16 = struct.Struct("<H")
U32 = struct.Struct("<I")
U64 = struct.Struct("<Q")
I64 = struct.Struct("<q")


class ShortBuffer(Exception):
    """Internal: a read ran past the end of the buffer it was given."""

    def __init__(self, need: int, pos: int, have: int) -> None:
        super().__init__(f"need {need} bytes at {pos}, have {have}")
        self.need = need
        self.pos = pos
        self.have = have


def need(buf: bytes, pos: int, n: int) -> None:
    if pos + n > len(buf) or pos < 0:
        raise ShortBuffer(n, pos, max(0, len(buf) - pos))


def uint(buf: bytes, pos: int, n: int) -> tuple[int, int]:
    """An n-byte little-endian unsigned integer."""
    need(buf, pos, n)
    return int.from_bytes(buf[pos:pos + n], "little"), pos + n


def packed_int(buf: bytes, pos: int) -> tuple[int | None, int]:
    """MySQL's length-encoded integer (net_field_length): <251, 251=NULL, 252/253/254 + 2/3/8."""
    need(buf, pos, 1)
    first = buf[pos]
    if first < 251:
        return first, pos + 1
    if first == 251:
        return None, pos + 1
    if first == 252:
        return uint(buf, pos + 1, 2)
    if first == 253:
        return uint(buf, pos + 1, 3)
    return uint(buf, pos + 1, 8)


def packed_len(buf: bytes, pos: int) -> tuple[int, int]:
    """A packed integer that must not be NULL (lengths and counts)."""
    value, pos = packed_int(buf, pos)
    if value is None:
        raise ShortBuffer(1, pos - 1, 0)
    return value, pos


def packed_bytes(buf: bytes, pos: int) -> tuple[bytes, int]:
    n, pos = packed_len(buf, pos)
    need(buf, pos, n)
    return bytes(buf[pos:pos + n]), pos + n


def fixed_bytes(buf: bytes, pos: int, n: int) -> tuple[bytes, int]:
    need(buf, pos, n)
    return bytes(buf[pos:pos + n]), pos + n


def cstring(buf: bytes, pos: int, n: int) -> tuple[str, int]:
    """n bytes of text (utf-8, undecodable bytes escaped) followed by a NUL byte."""
    need(buf, pos, n + 1)
    return bytes(buf[pos:pos + n]).decode("utf-8", "backslashreplace"), pos + n + 1


def bitmap(buf: bytes, pos: int, nbits: int) -> tuple[int, int]:
    """A little-endian bitmap of nbits bits, as an int (bit i = column i)."""
    n = (nbits + 7) >> 3
    need(buf, pos, n)
    return int.from_bytes(buf[pos:pos + n], "little"), pos + n


def bits_set(value: int) -> list[int]:
    out = []
    i = 0
    while value:
        if value & 1:
            out.append(i)
        value >>= 1
        i += 1
    return out
