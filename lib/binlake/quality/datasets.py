"""Driver side: the Spark DataFrames the expectations run on.

The stream facts are decoded on the executors (one task per file, :mod:`.facts`) and stay in
Spark; the driver only collects the ``files`` rows (one per file) to work out the GTID header
each file should have, which needs the interval sets of the files before it in order.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..config import Settings
from ..lake.extract import engine_seeds
from ..txn.files import BinlogFile
from ..txn.gtidset import IntervalSet
from ..txn.xa import load_pending
from . import facts as X


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
    from ..lake.tables import TRANSACTIONS, XA_PREPARES

    src = _q(settings.source)
    preps = read(XA_PREPARES)
    txns = read(TRANSACTIONS)
    if preps is None or txns is None:
        return []
    tag = uuid.uuid4().hex[:8]
    preps.createOrReplaceTempView(f"q_preps_{tag}")
    txns.createOrReplaceTempView(f"q_txns_{tag}")
    rows = spark.sql(f"""
        SELECT p.prepare_file, p.prepare_seq, p.prepare_pos, p.prepare_end_pos, p.prepare_gtid,
               CAST(unix_timestamp(p.prepared_ts) AS BIGINT) AS ts, p.xa_format_id,
               p.xa_gtrid, p.xa_bqual, p.state
        FROM q_preps_{tag} p
        LEFT ANTI JOIN (SELECT prepare_file, prepare_pos FROM q_txns_{tag}
                        WHERE source = '{src}' AND kind = 'xa' AND prepare_file IS NOT NULL
                          AND order_seq < {first_seq}) d
          ON p.prepare_file = d.prepare_file AND p.prepare_pos = d.prepare_pos
        WHERE p.source = '{src}' AND p.prepare_seq < {first_seq}""").collect()
    out = []
    for r in rows:
        if r["prepare_file"] in run_files:
            continue
        counts: tuple[int, ...] = (0,) * 6
        if r["state"]:
            (txn,) = load_pending(r["state"])
            counts = X.op_counts(txn)
        out.append((r["prepare_file"], r["prepare_seq"], r["prepare_pos"], r["prepare_end_pos"],
                    "xa_prepare", "xa", "xa_prepared", "XA_PREPARE", r["prepare_gtid"], r["ts"],
                    f"{r['xa_format_id']}:{r['xa_gtrid']}:{r['xa_bqual']}", *counts))
    return out


# -- the stream ---------------------------------------------------------------------------------

def build_stream(spark: Any, settings: Settings, files: list[BinlogFile], *,
                 lake_groups: list[tuple[Any, ...]] | None = None) -> StreamData:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    sc = spark.sparkContext
    seeds = engine_seeds([f.uri for f in files], [[0] for _ in files])
    task_rows = [(f.uri, f.name, f.seq, f.base, i, i == len(files) - 1,
                  list(settings.nontransactional), [f"{n}={int(v)}" for n, v in seeds[i][0]])
                 for i, f in enumerate(files)]
    tasks = spark.createDataFrame(sc.parallelize(task_rows, max(1, len(task_rows))),
                                  X.TASK_SCHEMA)
    records = tasks.mapInArrow(X.facts_arrow, X.WIDE_SCHEMA).persist(
        StorageLevel.MEMORY_AND_DISK)
    kind = F.col("kind")

    def meta(k: str, schema: str) -> Any:
        return records.where(kind == k).select(F.from_json("meta", schema).alias("r")) \
            .select("r.*")

    events = records.where(kind == X.EVENT).select(*X.EVENT_COLS)
    findings = meta(X.FINDING, X.FINDING_SCHEMA)
    file_rows = sorted((r.asDict() for r in meta(X.FILE, X.FILE_SCHEMA).collect()),
                       key=lambda r: r["index"])
    expected_headers(file_rows)
    files_schema = X.FILE_SCHEMA + ", gtid_header STRING, expected_gtid_header STRING"
    files_df = spark.createDataFrame(
        [tuple(r[c.strip().split(" ")[0].strip("`")] for c in files_schema.split(","))
         for r in file_rows], files_schema)
    run_last_ts = max((r["last_ts"] for r in file_rows if r["last_ts"]), default=None)
    groups = meta(X.GROUP, X.GROUP_SCHEMA).withColumn("origin", F.lit("run"))
    if lake_groups:
        groups = groups.unionByName(spark.createDataFrame(lake_groups, X.GROUP_SCHEMA)
                                    .withColumn("origin", F.lit("lake")))
    groups = groups.withColumn("run_last_ts", F.lit(run_last_ts).cast("bigint"))
    mysql = events.where(F.col("gtid_gno").isNotNull()).select(
        F.lit("event").alias("origin"), F.lit("mysql").alias("flavor"), "file", "seq", "pos",
        "gtid", F.col("gtid_uuid").alias("uuid"), F.coalesce("gtid_tag", F.lit("")).alias("tag"),
        F.lit(None).cast("bigint").alias("domain"), F.lit(None).cast("bigint").alias("server"),
        F.col("gtid_gno").alias("gno_start"), F.col("gtid_gno").alias("gno_end"))
    maria = events.where(F.col("gtid_seq").isNotNull()).select(
        F.lit("event").alias("origin"), F.lit("mariadb").alias("flavor"), "file", "seq", "pos",
        "gtid", F.lit(None).cast("string").alias("uuid"), F.lit(None).cast("string").alias("tag"),
        F.col("gtid_domain").alias("domain"), F.col("gtid_server").alias("server"),
        F.col("gtid_seq").alias("gno_start"), F.col("gtid_seq").alias("gno_end"))
    gtids = mysql.unionByName(maria)
    header = _header_gtid_rows(file_rows[0]) if file_rows else []
    if header:
        gtids = gtids.unionByName(spark.createDataFrame(header, GTIDS_SCHEMA))
    recorded = [r["file"] for r in file_rows if r["recorded_sha256"]]
    notes = {"integrity.archived_sha256": {
        "recorded": len(recorded),
        "not_recorded": [r["file"] for r in file_rows if not r["recorded_sha256"]],
        "note": ("files with no sha256 recorded at copy time (S3 metadata 'sha256' or "
                 "_meta/<file>.json) are not recorded and pass")}}
    return StreamData(events, files_df, groups, findings, gtids, file_rows, records, notes)


# -- the lake -----------------------------------------------------------------------------------

def table_reader(spark: Any, settings: Settings, branch: str | None) -> Any:
    """read(name) -> the lake table as of ``branch`` (main when the table has no such
    branch), or None when the table does not exist."""
    def read(name: str) -> Any:
        full = settings.table(name)
        if not spark.catalog.tableExists(full):
            return None
        if branch:
            refs = spark.sql(f"SELECT name FROM {full}.refs WHERE name = '{_q(branch)}'")
            if refs.count():
                return spark.read.option("branch", branch).table(full)
        return spark.table(full)

    return read


RECON_SCHEMA = "order_seq INT, order_pos BIGINT, file STRING, expected STRING, actual STRING"


def build_reconciliation(spark: Any, settings: Settings, stream: StreamData, read: Any
                         ) -> tuple[Any, Any, dict[str, dict[str, Any]]]:
    """(reconciliation, mirrors, notes): expected vs landed rows per transaction, and per
    mirror table."""
    from pyspark.sql import functions as F

    from ..lake.tables import FILES, ROW_CHANGES

    notes: dict[str, dict[str, Any]] = {}
    tag = uuid.uuid4().hex[:8]
    src = _q(settings.source)
    seqs = sorted({r["seq"] for r in stream.file_rows})
    names = {r["seq"]: r["file"] for r in stream.file_rows}
    lake_files = read(FILES)
    failed: list[str] = []
    if lake_files is not None:
        failed = [r["file"] for r in lake_files.where(
            (F.col("source") == settings.source) & (F.col("status") == "failed")
            & F.col("file").isin(list(names.values()))).select("file").collect()]
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
        actual = spark.createDataFrame([], "order_seq INT, order_pos BIGINT, i BIGINT, "
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
    mirrors = _mirrors(spark, settings, read, rc, src)
    return recon, mirrors, notes


def _mirrors(spark: Any, settings: Settings, read: Any, rc: Any, src: str) -> Any:
    """Per mirror table: rows in it for the source vs inserts - deletes in row_changes."""
    from pyspark.sql import functions as F

    from ..lake.typed import table_names

    schema = "table STRING, expected STRING, actual STRING"
    if rc is None:
        return spark.createDataFrame([], schema)
    per_table = rc.where(F.col("source") == settings.source).groupBy("db", "tbl").agg(
        (F.count_if(F.col("op") == "insert") - F.count_if(F.col("op") == "delete"))
        .alias("n")).collect()
    rows = []
    for r in per_table:
        _, mirror = table_names(r["db"], r["tbl"])
        m = read(mirror)
        if m is None:
            continue
        n = m.where(F.col("_source") == settings.source).count()
        rows.append((f"{r['db']}.{r['tbl']}", str(r["n"]), str(n)))
    return spark.createDataFrame(rows, schema)
