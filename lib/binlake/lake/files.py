"""The ``files`` table: one row per binlog file a load run read (size, sha256, ranges, status),
merged idempotently on (source, file); with the MERGE helpers the load job uses for its small
driver-side tables.
"""

from __future__ import annotations

import time
from typing import Any

from ..config import Settings
from ..txn.files import BinlogFile
from .commit import append_rows, fork_branch
from .survey import EngineState, encode_engines
from .tables import (
    FILES,
    _in,
    _q,
    may_hold,
)


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


def _merge(spark: Any, settings: Settings, table: str, df: Any, keys: list[str], run_id: str,
           derived: dict[str, str], drop: list[str], update: bool = False) -> None:
    """MERGE df into the table on (source, *keys): insert missing rows (update matched ones
    when ``update``).  Idempotent by construction."""
    target = settings.table(table)
    view = f"binlake_src_{table}"
    _shape(spark, settings, target, df, run_id, derived, drop).createOrReplaceTempView(view)
    on = " AND ".join(f"t.{k} = s.{k}" for k in ["source", *keys])
    fork_branch(spark, target)
    sql = f"MERGE INTO {target} t USING {view} s ON {on} "
    if update:
        sql += "WHEN MATCHED THEN UPDATE SET * "
    sql += "WHEN NOT MATCHED THEN INSERT *"
    spark.sql(sql)


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
    ``files`` can hold a row of these files (Iceberg's metadata, :func:`tables.may_hold`:
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
    if may_hold(spark, table, cond):
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
               end_engines: dict[str, EngineState]) -> list[tuple[Any, ...]]:
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
                     else encode_engines(end_engines[f.name])))
    return rows
