"""Executor side of validation: one binlog file -> the facts the expectations read.

One task per file reads it once with :class:`~binlake.binlog.reader.BinlogReader` and feeds the
existing layers, never re-deciding what they decide:

* :class:`~binlake.txn.checks.StreamChecker` on the file alone gives the per-file verdicts that
  need its exemptions (positions with the relay-log / binlog v3 / 5.0 cache-relative rules,
  ``transaction_length``, duplicate Xids);
* :class:`~binlake.txn.build.GroupBuilder` gives the WL#4162 verdicts and the event groups
  (transactions, XA PREPARE groups, XA COMMIT/ROLLBACK markers) with their applied row counts;
* :func:`~binlake.txn.build.note_event` the file's facts (FDE, in-use flag, what it ends with).

Records leave Python as Arrow batches (``mapInArrow``) of one wide schema: ``kind = 'event'``
rows carry typed event columns (the bulk), the other kinds (``file``, ``group``, ``finding``)
ride as JSON in ``meta``.  Cross-file verdicts (GTID continuity, the file chain, XA pairing)
are SQL over these facts, on the driver's Spark plan, never over collected rows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from ..binlog.constants import EventType as E
from ..binlog.errors import BinlogError, ChecksumError, TruncatedError
from ..binlog.event import Event
from ..binlog.reader import BinlogReader
from ..binlog.source import parse_location, s3_client
from ..txn import findings as F
from ..txn import spill
from ..txn.build import FileInfo, GroupBuilder, XaMarker, note_event
from ..txn.checks import StreamChecker
from ..txn.engines import EngineTracker
from ..txn.gtidset import IntervalSet
from ..txn.model import XA_PREPARED, Transaction

EVENT = "event"
FILE = "file"
GROUP = "group"
FINDING = "finding"

# Findings of the single-file StreamChecker / GroupBuilder the suite uses (the cross-file ones,
# GTID and file chain, are the suite's own SQL over all files).
KEPT_FINDINGS = frozenset({F.POSITION_GAP, F.POSITION_OVERLAP, F.TRANSACTION_LENGTH_MISMATCH,
                           F.DUPLICATE_XID, F.INVALID_TRANSITION, F.OPEN_TRANSACTION_AT_EOF})
_MYSQL_GTID = frozenset({E.GTID, E.GTID_TAGGED})
_GTID_LENGTH = frozenset({E.GTID, E.ANONYMOUS_GTID, E.GTID_TAGGED})

EVENT_FIELDS: list[tuple[str, str]] = [
    ("file", "string"), ("seq", "int"), ("pos", "bigint"), ("length", "bigint"),
    ("next_pos", "bigint"), ("end_pos", "bigint"), ("type", "string"),
    ("payload_index", "int"), ("server_id", "bigint"), ("ts", "bigint"),
    ("checksum", "string"), ("error", "string"), ("gtid", "string"), ("gtid_uuid", "string"),
    ("gtid_tag", "string"), ("gtid_gno", "bigint"), ("gtid_domain", "bigint"),
    ("gtid_server", "bigint"), ("gtid_seq", "bigint"), ("trx_length", "bigint"),
]
WIDE_FIELDS: list[tuple[str, str]] = [("kind", "string"), *EVENT_FIELDS, ("meta", "string")]
WIDE_SCHEMA = ", ".join(f"`{n}` {t}" for n, t in WIDE_FIELDS)
TASK_SCHEMA = ("uri STRING, file STRING, seq INT, base STRING, `index` INT, newest BOOLEAN, "
               "nontransactional ARRAY<STRING>, engines ARRAY<STRING>")
EVENT_COLS = [n for n, _ in EVENT_FIELDS]

FILE_SCHEMA = (
    "file STRING, seq INT, base STRING, uri STRING, `index` INT, newest BOOLEAN, size BIGINT, "
    "events BIGINT, server_version STRING, flavor STRING, checksum_alg STRING, "
    "in_use BOOLEAN, ends_with STRING, rotate_next STRING, error STRING, error_kind STRING, "
    "error_offset BIGINT, first_ts BIGINT, last_ts BIGINT, sha256 STRING, "
    "recorded_sha256 STRING, recorded_in STRING, prev_gtids STRING, gtid_list STRING, "
    "contained STRING, last_per_server STRING")
GROUP_SCHEMA = (
    "file STRING, seq INT, begin_pos BIGINT, end_pos BIGINT, record STRING, kind STRING, "
    "status STRING, end_event STRING, gtid STRING, ts BIGINT, xa_xid STRING, "
    "inserts BIGINT, updates BIGINT, deletes BIGINT, nt_inserts BIGINT, nt_updates BIGINT, "
    "nt_deletes BIGINT")
FINDING_SCHEMA = ("kind STRING, severity STRING, file STRING, pos BIGINT, detail STRING, "
                  "message STRING")

_BATCH_ROWS = 8192


@dataclass
class FileTask:
    uri: str
    file: str
    seq: int
    base: str
    index: int  # the file's place in the run (server order)
    newest: bool  # the newest file of the run: it may still be written
    nontransactional: tuple[str, ...] = ()
    engines: tuple[tuple[str, bool], ...] = ()  # table engines from DDL before this file


# -- archive metadata -------------------------------------------------------------------------

def sha256_of(uri: str) -> tuple[str, int]:
    """sha256 and size of the stored object (the bytes as archived, compressed or not)."""
    loc = parse_location(uri)
    h = hashlib.sha256()
    n = 0
    if loc.scheme == "s3":
        body = s3_client().get_object(Bucket=loc.bucket, Key=loc.key)["Body"]
        chunks: Iterator[bytes] = iter(lambda: body.read(1 << 20), b"")
    else:
        fh = open(loc.path or uri, "rb")  # noqa: SIM115 - closed below
        chunks = iter(lambda: fh.read(1 << 20), b"")
    try:
        for b in chunks:
            h.update(b)
            n += len(b)
    finally:
        if loc.scheme != "s3":
            fh.close()
    return h.hexdigest(), n


def recorded_sha256(uri: str) -> tuple[str | None, str | None]:
    """The sha256 the archive recorded at copy time, and where (see
    :func:`binlake.archive.objectstore.recorded`)."""
    from ..archive.objectstore import recorded

    return recorded(uri)


# -- GTID set texts (canonical, comparable as strings) -----------------------------------------

GtidSets = dict[tuple[str, str], IntervalSet]  # (uuid, tag or "") -> gnos


def gtid_set_text(sets: GtidSets) -> str:
    """``uuid[:tag]:a-b:c,...`` sorted by uuid and tag: equal sets give equal texts."""
    parts = []
    for (uuid, tag), iv in sorted(sets.items()):
        if iv:
            spans = ":".join(str(a) if a == b else f"{a}-{b}" for a, b in iv)
            parts.append(f"{uuid}:{tag + ':' if tag else ''}{spans}")
    return ",".join(parts)


def gtid_list_text(entries: dict[tuple[int, int], int]) -> str:
    """``domain-server-seq,...`` sorted by (domain, server)."""
    return ",".join(f"{d}-{s}-{q}" for (d, s), q in sorted(entries.items()))


def _sets_json(sets: GtidSets) -> str:
    return orjson.dumps([[u, t, list(map(list, iv))] for (u, t), iv in sorted(sets.items())]
                        ).decode()


def sets_from_json(text: str | None) -> GtidSets:
    out: GtidSets = {}
    for u, t, spans in orjson.loads(text or "[]"):
        out[(u, t)] = IntervalSet([tuple(s) for s in spans])
    return out


# -- one file ---------------------------------------------------------------------------------

def _event_row(ev: Event, seq: int) -> tuple[Any, ...]:
    err = ev.error
    if isinstance(err, ChecksumError):
        checksum = "mismatch"
    elif ev.checksum is not None:
        checksum = "ok"
    else:
        checksum = "none"
    d = ev.data
    t = ev.type_code
    uuid = tag = gno = domain = server = sq = length = None
    if t in _MYSQL_GTID:
        uuid, tag, gno = d.get("uuid"), d.get("tag") or None, d.get("gno")
    elif t == E.MARIADB_GTID:
        domain, server, sq = d.get("domain_id"), ev.server_id, d.get("seq_no")
    if t in _GTID_LENGTH:
        length = d.get("transaction_length") or None
    gtid = d.get("gtid") if t in (*_MYSQL_GTID, E.MARIADB_GTID) else None
    return (ev.file, seq, ev.pos, ev.length, ev.next_pos, ev.end_pos, ev.type,
            ev.payload_index, ev.server_id, ev.timestamp or None, checksum,
            None if err is None or isinstance(err, ChecksumError) else str(err),
            gtid, uuid, tag, gno if isinstance(gno, int) else None, domain, server,
            sq if isinstance(sq, int) else None, length if isinstance(length, int) else None)


def op_counts(t: Transaction) -> tuple[int, ...]:
    """(inserts, updates, deletes) applied, then the same for non-transactional tables only
    (what survives an XA ROLLBACK)."""
    n = [0] * 6
    ops = {"insert": 0, "update": 1, "delete": 2}
    for c in t.changes:
        if c.applied:
            n[ops[c.op]] += 1
            if not c.transactional:
                n[3 + ops[c.op]] += 1
    return tuple(n)


def _xid_text(xid: Any) -> str | None:
    return None if xid is None else f"{xid.format_id}:{xid.gtrid}:{xid.bqual}"


def _group_record(item: Transaction | XaMarker, status: str | None = None) -> dict[str, Any]:
    if isinstance(item, XaMarker):
        p = item.part
        return {"file": p.file, "seq": p.seq, "begin_pos": p.begin_pos, "end_pos": p.end_pos,
                "record": "xa_end", "kind": "xa",
                "status": "xa_commit" if item.commit else "xa_rollback",
                "end_event": item.end_event, "gtid": p.gtid, "ts": p.timestamp,
                "xa_xid": _xid_text(item.xid), "inserts": 0, "updates": 0, "deletes": 0,
                "nt_inserts": 0, "nt_updates": 0, "nt_deletes": 0}
    p = item.part
    ins, upd, dele, nti, ntu, ntd = op_counts(item)
    status = status or item.status
    record = "xa_prepare" if status == XA_PREPARED else (
        "incomplete" if status == "incomplete" else "txn")
    return {"file": p.file, "seq": p.seq, "begin_pos": p.begin_pos, "end_pos": p.end_pos,
            "record": record, "kind": item.kind, "status": status,
            "end_event": item.end_event or None, "gtid": p.gtid, "ts": p.timestamp,
            "xa_xid": _xid_text(item.xa_xid), "inserts": ins, "updates": upd, "deletes": dele,
            "nt_inserts": nti, "nt_updates": ntu, "nt_deletes": ntd}


def file_records(task: FileTask) -> Iterator[tuple[str, Any]]:
    """(kind, record) of one file: every event (a tuple in EVENT_FIELDS order), its groups,
    the kept findings, and one FILE record last."""
    info = FileInfo(task.file, task.uri, task.seq)
    checker = StreamChecker(newest_file_may_be_open=task.newest)
    checker.begin_file(task.file, seq=task.seq if task.seq >= 0 else None)
    builder = GroupBuilder(EngineTracker(task.nontransactional, seen_ddl=task.engines),
                           # a huge bulk load's changes wait on local disk (txn.spill)
                           spill_bytes=spill.SPILL_BYTES, spill_rows=spill.SPILL_ROWS)
    builder.begin_file(task.file, task.seq)
    reader = BinlogReader(task.uri, name=task.file)
    error: BinlogError | None = None
    rotate_next: str | None = None
    prev_gtids: GtidSets | None = None
    gtid_list: dict[tuple[int, int], int] | None = None
    contained: GtidSets = {}
    last_per_server: dict[tuple[int, int], int] = {}
    try:
        for ev in reader:
            note_event(info, ev)
            checker.event(ev)
            yield EVENT, _event_row(ev, task.seq)
            t = ev.type_code
            d = ev.data
            if ev.payload_index is None:
                rotate_next = (str(d.get("next_file") or "").replace("\\", "/").rsplit("/", 1)[-1]
                               if t == E.ROTATE else None)
            if t in _MYSQL_GTID and isinstance(d.get("gno"), int) and d["gno"] > 0:
                contained.setdefault((d["uuid"], d.get("tag") or ""), IntervalSet()).add(d["gno"])
            elif t == E.MARIADB_GTID and isinstance(d.get("seq_no"), int):
                last_per_server[(d["domain_id"], ev.server_id)] = d["seq_no"]
            elif t == E.PREVIOUS_GTIDS and prev_gtids is None \
                    and isinstance(d.get("uuid_sets"), list):
                prev_gtids = {}
                for entry in d["uuid_sets"]:
                    key = (entry["uuid"], entry.get("tag") or "")
                    prev_gtids.setdefault(key, IntervalSet()).update(
                        IntervalSet(entry["intervals"]))
            elif t == E.MARIADB_GTID_LIST and gtid_list is None \
                    and isinstance(d.get("gtids"), list) and not d.get("list_flags"):
                gtid_list = {(g["domain_id"], g["server_id"]): g["seq_no"] for g in d["gtids"]}
            for item in builder.feed(ev):
                yield GROUP, _group_record(item)
    except BinlogError as exc:
        error = exc
    end_offset = reader.end_offset if error is None else error.offset
    checker.end_file(end_offset=end_offset, error=error, size=None)
    checker.finish()
    # A group still open where the file ends: an error, except in the newest file while the
    # server may still write it, and except after a framing error (integrity says that).
    n_incomplete = len(builder.incomplete)
    n_findings = len(builder.findings)
    builder.end_file(may_be_open=task.newest and bool(info.in_use), end_offset=end_offset)
    tail_excused = error is not None or (task.newest and bool(info.in_use))
    if tail_excused:
        del builder.incomplete[n_incomplete:]
        builder.findings[n_findings:] = [
            f for f in builder.findings[n_findings:] if f.kind != F.OPEN_TRANSACTION_AT_EOF]
    for txn in builder.incomplete:
        yield GROUP, _group_record(txn, "incomplete")
    for f in [*checker.findings, *builder.findings]:
        if f.kind in KEPT_FINDINGS:
            yield FINDING, {"kind": f.kind, "severity": f.severity, "file": f.file or task.file,
                            "pos": f.pos, "detail": orjson.dumps(f.detail, default=str).decode(),
                            "message": f.message}
    try:
        sha, size = sha256_of(task.uri)
    except (OSError, BinlogError) as exc:
        sha, size = None, None
        error = error or BinlogError(f"cannot read the stored object: {exc}", file=task.file)
    recorded, where = recorded_sha256(task.uri)
    yield FILE, {
        "file": task.file, "seq": task.seq, "base": task.base, "uri": task.uri,
        "index": task.index, "newest": task.newest, "size": size, "events": info.events,
        "server_version": info.server_version, "flavor": info.flavor,
        "checksum_alg": None if info.checksum_alg is None else str(info.checksum_alg),
        "in_use": info.in_use, "ends_with": info.ends_with,
        "rotate_next": rotate_next if info.ends_with == "ROTATE" else None,
        "error": None if error is None else str(error),
        "error_kind": None if error is None else (
            "truncated" if isinstance(error, TruncatedError) else error.kind),
        "error_offset": None if error is None else error.offset,
        "first_ts": info.first_timestamp, "last_ts": info.last_timestamp,
        "sha256": sha, "recorded_sha256": recorded, "recorded_in": where,
        "prev_gtids": None if prev_gtids is None else _sets_json(prev_gtids),
        "gtid_list": None if gtid_list is None else orjson.dumps(
            sorted([d, s, q] for (d, s), q in gtid_list.items())).decode(),
        "contained": _sets_json(contained),
        "last_per_server": orjson.dumps(
            sorted([d, s, q] for (d, s), q in last_per_server.items())).decode(),
    }


# -- Arrow transport --------------------------------------------------------------------------

def _arrow_schema() -> Any:
    import pyarrow as pa

    types = {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64()}
    return pa.schema([(n, types[t]) for n, t in WIDE_FIELDS])


def facts_arrow(batches: Any) -> Any:
    """mapInArrow function: file task rows in, fact batches (WIDE_FIELDS) out."""
    import pyarrow as pa

    schema = _arrow_schema()
    types = [schema.field(i).type for i in range(len(schema))]
    blank = (None,) * len(EVENT_FIELDS)

    def batch(rows: list[tuple[Any, ...]]) -> Any:
        return pa.RecordBatch.from_arrays(
            [pa.array(col, type=typ) for col, typ in zip(zip(*rows), types)], schema=schema)

    for tasks in batches:
        for t in tasks.to_pylist():
            engines = tuple((e.rsplit("=", 1)[0], e.endswith("=1"))
                            for e in (t["engines"] or ()))
            task = FileTask(t["uri"], t["file"], t["seq"], t["base"], t["index"], t["newest"],
                            tuple(t["nontransactional"] or ()), engines)
            rows: list[tuple[Any, ...]] = []
            for kind, rec in file_records(task):
                if kind == EVENT:
                    rows.append((kind, *rec, None))
                else:
                    rows.append((kind, *blank, orjson.dumps(rec, default=str).decode()))
                if len(rows) >= _BATCH_ROWS:
                    yield batch(rows)
                    rows = []
            if rows:
                yield batch(rows)
