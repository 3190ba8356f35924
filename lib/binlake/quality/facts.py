"""Executor side of validation when the lake has no facts of a file: read it once.

Validation reads the *stream facts* of each file (:mod:`binlake.txn.streamfacts`): one row
per range, group, GTID, xid, damaged event and kept finding.  The load gathers them in its
own decode pass and stores them in the ``stream_facts`` table, so that a night's validation
does not decode its files again (:mod:`.datasets` reads them).  A file the lake has no
complete facts of (never loaded, loaded by an older binlake, failed before decoding, or
validated with ``--no-lake``) is read here: the same
:class:`~binlake.txn.streamfacts.RangeFacts`, fed by the same
:class:`~binlake.txn.build.GroupBuilder`, over the whole file by one task (plus the sha256
of the stored object), or over one of its transaction-aligned byte ranges per task, as the
load cuts a big file (:mod:`.datasets` plans them; their facts are merged as the load's are).

Rows leave Python as Arrow batches (``mapInArrow``) of the facts' schema.  Cross-file and
cross-range verdicts (GTID continuity, the file chain, XA pairing, Xids repeated in two
ranges, position offsets that change where a range starts) are the reader's: SQL over the
facts, on the driver's Spark plan, and per-file aggregates on the driver.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from ..binlog.errors import BinlogError
from ..binlog.reader import BinlogReader
from ..binlog.source import parse_location, s3_client
from ..lake.worker import settle
from ..txn import spill
from ..txn import streamfacts as S
from ..txn.build import GroupBuilder
from ..txn.engines import EngineTracker
from ..txn.gtidset import IntervalSet
from ..txn.streamfacts import (
    FACT_FIELDS,
    FACT_NAMES,
    GtidSets,
    sets_from_json,
)

FILE = "file"
GROUP = "group"

TASK_SCHEMA = ("uri STRING, file STRING, seq INT, base STRING, `index` INT, newest BOOLEAN, "
               "nontransactional ARRAY<STRING>, engines ARRAY<STRING>, start BIGINT, "
               "`end` BIGINT, range_index INT, last_of_file BOOLEAN")
FACT_SCHEMA = ", ".join(f"`{n}` {t}" for n, t in FACT_FIELDS)

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
    engines: tuple[tuple[str, bool], ...] = ()  # table engines from DDL before ``start``
    # one transaction-aligned byte range [start, end) of the file, or (None) all of it
    start: int | None = None
    end: int | None = None
    range_index: int = 0
    last_of_file: bool = True  # the range ends where the file does


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


# -- one file ---------------------------------------------------------------------------------

def file_facts(task: FileTask) -> Iterator[tuple[Any, ...]]:
    """The stream facts of one file (rows of FACT_FIELDS), or of its range [task.start,
    task.end), as the load gathers them range by range.  A whole file's range row's meta
    also has the stored object's sha256 and size (a range's caller has them already)."""
    ranged = task.start is not None
    rows: list[tuple[Any, ...]] = []
    builder = GroupBuilder(EngineTracker(task.nontransactional, seen_ddl=task.engines),
                           # a huge bulk load's changes wait on local disk (txn.spill)
                           spill_bytes=spill.SPILL_BYTES, spill_rows=spill.SPILL_ROWS)
    builder.begin_file(task.file, task.seq)
    reader = (BinlogReader(task.uri, start=task.start, stop=task.end, name=task.file)
              if ranged else BinlogReader(task.uri, name=task.file))
    facts = S.RangeFacts(reader, task.file, task.seq, task.range_index,
                         last_of_file=task.last_of_file, newest=task.newest, emit=rows.append)
    error: BinlogError | None = None
    try:
        for ev in reader:
            facts.event(ev)
            for item in builder.feed(ev):
                facts.group(item)  # (its counts: spilled changes are read back once)
            if len(rows) >= _BATCH_ROWS:
                yield from rows
                rows.clear()
    except BinlogError as exc:
        error = exc
    marks = (len(builder.incomplete), len(builder.findings))
    builder.end_file(may_be_open=task.newest and task.last_of_file,
                     end_offset=reader.end_offset if error is None else error.offset)
    facts.finish(error=error, builder=builder, marks=marks)
    if ranged:
        yield from rows
        return
    last = rows.pop()  # the range row: the object's sha256 and size added
    meta = orjson.loads(last[-1])
    try:
        meta["sha256"], meta["size"] = sha256_of(task.uri)
    except (OSError, BinlogError) as exc:
        meta["sha256"] = meta["size"] = None
        meta["read_error"] = f"cannot read the stored object: {exc}"
    yield from rows
    yield (*last[:-1], orjson.dumps(meta).decode())


def merge_ranges(metas: list[dict[str, Any]]) -> dict[str, Any]:
    """One file's facts from its ranges' (range rows' meta, in range order)."""
    first, last = metas[0], metas[-1]
    err = next((m for m in metas if m.get("error")), None)
    contained: GtidSets = {}
    last_per_server: dict[tuple[int, int], int] = {}
    for m in metas:
        for key, iv in sets_from_json(m.get("contained")).items():
            contained.setdefault(key, IntervalSet()).update(iv)
        last_per_server.update({(d, s): q for d, s, q in
                                orjson.loads(m.get("last_per_server") or "[]")})
    ts = [m for m in metas if m.get("first_ts") is not None]
    return {
        "events": sum(m["events"] for m in metas),
        "server_version": first.get("server_version"), "flavor": first.get("flavor"),
        "checksum_alg": first.get("checksum_alg"), "in_use": first.get("in_use"),
        "ends_with": (err or last).get("ends_with"),
        "rotate_next": (err or last).get("rotate_next"),
        "error": None if err is None else err["error"],
        "error_kind": None if err is None else err["error_kind"],
        "error_offset": None if err is None else err["error_offset"],
        "first_ts": ts[0]["first_ts"] if ts else None,
        "last_ts": ts[-1]["last_ts"] if ts else None,
        "prev_gtids": next((m["prev_gtids"] for m in metas if m.get("prev_gtids")), None),
        "gtid_list": next((m["gtid_list"] for m in metas if m.get("gtid_list")), None),
        "contained": S.sets_json(contained),
        "last_per_server": orjson.dumps(
            sorted([d, s, q] for (d, s), q in last_per_server.items())).decode(),
        "checksums": {k: sum(m["checksums"][k] for m in metas)
                      for k in ("ok", "none", "mismatch")},
    }


def ranges_usable(metas: list[dict[str, Any]]) -> bool:
    """The ranges' facts stand for the whole file's: one range, or no relay log (the
    checker stops checking positions where a file turns into a relay log, which a range
    after that point cannot know)."""
    return len(metas) <= 1 or all(m.get("relay_from") is None for m in metas)


def range_findings(file: str, metas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The position findings a range alone cannot make: the offset ``next_pos - end``
    (:mod:`binlake.txn.check_integrity`) changed between the end of a range and the first
    event of the next one."""
    out = []
    for prev, m in itertools.pairwise(metas):
        a, b = prev.get("end_delta"), m.get("resume_delta")
        if a is None or b is None or a == b or prev.get("error"):
            continue
        change = b - a
        kind = "position_gap" if change > 0 else "position_overlap"
        pos = m.get("first_pos")
        detail = {"expected_offset": a, "found_offset": b,
                  ("missing_bytes" if change > 0 else "extra_bytes"): abs(change)}
        message = (f"event at {pos}: header log_pos is {abs(change)} bytes "
                   + ("past where the event ends plus the earlier offset: events are missing "
                      "before this event" if change > 0 else
                      "short of where the event ends plus the earlier offset: bytes were "
                      "inserted before this event, or its header was edited"))
        out.append({"kind": kind, "severity": "error", "file": file, "pos": pos,
                    "detail": orjson.dumps(detail).decode(), "message": message})
    return out


def file_records(task: FileTask) -> Iterator[tuple[str, Any]]:
    """(kind, record) of one file read whole: its GROUP records (as the ``groups``
    dataset has them), then one FILE record (as the ``files`` dataset has it, without the
    GTID header columns :func:`binlake.quality.datasets.expected_headers` adds)."""
    at = {n: i for i, n in enumerate(FACT_NAMES)}
    meta: dict[str, Any] = {}
    for r in file_facts(task):
        kind = r[at["kind"]]
        if kind == S.GROUP:
            yield GROUP, group_dict(r, at)
        elif kind == S.RANGE:
            meta = orjson.loads(r[at["meta"]])
    yield FILE, file_row(task, merge_ranges([meta]), meta.get("sha256"), meta.get("size"))


def group_dict(r: Any, at: dict[str, int]) -> dict[str, Any]:
    return {"file": r[at["file"]], "seq": r[at["seq"]], "begin_pos": r[at["pos"]],
            "end_pos": r[at["end_pos"]], "record": r[at["record"]],
            "kind": r[at["group_kind"]], "status": r[at["status"]],
            "end_event": r[at["end_event"]], "gtid": r[at["gtid"]], "ts": r[at["ts"]],
            "xa_xid": r[at["xa_xid"]],
            **{c: r[at[c]] for c in ("inserts", "updates", "deletes", "nt_inserts",
                                     "nt_updates", "nt_deletes")}}


def file_row(task: FileTask, merged: dict[str, Any], sha: str | None, size: int | None
             ) -> dict[str, Any]:
    """A ``files`` dataset row: the task's place in the run, the merged facts, the stored
    object's sha256 and the one the archive recorded at copy time."""
    recorded, where = recorded_sha256(task.uri)
    return {"file": task.file, "seq": task.seq, "base": task.base, "uri": task.uri,
            "index": task.index, "newest": task.newest, "size": size,
            **{k: v for k, v in merged.items() if k != "checksums"},
            "sha256": sha, "recorded_sha256": recorded, "recorded_in": where}


# -- Arrow transport --------------------------------------------------------------------------

def _arrow_schema() -> Any:
    import pyarrow as pa

    types = {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64()}
    return pa.schema([(n, types[t]) for n, t in FACT_FIELDS])


def facts_arrow(batches: Any) -> Any:
    """mapInArrow function: file task rows in, fact batches (FACT_FIELDS) out."""
    import pyarrow as pa

    schema = _arrow_schema()
    types = [schema.field(i).type for i in range(len(schema))]

    def batch(rows: list[tuple[Any, ...]]) -> Any:
        return pa.RecordBatch.from_arrays(
            [pa.array(col, type=typ) for col, typ in zip(zip(*rows), types)], schema=schema)

    for tasks in batches:
        for t in tasks.to_pylist():
            engines = tuple((e.rsplit("=", 1)[0], e.endswith("=1"))
                            for e in (t["engines"] or ()))
            task = FileTask(t["uri"], t["file"], t["seq"], t["base"], t["index"], t["newest"],
                            tuple(t["nontransactional"] or ()), engines, t["start"], t["end"],
                            t["range_index"] or 0, bool(t["last_of_file"]))
            rows: list[tuple[Any, ...]] = []
            for row in file_facts(task):
                rows.append(row)
                if len(rows) >= _BATCH_ROWS:
                    yield batch(rows)
                    rows = []
            if rows:
                yield batch(rows)
            del rows
            settle()  # (lake.worker)
