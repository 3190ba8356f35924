"""MySQL 8.0.20+ Transaction_payload: a whole transaction's events, zstd-compressed.

Body (``libbinlogevents/src/compression/payload_event...``, ``control_events.cpp``
Transaction_payload_event::decode): header fields as ``type(packed) length(packed)
value(length bytes, a packed integer)`` until the end mark (type 0), then the payload.
Field types: 1 payload size, 2 compression type (0 = ZSTD, 255 = NONE), 3 uncompressed size.
The reader yields the inner events (common header, no checksum) right after this one.
"""

from __future__ import annotations

from typing import Any

from ..constants import EventType as E
from ..context import DecodeContext
from ..errors import UnsupportedFeatureError
from ..packed import ShortBuffer, packed_len
from . import register

_END = 0
_SIZE = 1
_COMPRESSION = 2
_UNCOMPRESSED = 3
COMPRESSION_NAMES = {0: "ZSTD", 255: "NONE"}
MAX_UNCOMPRESSED = (1 << 30) * 4  # a sanity bound: 4 GiB


@register(E.TRANSACTION_PAYLOAD)
def transaction_payload(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    p = 0
    fields: dict[int, int] = {}
    try:
        while p < len(body):
            ftype, p = packed_len(body, p)
            if ftype == _END:
                break
            flen, p = packed_len(body, p)
            value, _ = packed_len(body[p:p + flen], 0)
            fields[ftype] = value
            p += flen
    except ShortBuffer as exc:
        raise ctx.corrupt("Transaction_payload header ends early", pos + p,
                          expected=f"{exc.need} more bytes", actual=exc.have) from None
    payload = body[p:]
    compression = fields.get(_COMPRESSION, 0)
    size = fields.get(_SIZE, len(payload))
    uncompressed_size = fields.get(_UNCOMPRESSED)
    if size != len(payload):
        raise ctx.corrupt("Transaction_payload size field does not match its payload", pos,
                          expected=size, actual=len(payload))
    d: dict[str, Any] = {
        "compression_type": COMPRESSION_NAMES.get(compression, compression),
        "payload_size": size,
        "uncompressed_size": uncompressed_size,
    }
    if compression == 255:
        inner = bytes(payload)
    elif compression == 0:
        import zstandard

        limit = uncompressed_size if uncompressed_size is not None else MAX_UNCOMPRESSED
        if limit > MAX_UNCOMPRESSED:
            raise ctx.corrupt("Transaction_payload declares an impossible uncompressed size",
                              pos, expected=f"<= {MAX_UNCOMPRESSED}", actual=limit)
        try:
            inner = zstandard.ZstdDecompressor().decompress(payload, max_output_size=limit)
        except zstandard.ZstdError as exc:
            raise ctx.corrupt(f"zstd: {exc}", pos) from None
        if uncompressed_size is not None and len(inner) != uncompressed_size:
            raise ctx.corrupt("Transaction_payload uncompressed size mismatch", pos,
                              expected=uncompressed_size, actual=len(inner))
    else:
        raise UnsupportedFeatureError("Transaction_payload compression type", file=ctx.file,
                                      offset=pos, expected="0 (ZSTD) or 255 (NONE)",
                                      actual=compression)
    d["_payload"] = inner
    return d
