"""The load job: archived binlog files -> Iceberg tables, decoded in parallel on executors.

Plan: the driver lists the input files and orders them per source; one executor task per
file surveys it (sha256, transaction-aligned byte ranges from :mod:`binlake.txn.split`, its
DDL and table layouts); the driver then prepares the typed tables (:func:`typed.prepare`).
Decode (executors): one task per range (:mod:`binlake.lake.extract`); the row changes,
transactions, statements and XA prepares are written there as Parquet data files of their
tables, and the typed changelogs' too; only small facts, and the XA prepares for the
pairing, stay in Spark. Resolve
(driver, small data only): which files failed, and the XA pairing across ranges, files and
earlier runs (the prepared-but-undecided XAs of earlier runs are in ``xa_prepares`` minus
the decided ones in ``transactions``); the decided XAs' rows are rebuilt and written on the
executors too. Load: per table, delete what the run's files gave before, then one commit
adding the data files of the binlogs that decoded cleanly, so a rerun, or a backfill over
loaded files, changes nothing; then the typed tables (:func:`typed.fill`); ``files`` is
written last.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import orjson

from ..config import Settings
from ..txn.files import BinlogFile, binlog_file
from ..txn.model import XA_COMMITTED, XA_ROLLED_BACK, XaXid
from ..txn.split import group_ranges
from . import extract as X
from . import schemas as S
from .alters import apply_alters
from .branch import on_branch
from .commit import add_data_files, remove_files, table_out
from .discover import _survey, discover
from .files import _file_rows, _record_files, _shape
from .lifecycle import apply_lifecycle, last_points
from .loaded import Loaded, _later_loaded, _loaded, engine_seed, engines_unseen
from .lock import load_lock, lock_is_global
from .nopk import fill_nopk_mirrors
from .orphans import DeadRun, remove_orphans
from .records import FINDING, RANGE, XA_END, XA_LOCAL, XA_PREPARE
from .sink import TYPED, WRITTEN, DataSink
from .spark import local_frame
from .staging import _stage_root, clean_staging
from .summary import LoadSummary
from .survey import EngineState, encode_engines, engine_states
from .tables import (
    ROW_CHANGES,
    STATEMENTS,
    STREAM_FACTS,
    TRANSACTIONS,
    XA_PREPARES,
    _in,
    _q,
    delete_where,
    ensure_tables,
)
from .transport import TASK_SCHEMA, WIDE_SCHEMA, meta_of, prepare_of, prepares_frame
from .xa import _pair_xa, _read_pending, _refresh_pending, decide_xa_arrow, local_decisions

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


# The records of a decode task the driver reads (an XA PREPARE's without its rows): the
# others are written by the executors, or read by Spark (the XA PREPAREs' rows)
SMALL_KINDS = frozenset({RANGE, XA_END, FINDING, XA_PREPARE, WRITTEN, TYPED, XA_LOCAL})


# -- the job ----------------------------------------------------------------------------------

def run_load(spark: Any, settings: Settings, sources: Iterable[str], *,
             run_id: str | None = None, branch: str | None = None,
             reload: bool = False) -> LoadSummary:
    """Load the binlog files named by ``sources`` (see :func:`discover`).

    Files ``files`` already records as loaded with the same sha256 are skipped (``reload``
    decodes them again and replaces what they contributed); a file whose content differs
    from the loaded one is a ``conflict`` and is not touched.  With ``branch``, every table
    is written on that Iceberg branch (write-audit-publish: :func:`publish` makes it main).
    One load at a time: :class:`~binlake.lake.lock.LoadLockedError` when another load holds
    the lake's lock (:mod:`binlake.lake.lock`).
    """
    t0 = time.time()
    run_id = run_id or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:6]
    summary = LoadSummary(run_id, settings.source, branch=branch)
    cleanup = partial(_after_killed, spark, settings, run_id, summary)
    with load_lock(settings, run_id, killed=cleanup), on_branch(spark, branch):
        _run_load(spark, settings, list(sources), run_id, summary, reload)
    summary.seconds = time.time() - t0
    return summary


def _after_killed(spark: Any, settings: Settings, run_id: str, summary: LoadSummary,
                  notes: list[str]) -> None:
    """The loads before this one that did not finish (their lock notes): their uncommitted
    data files go (:mod:`binlake.lake.orphans`); their files are loaded again by this run
    where given, as by any run (a file is marked loaded only once all of it is in)."""
    stage = _stage_root(settings, run_id)
    started = time.time()  # the lock is ours since just now: nothing of this run is written
    for note in notes:
        dead = DeadRun.parse(note)
        if dead is None:
            continue
        removed = remove_orphans(spark, settings, dead, started,
                                 global_lock=lock_is_global(settings),
                                 staging=None if stage is None else os.path.dirname(stage))
        summary.findings.append({
            "kind": "killed_run_cleaned", "severity": "warning", "file": None, "pos": None,
            "source": settings.source,
            "message": f"an earlier load (run {dead.run_id}, source {dead.source}) did not "
                       f"finish; {len(removed)} data file(s) it wrote and never committed "
                       "were removed"})


def _run_load(spark: Any, settings: Settings, sources: list[str], run_id: str,
              summary: LoadSummary, reload: bool) -> None:
    clock = time.time()

    def phase(name: str) -> None:
        nonlocal clock
        now = time.time()
        summary.timings[name] = round(summary.timings.get(name, 0.0) + now - clock, 3)
        clock = now

    everything = discover(sources)
    if not everything:
        ensure_tables(spark, settings)
        return
    sc = spark.sparkContext

    # Two things at once: the catalog (tables created, what is loaded) on the driver, and a
    # survey of every file on the executors (sha256, transaction-aligned ranges, DDL).  A
    # file loaded before with the same bytes is skipped below: its survey is wasted.
    def catalog() -> dict[str, Loaded]:
        ensure_tables(spark, settings)
        return _loaded(spark, settings)

    # A small input (the usual incremental load) is surveyed and decoded here, in the
    # driver's process: no Python workers to start, no task round trips.
    here = _small_input(everything, settings.driver_decode_bytes)
    with ThreadPoolExecutor(max_workers=2) as pool:
        loaded_f = pool.submit(catalog)
        warm_f = pool.submit(_warm_imports)
        if here:
            surveys = {f.name: _survey(f.uri, split_bytes=settings.split_bytes)
                       for f in everything}
        else:
            surveys = dict(zip([f.name for f in everything], sc.parallelize(
                [f.uri for f in everything], max(1, len(everything))).map(
                partial(_survey, split_bytes=settings.split_bytes)).collect()))
        loaded = loaded_f.result()
        warm_f.result()
    summary.in_driver = here
    phase("survey")
    hashes = {name: sv["sha"] for name, sv in surveys.items()}
    split = {name: sv["ranges"] for name, sv in surveys.items()}
    summary.bytes = sum(h[1] for h in hashes.values())

    # What to do with each file: skip it (loaded before, same bytes), refuse it (loaded
    # before, other bytes; or not what the archive recorded), or decode it.
    files: list[BinlogFile] = []
    failed: dict[str, str] = {}
    others: list[dict[str, Any]] = []
    for f in everything:
        sha, size, recorded = hashes[f.name]
        # A file loaded while the server was still writing it (in use) is loaded again
        # when it has grown: what it gave before is replaced.
        if f.name in loaded and not reload and not (loaded[f.name].in_use
                                                    and loaded[f.name].sha256 != sha):
            if loaded[f.name].sha256 == sha:
                others.append({"file": f.name, "seq": f.seq, "status": "skipped",
                               "error": None, "size": size})
            else:
                others.append({"file": f.name, "seq": f.seq, "status": "conflict", "size": size,
                               "error": f"{f.uri}: sha256 {sha} differs from the loaded "
                                        f"file's {loaded[f.name].sha256}: not loaded again"})
            continue
        if recorded is not None and recorded != sha:
            failed[f.name] = (f"{f.uri}: sha256 {sha} differs from the sha256 {recorded} "
                              "recorded when it was archived")
        files.append(f)
    if not files:
        summary.files = others
        summary.pending = _read_pending(spark, settings)
        _summarize(spark, settings, summary, everything)
        return

    # The decode ranges: the survey's fine ranges of the files to decode, joined into about
    # split_bytes each, in full rounds of the cluster's cores.
    todo = [f.name for f in files
            if f.name not in failed and not isinstance(split[f.name], str)]
    split.update(zip(todo, group_ranges([split[n] for n in todo], sc.defaultParallelism,
                                        settings.split_bytes)))
    # Table engines from the DDL before each range (a range alone would not see it): the
    # state the newest earlier loaded file recorded (earlier runs' DDL), then the DDL of
    # every file given, in order.
    splittable = [name for name, rs in split.items() if not isinstance(rs, str)]
    seq_of = {f.name: f.seq for f in everything}
    seed: EngineState = ()
    if splittable:
        seed, seeded_from = engine_seed(loaded, min(seq_of[n] for n in splittable))
        if seeded_from is not None and loaded[seeded_from].engines is None:
            summary.findings.append({
                "kind": "engines_unknown_before_run", "severity": "warning",
                "file": seeded_from, "pos": None, "source": settings.source,
                "message": f"{seeded_from} was loaded by a binlake that did not record its "
                           "table engines: tables made MyISAM/Aria/... by DDL in files loaded "
                           "before this run are taken as transactional (give the earlier "
                           "files again, or set nontransactional)"})
    ddl = [surveys[n]["ddl"] for n in splittable]
    at_starts, at_ends = engine_states(
        ddl, [[r.start for r in split[n]] for n in splittable], seed)
    all_seeds = dict(zip(splittable, at_starts))
    end_engines = dict(zip(splittable, at_ends))
    summary.findings += [dict(f, source=settings.source) for f in engines_unseen(
        {seq_of[n]: (n, end_engines[n]) for n in splittable}, loaded)]
    tasks: list[X.RangeTask] = []
    n_ranges: dict[str, int] = {}
    newest = everything[-1]
    for f in files:
        n_ranges[f.name] = 0
        ranges = split[f.name]
        if f.name in failed:
            continue
        if isinstance(ranges, str):
            failed[f.name] = ranges
            continue
        n_ranges[f.name] = len(ranges)
        for k, r in enumerate(ranges):
            last = k == len(ranges) - 1
            tasks.append(X.RangeTask(f.uri, f.name, f.seq, r.start, r.end, k,
                                     f is newest and last,
                                     tuple(settings.nontransactional), all_seeds[f.name][k],
                                     last_of_file=last, newest=f is newest))
    summary.ranges = len(tasks)
    seqs = sorted({f.seq for f in files})
    # The schema history the files are decoded with: what earlier runs stored, the
    # snapshots, then the DDL of the files given (lake/schemas.py).
    run_history = _run_history(spark, settings, everything, surveys, splittable, seq_of)
    summary.findings += _history_findings(settings, run_history.findings)
    # The typed tables' schemas, from the layouts the survey found in the files to decode
    # (columns named by the history where the binlog has no names): then the decode tasks
    # convert and write the typed changelogs themselves.
    from . import typed

    layouts_seen = S.name_layouts(
        run_history.history,
        [lay for f in files if f.name not in failed for lay in surveys[f.name]["layouts"]],
        {seq_of[n]: surveys[n].get("fde") for n in splittable})
    phase("plan")
    stage_root = _stage_root(settings, run_id)
    prepared = typed.prepare(spark, settings, layouts_seen, run_id, seqs, stage_root)
    phase("typed_prepare")
    try:
        _decode_and_write(spark, settings, run_id, summary, files, tasks, seqs,
                          failed, hashes, n_ranges, prepared, phase, end_engines,
                          _later_loaded(loaded, files), run_history, here)
    finally:
        if stage_root is not None:
            clean_staging(stage_root)
    summary.files = sorted(summary.files + others, key=lambda f: (f["seq"], f["file"]))
    _summarize(spark, settings, summary, everything)


def _small_input(files: list[BinlogFile], limit: int) -> bool:
    """Whether the files hold at most ``limit`` bytes in all (local sizes, S3 HEADs; False
    for more than 64 files, or when a size cannot be read)."""
    if limit <= 0 or len(files) > 64:
        return False
    from ..binlog.source import parse_location, s3_client

    total = 0
    try:
        for f in files:
            loc = parse_location(f.uri)
            if loc.scheme == "s3":
                total += int(s3_client().head_object(Bucket=loc.bucket,
                                                      Key=loc.key)["ContentLength"])
            else:
                total += os.path.getsize(loc.path or f.uri)
            if total > limit:
                return False
    except Exception:  # not readable here: the executors' survey says why
        return False
    return True


def _warm_imports() -> None:
    """Import what the driver needs later in a load (pyiceberg and pyarrow for the data
    files' schemas and the driver's own data files, pandas for Spark's Arrow conversions)
    while it waits for the survey, when the session's own warm-up (``build_session``) has
    not done it yet: about a second less on the load's path."""
    from .spark import WARM_MODULES, warm_imports

    warm_imports((*WARM_MODULES, "binlake.lake.typed", "binlake.lake.typedconv"))


def _run_history(spark: Any, settings: Settings, everything: list[BinlogFile],
                 surveys: dict[str, dict[str, Any]], splittable: list[str],
                 seq_of: dict[str, int]) -> S.RunHistory:
    """The schema history of this run (lake/schemas.py): the stored versions before its
    first file, the configured snapshots, the DDL of its files in order."""
    order = sorted(splittable, key=lambda n: seq_of[n])
    first = seq_of[order[0]] if order else min(f.seq for f in everything)
    last = seq_of[order[-1]] if order else max(f.seq for f in everything)
    snapshots = [S.read_snapshot_file(uri) for uri in settings.schema_snapshots]
    stored, found = S.archived_snapshots(
        [f.uri.rsplit("/", 1)[0] for f in everything if "/" in f.uri], first, last)
    versions, databases = S.stored_history(spark, settings, first)
    out = S.build_run_history(
        versions, snapshots + stored,
        [(n, seq_of[n], surveys[n].get("fde"), surveys[n]["ddl"]) for n in order],
        databases)
    out.findings = found + out.findings
    return out


def _history_findings(settings: Settings, findings: list[Any]) -> list[dict[str, Any]]:
    return [{"kind": f"schema_{f.kind}", "severity": "warning", "file": f.file,
             "pos": f.pos[1] if f.pos else None, "message": f.message,
             "table": f.table, "statement": f.statement, "source": settings.source}
            for f in findings]


def _dedupe(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
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


def _decode_and_write(spark: Any, settings: Settings, run_id: str, summary: LoadSummary,
                      files: list[BinlogFile], tasks: list[X.RangeTask], seqs: list[int], failed: dict[str, str],
                      hashes: dict[str, tuple[str, int, str | None]],
                      n_ranges: dict[str, int], prepared: Any, phase: Any,
                      end_engines: dict[str, EngineState], later_loaded: bool,
                      run_history: S.RunHistory, here: bool = False) -> None:
    from . import typed

    source = settings.source
    sc = spark.sparkContext

    # Decode on the executors; the records come back as Arrow batches and stay in Spark.
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    task_rows = [(t.uri, t.file, t.seq, t.start, t.end, t.index, t.last_in_file,
                  list(t.nontransactional), encode_engines(t.engines), t.last_of_file,
                  t.newest) for t in tasks]
    # Row changes, transactions, statements and XA prepares are written as Parquet by the
    # executors, straight into the tables' data directories; the driver adds the good ones,
    # one commit per table, below.
    sink = _data_sink(spark, settings, run_id,
                      [spec.table for spec in prepared.fast.values()])
    sink.typed = prepared.fast
    phase("sink")
    kind = F.col("kind")
    prep_fields = [c for c in PREP_COLS if c not in ("state", "pks")]
    records = None
    preps: list[dict[str, Any]] = []  # the PREPARE records, when decoded here
    if here:
        # the same decode tasks, run here one after the other (a small input)
        small, preps = _decode_here(task_rows, sink, run_history, prep_fields)
    else:
        tasks_df = spark.createDataFrame(sc.parallelize(task_rows, max(1, len(task_rows))),
                                         TASK_SCHEMA)
        records = tasks_df.mapInArrow(partial(X.decode_tasks_arrow, sink=sink,
                                              history=run_history.history), WIDE_SCHEMA)
        # Decoded once, read twice (the small facts, the XA prepares): cached, in memory
        # while it fits and on disk beyond (Spark's storage memory bounds it).
        records = records.persist(StorageLevel.MEMORY_AND_DISK)
        # One pass for the driver's metadata: per-range facts, XA markers, table layouts,
        # findings, and the PREPAREs without their rows (state, pks).
        # (an XA PREPARE's meta is its metadata: its rows ride apart, see wide_batches)
        small = [(r["kind"], meta_of(r)) for r in records.where(
            kind.isin(*SMALL_KINDS)).select(
            "kind", "meta").collect()]
        preps_df = prepares_frame(records)
    prep_meta = [{c: r.get(c) for c in prep_fields} for k, r in small if k == XA_PREPARE]
    phase("decode")
    ranges_info = [r for k, r in small if k == RANGE]
    for info in ranges_info:
        if info["error"] and info["file"] not in failed:
            failed[info["file"]] = info["error"]
    summary.findings += _dedupe([dict(r, source=source) for k, r in small if k == FINDING])
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

    # Rows and transactions of the good files, plus the XAs decided in this run.
    # The XAs decided in this run get their rows at the COMMIT's position: on the executors,
    # from this run's PREPARE records or the stored ones of earlier runs (the driver only
    # ships the resolutions: positions, no rows).
    run_files = {f.name for f in files}
    if to_decide:
        cols = ["prepare_file", "prepare_pos", "state", "pks"]
        # (their sequence numbers too: the files' prepare_seq statistics rule out the
        # rest of a big lake's prepares)
        wanted = sorted({binlog_file(pf).seq for pf, _ in to_decide})
        if here:  # decided here too, from this run's prepares and the stored ones
            out = _decide_here(spark, settings, preps, set(bad), run_files, to_decide,
                               wanted, sink)
        else:
            res_df = local_frame(
                spark, [(pf, pp, orjson.dumps(r).decode())
                        for (pf, pp), r in to_decide.items()],
                "prepare_file STRING, prepare_pos BIGINT, resolution STRING")
            stored = spark.table(settings.table(XA_PREPARES)).where(
                (F.col("source") == settings.source)
                & ~F.col("prepare_file").isin(sorted(run_files))
                & (F.col("prepare_seq").isin(wanted) if min(wanted) >= 0 else F.lit(True))
            ).select(*cols)
            # their changes and transactions are written by the executors too: in one
            # round of tasks (one per core; not one per decode range and more), each writing
            # its own data files, so that fewer small files are written, read back and
            # committed
            decide = preps_df.where(~F.col("prepare_file").isin(bad)).select(
                *cols).unionByName(stored).join(
                F.broadcast(res_df), ["prepare_file", "prepare_pos"])
            out = [(r["kind"], r["meta"]) for r in decide.coalesce(
                max(1, sc.defaultParallelism)).mapInArrow(
                partial(decide_xa_arrow, sink=sink), WIDE_SCHEMA).where(
                kind.isin(WRITTEN, TYPED)).select("kind", "meta").collect()]
        for k, m in out:
            if k in (WRITTEN, TYPED):
                (to_add if k == WRITTEN else typed_stats).append(orjson.loads(m))
    typed_stats = [r for r in typed_stats if r["file"] not in failed]

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
            S.store_versions(spark, settings, [v for v in run_history.new
                                               if v.start[0] not in {f.seq for f in files
                                                                     if f.name in failed}],
                             seqs, run_id, run_history.history.databases.values())
            if not all(prepared.fast.get((j.db, j.tbl)) is not None
                       for j in prepared.jobs if j.plan is not None):
                wait_records()
            phase("write")
            # Typed per-table changelog and mirror tables (when the binlog names the
            # columns).
            if prepared.jobs:
                summary.typed = typed.fill(
                    spark, settings, prepared, typed_stats,
                    [w for w in to_add if w["table"] not in RECORD_TABLES],
                    lambda table, written: add_data_files(spark, settings, table, written,
                                                          run_id),
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
        altered = apply_alters(spark, settings, run_history.history, prepared.jobs)
        for name, done in altered.items():
            summary.typed["tables"].get(name, {})["altered"] = done
    # TRUNCATE / DROP / CREATE / RENAME TABLE on the mirrors and changelogs (lifecycle.py)
    # (and a mirror built whole in this run, of every such change in the history)
    built = [(name.split(".", 1)[0], name.split(".", 1)[1]) for name, rep in summary.typed.get("tables", {}).items()
             if rep.get("mirror") and rep["mirror"] in rep.get("created", ())]
    life = apply_lifecycle(spark, settings, run_history.history, set(good_seqs),
                           built)
    if life["cleared"] or life["moved"]:
        summary.typed["lifecycle"] = life

    phase("typed")
    # Files last: a file's row says "loaded" only once its data is in.
    file_rows = _file_rows(files, ranges_info, failed, hashes, n_ranges, run_id, source,
                           end_engines)
    _record_files(spark, settings, file_rows, run_id)
    # Derived state last: it needs the files' timestamps (the XA ages).
    summary.pending = _refresh_pending(spark, settings, run_id)
    if records is not None:
        records.unpersist()
    phase("finish")
    summary.files = [{"file": r[1], "seq": r[2], "status": r[19], "error": r[20],
                      "size": r[3]} for r in file_rows]


RECORD_TABLES = (ROW_CHANGES, TRANSACTIONS, STATEMENTS, XA_PREPARES, STREAM_FACTS)


def _decode_here(task_rows: list[tuple[Any, ...]], sink: DataSink, run_history: S.RunHistory,
                 prep_fields: list[str]
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
                rec = {c: rec.get(c) for c in prep_fields}
            small.append((k, rec))
    return small, preps


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


def _summarize(spark: Any, settings: Settings, summary: LoadSummary,
               files: list[BinlogFile]) -> None:
    """Small aggregates of what the lake holds for these files (read on the driver,
    :func:`driver_read.read_rows`; a transaction's ``order_seq`` is its ``end_file``'s
    sequence number, which the data files' statistics keep whole)."""
    from .driver_read import all_of, count_rows, eq, is_in

    src = eq("source", settings.source)
    seqs = is_in("order_seq", [f.seq for f in files])
    txns = count_rows(spark, settings, settings.table(TRANSACTIONS),
                      all_of(src, seqs, is_in("end_file", [f.name for f in files])),
                      ("status",))
    summary.transactions = {k[0]: n for k, n in txns.items()}
    rows = count_rows(spark, settings, settings.table(ROW_CHANGES), all_of(src, seqs),
                      ("db", "tbl"))
    summary.rows = {f"{d}.{t}": n for (d, t), n in rows.items()}


