"""Table_map events: the column layout that the following rows events are decoded with.

Body layout (MySQL ``libbinlogevents/src/rows_event.cpp`` Table_map_event, MariaDB
``log_event.cc``): ``table_id(6|4) flags(2)`` post-header, then ``db_len(1) db NUL
table_len(1) table NUL column_count(packed) column_types(n) metadata_len(packed)
metadata null_bits((n+7)/8)`` and, with ``binlog_row_metadata=FULL`` (MySQL 8.0.1+,
MariaDB 10.5+), optional metadata as TLV fields up to the end of the body.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace

from .charsets import codec_of, decode_text
from .columns import _NUMERIC, Column, TableMap, _resolve_meta
from .constants import ColumnType as T
from .context import DecodeContext
from .errors import CorruptEventError
from .packed import ShortBuffer, bitmap, cstring, need, packed_len

# Optional metadata field types (rows_event.h, Table_map_event::Optional_metadata_field_type).
SIGNEDNESS = 1
DEFAULT_CHARSET = 2
COLUMN_CHARSET = 3
COLUMN_NAME = 4
SET_STR_VALUE = 5
ENUM_STR_VALUE = 6
GEOMETRY_TYPE = 7
SIMPLE_PRIMARY_KEY = 8
PRIMARY_KEY_WITH_PREFIX = 9
ENUM_AND_SET_DEFAULT_CHARSET = 10
ENUM_AND_SET_COLUMN_CHARSET = 11
COLUMN_VISIBILITY = 12
VECTOR_DIMENSIONALITY = 13

_META_1 = frozenset({T.FLOAT, T.DOUBLE, T.BLOB, T.GEOMETRY, T.JSON, T.TIMESTAMP2, T.DATETIME2,
                     T.TIME2, T.VECTOR, T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB})
_META_2 = frozenset({T.VARCHAR, T.VAR_STRING, T.NEWDECIMAL, T.BIT, T.ENUM, T.SET, T.STRING})


def _is_character(col: Column, flavor: str) -> bool:
    # MySQL sql/log_event.cc is_character_type (VECTOR from 9.0) vs MariaDB
    # log_event_client.cc (GEOMETRY counts): the optional charset fields enumerate these.
    t = col.type
    if t in (T.STRING, T.VAR_STRING, T.VARCHAR, T.BLOB, T.TINY_BLOB, T.MEDIUM_BLOB,
             T.LONG_BLOB):
        return True
    if t == T.GEOMETRY:
        return flavor == "mariadb"
    return t == T.VECTOR and flavor == "mysql"


_CACHE: OrderedDict[bytes, TableMap] = OrderedDict()
_CACHE_MAX = 4096


def decode_table_map(ctx: DecodeContext, body: bytes, pos: int) -> TableMap:
    """Parse (or fetch from the cache) the TableMap of a Table_map event body."""
    tid_size = ctx.fde.table_id_size
    need_hdr = tid_size + 2
    if len(body) < need_hdr:
        raise ctx.corrupt("Table_map event too short", pos, expected=f">= {need_hdr} bytes",
                          actual=len(body))
    table_id = int.from_bytes(body[:tid_size], "little")
    # MariaDB re-logs the same Table_map in every transaction: cache by everything but the id.
    key = bytes(body[tid_size:]) + ctx.fde.flavor.encode()
    cached = _CACHE.get(key)
    if cached is not None:
        _CACHE.move_to_end(key)
        if cached.table_id == table_id:
            return cached
        return replace(cached, table_id=table_id)
    try:
        tm = _parse(ctx, body, pos, tid_size, table_id)
    except ShortBuffer as exc:
        raise ctx.corrupt("Table_map event body ends early", pos + exc.pos,
                          expected=f"{exc.need} more bytes", actual=exc.have) from None
    _CACHE[key] = tm
    if len(_CACHE) > _CACHE_MAX:
        _CACHE.popitem(last=False)
    return tm


def _parse(ctx: DecodeContext, body: bytes, pos: int, tid_size: int, table_id: int) -> TableMap:
    p = tid_size
    flags = int.from_bytes(body[p:p + 2], "little")
    p += 2
    need(body, p, 1)
    db, p = cstring(body, p + 1, body[p])
    need(body, p, 1)
    table, p = cstring(body, p + 1, body[p])
    ncols, p = packed_len(body, p)
    need(body, p, ncols)
    types = body[p:p + ncols]
    p += ncols
    if p == len(body):
        # MySQL 5.1.0-5.1.17 wrote no metadata and no NULL bitmap (metadata came with 5.1.18):
        # every column is taken as nullable with default metadata.
        bare = [Column(i, t, t, 0, True) for i, t in enumerate(types)]
        for col in bare:
            _resolve_meta(col)
        return TableMap(table_id, db, table, flags, bare)
    meta_len, p = packed_len(body, p)
    need(body, p, meta_len)
    meta_end = p + meta_len
    columns: list[Column] = []
    for i, t in enumerate(types):
        if t in _META_2:
            need(body, p, 2)
            # Two bytes in stored order (byte0 | byte1 << 8): STRING (real_type, length),
            # NEWDECIMAL (precision, scale), BIT (bits % 8, bytes), VARCHAR (uint16 length).
            m = body[p] | body[p + 1] << 8
            p += 2
        elif t in _META_1:
            need(body, p, 1)
            m = body[p]
            p += 1
        else:
            m = 0
        columns.append(Column(i, t, t, m, False))
    if p != meta_end:
        raise ctx.corrupt("Table_map column metadata length does not match the column types",
                          pos + p, expected=meta_end, actual=p)
    nulls, p = bitmap(body, p, ncols)
    for col in columns:
        col.nullable = bool(nulls >> col.index & 1)
        _resolve_meta(col)
    tm = TableMap(table_id, db, table, flags, columns)
    if p < len(body):
        _optional_metadata(ctx, tm, body, p, pos)
    return tm


def _msb_bits(data: bytes, count: int) -> list[bool]:
    # Optional-metadata bitmaps are most-significant-bit first (rows_event.cpp, parse_bitmap).
    return [bool(data[i >> 3] & (0x80 >> (i & 7))) if (i >> 3) < len(data) else False
            for i in range(count)]


def _charset_list(data: bytes, count: int) -> list[int]:
    out: list[int] = []
    p = 0
    while p < len(data) and len(out) < count:
        v, p = packed_len(data, p)
        out.append(v)
    return out


def _default_charset(data: bytes, count: int) -> list[int]:
    default, p = packed_len(data, 0)
    out = [default] * count
    while p < len(data):
        idx, p = packed_len(data, p)
        coll, p = packed_len(data, p)
        if idx < count:
            out[idx] = coll
    return out


def _str_values(data: bytes) -> list[tuple[bytes, ...]]:
    """The member names of each ENUM (or SET) column, as logged: in the column's charset."""
    out: list[tuple[bytes, ...]] = []
    p = 0
    while p < len(data):
        n, p = packed_len(data, p)
        vals = []
        for _ in range(n):
            ln, p = packed_len(data, p)
            need(data, p, ln)
            vals.append(bytes(data[p:p + ln]))
            p += ln
        out.append(tuple(vals))
    return out


def _member_names(raw: tuple[bytes, ...], collation: int | None) -> tuple[str, ...]:
    """ENUM/SET member names in the column's charset (the server converts a column's value
    list to it: a latin1 ENUM logs 'café' as latin1 bytes), as its text values are read;
    without a known charset, or bytes that do not decode in it, UTF-8 with \\xNN escapes."""
    codec = codec_of(collation) if collation is not None else None
    out = []
    for v in raw:
        text = decode_text(v, codec) if codec is not None else None
        out.append(text if isinstance(text, str) else v.decode("utf-8", "backslashreplace"))
    return tuple(out)


def _optional_metadata(ctx: DecodeContext, tm: TableMap, body: bytes, p: int, pos: int) -> None:
    cols = tm.columns
    flavor = ctx.fde.flavor
    # MariaDB's server counts YEAR among the numeric columns of the SIGNEDNESS field (its
    # Field_year is a Field_tiny: sql/field.h binlog_type_info); MySQL does not.
    numeric = [c for c in cols if c.type in _NUMERIC or (c.type == T.YEAR and flavor == "mariadb")]
    character = [c for c in cols if _is_character(c, flavor)]
    enum_set = [c for c in cols if c.type in (T.ENUM, T.SET)]
    raw_members: dict[int, tuple[Column, tuple[bytes, ...]]] = {}
    while p < len(body):
        ftype = body[p]
        flen, p = packed_len(body, p + 1)
        need(body, p, flen)
        data = body[p:p + flen]
        p += flen
        if ftype == SIGNEDNESS:
            tm.has_signedness = True
            for c, bit in zip(numeric, _msb_bits(data, len(numeric))):
                c.unsigned = bit
        elif ftype in (DEFAULT_CHARSET, COLUMN_CHARSET):
            colls = (_default_charset if ftype == DEFAULT_CHARSET else _charset_list)(
                data, len(character))
            for c, coll in zip(character, colls):
                c.collation = coll
        elif ftype in (ENUM_AND_SET_DEFAULT_CHARSET, ENUM_AND_SET_COLUMN_CHARSET):
            colls = (_default_charset if ftype == ENUM_AND_SET_DEFAULT_CHARSET
                     else _charset_list)(data, len(enum_set))
            for c, coll in zip(enum_set, colls):
                c.collation = coll
        elif ftype == COLUMN_NAME:
            q = 0
            for c in cols:
                if q >= len(data):
                    break
                ln, q = packed_len(data, q)
                need(data, q, ln)
                # (as db and table names: undecodable bytes become \xNN escapes)
                c.name = bytes(data[q:q + ln]).decode("utf-8", "backslashreplace")
                q += ln
            tm.has_full_metadata = True
        elif ftype in (SET_STR_VALUE, ENUM_STR_VALUE):
            want = T.SET if ftype == SET_STR_VALUE else T.ENUM
            # decoded below: their charset comes in a later field (ENUM_AND_SET_*_CHARSET)
            for c, members in zip([c for c in cols if c.type == want], _str_values(data)):
                raw_members[id(c)] = (c, members)
        elif ftype == GEOMETRY_TYPE:
            geoms = [c for c in cols if c.type == T.GEOMETRY]
            for c, g in zip(geoms, _charset_list(data, len(geoms))):
                c.geometry_type = g
        elif ftype == SIMPLE_PRIMARY_KEY:
            tm.primary_key = _charset_list(data, len(data))
        elif ftype == PRIMARY_KEY_WITH_PREFIX:
            vals = _charset_list(data, len(data))
            tm.primary_key = vals[0::2]
            tm.primary_key_prefixes = vals[1::2]
        elif ftype == COLUMN_VISIBILITY:
            for c, bit in zip(cols, _msb_bits(data, len(cols))):
                c.visible = bit
        elif ftype == VECTOR_DIMENSIONALITY:
            vecs = [c for c in cols if c.type == T.VECTOR]
            for c, d in zip(vecs, _charset_list(data, len(vecs))):
                c.vector_dimensions = d
        # Unknown optional fields are skipped: the TLV length lets us.
    for c, members in raw_members.values():
        c.members = _member_names(members, c.collation)
    if p != len(body):
        raise CorruptEventError("Table_map optional metadata overruns the event", file=ctx.file,
                                offset=pos + p, expected=len(body), actual=p)
