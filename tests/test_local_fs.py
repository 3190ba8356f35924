"""binlake's local file system for Hadoop (lake/jvm/NioLocalFileSystem.java): when a session
gets it, and that it sets the permissions Hadoop's own sets, through the JDK (Hadoop's runs a
``chmod`` process per file without its native library)."""

from __future__ import annotations

import os
import shutil
import stat
import zipfile
from pathlib import Path
from typing import Any

import pytest

from binlake.config import ConfigError, load_settings

pytest.importorskip("pyspark")

from binlake.lake import jvm


def _settings(tmp_path: Path, **kw: Any) -> Any:
    return load_settings(env={"BINLAKE_HOME": str(tmp_path)}, **kw)


def test_when_a_session_gets_it(tmp_path: Path) -> None:
    if shutil.which("javac") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no JDK to build the jar")
    jar = jvm.local_fs_jar_for(_settings(tmp_path))
    assert jar is not None and jar == jvm.local_fs_jar()
    with zipfile.ZipFile(jar) as z:
        assert "binlake/hadoop/NioLocalFileSystem.class" in z.namelist()
        assert "binlake/hadoop/NioLocalFileSystem$Raw.class" in z.namelist()
    # off, or the user's own class path / file system: none
    assert jvm.local_fs_jar_for(_settings(tmp_path, spark_local_fs="hadoop")) is None
    for key in ("spark.driver.extraClassPath", "spark.hadoop.fs.file.impl"):
        assert jvm.local_fs_jar_for(_settings(tmp_path, spark_conf={key: "x"})) is None
    with pytest.raises(ConfigError, match="spark_local_fs"):
        _settings(tmp_path, spark_local_fs="nfs")


def test_spark_submit_conf_of_the_load(tmp_path: Path) -> None:
    """The nightly load task's spark-submit (dags/binlake_nightly.py) gets it as a session
    binlake starts would: on a local master with the driver here; not on a cluster master, in
    cluster deploy mode, when the settings turn it off, or when the task's conf already sets
    either key (tests/test_load_credentials.py checks a real spark-submit's driver)."""
    from binlake.orchestrate import submit_local_fs_conf

    if shutil.which("javac") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no JDK to build the jar")
    base = {"spark.ui.enabled": "false"}
    got = submit_local_fs_conf(_settings(tmp_path), base, "local[2]", None)
    assert got == {**base, "spark.driver.extraClassPath": jvm.local_fs_jar(),
                   "spark.hadoop.fs.file.impl": jvm.LOCAL_FS}
    assert base == {"spark.ui.enabled": "false"}  # (not changed in place)
    assert submit_local_fs_conf(_settings(tmp_path), base, "local", "client") == got
    for master, mode in (("spark://h:7077", None), ("yarn", "client"), ("local[2]", "cluster"),
                         (None, None)):
        assert submit_local_fs_conf(_settings(tmp_path), base, master, mode) == base
    assert submit_local_fs_conf(_settings(tmp_path, spark_local_fs="hadoop"), base,
                                "local[2]", None) == base
    for key in ("spark.driver.extraClassPath", "spark.hadoop.fs.file.impl"):
        own = {**base, key: "/mine"}
        assert submit_local_fs_conf(_settings(tmp_path), own, "local[2]", None) == own


def test_no_jdk_no_jar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without javac (and no jar built yet) sessions simply go without: no error."""
    monkeypatch.setattr(jvm, "cache_dir", lambda: tmp_path / "cache")
    monkeypatch.setattr(jvm, "_javac", lambda: None)
    assert jvm.local_fs_jar() is None


@pytest.mark.spark
def test_permissions_as_hadoops_own(spark_lake: Any, tmp_path: Path) -> None:
    """The shared session (local[2], built by build_session) uses it for ``file:`` paths, and
    files and directories made with a permission get the same mode as through Hadoop's own
    RawLocalFileSystem (modes unlike what a plain create or mkdir gives, so a permission not
    set at all shows)."""
    spark = spark_lake
    jvm_ = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    if jvm.local_fs_jar_for(load_settings(env={"BINLAKE_HOME": str(tmp_path)})) is None:
        pytest.skip("no JDK: the session runs with Hadoop's own")
    assert conf.get("fs.file.impl") == jvm.LOCAL_FS
    hpath = jvm_.org.apache.hadoop.fs.Path
    ours = hpath(f"file://{tmp_path}").getFileSystem(conf)
    assert ours.getClass().getName() == jvm.LOCAL_FS
    theirs = jvm_.org.apache.hadoop.fs.RawLocalFileSystem()
    theirs.initialize(jvm_.java.net.URI.create("file:///"), conf)
    perm = jvm_.org.apache.hadoop.fs.permission.FsPermission

    def made(fs: Any, name: str, file_mode: int, dir_mode: int) -> tuple[int, int]:
        d = tmp_path / name
        assert fs.mkdirs(hpath(f"file://{d}"), perm(dir_mode))
        f = d / "f"
        out = fs.create(hpath(f"file://{f}"), perm(file_mode), True, 4096, 1, 1 << 20, None)
        out.write(b"x")
        out.close()
        return stat.S_IMODE(os.stat(d).st_mode), stat.S_IMODE(os.stat(f).st_mode)

    for i, (file_mode, dir_mode) in enumerate([(0o600, 0o700), (0o640, 0o750),
                                               (0o604, 0o711)]):
        got = made(ours, f"ours{i}", file_mode, dir_mode)
        want = made(theirs, f"theirs{i}", file_mode, dir_mode)
        assert got == want, (oct(got[0]), oct(got[1]), oct(want[0]), oct(want[1]))
        assert got[1] != 0o644 and got[0] != 0o755  # (set, not the defaults)
    # the checksum file of a checksummed create is there, as with Hadoop's LocalFileSystem
    assert (tmp_path / "ours0" / ".f.crc").exists()
