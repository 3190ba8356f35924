"""The warm-up run of :func:`binlake.lake.classarchive.build`, in a child process: a little of
everything a load does, on a scratch lake, while the JVM records the classes it loads."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from ..config import Settings
from .classarchive import ClassArchiveError


def _warm_up(settings: Settings, pid_file: str, sources: list[str]) -> None:
    """A little of everything a load does, on a scratch lake: create tables, append, read
    with a filter, MERGE, DELETE, a property, a Python job over Arrow, data files added by
    the driver; then a load of ``sources``, if any."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .commit import add_data_files, table_out
    from .job import run_load
    from .sink import data_filesystem
    from .spark import build_session
    from .tables import delete_where, ensure_tables

    spark = build_session(settings, master="local[1]")
    Path(pid_file).write_text(str(spark._jvm.java.lang.ProcessHandle.current().pid()))
    ensure_tables(spark, settings)
    t = settings.table("warm_up")
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING, d DECIMAL(10,2), ts TIMESTAMP) "
              "USING iceberg PARTITIONED BY (days(ts)) TBLPROPERTIES ('format-version'='2', "
              "'write.merge.mode'='merge-on-read', 'write.delete.mode'='merge-on-read')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a', 1.50, TIMESTAMP '2024-01-01 00:00:00'), "
              "(2, 'b', 2.25, TIMESTAMP '2024-01-02 00:00:00')")
    spark.createDataFrame([(2, "c", None, None), (3, "d", None, None)],
                          "id BIGINT, v STRING, d DECIMAL(10,2), ts TIMESTAMP"
                          ).createOrReplaceTempView("warm_src")
    spark.sql(f"MERGE INTO {t} t USING warm_src s ON t.id = s.id WHEN MATCHED THEN UPDATE "
              "SET t.v = s.v WHEN NOT MATCHED THEN INSERT *")
    delete_where(spark, t, "id = 1")
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('binlake.warm' = '1')")
    rows = spark.table(t).where("id > 0").groupBy("v").count().collect()

    def same(batches: Any) -> Any:
        yield from batches

    spark.table(t).mapInArrow(same, spark.table(t).schema).collect()
    out = table_out(spark, settings.table("statements"))
    path = out.location.rstrip("/") + "/warm-up.parquet"
    fs, p = data_filesystem(path.rsplit("/", 1)[0])
    fs.create_dir(p, recursive=True)
    pq.write_table(pa.Table.from_pylist(
        [{"source": "warm", "file": "f", "pos": 4, "statement": "x", "run_id": "w"}],
        schema=out.schema), p.rstrip("/") + "/warm-up.parquet", filesystem=fs)
    add_data_files(spark, settings, "statements", [
        {"path": path, "partition": ["warm"], "rows": 1, "file": "f", "table": "statements"}],
        "warm-up")
    if not rows or spark.table(settings.table("statements")).count() != 1:
        raise ClassArchiveError("the warm-up run read back the wrong rows")
    if sources:
        summary = run_load(spark, settings, sources)
        if summary.failed:
            raise ClassArchiveError(f"the warm-up load failed: {summary.failed}")
    spark.stop()


def _main(pid_file: str) -> int:
    raw = json.loads(os.environ["BINLAKE_CLASS_ARCHIVE_BUILD"])
    values: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v
                              for k, v in raw["settings"].items()}
    _warm_up(Settings(**values).validate(), pid_file, raw["sources"])
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1]))
