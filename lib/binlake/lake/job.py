"""The load job: archived binlog files -> Iceberg tables, decoded in parallel on executors.

This module is the job's plan: the driver lists the input files and orders them per source;
one executor task per file surveys it (sha256, transaction-aligned byte ranges from
:mod:`binlake.txn.split`, its DDL and table layouts), while the driver reads what the lake
has loaded; files loaded before with the same bytes are skipped; the survey's ranges are
joined into decode ranges, each with the table engines and the schema history it is decoded
with; then the driver prepares the typed tables (:func:`typed.prepare`).  The steps after
the plan, decode on the executors, resolve (failed files, XA pairing) and land (one commit
per table, typed tables, ``files`` last), are :mod:`binlake.lake.land`'s.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from ..config import Settings
from ..txn.files import BinlogFile
from ..txn.split import group_ranges
from . import extract as X
from . import schemas as S
from .branch import on_branch
from .discover import _survey, discover, survey_task
from .land import decode_and_land
from .loaded import Loaded, _later_loaded, _loaded, engine_seed, engines_unseen
from .lock import load_lock, lock_is_global
from .orphans import DeadRun, remove_orphans
from .staging import _stage_root, clean_staging, local_master
from .summary import LoadSummary
from .survey import EngineState, engine_states
from .tables import (
    ROW_CHANGES,
    TRANSACTIONS,
    ensure_tables,
)
from .xa import _read_pending

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
    summary.findings.extend(after_killed(spark, settings, run_id, notes))


def after_killed(spark: Any, settings: Settings, run_id: str, notes: list[str]
                 ) -> list[dict[str, Any]]:
    """Remove what the runs of the lock's ``notes`` (loads or maintenances that did not
    finish) wrote and never committed; a ``killed_run_cleaned`` finding for each."""
    stage = _stage_root(settings, run_id, local_master(spark))
    started = time.time()  # the lock is ours since just now: nothing of this run is written
    findings = []
    for note in notes:
        dead = DeadRun.parse(note)
        if dead is None:
            continue
        removed = remove_orphans(spark, settings, dead, started,
                                 global_lock=lock_is_global(settings),
                                 staging=None if stage is None else os.path.dirname(stage))
        findings.append({
            "kind": "killed_run_cleaned", "severity": "warning", "file": None, "pos": None,
            "source": settings.source,
            "message": f"an earlier load (run {dead.run_id}, source {dead.source}) did not "
                       f"finish; {len(removed)} file(s) it wrote and never committed "
                       "were removed"})
    return findings


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
            # a task per file, but at most four rounds of the cores: many small files (a
            # server that rotates often) several to a task, a task having a cost of its own
            slices = min(len(everything), 4 * max(1, sc.defaultParallelism))
            surveys = dict(zip([f.name for f in everything], sc.parallelize(
                [f.uri for f in everything], slices).map(
                partial(survey_task, split_bytes=settings.split_bytes)).collect()))
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
    # (a file loaded before with other bytes is not loaded: its stored versions stay)
    run_history.keep = {o["seq"] for o in others if o["status"] == "conflict"}
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
    stage_root = _stage_root(settings, run_id, local_master(spark))
    prepared = typed.prepare(spark, settings, layouts_seen, run_id, seqs, stage_root)
    phase("typed_prepare")
    try:
        decode_and_land(spark, settings, run_id, summary, files, tasks, seqs,
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
    first file and of loaded files between its files, the configured snapshots, the DDL of
    its files in order."""
    order = sorted(splittable, key=lambda n: seq_of[n])
    first = seq_of[order[0]] if order else min(f.seq for f in everything)
    last = seq_of[order[-1]] if order else max(f.seq for f in everything)
    snapshots = [S.read_snapshot_file(uri) for uri in settings.schema_snapshots]
    stored, found = S.archived_snapshots(
        [f.uri.rsplit("/", 1)[0] for f in everything if "/" in f.uri], first, last)
    versions, databases = S.stored_history(spark, settings, {seq_of[n] for n in order}
                                           or {first})
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


