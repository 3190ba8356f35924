"""What validation needs to know of a byte range of a binlog file, gathered while it is decoded.

Validation (:mod:`binlake.quality`) checks the event stream: positions, checksums,
``transaction_length``, Xids, the WL#4162 grammar, GTID continuity, XA pairing.  The load
decodes every byte range of every file once; :class:`RangeFacts` rides along that pass (it is
fed the events the reader yields and the groups the :class:`~binlake.txn.build.GroupBuilder`
gives) so that validation never decodes the files again.  Validating files the lake has no
facts of runs the same class over each whole file (a range from the start to the end).

It emits rows of one schema, :data:`FACT_FIELDS`, one ``kind`` per row:

``range``    one per range, last: the file-level facts the range saw (FDE, in-use flag, what
             it ends with, the framing error, the GTID header and the GTIDs it holds, event
             counts per checksum state, the position offsets at its start and end), in ``meta``
``group``    one per event group: a transaction, an XA PREPARE group, an XA COMMIT/ROLLBACK
             marker, or a group that never ended (``record = 'incomplete'``), with its applied
             row counts
``gtid``     one per GTID event (MySQL uuid[:tag]:gno, MariaDB domain-server-seq_no)
``xid``      one per event that ends a transaction with an internal xid (Xid events, DDL
             ``ddl_xid``, MariaDB Query ``xid``): repeated values within a file are found by the
             facts' reader, across the ranges
``event``    one per event whose checksum or body failed (the rest are only counted)
``finding``  the verdicts of :class:`~binlake.txn.checks.StreamChecker` and the group builder
             validation keeps (positions, ``transaction_length``, WL#4162, groups open at
             the file's end)

Verdicts that need two ranges are left to the reader: a position offset that changes where a
range starts (``resume_delta`` against the previous range's ``end_delta``), and an xid
repeated in two ranges of one file.  Memory: the rows go to ``emit`` as they are made.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import orjson

from ..binlog.constants import EventType as E
from ..binlog.errors import BinlogError, ChecksumError, TruncatedError
from ..binlog.event import Event
from . import findings as F
from .build import XaMarker
from .check_transactions import xid_of
from .checks import StreamChecker
from .fileinfo import FileInfo
from .gtidset import IntervalSet
from .model import XA_PREPARED, RowChange, Transaction

RANGE = "range"
GROUP = "group"
GTID = "gtid"
XID = "xid"
EVENT = "event"
FINDING = "finding"

FACT_FIELDS: list[tuple[str, str]] = [
    ("file", "string"), ("seq", "int"), ("range_index", "int"), ("kind", "string"),
    ("pos", "bigint"), ("end_pos", "bigint"),
    # group
    ("record", "string"), ("group_kind", "string"), ("status", "string"),
    ("end_event", "string"), ("gtid", "string"), ("ts", "bigint"), ("xa_xid", "string"),
    ("inserts", "bigint"), ("updates", "bigint"), ("deletes", "bigint"),
    ("nt_inserts", "bigint"), ("nt_updates", "bigint"), ("nt_deletes", "bigint"),
    # gtid
    ("gtid_uuid", "string"), ("gtid_tag", "string"), ("gtid_gno", "bigint"),
    ("gtid_domain", "bigint"), ("gtid_server", "bigint"), ("gtid_seq", "bigint"),
    # xid (an unsigned 64-bit value, stored as the signed bigint of the same bits)
    ("xid", "bigint"),
    # event
    ("event_type", "string"), ("checksum", "string"), ("error", "string"),
    # range, finding: JSON
    ("meta", "string"),
]
FACT_NAMES = [n for n, _ in FACT_FIELDS]
_N = len(FACT_FIELDS)
_AT = {n: i for i, n in enumerate(FACT_NAMES)}

# Findings of the single-range checker and builder that validation keeps (GTID continuity
# and the file chain are the validation's own SQL over all files; Xids are checked across
# ranges by the facts' reader).
KEPT_FINDINGS = frozenset({F.POSITION_GAP, F.POSITION_OVERLAP, F.TRANSACTION_LENGTH_MISMATCH,
                           F.INVALID_TRANSITION, F.OPEN_TRANSACTION_AT_EOF})
_MYSQL_GTID = frozenset({E.GTID, E.GTID_TAGGED})
_FDE = frozenset({E.FORMAT_DESCRIPTION, E.START_V3})
# the events whose bodies the facts read (the rest are counted)
_NOTED = frozenset({E.GTID, E.GTID_TAGGED, E.MARIADB_GTID, E.PREVIOUS_GTIDS,
                    E.MARIADB_GTID_LIST, E.XID, E.QUERY, E.QUERY_COMPRESSED})
_U64 = 1 << 64
# (globals: an Enum member looked up on its class costs about 0.1 us; event() runs per event)
_ROTATE, _STOP, _MARIADB_GTID = E.ROTATE, E.STOP, E.MARIADB_GTID


def signed64(v: int) -> int:
    return v - _U64 if v >= 1 << 63 else v


# -- GTID sets as JSON (what range rows carry) ---------------------------------------------------

GtidSets = dict[tuple[str, str], IntervalSet]  # (uuid, tag or "") -> gnos


def sets_json(sets: GtidSets) -> str:
    return orjson.dumps([[u, t, list(map(list, iv))] for (u, t), iv in sorted(sets.items())]
                        ).decode()


def sets_from_json(text: str | None) -> GtidSets:
    out: GtidSets = {}
    for u, t, spans in orjson.loads(text or "[]"):
        out[(u, t)] = IntervalSet([tuple(s) for s in spans])
    return out


# -- groups ---------------------------------------------------------------------------------------

def op_counts(changes: Iterable[RowChange]) -> tuple[int, int, int, int, int, int]:
    """(inserts, updates, deletes) applied, then the same for non-transactional tables only
    (what survives an XA ROLLBACK)."""
    n = [0] * 6
    ops = {"insert": 0, "update": 1, "delete": 2}
    for c in changes:
        if c.applied:
            k = ops[c.op]
            n[k] += 1
            if not c.transactional:
                n[3 + k] += 1
    return (n[0], n[1], n[2], n[3], n[4], n[5])


def xid_text(xid: Any) -> str | None:
    return None if xid is None else f"{xid.format_id}:{xid.gtrid}:{xid.bqual}"


def group_record(item: Transaction | XaMarker, status: str | None = None,
                 counts: tuple[int, ...] | None = None) -> dict[str, Any]:
    """One group as validation's ``groups`` dataset has it.  ``counts``: the
    :func:`op_counts` of a transaction whose changes were counted already (its changes may
    be gone from memory)."""
    if isinstance(item, XaMarker):
        p = item.part
        return {"file": p.file, "seq": p.seq, "begin_pos": p.begin_pos, "end_pos": p.end_pos,
                "record": "xa_end", "kind": "xa",
                "status": "xa_commit" if item.commit else "xa_rollback",
                "end_event": item.end_event, "gtid": p.gtid, "ts": p.timestamp,
                "xa_xid": xid_text(item.xid), "inserts": 0, "updates": 0, "deletes": 0,
                "nt_inserts": 0, "nt_updates": 0, "nt_deletes": 0}
    p = item.part
    ins, upd, dele, nti, ntu, ntd = counts if counts is not None else op_counts(item.changes)
    status = status or item.status
    record = "xa_prepare" if status == XA_PREPARED else (
        "incomplete" if status == "incomplete" else "txn")
    return {"file": p.file, "seq": p.seq, "begin_pos": p.begin_pos, "end_pos": p.end_pos,
            "record": record, "kind": item.kind, "status": status,
            "end_event": item.end_event or None, "gtid": p.gtid, "ts": p.timestamp,
            "xa_xid": xid_text(item.xa_xid), "inserts": ins, "updates": upd, "deletes": dele,
            "nt_inserts": nti, "nt_updates": ntu, "nt_deletes": ntd}


_GROUP_COLS = ("record", "kind", "status", "end_event", "gtid", "ts", "xa_xid", "inserts",
               "updates", "deletes", "nt_inserts", "nt_updates", "nt_deletes")


# -- one range --------------------------------------------------------------------------------------

class RangeFacts:
    """The facts of one byte range ``[start, end)`` of a file, fed as it is read.

    ``reader``: the range's :class:`~binlake.binlog.reader.BinlogReader` (its first event
    is the file's FDE, which a range that starts later does not yield); ``last_of_file``:
    the range ends where the file does; ``newest``: the file is the newest of the run (the
    server may still write it).  Call :meth:`event` for every event the reader yields,
    :meth:`group` for every item the group builder gives, :meth:`finish` at the end."""

    def __init__(self, reader: Any, file: str, seq: int, index: int, *, last_of_file: bool,
                 newest: bool, emit: Callable[[tuple[Any, ...]], Any]) -> None:
        self.reader = reader
        self.file = file
        self.seq = seq
        self.index = index
        self.last_of_file = last_of_file
        self.newest = newest
        self.emit = emit
        self.checker = StreamChecker(newest_file_may_be_open=newest)
        self.checker.check_xids = False  # across ranges: the facts' reader
        self.checker.check_gtids = False  # across files: the facts' reader (SQL)
        self.checker.begin_file(file, seq=seq if seq >= 0 else None)
        self.info = FileInfo(file, "", seq)
        self.no_checksum = 0  # events without a CRC32
        self.mismatches = 0  # events whose CRC32 does not match
        self.rotate_next: str | None = None
        self.prev_gtids: GtidSets | None = None
        self.gtid_list: dict[tuple[int, int], int] | None = None
        self.contained: GtidSets = {}
        self.last_per_server: dict[tuple[int, int], int] = {}
        self.first_pos: int | None = None
        self._fresh = True
        self._head = (file, seq, index)

    def _row(self, kind: str, pos: int | None, end_pos: int | None = None,
             **cols: Any) -> None:
        r: list[Any] = [None] * _N
        r[0], r[1], r[2], r[3], r[4], r[5] = self.file, self.seq, self.index, kind, pos, end_pos
        for k, v in cols.items():
            r[_AT[k]] = v
        self.emit(tuple(r))

    def _start(self, ev: Event) -> None:
        self._fresh = False
        first = self.reader.first_event
        if first is None or ev is first:
            return
        if self.index == 0:
            self.event(first)  # the file's FDE, which a range after it does not yield
        else:
            self.checker.resume_file(first)
            d = first.data
            self.info.server_version = d.get("server_version")
            self.info.flavor = d.get("flavor")
            self.info.checksum_alg = d.get("checksum_alg")
            self.info.in_use = d.get("in_use")

    def event(self, ev: Event) -> None:
        if self._fresh:
            self._start(ev)
        t = ev.type_code
        info = self.info
        info.events += 1  # (the FileInfo facts of fileinfo.note_event, the ones used here)
        ts = ev.timestamp
        if ts:
            if info.first_timestamp is None:
                info.first_timestamp = ts
            info.last_timestamp = ts
        d = ev.data
        if ev.payload_index is None:
            if t == _ROTATE:
                info.ends_with = ev.type
                self.rotate_next = str(d.get("next_file") or "").replace("\\", "/") \
                    .rsplit("/", 1)[-1]
            else:
                info.ends_with = ev.type if t == _STOP else None
                self.rotate_next = None
            if self.first_pos is None and t not in _FDE:
                self.first_pos = ev.pos
        if t in _FDE and info.server_version is None:
            info.server_version = d.get("server_version")
            info.flavor = d.get("flavor")
            info.checksum_alg = d.get("checksum_alg")
            info.in_use = d.get("in_use")
        self.checker.event(ev)
        if ev.checksum is None:
            self.no_checksum += 1
        err = ev.error
        if err is not None:
            mismatch = isinstance(err, ChecksumError)
            self.mismatches += mismatch
            self._row(EVENT, ev.pos, ev.end_pos, event_type=ev.type,
                      checksum="mismatch" if mismatch else
                      "ok" if ev.checksum is not None else "none",
                      error=None if mismatch else str(err),
                      meta=None if ev.payload_index is None else orjson.dumps(
                          {"payload_index": ev.payload_index}).decode())
        if t not in _NOTED:
            return
        if t == _MARIADB_GTID:
            sq = d.get("seq_no")
            if isinstance(sq, int):
                self.last_per_server[(d["domain_id"], ev.server_id)] = sq
                self._row(GTID, ev.pos, None, gtid=d.get("gtid"),
                          gtid_domain=d.get("domain_id"), gtid_server=ev.server_id,
                          gtid_seq=sq)
        elif t in _MYSQL_GTID:
            gno = d.get("gno")
            if isinstance(gno, int):
                tag = d.get("tag") or None
                self._row(GTID, ev.pos, None, gtid=d.get("gtid"), gtid_uuid=d.get("uuid"),
                          gtid_tag=tag, gtid_gno=gno)
                if gno > 0:
                    self.contained.setdefault((d["uuid"], tag or ""), IntervalSet()).add(gno)
        elif t == E.PREVIOUS_GTIDS:
            if self.prev_gtids is None and isinstance(d.get("uuid_sets"), list):
                sets: GtidSets = {}
                for entry in d["uuid_sets"]:
                    key = (entry["uuid"], entry.get("tag") or "")
                    sets.setdefault(key, IntervalSet()).update(IntervalSet(entry["intervals"]))
                self.prev_gtids = sets
        elif t == E.MARIADB_GTID_LIST:
            if self.gtid_list is None and isinstance(d.get("gtids"), list) \
                    and not d.get("list_flags"):
                self.gtid_list = {(g["domain_id"], g["server_id"]): g["seq_no"]
                                  for g in d["gtids"]}
        else:
            found = xid_of(ev)
            if found is not None:
                self._row(XID, ev.pos, None, xid=signed64(found[0]), event_type=found[1],
                          meta=None if ev.payload_index is None else orjson.dumps(
                              {"payload_index": ev.payload_index}).decode())

    def group(self, item: Transaction | XaMarker, status: str | None = None,
              counts: tuple[int, ...] | None = None) -> None:
        g = group_record(item, status, counts)
        self._row(GROUP, g["begin_pos"], g["end_pos"],
                  **{("group_kind" if c == "kind" else c): g[c] for c in _GROUP_COLS})

    def finish(self, *, error: BinlogError | None, builder: Any,
               marks: tuple[int, int]) -> None:
        """After the last event, and after the builder's ``end_file``; ``marks``: the lengths
        of ``builder.incomplete`` and ``builder.findings`` before ``end_file`` (what it
        added is excused where the file may still be written, or ended in damage)."""
        if self._fresh and self.reader.first_event is not None:
            self._start(self.reader.first_event)  # a range with no event of its own
            if self.index == 0:
                self.event(self.reader.first_event)
        reader = self.reader
        end_offset = reader.end_offset if error is None else error.offset
        ended = self.last_of_file or error is not None
        if ended:
            self.checker.end_file(end_offset=end_offset, error=error, size=None)
            self.checker.finish()
        else:
            self.checker.end_range()
        in_use = self.info.in_use if self.info.in_use is not None else reader.in_use
        n_incomplete, n_findings = marks
        tail_excused = error is not None or (self.newest and bool(in_use))
        incomplete = list(builder.incomplete)
        found = list(builder.findings)
        if tail_excused and ended:
            del incomplete[n_incomplete:]
            found[n_findings:] = [f for f in found[n_findings:]
                                  if f.kind != F.OPEN_TRANSACTION_AT_EOF]
        elif ended:
            # the builder was told the newest file's end may be open; validation says so
            # only while the in-use flag says the server still writes it (tail_excused)
            found[n_findings:] = [
                f if f.kind != F.OPEN_TRANSACTION_AT_EOF or f.severity == F.ERROR else
                F.Finding(f.kind, F.ERROR, f.file, f.pos, f.detail,
                          f.message.replace(" (the newest file may still be being written)", ""))
                for f in found[n_findings:]]
        for txn in incomplete:
            self.group(txn, "incomplete")
        for f in [*self.checker.findings, *found]:
            if f.kind in KEPT_FINDINGS:
                self._row(FINDING, f.pos, None, meta=orjson.dumps(
                    {"kind": f.kind, "severity": f.severity, "file": f.file or self.file,
                     "pos": f.pos, "detail": orjson.dumps(f.detail, default=str).decode(),
                     "message": f.message}, default=str).decode())
        info = self.info
        meta = {
            "start": getattr(reader, "start", None), "stop": getattr(reader, "stop", None),
            "first_pos": self.first_pos, "end_offset": end_offset,
            "last_of_file": self.last_of_file, "newest": self.newest,
            "events": info.events,
            "checksums": {"ok": info.events - self.no_checksum - self.mismatches,
                          "none": self.no_checksum,
                          "mismatch": self.mismatches},
            "server_version": info.server_version, "flavor": info.flavor,
            "checksum_alg": None if info.checksum_alg is None else str(info.checksum_alg),
            "in_use": in_use, "ends_with": info.ends_with,
            "rotate_next": self.rotate_next if info.ends_with == "ROTATE" else None,
            "error": None if error is None else str(error),
            "error_kind": None if error is None else (
                "truncated" if isinstance(error, TruncatedError) else error.kind),
            "error_offset": None if error is None else error.offset,
            "first_ts": info.first_timestamp, "last_ts": info.last_timestamp,
            "prev_gtids": None if self.prev_gtids is None else sets_json(self.prev_gtids),
            "gtid_list": None if self.gtid_list is None else orjson.dumps(
                sorted([d, s, q] for (d, s), q in self.gtid_list.items())).decode(),
            "contained": sets_json(self.contained),
            "last_per_server": orjson.dumps(
                sorted([d, s, q] for (d, s), q in self.last_per_server.items())).decode(),
            # where the file turned into a relay log (positions unchecked after it): a range
            # after that one cannot know it, so such a file is read whole by validation
            "relay_from": self.checker._relay_from,
            "resume_delta": self.checker.resume_delta,
            "end_delta": self.checker.position_delta,
        }
        self._row(RANGE, self.first_pos, end_offset, meta=orjson.dumps(meta).decode())
