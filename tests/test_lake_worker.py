"""A Spark Python worker's set-up (binlake.lake.worker): an unchanged zip archive is not read
again before every task, a changed one is, and binlake's tasks install it in the workers."""

from __future__ import annotations

import importlib
import os
import sys
import zipfile
import zipimport
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from binlake.lake import worker as W

eager = pytest.mark.skipif(sys.version_info >= (3, 12),
                           reason="Python 3.12's zipimporter re-reads lazily already")


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The conditional re-read installed (and removed after); yields the archives whose
    directory was read, one entry per read."""
    cls = zipimport.zipimporter
    before = cls.invalidate_caches
    while hasattr(cls.invalidate_caches, "__wrapped__"):  # (a worker test ran in-process)
        cls.invalidate_caches = cls.invalidate_caches.__wrapped__  # type: ignore[method-assign]
    reads: list[str] = []
    real = zipimport._read_directory  # type: ignore[attr-defined]

    def counted(archive: str) -> Any:
        reads.append(archive)
        return real(archive)

    monkeypatch.setattr(zipimport, "_read_directory", counted)
    monkeypatch.setattr(W, "_READ_AS", {})
    assert W.tune_worker(force=True)
    try:
        yield reads
    finally:
        cls.invalidate_caches = before  # type: ignore[method-assign]


def _zip(path: Path, modules: dict[str, str]) -> None:
    with zipfile.ZipFile(path, "w") as z:
        for name, text in modules.items():
            z.writestr(f"{name}.py", text)


@eager
def test_unchanged_archive_not_read_again_changed_one_is(
        tmp_path: Path, installed: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "pkgs.zip"
    _zip(archive, {"blk_zmod_a": "VALUE = 1\n"})
    monkeypatch.syspath_prepend(str(archive))
    import blk_zmod_a  # type: ignore[import-not-found]

    assert blk_zmod_a.VALUE == 1
    installed.clear()
    importlib.invalidate_caches()  # the first time: read, as Python does
    assert installed.count(str(archive)) == 1
    for _ in range(3):  # what Spark's worker does before each task
        importlib.invalidate_caches()
    assert installed.count(str(archive)) == 1
    # a new archive in its place (another size and time): read again, its new module found
    _zip(archive, {"blk_zmod_a": "VALUE = 1\n", "blk_zmod_b": "VALUE = 2\n"})
    st = archive.stat()
    os.utime(archive, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    importlib.invalidate_caches()
    assert installed.count(str(archive)) == 2
    import blk_zmod_b  # type: ignore[import-not-found]

    assert blk_zmod_b.VALUE == 2
    for name in ("blk_zmod_a", "blk_zmod_b"):
        sys.modules.pop(name, None)


@eager
def test_not_installed_outside_a_worker(installed: list[str]) -> None:
    cls = zipimport.zipimporter
    cls.invalidate_caches = cls.invalidate_caches.__wrapped__  # type: ignore[method-assign]
    if "pyspark.worker" in sys.modules:
        pytest.skip("pyspark.worker is imported in this process")
    assert not W.tune_worker()
    assert not hasattr(cls.invalidate_caches, "__wrapped__")


@eager
def test_installed_in_the_workers_of_a_load_task(spark_lake: Any) -> None:
    """The workers that run binlake's tasks (mapInArrow, as the decode) have it installed
    once a task imported binlake.lake, and a task's re-read is then skipped."""
    import pyarrow as pa

    def probe(batches: Iterator[Any]) -> Iterator[Any]:
        import time

        import binlake.lake.extract  # noqa: F401  (what a decode task imports)

        for _ in batches:
            t = time.perf_counter()
            importlib.invalidate_caches()
            ms = (time.perf_counter() - t) * 1000
            yield pa.RecordBatch.from_pylist([{
                "installed": hasattr(zipimport.zipimporter.invalidate_caches, "__wrapped__"),
                "zips": sum(isinstance(v, zipimport.zipimporter)
                            for v in sys.path_importer_cache.values()),
                "ms": ms}])

    rows = (spark_lake.range(0, 6, 1, 6)  # six tasks of a row each
            .mapInArrow(probe, "installed boolean, zips long, ms double").collect())
    assert len(rows) == 6 and all(r.installed for r in rows)
    assert all(r.zips > 0 for r in rows)  # (the worker imports from Spark's zip archives)


def test_settle_freezes_once_in_a_worker_only(spark_lake: Any) -> None:
    """settle(): outside a worker (a task run in the driver's process) nothing is frozen; in
    the workers of a mapInArrow job, what survives the first task is, and the objects a
    later task makes are collected as before (they are not frozen)."""
    import gc

    import pyarrow as pa

    frozen = gc.get_freeze_count()
    assert not W.settle(collect=True) and gc.get_freeze_count() == frozen

    def probe(batches: Iterator[Any]) -> Iterator[Any]:
        import gc
        import os
        import weakref

        from binlake.lake import worker

        for _ in batches:
            first = not worker._FROZEN
            settled = worker.settle()
            after = gc.get_freeze_count()

            class Node:
                pass

            a, b = Node(), Node()
            a.other, b.other = b, a  # a cycle made after the freeze
            gone = weakref.ref(a)
            del a, b
            worker.settle()
            yield pa.RecordBatch.from_pylist([{
                "pid": os.getpid(), "first": first, "settled": settled, "frozen": after,
                "refrozen": gc.get_freeze_count() != after, "collected": gone() is None}])

    rows = (spark_lake.range(0, 6, 1, 6)
            .mapInArrow(probe, "pid long, first boolean, settled boolean, frozen long, "
                               "refrozen boolean, collected boolean").collect())
    assert len(rows) == 6 and all(r.settled and r.frozen > 1000 for r in rows)
    assert not any(r.refrozen for r in rows)  # (once per worker process)
    assert all(r.collected for r in rows)  # a later cycle is still collected
