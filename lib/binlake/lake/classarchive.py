"""A class-data-sharing archive for the driver JVM (JDK 13+ dynamic AppCDS).

Every load starts a JVM that loads and links some 10,000 classes (Spark, Iceberg, the JDBC
catalog) before it does any work: about 3 s of a small load on two cores.  A dynamic archive
holds them ready to map.  ``binlake jvm-archive`` builds one (``infra/setup.sh`` does it): a
JVM run with ``-XX:ArchiveClassesAtExit`` does a little of everything a load does on a
scratch lake, and writes the archive when it exits.  Sessions that binlake starts then use
it (``spark_class_archive = "auto"``, the default), when it was built for the same Java, the
same jars and the same driver JVM options: the archive's name is a digest of them, so an
upgraded jar or JVM simply finds no archive (and runs as without one) until it is rebuilt.

The JVM trusts an archive file: a truncated one crashes it (SIGBUS while mapping, measured
on OpenJDK 17).  So an archive is only ever used whole:

* it is written in a scratch directory, and moved into place only after the dumping JVM has
  exited and its log says the archive was written, with that many bytes;
* its size is recorded next to it (``.size``, written after the archive is in place); a
  session uses the archive only when the file has that size.

Only the embedded default catalog (SQLite, the local jars) has an archive: the archive is
built on a scratch lake of the same kind, never against a production catalog.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path

from ..config import Settings
from .jvm import cache_dir, local_fs_jar_for

STALE = 30 * 86400
FORMAT = 1  # part of the digest: a change in how archives are built retires the old ones
_WRITTEN = re.compile(r"Written dynamic archive .*\[\d+ bytes header, (\d+) bytes total\]")


class ClassArchiveError(RuntimeError):
    """The archive could not be built (the reason says why)."""


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return os.path.realpath(java) if java and os.path.exists(java) else None


def _stat(path: str) -> str:
    st = os.stat(path)
    return f"{os.path.realpath(path)}:{st.st_size}:{st.st_mtime_ns}"


def supported(settings: Settings) -> str | None:
    """Why ``settings`` have no archive (None: they can have one)."""
    if settings.spark_class_archive == "off":
        return "spark_class_archive is off"
    if settings.spark_packages:
        return "jars come from spark_packages (resolved at start)"
    if settings.catalog_type != "jdbc" or not settings.jdbc_uri.startswith("jdbc:sqlite:"):
        return "only the embedded SQLite catalog has an archive"
    if _java() is None:
        return "no java (JAVA_HOME or PATH)"
    return None


def archive_path(settings: Settings, jars: list[str]) -> Path | None:
    """Where the archive for these settings and jars is (or would be); None when they
    cannot have one (:func:`supported`)."""
    if supported(settings) is not None:
        return None
    import pyspark

    java = _java()
    assert java is not None
    spark_jars = Path(pyspark.__file__).parent / "jars"
    parts = [str(FORMAT), _stat(java), settings.spark_driver_java_options.strip()]
    parts += [_stat(str(p)) for p in sorted(spark_jars.glob("*.jar"))]
    parts += [_stat(j) for j in jars]
    local_fs = local_fs_jar_for(settings)  # (on the driver's class path too: build_session)
    if local_fs is not None:
        parts.append(_stat(local_fs))
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:20]
    return cache_dir() / f"driver-{digest}.jsa"


def usable(path: Path | None) -> bool:
    """The archive at ``path`` is there whole (its recorded size)."""
    if path is None:
        return False
    try:
        recorded = int(path.with_suffix(".size").read_text().strip())
        return path.stat().st_size == recorded
    except (OSError, ValueError):
        return False


def java_options(path: Path) -> str:
    # -Xlog: the JVM prints a warning on stdout when it cannot use an archive (another
    # classpath); a load's stdout is its summary.
    return f"-XX:SharedArchiveFile={path} -Xshare:auto -Xlog:cds=off,cds+dynamic=off"


def build(settings: Settings, jars: list[str], sources: list[str] | None = None,
          timeout: float = 900) -> Path:
    """Build the archive for ``settings`` (see the module's docstring); returns its path.
    ``sources``: binlog files the warm-up also loads into its scratch lake (the archive then
    holds what a real load uses: a quarter fewer classes left to load from the jars).
    Archives of other digests older than ``STALE`` are removed."""
    why = supported(settings)
    if why is not None:
        raise ClassArchiveError(f"no class archive: {why}")
    final = archive_path(settings, jars)
    assert final is not None
    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="build-", dir=final.parent))
    try:
        dump, log, pid_file = work / "driver.jsa", work / "dump.log", work / "jvm.pid"
        opts = " ".join(o for o in (
            settings.spark_driver_java_options.strip(), f"-XX:ArchiveClassesAtExit={dump}",
            f"-Xlog:cds=info,cds+dynamic=info:file={log}") if o)
        scratch = replace(settings, home=str(work / "lake"), catalog_uri="", warehouse="",
                          spark_driver_java_options=opts, spark_jars=",".join(jars),
                          spark_class_archive="off")
        env = dict(os.environ, BINLAKE_CLASS_ARCHIVE_BUILD=json.dumps(
            {"settings": asdict(scratch), "sources": list(sources or [])}))
        done = subprocess.run([sys.executable, "-m", "binlake.lake.warmup", str(pid_file)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=timeout, check=False)
        if done.returncode != 0:
            raise ClassArchiveError(f"the warm-up run failed (exit {done.returncode}): "
                                    f"{done.stdout[-2000:]}")
        # The JVM writes the archive as it exits, which may be after the Python process.
        pid = int(pid_file.read_text())
        deadline = time.monotonic() + timeout
        while _alive(pid):
            if time.monotonic() > deadline:
                raise ClassArchiveError(f"the JVM (pid {pid}) did not exit")
            time.sleep(0.2)
        m = _WRITTEN.search(log.read_text(errors="replace")) if log.exists() else None
        if m is None or not dump.exists() or dump.stat().st_size < int(m.group(1)):
            raise ClassArchiveError(f"the JVM did not write the archive whole (see {log})")
        size = dump.stat().st_size
        os.replace(dump, final)
        tmp = work / "size"
        tmp.write_text(str(size))
        os.replace(tmp, final.with_suffix(".size"))
        # Archives of other digests not rebuilt for STALE seconds: left by an upgrade (other
        # virtualenvs sharing the cache keep theirs as long as their setup rebuilds them).
        for old in final.parent.glob("driver-*.jsa"):
            if old != final and time.time() - old.stat().st_mtime > STALE:
                old.with_suffix(".size").unlink(missing_ok=True)
                old.unlink(missing_ok=True)
        return final
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (exited, not reaped) is not running
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True
