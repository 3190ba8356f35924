"""The Python daemon that binlake's Spark sessions on a local master start their workers from
(``spark.python.daemon.module``), and the same import path for a driver under
``spark-submit``.

Spark puts its own archives first on a Python worker's path: ``$SPARK_HOME/python/lib/
pyspark.zip`` and ``py4j-*-src.zip`` (``PythonUtils.sparkPythonPath``), and ``spark-submit``
does the same for the driver of a Python job.  Python cannot write compiled files into an
archive, so every daemon and every worker it forks compiles the PySpark modules it imports
from their source, and on Python 3.11 ``zipimport`` compiles each module twice (once to
name its file, once to load it): about 0.65 s of CPU per process for the modules a worker
of an Arrow task imports, against 0.35 s from the installed package's compiled files
(measured on this machine, ``python -c "import pyspark.daemon, pyspark.worker, ..."``).
A load starts a daemon for each of its two worker pools (Spark's RDD tasks and its
``mapInArrow`` tasks) and a worker per core in each, and a small load waits for most of them.

When pip installed PySpark (``pyspark/python/lib`` inside the package is then the
``SPARK_HOME``), the same PySpark is on the path twice: :func:`installed_first` drops the
archives whose package is importable from the rest of the path at the same version, read
from each one's ``version.py`` without importing it.  An archive of another version (a
Spark distribution beside a different pip package) stays where Spark put it.

:func:`main` is the daemon: the path set this way, then PySpark's own daemon
(``pyspark.daemon.manager``), whose forked workers inherit it.  Nothing here writes to
standard output: Spark reads the daemon's port from it.
"""

from __future__ import annotations

import os
import re
import sys
import zipfile
from importlib.machinery import PathFinder

# binlake's daemon module, for spark.python.daemon.module
DAEMON_MODULE = "binlake.lake.daemon"
DAEMON_CONF = "spark.python.daemon.module"

_VERSION = re.compile(r"""__version__\s*(?::\s*str\s*)?=\s*["']([^"']+)["']""")
_PY4J_ZIP = re.compile(r"py4j-[0-9][0-9A-Za-z.]*-src\.zip")


def _version_of(text: str) -> str | None:
    m = _VERSION.search(text)
    return m.group(1) if m else None


def _archived_version(archive: str, package: str) -> str | None:
    """``package``'s version as ``archive`` (a zip on the path) holds it, or None."""
    try:
        with zipfile.ZipFile(archive) as z:
            return _version_of(z.read(f"{package}/version.py").decode("utf-8", "replace"))
    except (OSError, KeyError, zipfile.BadZipFile):
        return None


def _installed_version(package: str, path: list[str]) -> str | None:
    """``package``'s version where ``path`` finds it (a directory, not an archive), or None."""
    spec = PathFinder.find_spec(package, path)
    if spec is None or not spec.submodule_search_locations:
        return None
    for where in spec.submodule_search_locations:
        try:
            with open(os.path.join(where, "version.py"), encoding="utf-8") as f:
                return _version_of(f.read())
        except OSError:
            continue
    return None


def _package_of(entry: str) -> str | None:
    name = os.path.basename(entry)
    if name == "pyspark.zip":
        return "pyspark"
    if _PY4J_ZIP.fullmatch(name):
        return "py4j"
    return None


def installed_first(path: list[str]) -> list[str]:
    """``path`` (a ``sys.path``) without Spark's ``pyspark.zip`` and ``py4j-*-src.zip``
    entries whose package the rest of ``path`` finds installed at the same version."""
    archives = {e: p for e in path if (p := _package_of(e)) is not None}
    if not archives:
        return list(path)
    rest = [e for e in path if e not in archives]
    drop = set()
    for entry, package in archives.items():
        have = _installed_version(package, rest)
        if have is not None and have == _archived_version(entry, package):
            drop.add(entry)
    return [e for e in path if e not in drop]


def use_installed() -> bool:
    """:func:`installed_first` applied to this process's ``sys.path``, before PySpark is
    imported (later it changes nothing already imported); returns whether it dropped an
    archive."""
    new = installed_first(sys.path)
    if len(new) == len(sys.path):
        return False
    sys.path[:] = new
    return True


def main() -> None:
    use_installed()
    from pyspark.daemon import manager

    from .worker import tune_worker

    tune_worker()  # (binlake.lake was imported before pyspark.worker: not yet installed)
    manager()


if __name__ == "__main__":
    main()
