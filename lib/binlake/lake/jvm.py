"""binlake's own JVM classes: the JDK-only S3 FileIO for Iceberg (``jvm/HttpS3FileIO.java``),
and Hadoop's local file system without a ``chmod`` process per file
(``jvm/NioLocalFileSystem.java``, :func:`local_fs_jar`).

A warehouse on S3 needs an Iceberg FileIO for S3 in Spark's JVM, on the driver (commits,
metadata) and on the executors (Spark's reads and writes of table data).  Iceberg's own
``S3FileIO`` needs the AWS SDK v2 bundle (``org.apache.iceberg:iceberg-aws-bundle``), which
online users add through ``spark_packages``; offline there is none.  binlake ships the source
of a small FileIO written on the JDK alone (``java.net.http`` and SigV4 signing) and builds
it with ``javac`` against the Iceberg runtime jar the first time a session needs it; the jar
is kept in the JVM cache directory (``~/.cache/binlake/jvm``, beside the class archives),
named by a digest of the source, so an upgrade of binlake builds a new one.  ``infra/setup.sh``
builds it ahead.  :func:`s3_io_impl` says which FileIO a session uses.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from ..config import Settings


def cache_dir() -> Path:
    """Where binlake keeps its JVM files: these jars, the class archives (classarchive.py)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "binlake" / "jvm"


SOURCE = Path(__file__).with_name("jvm") / "HttpS3FileIO.java"
LOCAL_FS_SOURCE = Path(__file__).with_name("jvm") / "NioLocalFileSystem.java"
LOCAL_FS = "binlake.hadoop.NioLocalFileSystem"
BINLAKE_S3_IO = "binlake.iceberg.HttpS3FileIO"
ICEBERG_S3_IO = "org.apache.iceberg.aws.s3.S3FileIO"


class JvmBuildError(RuntimeError):
    """binlake's JVM classes could not be built (the message says why and what to do)."""


def s3_io_impl(spark_packages: str, spark_jars: str) -> str:
    """The FileIO class for an S3 warehouse: Iceberg's ``S3FileIO`` when the AWS bundle is
    among the session's packages or jars, else binlake's."""
    if "iceberg-aws-bundle" in spark_packages or "iceberg-aws-bundle" in spark_jars:
        return ICEBERG_S3_IO
    return BINLAKE_S3_IO


def fileio_jar(iceberg_jar: str, javac: str | None = None) -> str:
    """The path of the jar of binlake's S3 FileIO, built against ``iceberg_jar`` if it is not
    built yet.  Raises :class:`JvmBuildError` without a JDK."""
    javac = javac or _javac()
    if javac is None and not _built(SOURCE, "binlake-s3fileio").exists():
        raise JvmBuildError(
            "an s3:// warehouse needs an S3 FileIO in Spark's JVM: install a JDK (javac) so "
            "binlake can build its own, or give spark_packages "
            "org.apache.iceberg:iceberg-aws-bundle:1.10.2 (Iceberg's S3FileIO)")
    return _jar(SOURCE, "binlake-s3fileio", iceberg_jar, javac)


def local_fs_jar(javac: str | None = None) -> str | None:
    """The path of the jar of :data:`LOCAL_FS` (``jvm/NioLocalFileSystem.java``), built
    against pyspark's Hadoop client jar if it is not built yet; None when it cannot be (no
    JDK, no such jar, javac failed): Hadoop's own local file system serves then, the same
    but for a ``chmod`` process per file it creates."""
    out = _built(LOCAL_FS_SOURCE, "binlake-localfs")
    if out.exists():
        return str(out)
    try:
        import pyspark
    except ImportError:
        return None
    hadoop = sorted((Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"))
    javac = javac or _javac()
    if not hadoop or javac is None:
        return None
    try:
        return _jar(LOCAL_FS_SOURCE, "binlake-localfs", str(hadoop[-1]), javac)
    except (JvmBuildError, OSError):
        return None


# The Spark options that give a session binlake's local file system; a configuration that
# sets either itself turns it off (its own win).
LOCAL_FS_KEYS = frozenset({"spark.driver.extraClassPath", "spark.hadoop.fs.file.impl"})


def local_fs_jar_for(settings: Settings) -> str | None:
    """:func:`local_fs_jar` when a session binlake starts is to have it: ``spark_local_fs``
    is ``nio`` and ``spark_conf`` sets neither the driver's class path nor
    ``fs.file.impl``."""
    if settings.spark_local_fs != "nio" or LOCAL_FS_KEYS & settings.spark_conf.keys():
        return None
    return local_fs_jar()


def _built(source: Path, name: str) -> Path:
    """Where the jar of ``source`` is kept: named by a digest of the source."""
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    return cache_dir() / f"{name}-{digest}.jar"


def _jar(source: Path, name: str, classpath: str, javac: str | None) -> str:
    """The jar of ``source`` (:func:`_built`), compiled against ``classpath`` if it is not
    there yet."""
    out = _built(source, name)
    if out.exists():
        return str(out)
    assert javac is not None
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="binlake-javac-") as tmp:
        classes = os.path.join(tmp, "classes")
        proc = subprocess.run(
            [javac, "--release", "17", "-nowarn", "-cp", classpath, "-d", classes,
             str(source)], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise JvmBuildError(f"javac failed on {source.name}: "
                                f"{(proc.stderr or proc.stdout).strip()[-2000:]}")
        staged = os.path.join(tmp, out.name)
        with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
            for root, _, files in os.walk(classes):
                for fname in sorted(files):
                    full = os.path.join(root, fname)
                    jar.write(full, os.path.relpath(full, classes))
        # (another process may build the same jar at the same time: the same bytes, and a
        # rename is atomic, so either copy is whole)
        tmp_out = out.with_name(f".{out.name}.{os.getpid()}")
        shutil.copyfile(staged, tmp_out)
        os.replace(tmp_out, out)
    return str(out)


def _javac() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and os.path.exists(os.path.join(home, "bin", "javac")):
        return os.path.join(home, "bin", "javac")
    return shutil.which("javac")
