"""XA pairing for the load job: the prepared-but-undecided XA transactions of earlier runs
(``xa_prepares`` minus the decided ones in ``transactions``), the pairing of this run's XA
PREPAREs with their COMMIT/ROLLBACK across ranges, files and runs (:func:`pair_events`), the
decided XAs' rows rebuilt on executors (:func:`decide_xa_arrow`), and the refreshed
``xa_pending`` table.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..config import Settings
from ..txn.build import assign_order
from ..txn.files import BinlogFile
from ..txn.model import XA_COMMITTED, XA_ROLLED_BACK, Part, Transaction
from ..txn.spill import SpilledChanges, undo_changes
from ..txn.xa import detached, load_pending
from .records import CHANGE, TXN, _commit_us, _inline, change_tuple, txn_record
from .sink import DataSink
from .spark import read_table
from .tables import (
    FILES,
    TRANSACTIONS,
    XA_PENDING,
    XA_PREPARES,
    _q,
)
from .transport import wide_batches


def _read_pending(spark: Any, settings: Settings) -> list[dict[str, Any]]:
    return [r.asDict() for r in read_table(spark, settings.table(XA_PENDING))
            .where(f"source = '{_q(settings.source)}'")
            .orderBy("prepare_seq", "prepare_pos").collect()]


def _earlier_pending(spark: Any, settings: Settings, before_seq: int,
                     run_files: set[str]) -> list[dict[str, Any]]:
    """XAs prepared before ``before_seq`` and not decided before it (metadata only; read
    on the driver: :func:`driver_read.read_rows`)."""
    from .driver_read import all_of, eq, lt, not_null, read_rows

    src = eq("source", settings.source)
    preps = read_rows(spark, settings, settings.table(XA_PREPARES),
                      all_of(src, lt("prepare_seq", int(before_seq))),
                      ("xa_format_id", "xa_gtrid", "xa_bqual", "prepare_seq", "prepare_pos",
                       "prepare_end_pos", "prepare_file", "prepare_gtid", "rows")).to_pylist()
    if not preps:
        return []
    decided = read_rows(spark, settings, settings.table(TRANSACTIONS),
                        all_of(src, eq("kind", "xa"), not_null("prepare_file"),
                               lt("order_seq", int(before_seq))),
                        ("prepare_file", "prepare_pos"))
    done = set(zip(decided.column("prepare_file").to_pylist(),
                   decided.column("prepare_pos").to_pylist()))
    keep = [r for r in preps if (r["prepare_file"], r["prepare_pos"]) not in done
            and r["prepare_file"] not in run_files]
    return sorted(keep, key=lambda r: (r["prepare_seq"], r["prepare_pos"]))


def _pair_xa(spark: Any, settings: Settings, files: list[BinlogFile], bad: set[str],
             preps: list[dict[str, Any]], ends: list[dict[str, Any]],
             later_loaded: bool = False
             ) -> tuple[dict[tuple[str, int], dict[str, Any]], list[dict[str, Any]],
                        list[dict[str, Any]], list[tuple[str, int]]]:
    """Pair XA PREPARE groups with their COMMIT/ROLLBACK groups in binlog order, starting
    from the XAs still pending before this run's first file.  With ``later_loaded`` (files
    after this run's first one were loaded before: a backfill), the decisions stored from
    those files take part too: one stored without its PREPARE (its file came first) is
    decided now, at its own position, and its PREPARE-less ``transactions`` row is to go
    (the last list: its ``(end_file, begin_pos)``)."""
    first_seq = min(f.seq for f in files)
    run_files = {f.name for f in files}
    pending: dict[tuple[int, str, str], dict[str, Any]] = {}
    for p in _earlier_pending(spark, settings, first_seq, run_files):
        pending[(p["xa_format_id"], p["xa_gtrid"], p["xa_bqual"])] = p
    events: list[tuple[int, int, str, dict[str, Any]]] = []
    for p in preps:
        if p["prepare_file"] not in bad:
            events.append((p["prepare_seq"], p["prepare_pos"], "p", p))
    for e in ends:
        part = e["part"]
        if part["file"] not in bad:
            events.append((part["seq"], part["begin_pos"], "e", e))
    if later_loaded and (pending or events):
        for d in _stored_decisions(spark, settings, first_seq, run_files):
            events.append((d["order_seq"], d["end_pos"], "s", d))
    return pair_events(events, pending, settings.source)


def pair_events(events: list[tuple[int, int, str, dict[str, Any]]],
                pending: dict[tuple[int, str, str], dict[str, Any]], source: str
                ) -> tuple[dict[tuple[str, int], dict[str, Any]], list[dict[str, Any]],
                           list[dict[str, Any]], list[tuple[str, int]]]:
    """The XA pairing of :func:`_pair_xa` over ``events`` (seq, position, kind, record):
    ``p`` a PREPARE of this run, ``e`` a COMMIT/ROLLBACK of this run, ``s`` a decision
    stored by an earlier run (a ``transactions`` row).  Each decision takes the XA pending
    under its XID at its position.  Returns the resolutions by PREPARE (file, position),
    the decisions found without a PREPARE, the findings, and the stored PREPARE-less
    decisions now paired."""
    events = sorted(events, key=lambda t: (t[0], t[1]))
    resolutions: dict[tuple[str, int], dict[str, Any]] = {}
    orphans: list[dict[str, Any]] = []
    findings: list[dict[str, Any]] = []
    late: list[tuple[str, int]] = []
    for _, _, kind, d in events:
        xid = (d["xa_format_id"], d["xa_gtrid"], d["xa_bqual"])
        if kind == "p":
            if xid in pending:
                findings.append({"kind": "xa_duplicate_prepare", "severity": "error",
                                 "file": d["prepare_file"], "pos": d["prepare_pos"],
                                 "message": f"XA {xid} prepared again while pending",
                                 "source": source})
            pending[xid] = d
            continue
        if kind == "s":
            prep = pending.get(xid)
            if d["prepare_file"] is not None:
                # stored with its PREPARE: it decided that one (nothing to redo)
                if prep is not None and (prep["prepare_file"], prep["prepare_pos"]) == (
                        d["prepare_file"], d["prepare_pos"]):
                    del pending[xid]
                continue
            if prep is None:
                continue  # still without its PREPARE (reported when it was loaded)
            del pending[xid]
            resolutions[(prep["prepare_file"], prep["prepare_pos"])] = {
                "commit": d["status"] == XA_COMMITTED, "end_event": d["end_event"],
                "part": {"file": d["end_file"], "seq": d["order_seq"],
                         "begin_pos": d["begin_pos"], "end_pos": d["end_pos"],
                         "gtid": d["gtid"], "timestamp": None, "commit_ts_us": d["commit_us"]},
                "late": True, "xid": xid}
            late.append((d["end_file"], d["begin_pos"]))
            continue
        prep = pending.pop(xid, None)
        part = d["part"]
        if prep is None:
            findings.append({"kind": "xa_commit_without_prepare" if d["commit"] else
                             "xa_rollback_without_prepare", "severity": "warning",
                             "file": part["file"], "pos": part["begin_pos"],
                             "message": f"XA {xid} decided without its PREPARE",
                             "source": source})
            orphans.append(_orphan_txn(d))
            continue
        resolutions[(prep["prepare_file"], prep["prepare_pos"])] = {
            "commit": d["commit"], "part": part, "end_event": d["end_event"]}
    return resolutions, orphans, findings, late


def local_decisions(batches: list[dict[str, Any]],
                    resolutions: dict[tuple[str, int], dict[str, Any]]
                    ) -> tuple[set[tuple[str, int]], dict[str, str]]:
    """The XA_LOCAL records of the decode tasks (the XAs a range decided itself, its rows
    written with the range's: extract.decode_range) against the driver's pairing of the
    run: each decision must be the resolution the pairing gave that PREPARE (the same
    COMMIT/ROLLBACK, part and end event).  It always is (in binlog order a decision takes
    the XA pending under its XID, within one range the one the range held); a file where
    one is not would have rows the pairing does not back, and fails.  Returns the PREPAREs
    (file, position) decided in their ranges, and the files that fail, with why."""
    done: set[tuple[str, int]] = set()
    wrong: dict[str, str] = {}
    for b in batches:
        for d in b["decisions"]:
            key = (d["prepare_file"], d["prepare_pos"])
            r = resolutions.get(key)
            if r is None or r.get("late") or key in done or (
                    r["commit"], r["part"], r["end_event"]) != (
                    d["commit"], d["part"], d["end_event"]):
                wrong.setdefault(b["file"], (
                    f"the XA PREPARE at {key[1]} was decided in its decode range at "
                    f"{d['part']['file']}:{d['part']['begin_pos']} ({d['end_event']}), "
                    "which the run's XA pairing does not back: nothing of the file is "
                    "loaded (please report it)"))
            done.add(key)
    return {k for k in done if not any(k[0] == f for f in wrong)}, wrong


def _stored_decisions(spark: Any, settings: Settings, after_seq: int, run_files: set[str]
                      ) -> list[dict[str, Any]]:
    """The two-phase XA decisions ``transactions`` holds from files after ``after_seq``
    that this run does not load (metadata only)."""
    src = _q(settings.source)
    rows = spark.sql(f"""
        SELECT xa_format_id, xa_gtrid, xa_bqual, status, end_event, gtid, end_file,
               begin_pos, end_pos, order_seq, unix_micros(commit_ts) AS commit_us,
               prepare_file, prepare_pos
        FROM {settings.table(TRANSACTIONS)}
        WHERE source = '{src}' AND kind = 'xa' AND NOT coalesce(one_phase, false)
          AND status IN ('{XA_COMMITTED}', '{XA_ROLLED_BACK}')
          AND order_seq > {int(after_seq)}""").collect()
    return [r.asDict() for r in rows if r["end_file"] not in run_files]


def _orphan_txn(d: dict[str, Any]) -> dict[str, Any]:
    part = d["part"]
    ts = part.get("commit_ts_us") or ((part.get("timestamp") or 0) * 1_000_000) or None
    return {"txn_id": part.get("gtid") or f"{part['file']}:{part['begin_pos']}",
            "gtid": part.get("gtid"), "kind": "xa",
            "status": XA_COMMITTED if d["commit"] else XA_ROLLED_BACK,
            "begin_file": part["file"], "begin_pos": part["begin_pos"],
            "end_file": part["file"], "end_pos": part["end_pos"], "commit_us": ts,
            "end_event": d["end_event"], "xid": None, "xa_format_id": d["xa_format_id"],
            "xa_gtrid": d["xa_gtrid"], "xa_bqual": d["xa_bqual"], "one_phase": False,
            "prepare_file": None, "prepare_pos": None, "prepare_gtid": None, "inserts": 0,
            "updates": 0, "deletes": 0, "tables": [], "nontransactional": False,
            "statements": None, "order_seq": part["seq"], "order_pos": part["end_pos"]}


def decide_xa_arrow(batches: Any, sink: DataSink) -> Any:
    """mapInArrow function (executors): prepare groups joined with their resolution in; the
    decided transactions and their row changes are written by ``sink``, and its WRITTEN
    records come out (WIDE_FIELDS batches), to be added in the same commits as the others."""
    import uuid as _uuid

    import orjson

    tag = f"xa-{_uuid.uuid4().hex[:12]}"
    for n, b in enumerate(batches):  # one batch of prepares in memory at a time
        records: list[tuple[str, Any]] = []
        for row in b.to_pylist():
            res = {(row["prepare_file"], row["prepare_pos"]): orjson.loads(
                row["resolution"])}
            records += decide_records(row, res)
        yield from wide_batches(sink.write_records(f"{tag}-{n}", "", records))


def decide_records(prep: dict[str, Any], resolutions: dict[tuple[str, int], dict[str, Any]],
                   prepared: Transaction | None = None) -> Iterator[tuple[str, Any]]:
    """A prepare group decided in this run: its transaction and (if committed) its rows at
    the COMMIT's order position (runs on an executor: the decide task, or the decode task
    whose range holds both, see extract.decode_range), as the data sink takes them (a
    change as a tuple in CHANGE_FIELDS order).  ``prep``: its XA_PREPARE record (``state``,
    ``pks``); ``resolutions``: by (prepare file, position), ``commit``, ``part`` and
    ``end_event`` of the decision.  ``prepared``: the prepared XA itself, where the caller
    still holds it (the decode task): taken instead of reading ``state`` back
    (:func:`binlake.txn.xa.detached`, the same records)."""
    import orjson

    res = resolutions.get((prep["prepare_file"], prep["prepare_pos"]))
    if res is None:
        return
    if prepared is not None and not isinstance(prepared.changes, SpilledChanges):
        txn = detached(prepared)
    else:
        (txn,) = load_pending(prep["state"])
    txn.prepare = txn.part
    txn.part = Part.from_dict(res["part"])
    txn.end_event = res["end_event"]
    if res["commit"]:
        txn.status = XA_COMMITTED
    else:
        txn.status = XA_ROLLED_BACK
        undo_changes(txn.changes)  # what an XA ROLLBACK can undo
    assign_order(txn)
    yield TXN, txn_record(txn)
    pks = orjson.loads(prep.get("pks") or "{}")
    gtid, txn_id, commit_us = txn.gtid, txn.id, _commit_us(txn)
    for c in txn.changes:
        if c.applied:
            yield CHANGE, change_tuple(c, gtid, txn_id, commit_us, pks.get(f"{c.db}.{c.table}"),
                                       _inline(c.statement))


def _refresh_pending(spark: Any, settings: Settings, run_id: str) -> list[dict[str, Any]]:
    """xa_pending := every stored prepare group not decided by any stored transaction, as of
    the newest loaded file (derived state: the same whatever order runs came in).  Computed
    on the driver (:func:`driver_read.read_rows`: the prepares' metadata, the decided XAs'
    keys, the files' ends) and written in one commit replacing the source's rows
    (:func:`commit.replace_source_rows`).  Returns the rows as :func:`_read_pending` reads
    them back."""
    from .commit import replace_source_rows
    from .driver_read import all_of, eq, not_null, read_rows

    src = eq("source", settings.source)
    cols = ("xa_format_id", "xa_gtrid", "xa_bqual", "prepare_seq", "prepare_pos",
            "prepare_file", "prepare_gtid", "prepared_ts", "rows")
    preps = read_rows(spark, settings, settings.table(XA_PREPARES), src, cols).to_pylist()
    decided = read_rows(spark, settings, settings.table(TRANSACTIONS),
                        all_of(src, eq("kind", "xa"), not_null("prepare_file")),
                        ("prepare_file", "prepare_pos"))
    done = set(zip(decided.column("prepare_file").to_pylist(),
                   decided.column("prepare_pos").to_pylist()))
    files = read_rows(spark, settings, settings.table(FILES), src,
                      ("file", "seq", "last_ts")).to_pylist()
    ends = [f["last_ts"] for f in files if f["last_ts"] is not None]
    newest = _epoch_seconds(max(ends)) if ends else None
    with_seq = [f for f in files if f["seq"] is not None]
    newest_file = max(with_seq, key=lambda f: f["seq"])["file"] if with_seq else None
    rows = []
    for p in preps:
        if (p["prepare_file"], p["prepare_pos"]) in done:
            continue
        ts = p["prepared_ts"]
        age = (float(newest - _epoch_seconds(ts))
               if newest is not None and ts is not None else None)
        rows.append({**p, "prepared_ts": None if ts is None else _epoch_micros(ts),
                     "age_seconds": age, "as_of_file": newest_file})
    replace_source_rows(spark, settings, settings.table(XA_PENDING), rows, run_id)
    rows.sort(key=lambda r: (r["prepare_seq"], r["prepare_pos"]))
    # as Spark's collect gives them (a TIMESTAMP: the naive local time)
    return [{"source": settings.source, **{c: r[c] for c in cols if c != "prepared_ts"},
             "prepared_ts": None if r["prepared_ts"] is None else _local_naive(
                 r["prepared_ts"]), "age_seconds": r["age_seconds"],
             "as_of_file": r["as_of_file"], "run_id": run_id} for r in rows]


def _epoch_micros(ts: Any) -> int:
    import datetime as dt

    if ts.tzinfo is None:  # (an Iceberg timestamp without zone: UTC)
        ts = ts.replace(tzinfo=dt.UTC)
    return (ts - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)


def _epoch_seconds(ts: Any) -> int:
    """Spark's unix_timestamp: whole seconds, floored."""
    return _epoch_micros(ts) // 1_000_000


def _local_naive(micros: int) -> Any:
    import datetime as dt

    return dt.datetime.fromtimestamp(micros // 1_000_000).replace(
        microsecond=micros % 1_000_000)
