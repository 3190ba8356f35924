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
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ..binlog.errors import BinlogError
from ..binlog.source import HashTap, parse_location, s3_client
from ..config import Settings
from ..txn.build import assign_order
from ..txn.files import BinlogFile, binlog_file, order_files
from ..txn.model import XA_COMMITTED, XA_ROLLED_BACK, Part, XaXid
from ..txn.spill import undo_changes
from ..txn.split import group_ranges, split_file
from ..txn.xa import load_pending
from . import extract as X
from . import schemas as S
from .alters import apply_alters
from .commit import add_data_files, append_rows, remove_files, table_out
from .lifecycle import apply_lifecycle, last_points
from .lock import load_lock, lock_is_global
from .nopk import fill_nopk_mirrors
from .orphans import DeadRun, remove_orphans
from .tables import (
    FILES,
    ROW_CHANGES,
    STATEMENTS,
    STREAM_FACTS,
    TRANSACTIONS,
    XA_PENDING,
    XA_PREPARES,
    delete_where,
    ensure_tables,
    has_snapshots,
    may_match,
)

CHANGE_COLS = [n for n, _ in X.CHANGE_FIELDS]  # a change_tuple's fields
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
PREP_SCHEMA = ("xa_format_id INT, xa_gtrid STRING, xa_bqual STRING, prepare_seq INT, "
               "prepare_pos BIGINT, prepare_end_pos BIGINT, prepare_file STRING, "
               "prepare_gtid STRING, prepared_ts BIGINT, rows BIGINT, state STRING, pks STRING")


@dataclass
class LoadSummary:
    run_id: str
    source: str
    files: list[dict[str, Any]] = field(default_factory=list)
    transactions: dict[str, int] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    pending: list[dict[str, Any]] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    bytes: int = 0
    ranges: int = 0
    typed: dict[str, Any] = field(default_factory=dict)  # typed tables' report
    branch: str | None = None  # the Iceberg branch written (write-audit-publish), or None
    timings: dict[str, float] = field(default_factory=dict)  # seconds per phase
    # XAs prepared in this run's files and decided at a COMMIT/ROLLBACK a run before it
    # stored (a backfill behind loaded files): their transactions end in a file outside
    # this run, so ``transactions`` and ``rows`` do not count them
    xa_decided_late: list[dict[str, Any]] = field(default_factory=list)

    @property
    def failed(self) -> list[dict[str, Any]]:
        """Files that did not land: ``failed`` (damaged, or not what was archived) and
        ``conflict`` (loaded before with other content)."""
        return [f for f in self.files if f["status"] in ("failed", "conflict")]

    @property
    def loaded(self) -> list[dict[str, Any]]:
        return [f for f in self.files if f["status"] == "loaded"]

    @property
    def skipped(self) -> list[dict[str, Any]]:
        """Files loaded by an earlier run with the same sha256: not decoded again."""
        return [f for f in self.files if f["status"] == "skipped"]

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "source": self.source, "files": self.files,
                "transactions": self.transactions, "rows": self.rows, "pending": self.pending,
                "findings": self.findings, "seconds": self.seconds, "bytes": self.bytes,
                "ranges": self.ranges, "typed": self.typed, "branch": self.branch,
                "timings": self.timings, "xa_decided_late": self.xa_decided_late}


# -- discovering input ------------------------------------------------------------------------

def discover(sources: Iterable[str]) -> list[BinlogFile]:
    """Files, directories (their binlog files; ``*.index`` skipped) and ``s3://`` URIs (an
    object, or every object under a prefix ending with ``/``), in server order."""
    uris: list[str] = []
    for src in sources:
        loc = parse_location(src)
        if loc.scheme == "s3":
            if src.endswith("/"):
                paginator = s3_client().get_paginator("list_objects_v2")
                for page in paginator.paginate(Bucket=loc.bucket, Prefix=loc.key):
                    for obj in page.get("Contents", []):
                        key = obj["Key"]
                        if not key.endswith((".index", "/")) and binlog_file(key).seq >= 0:
                            uris.append(f"s3://{loc.bucket}/{key}")
            else:
                uris.append(src)
        elif loc.path and os.path.isdir(loc.path):
            for name in sorted(os.listdir(loc.path)):
                full = os.path.join(loc.path, name)
                if os.path.isfile(full) and not name.endswith(".index") \
                        and binlog_file(full).seq >= 0:
                    uris.append(full)
        else:
            uris.append(src)
    return order_files(uris)


def _sha256(uri: str, tap: HashTap | None = None) -> tuple[str, int, str | None]:
    """sha256 and size of the stored object, and the sha256 recorded when it was archived
    (None when nothing was recorded).  ``tap``: what a scan of the file already hashed (the
    rest is read here).  Runs on an executor."""
    from ..archive.objectstore import recorded_sha256

    sha, size = (tap or HashTap()).finish(uri)
    return sha, size, recorded_sha256(uri)


# The survey cuts files into ranges this many times finer than ``split_bytes``; the driver
# joins them into the decode ranges (txn.split.group_ranges), as many as the cores can take
# in full rounds.
FINE_SPLIT = 8


def _survey(uri: str, split_bytes: int) -> dict[str, Any]:
    """What the driver needs of one file before decoding it, read on an executor: its sha256,
    size and archived sha256 (:func:`_sha256`), its transaction-aligned ranges of about
    ``split_bytes / FINE_SPLIT`` (or why it cannot be split), its DDL statements and its
    table layouts (:func:`extract.survey_scan`)."""
    fine = max(1, split_bytes // FINE_SPLIT)
    try:
        ranges: list[Any] | str = split_file(uri, target_bytes=fine,
                                             min_bytes=min(1 << 20, fine))
    except BinlogError as exc:
        ranges = str(exc)
    ddl: list[X.DdlEvent] = []
    layouts: list[dict[str, Any]] = []
    fde: dict[str, Any] = {}
    tap = HashTap()  # the scan reads every byte: the sha256 comes from the same read
    if not isinstance(ranges, str):
        ddl, layouts = X.survey_scan(uri, binlog_file(uri).seq, tap, fde)
    sha, size, recorded = _sha256(uri, tap)
    return {"sha": (sha, size, recorded), "ranges": ranges, "ddl": ddl, "layouts": layouts,
            "fde": fde}


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


@contextmanager
def on_branch(spark: Any, branch: str | None) -> Iterator[None]:
    """Within: Iceberg reads and writes go to ``branch`` (``spark.wap.branch``; created from
    main by the first write).  Without a branch: main."""
    if branch is None:
        yield
        return
    check_branch_name(branch)
    key = "spark.wap.branch"
    before = spark.conf.get(key, None)
    spark.conf.set(key, branch)
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def check_branch_name(branch: str) -> None:
    import re

    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}", branch) or branch == "main":
        raise ValueError(f"bad branch name {branch!r}: letters, digits, _ . - only, not main")


@dataclass(frozen=True)
class Loaded:
    """What ``files`` records of a file loaded before: its sha256, whether the server was
    still writing it, its sequence number and the table engines its DDL left (None: loaded
    by a binlake that did not record them)."""

    sha256: str | None
    in_use: bool
    seq: int | None
    engines: X.EngineState | None


def _loaded(spark: Any, settings: Settings) -> dict[str, Loaded]:
    """file name -> :class:`Loaded`, for the files recorded as loaded for this source."""
    return {r[0]: Loaded(r[1], bool(r[2]), r[3], None if r[4] is None else X.decode_engines(r[4]))
            for r in spark.table(settings.table(FILES)).where(
                f"source = '{_q(settings.source)}' AND status = 'loaded'").select(
                "file", "sha256", "in_use", "seq", "engines").collect()}


def engine_seed(loaded: dict[str, Loaded], first_seq: int
                ) -> tuple[X.EngineState, str | None]:
    """The table engines the DDL of earlier runs' files left before file ``first_seq``: the
    state recorded with the newest loaded file before it (and that file's name), or nothing
    when there is none or it recorded none."""
    before = [(info.seq, name, info.engines) for name, info in loaded.items()
              if info.seq is not None and info.seq < first_seq]
    if not before:
        return (), None
    _, name, engines = max(before)
    return (engines or ()), name


def engines_unseen(ends: dict[int, tuple[str, X.EngineState]], loaded: dict[str, Loaded]
                   ) -> list[dict[str, Any]]:
    """Warnings for a backfill: the files of this run (``ends``: seq -> (name, the engine
    state its DDL left)) that are followed by a file loaded in an earlier run (not in this
    one), where a table this run's DDL made non-transactional is unknown to the state that
    later file recorded.  Its rows were derived taking that table as transactional (its
    seed could not see this run's DDL): reloading it re-derives them."""
    later = sorted((info.seq, name, info.engines) for name, info in loaded.items()
                   if info.seq is not None and info.seq not in ends
                   and info.engines is not None)
    out = []
    for seq, name, recorded in later:
        before = [s for s in ends if s < seq]
        if not before:
            continue
        last = max(before)
        if any(last < s < seq for s, _, _ in later):
            continue  # another loaded file lies between: it is the one that saw the state
        known = {t for t, _ in recorded or ()}
        unseen = sorted(t for t, tx in ends[last][1] if not tx and t not in known)
        if unseen:
            out.append({"kind": "engines_unseen_by_loaded_file", "severity": "warning",
                        "file": name, "pos": None,
                        "message": f"{name} was loaded before {ends[last][0]}, whose DDL makes "
                                   f"{', '.join(unseen)} non-transactional: its rows took "
                                   f"them as transactional; load {name} again with --reload"})
    return out


def _later_loaded(loaded: dict[str, Loaded], files: list[BinlogFile]) -> bool:
    """Whether a file after the first of ``files`` was loaded before and is not loaded
    again now (this run is a backfill behind it)."""
    first = min(f.seq for f in files)
    names = {f.name for f in files}
    return any(info.seq is not None and info.seq > first and name not in names
               for name, info in loaded.items())


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

    with ThreadPoolExecutor(max_workers=2) as pool:
        loaded_f = pool.submit(catalog)
        warm_f = pool.submit(_warm_imports)
        surveys = dict(zip([f.name for f in everything], sc.parallelize(
            [f.uri for f in everything], max(1, len(everything))).map(
            partial(_survey, split_bytes=settings.split_bytes)).collect()))
        loaded = loaded_f.result()
        warm_f.result()
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
    seed: X.EngineState = ()
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
    at_starts, at_ends = X.engine_states(
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
                          _later_loaded(loaded, files), run_history)
    finally:
        if stage_root is not None:
            clean_staging(stage_root)
    summary.files = sorted(summary.files + others, key=lambda f: (f["seq"], f["file"]))
    _summarize(spark, settings, summary, everything)


def _warm_imports() -> None:
    """Import what the driver needs later in a load (pyiceberg and pyarrow for the data
    files' schemas and the driver's own data files, pandas for Spark's Arrow conversions)
    while it waits for the survey: about a second less on the load's path."""
    import contextlib
    import importlib

    for name in ("pandas", "pyarrow.parquet", "pyiceberg.schema", "pyiceberg.io.pyarrow",
                 "pyspark.sql.pandas.types", "binlake.lake.typed", "binlake.lake.typedconv"):
        # a missing one is imported (and reported) where it is needed, if ever
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


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


def _stage_root(settings: Settings, run_id: str) -> str | None:
    """A directory for this run's staged mirror deltas (removed after the run), under a
    local warehouse; None when the warehouse is not local (Spark reads no s3 here)."""
    wh = settings.warehouse_resolved
    if wh.startswith("file:"):
        path = wh[len("file:"):]
        while path.startswith("//"):
            path = path[1:]
    elif "://" in wh:
        return None
    else:
        path = wh
    return os.path.join(path, "_binlake_staging", f"{run_id}-{uuid.uuid4().hex[:8]}")


# A staging directory nothing has written to for this long is a killed run's: removed.
STAGE_MAX_AGE = 2 * 86400.0


def clean_staging(stage_root: str, now: float | None = None) -> list[str]:
    """Remove this run's staging directory, the ones killed runs left next to it (nothing
    in them written for ``STAGE_MAX_AGE`` seconds: a live run writes there while it
    decodes) and their parent when that leaves it empty.  Best effort; returns the
    directories removed besides this run's."""
    import contextlib
    import shutil

    shutil.rmtree(stage_root, ignore_errors=True)
    parent = os.path.dirname(stage_root.rstrip("/"))
    now = time.time() if now is None else now
    removed: list[str] = []
    try:
        siblings = os.listdir(parent)
    except OSError:
        return removed
    for name in siblings:
        path = os.path.join(parent, name)
        try:
            newest = max([os.path.getmtime(path)] + [
                os.path.getmtime(os.path.join(d, f))
                for d, dirs, files in os.walk(path) for f in (*dirs, *files)])
        except OSError:
            continue
        if now - newest > STAGE_MAX_AGE:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    with contextlib.suppress(OSError):
        os.rmdir(parent)  # only when empty
    return removed


def _decode_and_write(spark: Any, settings: Settings, run_id: str, summary: LoadSummary,
                      files: list[BinlogFile], tasks: list[X.RangeTask], seqs: list[int], failed: dict[str, str],
                      hashes: dict[str, tuple[str, int, str | None]],
                      n_ranges: dict[str, int], prepared: Any, phase: Any,
                      end_engines: dict[str, X.EngineState], later_loaded: bool,
                      run_history: S.RunHistory) -> None:
    from . import typed

    source = settings.source
    sc = spark.sparkContext

    # Decode on the executors; the records come back as Arrow batches and stay in Spark.
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    task_rows = [(t.uri, t.file, t.seq, t.start, t.end, t.index, t.last_in_file,
                  list(t.nontransactional), X.encode_engines(t.engines), t.last_of_file,
                  t.newest) for t in tasks]
    tasks_df = spark.createDataFrame(sc.parallelize(task_rows, max(1, len(task_rows))),
                                     X.TASK_SCHEMA)
    # Row changes, transactions, statements and XA prepares are written as Parquet by the
    # executors, straight into the tables' data directories; the driver adds the good ones,
    # one commit per table, below.
    sink = _data_sink(spark, settings, run_id,
                      [spec.table for spec in prepared.fast.values()])
    sink.typed = prepared.fast
    phase("sink")
    records = tasks_df.mapInArrow(partial(X.decode_tasks_arrow, sink=sink,
                                          history=run_history.history), X.WIDE_SCHEMA)
    # Decoded once, read twice (the small facts, the XA prepares): cached, in memory while
    # it fits and on disk beyond (Spark's storage memory bounds it).
    records = records.persist(StorageLevel.MEMORY_AND_DISK)
    kind = F.col("kind")
    # One pass for the driver's metadata: per-range facts, XA markers, table layouts,
    # findings, and the PREPAREs without their rows (state, pks).
    prep_fields = [c for c in PREP_COLS if c not in ("state", "pks")]
    small = [(r["kind"], X.meta_of(r)) for r in records.where(
        kind.isin(X.RANGE, X.XA_END, X.FINDING, X.XA_PREPARE, X.WRITTEN, X.TYPED)).select(
        "kind", "meta", F.from_json("meta", PREP_SCHEMA).alias("p")).select(
        "kind", F.when(kind == X.XA_PREPARE, F.to_json(F.struct(
            *[F.col(f"p.{c}") for c in prep_fields]))).otherwise(F.col("meta")).alias("meta"))
        .collect()]
    prep_meta = [{c: r.get(c) for c in prep_fields} for k, r in small if k == X.XA_PREPARE]
    phase("decode")
    ranges_info = [r for k, r in small if k == X.RANGE]
    for info in ranges_info:
        if info["error"] and info["file"] not in failed:
            failed[info["file"]] = info["error"]
    summary.findings += _dedupe([dict(r, source=source) for k, r in small if k == X.FINDING])
    typed_stats = [r for k, r in small if k == X.TYPED]
    bad = sorted(failed)
    written = [r for k, r in small if k == X.WRITTEN]
    # a failed file lands nothing but its stream facts: validation reports its damage
    to_add = [w for w in written if w["file"] not in failed or w["table"] == STREAM_FACTS]
    remove_files([w["path"] for w in written
                  if w["file"] in failed and w["table"] != STREAM_FACTS])

    # XA pairing (driver; metadata only).
    resolutions, orphan_txns, xa_findings, late = _pair_xa(
        spark, settings, files, set(bad), prep_meta, [r for k, r in small if k == X.XA_END],
        later_loaded)
    summary.findings += xa_findings
    summary.xa_decided_late = [
        {"xid": str(XaXid(*r["xid"])), "prepare_file": pf, "prepare_pos": pp,
         "status": XA_COMMITTED if r["commit"] else XA_ROLLED_BACK,
         "end_file": r["part"]["file"], "end_pos": r["part"]["end_pos"]}
        for (pf, pp), r in sorted(resolutions.items()) if r.get("late")]

    # Rows and transactions of the good files, plus the XAs decided in this run.
    meta = F.col("meta")
    preps_df = records.where(kind == X.XA_PREPARE).select(
        F.from_json(meta, PREP_SCHEMA).alias("r")).select("r.*") \
        .where(~F.col("prepare_file").isin(bad))
    # The XAs decided in this run get their rows at the COMMIT's position: on the executors,
    # from this run's PREPARE records or the stored ones of earlier runs (the driver only
    # ships the resolutions: positions, no rows).
    run_files = {f.name for f in files}
    if resolutions:
        import orjson

        res_df = spark.createDataFrame(
            [(pf, pp, orjson.dumps(r).decode()) for (pf, pp), r in resolutions.items()],
            "prepare_file STRING, prepare_pos BIGINT, resolution STRING")
        cols = ["prepare_file", "prepare_pos", "state", "pks"]
        stored = spark.table(settings.table(XA_PREPARES)).where(
            (F.col("source") == settings.source)
            & ~F.col("prepare_file").isin(sorted(run_files))).select(*cols)
        # their changes and transactions are written by the executors too: in one round
        # of tasks (one per core; not one per decode range and more), each writing its own
        # data files, so that fewer small files are written, read back and committed
        for r in preps_df.select(*cols).unionByName(stored).join(
                F.broadcast(res_df), ["prepare_file", "prepare_pos"]).coalesce(
                max(1, sc.defaultParallelism)).mapInArrow(
                partial(decide_xa_arrow, sink=sink), X.WIDE_SCHEMA).where(
                kind.isin(X.WRITTEN, X.TYPED)).select("kind", "meta").collect():
            (to_add if r["kind"] == X.WRITTEN else typed_stats).append(X.meta_of(r))
    typed_stats = [r for r in typed_stats if r["file"] not in failed]

    # What these files contributed before (a run killed halfway, or ``reload``) goes first:
    # then plain appends (the executors' data files), no joins against the growing tables.
    in_seqs = ",".join(str(n) for n in seqs)
    for table, where in ((ROW_CHANGES, f"order_seq IN ({in_seqs})"),
                         (TRANSACTIONS, f"order_seq IN ({in_seqs})"),
                         # (file, pos) is unique: a statement is in one range, emitted once
                         (STATEMENTS, f"file IN ({_in([f.name for f in files])})"),
                         (XA_PREPARES, f"prepare_seq IN ({in_seqs})"),
                         # (seq too: file names' column statistics are cut to 16
                         # characters, so the file alone rules out no data file)
                         (STREAM_FACTS, f"seq IN ({in_seqs}) AND "
                                        f"file IN ({_in([f.name for f in files])})")):
        # One table after the other (each a delete and an append).
        if table == TRANSACTIONS and late:
            # XA decisions stored without their PREPARE, decided in this run (a backfill)
            where += " OR (kind = 'xa' AND prepare_file IS NULL AND (" + " OR ".join(
                f"(end_file = '{_q(f)}' AND begin_pos = {int(p)})" for f, p in late) + "))"
        delete_where(spark, settings.table(table), f"source = '{_q(source)}' AND ({where})")
        add = [w for w in to_add if w["table"] == table]
        if add:
            add_data_files(spark, settings, table, add, run_id)
    if orphan_txns:  # XA COMMITs whose PREPARE is nowhere: a few rows, from the driver
        txns = spark.createDataFrame([tuple(t[c] for c in TXN_COLS) for t in orphan_txns],
                                     TXN_SCHEMA)
        _shape(spark, settings, settings.table(TRANSACTIONS), txns, run_id,
               {"commit_ts": "timestamp_micros(commit_us)"}, drop=["commit_us"]
               ).writeTo(settings.table(TRANSACTIONS)).append()

    # The schema versions that start in these files (a rerun replaces its own).
    good_seqs = [f.seq for f in files if f.name not in failed]
    S.store_versions(spark, settings, [v for v in run_history.new
                                       if v.start[0] not in {f.seq for f in files
                                                             if f.name in failed}],
                     seqs, run_id, run_history.history.databases.values())
    phase("write")
    # Typed per-table changelog and mirror tables (when the binlog names the columns).
    if prepared.jobs:
        summary.typed = typed.fill(
            spark, settings, prepared, typed_stats,
            [w for w in to_add if w["table"] not in RECORD_TABLES],
            lambda table, written: add_data_files(spark, settings, table, written, run_id),
            run_id)
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
    records.unpersist()
    phase("finish")
    summary.files = [{"file": r[1], "seq": r[2], "status": r[19], "error": r[20],
                      "size": r[3]} for r in file_rows]


RECORD_TABLES = (ROW_CHANGES, TRANSACTIONS, STATEMENTS, XA_PREPARES, STREAM_FACTS)


def _data_sink(spark: Any, settings: Settings, run_id: str,
               more: list[str] = []) -> X.DataSink:  # noqa: B006 (never changed)
    """Where the executors write this run's data files of the record tables (each table's
    data directory, as the catalog knows it), and of the tables named in ``more`` (full
    names: the typed changelogs), the Arrow schemas they write (Iceberg field ids included)
    and the partition fields.  Read through Spark's own catalog, so every catalog type
    Spark is configured for works."""
    out = {table: table_out(spark, table if table in more else settings.table(table))
           for table in (*RECORD_TABLES, *more)}
    return X.DataSink(out, settings.source, run_id, settings.s3_endpoint_url,
                      attempt=uuid.uuid4().hex[:8], flush_bytes=settings.flush_bytes)


def _summarize(spark: Any, settings: Settings, summary: LoadSummary,
               files: list[BinlogFile]) -> None:
    """Small aggregates of what the lake holds for these files."""
    src = _q(settings.source)
    queries = [
        f"SELECT status, count(*) n FROM {settings.table(TRANSACTIONS)} WHERE source = "
        f"'{src}' AND end_file IN ({_in([f.name for f in files])}) GROUP BY status",
        f"SELECT concat(db, '.', tbl) t, count(*) n FROM {settings.table(ROW_CHANGES)} "
        f"WHERE source = '{src}' AND order_seq IN "
        f"({','.join(str(f.seq) for f in files)}) GROUP BY db, tbl"]
    # two small jobs at once (each keeps a core busy for a moment)
    with ThreadPoolExecutor(max_workers=2) as pool:
        stats, rows = pool.map(lambda sql: spark.sql(sql).collect(), queries)
    summary.transactions = {r["status"]: r["n"] for r in stats}
    summary.rows = {r["t"]: r["n"] for r in rows}


def _read_pending(spark: Any, settings: Settings) -> list[dict[str, Any]]:
    return [r.asDict() for r in spark.table(settings.table(XA_PENDING))
            .where(f"source = '{_q(settings.source)}'")
            .orderBy("prepare_seq", "prepare_pos").collect()]


def _shape(spark: Any, settings: Settings, target: str, df: Any, run_id: str,
           derived: dict[str, str], drop: list[str]) -> Any:
    from pyspark.sql import functions as F

    df = df.withColumn("source", F.lit(settings.source)).withColumn("run_id", F.lit(run_id))
    for col, expr in derived.items():
        df = df.withColumn(col, F.expr(expr))
    for col in drop:
        df = df.drop(col)
    cols = [f.name for f in spark.table(target).schema.fields]
    return df.select(*cols)


def _q(s: str) -> str:
    return s.replace("'", "''")


def _in(names: list[str]) -> str:
    return ",".join(f"'{_q(n)}'" for n in names) or "''"


def _merge(spark: Any, settings: Settings, table: str, df: Any, keys: list[str], run_id: str,
           derived: dict[str, str], drop: list[str], update: bool = False) -> None:
    """MERGE df into the table on (source, *keys): insert missing rows (update matched ones
    when ``update``).  Idempotent by construction."""
    target = settings.table(table)
    view = f"binlake_src_{table}"
    _shape(spark, settings, target, df, run_id, derived, drop).createOrReplaceTempView(view)
    on = " AND ".join(f"t.{k} = s.{k}" for k in ["source", *keys])
    sql = f"MERGE INTO {target} t USING {view} s ON {on} "
    if update:
        sql += "WHEN MATCHED THEN UPDATE SET * "
    sql += "WHEN NOT MATCHED THEN INSERT *"
    spark.sql(sql)


def _earlier_pending(spark: Any, settings: Settings, before_seq: int,
                     run_files: set[str]) -> list[dict[str, Any]]:
    """XAs prepared before ``before_seq`` and not decided before it (metadata only)."""
    src = _q(settings.source)
    rows = spark.sql(f"""
        SELECT p.xa_format_id, p.xa_gtrid, p.xa_bqual, p.prepare_seq, p.prepare_pos,
               p.prepare_end_pos, p.prepare_file, p.prepare_gtid, p.rows
        FROM {settings.table(XA_PREPARES)} p
        LEFT ANTI JOIN (SELECT prepare_file, prepare_pos FROM {settings.table(TRANSACTIONS)}
                        WHERE source = '{src}' AND kind = 'xa' AND prepare_file IS NOT NULL
                          AND order_seq < {before_seq}) d
          ON p.prepare_file = d.prepare_file AND p.prepare_pos = d.prepare_pos
        WHERE p.source = '{src}' AND p.prepare_seq < {before_seq}
        ORDER BY p.prepare_seq, p.prepare_pos""").collect()
    return [r.asDict() for r in rows if r["prepare_file"] not in run_files]


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


def decide_xa_arrow(batches: Any, sink: X.DataSink) -> Any:
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
            for kind, rec in _decide_xa(row, res):
                records.append((kind, tuple(rec[c] for c in CHANGE_COLS)
                                if kind == X.CHANGE else rec))
        yield from X.wide_batches(sink.write_records(f"{tag}-{n}", "", records))


def _decide_xa(prep: dict[str, Any], resolutions: dict[tuple[str, int], dict[str, Any]]
               ) -> Iterator[tuple[str, dict[str, Any]]]:
    """A prepare group decided in this run: its transaction and (if committed) its rows at
    the COMMIT's order position (runs on an executor)."""
    import orjson

    res = resolutions.get((prep["prepare_file"], prep["prepare_pos"]))
    if res is None:
        return
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
    yield X.TXN, X.txn_record(txn)
    pks = orjson.loads(prep.get("pks") or "{}")
    for c in txn.changes:
        if c.applied:
            yield X.CHANGE, X.change_record(txn, c, pks.get(f"{c.db}.{c.table}"))


def _refresh_pending(spark: Any, settings: Settings, run_id: str) -> list[dict[str, Any]]:
    """xa_pending := every stored prepare group not decided by any stored transaction, as of
    the newest loaded file (derived state: the same whatever order runs came in)."""
    src = _q(settings.source)
    df = spark.sql(f"""
        SELECT p.source, p.xa_format_id, p.xa_gtrid, p.xa_bqual, p.prepare_seq, p.prepare_pos,
               p.prepare_file, p.prepare_gtid, p.prepared_ts,
               CAST(unix_timestamp(f.newest) - unix_timestamp(p.prepared_ts) AS DOUBLE)
                 AS age_seconds,
               p.rows, f.newest_file AS as_of_file, '{run_id}' AS run_id
        FROM {settings.table(XA_PREPARES)} p
        LEFT ANTI JOIN (SELECT prepare_file, prepare_pos FROM {settings.table(TRANSACTIONS)}
                        WHERE source = '{src}' AND kind = 'xa' AND prepare_file IS NOT NULL) d
          ON p.prepare_file = d.prepare_file AND p.prepare_pos = d.prepare_pos
        CROSS JOIN (SELECT max(last_ts) AS newest, max_by(file, seq) AS newest_file
                    FROM {settings.table(FILES)} WHERE source = '{src}') f
        WHERE p.source = '{src}'""")
    from pyspark.sql import functions as F

    # overwrite(condition), not overwritePartitions(): an empty result must clear the source
    df.writeTo(settings.table(XA_PENDING)).overwrite(F.col("source") == settings.source)
    return _read_pending(spark, settings)


FILE_SCHEMA = ("source STRING, file STRING, seq INT, size BIGINT, sha256 STRING, uri STRING, "
               "server_version STRING, flavor STRING, checksum_alg STRING, in_use BOOLEAN, "
               "closed_cleanly BOOLEAN, first_ts BIGINT, last_ts BIGINT, first_gtid STRING, "
               "last_gtid STRING, events BIGINT, transactions BIGINT, row_changes BIGINT, "
               "ranges INT, status STRING, error STRING, error_offset BIGINT, run_id STRING, "
               "loaded_at TIMESTAMP, engines ARRAY<STRING>")


def _record_files(spark: Any, settings: Settings, file_rows: list[tuple[Any, ...]],
                  run_id: str) -> None:
    """Write the run's ``files`` rows (:func:`_file_rows`) in one commit: a MERGE on
    ``(source, file)`` (a file seen before gets its row replaced); when no data file of
    ``files`` can hold a row of these files (Iceberg's metadata, :func:`tables.may_match`:
    new files, the usual case), an append of the rows written by the driver instead (the
    same rows, no Spark job)."""
    table = settings.table(FILES)
    names = [c.split()[0] for c in FILE_SCHEMA.split(", ")]
    # a file's row has the file's sequence number (from its name), which the column
    # statistics keep whole (a name's are cut to 16 characters: no use between
    # mariadb-bin.000001 and .000009); NULL too, as an older binlake might have left it
    seqs = sorted({int(r[names.index("seq")]) for r in file_rows})
    cond = (f"source = '{_q(settings.source)}' AND file IN "
            f"({_in(sorted({r[names.index('file')] for r in file_rows}))}) AND "
            f"(seq IN ({', '.join(map(str, seqs))}) OR seq IS NULL)")
    if has_snapshots(spark, table) and may_match(spark, table, cond):
        fdf = spark.createDataFrame(file_rows, FILE_SCHEMA)
        _merge(spark, settings, FILES, fdf, ["file"], run_id,
               {"first_ts": "timestamp_seconds(first_ts)",
                "last_ts": "timestamp_seconds(last_ts)",
                "loaded_at": "current_timestamp()"}, drop=[], update=True)
        return
    now = int(time.time() * 1_000_000)
    rows = []
    for r in file_rows:
        row = dict(zip(names, r))
        for col in ("first_ts", "last_ts"):  # epoch seconds -> microseconds
            row[col] = None if row[col] is None else int(row[col]) * 1_000_000
        row["loaded_at"] = now
        rows.append(row)
    append_rows(spark, settings, FILES, rows, run_id)


def _file_rows(files: list[BinlogFile], ranges_info: list[dict[str, Any]],
               failed: dict[str, str], hashes: dict[str, tuple[str, int, str | None]],
               n_ranges: dict[str, int], run_id: str, source: str,
               end_engines: dict[str, X.EngineState]) -> list[tuple[Any, ...]]:
    """The ``files`` rows of this run's files; ``engines`` is what the DDL up to the end of
    a loaded file says of table engines (the next run's seed), None for a failed file."""
    by_file: dict[str, list[dict[str, Any]]] = {}
    for info in ranges_info:
        by_file.setdefault(info["file"], []).append(info)
    rows = []
    for f in files:
        infos = sorted(by_file.get(f.name, []), key=lambda i: i["index"])
        fde = next((i["fde"] for i in infos if i.get("fde")), None) or {}
        first_ts = next((i["first_ts"] for i in infos if i["first_ts"]), None)
        last_ts = next((i["last_ts"] for i in reversed(infos) if i["last_ts"]), None)
        first_gtid = next((i["first_gtid"] for i in infos if i["first_gtid"]), None)
        last_gtid = next((i["last_gtid"] for i in reversed(infos) if i["last_gtid"]), None)
        err_offset = next((i["error_offset"] for i in infos if i["error"]), None)
        ends_with = infos[-1]["ends_with"] if infos else None
        in_use = fde.get("in_use")
        sha, size, _ = hashes.get(f.name, (None, None, None))
        status = "failed" if f.name in failed else "loaded"
        rows.append((source, f.name, f.seq, size, sha, f.uri, fde.get("server_version"),
                     fde.get("flavor"), fde.get("checksum_alg"), in_use,
                     bool(in_use is False and ends_with in ("ROTATE", "STOP")),
                     first_ts, last_ts, first_gtid, last_gtid,
                     sum(i["events"] for i in infos), sum(i["transactions"] for i in infos),
                     sum(i["rows"] for i in infos), n_ranges.get(f.name, 0), status,
                     failed.get(f.name), err_offset, run_id, None,
                     None if status == "failed" or f.name not in end_engines
                     else X.encode_engines(end_engines[f.name])))
    return rows


def summary_text(s: LoadSummary) -> str:
    lines = [f"binlake load {s.run_id} (source {s.source}): {len(s.files)} file(s), "
             f"{s.bytes / 1e6:.1f} MB in {s.ranges} range(s), {s.seconds:.1f} s"]
    if s.branch:
        lines.append(f"written on branch {s.branch} (binlake publish --branch {s.branch})")
    if s.timings:
        lines.append("phases: " + ", ".join(f"{k} {v:.1f} s" for k, v in s.timings.items()))
    for f in s.files:
        lines.append(f"  {f['status']:8} {f['file']}" + (f"  {f['error']}" if f["error"] else ""))
    if s.files and not s.loaded and not s.failed:
        lines.append("nothing new: every file was loaded before")
    if s.transactions:
        lines.append("transactions: " + ", ".join(f"{k} {v}" for k, v in
                                                   sorted(s.transactions.items())))
    for t, n in sorted(s.rows.items()):
        lines.append(f"  rows {t}: {n}")
    if s.typed:
        merged = s.typed.get("rows_merged") or {}
        skipped = s.typed.get("skipped") or {}
        lines.append(f"typed tables: {merged.get('changelog', 0)} changelog rows, "
                     f"{merged.get('mirror', 0)} mirror changes, "
                     f"{len(s.typed.get('created') or [])} created, "
                     f"{len(s.typed.get('evolved') or [])} evolved, {len(skipped)} skipped")
        for table, why in sorted(skipped.items()):
            lines.append(f"  skipped {table}: {why}")
    if s.xa_decided_late:
        lines.append(f"XA decided at a COMMIT/ROLLBACK loaded before: {len(s.xa_decided_late)}")
        for d in s.xa_decided_late:
            lines.append(f"  {d['xid']} prepared at {d['prepare_file']}:{d['prepare_pos']}, "
                         f"{d['status']} at {d['end_file']}:{d['end_pos']}")
    lines.append(f"pending XA: {len(s.pending)}")
    for p in s.pending:
        xid = XaXid(p["xa_format_id"], p["xa_gtrid"], p["xa_bqual"])
        lines.append(f"  {xid} prepared at "
                     f"{p['prepare_file']}:{p['prepare_pos']}")
    errors = Counter(f.get("kind") for f in s.findings if f.get("severity", "error") == "error")
    if errors:
        lines.append("findings (errors): " + ", ".join(f"{k} {v}" for k, v in errors.items()))
    return "\n".join(lines)
