"""binlake's Python daemon for local sessions (lake/daemon.py): Spark's workers import PySpark
from the installed package's compiled files, not from Spark's ``pyspark.zip``, and only when
that package is the same version."""

from __future__ import annotations

import os
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from binlake.lake.daemon import DAEMON_CONF, DAEMON_MODULE, installed_first


def _archive(path: Path, package: str, version: str) -> str:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{package}/__init__.py", "")
        z.writestr(f"{package}/version.py", f'__version__: str = "{version}"\n')
    return str(path)


def _installed(site: Path, package: str, version: str) -> None:
    (site / package).mkdir(parents=True)
    (site / package / "__init__.py").write_text("")
    (site / package / "version.py").write_text(f"__version__ = '{version}'\n")


def test_archives_of_the_installed_versions_leave_the_path(tmp_path: Path) -> None:
    lib = tmp_path / "spark" / "python" / "lib"
    lib.mkdir(parents=True)
    site = tmp_path / "site"
    _installed(site, "pyspark", "3.5.9")
    _installed(site, "py4j", "0.10.9.7")
    zpy = _archive(lib / "pyspark.zip", "pyspark", "3.5.9")
    z4j = _archive(lib / "py4j-0.10.9.7-src.zip", "py4j", "0.10.9.7")
    other = str(tmp_path / "spark-core.jar")
    path = ["", zpy, z4j, other, str(site)]
    assert installed_first(path) == ["", other, str(site)]
    assert path == ["", zpy, z4j, other, str(site)]  # (a new list)

    # another version in the archive (a Spark distribution beside another pip package): kept
    (tmp_path / "old").mkdir()
    zold = _archive(tmp_path / "old" / "pyspark.zip", "pyspark", "3.4.1")
    assert installed_first([zold, z4j, str(site)]) == [zold, str(site)]
    # nothing installed beside the archives: both kept
    assert installed_first(["", zpy, z4j, other]) == ["", zpy, z4j, other]
    # an archive without a version file, or not an archive at all: kept
    bad = tmp_path / "bad" / "pyspark.zip"
    bad.parent.mkdir()
    bad.write_bytes(b"not a zip")
    assert installed_first([str(bad), str(site)]) == [str(bad), str(site)]
    assert installed_first([other, str(site)]) == [other, str(site)]


def _where_tasks_import(spark: Any) -> list[tuple[str, bool]]:
    """pyspark's file and whether any Spark archive is on the path, in an RDD task's worker
    and in a mapInArrow task's (two worker pools, each with its own daemon)."""
    def probe(_: Any) -> tuple[str, bool]:
        import pyspark

        return pyspark.__file__, any(p.endswith("pyspark.zip") for p in sys.path)

    rdd = spark.sparkContext.parallelize([0], 1).map(probe).collect()

    def arrow(batches: Any) -> Any:
        import pyarrow as pa

        f, z = probe(None)
        for _ in batches:
            pass
        yield pa.RecordBatch.from_pydict({"f": [f], "z": [z]})

    rows = spark.range(1).mapInArrow(arrow, "f string, z boolean").collect()
    return rdd + [(r.f, r.z) for r in rows]


@pytest.mark.spark
def test_local_workers_import_the_installed_pyspark(spark_lake: Any) -> None:
    """The shared session (local[2], built by build_session) runs binlake's daemon, and its
    workers of both pools import PySpark from the same files as this process (the installed
    package), none of Spark's archives on their path.  Spark's own daemon puts
    ``pyspark.zip`` first, and the workers import from it."""
    import pyspark

    spark = spark_lake
    assert spark.sparkContext.getConf().get(DAEMON_CONF) == DAEMON_MODULE
    here = os.path.dirname(os.path.abspath(pyspark.__file__))
    for file, zipped in _where_tasks_import(spark):
        assert ".zip" not in file and os.path.dirname(os.path.abspath(file)) == here, file
        assert not zipped


def test_which_sessions_get_it(tmp_path: Path) -> None:
    """Local masters, unless the conf names a daemon of its own; the nightly load's
    spark-submit the same (with the local file system's keys beside it)."""
    from binlake.config import load_settings
    from binlake.lake.spark import local_worker_conf
    from binlake.orchestrate import submit_local_conf, submit_local_fs_conf

    assert local_worker_conf("local[2]", {}) == {DAEMON_CONF: DAEMON_MODULE}
    assert local_worker_conf("local", {"spark.ui.enabled": "false"}) == {
        DAEMON_CONF: DAEMON_MODULE}
    for master in ("spark://h:7077", "yarn", "k8s://https://h", None, ""):
        assert local_worker_conf(master, {}) == {}
    assert local_worker_conf("local[2]", {DAEMON_CONF: "pyspark.daemon"}) == {}

    settings = load_settings(env={"BINLAKE_HOME": str(tmp_path)})
    base = {"spark.ui.enabled": "false"}
    got = submit_local_conf(settings, base, "local[2]", None)
    assert got == {**submit_local_fs_conf(settings, base, "local[2]", None),
                   DAEMON_CONF: DAEMON_MODULE}
    assert submit_local_conf(settings, base, "spark://h:7077", None) == base
    own = {**base, DAEMON_CONF: "pyspark.daemon"}
    assert submit_local_conf(settings, own, "local[2]", None)[DAEMON_CONF] == "pyspark.daemon"
