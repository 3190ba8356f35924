"""Executor side: one transaction-aligned byte range of one binlog -> plain records (the decode
task: :func:`decode_range`, and :func:`decode_tasks_arrow`, its mapInArrow entry).

Runs inside Spark executors (and in tests without Spark): it reads only its range of the
object (local path, or S3 through boto3 -- Spark has no s3a here), decodes it with the
decoder, groups it into transactions with the transaction layer, and returns picklable
records.  An XA PREPARE group cannot always be decided here (its COMMIT may be in another
range, file or run): its rows come back marked with the group's position, and the driver pairs
them.  One whose XA COMMIT/ROLLBACK follows in the same range is decided here too, as the
driver's pairing decides it (in binlog order, a decision takes the XA pending under its XID:
within one range, the PREPARE held here): its transaction and rows are written with the
range's, and an XA_LOCAL record lists the decisions, which the driver checks against its
pairing (a file where they differ fails: :func:`binlake.lake.xa.local_decisions`).
"""

from __future__ import annotations

import gc
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from ..binlog.constants import EventType as E
from ..binlog.errors import BinlogError, TruncatedError
from ..binlog.reader import BinlogReader
from ..schema.model import SchemaHistory
from ..schema.names import TableMapNamer
from ..txn.build import FileInfo, GroupBuilder, XaMarker, assign_order, note_event
from ..txn.engines import EngineTracker
from ..txn.model import XA_PREPARED, RowChange, Transaction
from ..txn.spill import SpilledChanges
from ..txn.streamfacts import RangeFacts
from .records import (
    FACT,
    FINDING,
    RANGE,
    STATEMENT,
    TXN,
    XA_END,
    XA_LOCAL,
    XA_PREPARE,
    _change_records,
    _commit_us,
    _statement_value,
    txn_record,
)
from .sink import FLUSH_BYTES, FLUSH_ROWS, DataSink
from .survey import decode_engines
from .transport import wide_batches
from .worker import settle
from .xa import decide_records

_STATEMENT_EVENTS = frozenset({E.ANNOTATE_ROWS, E.ROWS_QUERY})
_FDE, _TABLE_MAP = E.FORMAT_DESCRIPTION, E.TABLE_MAP  # (a global: cheaper than E.X)


@dataclass
class RangeTask:
    uri: str
    file: str
    seq: int
    start: int
    end: int
    index: int  # range index in its file
    last_in_file: bool  # the newest file's last range (the server may still write it)
    nontransactional: tuple[str, ...] = ()
    engines: tuple[tuple[str, bool], ...] = ()  # table engines from DDL before `start`
    last_of_file: bool = True  # the range ends where its file does
    newest: bool = False  # its file is the newest of the run


# A range's XA PREPARE of at most this many rows is decided in the range when its XA
# COMMIT/ROLLBACK follows there (decode_range's local_xa)
LOCAL_XA_ROWS = 100_000


# statement texts' logged UTF-8 bytes kept for the writer (decode_range's ``utf8``) at most
_UTF8_CACHE = 20_000
_SEEN_MAX = 10_000  # statement keys _statements remembers


def decode_range(task: RangeTask, flush: Callable[[list[tuple[str, Any]]],
                                                  list[tuple[str, Any]]] | None = None,
                 flush_bytes: int = FLUSH_BYTES, history: SchemaHistory | None = None,
                 local_xa: bool = True) -> list[tuple[str, Any]]:
    """All records of one range (see the module doc).  With ``flush``, the records so far
    go to ``flush`` after the event that ends ``flush_bytes`` or more bytes past the last
    flush (or the range's start), and the last ones at the end; what it returns is kept in
    their place.  ``history`` names the columns of Table_maps logged without names
    (:class:`binlake.schema.names.TableMapNamer`; its findings become FINDING records).
    With ``flush`` and ``local_xa``, an XA PREPARE whose COMMIT/ROLLBACK follows in the
    range is decided here (see the module doc): its records are written with the others,
    and one XA_LOCAL record lists the decisions."""
    out: list[tuple[str, Any]] = []
    kept: list[tuple[str, Any]] = []
    flushed_at = task.start
    engines = EngineTracker(task.nontransactional, seen_ddl=task.engines)
    # a transaction with more than flush_bytes of rows events or FLUSH_ROWS changes is held
    # on local disk, and written out a chunk at a time (txn.spill); only when flushing
    builder = GroupBuilder(engines, spill_bytes=flush_bytes if flush is not None else None,
                           spill_rows=FLUSH_ROWS)
    builder.begin_file(task.file, task.seq)
    namer = TableMapNamer(history, task.seq, task.file) if history is not None else None
    reader = BinlogReader(task.uri, start=task.start, stop=task.end, name=task.file,
                          table_map_hook=namer)
    pks: dict[tuple[str, str], list[str] | None] = {}
    statements_seen: set[tuple[int, int | None]] = set()
    utf8: dict[int, list[Any]] = {}  # statement texts' logged UTF-8 bytes
    info: dict[str, Any] = {"file": task.file, "seq": task.seq, "index": task.index,
                            "start": task.start, "end": task.end, "events": 0,
                            "first_ts": None, "last_ts": None, "first_gtid": None,
                            "last_gtid": None, "error": None, "error_offset": None,
                            "error_kind": None, "fde": None, "ends_with": None,
                            "rows": 0, "transactions": 0}
    facts = FileInfo(task.file, task.uri, task.seq)
    fde_noted = False
    # what validation needs of the range (binlake.quality), from this same pass
    stream = RangeFacts(reader, task.file, task.seq, task.index,
                        last_of_file=task.last_of_file, newest=task.newest,
                        emit=lambda row: out.append((FACT, row)))
    error: BinlogError | None = None

    # XAs decided in the range (when writing: with a flush): the PREPARE records held by
    # XID, with the prepared XA (decide_records takes it instead of reading the record's
    # state back; nothing changes it after the builder gives it); the decided XAs' records
    # go with the others, and their decisions, as the driver's resolutions give them, into
    # one XA_LOCAL record at the end
    held: dict[tuple[Any, ...], tuple[dict[str, Any], Transaction | None]] = {}
    decisions: list[dict[str, Any]] = []
    local_xa = local_xa and flush is not None

    def decide_here(item: Transaction | XaMarker) -> None:
        if isinstance(item, XaMarker):
            x = item.xid
            got = held.pop((x.format_id, x.gtrid, x.bqual), None)
            if got is None:
                return
            prep, prepared = got
            res = {"commit": item.commit, "part": item.part.to_dict(),
                   "end_event": item.end_event}
            key = (prep["prepare_file"], prep["prepare_pos"])
            out.extend(decide_records(prep, {key: res}, prepared))
            decisions.append({"prepare_file": key[0], "prepare_pos": key[1], **res})
        elif item.status == XA_PREPARED and item.xa_xid is not None:
            x = item.xa_xid
            xid = (x.format_id, x.gtrid, x.bqual)
            held.pop(xid, None)  # (prepared again: the newer one is what a COMMIT decides)
            if len(item.changes) <= LOCAL_XA_ROWS and out and out[-1][0] == XA_PREPARE:
                held[xid] = (out[-1][1], item)

    def flush_out() -> None:
        if out and flush is not None:
            batch = out.copy()
            out.clear()
            kept.extend(flush(batch))

    # (bound once: these run for every event)
    stream_event, feed, append = stream.event, builder.feed, out.append
    tms: dict[tuple[str, str], Any] = {}  # the Table_map each key of pks comes from
    try:
        for ev in reader:
            if not fde_noted and reader.fde is not None:
                builder.note_format(reader.fde.server_version, reader.fde.flavor)
                fde_noted = True
            stream_event(ev)
            code = ev.type_code
            if code == _FDE and ev.pos == 4:
                facts.events += 1
                continue  # the reader yields it only when a range starts at 4
            note_event(facts, ev)
            if ev.error is not None:
                append((FINDING, {"kind": ev.error.kind, "file": task.file,
                                  "pos": ev.pos, "message": str(ev.error)}))
                if info["error"] is None:  # a damaged event fails its file (nothing lands)
                    info["error"] = str(ev.error)
                    info["error_offset"] = ev.error.offset
                    info["error_kind"] = ev.error.kind
            if code in _STATEMENT_EVENTS:
                raw = ev.data.get("_utf8")
                if raw is not None and not ev.data["query"].isascii():  # (see _statement_value)
                    if len(utf8) >= _UTF8_CACHE:  # a cache: bounded, whatever the range
                        utf8.clear()
                    text = ev.data["query"]
                    utf8[id(text)] = [text, raw, None]
            elif code == _TABLE_MAP:
                tm = ev.data.get("_table_map")
                if tm is not None:
                    key = (tm.db, tm.table)
                    # (the reader gives the same TableMap object for the same Table_map)
                    if tms.get(key) is not tm:
                        tms[key] = tm
                        names = tm.column_names
                        pks[key] = ([names[i] for i in tm.primary_key] if tm.primary_key
                                    else None)
            for item in feed(ev):
                # a decided transaction's counts come from _emit (its changes may be gone
                # after); an XA PREPARE's changes stay, the facts count them
                counts = _emit(out, item, pks, info, statements_seen, utf8, flush_out)
                if local_xa and (isinstance(item, XaMarker) or item.status == XA_PREPARED):
                    decide_here(item)  # (an XA PREPARE's record: the last of out now)
                stream.group(item, counts=counts)
            if flush is not None and out and (ev.pos + ev.length - flushed_at >= flush_bytes
                                              or len(out) >= FLUSH_ROWS):
                flush_out()
                flushed_at = ev.pos + ev.length
    except BinlogError as exc:
        error = exc
        if info["error"] is None:
            info["error"] = str(exc)
            info["error_offset"] = exc.offset
            info["error_kind"] = "truncated" if isinstance(exc, TruncatedError) else exc.kind
    marks = (len(builder.incomplete), len(builder.findings))
    builder.end_file(may_be_open=task.last_in_file, end_offset=reader.end_offset)
    stream.finish(error=error, builder=builder, marks=marks)
    for f in builder.findings:
        out.append((FINDING, {"kind": f.kind, "file": f.file, "pos": f.pos,
                              "message": f.message, "severity": f.severity}))
    for sf in namer.findings if namer is not None else ():
        out.append((FINDING, {"kind": sf.kind, "file": sf.file,
                              "pos": sf.pos[1] if sf.pos else None, "message": sf.message,
                              "severity": "warning", "table": sf.table}))
    for t in builder.incomplete:
        out.append((FINDING, {"kind": "incomplete_transaction", "file": t.part.file,
                              "pos": t.part.begin_pos, "severity": "error",
                              "message": f"transaction at {t.part.begin_pos} never ended"}))
    info.update(events=facts.events, first_ts=facts.first_timestamp,
                last_ts=facts.last_timestamp, first_gtid=facts.first_gtid,
                last_gtid=facts.last_gtid, ends_with=facts.ends_with)
    info["end_offset"] = reader.end_offset
    if task.index == 0 and reader.fde is not None and task.start > 4:
        info["events"] += 1  # the file's FDE: read by every range, counted once
    if reader.fde is not None:  # every range reads the FDE first, whatever its start
        info["fde"] = {"server_version": reader.fde.server_version, "flavor": reader.fde.flavor,
                       "checksum_alg": reader.fde.to_dict()["checksum_alg"],
                       "in_use": reader.in_use}
    out.append((RANGE, info))
    if decisions:
        out.append((XA_LOCAL, {"file": task.file, "decisions": decisions}))
    return kept + flush(out) if flush is not None else out


def _statements(out: list[tuple[str, Any]], changes: list[RowChange],
                seen: set[tuple[int, int | None]], utf8: dict[int, list[Any]] | None = None
                ) -> None:
    """A STATEMENT record for each statement of ``changes`` not seen before, keyed by its
    event's position and, inside a Transaction_payload (whose events all have its
    position), its index there.  A statement's changes come one after the other (its rows
    events are logged together), so ``seen`` forgets all but the newest key past
    _SEEN_MAX keys: a transaction of millions of statements does not grow it."""
    last_pos = last_pidx = None  # the key just handled (in ``seen`` now): its next rows
    for c in changes:
        pos = c.statement_pos
        if pos is not None and c.statement is not None:
            pidx = c.statement_payload_index
            if pos == last_pos and pidx == last_pidx:
                continue
            last_pos, last_pidx = pos, pidx
            key = (pos, pidx)
            if key in seen:
                continue
            if len(seen) >= _SEEN_MAX:
                seen.clear()
            seen.add(key)
            out.append((STATEMENT, {"file": c.file, "statement_pos": pos,
                                    "payload_index": pidx,
                                    "statement": _statement_value(c.statement, utf8, False)}))


def _emit(out: list[tuple[str, Any]], item: Transaction | XaMarker,
          pks: dict[tuple[str, str], list[str] | None], info: dict[str, Any],
          statements_seen: set[tuple[int, int | None]], utf8: dict[int, list[Any]] | None = None,
          flush_out: Callable[[], None] | None = None) -> tuple[int, ...] | None:
    """The records of one transaction or XA marker.  A decided transaction whose changes
    were spilled to disk (txn.spill) is read back a chunk at a time, each chunk's records
    written by ``flush_out`` before the next is read.  Returns a decided transaction's
    :func:`~binlake.txn.streamfacts.op_counts` (its changes may be gone after), else None."""
    if isinstance(item, XaMarker):
        info["transactions"] += 1  # the XA it decides is a transaction ending in this file
        out.append((XA_END, {"xa_format_id": item.xid.format_id, "xa_gtrid": item.xid.gtrid,
                             "xa_bqual": item.xid.bqual, "commit": item.commit,
                             "part": item.part.to_dict(), "end_event": item.end_event,
                             "server_id": item.server_id}))
        return None
    if item.status == XA_PREPARED:  # (a huge one is read back whole: its state is JSON text)
        from ..txn.xa import dump_pending

        _statements(out, item.changes, statements_seen, utf8)

        xa = item.xa_xid
        out.append((XA_PREPARE, {
            "xa_format_id": xa.format_id if xa else None, "xa_gtrid": xa.gtrid if xa else None,
            "xa_bqual": xa.bqual if xa else None, "prepare_seq": item.part.seq,
            "prepare_pos": item.part.begin_pos, "prepare_end_pos": item.part.end_pos,
            "prepare_file": item.part.file, "prepare_gtid": item.part.gtid,
            "prepared_ts": item.part.timestamp, "rows": len(item.changes),
            "state": dump_pending([item]),
            # the primary keys of the tables this XA changed (not whatever the range saw)
            "pks": orjson.dumps({f"{c.db}.{c.table}": pks.get((c.db, c.table))
                                 for c in item.changes},
                                option=orjson.OPT_SORT_KEYS).decode(),
        }))
        return None
    assign_order(item)
    info["transactions"] += 1
    txn_id = item.id
    gtid = item.gtid
    commit_us = _commit_us(item)
    changes = item.changes
    counts: dict[str, dict[str, int]] = {}
    total = [0] * 6
    if isinstance(changes, SpilledChanges) and flush_out is not None:
        changes.spill_tail()  # so that one chunk at a time is in memory
        n = 0
        for chunk in changes.chunks():
            _statements(out, chunk, statements_seen, utf8)
            n += _change_records(out, chunk, gtid, txn_id, commit_us, pks, utf8, counts, total)
            chunk.clear()
            flush_out()
        changes.close()
        out.append((TXN, txn_record(item, counts)))
        info["rows"] += n
        return tuple(total)
    _statements(out, changes, statements_seen, utf8)
    at = len(out)
    out.append((TXN, None))  # its record once the changes are counted, before them
    info["rows"] += _change_records(out, changes, gtid, txn_id, commit_us, pks, utf8, counts,
                                    total)
    out[at] = (TXN, txn_record(item, counts))
    return tuple(total)


# -- Arrow transport (mapInArrow): records leave Python as columnar batches ------------------


def decode_tasks_arrow(batches: Any, sink: DataSink, history: SchemaHistory | None = None
                       ) -> Any:
    """mapInArrow function: task rows in, record batches (WIDE_FIELDS) out.  The row
    changes, transactions, statements and XA prepares are written as Parquet data files by
    this executor (:meth:`DataSink.write_records`); a WRITTEN record per data file comes out
    instead of them."""
    for tasks in batches:
        for t in tasks.to_pylist():
            engines = decode_engines(t["engines"] or ())
            task = RangeTask(t["uri"], t["file"], t["seq"], t["start"], t["end"], t["index"],
                             t["last_in_file"], tuple(t["nontransactional"] or ()), engines,
                             bool(t["last_of_file"]), bool(t["newest"]))
            # A range's records are many small acyclic objects: the cyclic collector would
            # walk them again and again while they pile up (10-15% of the task's time);
            # reference counting frees them, and one collection runs after the range.
            gc.disable()
            chunks = itertools.count()
            tag = f"{task.seq}-{task.index}"

            def flush(recs: list[tuple[str, Any]], tag: str = tag,
                      chunks: Iterator[int] = chunks, file: str = task.file
                      ) -> list[tuple[str, Any]]:
                kept = sink.write_records(f"{tag}-{next(chunks)}", file, recs)
                recs.clear()  # the caller's list: its records go now
                return kept

            try:
                records = decode_range(task, flush, sink.flush_bytes, history,
                                       local_xa=sink.local_xa)
            finally:
                gc.enable()
            yield from wide_batches(records)
            del records
            settle(collect=True)
