"""Table_map and rows events (write/update/delete, v0/v1/v2, MySQL partial JSON updates and
MariaDB's zlib-compressed rows events).

Rows event body (MySQL ``libbinlogevents/src/rows_event.cpp``, ``sql/log_event.cc``
Rows_log_event; MariaDB ``sql/log_event.cc``): post-header ``table_id(6|4) flags(2)`` and, in
v2, ``extra_info_len(2)`` counting itself plus the extra-info TLVs; then
``column_count(packed) columns_present(bitmap)`` (update events: a second bitmap for the after
image) and the row images up to the end of the body.
"""

from __future__ import annotations

import struct
from typing import Any

from ..constants import ColumnType as T
from ..constants import EventType as E
from ..context import DecodeContext
from ..errors import BinlogError, MissingTableMapError
from ..packed import ShortBuffer, packed_len
from ..rowcodec import compile_reader
from ..tablemap import TableMap, decode_table_map
from . import register
from ._common import Cursor, mariadb_uncompress

STMT_END_F = 0x1

_WRITE = frozenset({E.WRITE_ROWS, E.WRITE_ROWS_V1, E.PRE_GA_WRITE_ROWS,
                    E.WRITE_ROWS_COMPRESSED, E.WRITE_ROWS_COMPRESSED_V1})
_UPDATE = frozenset({E.UPDATE_ROWS, E.UPDATE_ROWS_V1, E.PRE_GA_UPDATE_ROWS,
                     E.UPDATE_ROWS_COMPRESSED, E.UPDATE_ROWS_COMPRESSED_V1,
                     E.PARTIAL_UPDATE_ROWS})
_V2 = frozenset({E.WRITE_ROWS, E.UPDATE_ROWS, E.DELETE_ROWS, E.PARTIAL_UPDATE_ROWS,
                 E.WRITE_ROWS_COMPRESSED, E.UPDATE_ROWS_COMPRESSED, E.DELETE_ROWS_COMPRESSED})
_PRE_GA = frozenset({E.PRE_GA_WRITE_ROWS, E.PRE_GA_UPDATE_ROWS, E.PRE_GA_DELETE_ROWS})
_COMPRESSED = frozenset({E.WRITE_ROWS_COMPRESSED, E.UPDATE_ROWS_COMPRESSED,
                         E.DELETE_ROWS_COMPRESSED, E.WRITE_ROWS_COMPRESSED_V1,
                         E.UPDATE_ROWS_COMPRESSED_V1, E.DELETE_ROWS_COMPRESSED_V1})


def op_of(type_code: int) -> str:
    if type_code in _WRITE:
        return "insert"
    if type_code in _UPDATE:
        return "update"
    return "delete"


@register(E.TABLE_MAP)
def table_map(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    tm = decode_table_map(ctx, body, pos)
    if ctx.table_map_hook is not None:
        tm = ctx.table_map_hook(tm, pos, ctx.fde)
    ctx.table_maps[tm.table_id] = tm
    # The column list is rendered only when an event is printed (render.event_dict):
    # MariaDB logs a Table_map per transaction, and most readers only need the TableMap.
    return {"table_id": tm.table_id, "db": tm.db, "table": tm.table, "_table_map": tm}


def _header(ctx: DecodeContext, type_code: int, body: bytes, pos: int) -> tuple[Any, ...]:
    tid_size = ctx.fde.table_id_size
    p = tid_size
    table_id = int.from_bytes(body[:tid_size], "little")
    flags = body[p] | body[p + 1] << 8
    p += 2
    extra: dict[str, Any] | None = None
    if type_code in _V2:
        extra_len = body[p] | body[p + 1] << 8
        if extra_len < 2 or p + extra_len > len(body):
            raise ctx.corrupt("rows event extra-info length out of range", pos + p,
                              expected=f"2..{len(body) - p}", actual=extra_len)
        if extra_len > 2:
            extra = _extra_info(body[p + 2:p + extra_len], type_code)
        p += extra_len
    return table_id, flags, extra, p


def _extra_info(data: bytes, type_code: int) -> dict[str, Any]:
    # rows_event.h Extra_row_info: TLVs, NDB_INFO (0) = len(1) format(1) data, PART_INFO (1) =
    # partition id (2) [+ source partition id (2) for updates].
    out: dict[str, Any] = {}
    p = 0
    while p < len(data):
        kind = data[p]
        p += 1
        if kind == 0 and p < len(data):
            n = data[p]
            out["ndb_info_hex"] = bytes(data[p:p + n]).hex()
            p += n
        elif kind == 1 and p + 2 <= len(data):
            out["partition_id"] = data[p] | data[p + 1] << 8
            p += 2
            if type_code in _UPDATE and p + 2 <= len(data):
                out["source_partition_id"] = data[p] | data[p + 1] << 8
                p += 2
        else:
            out["unparsed_hex"] = bytes(data[p - 1:]).hex()
            break
    return out


def decode_rows(ctx: DecodeContext, type_code: int, body: bytes, pos: int,
                with_rows: bool = True) -> dict[str, Any]:
    """Decode a rows event body into its fields and its rows."""
    table_id, flags, extra, p = _header(ctx, type_code, body, pos)
    tm: TableMap | None = ctx.table_maps.get(table_id)
    if tm is None:
        raise ctx.corrupt("rows event for a table id with no Table_map before it", pos,
                          expected=f"a Table_map for table id {table_id}", actual=None,
                          raw=body[:32], cls=MissingTableMapError)
    ncols, p = packed_len(body, p)
    if ncols != len(tm.columns):  # before the bitmaps: a damaged count can be 2**64
        raise ctx.corrupt("rows event column count differs from its Table_map", pos,
                          expected=len(tm.columns), actual=ncols)
    nbytes = (ncols + 7) >> 3
    everything = (1 << ncols) - 1
    present = int.from_bytes(body[p:p + nbytes], "little") & everything  # drop padding bits
    p += nbytes
    is_update = type_code in _UPDATE
    present_after = present
    if is_update and type_code not in _PRE_GA:  # pre-GA updates had a single bitmap
        present_after = int.from_bytes(body[p:p + nbytes], "little") & everything
        p += nbytes
    data = body
    if type_code in _COMPRESSED:
        # Everything after the bitmaps is one compressed record (log_event.cc,
        # row_log_event_uncompress).
        data = mariadb_uncompress(Cursor(ctx, body, pos, "compressed rows event", p), body[p:],
                                  "rows")
        p = 0
    d: dict[str, Any] = {
        "table_id": table_id,
        "db": tm.db,
        "table": tm.table,
        "rows_flags": flags,
        "stmt_end": bool(flags & STMT_END_F),
        "column_count": ncols,
    }
    if extra:
        d["extra_info"] = extra
    if present != everything:
        d["columns_present"] = [i for i in range(ncols) if present >> i & 1]
    if is_update and present_after != everything:
        d["columns_present_after"] = [i for i in range(ncols) if present_after >> i & 1]
    if with_rows:
        d["rows"] = _rows(ctx, tm, type_code, data, p, pos, present, present_after)
    return d


def _advanced(ctx: DecodeContext, tm: TableMap, p: int, q: int, n: int, pos: int,
              data: bytes) -> int:
    """``q``, the end of row ``n`` that started at ``p``; a row of no bytes (no column
    present and no null bitmap: a damaged Table_map or column bitmap) is corrupt, else the
    loop over the event's rows would never end."""
    if q <= p:
        raise ctx.corrupt(f"row {n} of {tm.db}.{tm.table} takes no bytes: the event's rows "
                          "cannot be told apart", pos, expected="a row image of at least one "
                          "byte", actual=f"{q - p} bytes at body offset {p}", raw=data[:64])
    return q


def _rows(ctx: DecodeContext, tm: TableMap, type_code: int, data: bytes, p: int, pos: int,
          present: int, present_after: int) -> list[tuple[Any, Any]]:
    """Rows as (before, after) pairs: (None, row) insert, (row, None) delete, (row, row) update."""
    end = len(data)
    rows: list[tuple[Any, Any]] = []
    append = rows.append
    try:
        shift = 1 if type_code in _PRE_GA else 0
        read = compile_reader(tm, present, null_shift=shift)
        if type_code in _WRITE:
            while p < end:
                row, q = read(data, p)
                p = _advanced(ctx, tm, p, q, len(rows), pos, data)
                append((None, row))
        elif type_code == E.PARTIAL_UPDATE_ROWS:
            from ..partial import read_partial_update

            read_after = compile_reader(tm, present_after)
            while p < end:
                before, q = read(data, p)
                after, q = read_partial_update(ctx, tm, present_after, read_after, data, q,
                                               before, pos)
                p = _advanced(ctx, tm, p, q, len(rows), pos, data)
                append((before, after))
        elif type_code in _UPDATE:
            read_after = (compile_reader(tm, present_after, null_shift=shift)
                          if present_after != present else read)
            while p < end:
                before, q = read(data, p)
                after, q = read_after(data, q)
                p = _advanced(ctx, tm, p, q, len(rows), pos, data)
                append((before, after))
        else:
            while p < end:
                row, q = read(data, p)
                p = _advanced(ctx, tm, p, q, len(rows), pos, data)
                append((row, None))
    except BinlogError:
        raise
    except (IndexError, ValueError, TypeError, ShortBuffer, KeyError, OverflowError,
            struct.error) as exc:
        raise ctx.corrupt(f"cannot decode row {len(rows)} of {tm.db}.{tm.table}: {exc}", pos,
                          raw=data[:64]) from None
    if p != end:
        raise ctx.corrupt(f"row {len(rows) - 1} of {tm.db}.{tm.table} runs past the end of "
                          "its event", pos, expected=f"row data ending at {end}", actual=p,
                          raw=data[:64])
    return rows


def _make(type_code: int) -> Any:
    def decode(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
        return decode_rows(ctx, type_code, body, pos)

    decode.__name__ = f"decode_{E(type_code).name.lower()}"
    return decode


for _code in (E.WRITE_ROWS, E.UPDATE_ROWS, E.DELETE_ROWS, E.WRITE_ROWS_V1, E.UPDATE_ROWS_V1,
              E.DELETE_ROWS_V1, E.PRE_GA_WRITE_ROWS, E.PRE_GA_UPDATE_ROWS, E.PRE_GA_DELETE_ROWS,
              E.PARTIAL_UPDATE_ROWS, *_COMPRESSED):
    register(_code)(_make(_code))

ROWS_EVENTS = frozenset({*_WRITE, *_UPDATE, E.DELETE_ROWS, E.DELETE_ROWS_V1,
                         E.PRE_GA_DELETE_ROWS, E.DELETE_ROWS_COMPRESSED,
                         E.DELETE_ROWS_COMPRESSED_V1})

__all__ = ["ROWS_EVENTS", "T", "decode_rows", "op_of"]
