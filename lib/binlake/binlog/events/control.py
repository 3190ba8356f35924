"""Control and statement-context events: everything that is neither a query, a GTID, a LOAD DATA
block nor a rows event.

Sources: MySQL ``libs/mysql/binlog/event/control_events.cpp`` and ``statement_events.cpp``
(Rotate, Incident, Xid, XA_prepare, Heartbeat(v2), Transaction_context, View_change, Intvar,
Rand, User_var), ``rows_event.cpp`` (Rows_query); MariaDB ``sql/log_event.cc`` (Annotate_rows,
Binlog_checkpoint, Start_encryption, and its User_var optional attributes).
"""

from __future__ import annotations

from typing import Any

from .. import values
from ..constants import EventType as E
from ..context import DecodeContext
from ..fde import parse_fde, parse_start_v3
from . import register
from ._common import Cursor, decode_sql_text, guarded, ident, xid_dict

# -- Format description / Start_v3 ----------------------------------------------------------


@register(E.FORMAT_DESCRIPTION)
@guarded("Format_description")
def format_description(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    # The reader strips the CRC of checksummed binlogs; parse_fde expects the FDE's trailing
    # ``alg(1) crc(4)`` (present, as room, even when the algorithm is OFF), so put the room back.
    raw = body + b"\0\0\0\0" if ctx.fde.has_checksum else body
    return parse_fde(raw, file=ctx.file, offset=pos).to_dict()


@register(E.START_V3)
@guarded("Start_v3")
def start_v3(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    return parse_start_v3(body, file=ctx.file, offset=pos).to_dict()


@register(E.STOP)
@guarded("Stop")
def stop(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    return {}


@register(E.IGNORABLE)
@guarded("Ignorable")
def ignorable(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    # An event the server may skip; its body has no defined layout (control_events.cpp).
    return {"body_length": len(body)}


# -- Rotate ---------------------------------------------------------------------------------


@register(E.ROTATE)
@guarded("Rotate")
def rotate(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    cur = Cursor(ctx, body, pos, "Rotate")
    # Binlog v1 had no post-header and an implicit position of 4 (control_events.cpp).
    post_header_len = ctx.fde.post_header_len(E.ROTATE, 8)
    position = cur.u64("position") if post_header_len else 4
    cur.pos = post_header_len
    name = cur.rest()
    if not name:  # "Event is smaller than expected"
        raise cur.corrupt("Rotate event without a file name", expected="a file name",
                          actual="0 bytes")
    return {"position": position, "next_file": ident(name)}


# -- Intvar / Rand / Xid --------------------------------------------------------------------

_INTVAR_KINDS = {0: "INVALID_INT", 1: "LAST_INSERT_ID", 2: "INSERT_ID"}


@register(E.INTVAR)
@guarded("Intvar")
def intvar(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    cur = Cursor(ctx, body, pos, "Intvar", ctx.fde.post_header_len(E.INTVAR))
    kind = cur.u8("type")
    return {"kind": _INTVAR_KINDS.get(kind, f"UNKNOWN_{kind}"), "value": cur.u64("value")}


@register(E.RAND)
@guarded("Rand")
def rand(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    cur = Cursor(ctx, body, pos, "Rand", ctx.fde.post_header_len(E.RAND))
    return {"seed1": cur.u64("seed1"), "seed2": cur.u64("seed2")}


@register(E.XID)
@guarded("Xid")
def xid(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    cur = Cursor(ctx, body, pos, "Xid", ctx.fde.post_header_len(E.XID))
    return {"xid": cur.u64("xid")}


# -- User_var -------------------------------------------------------------------------------

_VALUE_TYPES = {0: "string", 1: "real", 2: "int", 3: "row", 4: "decimal"}  # enum Item_result
BINARY_COLLATION = 63


def decimal_text(cur: Cursor, data: bytes, precision: int, scale: int) -> str:
    """A decimal2bin value as the server prints it (values.decimal_text), located errors."""
    size = values.decimal_bin_size(precision, scale)
    if len(data) < size:
        raise cur.corrupt("decimal value shorter than its precision and scale need",
                          expected=size, actual=len(data))
    try:
        return values.decimal_text(data, precision, scale)
    except ValueError as exc:
        raise cur.corrupt(str(exc)) from None


def _string_value(data: bytes, collation_id: int) -> tuple[str | None, str | None]:
    """(text, hex): text when the bytes decode in their character set, else the hex."""
    if collation_id == BINARY_COLLATION:
        return None, data.hex()
    try:
        from .. import charsets
    except ImportError:  # pragma: no cover - charsets.py is part of the package
        return None, data.hex()
    decoded = charsets.decode_text(data, charsets.codec_of(collation_id))
    if isinstance(decoded, str):
        return decoded, None
    return None, data.hex()


@register(E.USER_VAR)
@guarded("User_var")
def user_var(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    cur = Cursor(ctx, body, pos, "User_var", ctx.fde.post_header_len(E.USER_VAR))
    name_len = cur.u32("name length")
    if name_len == 0:  # statement_events.cpp: "Invalid name length"
        raise cur.corrupt("user variable with an empty name", at=cur.pos - 4,
                          expected=">= 1", actual=0)
    fields: dict[str, Any] = {
        "name": ident(cur.take(name_len, "name")),
        "is_null": bool(cur.u8("is_null")),
        "value_type": None,
        "charset": None,
        "is_unsigned": False,
        "data_type_name": None,
        "value": None,
        "value_hex": None,
    }
    if fields["is_null"]:
        return fields
    type_at = cur.pos
    vtype = cur.u8("value type")
    if vtype not in _VALUE_TYPES:  # "Invalid type found while deserializing User_var_event"
        raise cur.corrupt("unknown user variable type", at=type_at, expected="0..4",
                          actual=vtype)
    charset = cur.u32("charset")
    val_len = cur.u32("value length")
    value_at = cur.pos
    value = cur.take(val_len, "value")
    # After the value: MySQL writes one flags byte (UNSIGNED_F = 1); MariaDB writes optional
    # attribute chunks (log_event_data_type.h: 0 signed, 1 unsigned, 2 data type name).
    while cur.remaining:
        chunk = cur.u8("optional attribute")
        if chunk == 0:
            fields["is_unsigned"] = False
        elif chunk == 1:
            fields["is_unsigned"] = True
        elif chunk == 2:
            fields["data_type_name"] = ident(cur.take(cur.u8("data type name length"),
                                                      "data type name"))
        else:  # an unknown chunk: MariaDB stops reading the attributes there
            break
    fields["value_type"] = _VALUE_TYPES[vtype]
    fields["charset"] = charset
    vcur = Cursor(ctx, value, pos + value_at, "User_var")
    if vtype == 2:  # INT_RESULT: 8 bytes, signed unless UNSIGNED_F
        if val_len != 8:
            raise vcur.corrupt("integer user variable is not 8 bytes", expected=8,
                               actual=val_len)
        fields["value"] = int.from_bytes(value, "little", signed=not fields["is_unsigned"])
    elif vtype == 1:  # REAL_RESULT: a double
        if val_len != 8:
            raise vcur.corrupt("real user variable is not 8 bytes", expected=8, actual=val_len)
        fields["value"] = vcur.f64("value")
    elif vtype == 4:  # DECIMAL_RESULT: precision(1) scale(1) decimal2bin
        precision = vcur.u8("decimal precision")
        scale = vcur.u8("decimal scale")
        if scale > precision or precision > 65:
            raise vcur.corrupt("impossible decimal precision/scale", at=0,
                               expected="scale <= precision <= 65", actual=(precision, scale))
        fields["value"] = decimal_text(vcur, value[2:], precision, scale)
    elif vtype == 0:  # STRING_RESULT in the variable's own character set
        fields["value"], fields["value_hex"] = _string_value(value, charset)
    else:  # ROW_RESULT: never written by a server; keep the bytes
        fields["value_hex"] = value.hex()
    return fields


# -- Incident -------------------------------------------------------------------------------

_INCIDENTS = {0: "NONE", 1: "LOST_EVENTS"}  # enum_incident (INCIDENT_COUNT = 2)


@register(E.INCIDENT)
@guarded("Incident")
def incident(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    # incident(2) then, after the post-header, message_length(1) message.  The servers refuse
    # a number other than LOST_EVENTS ("Invalid incident number in INCIDENT"); the event is
    # itself the report of a problem, so we keep it, named UNKNOWN_<n>, and read the message.
    cur = Cursor(ctx, body, pos, "Incident")
    code = cur.u16("incident")
    cur.pos = ctx.fde.post_header_len(E.INCIDENT, 2)
    message = cur.take(cur.u8("message length"), "message")  # read_str_at_most_255_bytes
    return {"incident": code, "incident_name": _INCIDENTS.get(code, f"UNKNOWN_{code}"),
            "message": message.decode("utf-8", "backslashreplace")}


# -- Heartbeats -----------------------------------------------------------------------------


@register(E.HEARTBEAT)
@guarded("Heartbeat")
def heartbeat(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    # Only sent on the wire; the body is the current binlog file name.
    return {"log_filename": ident(body), "log_position": None}


@register(E.HEARTBEAT_V2)
@guarded("Heartbeat_v2")
def heartbeat_v2(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    # codecs/binary.cpp Heartbeat::decode: packed-int TLVs, type 0 ends the list,
    # 1 = log file name, 2 = log position (a packed integer inside its value).
    cur = Cursor(ctx, body, pos, "Heartbeat_v2")
    out: dict[str, Any] = {"log_filename": None, "log_position": None}
    while cur.remaining:
        field = cur.packed("field type")
        if field == 0:
            break
        length = cur.packed("field length")
        value = Cursor(ctx, cur.take(length, "field value"), cur.offset - length,
                       "Heartbeat_v2")
        if field == 1:
            out["log_filename"] = ident(value.rest())
        elif field == 2:
            out["log_position"] = value.packed("log position")
    return out


# -- Rows_query / Annotate_rows -------------------------------------------------------------


@register(E.ROWS_QUERY)
@guarded("Rows_query")
def rows_query(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    # rows_event.cpp: the first byte is a length that only fits 255 bytes, so the server
    # ignores it and takes the query to the end of the body.
    cur = Cursor(ctx, body, pos, "Rows_query", ctx.fde.post_header_len(E.ROWS_QUERY))
    cur.skip(1, "length byte")
    raw = cur.rest()
    text, charset = decode_sql_text(raw, None)
    return _sql_text(text, charset, raw)


@register(E.ANNOTATE_ROWS)
@guarded("Annotate_rows")
def annotate_rows(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    # MariaDB log_event.cc Annotate_rows_log_event: the whole body is the statement text.
    text, charset = decode_sql_text(body, None)
    return _sql_text(text, charset, body)


def _sql_text(text: str, charset: str, raw: bytes) -> dict[str, Any]:
    """A statement text's fields; ``_utf8`` (not rendered) keeps the logged bytes when they
    are the text's UTF-8, so that writers of UTF-8 (Arrow, Parquet) need not encode the
    text again."""
    d: dict[str, Any] = {"query": text, "query_charset": charset}
    if charset == "utf8":
        d["_utf8"] = bytes(raw)
    return d


# -- MySQL group replication / XA -----------------------------------------------------------

ENCODED_VIEW_ID_MAX_LEN = 40


@register(E.VIEW_CHANGE)
@guarded("View_change")
def view_change(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    # control_events.cpp View_change_event: view_id(40, NUL padded) seq_number(8)
    # cert_info_len(4), then cert_info_len (key_len(2) key value_len(4) value) pairs.
    cur = Cursor(ctx, body, pos, "View_change")
    view_id = cur.take(ENCODED_VIEW_ID_MAX_LEN, "view_id").split(b"\0", 1)[0]
    if not view_id:  # "Invalid View_change information"
        raise cur.corrupt("View_change without a view id", at=0, expected="a view id",
                          actual="empty")
    seq_number = cur.u64("seq_number")
    count = cur.u32("certification info count")
    info: dict[str, str] = {}
    for _ in range(count):
        key = ident(cur.take(cur.u16("key length"), "key"))
        info[key] = ident(cur.take(cur.u32("value length"), "value"))
    return {"view_id": ident(view_id), "seq_number": seq_number, "certification_info": info}


@register(E.TRANSACTION_CONTEXT)
@guarded("Transaction_context")
def transaction_context(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    # control_events.cpp Transaction_context_event: server_uuid_len(1) thread_id(4)
    # gtid_specified(1) snapshot_version_len(4) write_set_len(4) read_set_len(4), then the
    # uuid, the encoded snapshot version and the two sets of (len(2) hash) items.
    cur = Cursor(ctx, body, pos, "Transaction_context")
    uuid_len = cur.u8("server_uuid length")
    thread_id = cur.u32("thread_id")
    gtid_specified = bool(cur.u8("gtid_specified"))
    snapshot_len = cur.u32("snapshot version length")
    write_len = cur.u32("write set size")
    read_len = cur.u32("read set size")
    server_uuid = ident(cur.take(uuid_len, "server_uuid"))
    snapshot = cur.take(snapshot_len, "snapshot version")
    write_set = [ident(cur.take(cur.u16("item length"), "write set item"))
                 for _ in range(write_len)]
    read_set = [ident(cur.take(cur.u16("item length"), "read set item"))
                for _ in range(read_len)]
    return {"server_uuid": server_uuid, "thread_id": thread_id,
            "gtid_specified": gtid_specified, "snapshot_version_hex": snapshot.hex(),
            "write_set": write_set, "read_set": read_set}


MAX_XID_PART = 64  # MAXGTRIDSIZE / MAXBQUALSIZE


@register(E.XA_PREPARE)
@guarded("XA_prepare")
def xa_prepare(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    # control_events.cpp XA_prepare_event: one_phase(1) formatID(4) gtrid_length(4)
    # bqual_length(4) data(gtrid_length + bqual_length), each part at most 64 bytes.
    cur = Cursor(ctx, body, pos, "XA_prepare", ctx.fde.post_header_len(E.XA_PREPARE))
    one_phase = bool(cur.u8("one_phase"))
    format_id = cur.i32("formatID")
    at = cur.pos
    gtrid_len = cur.u32("gtrid_length")
    bqual_len = cur.u32("bqual_length")
    if gtrid_len > MAX_XID_PART or bqual_len > MAX_XID_PART:
        raise cur.corrupt("XID part longer than 64 bytes", at=at, expected="<= 64 each",
                          actual=(gtrid_len, bqual_len))
    data = cur.take(gtrid_len + bqual_len, "XID data")
    return {"one_phase": one_phase, "xid": xid_dict(format_id, data, gtrid_len)}


# -- MariaDB --------------------------------------------------------------------------------


@register(E.BINLOG_CHECKPOINT)
@guarded("Binlog_checkpoint")
def binlog_checkpoint(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    # log_event.cc Binlog_checkpoint_log_event: post-header = file name length (4).
    cur = Cursor(ctx, body, pos, "Binlog_checkpoint")
    name_len = cur.u32("binlog file name length")
    cur.pos = max(4, ctx.fde.post_header_len(E.BINLOG_CHECKPOINT, 4))
    return {"binlog_file": ident(cur.take(name_len, "binlog file name"))}


BINLOG_NONCE_LENGTH = 12  # rpl_constants.h: BINLOG_IV_LENGTH(16) - BINLOG_IV_OFFS_LENGTH(4)


@register(E.START_ENCRYPTION)
@guarded("Start_encryption")
def start_encryption(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    # log_event.cc Start_encryption_log_event: scheme(1) key_version(4) nonce(12), exactly.
    cur = Cursor(ctx, body, pos, "Start_encryption")
    if len(body) != 1 + 4 + BINLOG_NONCE_LENGTH:
        raise cur.corrupt("Start_encryption body has the wrong size", expected=17,
                          actual=len(body))
    return {"scheme": cur.u8("scheme"), "key_version": cur.u32("key_version"),
            "nonce_hex": cur.take(BINLOG_NONCE_LENGTH, "nonce").hex()}
