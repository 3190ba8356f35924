"""GTID events: MySQL GTID (33), ANONYMOUS_GTID (34), GTID_TAGGED (42), PREVIOUS_GTIDS (35);
MariaDB GTID (162) and GTID_LIST (163).

MySQL: ``libs/mysql/binlog/event/control_events.cpp`` (Gtid_event, Previous_gtids_event),
``control_events.h`` (field list of the tagged event), ``libs/mysql/serialization/*`` (the
tagged event's encoding), ``sql/rpl_gtid_set.cc`` (Gtid_set::encode/add_gtid_encoding and
to_string).  MariaDB: ``sql/log_event.cc`` Gtid_log_event / Gtid_list_log_event constructors
and ``log_event_server.cc`` Gtid_log_event::write.
"""

from __future__ import annotations

from typing import Any

from ..constants import EventType as E
from ..context import DecodeContext
from ..errors import UnsupportedFeatureError
from . import register
from ._common import Cursor, guarded, ident, uuid_text, xid_dict

# -- MySQL GTID / ANONYMOUS_GTID ------------------------------------------------------------

LOGICAL_TIMESTAMP_TYPECODE = 2
COMMIT_TS_ORIGINAL_FOLLOWS = 1 << 55  # 7-byte timestamps: the top bit flags a second one
SERVER_VERSION_ORIGINAL_FOLLOWS = 1 << 31
GNO_END = (1 << 63) - 1  # GNOs are 1 .. 2^63-2


def _gtid_fields(flags: int, uuid: str, gno: int, tag: str | None, anonymous: bool
                 ) -> dict[str, Any]:
    if anonymous:
        gtid = None
    elif tag:
        gtid = f"{uuid}:{tag}:{gno}"
    else:
        gtid = f"{uuid}:{gno}"
    return {
        "gtid_flags": flags,
        # 5.6 named bit 0 the commit flag; since 5.7.19/8.0.2 it is FLAG_MAY_HAVE_SBR, set
        # unless the transaction is row-only (mysqlbinlog prints it as rbr_only=no).
        "commit_flag": bool(flags & 1),
        "uuid": uuid,
        "gno": gno,
        "tag": tag,
        "gtid": gtid,
        "last_committed": None,
        "sequence_number": None,
        "immediate_commit_timestamp": None,
        "original_commit_timestamp": None,
        "transaction_length": None,
        "immediate_server_version": None,
        "original_server_version": None,
        "commit_group_ticket": None,
    }


def _check_gno(cur: Cursor, gno: int, anonymous: bool, at: int) -> None:
    # control_events.cpp: "Invalid GNO" unless 1 <= gno < GNO_END (GTID) or gno == 0 (anonymous)
    if anonymous and gno != 0:
        raise cur.corrupt("anonymous GTID with a non-zero GNO", at=at, expected=0, actual=gno)
    if not anonymous and not 1 <= gno < GNO_END:
        raise cur.corrupt("GTID number out of range", at=at, expected=f"1..{GNO_END - 1}",
                          actual=gno)


@register(E.GTID, E.ANONYMOUS_GTID)
@guarded("Gtid")
def gtid(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    # flags(1) sid(16) gno(8) and, each only if the body is long enough (older servers wrote
    # less): lt_type(1)=2 last_committed(8) sequence_number(8) [5.7]; immediate commit
    # timestamp(7, bit 55: the original one follows in 7 more) [8.0.1]; transaction_length
    # (packed) [8.0.2]; immediate server version(4, bit 31: original follows in 4 more)
    # [8.0.14]; commit_group_ticket(8) [8.0.33].
    anonymous = ctx.type_code == E.ANONYMOUS_GTID
    cur = Cursor(ctx, body, pos, "Anonymous_gtid" if anonymous else "Gtid")
    flags = cur.u8("flags")
    uuid = uuid_text(cur.take(16, "sid"))
    gno_at = cur.pos
    gno = cur.i64("gno")
    _check_gno(cur, gno, anonymous, gno_at)
    out = _gtid_fields(flags, uuid, gno, None, anonymous)
    if cur.remaining < 1:
        return out
    # 5.6 had no typecode; 5.7.4 and earlier used another typecode with shorter timestamps:
    # the server accepts and ignores both, and so do we.
    if cur.u8("logical clock typecode") != LOGICAL_TIMESTAMP_TYPECODE:
        return out
    out["last_committed"] = cur.i64("last_committed")
    out["sequence_number"] = cur.i64("sequence_number")
    if cur.remaining < 7:
        return out
    immediate = cur.uint(7, "immediate_commit_timestamp")
    if immediate & COMMIT_TS_ORIGINAL_FOLLOWS:
        immediate &= ~COMMIT_TS_ORIGINAL_FOLLOWS
        original = cur.uint(7, "original_commit_timestamp")
    else:
        original = immediate
    out["immediate_commit_timestamp"] = immediate
    out["original_commit_timestamp"] = original
    if cur.remaining < 1:
        return out
    out["transaction_length"] = cur.packed("transaction_length")
    if cur.remaining < 4:
        return out
    immediate_version = cur.u32("immediate_server_version")
    if immediate_version & SERVER_VERSION_ORIGINAL_FOLLOWS:
        immediate_version &= ~SERVER_VERSION_ORIGINAL_FOLLOWS
        original_version = cur.u32("original_server_version")
    else:
        original_version = immediate_version
    out["immediate_server_version"] = immediate_version
    out["original_server_version"] = original_version
    if cur.remaining >= 8:
        out["commit_group_ticket"] = cur.u64("commit_group_ticket")
    return out


# -- MySQL GTID_TAGGED (8.3+) ---------------------------------------------------------------

SERIALIZATION_FORMAT_VERSION = 1  # serialization_format_version.h
TAG_MAX_LENGTH = 32  # mysql::gtid::tag_max_length

# Field ids of Gtid_event::define_fields (control_events.h), in order.
_F_FLAGS, _F_UUID, _F_GNO, _F_TAG = 0, 1, 2, 3
_F_LAST_COMMITTED, _F_SEQUENCE_NUMBER = 4, 5
_F_IMMEDIATE_TS, _F_ORIGINAL_TS, _F_TRX_LENGTH = 6, 7, 8
_F_IMMEDIATE_VERSION, _F_ORIGINAL_VERSION, _F_TICKET = 9, 10, 11
_LAST_KNOWN_FIELD = _F_TICKET
_TAGGED_FIELD_NAMES = ("gtid_flags", "uuid", "gno", "tag", "last_committed", "sequence_number",
                       "immediate_commit_timestamp", "original_commit_timestamp",
                       "transaction_length", "immediate_server_version",
                       "original_server_version", "commit_group_ticket")


def _read_tagged_field(cur: Cursor, field_id: int) -> Any:
    if field_id == _F_FLAGS:
        return cur.varlen_u("gtid_flags", 8)
    if field_id == _F_UUID:  # a fixed array of 16 bytes, each one a varlen integer
        return bytes(cur.varlen_u("uuid byte", 8) for _ in range(16))
    if field_id == _F_TAG:  # string: varlen length + bytes, at most 32
        length = cur.varlen_u("tag length")
        if length > TAG_MAX_LENGTH:
            raise cur.corrupt("GTID tag longer than 32 characters", expected="<= 32",
                              actual=length)
        return ident(cur.take(length, "tag"))
    name = _TAGGED_FIELD_NAMES[field_id]
    if field_id in (_F_GNO, _F_LAST_COMMITTED, _F_SEQUENCE_NUMBER):  # int64_t
        return cur.varlen_i(name)
    if field_id in (_F_IMMEDIATE_VERSION, _F_ORIGINAL_VERSION):  # uint32_t
        return cur.varlen_u(name, 32)
    return cur.varlen_u(name)  # uint64_t


@register(E.GTID_TAGGED)
@guarded("Gtid_tagged")
def gtid_tagged(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    # Serializer_default (serializer_impl.hpp, serializer_default_impl.hpp): the message is
    # ``format_version_id size last_non_ignorable_field_id`` (varlen each; size counts the
    # whole message) then ``field_id value`` pairs in field order.  A field whose id is not
    # next is missing (original timestamp / server version default to the immediate ones);
    # unknown trailing fields are skipped unless marked non-ignorable.
    cur = Cursor(ctx, body, pos, "Gtid_tagged")
    version = cur.varlen_u("serialization format version")
    if version != SERIALIZATION_FORMAT_VERSION:
        raise cur.corrupt("unknown serialization format version", at=0,
                          expected=SERIALIZATION_FORMAT_VERSION, actual=version)
    size = cur.varlen_u("message size")
    if size > len(body):
        raise cur.corrupt("message size larger than the event body", at=1,
                          expected=f"<= {len(body)}", actual=size)
    last_non_ignorable = cur.varlen_u("last non-ignorable field id")
    if last_non_ignorable > _LAST_KNOWN_FIELD + 1:
        raise ctx.corrupt("Gtid_tagged: the event has fields this decoder does not know and "
                          "may not ignore (written by a newer server)", pos,
                          expected=f"<= {_LAST_KNOWN_FIELD + 1}", actual=last_non_ignorable,
                          raw=body, cls=UnsupportedFeatureError)
    msg = Cursor(ctx, body[:size], pos, "Gtid_tagged", cur.pos)
    values: dict[int, Any] = {}
    for field_id in range(_LAST_KNOWN_FIELD + 1):
        if msg.remaining == 0:
            break
        save = msg.pos
        if msg.varlen_u("field id") != field_id:
            msg.pos = save  # missing field: the next one may still be there
            continue
        values[field_id] = _read_tagged_field(msg, field_id)
    missing = [f for f in (_F_FLAGS, _F_UUID, _F_GNO) if f not in values]
    if missing:
        raise cur.corrupt("tagged GTID without its mandatory fields", expected="flags, uuid, "
                          "gno", actual=f"missing field ids {missing}")
    gno = values[_F_GNO]
    _check_gno(msg, gno, False, 0)
    out = _gtid_fields(values[_F_FLAGS], uuid_text(values[_F_UUID]), gno,
                       values.get(_F_TAG) or None, False)
    immediate_ts = values.get(_F_IMMEDIATE_TS)
    immediate_version = values.get(_F_IMMEDIATE_VERSION)
    out.update(
        last_committed=values.get(_F_LAST_COMMITTED),
        sequence_number=values.get(_F_SEQUENCE_NUMBER),
        immediate_commit_timestamp=immediate_ts,
        original_commit_timestamp=values.get(_F_ORIGINAL_TS, immediate_ts),
        transaction_length=values.get(_F_TRX_LENGTH),
        immediate_server_version=immediate_version,
        original_server_version=values.get(_F_ORIGINAL_VERSION, immediate_version),
        commit_group_ticket=values.get(_F_TICKET),
    )
    return out


# -- MySQL PREVIOUS_GTIDS -------------------------------------------------------------------

GTID_FORMAT_UNTAGGED = 0
GTID_FORMAT_TAGGED = 1


def _interval_text(start: int, end: int) -> str:
    return str(start) if start == end else f"{start}-{end}"


def gtid_set_text(uuid_sets: list[dict[str, Any]]) -> str:
    """A GTID set as Gtid_set::to_string prints it (with ',' instead of ',\\n' between UUIDs):
    ``uuid:1-5:7,uuid2:1-3``; consecutive entries of one UUID merge as ``uuid:1-5:tag:1-2``."""
    parts: list[str] = []
    prev_uuid = None
    for entry in uuid_sets:
        text = ""
        if entry["uuid"] != prev_uuid:
            if parts:
                text += ","
            text += entry["uuid"]
            prev_uuid = entry["uuid"]
        if entry["tag"]:
            text += ":" + entry["tag"]
        text += "".join(":" + _interval_text(s, e) for s, e in entry["intervals"])
        parts.append(text)
    return "".join(parts)


@register(E.PREVIOUS_GTIDS)
@guarded("Previous_gtids")
def previous_gtids(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    # rpl_gtid_set.cc: n_sids(8): the top byte is the format; untagged n_sids is the low 56
    # bits, tagged n_sids is bits 8..55 (the format byte repeated in bits 0..7).  Per TSID:
    # uuid(16) [tag: varlen length + bytes] n_intervals(8) then (start(8), end(8)) pairs,
    # end exclusive, strictly increasing.
    cur = Cursor(ctx, body, pos, "Previous_gtids", ctx.fde.post_header_len(E.PREVIOUS_GTIDS))
    header_at = cur.pos
    header = cur.u64("n_sids")
    fmt = header >> 56
    if fmt == GTID_FORMAT_UNTAGGED:
        n_sids = header & ((1 << 56) - 1)
    elif fmt == GTID_FORMAT_TAGGED:
        n_sids = (header >> 8) & ((1 << 48) - 1)
    else:
        raise cur.corrupt("unknown GTID set encoding format", at=header_at, expected="0 or 1",
                          actual=fmt)
    if n_sids * 24 > cur.remaining:
        raise cur.corrupt("more TSIDs than the body can hold", at=header_at,
                          expected=f"<= {cur.remaining // 24}", actual=n_sids)
    uuid_sets: list[dict[str, Any]] = []
    for _ in range(n_sids):
        uuid = uuid_text(cur.take(16, "uuid"))
        tag = None
        if fmt == GTID_FORMAT_TAGGED:
            tag = ident(cur.take(cur.varlen_u("tag length"), "tag")) or None
        n_at = cur.pos
        n_intervals = cur.u64("n_intervals")
        if n_intervals * 16 > cur.remaining:
            raise cur.corrupt("more intervals than the body can hold", at=n_at,
                              expected=f"<= {cur.remaining // 16}", actual=n_intervals)
        intervals = []
        last = 0
        for _ in range(n_intervals):
            at = cur.pos
            start = cur.i64("interval start")
            end = cur.i64("interval end")
            if start <= last or end <= start:
                raise cur.corrupt("GTID intervals not increasing", at=at,
                                  expected=f"{last} < start < end", actual=(start, end))
            last = end
            intervals.append([start, end - 1])
        uuid_sets.append({"uuid": uuid, "tag": tag, "intervals": intervals})
    return {"gtid_set": gtid_set_text(uuid_sets), "uuid_sets": uuid_sets,
            "tagged_format": fmt == GTID_FORMAT_TAGGED}


# -- MariaDB GTID ---------------------------------------------------------------------------

# flags2 bits (sql/log_event.h Gtid_log_event::FL_*)
FLAGS2_NAMES = ("standalone", "group_commit_id", "transactional", "allow_parallel", "waited",
                "ddl", "prepared_xa", "completed_xa")
FL_GROUP_COMMIT_ID = 0x02
FL_PREPARED_XA = 0x40
FL_COMPLETED_XA = 0x80
# flags_extra bits (FL_EXTRA_MULTI_ENGINE_E1 ... FL_EXTRA_THREAD_ID)
FLAGS_EXTRA_NAMES = ("multi_engine", "start_alter", "commit_alter", "rollback_alter",
                     "thread_id")
FL_EXTRA_MULTI_ENGINE = 0x01
FL_COMMIT_OR_ROLLBACK_ALTER = 0x04 | 0x08
FL_EXTRA_THREAD_ID = 0x10


def _flag_names(value: int, names: tuple[str, ...]) -> list[str]:
    return [name for bit, name in enumerate(names) if value & (1 << bit)]


@register(E.MARIADB_GTID)
@guarded("MariaDB Gtid")
def mariadb_gtid(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    # seq_no(8) domain_id(4) flags2(1) [commit_id(8) if FL_GROUP_COMMIT_ID]
    # [formatID(4) gtrid_len(1) bqual_len(1) data if FL_PREPARED_XA|FL_COMPLETED_XA]
    # then, while bytes remain (10.5+): flags_extra(1) [extra_engines(1)] [sa_seq_no(8)]
    # [thread_id(4), 11.5+].  Short events are zero-padded to the 19-byte post-header,
    # which reads as flags_extra = 0.
    cur = Cursor(ctx, body, pos, "MariaDB Gtid")
    seq_no = cur.u64("seq_no")
    domain_id = cur.u32("domain_id")
    flags2 = cur.u8("flags2")
    server_id = getattr(ctx, "server_id", None)
    out: dict[str, Any] = {
        "domain_id": domain_id,
        "server_id": server_id,
        "seq_no": seq_no,
        "gtid": None if server_id is None else f"{domain_id}-{server_id}-{seq_no}",
        "flags2": flags2,
        "flags2_names": _flag_names(flags2, FLAGS2_NAMES),
        "commit_id": None,
        "xid": None,
        "flags_extra": 0,
        "flags_extra_names": [],
        "extra_engines": None,
        "sa_seq_no": None,
        "thread_id": None,
    }
    if flags2 & FL_GROUP_COMMIT_ID:
        out["commit_id"] = cur.u64("commit_id")
    if flags2 & (FL_PREPARED_XA | FL_COMPLETED_XA):
        format_id = cur.i32("XID formatID")
        gtrid_len = cur.u8("XID gtrid_length")
        bqual_len = cur.u8("XID bqual_length")
        data = cur.take(gtrid_len + bqual_len, "XID data")
        out["xid"] = xid_dict(format_id, data, gtrid_len)
    if cur.remaining:
        flags_extra = cur.u8("flags_extra")
        out["flags_extra"] = flags_extra
        out["flags_extra_names"] = _flag_names(flags_extra, FLAGS_EXTRA_NAMES)
        if flags_extra & FL_EXTRA_MULTI_ENGINE:
            out["extra_engines"] = cur.u8("extra_engines")
        if flags_extra & FL_COMMIT_OR_ROLLBACK_ALTER:
            out["sa_seq_no"] = cur.u64("sa_seq_no")
        if flags_extra & FL_EXTRA_THREAD_ID:
            out["thread_id"] = cur.u32("thread_id")
    return out


# -- MariaDB GTID_LIST ----------------------------------------------------------------------

GTID_LIST_FLAG_NAMES = ("until_reached", "ign_gtids")  # FLAG_UNTIL_REACHED 1<<28, FLAG_IGN_GTIDS


@register(E.MARIADB_GTID_LIST)
@guarded("Gtid_list")
def mariadb_gtid_list(ctx: DecodeContext, body: bytes, pos: int) -> dict[str, Any]:
    # count(4): low 28 bits the count, high 4 bits flags; then count x
    # (domain_id(4) server_id(4) seq_no(8)).
    cur = Cursor(ctx, body, pos, "Gtid_list")
    word = cur.u32("count")
    count = word & ((1 << 28) - 1)
    flags = word >> 28
    cur.pos = max(4, ctx.fde.post_header_len(E.MARIADB_GTID_LIST, 4))
    if count * 16 > cur.remaining:
        raise cur.corrupt("more GTIDs than the body can hold", at=0,
                          expected=f"<= {cur.remaining // 16}", actual=count)
    gtids = [{"domain_id": cur.u32("domain_id"), "server_id": cur.u32("server_id"),
              "seq_no": cur.u64("seq_no")} for _ in range(count)]
    return {
        "gtids": gtids,
        "gtid_list": ",".join(f"{g['domain_id']}-{g['server_id']}-{g['seq_no']}"
                              for g in gtids),
        "list_flags": flags,
        "flag_names": _flag_names(flags, GTID_LIST_FLAG_NAMES),
    }
