"""Decode, resolve, land: a load's planned ranges into the lake's tables (the steps of
:func:`binlake.lake.job.run_load` after its plan).

``decode``   executors, one task per range (:mod:`binlake.lake.extract`): the row changes,
             transactions, statements, XA prepares, stream facts and the typed changelogs
             are written there as Parquet data files of their tables; only small records
             (per-range facts, XA markers, findings, the data files written) come back to
             the driver, and the XA prepares' rows stay in Spark for the pairing.
``resolve``  driver, small data only: which files failed, and the XA pairing across ranges,
             files and earlier runs (the prepared-but-undecided XAs of earlier runs are in
             ``xa_prepares`` minus the decided ones in ``transactions``); the XAs decided in
             this run whose decision no decode task could make get their rows written on the
             executors too.
``land``     per record table, delete what the run's files gave before, then one commit
             adding the data files of the binlogs that decoded cleanly, so a rerun, or a
             backfill over loaded files, changes nothing; then the typed tables
             (:func:`typed.fill`), the mirrors of tables without a key, ALTERs and table
             lifecycle; ``files`` is written last.
"""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import orjson

from ..config import Settings
from ..txn.files import BinlogFile, binlog_file
from ..txn.model import XA_COMMITTED, XA_ROLLED_BACK, XaXid
from ..txn.split import pack_tasks
from . import extract as X
from . import schemas as S
from .alters import alter_steps, apply_alters, fence_pending
from .commit import add_data_files, fork_branch, remove_files, table_out
from .files import _file_rows, _record_files, _shape
from .lifecycle import apply_lifecycle, last_points
from .nopk import fill_nopk_mirrors
from .records import FINDING, RANGE, XA_END, XA_LOCAL, XA_PREPARE
from .sink import TYPED, WRITTEN, DataSink
from .spark import local_frame, read_table, task_frame
from .summary import LoadSummary
from .survey import EngineState, encode_engines
from .tables import (
    ROW_CHANGES,
    STATEMENTS,
    STREAM_FACTS,
    TRANSACTIONS,
    XA_PREPARES,
    _in,
    _q,
    delete_where,
)
from .transport import TASK_SCHEMA, WIDE_SCHEMA, meta_of, prepare_of, prepares_frame
from .xa import _pair_xa, _refresh_pending, decide_xa_arrow, local_decisions

TXN_COLS = ["txn_id", "gtid", "kind", "status", "begin_file", "begin_pos", "end_file",
            "end_pos", "commit_us", "end_event", "xid", "xa_format_id", "xa_gtrid", "xa_bqual",
            "one_phase", "prepare_file", "prepare_pos", "prepare_gtid", "inserts", "updates",
            "deletes", "tables", "nontransactional", "statements", "order_seq", "order_pos"]
TXN_SCHEMA = ("txn_id STRING, gtid STRING, kind STRING, status STRING, begin_file STRING, "
              "begin_pos BIGINT, end_file STRING, end_pos BIGINT, commit_us BIGINT, "
              "end_event STRING, xid BIGINT, xa_format_id INT, xa_gtrid STRING, "
              "xa_bqual STRING, one_phase BOOLEAN, prepare_file STRING, prepare_pos BIGINT, "
              "prepare_gtid STRING, inserts BIGINT, updates BIGINT, deletes BIGINT, "
              "tables ARRAY<STRING>, nontransactional BOOLEAN, statements ARRAY<STRING>, "
              "order_seq INT, order_pos BIGINT")
PREP_COLS = ["xa_format_id", "xa_gtrid", "xa_bqual", "prepare_seq", "prepare_pos",
             "prepare_end_pos", "prepare_file", "prepare_gtid", "prepared_ts", "rows", "state",
             "pks"]
# an XA PREPARE's record as the driver reads it: without its rows
PREP_FIELDS = [c for c in PREP_COLS if c not in ("state", "pks")]

# The records of a decode task the driver reads (an XA PREPARE's without its rows): the
# others are written by the executors, or read by Spark (the XA PREPAREs' rows)
SMALL_KINDS = frozenset({RANGE, XA_END, FINDING, XA_PREPARE, WRITTEN, TYPED, XA_LOCAL})

RECORD_TABLES = (ROW_CHANGES, TRANSACTIONS, STATEMENTS, XA_PREPARES, STREAM_FACTS)


@dataclass
class Decoded:
    """What the decode step gives the driver."""

    sink: DataSink
    small: list[tuple[str, dict[str, Any]]]  # the SMALL_KINDS records
    preps: list[dict[str, Any]] = field(default_factory=list)  # PREPAREs whole (here)
    records: Any = None  # the tasks' records, persisted in Spark (executors)
    preps_df: Any = None  # the PREPAREs with their rows, in Spark (executors)


@dataclass
class Resolved:
    """What the resolve step leaves to land."""

    to_add: list[dict[str, Any]]  # the data files to commit (WRITTEN records)
    typed_stats: list[dict[str, Any]]  # the typed changelogs' (TYPED records)
    ranges_info: list[dict[str, Any]]  # the RANGE records
    orphan_txns: list[dict[str, Any]]  # XA COMMITs whose PREPARE is nowhere
    late: list[tuple[str, int]]  # XA decisions stored without their PREPARE, decided now


def decode_and_land(spark: Any, settings: Settings, run_id: str, summary: LoadSummary,
                    files: list[BinlogFile], tasks: list[X.RangeTask], seqs: list[int],
                    failed: dict[str, str], hashes: dict[str, tuple[str, int, str | None]],
                    n_ranges: dict[str, int], prepared: Any, phase: Any,
                    end_engines: dict[str, EngineState], later_loaded: bool,
                    run_history: S.RunHistory, here: bool = False) -> None:
    """Decode ``tasks`` (on the executors, or ``here`` in the driver's process), resolve
    the failed files and the XAs, and land the data in the tables; ``failed`` (file ->
    error) grows with the files that fail here."""
    decoded = decode(spark, settings, run_id, tasks, prepared, run_history, here, phase)
    resolved = resolve(spark, settings, summary, files, failed, decoded, later_loaded, here)
    good_seqs = land(spark, settings, run_id, summary, files, seqs, failed, prepared,
                     run_history, resolved, phase)
    # TRUNCATE / DROP / CREATE / RENAME TABLE on the mirrors and changelogs (lifecycle.py)
    # (and a mirror built whole in this run, of every such change in the history)
    built = [(name.split(".", 1)[0], name.split(".", 1)[1])
             for name, rep in summary.typed.get("tables", {}).items()
             if rep.get("mirror") and rep["mirror"] in rep.get("created", ())]
    life = apply_lifecycle(spark, settings, run_history.history, set(good_seqs), built,
                           prepared.jobs if prepared is not None else None)
    if life["cleared"] or life["moved"]:
        summary.typed["lifecycle"] = life

    phase("typed")
    # Files last: a file's row says "loaded" only once its data is in.
    file_rows = _file_rows(files, resolved.ranges_info, failed, hashes, n_ranges, run_id,
                           settings.source, end_engines)
    _record_files(spark, settings, file_rows, run_id)
    # Derived state last: it needs the files' timestamps (the XA ages).
    summary.pending = _refresh_pending(spark, settings, run_id)
    if decoded.records is not None:
        decoded.records.unpersist()
    phase("finish")
    summary.files = [{"file": r[1], "seq": r[2], "status": r[19], "error": r[20],
                      "size": r[3]} for r in file_rows]


# -- decode -----------------------------------------------------------------------------------

def decode(spark: Any, settings: Settings, run_id: str, tasks: list[X.RangeTask],
           prepared: Any, run_history: S.RunHistory, here: bool, phase: Any) -> Decoded:
    """Run the decode tasks; the records come back as Arrow batches and stay in Spark but
    the small ones, which the driver collects."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    sc = spark.sparkContext
    task_rows = [(t.uri, t.file, t.seq, t.start, t.end, t.index, t.last_in_file,
                  list(t.nontransactional), encode_engines(t.engines), t.last_of_file,
                  t.newest) for t in tasks]
    # Row changes, transactions, statements and XA prepares are written as Parquet by the
    # executors, straight into the tables' data directories; the driver adds the good ones,
    # one commit per table (land).
    sink = _data_sink(spark, settings, run_id,
                      [spec.table for spec in prepared.fast.values()])
    sink.typed = prepared.fast
    phase("sink")
    if here:
        # the same decode tasks, run here one after the other (a small input)
        small, preps = _decode_here(task_rows, sink, run_history)
        phase("decode")
        return Decoded(sink, small, preps)
    # small ranges (small binlogs) several to a task: a task has a fixed cost of its own
    packed = [[task_rows[i] for i in group] for group in pack_tasks(
        [t.end - t.start for t in tasks], sc.defaultParallelism, settings.split_bytes)]
    tasks_df = task_frame(spark, packed, TASK_SCHEMA)
    records = tasks_df.mapInArrow(partial(X.decode_tasks_arrow, sink=sink,
                                          history=run_history.history), WIDE_SCHEMA)
    # Decoded once, read twice (the small facts, the XA prepares): cached, in memory
    # while it fits and on disk beyond (Spark's storage memory bounds it).
    records = records.persist(StorageLevel.MEMORY_AND_DISK)
    # One pass for the driver's metadata: per-range facts, XA markers, table layouts,
    # findings, and the PREPAREs without their rows (state, pks).
    # (an XA PREPARE's meta is its metadata: its rows ride apart, see wide_batches)
    small = [(r["kind"], meta_of(r)) for r in records.where(
        F.col("kind").isin(*SMALL_KINDS)).select("kind", "meta").collect()]
    phase("decode")
    return Decoded(sink, small, records=records, preps_df=prepares_frame(records))


def _decode_here(task_rows: list[tuple[Any, ...]], sink: DataSink, run_history: S.RunHistory
                 ) -> tuple[list[tuple[str, dict[str, Any]]], list[dict[str, Any]]]:
    """The decode tasks run in the driver's process, one after the other (a small input: see
    ``driver_decode_bytes``): the same function the executors run
    (:func:`extract.decode_tasks_arrow`), the same data files written.  Returns what the
    executors' path collects, the small records (an XA PREPARE without its rows), and the
    XA PREPARE records whole."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType, _parse_datatype_string

    struct = _parse_datatype_string(TASK_SCHEMA)
    assert isinstance(struct, StructType)
    schema = to_arrow_schema(struct)
    cols = list(zip(*task_rows)) if task_rows else [() for _ in schema]
    batch = pa.RecordBatch.from_arrays(
        [pa.array(list(c), type=f.type) for c, f in zip(cols, schema)], schema=schema)
    small: list[tuple[str, dict[str, Any]]] = []
    preps = []
    for b in X.decode_tasks_arrow(iter([batch]), sink=sink, history=run_history.history):
        for i, (k, m) in enumerate(zip(b.column("kind").to_pylist(),
                                       b.column("meta").to_pylist())):
            if k not in SMALL_KINDS:
                continue
            rec = dict(orjson.loads(m))
            if k == XA_PREPARE:
                preps.append(prepare_of(b, i, rec))
                rec = {c: rec.get(c) for c in PREP_FIELDS}
            small.append((k, rec))
    return small, preps


def _data_sink(spark: Any, settings: Settings, run_id: str,
               more: list[str] = []) -> DataSink:  # noqa: B006 (never changed)
    """Where the executors write this run's data files of the record tables (each table's
    data directory, as the catalog knows it), and of the tables named in ``more`` (full
    names: the typed changelogs), the Arrow schemas they write (Iceberg field ids included)
    and the partition fields.  Read through Spark's own catalog, so every catalog type
    Spark is configured for works.  A few tables at once: each is a few round trips to the
    JVM and the catalog (a tenth of a second in a small load's path per table, one by one)."""
    tables = (*RECORD_TABLES, *more)
    with ThreadPoolExecutor(max_workers=4) as pool:  # (waits on the JVM, not CPU work)
        outs = list(pool.map(lambda t: table_out(spark, t if t in more else settings.table(t)),
                             tables))
    out = dict(zip(tables, outs))
    return DataSink(out, settings.source, run_id, settings.s3_endpoint_url,
                    attempt=uuid.uuid4().hex[:8], flush_bytes=settings.flush_bytes)


# -- resolve ----------------------------------------------------------------------------------

def resolve(spark: Any, settings: Settings, summary: LoadSummary, files: list[BinlogFile],
            failed: dict[str, str], decoded: Decoded, later_loaded: bool, here: bool
            ) -> Resolved:
    """The files that failed, the XA pairing, and the rows of the XAs decided in this run
    that no decode task wrote."""
    small = decoded.small
    ranges_info = [r for k, r in small if k == RANGE]
    for info in ranges_info:
        if info["error"] and info["file"] not in failed:
            failed[info["file"]] = info["error"]
    summary.findings += dedupe([dict(r, source=settings.source)
                                for k, r in small if k == FINDING])
    typed_stats = [r for k, r in small if k == TYPED]
    bad = sorted(failed)
    written = [r for k, r in small if k == WRITTEN]
    # a failed file lands nothing but its stream facts: validation reports its damage
    to_add = [w for w in written if w["file"] not in failed or w["table"] == STREAM_FACTS]
    remove_files([w["path"] for w in written
                  if w["file"] in failed and w["table"] != STREAM_FACTS])

    # XA pairing (driver; metadata only), and the XAs the decode tasks decided in their
    # ranges (their rows written with the ranges'), which the pairing must back: a file
    # where it does not fails (xa.local_decisions), and the pairing runs again without it
    prep_meta = [{c: r.get(c) for c in PREP_FIELDS} for k, r in small if k == XA_PREPARE]
    local = [r for k, r in small if k == XA_LOCAL]
    while True:
        resolutions, orphan_txns, xa_findings, late = _pair_xa(
            spark, settings, files, set(bad), prep_meta,
            [r for k, r in small if k == XA_END], later_loaded)
        in_range, wrong = local_decisions([b for b in local if b["file"] not in failed],
                                          resolutions)
        if not wrong:
            break
        failed.update(wrong)
        bad = sorted(failed)
        remove_files([w["path"] for w in to_add
                      if w["file"] in wrong and w["table"] != STREAM_FACTS])
        to_add = [w for w in to_add if w["file"] not in wrong or w["table"] == STREAM_FACTS]
    summary.findings += xa_findings
    summary.xa_decided_late = [
        {"xid": str(XaXid(*r["xid"])), "prepare_file": pf, "prepare_pos": pp,
         "status": XA_COMMITTED if r["commit"] else XA_ROLLED_BACK,
         "end_file": r["part"]["file"], "end_pos": r["part"]["end_pos"]}
        for (pf, pp), r in sorted(resolutions.items()) if r.get("late")]
    summary.xa_decided_in_range = len(in_range)
    to_decide = {k: r for k, r in resolutions.items() if k not in in_range}
    if to_decide:
        for k, m in _decide(spark, settings, files, set(bad), decoded, to_decide, here):
            if k in (WRITTEN, TYPED):
                (to_add if k == WRITTEN else typed_stats).append(orjson.loads(m))
    typed_stats = [r for r in typed_stats if r["file"] not in failed]
    return Resolved(to_add, typed_stats, ranges_info, orphan_txns, late)


def _decide(spark: Any, settings: Settings, files: list[BinlogFile], bad: set[str],
            decoded: Decoded, to_decide: dict[tuple[str, int], dict[str, Any]], here: bool
            ) -> list[tuple[str, Any]]:
    """The XAs decided in this run that no decode task decided get their rows at the
    COMMIT's position: on the executors, from this run's PREPARE records or the stored
    ones of earlier runs (the driver only ships the resolutions: positions, no rows).
    Returns the (kind, meta) records of what was written."""
    from pyspark.sql import functions as F

    run_files = {f.name for f in files}
    cols = ["prepare_file", "prepare_pos", "state", "pks"]
    # (their sequence numbers too: the files' prepare_seq statistics rule out the rest of a
    # big lake's prepares)
    wanted = sorted({binlog_file(pf).seq for pf, _ in to_decide})
    if here:  # decided here too, from this run's prepares and the stored ones
        return _decide_here(spark, settings, decoded.preps, bad, run_files, to_decide,
                            wanted, decoded.sink)
    res_df = local_frame(
        spark, [(pf, pp, orjson.dumps(r).decode()) for (pf, pp), r in to_decide.items()],
        "prepare_file STRING, prepare_pos BIGINT, resolution STRING")
    stored = read_table(spark, settings.table(XA_PREPARES)).where(
        (F.col("source") == settings.source)
        & ~F.col("prepare_file").isin(sorted(run_files))
        & (F.col("prepare_seq").isin(wanted) if min(wanted) >= 0 else F.lit(True))
    ).select(*cols)
    # their changes and transactions are written by the executors too: in one round of
    # tasks (one per core; not one per decode range and more), each writing its own data
    # files, so that fewer small files are written, read back and committed
    decide = decoded.preps_df.where(~F.col("prepare_file").isin(sorted(bad))).select(
        *cols).unionByName(stored).join(F.broadcast(res_df), ["prepare_file", "prepare_pos"])
    kind = F.col("kind")
    return [(r["kind"], r["meta"]) for r in decide.coalesce(
        max(1, spark.sparkContext.defaultParallelism)).mapInArrow(
        partial(decide_xa_arrow, sink=decoded.sink), WIDE_SCHEMA).where(
        kind.isin(WRITTEN, TYPED)).select("kind", "meta").collect()]


def _decide_here(spark: Any, settings: Settings, preps: list[dict[str, Any]], bad: set[str],
                 run_files: set[str], resolutions: dict[tuple[str, int], dict[str, Any]],
                 wanted: list[int], sink: DataSink) -> list[tuple[str, str]]:
    """The XAs decided in this run, decided in the driver's process (a small input): the
    prepares of this run's files but the ``bad`` ones (``preps``) and the stored ones of
    files not in this run (read on the driver), joined with their resolutions, through the
    executors' function (:func:`xa.decide_xa_arrow`).  Returns its (kind, meta) records."""
    import pyarrow as pa

    from .driver_read import all_of, eq, is_in, read_rows

    cond = [eq("source", settings.source)]
    if min(wanted) >= 0:
        cond.append(is_in("prepare_seq", wanted))
    stored = read_rows(spark, settings, settings.table(XA_PREPARES), all_of(*cond),
                       ("prepare_file", "prepare_pos", "state", "pks")).to_pylist()
    rows = [{"prepare_file": p["prepare_file"], "prepare_pos": p["prepare_pos"],
             "state": p["state"], "pks": p["pks"],
             "resolution": orjson.dumps(resolutions[key]).decode()}
            for p in [*(p for p in preps if p["prepare_file"] not in bad),
                      *(p for p in stored if p["prepare_file"] not in run_files)]
            if (key := (p["prepare_file"], p["prepare_pos"])) in resolutions]
    schema = pa.schema([("prepare_file", pa.string()), ("prepare_pos", pa.int64()),
                        ("state", pa.string()), ("pks", pa.string()),
                        ("resolution", pa.string())])
    batch = pa.RecordBatch.from_pylist(rows, schema=schema)
    return [(k, m) for b in decide_xa_arrow(iter([batch]), sink)
            for k, m in zip(b.column("kind").to_pylist(), b.column("meta").to_pylist())]


def dedupe(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The schema findings of the decode tasks once per table and message (every range
    that reads the table's Table_maps makes them)."""
    out, seen = [], set()
    for f in findings:
        if f.get("kind") in ("no_schema", "table_map_mismatch"):
            key = (f["kind"], f.get("table"), f.get("message"))
            if key in seen:
                continue
            seen.add(key)
        out.append(f)
    return out


# -- land -------------------------------------------------------------------------------------

def land(spark: Any, settings: Settings, run_id: str, summary: LoadSummary,
         files: list[BinlogFile], seqs: list[int], failed: dict[str, str], prepared: Any,
         run_history: S.RunHistory, resolved: Resolved, phase: Any) -> list[int]:
    """The record tables, the schema versions, the typed tables, the mirrors of tables
    without a key and the ALTERs; returns the sequence numbers of the files that landed."""
    from . import typed

    source = settings.source
    to_add, orphan_txns, late = resolved.to_add, resolved.orphan_txns, resolved.late
    # What these files contributed before (a run killed halfway, or ``reload``) goes first:
    # then plain appends (the executors' data files), no joins against the growing tables.
    in_seqs = ",".join(str(n) for n in seqs)
    record_tables = [
        (ROW_CHANGES, f"order_seq IN ({in_seqs})"),
        (TRANSACTIONS, f"order_seq IN ({in_seqs})"),
        # (file, pos) is unique: a statement is in one range, emitted once
        (STATEMENTS, f"file IN ({_in([f.name for f in files])})"),
        (XA_PREPARES, f"prepare_seq IN ({in_seqs})"),
        # (seq too: file names' column statistics are cut to 16 characters, so the file
        # alone rules out no data file)
        (STREAM_FACTS, f"seq IN ({in_seqs}) AND file IN ({_in([f.name for f in files])})")]

    def replace_rows(table: str, where: str) -> None:
        """One table: its delete, then its append."""
        if table == TRANSACTIONS and late:
            # XA decisions stored without their PREPARE, decided in this run (a backfill)
            where += " OR (kind = 'xa' AND prepare_file IS NULL AND (" + " OR ".join(
                f"(end_file = '{_q(f)}' AND begin_pos = {int(p)})" for f, p in late) + "))"
        delete_where(spark, settings.table(table), f"source = '{_q(source)}' AND ({where})")
        add = [w for w in to_add if w["table"] == table]
        if add:
            add_data_files(spark, settings, table, add, run_id)
        if table == TRANSACTIONS and orphan_txns:
            # XA COMMITs whose PREPARE is nowhere: a few rows, from the driver
            txns = spark.createDataFrame(
                [tuple(t[c] for c in TXN_COLS) for t in orphan_txns], TXN_SCHEMA)
            fork_branch(spark, settings.table(TRANSACTIONS))
            _shape(spark, settings, settings.table(TRANSACTIONS), txns, run_id,
                   {"commit_ts": "timestamp_micros(commit_us)"}, drop=["commit_us"]
                   ).writeTo(settings.table(TRANSACTIONS)).append()

    # Tables are independent (each its own commits, which queue for the catalog's
    # connection): a few at once keep the driver's round trips to the JVM and the catalog
    # overlapping.  Typed tables filled from what the decode tasks gave (``prepared.fast``)
    # read none of these tables: they are filled while these commit (seconds of footers and
    # commits in a big load, the executors idle); a typed table built from ``row_changes``
    # waits for them, and so does everything after the typed tables.  (A run killed in
    # between is a killed run: the next load redoes these files' rows in every table.)
    good_seqs = [f.seq for f in files if f.name not in failed]
    with ThreadPoolExecutor(max_workers=settings.typed_parallelism) as pool:
        records_done = [pool.submit(replace_rows, *tw) for tw in record_tables]

        def wait_records() -> None:
            for fut in records_done:
                fut.result()

        try:
            # The schema versions that start in these files (a rerun replaces its own).
            new, replaced = run_history.to_store(f.seq for f in files if f.name in failed)
            S.store_versions(spark, settings, new, replaced, run_id,
                             run_history.history.databases.values())
            if not all(prepared.fast.get((j.db, j.tbl)) is not None
                       for j in prepared.jobs if j.plan is not None):
                wait_records()
            phase("write")
            # Typed per-table changelog and mirror tables (when the binlog names the
            # columns).
            if prepared.jobs:
                for job in prepared.jobs:  # (replayed by the fill itself, or after it)
                    job.alters = alter_steps(run_history.history, job)
                    if job.alters and job.rep.get("mirror"):
                        fence_pending(spark, settings, job.rep["mirror"], job)
                summary.typed = typed.fill(
                    spark, settings, prepared, resolved.typed_stats,
                    [w for w in to_add if w["table"] not in RECORD_TABLES],
                    lambda table, written, props=None: add_data_files(
                        spark, settings, table, written, run_id, props),
                    run_id)
        finally:
            wait_records()
    if prepared.jobs:
        # tables without a primary key: a replica's mirror (nopk.py)
        nopk = fill_nopk_mirrors(spark, settings, prepared.jobs, last_points(
            run_history.history, set(good_seqs)))
        for name, rep in nopk.items():
            summary.typed["tables"].get(name, {}).update(mirror=rep["mirror"], nopk=rep)
        # ALTER TABLE rewrote the rows no change touched since (alters.py)
        altered = apply_alters(spark, settings, prepared.jobs)
        for name, done in altered.items():
            summary.typed["tables"].get(name, {})["altered"] = done
    return good_seqs
