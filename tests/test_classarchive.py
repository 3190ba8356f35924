"""The driver JVM's class archive (``binlake.lake.classarchive``).

* Pure: an archive is used only whole (its recorded size); its name changes with the jars,
  the JVM options and the setting; settings that cannot have one get none; the session's
  driver options carry it exactly when it is usable.
* Real (a JVM): ``binlake jvm-archive`` builds one that a new session then maps (it is in
  the JVM's memory maps), a truncated one is not used and the session still starts (the JVM
  itself would crash on it: SIGBUS), and a load through the archive lands its file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from binlake.config import Settings
from binlake.lake import classarchive as ca
from binlake.lake.spark import driver_java_options, jars_for

from .corpus import CORPUS, require_corpus

SMALL = "libs/mariadb-poc/binlogs/domain_id_0/mariadb-repl-bin.000002"  # 3.7 MB, MariaDB


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "binlake" / "jvm"


def _jar(tmp_path: Path) -> str:
    jar = tmp_path / "x.jar"
    jar.write_bytes(b"PK\x05\x06" + bytes(18))
    return str(jar)


def test_an_archive_is_usable_only_whole(tmp_path: Path) -> None:
    p = tmp_path / "driver-x.jsa"
    assert not ca.usable(p) and not ca.usable(None)
    p.write_bytes(b"x" * 100)
    assert not ca.usable(p)  # no recorded size: not known to be whole
    p.with_suffix(".size").write_text("100")
    assert ca.usable(p)
    p.write_bytes(b"x" * 60)  # truncated
    assert not ca.usable(p)
    p.with_suffix(".size").write_text("sixty")
    assert not ca.usable(p)


def test_the_archive_name_follows_jars_options_and_settings(tmp_path: Path, cache: Path) -> None:
    jar = _jar(tmp_path)
    s = Settings(home=str(tmp_path / "lake"))
    a = ca.archive_path(s, [jar])
    assert a is not None and a.parent == cache and a.name.startswith("driver-")
    assert ca.archive_path(s, [jar]) == a
    assert ca.archive_path(replace(s, home=str(tmp_path / "other")), [jar]) == a
    os.utime(jar, ns=(1, 10**18))  # the jar changed
    b = ca.archive_path(s, [jar])
    assert b is not None and b != a
    assert ca.archive_path(replace(s, spark_driver_java_options="-Xmx1g"), [jar]) not in (a, b)
    assert ca.archive_path(replace(s, spark_class_archive="off"), [jar]) is None
    if ca.archive_path(replace(s, spark_local_fs="hadoop"), [jar]) != b:
        # binlake's local file system (a JDK built it): on the driver's class path, so in
        # the archive's name; the name without it differs
        assert any(p.name.startswith("binlake-localfs-") for p in cache.iterdir())
    else:
        assert not cache.exists() or not any(
            p.name.startswith("binlake-localfs-") for p in cache.iterdir())
    assert ca.archive_path(replace(s, spark_packages="org.x:y:1"), [jar]) is None
    assert ca.archive_path(replace(s, catalog_type="rest",
                                   catalog_uri="http://127.0.0.1:1"), [jar]) is None
    with pytest.raises(ca.ClassArchiveError, match="spark_class_archive is off"):
        ca.build(replace(s, spark_class_archive="off"), [jar])


def test_driver_options_carry_a_whole_archive_only(tmp_path: Path, cache: Path) -> None:
    s = Settings(home=str(tmp_path / "lake"))
    jars = [_jar(tmp_path)]
    p = ca.archive_path(s, jars)
    assert p is not None
    assert driver_java_options(s, jars) == s.spark_driver_java_options
    cache.mkdir(parents=True, exist_ok=True)  # (the local file system's jar may be there)
    p.write_bytes(b"x" * 10)
    assert "SharedArchiveFile" not in driver_java_options(s, jars)  # size not recorded
    p.with_suffix(".size").write_text("10")
    opts = driver_java_options(s, jars, "-Djava.library.path=/j").split()
    want = ["-Djava.library.path=/j", *s.spark_driver_java_options.split()]
    assert opts[:len(want)] == want
    assert f"-XX:SharedArchiveFile={p}" in opts and "-Xlog:cds=off,cds+dynamic=off" in opts
    assert "SharedArchiveFile" not in driver_java_options(
        replace(s, spark_class_archive="off"), jars)


_SESSION = """
import json, os, sys
from binlake.config import load_settings
from binlake.lake.spark import build_session
from binlake.lake.job import run_load
s = load_settings()
spark = build_session(s, master="local[1]")
pid = spark._jvm.java.lang.ProcessHandle.current().pid()
maps = open(f"/proc/{pid}/maps").read()
# (the JDK's own base archive, classes.jsa, is mapped too)
out = {"mapped": sorted({m.split()[-1] for m in maps.splitlines()
                         if m.endswith(".jsa") and "/driver-" in m})}
if len(sys.argv) > 1:
    summary = run_load(spark, s, sys.argv[1:])
    out["files"] = [(f["file"], f["status"]) for f in summary.files]
print("RESULT " + json.dumps(out))
"""


def _session(tmp_path: Path, env: dict[str, str], *sources: str) -> dict[str, list]:
    done = subprocess.run([sys.executable, "-c", _SESSION, *sources], env=env, text=True,
                          capture_output=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "[warning]" not in done.stdout, done.stdout[-2000:]
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    return json.loads(line[len("RESULT "):])


@pytest.mark.spark
@pytest.mark.slow
def test_a_built_archive_is_mapped_and_a_truncated_one_is_not(tmp_path: Path) -> None:
    require_corpus()
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"),
               BINLAKE_HOME=str(tmp_path / "lake"))
    exe = Path(sys.executable).with_name("binlake")
    built = subprocess.run([str(exe), "jvm-archive"], env=env, text=True,
                           capture_output=True, timeout=900, check=False)
    assert built.returncode == 0, built.stderr[-3000:]
    path = Path(built.stdout.strip())
    settings = Settings(home=str(tmp_path / "lake"))
    env_cache = tmp_path / "cache" / "binlake" / "jvm"
    assert path.parent == env_cache and ca.usable(path)
    # (with a JDK, binlake's local file system jar beside it: part of the archive's name)
    assert sorted(p.name for p in env_cache.iterdir()
                  if not p.name.startswith("binlake-localfs-")) == sorted(
        [path.name, path.stem + ".size"])
    # the name a session computes is the one built
    os.environ["XDG_CACHE_HOME"] = env["XDG_CACHE_HOME"]
    try:
        assert ca.archive_path(settings, jars_for(settings)) == path
    finally:
        del os.environ["XDG_CACHE_HOME"]
    # --if-missing: there already, nothing built
    built_at = path.stat().st_mtime_ns
    again = subprocess.run([str(exe), "jvm-archive", "--if-missing"], env=env, text=True,
                           capture_output=True, timeout=120, check=False)
    assert again.returncode == 0 and again.stdout.strip() == str(path)
    assert path.stat().st_mtime_ns == built_at

    got = _session(tmp_path, env, str(CORPUS / SMALL))
    assert got["mapped"] == [str(path)], got
    assert got["files"] == [["mariadb-repl-bin.000002", "loaded"]], got

    # truncated in place (its recorded size kept): not used, and the JVM starts
    data = path.read_bytes()
    path.chmod(0o644)
    path.write_bytes(data[:1 << 20])
    got = _session(tmp_path, env)
    assert got["mapped"] == [], got
