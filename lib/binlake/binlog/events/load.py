"""The LOAD DATA INFILE family: LOAD (6), CREATE_FILE (8), APPEND_BLOCK (9), EXEC_LOAD (10),
DELETE_FILE (11), NEW_LOAD (12), BEGIN_LOAD_QUERY (17).

MySQL 3.23-4.x logged LOAD DATA as a Load event (the statement's parts) or, from 4.0, as
Create_file + Append_block* + Exec_load / Delete_file carrying the file itself; 5.0.3+ logs
Begin_load_query + Append_block* then an Execute_load_query (a Query event, in query.py).
Layouts: MySQL 5.x ``sql/log_event.cc`` (Load_log_event::copy_log_event, sql_ex_info::init,
Create_file_log_event), ``libs/mysql/binlog/event/load_data_events.cpp`` (Append_block,
Delete_file, Begin_load_query); MariaDB ``sql/log_event.cc``.

File data is not copied into the decoded record: a block is described by ``block_length`` and
``block_sha256`` (hex SHA-256 of its bytes), enough to check that a reassembled file matches
without carrying megabytes of payload through the JSON output.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..constants import EventType as E
from ..context import DecodeContext
from . import register
from ._common import Cursor, guarded, ident

# Load post-header: thread_id(4) exec_time(4) skip_lines(4) table_name_len(1) db_len(1)
# num_fields(4); frozen since 3.23 ("these Load events are not changed between 4.0 and 5.0").
LOAD_HEADER_LEN = 18
CREATE_FILE_HEADER_LEN = 4  # file_id, after the Load post-header

# sql_ex opt_flags (log_event.h)
DUMPFILE_FLAG = 0x1
OPT_ENCLOSED_FLAG = 0x2
REPLACE_FLAG = 0x4
IGNORE_FLAG = 0x8
# old-format empty_flags: which of the one-character strings are really empty
_EMPTY_BITS = {"field_term": 0x1, "enclosed": 0x2, "line_term": 0x4, "line_start": 0x8,
               "escaped": 0x10}
_SQL_EX_STRINGS = ("field_term", "enclosed", "line_term", "line_start", "escaped")


def _block(data: bytes) -> dict[str, Any]:
    return {"block_length": len(data), "block_sha256": hashlib.sha256(data).hexdigest()}


def _sql_ex(cur: Cursor, new_format: bool) -> dict[str, Any]:
    """The LOAD DATA options (sql_ex_info::init).  New format: five length-prefixed strings
    and opt_flags(1).  Old format (the LOAD event of 3.23/4.0): five single characters,
    opt_flags(1), empty_flags(1) saying which characters stand for an empty string."""
    values: dict[str, bytes] = {}
    if new_format:
        for name in _SQL_EX_STRINGS:
            values[name] = cur.take(cur.u8(f"{name} length"), name)
        opt_flags = cur.u8("opt_flags")
        empty_flags = 0
    else:
        for name in _SQL_EX_STRINGS:
            values[name] = cur.take(1, name)
        opt_flags = cur.u8("opt_flags")
        empty_flags = cur.u8("empty_flags")
        for name, bit in _EMPTY_BITS.items():
            if empty_flags & bit:
                values[name] = b""
    out: dict[str, Any] = {f"{name}_hex": values[name].hex() for name in _SQL_EX_STRINGS}
    if opt_flags & REPLACE_FLAG:
        duplicates = "replace"
    elif opt_flags & IGNORE_FLAG:
        duplicates = "ignore"
    else:
        duplicates = "error"
    out.update(opt_flags=opt_flags, empty_flags=empty_flags,
               optionally_enclosed=bool(opt_flags & OPT_ENCLOSED_FLAG), duplicates=duplicates)
    return out


def _load_common(cur: Cursor, body_offset: int, new_format: bool) -> dict[str, Any]:
    """Load_log_event::copy_log_event: the post-header at 0, the variable part at
    ``body_offset``: sql_ex, num_fields field-name lengths(1 each), the field names (each
    NUL-terminated), table_name NUL, db NUL, then the file name."""
    thread_id = cur.u32("thread_id")
    exec_time = cur.u32("exec_time")
    skip_lines = cur.u32("skip_lines")
    table_len = cur.u8("table_name_len")
    db_len = cur.u8("db_len")
    num_fields = cur.u32("num_fields")
    cur.pos = body_offset
    fields: dict[str, Any] = {"thread_id": thread_id, "exec_time": exec_time,
                              "skip_lines": skip_lines}
    fields.update(_sql_ex(cur, new_format))
    if num_fields > cur.remaining:  # "simple sanity check against corruption"
        raise cur.corrupt("more field names than the body can hold", at=14,
                          expected=f"<= {cur.remaining}", actual=num_fields)
    lengths = cur.take(num_fields, "field name lengths")
    names = []
    for n in lengths:
        names.append(ident(cur.take(n, "field name")))
        cur.skip(1, "field name NUL")
    table = cur.take(table_len, "table name")
    cur.skip(1, "table name NUL")
    db = cur.take(db_len, "db")
    cur.skip(1, "db NUL")
    fields.update(table=ident(table), db=ident(db), fields=names)
    return fields


@register(E.LOAD, E.NEW_LOAD)
@guarded("Load")
def load(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    # LOAD uses the old one-character sql_ex, NEW_LOAD the length-prefixed one.
    new_format = ctx.type_code == E.NEW_LOAD
    cur = Cursor(ctx, body, pos, "New_load" if new_format else "Load")
    fields = _load_common(cur, LOAD_HEADER_LEN, new_format)
    rest = cur.rest()
    fields["file_name"] = ident(rest.split(b"\0", 1)[0])  # fname runs to a NUL or the end
    return fields


@register(E.CREATE_FILE)
@guarded("Create_file")
def create_file(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    # Create_file_log_event: the Load post-header, file_id(4), then the Load variable part
    # (new-format sql_ex), the file name, a NUL, and the first block of the file.
    cur = Cursor(ctx, body, pos, "Create_file")
    cur.need(LOAD_HEADER_LEN + CREATE_FILE_HEADER_LEN, "post-header")
    file_id = int.from_bytes(body[LOAD_HEADER_LEN:LOAD_HEADER_LEN + 4], "little")
    fields = _load_common(cur, LOAD_HEADER_LEN + CREATE_FILE_HEADER_LEN, True)
    fields["file_name"] = ident(cur.cstring("file name"))
    fields["file_id"] = file_id
    fields.update(_block(cur.rest()))
    return fields


def _file_id(ctx: DecodeContext, body: bytes, pos: int, what: str) -> Cursor:
    cur = Cursor(ctx, body, pos, what)
    cur.need(4, "file_id")
    return cur


@register(E.APPEND_BLOCK, E.BEGIN_LOAD_QUERY)
@guarded("Append_block")
def append_block(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    # file_id(4) then the block up to the end of the body; Begin_load_query has the same
    # layout and starts the file of a 5.0.3+ LOAD DATA.
    cur = _file_id(ctx, body, pos, "Append_block")
    file_id = cur.u32("file_id")
    cur.pos = max(4, ctx.fde.post_header_len(ctx.type_code, 4))
    return {"file_id": file_id, **_block(cur.rest())}


@register(E.EXEC_LOAD, E.DELETE_FILE)
@guarded("Exec_load")
def file_event(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    # Exec_load (run the LOAD of that file) and Delete_file (drop it): file_id(4) only.
    cur = _file_id(ctx, body, pos, "Delete_file" if ctx.type_code == E.DELETE_FILE
                   else "Exec_load")
    return {"file_id": cur.u32("file_id")}
