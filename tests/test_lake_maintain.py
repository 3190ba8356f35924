"""``binlake maintain`` (lake/maintain.py) on a lake loaded night after night from a real MariaDB
server: small files joined, the mirrors' position deletes applied and gone, old snapshots and
the files only they referenced deleted -- and every table's rows the same, a later night
loaded on top equal to the server, a night waiting on its branch left alone and still
published by a fast-forward, and no maintenance while a load holds the lock."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .binlog_files import copy_files
from .servers import start_server

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.slow]

pytest.importorskip("pyspark")


@pytest.fixture(scope="module")
def spark(spark_lake: Any) -> Iterator[Any]:
    yield spark_lake


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory, mariadb_template: Path) -> dict[str, Any]:
    """Three nights of a real server, each in several binlog files: inserts (night 1), updates
    and deletes of night 1's rows (night 2: the mirror's position deletes), more of both
    (night 3); the rows of m.t after night 2 and after night 3."""
    base = tmp_path_factory.mktemp("maintain-srv")
    srv = start_server(base, mariadb_template)
    out: dict[str, Any] = {"files": []}
    try:
        srv.execute("SET GLOBAL binlog_row_metadata = 'FULL'")
        srv.execute(["CREATE DATABASE m",
                     "CREATE TABLE m.t (id INT PRIMARY KEY, v VARCHAR(20), n INT) "
                     "ENGINE=InnoDB"])
        seen = 0

        def rotate(night: int) -> None:
            nonlocal seen
            srv.flush_binary_logs()
            closed = srv.closed_binlog_files()
            out["files"].extend((night, f) for f in closed[seen:])
            seen = len(closed)

        for part in range(4):  # night 1: four files of inserts
            srv.execute([f"INSERT INTO m.t VALUES ({part * 50 + i}, 'v{i}', {i})"
                         for i in range(50)])
            rotate(1)
        for part in range(3):  # night 2: updates and deletes
            srv.execute([f"UPDATE m.t SET n = n + 100 WHERE id % 7 = {part}",
                         f"DELETE FROM m.t WHERE id % 23 = {part}"])
            rotate(2)
        out["after2"] = sorted(srv.execute("SELECT id, v, n FROM m.t"))
        srv.execute(["UPDATE m.t SET v = 'late' WHERE id % 5 = 0",  # night 3
                     "DELETE FROM m.t WHERE id % 11 = 3",
                     "INSERT INTO m.t VALUES (1000, 'new', 1)"])
        rotate(3)
        out["after3"] = sorted(srv.execute("SELECT id, v, n FROM m.t"))
        copies = copy_files([f for _, f in out["files"]], base / "binlogs")
        out["files"] = [(night, str(c)) for (night, _), c in zip(out["files"], copies)]
    finally:
        srv.stop(timeout=30)
    return out


def _lake(spark: Any, base: Path, name: str) -> Any:
    from binlake.config import load_settings
    from binlake.lake.spark import build_session

    settings = load_settings(env={"BINLAKE_HOME": str(base / name),
                                  "BINLAKE_CATALOG_NAME": f"mt_{name}"}, driver_decode_bytes=0)
    build_session(settings, master="local[2]")
    return settings


def _contents(spark: Any, settings: Any) -> dict[str, list[str]]:
    """Every table's rows, as sorted JSON texts."""
    ns = f"{settings.catalog_name}.{settings.namespace}"
    out = {}
    for r in spark.sql(f"SHOW TABLES IN {ns}").collect():
        rows = spark.table(f"{ns}.{r.tableName}").collect()
        out[r.tableName] = sorted(json.dumps(x.asDict(recursive=True), default=str,
                                             sort_keys=True) for x in rows)
    return out


def _files_on_disk(settings: Any, table: str) -> int:
    data = settings.home_path / "warehouse" / settings.namespace / table / "data"
    return sum(1 for p in data.rglob("*.parquet"))


def _mirror(spark: Any, settings: Any) -> list[tuple[Any, ...]]:
    from binlake.lake.typed_plan import table_names

    return sorted(tuple(r) for r in spark.sql(
        f"SELECT id, v, n FROM {settings.table(table_names('m', 't')[1])}").collect())


def test_maintain_compacts_expires_and_keeps_every_row(spark: Any, nights: dict[str, Any],
                                                      tmp_path_factory: pytest.TempPathFactory
                                                      ) -> None:
    from binlake.lake.job import run_load
    from binlake.lake.maintain import maintain
    from binlake.lake.publish import publish_or_discard
    from binlake.lake.typed_plan import table_names

    settings = _lake(spark, tmp_path_factory.mktemp("maintain"), "m")
    by_night = {n: [f for k, f in nights["files"] if k == n] for n in (1, 2, 3)}
    assert len(by_night[1]) == 4 and len(by_night[2]) == 3, nights["files"]
    for i, f in enumerate(by_night[1] + by_night[2]):  # a load per file: many snapshots
        assert not run_load(spark, settings, [f], run_id=f"r{i}").failed
    mirror = table_names("m", "t")[1]
    assert _mirror(spark, settings) == nights["after2"]
    before = _contents(spark, settings)
    rc_files = _files_on_disk(settings, "row_changes")
    assert rc_files >= 7  # (a data file per binlog at least)
    mirror_deletes = spark.sql(f"SELECT count(*) FROM {settings.table(mirror)}.delete_files"
                               ).collect()[0][0]
    assert mirror_deletes >= 1  # night 2's updates and deletes replaced night 1's rows

    done = {u.table.rsplit(".", 1)[1]: u for u in maintain(spark, settings, run_id="mt-1",
                                                            retain_days=0)}
    assert not [u for u in done.values() if u.error], done
    assert _contents(spark, settings) == before  # every table's rows, unchanged
    rc = done["row_changes"]
    assert rc.data_files[0] >= 7 and rc.data_files[1] < rc.data_files[0], rc
    assert rc.snapshots[1] < rc.snapshots[0], rc
    # the files of the expired snapshots are gone from disk too
    assert _files_on_disk(settings, "row_changes") == rc.data_files[1] < rc_files
    m = done[mirror]
    assert m.data_files == (7, 1) and m.delete_files[1] < m.delete_files[0] == mirror_deletes, m
    # the delete files left (Iceberg drops the newest one only at the table's next commit)
    # delete nothing: each is older than every live data file
    (newest_delete, oldest_data), = spark.sql(
        f"SELECT max(IF(data_file.content = 1, sequence_number, NULL)), "
        f"min(IF(data_file.content = 0, sequence_number, NULL)) "
        f"FROM {settings.table(mirror)}.entries WHERE status <> 2").collect()
    assert newest_delete is None or newest_delete < oldest_data, (newest_delete, oldest_data)

    # night 3 on a branch, not published yet: its tables are left alone by maintenance
    assert not run_load(spark, settings, by_night[3], run_id="n3", branch="n3").failed
    done = {u.table.rsplit(".", 1)[1]: u for u in maintain(spark, settings, run_id="mt-2",
                                                            retain_days=0)}
    assert done[mirror].skipped == "branch n3 not published", done[mirror]
    assert done["row_changes"].skipped == "branch n3 not published"
    assert done["row_changes"].snapshots[0] == done["row_changes"].snapshots[1]
    # ... so the night still publishes by fast-forwards alone (no Spark replay)
    published, spark_used = publish_or_discard(settings, "n3", True, lambda: spark)
    assert mirror in published and "row_changes" in published and not spark_used, published
    spark.sql(f"REFRESH TABLE {settings.table(mirror)}")
    assert _mirror(spark, settings) == nights["after3"]


def test_maintain_waits_for_no_load(spark: Any, tmp_path_factory: pytest.TempPathFactory
                                    ) -> None:
    """A load holding the lock: maintenance does not start (LoadLockedError), and ``binlake
    maintain`` says so with exit 75 before Spark work."""
    import dataclasses

    from binlake.cli import main
    from binlake.lake.lock import LoadLockedError, load_lock
    from binlake.lake.maintain import maintain

    settings = _lake(spark, tmp_path_factory.mktemp("maintain-lock"), "lock")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {settings.catalog_name}.{settings.namespace}")
    with load_lock(settings, "a-load"):
        with pytest.raises(LoadLockedError, match="another load is writing this lake"):
            maintain(spark, dataclasses.replace(settings, lock_wait=0.0), run_id="mt")
        config = settings.home_path / "binlake.toml"
        config.write_text(f'home = "{settings.home}"\ncatalog_name = "{settings.catalog_name}"\n')
        assert main(["maintain", "--config", str(config)]) == 75
    assert main(["maintain", "--config", str(config), "--json"]) == 0
