"""Executor side: one transaction-aligned byte range of one binlog -> plain records.

Runs inside Spark executors (and in tests without Spark): it reads only its range of the
object (local path, or S3 through boto3 -- Spark has no s3a here), decodes it with the
decoder, groups it into transactions with the transaction layer, and returns picklable
records.  XA PREPARE groups cannot be decided here (their COMMIT may be in another range, file
or run): their rows come back marked with the group's position, and the driver pairs them.
"""

from __future__ import annotations

import gc
import itertools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, cast

import orjson

from ..binlog.constants import EventType as E
from ..binlog.errors import BinlogError, TruncatedError
from ..binlog.reader import BinlogReader
from ..binlog.render import _default as _render_default
from ..binlog.source import HashTap
from ..schema.model import SchemaHistory
from ..schema.names import TableMapNamer
from ..txn.boundary import query_keyword
from ..txn.build import FileInfo, GroupBuilder, XaMarker, assign_order, note_event
from ..txn.engines import EngineTracker
from ..txn.model import XA_PREPARED, RowChange, Transaction
from ..txn.spill import SpilledChanges
from ..txn.streamfacts import FACT_NAMES, RangeFacts
from .typedconv import NO_LAYOUT, NO_NAMES, ORDER

# record kinds
CHANGE = "change"
TXN = "txn"
XA_PREPARE = "xa_prepare"  # a prepare group: metadata + its changes as a JSON state
XA_END = "xa_end"  # an XA COMMIT / ROLLBACK group (marker)
FINDING = "finding"
RANGE = "range"  # per-range summary (events, timestamps, GTIDs, errors)
FACT = "fact"  # what validation needs of the range (txn.streamfacts), for stream_facts
STREAM_FACTS = "stream_facts"
STATEMENT = "statement"  # an Annotate_rows / Rows_query text, once (file, pos)

# A multi-row INSERT's text is logged once and produces thousands of row changes: row_changes
# keeps the first STATEMENT_INLINE characters of it (and statement_pos); the `statements`
# table keeps the whole text once.
STATEMENT_INLINE = 1024


_OPTS = orjson.OPT_PASSTHROUGH_SUBCLASS
_STATEMENT_EVENTS = frozenset({E.ANNOTATE_ROWS, E.ROWS_QUERY})
_FDE, _TABLE_MAP = E.FORMAT_DESCRIPTION, E.TABLE_MAP  # (a global: cheaper than E.X)


def _json(v: Any) -> str | None:
    """JSON text of a row image, rendered exactly as ``binlake decode --rows`` does."""
    if v is None:
        return None
    return orjson.dumps(v, _render_default, _OPTS).decode()


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


def _pk(change: RowChange, pk: list[str] | None) -> str | None:
    if not pk:
        return None
    img = change.after if change.after is not None else change.before
    if img is None:
        return None
    try:
        if len(pk) == 1:  # (the usual key: no comprehension)
            k = pk[0]
            return _dumps({k: img[k]}, _render_default, _OPTS).decode()
        return _dumps({k: img[k] for k in pk}, _render_default, _OPTS).decode()
    except KeyError:  # a MINIMAL image without the key columns
        return None


def change_record(t: Transaction, c: RowChange, pk: list[str] | None,
                  txn_id: str | None = None, commit_us: int | None = None) -> dict[str, Any]:
    order = c.order or (None, None, None)
    return {
        "txn_id": txn_id or t.id, "gtid": t.gtid, "order_seq": order[0],
        "order_pos": order[1], "order_idx": order[2],
        "commit_us": commit_us if commit_us is not None else _commit_us(t), "db": c.db,
        "tbl": c.table, "op": c.op, "before": _json(c.before), "after": _json(c.after),
        "pk": _pk(c, pk), "statement": _inline(c.statement), "statement_pos": c.statement_pos,
        "file": c.file, "pos": c.pos, "row": c.row, "payload_index": c.payload_index,
        "statement_payload_index": c.statement_payload_index,
    }


def change_tuple(c: RowChange, gtid: str | None, txn_id: str, commit_us: int | None,
                 pk: list[str] | None, statement: str | bytes | None) -> tuple[Any, ...]:
    """The hot path of :func:`change_record`: the values in CHANGE_FIELDS order.
    ``statement``: the change's statement as :func:`_statement_value` gives it (inline),
    which the rows of one statement share."""
    order = c.order or _NO_ORDER
    before, after = c.before, c.after
    return (txn_id, gtid, order[0], order[1], order[2], commit_us, c.db, c.table, c.op,
            None if before is None else _dumps(before, _render_default, _OPTS).decode(),
            None if after is None else _dumps(after, _render_default, _OPTS).decode(),
            _pk(c, pk) if pk else None, statement, c.statement_pos, c.file, c.pos, c.row,
            c.payload_index, c.statement_payload_index)


_NO_ORDER = (None, None, None)
_dumps = orjson.dumps
_OPS = {"insert": 0, "update": 1, "delete": 2}  # op_counts' order


def _change_records(out: list[tuple[str, Any]], changes: Iterable[RowChange],
                    gtid: str | None, txn_id: str, commit_us: int | None,
                    pks: dict[tuple[str, str], list[str] | None],
                    utf8: dict[int, list[Any]] | None, counts: dict[str, dict[str, int]],
                    total: list[int]) -> int:
    """Append a CHANGE record for each change of ``changes`` that took effect, and count
    them in the same pass: per table in ``counts`` (as ``Transaction.row_counts``), per
    operation in ``total`` (as :func:`~binlake.txn.streamfacts.op_counts`).  Returns how
    many."""
    append = out.append
    per_table: dict[tuple[str, str], list[int]] = {}  # (db, table) -> per operation
    n = 0
    last_st: Any = None  # the rows of one statement come together: its value, once
    last_value: str | bytes | None = None
    for c in changes:
        if not c.applied:
            continue
        n += 1
        k = _OPS[c.op]
        total[k] += 1
        if not c.transactional:
            total[3 + k] += 1
        key = (c.db, c.table)
        t = per_table.get(key)
        if t is None:
            t = per_table[key] = [0, 0, 0]
        t[k] += 1
        st = c.statement
        if st is not last_st:
            last_st = st
            last_value = None if st is None else _statement_value(st, utf8, True)
        append((CHANGE, change_tuple(c, gtid, txn_id, commit_us, pks.get(key), last_value)))
    for (db, table), t in per_table.items():
        d = counts.setdefault(f"{db}.{table}", {"insert": 0, "update": 0, "delete": 0})
        d["insert"] += t[0]
        d["update"] += t[1]
        d["delete"] += t[2]
    return n


def _statement_value(text: str | None, utf8: dict[int, list[Any]] | None,
                     inline: bool) -> str | bytes | None:
    """A statement text as the tables take it (cut to STATEMENT_INLINE characters when
    ``inline``): as UTF-8 bytes when ``utf8`` (text id -> [text, its logged UTF-8 bytes,
    the cut's bytes or None], from the events' ``_utf8``) knows this very text object, else
    as text.  Arrow takes UTF-8 bytes as a string after checking them, without encoding
    the text again; a cut shared by the rows of one long statement is encoded once.  An
    ASCII text stays text: its characters are its UTF-8 already, which Arrow reads in place
    (about twice as fast as checking the bytes)."""
    if text is None:
        return None
    if text.isascii() and (not inline or len(text) <= STATEMENT_INLINE):
        return text
    if utf8:
        known = utf8.get(id(text))
        if known is not None and known[0] is text:
            if not inline or len(text) <= STATEMENT_INLINE:
                return cast(bytes, known[1])
            if known[2] is None:
                known[2] = cast(str, _inline(text)).encode()
            return cast(bytes, known[2])
    return _inline(text) if inline else text


def _inline(text: str | None) -> str | None:
    if text is None or len(text) <= STATEMENT_INLINE:
        return text
    return text[:STATEMENT_INLINE] + "\u2026"


def _commit_us(t: Transaction) -> int | None:
    if t.part.commit_ts_us is not None:
        return int(t.part.commit_ts_us)
    return int(t.part.timestamp) * 1_000_000 if t.part.timestamp is not None else None


def txn_record(t: Transaction, counts: dict[str, dict[str, int]] | None = None
               ) -> dict[str, Any]:
    """``counts``: ``t.row_counts()`` when the caller has them."""
    counts = t.row_counts() if counts is None else counts
    xa = t.xa_xid
    begin = t.prepare or t.part
    return {
        "txn_id": t.id, "gtid": t.gtid, "kind": t.kind, "status": t.status,
        "begin_file": begin.file, "begin_pos": begin.begin_pos, "end_file": t.part.file,
        "end_pos": t.part.end_pos, "commit_us": _commit_us(t), "end_event": t.end_event,
        "xid": t.xid, "xa_format_id": xa.format_id if xa else None,
        "xa_gtrid": xa.gtrid if xa else None, "xa_bqual": xa.bqual if xa else None,
        "one_phase": t.one_phase,
        "prepare_file": t.prepare.file if t.prepare else None,
        "prepare_pos": t.prepare.begin_pos if t.prepare else None,
        "prepare_gtid": t.prepare.gtid if t.prepare else None,
        "inserts": sum(v["insert"] for v in counts.values()),
        "updates": sum(v["update"] for v in counts.values()),
        "deletes": sum(v["delete"] for v in counts.values()),
        "tables": sorted(counts), "nontransactional": t.nontransactional,
        "statements": t.statements or None,
        "order_seq": t.part.seq, "order_pos": t.part.end_pos,
    }


DdlEvent = tuple[int, "str | None", str]  # (position, default database, statement)
DDL_WORDS = ("CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE")


def ddl_events(uri: str) -> list[DdlEvent]:
    """The DDL statements of a file, in order: only its Query events are decoded (row events
    are not).  A damaged file gives those before the damage (the decode of its ranges
    reports it).  Runs wherever the file is read (an executor, in the load job)."""
    out: list[DdlEvent] = []
    try:
        for ev in BinlogReader(uri, decode={E.QUERY, E.QUERY_COMPRESSED},
                               verify_checksums=False):
            _note_ddl(out, ev)
    except BinlogError:
        pass
    return out


def _note_ddl(out: list[DdlEvent], ev: Any) -> None:
    """Append ``ev`` to ``out`` when it is a Query event carrying a DDL statement."""
    q = ev.data.get("query")
    if q and query_keyword(q) in DDL_WORDS:
        out.append((ev.pos, ev.data.get("db") or None, q))


def layout_record(tm: Any, seq: int, pos: int) -> dict[str, Any]:
    """A layout record: the layout of a Table_map (columns, primary key, names or not) and
    where it was seen."""
    names = tm.column_names
    return {"db": tm.db, "tbl": tm.table, "columns": [c.describe() for c in tm.columns],
            "primary_key": [names[i] for i in tm.primary_key] if tm.primary_key else None,
            "has_names": tm.named, "signedness": tm.has_signedness, "seq": seq, "pos": pos}


def survey_scan(uri: str, seq: int, tap: HashTap | None = None,
                facts: dict[str, Any] | None = None
                ) -> tuple[list[DdlEvent], list[dict[str, Any]]]:
    """One pass over a file for the driver's plan: its DDL statements (as
    :func:`ddl_events`) and its table layouts (:func:`layout_record`, for the
    first Table_map of each table and whenever the table's layout changes).  Only Query and
    Table_map events are decoded (Table_maps from a cache: the server logs the same one in
    every transaction), and compressed transactions are opened for their Table_maps.  A
    damaged file gives what comes before the damage (its decode reports it).  ``tap``
    gets the file's stored bytes as they are read (see :class:`binlake.binlog.source.HashTap`).
    ``facts`` gets the file's ``server_version`` and ``flavor``."""
    ddl: list[DdlEvent] = []
    layouts: list[dict[str, Any]] = []
    last: dict[tuple[str, str], Any] = {}  # (db, table) -> (TableMap, layout key)
    reader = BinlogReader(uri, decode={E.QUERY, E.QUERY_COMPRESSED, E.TABLE_MAP,
                                       E.TRANSACTION_PAYLOAD}, verify_checksums=False, tap=tap)
    try:
        for ev in reader:
            t = ev.type_code
            if t == E.TABLE_MAP:
                tm = ev.data.get("_table_map")
                if tm is None:
                    continue
                key = (tm.db, tm.table)
                prev = last.get(key)
                if prev is not None and prev[0] is tm:
                    continue
                layout = (tuple(c.key() for c in tm.columns), tm.primary_key,
                          tm.has_full_metadata)
                if prev is None or prev[1] != layout:
                    layouts.append(layout_record(tm, seq, ev.pos))
                last[key] = (tm, layout)
            elif t in (E.QUERY, E.QUERY_COMPRESSED):
                _note_ddl(ddl, ev)
    except BinlogError:
        pass
    if facts is not None and reader.fde is not None:
        facts.update(server_version=reader.fde.server_version, flavor=reader.fde.flavor)
    return ddl, layouts


# EngineTracker.ddl_state(): ("db.table", transactional) pairs
EngineState = tuple[tuple[str, bool], ...]


def engine_states(ddl: list[list[DdlEvent]], starts: list[list[int]], seed: EngineState = ()
                  ) -> tuple[list[list[EngineState]], list[EngineState]]:
    """Driver side: what the DDL says about table engines at each range start, and at the
    end of each file.

    A range decoded alone would not see a ``CREATE TABLE ... ENGINE=MyISAM`` in an earlier
    range or file, and would then undo that table's rows on ROLLBACK.  ``ddl``: the
    :func:`ddl_events` of the files, in order; ``starts``: their ranges' start positions;
    ``seed``: the state before the first file.  The state at a start is the one after every
    DDL statement before it (earlier files included); a file's end state (what
    ``files.engines`` records, to seed the next run) is the one after all of its own."""
    tracker = EngineTracker(seen_ddl=seed)
    at_starts: list[list[EngineState]] = []
    at_ends: list[EngineState] = []
    for events, file_starts in zip(ddl, starts):
        pending = sorted(file_starts)
        states: dict[int, EngineState] = {}
        for pos, db, q in events:
            while pending and pos >= pending[0]:
                states[pending.pop(0)] = tracker.ddl_state()
            tracker.observe_ddl(db, q)
        for p in pending:
            states[p] = tracker.ddl_state()
        at_starts.append([states[p] for p in file_starts])
        at_ends.append(tracker.ddl_state())
    return at_starts, at_ends


def seeds_from(ddl: list[list[DdlEvent]], starts: list[list[int]], seed: EngineState = ()
               ) -> list[list[EngineState]]:
    """The states at the range starts of :func:`engine_states`."""
    return engine_states(ddl, starts, seed)[0]


def end_states(ddl: list[list[DdlEvent]], seed: EngineState = ()) -> list[EngineState]:
    """The states at the file ends of :func:`engine_states`."""
    return engine_states(ddl, [[] for _ in ddl], seed)[1]


def encode_engines(state: EngineState) -> list[str]:
    """An engine state as task rows and ``files.engines`` carry it: ``db.table=1``
    (transactional) or ``db.table=0``."""
    return [f"{name}={int(transactional)}" for name, transactional in state]


def decode_engines(values: Iterable[str]) -> EngineState:
    return tuple(sorted((v.rsplit("=", 1)[0], v.endswith("=1")) for v in values))


def engine_seeds(uris: list[str], starts: list[list[int]],
                 seed: tuple[tuple[str, bool], ...] = ()
                 ) -> list[list[tuple[tuple[str, bool], ...]]]:
    """:func:`seeds_from` the :func:`ddl_events` of ``uris``, read here."""
    return seeds_from([ddl_events(u) for u in uris], starts, seed)


# A decode task hands its records to ``flush`` (the DataSink: Parquet data files) each time
# it has read this many bytes of binlog since the last time, so that it holds the records
# of at most about this many bytes (as Python objects about 3 times that) and of the
# transaction still open, up to the same size (a bigger one spills to disk), whatever the
# range's size, the rows' width and the transactions' size.
FLUSH_BYTES = 32 << 20
# ... or when it holds this many records: narrow rows cost more as Python objects than
# their bytes say (a 130-byte row change is about 1.5 KB of record)
FLUSH_ROWS = 100_000
# statement texts' logged UTF-8 bytes kept for the writer (decode_range's ``utf8``) at most
_UTF8_CACHE = 20_000
_SEEN_MAX = 10_000  # statement keys _statements remembers


def decode_range(task: RangeTask, flush: Callable[[list[tuple[str, Any]]],
                                                  list[tuple[str, Any]]] | None = None,
                 flush_bytes: int = FLUSH_BYTES, history: SchemaHistory | None = None
                 ) -> list[tuple[str, Any]]:
    """All records of one range (see the module doc).  With ``flush``, the records so far
    go to ``flush`` after the event that ends ``flush_bytes`` or more bytes past the last
    flush (or the range's start), and the last ones at the end; what it returns is kept in
    their place.  ``history`` names the columns of Table_maps logged without names
    (:class:`binlake.schema.names.TableMapNamer`; its findings become FINDING records)."""
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
                stream.group(item, counts=_emit(out, item, pks, info, statements_seen, utf8,
                                                flush_out))
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

# Row changes (the bulk) travel as typed columns; every other kind rides as JSON text in
# `meta` (parsed in Spark with from_json or on the driver): few columns, few Python appends.
CHANGE_FIELDS: list[tuple[str, str]] = [
    ("txn_id", "string"), ("gtid", "string"), ("order_seq", "int"), ("order_pos", "bigint"),
    ("order_idx", "int"), ("commit_us", "bigint"), ("db", "string"), ("tbl", "string"),
    ("op", "string"), ("before", "string"), ("after", "string"), ("pk", "string"),
    ("statement", "string"), ("statement_pos", "bigint"), ("file", "string"),
    ("pos", "bigint"), ("row", "int"), ("payload_index", "int"),
    ("statement_payload_index", "int"),
]
WIDE_FIELDS: list[tuple[str, str]] = [("kind", "string"), *CHANGE_FIELDS, ("meta", "string")]
WIDE_SCHEMA = ", ".join(f"`{n}` {t}" for n, t in WIDE_FIELDS)
TASK_SCHEMA = ("uri STRING, file STRING, seq INT, start BIGINT, `end` BIGINT, `index` INT, "
               "last_in_file BOOLEAN, nontransactional ARRAY<STRING>, engines ARRAY<STRING>, "
               "last_of_file BOOLEAN, newest BOOLEAN")
_BATCH_ROWS = 8192
_BATCH_BYTES = 32 << 20  # also cut a batch at ~32 MB of text (Arrow buffers stay small)
_CHANGE_NAMES = [n for n, _ in CHANGE_FIELDS]


def _arrow_schema() -> Any:
    import pyarrow as pa

    types = {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64()}
    return pa.schema([(n, types[t]) for n, t in WIDE_FIELDS])


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
                records = decode_range(task, flush, sink.flush_bytes, history)
            finally:
                gc.enable()
            yield from wide_batches(records)
            del records
            gc.collect()


# -- table data written by the executors ---------------------------------------------------------

WRITTEN = "written"  # a Parquet data file an executor wrote (table, path, rows, partition)
_DAY_US = 86_400 * 1_000_000
_DICT_COLS = ["source", "gtid", "db", "tbl", "op", "file", "run_id", "kind", "status",
              "begin_file", "end_file", "end_event", "prepare_file", "_op", "_source"]


@dataclass(frozen=True)
class TableOut:
    """One table the executors write data files of: its data directory (local path,
    ``file:`` or ``s3://`` URI), its Arrow schema (Iceberg field ids included) and its
    partition fields as (column, transform), the transform ``identity`` or ``day``."""

    location: str
    schema: Any  # pyarrow.Schema
    partition: tuple[tuple[str, str], ...]


TYPED = "typed"  # what one range gave one typed table (counts, order keys, staged delta)


def stage_columns(names: list[str]) -> list[str]:
    """The staged delta's column names: positional (a source column name need not be one
    Parquet readers take); the reader renames them back."""
    return [f"c{i}" for i in range(len(names))]


@dataclass(frozen=True)
class TypedOut:
    """One source table whose typed changelog the executors write (see
    :meth:`DataSink.write_typed`): ``table`` is the changelog's full name (a key of
    ``DataSink.tables``), ``converter`` a :class:`typedconv.Converter`, ``stage`` the local
    directory where the changes newer than the mirror's watermark ``wm`` are staged (None:
    no mirror)."""

    db: str
    tbl: str
    table: str
    converter: Any
    stage: str | None
    wm: tuple[int, int, int] | None


@dataclass
class DataSink:
    """Where the executors write the data files of the lake's record tables
    (``row_changes``, ``transactions``, ``statements``, ``xa_prepares``).  The driver adds the
    files of the binlogs that decoded cleanly, one Iceberg commit per table; the others are
    deleted, and the files of a killed run are never referenced."""

    tables: dict[str, TableOut]
    source: str
    run_id: str
    s3_endpoint: str | None = None
    # in the file names: new for each load attempt (a retried Airflow task keeps its run id,
    # and must not overwrite files an earlier attempt committed); a retried Spark task of
    # the same attempt overwrites its own files
    attempt: str = ""
    # source tables whose typed changelog (and mirror delta) is written here too
    typed: dict[tuple[str, str], TypedOut] = field(default_factory=dict)
    # a decode task writes its records every this many bytes of binlog (decode_range)
    flush_bytes: int = FLUSH_BYTES

    def write(self, table: str, tag: str, file: str, columns: dict[str, list[Any]],
              n: int, keep: list[tuple[tuple[Any, ...], Any]] | None = None
              ) -> list[dict[str, Any]]:
        """Write ``n`` rows of binlog ``file`` into ``table``: ``columns`` by column name
        (``source`` and ``run_id`` are filled in; timestamps as epoch microseconds).  One
        data file per partition value; ``tag`` makes the names unique within the run.
        ``keep`` gets each (partition value, Arrow table) written."""
        if not n:
            return []
        import pyarrow as pa

        out_t = self.tables[table]
        keys: list[Any] = []
        for col, transform in out_t.partition:
            pvals: list[Any] = [self.source] * n if col == "source" else columns[col]
            keys.append([None if v is None else v // _DAY_US for v in pvals]
                        if transform == "day" else pvals)
        groups = _partition_groups(keys, n)
        if len(groups) > 1:
            # the rows in partition order, as Python sequences (cheaper than Arrow takes of
            # the converted columns, which copy every string): each partition is then a
            # slice; itemgetter picks them in C
            pick = itemgetter(*(i for rows in groups.values() for i in rows))
            columns = {c: pick(vals) for c, vals in columns.items()
                       if c in out_t.schema.names}
        arrays = []
        for f in out_t.schema:
            vals: list[Any] = ([self.source] * n if f.name == "source" else
                               [self.run_id] * n if f.name == "run_id" else columns[f.name])
            arrays.append(_arrow_array(vals, f.type))
        data = pa.Table.from_arrays(arrays, schema=out_t.schema)
        pieces = []
        at = 0
        for key, rows in groups.items():
            pieces.append((key, data.slice(at, len(rows))))
            at += len(rows)
        return self._write_files(table, tag, file, pieces, keep)

    def _write_parts(self, table: str, tag: str, file: str, data: Any,
                     keys: list[list[Any]],
                     keep: list[tuple[tuple[Any, ...], Any]] | None = None
                     ) -> list[dict[str, Any]]:
        """``data`` (an Arrow table in ``table``'s schema) as one data file per partition
        value; ``keys``: per partition field, every row's partition value."""
        import pyarrow as pa

        groups = _partition_groups(keys, data.num_rows)
        pieces = [(key, data.take(pa.array(rows, pa.int64())) if len(groups) > 1 else data)
                  for key, rows in groups.items()]
        return self._write_files(table, tag, file, pieces, keep)

    def _write_files(self, table: str, tag: str, file: str,
                     pieces: list[tuple[tuple[Any, ...], Any]],
                     keep: list[tuple[tuple[Any, ...], Any]] | None = None
                     ) -> list[dict[str, Any]]:
        """One data file of ``table`` per (partition value, Arrow table) of ``pieces``."""
        import pyarrow.parquet as pq

        out_t = self.tables[table]
        fs, base = data_filesystem(out_t.location, self.s3_endpoint)
        out = []
        short = table.rsplit(".", 1)[-1]
        for k, (key, part) in enumerate(pieces):
            name = f"{short}-{_safe(self.run_id)}-{self.attempt}-{tag}-{k}.parquet"
            pq.write_table(part, f"{base.rstrip('/')}/{name}", filesystem=fs,
                           compression="zstd",
                           use_dictionary=[c for c in _DICT_COLS if c in part.column_names])
            out.append({"table": table, "file": file, "rows": part.num_rows,
                        "path": _uri(out_t.location, name), "partition": list(key)})
            if keep is not None:
                keep.append((key, part))
        return out

    def write_typed(self, tag: str, file: str,
                    parts: list[tuple[dict[str, Any], Any]]) -> list[tuple[str, Any]]:
        """The typed changelog rows of the tables in ``typed``, converted here
        (:class:`typedconv.Converter`, the conversion the typed step runs in Spark
        otherwise) from ``parts``: the row changes as written to ``row_changes``, (partition
        values by column, Arrow table) per data file.  They are written as data files of the
        changelog tables; the changes newer than a mirror's watermark are staged as Parquet
        for its MERGE.  Returns a WRITTEN record per data file and a TYPED record per table
        (counts and order keys: what the driver needs to commit and merge)."""
        if not self.typed:
            return []
        import pyarrow as pa

        by_table: dict[tuple[str, str], list[Any]] = {}
        if parts and not {"db", "tbl"} <= set(parts[0][0]):  # not partitioned by table
            import pyarrow.compute as pc

            whole = pa.concat_tables([p for _, p in parts])
            for t in self.typed:
                mask = pc.and_(pc.equal(whole.column("db"), t[0]),
                               pc.equal(whole.column("tbl"), t[1]))
                picked = whole.filter(pc.fill_null(mask, False))
                if picked.num_rows:
                    by_table[t] = [picked]
        for key, part in parts:
            if {"db", "tbl"} <= set(key) and (key["db"], key["tbl"]) in self.typed:
                by_table.setdefault((key["db"], key["tbl"]), []).append(part)
        out: list[tuple[str, Any]] = []
        for t, tabs in by_table.items():
            spec = self.typed[t]
            rows = pa.concat_tables(tabs) if len(tabs) > 1 else tabs[0]
            cand = rows.select(["txn_id", "order_seq", "order_pos", "order_idx", "commit_ts",
                                "op", "before", "after", "file", "pos"])
            cand = cand.append_column("__bl_in_cl", pa.nulls(cand.num_rows, pa.bool_()))
            conv = pa.Table.from_batches(list(spec.converter(iter(cand.to_batches()))))
            del cand, rows
            out += self._typed_one(tag, file, spec, conv)
        return out

    def shaped(self, table: str, rows: Any) -> Any:
        """``rows`` (an Arrow table with the typed table's columns but ``_source``) in the
        Arrow schema of ``table``, a typed changelog or mirror: ``_source`` filled in, each
        column cast to its type."""
        import pyarrow as pa

        out_t = self.tables[table]
        arrays = []
        for f in out_t.schema:
            a = (pa.array([self.source] * rows.num_rows, pa.string())
                 if f.name == "_source" else rows.column(f.name))
            arrays.append(a.cast(f.type) if a.type != f.type else a)
        return pa.Table.from_arrays(arrays, schema=out_t.schema)

    def _typed_one(self, tag: str, file: str, spec: TypedOut, conv: Any
                   ) -> list[tuple[str, Any]]:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        layout = conv.column("__bl_layout")
        ok = pc.greater_equal(layout, 0)
        # every row, or those after the mirror's watermark
        delta = pc.is_valid(layout) if spec.wm is None else _order_beyond(conv, spec.wm, True)

        def count(mask: Any) -> int:
            return int(pc.sum(pc.cast(mask, pa.int64())).as_py() or 0)

        def okeys(mask: Any) -> list[tuple[int, int, int]]:
            t = conv.select(list(ORDER)).filter(mask)
            return list(zip(*(t.column(k).to_pylist() for k in range(3))))

        todo = pc.and_(delta, ok)
        partial = count(pc.and_(todo, pc.and_(
            pc.equal(conv.column("_op"), "update"),
            pc.greater(pc.fill_null(pc.list_value_length(conv.column("_absent")), 0), 0)))) > 0
        n_delta = count(delta) if spec.stage is not None else 0
        blocked_rows = (okeys(pc.and_(delta, pc.equal(layout, NO_LAYOUT)))
                        if spec.stage is not None else [])
        last_rows = okeys(delta) if n_delta else []
        stats: dict[str, Any] = {
            "table": spec.table, "db": spec.db, "tbl": spec.tbl, "file": file,
            "cl": count(ok), "delta": n_delta, "todo": count(todo) if n_delta else 0,
            "partial": partial, "blocked": list(min(blocked_rows)) if blocked_rows else None,
            "last": list(max(last_rows)) if last_rows else None,
            "no_layout": count(pc.equal(layout, NO_LAYOUT)),
            "no_names": count(pc.equal(layout, NO_NAMES)),
            "mismatch": count(pc.fill_null(conv.column("__bl_mismatch"), False)),
            "staged": None}
        out: list[tuple[str, Any]] = []
        if stats["cl"]:
            rows = conv.filter(ok)
            data = self.shaped(spec.table, rows)
            us = rows.column("_commit_ts").cast(pa.int64()).to_pylist()
            keys = [[None if v is None else v // _DAY_US for v in us]]
            out += [(WRITTEN, w) for w in self._write_parts(spec.table, tag, file, data, keys)]
        if n_delta and spec.stage is not None:
            fs, base = data_filesystem(spec.stage)
            path = f"{base.rstrip('/')}/{_safe(tag)}.parquet"
            staged = conv.filter(delta)
            staged = staged.rename_columns(stage_columns(staged.column_names))
            pq.write_table(staged, path, filesystem=fs, compression="lz4")
            stats["staged"] = path
        out.append((TYPED, stats))
        return out

    def write_records(self, tag: str, file: str, records: list[tuple[str, Any]]
                      ) -> list[tuple[str, Any]]:
        """Write a range's row changes, transactions, statements, XA prepares and stream
    facts (``stream_facts``, when the sink has that table); returns
        the records left for Spark (the XA prepares stay: the XA pairing reads them) and a
        WRITTEN record per data file."""
        by_kind: dict[str, list[Any]] = {CHANGE: [], TXN: [], STATEMENT: [], XA_PREPARE: [],
                                         FACT: []}
        rest: list[tuple[str, Any]] = []
        for k, r in records:
            if k in by_kind:
                by_kind[k].append(r)
                if k != XA_PREPARE:
                    continue
            rest.append((k, r))
        written = []
        changes = by_kind[CHANGE]
        typed_out: list[tuple[str, Any]] = []
        if changes:
            cols = dict(zip(_CHANGE_NAMES, (list(c) for c in zip(*changes))))
            cols["commit_ts"] = cols["commit_us"]
            parts: list[tuple[tuple[Any, ...], Any]] | None = [] if self.typed else None
            written += self.write("row_changes", tag, file, cols, len(changes), parts)
            del cols
            if parts:
                names = [c for c, _ in self.tables["row_changes"].partition]
                typed_out = self.write_typed(
                    tag, file, [(dict(zip(names, key)), part) for key, part in parts])
                del parts
        facts = by_kind[FACT]
        if facts and STREAM_FACTS in self.tables:
            written += self.write(STREAM_FACTS, tag, file,
                                  dict(zip(FACT_NAMES, (list(c) for c in zip(*facts)))),
                                  len(facts))
        for kind, table, rename, scale in (
                (TXN, "transactions", {"commit_ts": "commit_us"}, {}),
                (STATEMENT, "statements", {"pos": "statement_pos"}, {}),
                (XA_PREPARE, "xa_prepares", {}, {"prepared_ts": 1_000_000})):
            recs = by_kind[kind]
            if recs:
                written += self.write(table, tag, file,
                                      _columns(recs, self.tables[table].schema, rename, scale),
                                      len(recs))
        return rest + [(WRITTEN, w) for w in written] + typed_out


def _partition_groups(keys: list[list[Any]], n: int) -> dict[tuple[Any, ...], list[int]]:
    """The indexes of ``n`` rows by partition value (``keys``: per partition field, every
    row's value; none: one group of every row), groups in order of first appearance."""
    if not keys:
        return {(): list(range(n))}
    groups: dict[tuple[Any, ...], list[int]] = {}
    get = groups.get
    for i, key in enumerate(zip(*keys)):
        rows = get(key)
        if rows is None:
            groups[key] = [i]
        else:
            rows.append(i)
    return groups


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def _columns(recs: list[dict[str, Any]], schema: Any, rename: dict[str, str],
             scale: dict[str, int]) -> dict[str, list[Any]]:
    names = [n for n in schema.names if n not in ("source", "run_id")]
    keys = [rename.get(n, n) for n in names]
    columns: Iterable[Any] | None = None
    try:  # every record has every key (the usual case): all columns in one transposition
        if len(keys) > 1:
            columns = zip(*map(itemgetter(*keys), recs))
    except KeyError:
        pass
    if columns is None:
        columns = ([r.get(k) for r in recs] for k in keys)
    cols: dict[str, Any] = {}
    for name, vals in zip(names, columns):
        cols[name] = ([None if v is None else v * scale[name] for v in vals]
                      if name in scale else vals)
    return cols


def _arrow_array(vals: list[Any], typ: Any) -> Any:
    """``vals`` as an Arrow array of ``typ``; timestamps from epoch microseconds; an integer
    out of the type's range is NULL (as Spark's JSON reading of the records made it)."""
    import pyarrow as pa

    if pa.types.is_timestamp(typ):
        return pa.array(vals, pa.int64()).cast(typ)
    if pa.types.is_integer(typ):
        try:
            return pa.array(vals, typ)
        except (OverflowError, pa.ArrowInvalid):
            half = 1 << (typ.bit_width - 1)  # (the types written are signed)
            return pa.array([v if v is None or -half <= v < half else None for v in vals], typ)
    return pa.array(vals, typ)


def _uri(location: str, name: str) -> str:
    return f"{location.rstrip('/')}/{name}"


def fs_path(uri: str) -> str:
    """A data file or directory URI as a path of the pyarrow filesystem
    :func:`data_filesystem` gives for it (``s3://b/k`` -> ``b/k``, ``file:///p`` or
    ``file:/p`` -> ``/p``)."""
    if "://" in uri and not uri.startswith("file:"):
        return uri.split("://", 1)[1]
    path = uri[len("file:"):] if uri.startswith("file:") else uri
    while path.startswith("//"):
        path = path[1:]
    return path


def data_filesystem(location: str, s3_endpoint: str | None = None) -> tuple[Any, str]:
    """(pyarrow filesystem, path in it) of a data directory URI."""
    import pyarrow.fs as pafs

    if location.startswith("s3://") or location.startswith("s3a://"):
        import os

        endpoint = s3_endpoint or os.environ.get("BINLAKE_S3_ENDPOINT_URL")
        kw: dict[str, Any] = {}
        if endpoint:
            kw["endpoint_override"] = endpoint
            kw["scheme"] = "https" if endpoint.startswith("https") else "http"
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        if region:
            kw["region"] = region
        return pafs.S3FileSystem(**kw), fs_path(location)
    path = fs_path(location)
    local = pafs.LocalFileSystem()
    local.create_dir(path, recursive=True)
    return local, path


def wide_batches(records: Any) -> Any:
    """(kind, record) pairs -> Arrow record batches of WIDE_FIELDS.  A CHANGE record is a
    :func:`change_tuple` or a :func:`change_record` dict; any other kind rides as JSON in
    ``meta``.  Rows are built as tuples and transposed once per batch (zip(*rows)), not
    appended column by column."""
    import pyarrow as pa

    schema = _arrow_schema()
    types = [schema.field(i).type for i in range(len(schema))]
    dumps = orjson.dumps
    blank = (None,) * len(CHANGE_FIELDS)

    def batch(rows: list[tuple[Any, ...]]) -> Any:
        return pa.RecordBatch.from_arrays(
            [pa.array(col, type=typ) for col, typ in zip(zip(*rows), types)], schema=schema)

    rows: list[tuple[Any, ...]] = []
    size = 0
    for kind, rec in records:
        if kind == CHANGE:
            if isinstance(rec, dict):
                rec = tuple(rec[c] for c in _CHANGE_NAMES)
            rows.append((kind, *rec, None))
            size += len(rec[9] or "") + len(rec[10] or "")
        else:
            m = dumps(rec, default=str).decode()
            rows.append((kind, *blank, m))
            size += len(m)
        if len(rows) >= _BATCH_ROWS or size >= _BATCH_BYTES:
            yield batch(rows)
            rows = []
            size = 0
    if rows:
        yield batch(rows)


def meta_of(row: Any) -> dict[str, Any]:
    return dict(orjson.loads(row["meta"]))


# -- a mirror's delta, folded by an executor ---------------------------------------------------

# A mirror's staged delta is folded in one executor task (Arrow, in memory) when it has at
# most this many rows and its staged files at most this many bytes (lz4 Parquet: a few
# times that in memory); a bigger one goes through Spark's fold, which spills.  A million
# narrow rows (about 130 bytes of binlog each) peak at about 950 MB in the folding worker.
FOLD_MAX_ROWS = 1_000_000
FOLD_MAX_BYTES = 128 << 20


def _order_beyond(table: Any, key: tuple[int, int, int], after: bool) -> Any:
    """Mask of the rows of ``table`` (Arrow) whose order key is strictly after ``key``
    (``after``) or strictly before it; a NULL order key is neither."""
    import pyarrow.compute as pc

    cmp = pc.greater if after else pc.less
    (seq, pos, idx), (s, p, i) = (table.column(c) for c in ORDER), key
    return pc.fill_null(pc.or_(cmp(seq, s), pc.and_(pc.equal(seq, s), pc.or_(
        cmp(pos, p), pc.and_(pc.equal(pos, p), cmp(idx, i))))), False)


@dataclass(frozen=True)
class FoldSpec:
    """What :func:`fold_mirror` needs: the staged delta files of one table (positional
    columns, see :func:`stage_columns`) and their column ``names``; the mirror's key columns
    ``pk`` (the old key of an update in ``olds``) and value columns ``typed``; ``blocked``:
    the first change not to apply (None: all).  ``mirror`` (a key of ``sink.tables``) set:
    the folded rows are written as that mirror's data files (a mirror created by this run,
    empty); otherwise the folded delta is written to ``out`` for the MERGE."""

    paths: tuple[str, ...]
    names: tuple[str, ...]
    pk: tuple[str, ...]
    olds: tuple[str, ...]
    typed: tuple[str, ...]
    blocked: tuple[int, int, int] | None
    sink: DataSink | None = None
    mirror: str | None = None
    out: str | None = None


def fold_delta(table: Any, pk: tuple[str, ...], olds: tuple[str, ...],
               typed: tuple[str, ...]) -> Any:
    """The latest change per key of the converted changes in ``table`` (Arrow; columns
    ``typed``, their old key ``olds``, ``_op``, the order columns, ``_commit_ts``), as
    Spark's fold in ``typed._merge_mirror`` gives it: an update that changes the key is a
    delete of the old key (the old key values, no others) and then the row at the new key;
    keys compare null-safely; the change latest in commit order wins (a delete included)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    cols = [*typed, "_op", *ORDER, "_commit_ts"]
    rows = table.select(cols)
    if pk:
        same = None
        for c, o in zip(pk, olds):
            a, b = table.column(c), table.column(o)
            eq = pc.or_(pc.fill_null(pc.equal(a, b), False),
                        pc.and_(pc.is_null(a), pc.is_null(b)))
            same = eq if same is None else pc.and_(same, eq)
        moved = pc.fill_null(pc.and_(pc.equal(table.column("_op"), "update"),
                                     pc.invert(same)), False)
        g = table.filter(moved)
        if g.num_rows:
            n = g.num_rows
            old_of = dict(zip(pk, olds))
            arrays = []
            for c in cols:
                typ = rows.schema.field(c).type
                if c in old_of:
                    arrays.append(g.column(old_of[c]).cast(typ))
                elif c == "_op":
                    arrays.append(pa.array(["delete"] * n, typ))
                elif c in ORDER or c == "_commit_ts":
                    arrays.append(g.column(c))
                else:
                    arrays.append(pa.nulls(n, typ))
            rows = pa.concat_tables([rows, pa.Table.from_arrays(arrays, schema=rows.schema)])
    if not rows.num_rows:
        return rows
    # rank in commit order, then the highest rank per key
    perm = pc.sort_indices(rows.select(list(ORDER)),
                           sort_keys=[(c, "ascending") for c in ORDER]).to_numpy()
    rank = np.empty(len(perm), dtype=np.int64)
    rank[perm] = np.arange(len(perm), dtype=np.int64)
    keys = rows.select(list(pk)).append_column("__rank", pa.array(rank))
    last = keys.group_by(list(pk), use_threads=False).aggregate([("__rank", "max")])
    picked = np.sort(perm[last.column("__rank_max").to_numpy()])
    return rows.take(pa.array(picked))


def fold_mirror(spec: FoldSpec) -> list[dict[str, Any]]:
    """Executor side: read a table's staged delta, keep the changes to apply (a known layout,
    before ``blocked``), fold them (:func:`fold_delta`) and write the result (see
    :class:`FoldSpec`).  Returns the WRITTEN records of the mirror's data files, or one
    record naming the folded file."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    parts = [pq.read_table(p) for p in spec.paths]
    table = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
    del parts
    table = table.rename_columns(list(spec.names))
    keep = pc.greater_equal(table.column("__bl_layout"), 0)
    if spec.blocked is not None:
        keep = pc.and_(keep, _order_beyond(table, spec.blocked, False))
    table = table.filter(pc.fill_null(keep, False))
    folded = fold_delta(table, spec.pk, spec.olds, spec.typed)
    del table
    if spec.mirror is None:
        assert spec.out is not None
        fs, path = data_filesystem(spec.out.rsplit("/", 1)[0])
        pq.write_table(folded.rename_columns(stage_columns(folded.column_names)),
                       f"{path.rstrip('/')}/{spec.out.rsplit('/', 1)[1]}", filesystem=fs,
                       compression="lz4")
        return [{"folded": spec.out, "rows": folded.num_rows}]
    assert spec.sink is not None
    rows = folded.filter(pc.not_equal(folded.column("_op"), "delete"))
    if not rows.num_rows:
        return []
    return spec.sink._write_parts(spec.mirror, "mirror", "",
                                  spec.sink.shaped(spec.mirror, rows), [])
