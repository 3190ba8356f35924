"""A Spark Python worker process's set-up for the binlake tasks it runs, and their ends.

Spark's worker (``pyspark/worker.py``) calls ``importlib.invalidate_caches()`` before every
task.  On Python 3.11 a ``zipimporter`` then reads its archive's whole directory again, and a
worker holds one importer per package of ``pyspark.zip`` it imported from: 13 of them once a
decode task has run, about 60 ms of re-reading the same 2.4 MB archive before every task
(measured in a ``local[2]`` job; a decode task takes about 3 s, a validation fact task of a
small file well under 0.1 s).  Python 3.12 re-reads lazily, on the next lookup in the
archive.  :func:`tune_worker` makes 3.11's re-read conditional: an archive is read again
only when its size or modification time changed since it was last read, which is when a
re-read can find something new (Spark ships a changed ``--py-files`` archive under a new
name or with a new time).

PySpark's daemon also runs a full garbage collection after every task in a reused worker,
and a decode task runs one after each range.  A full collection walks every object the
process tracks, the modules of PySpark, pyarrow, pandas and binlake included: about 40 ms
each in a worker that has run a decode task, twice a task.  With one range or file per task
and many small files (200 binlogs of 1 MB: 0.28 s a decode task, 0.07 s a survey task) that
was most of a task.  :func:`settle`, at the end of binlake's tasks, freezes what survives
the worker's first task (``gc.freeze``: the modules and the caches), so that later
collections walk only what the tasks made since.
"""

from __future__ import annotations

import gc
import os
import sys
import zipimport
from typing import Any

# archive path -> (size, mtime_ns) when its directory was last read here
_READ_AS: dict[str, tuple[int, int]] = {}


def _stamp(archive: str) -> tuple[int, int] | None:
    try:
        st = os.stat(archive)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def _invalidate_when_changed(original: Any) -> Any:
    def invalidate_caches(self: Any) -> None:
        """Read the archive's directory again only if the archive changed since it was
        read (``binlake.lake.worker``)."""
        archive = self.archive
        stamp = _stamp(archive)
        cached = zipimport._zip_directory_cache.get(archive)  # type: ignore[attr-defined]
        if stamp is not None and cached is not None and _READ_AS.get(archive) == stamp:
            self._files = cached
            return
        original(self)
        if stamp is not None:
            _READ_AS[archive] = stamp

    invalidate_caches.__wrapped__ = original  # type: ignore[attr-defined]
    return invalidate_caches


def tune_worker(force: bool = False) -> bool:
    """Install the conditional re-read in this process when it is a Spark Python worker
    (or with ``force``) on a Python whose ``zipimporter`` re-reads eagerly (before 3.12).
    Idempotent; returns whether it is installed."""
    cls = zipimport.zipimporter
    if hasattr(cls.invalidate_caches, "__wrapped__"):
        return True
    if sys.version_info >= (3, 12):
        return False
    if not force and not in_worker():
        return False
    cls.invalidate_caches = _invalidate_when_changed(cls.invalidate_caches)  # type: ignore[method-assign]
    return True


_FROZEN = False  # this worker froze what its first task left (settle)


def in_worker() -> bool:
    """Whether this process is a Spark Python worker (the driver never imports
    ``pyspark.worker``)."""
    return "pyspark.worker" in sys.modules


def settle(collect: bool = False) -> bool:
    """The end of a task, or of a decode range.  In a Spark Python worker: a full collection,
    then, the first time, whatever survives it frozen (see the module doc): returns True.
    Elsewhere (a task run in the driver's process): a full collection when ``collect``, and
    False.  Objects frozen are still freed when nothing refers to them; only a reference
    cycle among them that becomes garbage later stays (the first task's, once)."""
    global _FROZEN
    if not in_worker():
        if collect:
            gc.collect()
        return False
    gc.collect()
    if not _FROZEN:
        gc.freeze()
        _FROZEN = True
    return True
