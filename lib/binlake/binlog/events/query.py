"""Query events: QUERY (2), EXECUTE_LOAD_QUERY (18) and MariaDB's QUERY_COMPRESSED (165).

Layout (MySQL ``libs/mysql/binlog/event/statement_events.cpp`` Query_event, MariaDB
``sql/log_event.cc`` Query_log_event): post-header ``thread_id(4) exec_time(4) db_len(1)
error_code(2)`` and, from binlog v4 (MySQL 5.0), ``status_vars_len(2)``; Execute_load_query
appends ``file_id(4) fn_pos_start(4) fn_pos_end(4) dup_handling(1)``.  The body is
``status_vars db NUL query``; the query runs to the end of the body.

The post-header length comes from the FDE (11 bytes in binlog v3, no status block).  Status
variables are ``code(1) value`` pairs; both servers stop at the first code they do not know
(the block length is known, so db and query are still found) and so do we, keeping the rest
of the block as ``status_unparsed_hex``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..constants import EventType as E
from ..context import DecodeContext
from . import register
from ._common import Cursor, decode_sql_text, guarded, ident, mariadb_uncompress

QUERY_HEADER_MINIMAL_LEN = 11  # thread_id, exec_time, db_len, error_code: v3 and v4 agree
MAX_DBS_IN_EVENT_MTS = 16  # more accessed databases are logged as a count of 254, no names
DUP_HANDLING = ("error", "ignore", "replace")  # enum_load_dup_handling

# Gtid_log_event::FL_COMMIT_ALTER_E1 | FL_ROLLBACK_ALTER_E1 (MariaDB sql/log_event.h)
_ALTER_COMMIT_OR_ROLLBACK = 0x04 | 0x08

Status = dict[str, Any]


def _catalog_nz(cur: Cursor, st: Status) -> None:
    st["catalog"] = ident(cur.take(cur.u8("catalog length"), "catalog"))


def _catalog_z(cur: Cursor, st: Status) -> None:
    # MySQL 5.0.0-5.0.3 wrote the catalog with its NUL; MariaDB log_event.cc skips
    # length + 2 bytes whatever the length, matching what those servers wrote.
    n = cur.u8("catalog length")
    st["catalog"] = ident(cur.take(n, "catalog"))
    cur.skip(1, "catalog NUL")


def _auto_increment(cur: Cursor, st: Status) -> None:
    st["auto_increment_increment"] = cur.u16("auto_increment_increment")
    st["auto_increment_offset"] = cur.u16("auto_increment_offset")


def _charset(cur: Cursor, st: Status) -> None:
    st["charset"] = {"client": cur.u16("character_set_client"),
                     "connection": cur.u16("collation_connection"),
                     "server": cur.u16("collation_server")}


def _time_zone(cur: Cursor, st: Status) -> None:
    st["time_zone"] = ident(cur.take(cur.u8("time_zone length"), "time_zone"))


def _invoker(cur: Cursor, st: Status) -> None:
    user = ident(cur.take(cur.u8("invoker user length"), "invoker user"))
    host = ident(cur.take(cur.u8("invoker host length"), "invoker host"))
    st["invoker"] = {"user": user, "host": host}


def _updated_db_names(cur: Cursor, st: Status, end: int) -> None:
    at = cur.pos
    count = cur.u8("updated db count")
    if count > MAX_DBS_IN_EVENT_MTS:  # OVER_MAX_DBS_IN_EVENT_MTS (254): no names follow
        st["updated_db_names"] = None
        return
    if count == 0:  # statement_events.cpp: "Invalid MTA accessed databases"
        raise cur.corrupt("Q_UPDATED_DB_NAMES with a count of 0", at=at, expected=">= 1",
                          actual=0)
    names: list[str] = []
    for _ in range(count):
        if cur.pos >= end:
            raise cur.corrupt("Q_UPDATED_DB_NAMES lists fewer names than its count",
                              expected=count, actual=len(names))
        sub = Cursor(cur.ctx, cur.buf[:end], cur.base, cur.what, cur.pos)
        names.append(ident(sub.cstring("updated db name")))
        cur.pos = sub.pos
    st["updated_db_names"] = names


def _gtid_flags3(cur: Cursor, st: Status) -> None:
    # MariaDB 10.8+ (MDEV-11675): flags_extra of the GTID event; for the COMMIT/ROLLBACK of
    # a replicated ALTER TABLE the seq_no of its START ALTER follows.
    flags = cur.u8("gtid_flags3")
    st["gtid_flags3"] = flags
    if flags & _ALTER_COMMIT_OR_ROLLBACK:
        st["sa_seq_no"] = cur.u64("sa_seq_no")


def _character_set_collations(cur: Cursor, st: Status) -> None:
    # MariaDB 11.2+ @@character_set_collations (sql/charset_collations.h to_binary):
    # count(1), then count pairs of (character set id(2), collation id(2)).
    count = cur.u8("character_set_collations count")
    st["character_set_collations"] = [
        {"charset_id": cur.u16("charset id"), "collation_id": cur.u16("collation id")}
        for _ in range(count)]


def _fixed(key: str, size: int, transform: Callable[[int], Any] | None = None
           ) -> Callable[[Cursor, Status], None]:
    def read(cur: Cursor, st: Status) -> None:
        value = cur.uint(size, key)
        st[key] = transform(value) if transform else value

    return read


# Status variable code -> reader.  Codes 0-21: MySQL (statement_events.h
# Query_event_status_vars); 128-131: MariaDB (sql/log_event.h).  Sizes are the ones both
# servers read; codes absent here stop the parse like the servers' "default:" branch.
_STATUS: dict[int, Callable[[Cursor, Status], None]] = {
    0: _fixed("flags2", 4),  # Q_FLAGS2_CODE
    1: _fixed("sql_mode", 8),  # Q_SQL_MODE_CODE
    2: _catalog_z,  # Q_CATALOG_CODE (5.0.0-5.0.3)
    3: _auto_increment,  # Q_AUTO_INCREMENT
    4: _charset,  # Q_CHARSET_CODE
    5: _time_zone,  # Q_TIME_ZONE_CODE
    6: _catalog_nz,  # Q_CATALOG_NZ_CODE
    7: _fixed("lc_time_names", 2),  # Q_LC_TIME_NAMES_CODE
    8: _fixed("charset_database", 2),  # Q_CHARSET_DATABASE_CODE
    9: _fixed("table_map_for_update", 8),  # Q_TABLE_MAP_FOR_UPDATE_CODE
    10: _fixed("master_data_written", 4),  # Q_MASTER_DATA_WRITTEN_CODE (relay logs < 8.0.2)
    11: _invoker,  # Q_INVOKER
    # 12: Q_UPDATED_DB_NAMES needs the block end, handled in _parse_status
    13: _fixed("microseconds", 3),  # Q_MICROSECONDS
    # 14: Q_COMMIT_TS, an 8-byte commit sequence number of the 5.7 labs releases
    # (libbinlogevents of that era: COMMIT_SEQ_LEN); current servers no longer read it.
    14: _fixed("commit_ts", 8),
    # 15: Q_COMMIT_TS2 was reserved but no released server wrote or read it: unknown size.
    16: _fixed("explicit_defaults_for_timestamp", 1, bool),  # Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP
    17: _fixed("ddl_xid", 8),  # Q_DDL_LOGGED_WITH_XID
    18: _fixed("default_collation_for_utf8mb4", 2),  # Q_DEFAULT_COLLATION_FOR_UTF8MB4
    19: _fixed("sql_require_primary_key", 1),  # Q_SQL_REQUIRE_PRIMARY_KEY
    20: _fixed("default_table_encryption", 1),  # Q_DEFAULT_TABLE_ENCRYPTION
    21: _fixed("enable_cascade_triggers", 1),  # Q_ENABLE_CASCADE_TRIGGERS (MySQL 9.7)
    128: _fixed("microseconds", 3),  # Q_HRNOW (MariaDB): sub-second part of NOW()
    129: _fixed("xid", 8),  # Q_XID (MariaDB): XID of a DDL logged in one transaction
    130: _gtid_flags3,  # Q_GTID_FLAGS3 (MariaDB)
    131: _character_set_collations,  # Q_CHARACTER_SET_COLLATIONS (MariaDB)
}
Q_UPDATED_DB_NAMES = 12
Q_DUMMY = 255  # MariaDB: padding of a GTID event rewritten as BEGIN; ends the block


def _parse_status(cur: Cursor, end: int) -> tuple[Status, str | None]:
    """Status variables in ``cur.buf[cur.pos:end]``: (values, unparsed rest as hex or None)."""
    st: Status = {}
    block = Cursor(cur.ctx, cur.buf[:end], cur.base, cur.what, cur.pos)
    while block.pos < end:
        code = block.buf[block.pos]
        if code == Q_UPDATED_DB_NAMES:
            block.pos += 1
            _updated_db_names(block, st, end)
            continue
        reader = _STATUS.get(code)
        if reader is None:
            if code == Q_DUMMY:
                break
            return st, bytes(block.buf[block.pos:end]).hex()
        block.pos += 1
        reader(block, st)
    return st, None


def _query_common(ctx: DecodeContext, body: bytes, pos: int, type_code: int,
                  what: str) -> tuple[dict[str, Any], Cursor, int]:
    """The part shared by the three events: (fields, cursor at the query, post-header length)."""
    cur = Cursor(ctx, body, pos, what)
    post_header_len = ctx.fde.post_header_len(type_code)
    if post_header_len == 0 and type_code == E.QUERY_COMPRESSED:
        post_header_len = ctx.fde.post_header_len(E.QUERY)
    if post_header_len < QUERY_HEADER_MINIMAL_LEN:
        raise cur.corrupt("post-header shorter than a Query post-header",
                          expected=f">= {QUERY_HEADER_MINIMAL_LEN}", actual=post_header_len)
    cur.need(post_header_len, "post-header")
    thread_id = cur.u32("thread_id")
    exec_time = cur.u32("exec_time")
    db_len = cur.u8("db_len")
    error_code = cur.u16("error_code")
    status_len = 0
    if post_header_len > QUERY_HEADER_MINIMAL_LEN:  # binlog v4; v3 has no status block
        status_len = cur.u16("status_vars_len")
    cur.pos = post_header_len
    if status_len > cur.remaining:
        raise cur.corrupt("status block longer than the event body", at=11,
                          expected=f"<= {cur.remaining}", actual=status_len)
    end = cur.pos + status_len
    status, unparsed = _parse_status(cur, end)
    cur.pos = end
    db = cur.take(db_len, "db")
    cur.skip(1, "db NUL terminator")
    fields: dict[str, Any] = {
        "thread_id": thread_id,
        "exec_time": exec_time,
        "error_code": error_code,
        "db": ident(db),
        "query": None,
        "query_charset": None,
        "status": status,
        "status_unparsed_hex": unparsed,
    }
    return fields, cur, post_header_len


def _client_collation(status: Status) -> int | None:
    charset = status.get("charset")
    return charset["client"] if charset else None


def _set_query(fields: dict[str, Any], raw: bytes) -> None:
    text, charset = decode_sql_text(raw, _client_collation(fields["status"]))
    fields["query"] = text
    fields["query_charset"] = charset


@register(E.QUERY)
@guarded("Query")
def query(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    fields, cur, _ = _query_common(ctx, body, pos, E.QUERY, "Query")
    _set_query(fields, cur.rest())
    return fields


@register(E.QUERY_COMPRESSED)
@guarded("Query_compressed")
def query_compressed(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    # MariaDB 10.2+ log_bin_compress: a Query event whose query is a compressed record
    # (log_event.cc Query_compressed_log_event, binlog_buf_uncompress).
    fields, cur, _ = _query_common(ctx, body, pos, E.QUERY_COMPRESSED, "Query_compressed")
    _set_query(fields, mariadb_uncompress(cur, cur.rest(), "query"))
    return fields


@register(E.EXECUTE_LOAD_QUERY)
@guarded("Execute_load_query")
def execute_load_query(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    # load_data_events.cpp Execute_load_query_event: the extra post-header follows the
    # 13-byte Query post-header (ELQ_FILE_ID_OFFSET = QUERY_HEADER_LEN).
    fields, cur, post_header_len = _query_common(ctx, body, pos, E.EXECUTE_LOAD_QUERY,
                                                 "Execute_load_query")
    if post_header_len < 13 + 13:
        raise cur.corrupt("post-header too short for Execute_load_query", at=0,
                          expected=">= 26", actual=post_header_len)
    raw_query = cur.rest()
    extra = Cursor(ctx, body, pos, "Execute_load_query", 13)
    file_id = extra.u32("file_id")
    fn_pos_start = extra.u32("fn_pos_start")
    fn_pos_end = extra.u32("fn_pos_end")
    dup = extra.u8("dup_handling")
    # The server rejects the event when the file-name span lies outside the query or the
    # duplicate handling is unknown (load_data_events.cpp "Invalid Execute_load_query_event").
    if fn_pos_start > len(raw_query) or fn_pos_end > len(raw_query):
        raise extra.corrupt("file-name span outside the query", at=17,
                            expected=f"<= {len(raw_query)}",
                            actual=(fn_pos_start, fn_pos_end))
    if dup >= len(DUP_HANDLING):
        raise extra.corrupt("unknown dup_handling", at=25, expected="0..2", actual=dup)
    _set_query(fields, raw_query)
    fields.update(file_id=file_id, fn_pos_start=fn_pos_start, fn_pos_end=fn_pos_end,
                  dup_handling=DUP_HANDLING[dup])
    return fields
