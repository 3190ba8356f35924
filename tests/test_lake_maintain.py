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


def _metadata_files(settings: Any, table: str) -> set[str]:
    meta = settings.home_path / "warehouse" / settings.namespace / table / "metadata"
    return {p.name for p in meta.iterdir() if p.is_file()}


def test_maintain_bounds_the_metadata(spark: Any, nights: dict[str, Any],
                                      tmp_path_factory: pytest.TempPathFactory) -> None:
    """Tables are made with the metadata retention properties; a lake made before them (here:
    the properties taken away, and the metadata log cut to 2 versions by hand, which leaves
    the cut versions on disk) gets them from maintenance, which also deletes the metadata
    files the tables no longer use (the cut versions, a killed commit's manifest and
    manifest list) and keeps every one they use: each kept snapshot still reads."""
    import os
    import shutil
    import time

    from binlake.lake.job import run_load
    from binlake.lake.maintain import maintain
    from binlake.lake.tables import METADATA_RETENTION, ROW_CHANGES

    settings = _lake(spark, tmp_path_factory.mktemp("maintain-meta"), "meta")
    by_night = {n: [f for k, f in nights["files"] if k == n] for n in (1, 2, 3)}
    assert not run_load(spark, settings, by_night[1][:1], run_id="a0").failed
    ns = f"{settings.catalog_name}.{settings.namespace}"
    names = sorted(r.tableName for r in spark.sql(f"SHOW TABLES IN {ns}").collect())
    assert any(n.startswith("mirror__") for n in names) and ROW_CHANGES in names, names
    for n in names:  # every table a load makes, typed ones included
        props = {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES {ns}.{n}").collect()}
        assert {k: props.get(k) for k in METADATA_RETENTION} == METADATA_RETENTION, (n, props)
    # the lake as binlake made it before: no retention; the log cut to 2 by hand
    for n in names:
        spark.sql(f"ALTER TABLE {ns}.{n} UNSET TBLPROPERTIES ("
                  + ", ".join(f"'{k}'" for k in METADATA_RETENTION) + ")")
        spark.sql(f"ALTER TABLE {ns}.{n} SET TBLPROPERTIES "
                  "('write.metadata.previous-versions-max'='2')")
    for i, f in enumerate(by_night[1][1:] + by_night[2]):
        assert not run_load(spark, settings, [f], run_id=f"a{i + 1}").failed
    before = _contents(spark, settings)
    rc = settings.table(ROW_CHANGES)
    meta_dir = settings.home_path / "warehouse" / settings.namespace / ROW_CHANGES / "metadata"
    on_disk = _metadata_files(settings, ROW_CHANGES)
    versions = {n for n in on_disk if n.endswith(".metadata.json")}
    assert {f".{n}.crc" for n in versions} <= on_disk  # (Spark wrote them: with checksums)
    in_log = {os.path.basename(r[0]) for r in spark.sql(
        f"SELECT file FROM {rc}.metadata_log_entries").collect()}
    assert len(in_log) <= 3 and len(versions) > len(in_log) + 3, (in_log, versions)
    # a killed commit's manifest and manifest list (copies of real ones, so they are real
    # Avro), and a file of another kind, all written an hour ago
    manifest = next(n for n in on_disk if n.endswith("-m0.avro"))
    snap_list = next(n for n in on_disk if n.startswith("snap-"))
    planted = {"0f0f0f0f-0000-4000-8000-000000000000-m0.avro": manifest,
               "snap-42-1-0f0f0f0f-0000-4000-8000-000000000000.avro": snap_list,
               "stats-0f0f.puffin": manifest}
    hour_ago = time.time() - 3600
    for new, src in planted.items():
        shutil.copyfile(meta_dir / src, meta_dir / new)
    # every file there written an hour ago: the sweep spares what was written within
    # orphans.SLACK (5 s) of its start, and on a fast machine the last load's commit comes
    # that close (the version it wrote was left: a failure that came and went)
    for f in meta_dir.iterdir():
        os.utime(f, (hour_ago, hour_ago))
    snapshots = [r[0] for r in spark.sql(f"SELECT snapshot_id FROM {rc}.snapshots").collect()]
    counts = {s: spark.sql(f"SELECT count(*) FROM {rc} VERSION AS OF {s}").collect()[0][0]
              for s in snapshots}
    assert len(snapshots) >= 5 and len(set(counts.values())) > 1, counts

    done = {u.table.rsplit(".", 1)[1]: u
            for u in maintain(spark, settings, run_id="mt-meta", retain_days=30)}
    assert not [u for u in done.values() if u.error], done
    assert [n for n in names if not done[n].retention_set] == [], done
    assert _contents(spark, settings) == before
    after = _metadata_files(settings, ROW_CHANGES)
    assert "stats-0f0f.puffin" in after  # not a kind of file a commit writes: never swept
    # Hadoop's checksums (".<name>.crc") went with their files
    assert not [n for n in after if n.startswith(".") and n.endswith(".crc")
                and n[1:-4] not in after], after
    assert not {n for n in planted if n.endswith(".avro")} & after, after
    in_log = {os.path.basename(r[0]) for r in spark.sql(
        f"SELECT file FROM {rc}.metadata_log_entries").collect()}
    assert {n for n in after if n.endswith(".metadata.json")} == in_log, (after, in_log)
    assert done[ROW_CHANGES].swept_metadata_files >= len(versions) - 3 + 2, done[ROW_CHANGES]
    props = {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES {rc}").collect()}
    assert props["write.metadata.delete-after-commit.enabled"] == "true"
    assert props["write.metadata.previous-versions-max"] == "2"  # a value set by hand stays
    # every snapshot kept still reads (its manifest list and manifests were kept), the same
    for s, n in counts.items():
        assert spark.sql(f"SELECT count(*) FROM {rc} VERSION AS OF {s}").collect()[0][0] == n

    # from now on each commit deletes the versions out of the log: the lake stays bounded
    assert not run_load(spark, settings, by_night[3], run_id="a-last").failed
    after = _metadata_files(settings, ROW_CHANGES)
    versions = {n for n in after if n.endswith(".metadata.json")}
    assert len(versions) <= 3, versions
    spark.sql(f"REFRESH TABLE {rc}")
    assert spark.sql(f"SELECT count(*) FROM {rc}").collect()[0][0] > max(counts.values())
