"""Driver side: the Spark DataFrames the expectations run on.

The stream facts (:mod:`binlake.txn.streamfacts`) come from the lake's ``stream_facts`` table,
where the load that landed each file left them (gathered in its own decode pass, range by
range), and for files it holds none of, from executor tasks that read them again
(:mod:`.facts`): one per file, or one per range of a big file (:mod:`.reread`).  They
stay in Spark; the driver only collects the range rows (a few per file) to make the
``files`` rows, the GTID header each file should have (which needs the interval sets of the
files before it, in order) and the position findings between ranges.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..config import Settings
from ..lake.spark import local_frame, task_frame
from ..txn.files import BinlogFile
from ..txn.gtidset import IntervalSet
from ..txn.streamfacts import op_counts
from ..txn.xa import load_pending
from . import facts as X
from . import reread

log = logging.getLogger(__name__)


@dataclass
class StreamData:
    events: Any
    files: Any
    groups: Any
    findings: Any
    gtids: Any
    file_rows: list[dict[str, Any]]
    records: Any  # the persisted decode output (unpersist when done)
    notes: dict[str, dict[str, Any]] = field(default_factory=dict)  # extra details per check

    def frames(self) -> dict[str, Any]:
        return {"events": self.events, "files": self.files, "groups": self.groups,
                "findings": self.findings, "gtids": self.gtids}


def _q(s: str) -> str:
    return s.replace("'", "''")


# -- expected GTID headers (driver, per-file aggregates only) ----------------------------------

def expected_headers(rows: list[dict[str, Any]]) -> None:
    """Set ``gtid_header`` (what a file's Previous_gtids / Gtid_list says) and
    ``expected_gtid_header`` (the previous file's header plus the GTIDs it contained) on each
    file row; both stay None for a file with no predecessor in the run or no header."""
    prev: dict[str, Any] | None = None
    for r in rows:
        r["gtid_header"] = r["expected_gtid_header"] = None
        p = prev if prev is not None and prev["base"] == r["base"] else None
        prev = r
        if r["prev_gtids"] is not None:
            r["gtid_header"] = X.gtid_set_text(X.sets_from_json(r["prev_gtids"]))
            if p is not None and p["prev_gtids"] is not None:
                sets = X.sets_from_json(p["prev_gtids"])
                for key, iv in X.sets_from_json(p["contained"]).items():
                    sets.setdefault(key, IntervalSet()).update(iv)
                r["expected_gtid_header"] = X.gtid_set_text(sets)
        elif r["gtid_list"] is not None:
            r["gtid_header"] = X.gtid_list_text(
                {(d, s): q for d, s, q in orjson.loads(r["gtid_list"])})
            if p is not None and p["gtid_list"] is not None:
                state = {(d, s): q for d, s, q in orjson.loads(p["gtid_list"])}
                state.update({(d, s): q for d, s, q in orjson.loads(p["last_per_server"])})
                r["expected_gtid_header"] = X.gtid_list_text(state)


def _header_gtid_rows(first: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The first file's header as rows of the gtids dataset (the stream's starting state)."""
    out: list[tuple[Any, ...]] = []
    if first.get("prev_gtids"):
        for (u, t), iv in X.sets_from_json(first["prev_gtids"]).items():
            for a, b in iv:
                out.append(("header", "mysql", first["file"], first["seq"], 0, None, u, t,
                            None, None, a, b))
    if first.get("gtid_list"):
        for d, s, q in orjson.loads(first["gtid_list"]):
            out.append(("header", "mariadb", first["file"], first["seq"], 0, f"{d}-{s}-{q}",
                        None, None, d, s, q, q))
    return out


GTIDS_SCHEMA = ("origin STRING, flavor STRING, file STRING, seq INT, pos BIGINT, gtid STRING, "
                "uuid STRING, tag STRING, domain BIGINT, server BIGINT, gno_start BIGINT, "
                "gno_end BIGINT")


# -- the lake's view of XAs pending before the run ---------------------------------------------

def lake_pending_groups(spark: Any, settings: Settings, first_seq: int, run_files: set[str],
                        read: Any) -> list[tuple[Any, ...]]:
    """XA PREPARE groups stored by earlier runs and undecided before this run's first file,
    as ``groups`` rows (origin ``lake``), their row counts read from the stored state."""
    from ..lake.driver_read import all_of, eq, is_in, lt, not_null
    from ..lake.tables import TRANSACTIONS, XA_PREPARES

    # read on the driver (no Spark job): the stored prepares' keys, the decided ones', then
    # the state of those still pending
    src = eq("source", settings.source)
    before = lt("prepare_seq", int(first_seq))
    preps = read.rows(XA_PREPARES, all_of(src, before), (
        "prepare_file", "prepare_seq", "prepare_pos", "prepare_end_pos", "prepare_gtid",
        "prepared_ts", "xa_format_id", "xa_gtrid", "xa_bqual"))
    txns = read.rows(TRANSACTIONS, all_of(src, eq("kind", "xa"), not_null("prepare_file"),
                                          lt("order_seq", int(first_seq))),
                     ("prepare_file", "prepare_pos"))
    if preps is None or txns is None:
        return []
    done = set(zip(txns.column("prepare_file").to_pylist(),
                   txns.column("prepare_pos").to_pylist()))
    rows = [dict(p, ts=None if p["prepared_ts"] is None else int(
        p["prepared_ts"].timestamp() // 1)) for p in preps.to_pylist()
            if (p["prepare_file"], p["prepare_pos"]) not in done
            and p["prepare_file"] not in run_files]
    states: dict[tuple[str, int], Any] = {}
    if rows:
        got = read.rows(XA_PREPARES, all_of(src, before, is_in(
            "prepare_pos", sorted({r["prepare_pos"] for r in rows}))),
            ("prepare_file", "prepare_pos", "state"))
        states = {(f, p): st for f, p, st in zip(*(got.column(c).to_pylist() for c in (
            "prepare_file", "prepare_pos", "state")))}
    for r in rows:
        r["state"] = states.get((r["prepare_file"], r["prepare_pos"]))
    out = []
    for r in rows:
        counts: tuple[int, ...] = (0,) * 6
        if r["state"]:
            (txn,) = load_pending(r["state"])
            counts = op_counts(txn.changes)
        out.append((r["prepare_file"], r["prepare_seq"], r["prepare_pos"], r["prepare_end_pos"],
                    "xa_prepare", "xa", "xa_prepared", "XA_PREPARE", r["prepare_gtid"], r["ts"],
                    f"{r['xa_format_id']}:{r['xa_gtrid']}:{r['xa_bqual']}", *counts))
    return out


# -- the stream ---------------------------------------------------------------------------------

def lake_facts(spark: Any, settings: Settings, files: list[BinlogFile], read: Any
               ) -> tuple[Any, dict[str, dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """The stream facts the lake holds of ``files`` (what the load that landed each one
    gathered in its decode pass), and per file so covered its ``files`` row (run, sha256,
    size), and its range rows' metas in range order.  A file is covered when its row names the
    run that loaded it and every one of that run's ranges of it left its range row (a killed
    load leaves a file uncovered: the files row comes last)."""
    from pyspark.sql import functions as F

    from ..lake.tables import FILES, STREAM_FACTS

    facts, lake_files = read(STREAM_FACTS), read(FILES)
    names = [f.name for f in files]
    if facts is None or lake_files is None:
        return None, {}, {}
    rows = {r["file"]: r.asDict() for r in lake_files.where(
        (F.col("source") == settings.source) & F.col("file").isin(names)).select(
        "file", "run_id", "ranges", "sha256", "size", "status").collect()}
    facts = facts.where((F.col("source") == settings.source) & F.col("file").isin(names))
    seen: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
    for r in facts.where(F.col("kind") == "range").select(
            "file", "run_id", "range_index", "meta").collect():
        seen.setdefault((r["file"], r["run_id"]), {})[r["range_index"]] = orjson.loads(r["meta"])
    covered, covered_metas = {}, {}
    for n, r in rows.items():
        metas = seen.get((n, r["run_id"]), {})
        ordered = [metas[k] for k in sorted(metas)]
        if r["ranges"] and set(metas) == set(range(r["ranges"])) and X.ranges_usable(ordered):
            covered[n] = r
            covered_metas[n] = ordered
    if not covered:
        return None, {}, {}
    # each file's facts of the run that loaded it: one condition per run (a night's files
    # share one), not per file (an OR of a term per file, evaluated on every row, took
    # three times as long as the scan over 200 files)
    by_run: dict[str, list[str]] = {}
    for n, r in covered.items():
        by_run.setdefault(r["run_id"], []).append(n)
    keep = F.lit(False)
    for run_id, names_of in sorted(by_run.items()):
        keep = keep | ((F.col("run_id") == run_id) & F.col("file").isin(sorted(names_of)))
    return facts.where(keep).select(*X.FACT_NAMES), covered, covered_metas


def build_stream(spark: Any, settings: Settings, files: list[BinlogFile], *,
                 lake_groups: list[tuple[Any, ...]] | None = None,
                 read: Any = None) -> StreamData:
    """The datasets of the stream of ``files``: from the facts the lake holds of them (with
    ``read``, :func:`table_reader`), and for the files it has none of, from tasks that read
    them again (:func:`.facts.file_facts`): one per file, or one per range of a big file
    (:mod:`.reread`)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    sc = spark.sparkContext
    stored, covered, metas_of = (lake_facts(spark, settings, files, read) if read is not None
                                 else (None, {}, {}))
    todo = [(i, f) for i, f in enumerate(files) if f.name not in covered]
    parts = [stored] if stored is not None else []
    plan = reread.plan(sc, settings, files, todo) if todo else reread.ReadPlan([])

    def read_again(tasks: list[list[tuple[Any, ...]]]) -> Any:  # task rows, per task
        return task_frame(spark, tasks, X.TASK_SCHEMA).mapInArrow(X.facts_arrow,
                                                                  X.FACT_SCHEMA)

    if todo:
        parts.append(read_again([[plan.rows[i] for i in t] for t in plan.tasks]))
    records = parts[0]
    for p in parts[1:]:
        records = records.unionByName(p)
    if todo:  # files decoded here: decode once, whatever the datasets read of them
        records = records.persist(StorageLevel.MEMORY_AND_DISK)
    # (facts from the lake are not cached whole: each dataset reads its own columns of the
    # Parquet files, and is cached itself by the caller, which is several times cheaper)
    kind = F.col("kind")

    # files: the ranges' rows merged on the driver (a few per file); those of the lake's
    # facts were read by lake_facts already
    metas: dict[str, list[tuple[int, dict[str, Any]]]] = {
        n: list(enumerate(ms)) for n, ms in metas_of.items()}

    def range_metas(frame: Any, names: list[str]) -> None:
        for r in frame.where((kind == "range") & F.col("file").isin(names)).select(
                "file", "range_index", "meta").collect():
            metas.setdefault(r["file"], []).append((r["range_index"], orjson.loads(r["meta"])))

    if todo:
        range_metas(records, [f.name for _, f in todo])
        # a file read in ranges whose ranges cannot stand for it (a relay log): read whole
        unusable = {n for n in plan.ranges
                    if not X.ranges_usable([m for _, m in sorted(metas.get(n, []),
                                                                 key=lambda x: x[0])])}
        if unusable:
            whole = read_again([[r] for r in reread.whole_rows(plan.rows, unusable)])
            kept = records.where(~F.col("file").isin(sorted(unusable))).unionByName(whole)
            kept = kept.persist(StorageLevel.MEMORY_AND_DISK)
            for n in unusable:
                metas.pop(n, None)
                plan.hashed.pop(n, None)
                plan.ranges.pop(n, None)
            range_metas(kept, sorted(unusable))
            records.unpersist()  # (kept is whole in the cache now: range_metas ran over it)
            records = kept
    file_rows: list[dict[str, Any]] = []
    derived: list[dict[str, Any]] = []
    for i, f in enumerate(files):
        ms = [m for _, m in sorted(metas.get(f.name, []), key=lambda x: x[0])]
        if not ms:
            continue
        task = X.FileTask(f.uri, f.name, f.seq, f.base, i, i == len(files) - 1)
        lake_row = covered.get(f.name)
        if lake_row is not None:
            sha, size = lake_row["sha256"], lake_row["size"]
        elif f.name in plan.hashed:  # read in ranges: hashed by its survey
            sha, size = plan.hashed[f.name]
        else:
            sha, size = ms[-1].get("sha256"), ms[-1].get("size")
        row = X.file_row(task, X.merge_ranges(ms), sha, size)
        if ms[-1].get("read_error") and not row["error"]:
            row["error"] = ms[-1]["read_error"]
        file_rows.append(row)
        derived += X.range_findings(f.name, ms)
    expected_headers(file_rows)
    files_schema = X.FILE_SCHEMA + ", gtid_header STRING, expected_gtid_header STRING"
    files_df = local_frame(
        spark, [tuple(r[c.strip().split(" ")[0].strip("`")] for c in files_schema.split(","))
         for r in file_rows], files_schema)
    run_last_ts = max((r["last_ts"] for r in file_rows if r["last_ts"]), default=None)

    events = records.where(kind == "event").select(
        "file", "seq", "pos", F.col("event_type").alias("type"), "checksum", "error")
    findings = records.where(kind == "finding").select(
        F.from_json("meta", X.FINDING_SCHEMA).alias("r")).select("r.*")
    # an xid that ended two groups of one file, wherever the ranges were cut
    u64 = F.when(F.col("xid") < 0, F.col("xid").cast("decimal(20,0)")
                 + F.expr("CAST('18446744073709551616' AS DECIMAL(20,0))")) \
        .otherwise(F.col("xid").cast("decimal(20,0)"))
    xids = records.where(kind == "xid").select("file", "pos", "xid", "event_type", "meta") \
        .withColumn("first_pos", F.min("pos").over(Window.partitionBy("file", "xid"))) \
        .where(F.col("pos") > F.col("first_pos"))
    dup = xids.select(
        F.lit("duplicate_xid").alias("kind"), F.lit("error").alias("severity"), "file", "pos",
        F.to_json(F.struct(u64.cast("string").alias("xid"), "first_pos",
                           F.col("event_type").alias("type"))).alias("detail"),
        F.concat(F.col("event_type"), F.lit(" at "), F.col("pos").cast("string"),
                 F.lit(" ends its transaction with xid "), u64.cast("string"),
                 F.lit(", which already ended the transaction at "),
                 F.col("first_pos").cast("string"),
                 F.lit(" in this file (expected a new xid, found a repeated one): crash "
                       "recovery cannot tell the two apart")).alias("message"))
    findings = findings.unionByName(dup)
    if derived:
        findings = findings.unionByName(local_frame(
            spark, [tuple(d[c] for c in ("kind", "severity", "file", "pos", "detail", "message"))
             for d in derived], X.FINDING_SCHEMA))
    groups = records.where(kind == "group").select(
        "file", "seq", F.col("pos").alias("begin_pos"), "end_pos", "record",
        F.col("group_kind").alias("kind"), "status", "end_event", "gtid", "ts", "xa_xid",
        "inserts", "updates", "deletes", "nt_inserts", "nt_updates", "nt_deletes") \
        .withColumn("origin", F.lit("run"))
    if lake_groups:
        groups = groups.unionByName(local_frame(spark, lake_groups, X.GROUP_SCHEMA)
                                    .withColumn("origin", F.lit("lake")))
    groups = _with_xa_order(groups.withColumn("run_last_ts", F.lit(run_last_ts).cast("bigint")))
    gt = records.where(kind == "gtid")
    mysql = gt.where(F.col("gtid_gno").isNotNull()).select(
        F.lit("event").alias("origin"), F.lit("mysql").alias("flavor"), "file", "seq", "pos",
        "gtid", F.col("gtid_uuid").alias("uuid"), F.coalesce("gtid_tag", F.lit("")).alias("tag"),
        F.lit(None).cast("bigint").alias("domain"), F.lit(None).cast("bigint").alias("server"),
        F.col("gtid_gno").alias("gno_start"), F.col("gtid_gno").alias("gno_end"))
    maria = gt.where(F.col("gtid_seq").isNotNull()).select(
        F.lit("event").alias("origin"), F.lit("mariadb").alias("flavor"), "file", "seq", "pos",
        "gtid", F.lit(None).cast("string").alias("uuid"), F.lit(None).cast("string").alias("tag"),
        F.col("gtid_domain").alias("domain"), F.col("gtid_server").alias("server"),
        F.col("gtid_seq").alias("gno_start"), F.col("gtid_seq").alias("gno_end"))
    gtids = mysql.unionByName(maria)
    header = _header_gtid_rows(file_rows[0]) if file_rows else []
    if header:
        gtids = gtids.unionByName(local_frame(spark, header, GTIDS_SCHEMA))
    gtids = _with_gtid_order(gtids)
    recorded = [r["file"] for r in file_rows if r["recorded_sha256"]]
    checked = sum(sum(m["checksums"].values()) for ms in metas.values() for _, m in ms)
    notes = {
        "integrity.archived_sha256": {
            "recorded": len(recorded),
            "not_recorded": [r["file"] for r in file_rows if not r["recorded_sha256"]],
            "note": ("files with no sha256 recorded at copy time (S3 metadata 'sha256' or "
                     "_meta/<file>.json) are not recorded and pass")},
        "integrity.events_decode": {
            "events": checked,
            "facts_from_load": sorted(covered),
            "read_again": [f.name for _, f in todo],
            "read_in_ranges": dict(plan.ranges),  # of those: how many ranges, if cut
            "note": ("the events dataset holds the events whose checksum or body failed; "
                     "'events' counts every event read")}}
    return StreamData(events, files_df, groups, findings, gtids, file_rows, records, notes)


def _with_xa_order(groups: Any) -> Any:
    """``groups`` with ``xa_prev_record`` / ``xa_next_record``: for an XA PREPARE or XA
    COMMIT/ROLLBACK group, the record of the XID's group before / after it (in binlog
    order: seq, begin_pos), among those groups only; NULL for other groups.  Computed once
    with the dataset (it is pinned), not by each XA check's query, which Great Expectations
    runs twice (its count, its rows)."""
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    # (the window over the XA groups only, the others beside them: partitioned over all
    # groups, the non-XA ones, nearly all of a stream, are one window partition, one task)
    is_xa = F.coalesce(F.col("record").isin("xa_prepare", "xa_end"), F.lit(False))
    w = Window.partitionBy("xa_xid").orderBy("seq", "begin_pos")
    return groups.where(is_xa).withColumn("xa_prev_record", F.lag("record").over(w)) \
        .withColumn("xa_next_record", F.lead("record").over(w)) \
        .unionByName(groups.where(~is_xa)
                     .withColumn("xa_prev_record", F.lit(None).cast("string"))
                     .withColumn("xa_next_record", F.lit(None).cast("string")))


def _with_gtid_order(gtids: Any) -> Any:
    """``gtids`` with the running maxima the GTID checks compare each row with, computed once
    with the dataset (as :func:`_with_xa_order`):

    ``covered_to``      the highest GTID number of the rows before it in its sequence
                        (MySQL: uuid and tag; MariaDB: domain), ordered by number, the
                        header's rows first, then binlog order;
    ``highest_before``  the highest number of the rows before it of its MariaDB domain and
                        server, in binlog order (the header's rows first).
    """
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    o = F.when(F.col("origin") == "header", 0).otherwise(1)
    before = (Window.unboundedPreceding, -1)
    in_sequence = Window.partitionBy("flavor", "uuid", "tag", "domain").orderBy(
        "gno_start", o, "seq", "pos").rowsBetween(*before)
    per_server = Window.partitionBy("flavor", "domain", "server").orderBy(
        o, "seq", "pos").rowsBetween(*before)
    return gtids.withColumn("covered_to", F.max("gno_end").over(in_sequence)) \
        .withColumn("highest_before", F.max("gno_end").over(per_server))


# -- the lake -----------------------------------------------------------------------------------

class TableReader:
    """``read(name)``: the lake table as of ``branch`` (main when the table has no such
    branch), or None when the table does not exist.  Each table is looked up once, its
    branch through the Iceberg table's refs (no Spark job: validation reads about fifteen
    tables, and a query of each one's ``refs`` table was a job of its own).
    ``read.rows(name, filter, columns)``: a few of its rows on the driver, without a Spark
    job (:func:`binlake.lake.driver_read.read_rows`: Arrow), or None."""

    def __init__(self, spark: Any, settings: Settings, branch: str | None) -> None:
        self.spark, self.settings, self.branch = spark, settings, branch
        self.seen: dict[str, Any] = {}

    def __call__(self, name: str) -> Any:
        from ..lake.commit import has_branch, java_table
        from ..lake.spark import read_table

        if name in self.seen:
            return self.seen[name]
        full = self.settings.table(name)
        df = None
        if self.spark.catalog.tableExists(full):
            branch = self.branch if self.branch and has_branch(
                java_table(self.spark, full), self.branch) else None
            df = read_table(self.spark, full, branch)
        self.seen[name] = df
        return df

    def rows(self, name: str, row_filter: Any, columns: tuple[str, ...]) -> Any:
        from ..lake.driver_read import read_rows

        if self(name) is None:
            return None
        return read_rows(self.spark, self.settings, self.settings.table(name), row_filter,
                         columns, branch=self.branch)


def table_reader(spark: Any, settings: Settings, branch: str | None) -> TableReader:
    """The lake's tables as of ``branch`` (:class:`TableReader`)."""
    return TableReader(spark, settings, branch)


RECON_SCHEMA = "order_seq INT, order_pos BIGINT, file STRING, expected STRING, actual STRING"


def build_reconciliation(spark: Any, settings: Settings, stream: StreamData, read: Any
                         ) -> tuple[Any, dict[str, dict[str, Any]]]:
    """(reconciliation, notes): expected vs landed rows per transaction."""
    from pyspark.sql import functions as F

    from ..lake.tables import FILES, ROW_CHANGES

    notes: dict[str, dict[str, Any]] = {}
    tag = uuid.uuid4().hex[:8]
    seqs = sorted({r["seq"] for r in stream.file_rows})
    names = {r["seq"]: r["file"] for r in stream.file_rows}
    from ..lake.driver_read import all_of, eq, is_in

    got = read.rows(FILES, all_of(eq("source", settings.source), eq("status", "failed"),
                                  is_in("file", list(names.values()))), ("file",))
    failed: list[str] = [] if got is None else got.column("file").to_pylist()
    skip = [s for s, n in names.items() if n in failed]
    notes["reconciliation.row_changes"] = {
        "files_failed_in_lake": failed,
        "note": "files the load marked failed land nothing and are not reconciled"}
    stream.groups.createOrReplaceTempView(f"q_groups_{tag}")
    expected = spark.sql(f"""
        WITH xa AS (
          SELECT *, lag(record) OVER w AS prev_record, lag(inserts) OVER w AS p_i,
                 lag(updates) OVER w AS p_u, lag(deletes) OVER w AS p_d,
                 lag(nt_inserts) OVER w AS p_ni, lag(nt_updates) OVER w AS p_nu,
                 lag(nt_deletes) OVER w AS p_nd
          FROM q_groups_{tag} WHERE record IN ('xa_prepare', 'xa_end')
          WINDOW w AS (PARTITION BY xa_xid ORDER BY seq, begin_pos))
        SELECT seq AS order_seq, end_pos AS order_pos, inserts AS i, updates AS u, deletes AS d
        FROM q_groups_{tag} WHERE record = 'txn' AND origin = 'run'
        UNION ALL
        SELECT seq, end_pos,
               CASE WHEN prev_record <> 'xa_prepare' OR prev_record IS NULL THEN 0
                    WHEN status = 'xa_commit' THEN p_i ELSE p_ni END,
               CASE WHEN prev_record <> 'xa_prepare' OR prev_record IS NULL THEN 0
                    WHEN status = 'xa_commit' THEN p_u ELSE p_nu END,
               CASE WHEN prev_record <> 'xa_prepare' OR prev_record IS NULL THEN 0
                    WHEN status = 'xa_commit' THEN p_d ELSE p_nd END
        FROM xa WHERE record = 'xa_end' AND origin = 'run'""")
    expected = expected.where(~F.col("order_seq").isin(skip))
    rc = read(ROW_CHANGES)
    if rc is None:
        actual = local_frame(spark, [], "order_seq INT, order_pos BIGINT, i BIGINT, "
                                           "u BIGINT, d BIGINT")
    else:
        actual = rc.where((F.col("source") == settings.source) & F.col("order_seq").isin(seqs)
                          & ~F.col("order_seq").isin(skip)).groupBy("order_seq", "order_pos") \
            .agg(F.count_if(F.col("op") == "insert").alias("i"),
                 F.count_if(F.col("op") == "update").alias("u"),
                 F.count_if(F.col("op") == "delete").alias("d"))

    def text(df: Any, name: str) -> Any:
        return df.select("order_seq", "order_pos", F.concat_ws(
            "/", *[F.col(c).cast("string") for c in ("i", "u", "d")]).alias(name))

    file_of = F.create_map(*[x for s, n in names.items() for x in (F.lit(s), F.lit(n))]) \
        if names else F.lit(None)
    recon = text(expected, "expected").join(text(actual, "actual"), ["order_seq", "order_pos"],
                                            "full_outer") \
        .select("order_seq", "order_pos", file_of[F.col("order_seq")].alias("file"),
                F.coalesce("expected", F.lit("0/0/0")).alias("expected"),
                F.coalesce("actual", F.lit("0/0/0")).alias("actual"))
    return recon, notes


def build_mirrors(spark: Any, settings: Settings, read: Any, seqs: list[int]
                  ) -> tuple[Any, dict[str, dict[str, Any]]]:
    """(mirrors, notes): per mirror table, its rows for the source against the inserts -
    deletes of ``row_changes`` (nothing of the stream: computed beside it).

    ``night`` (``settings.mirror_counts``, when the lake is read on a write-audit-publish
    branch that ``row_changes`` has): what the branch changed, on both sides: each mirror's
    rows at the branch's head minus at its fork point (:func:`driver_read.branch_base`),
    against the inserts - deletes of the run's files (``seqs``) in ``row_changes`` at the
    head minus at the fork point.  Only the night's ``row_changes`` are read (their files
    pruned by ``order_seq``), so the check costs the night, not the lake's history; a lake
    whose every night passed is consistent as a whole.  A mirror is checked when the night
    has row changes of its table.  ``lake`` (or no such branch): each mirror's rows against
    the whole history.

    A table with a TRUNCATE, DROP, RENAME (in or out) or a CREATE of a new incarnation in
    the scope (the night's files; the whole history for ``lake``) is not compared: those
    change its mirror with no row change (docs/lake.md "Table lifecycle"); the notes name it
    (``lifecycle``)."""
    from pyspark.sql import functions as F

    from ..lake.driver_read import all_of, branch_base, count_rows, eq, is_in
    from ..lake.tables import ROW_CHANGES
    from ..lake.typed_plan import table_names

    schema = "table STRING, expected STRING, actual STRING"
    rc = read(ROW_CHANGES)
    if rc is None:
        return local_frame(spark, [], schema), {}
    source = eq("source", settings.source)
    bases = None
    if settings.mirror_counts == "night" and read.branch:
        try:
            bases = branch_base(spark, settings.table(ROW_CHANGES), read.branch)
        except LookupError as exc:
            log.warning("validate: mirror counts over the whole lake: %s", exc)
    if bases is None:
        life = _lifecycle_tables(settings, read, None)
        net = _net_per_table(rc.where(F.col("source") == settings.source))
        rows = []
        for (db, tbl), n in sorted(net.items()):
            if (db.lower(), tbl.lower()) in life:
                continue
            got = read.rows(table_names(db, tbl)[1], eq("_source", settings.source),
                            ("_source",))
            if got is not None:
                rows.append((f"{db}.{tbl}", str(n), str(got.num_rows)))
        return local_frame(spark, rows, schema), {"reconciliation.mirror_counts": {
            "scope": "lake", "lifecycle": _life_note(life),
            "note": "every mirror against the source's whole row_changes"}}
    _, rc_base = bases
    net = _net_per_table(rc.where((F.col("source") == settings.source)
                                  & F.col("order_seq").isin(seqs)))
    before: dict[tuple[Any, ...], int] = {}
    if rc_base is not None:  # (usually no data file: those of the night's order_seq are new)
        before = count_rows(spark, settings, settings.table(ROW_CHANGES),
                            all_of(source, is_in("order_seq", seqs)), ("db", "tbl", "op"),
                            snapshot_id=rc_base)
    for (db, tbl, op), n in before.items():
        net[(db, tbl)] = net.get((db, tbl), 0) - {"insert": n, "delete": -n}.get(op, 0)
    life = _lifecycle_tables(settings, read, seqs)
    rows, forks = [], {}
    for (db, tbl), n in sorted(net.items()):
        if (db.lower(), tbl.lower()) in life:
            continue
        mirror = settings.table(table_names(db, tbl)[1])
        change = 0
        try:
            ends = (branch_base(spark, mirror, read.branch)
                    if spark.catalog.tableExists(mirror) else None)
        except LookupError as exc:
            log.warning("validate: mirror %s.%s not checked: %s", db, tbl, exc)
            continue
        if ends is not None:  # (no branch: the night did not write the mirror)
            head, base = ends
            change = _source_rows(spark, settings, mirror, head) - (
                0 if base is None else _source_rows(spark, settings, mirror, base))
            forks[f"{db}.{tbl}"] = base
        rows.append((f"{db}.{tbl}", str(n), str(change)))
    return local_frame(spark, rows, schema), {"reconciliation.mirror_counts": {
        "scope": "night", "branch": read.branch, "order_seqs": sorted(seqs),
        "fork_points": forks, "lifecycle": _life_note(life),
        "note": "each mirror's change over the branch (rows at its head minus at its fork "
                "point) against the night's inserts - deletes in row_changes"}}


def _lifecycle_tables(settings: Settings, read: Any, seqs: list[int] | None
                      ) -> dict[tuple[str, str], list[str]]:
    """(db, tbl) lower-cased -> its lifecycle statements (``change@seq,pos``) in the files
    ``seqs`` (None: all), from the lake's ``schema_history``."""
    from ..lake.driver_read import all_of, eq, is_in
    from ..lake.lifecycle import CLEARING
    from ..lake.tables import SCHEMA_HISTORY

    cond = eq("source", settings.source)
    if seqs is not None:
        cond = all_of(cond, is_in("start_seq", list(seqs)))
    got = read.rows(SCHEMA_HISTORY, cond,
                    ("db", "tbl", "incarnation", "change", "start_seq", "start_pos"))
    out: dict[tuple[str, str], list[str]] = {}
    for r in (got.to_pylist() if got is not None else []):
        # the statements lake/lifecycle.py applies; a CREATE only when it starts a new
        # incarnation of a name (the first one starts an empty table)
        if r["change"] in (*CLEARING, "rename_in", "rename_out") and (
                r["change"] != "create" or (r["incarnation"] or 0) > 1):
            out.setdefault((str(r["db"]).lower(), str(r["tbl"]).lower()), []).append(
                f"{r['change']}@{r['start_seq']},{r['start_pos']}")
    return out


def _life_note(life: dict[tuple[str, str], list[str]]) -> dict[str, Any]:
    return {"not_compared": {f"{db}.{tbl}": sorted(v) for (db, tbl), v in sorted(life.items())},
            "why": "a TRUNCATE, DROP, RENAME or new CREATE changes a mirror with no row change"}


def _net_per_table(rc: Any) -> dict[tuple[Any, ...], int]:
    """(db, tbl) -> inserts - deletes of the ``row_changes`` rows of ``rc``."""
    from pyspark.sql import functions as F

    return {(r["db"], r["tbl"]): r["n"] for r in rc.groupBy("db", "tbl").agg(
        (F.count_if(F.col("op") == "insert") - F.count_if(F.col("op") == "delete"))
        .alias("n")).collect()}


def _source_rows(spark: Any, settings: Settings, mirror: str, snapshot_id: int) -> int:
    """The source's rows in the mirror at a snapshot, counted on the driver (one column read,
    position deletes applied; a Spark count was a job per mirror)."""
    from ..lake.driver_read import count_rows, eq

    return sum(count_rows(spark, settings, mirror, eq("_source", settings.source),
                         ("_source",), snapshot_id=snapshot_id).values())
