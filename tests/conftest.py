"""Shared fixtures.

``mariadb``: one private MariaDB server for the whole session (started lazily, stopped at the end).
``mariadb_factory``: call it to get a fresh server with its own datadir and binlog sequence
(``mariadb_factory(options={...})``); every server it made is stopped after the test.
``fresh_mariadb``: a fresh server with default options.
"""

from __future__ import annotations

import logging
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
try:
    import binlake  # noqa: F401
except ImportError:  # not installed into the virtualenv: use the source tree
    sys.path.insert(0, str(ROOT / "lib"))

from binlake_dev.mariadb import MariaDBServer, free_port  # noqa: E402

HAVE_MARIADB = bool(shutil.which("mariadbd") and shutil.which("mariadb-install-db"))


# the attribute that marks the suite's shared Spark session (``spark_lake``)
SHARED = "_binlake_tests_shared"

# The longest test files, longest first (a sequential run on 2026-11-28: 869, 634, 403, 236,
# 234, 204, 194, 170 and 119 s of its 63 minutes).  infra/test.sh runs the files on two
# pytest-xdist workers (``--dist loadfile``), which take the files in collection order: these
# go first, so that no worker is left alone with a long file at the end.
LONG_FILES = ("test_random_nights", "test_lake_kill", "test_quality", "test_s3_warehouse",
              "test_lake_job", "test_dags", "test_cluster", "test_lake_typed",
              "test_lake_schema")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONG_FILES)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))  # stable: files stay whole


def _start(base: Path, template: Path, **kw: object) -> MariaDBServer:
    from .servers import start_server

    return start_server(base, template, **kw)


@pytest.fixture(scope="session")
def mariadb_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An initialised (never started) datadir; servers copy it instead of running install-db."""
    if not HAVE_MARIADB:
        pytest.skip("mariadbd / mariadb-install-db not on PATH")
    srv = MariaDBServer(tmp_path_factory.mktemp("mariadb-template"), port=free_port())
    srv.init()
    return srv.datadir


@pytest.fixture(scope="session")
def mariadb(
    tmp_path_factory: pytest.TempPathFactory, mariadb_template: Path
) -> Iterator[MariaDBServer]:
    srv = _start(tmp_path_factory.mktemp("mariadb"), mariadb_template)
    try:
        yield srv
    finally:
        srv.stop(timeout=30)


@pytest.fixture
def mariadb_factory(
    tmp_path_factory: pytest.TempPathFactory, mariadb_template: Path
) -> Iterator[Callable[..., MariaDBServer]]:
    made: list[MariaDBServer] = []

    def make(**kw: object) -> MariaDBServer:
        srv = _start(tmp_path_factory.mktemp("mariadb-fresh"), mariadb_template, **kw)
        made.append(srv)
        return srv

    try:
        yield make
    finally:
        for srv in made:
            srv.stop(timeout=30)


@pytest.fixture
def fresh_mariadb(mariadb_factory: Callable[..., MariaDBServer]) -> MariaDBServer:
    return mariadb_factory()


@pytest.fixture(scope="session")
def spark_lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """One local[2] Spark session with the Iceberg runtime, shared by the lake tests.

    Lakes share it by catalog *name*: Spark binds a catalog name to the configuration it had
    when first used, so give every lake its own ``catalog_name`` as well as its own
    ``BINLAKE_HOME``, and call ``build_session(settings)`` once with its settings (that
    registers the catalog on this session; see ``tests/test_lake_job.py``: ``make_lake``).
    Skips when pyspark or the jars are missing.
    """
    pytest.importorskip("pyspark")
    from binlake.config import load_settings
    from binlake.lake.spark import SparkSetupError, build_session

    boot = load_settings(env={"BINLAKE_HOME": str(tmp_path_factory.mktemp("spark-lake-boot")),
                              "BINLAKE_CATALOG_NAME": "lake_boot"})
    try:
        spark = build_session(boot, app_name="binlake-tests", master="local[2]")
    except SparkSetupError as exc:
        pytest.skip(f"no Spark for the lake: {exc}")
    setattr(spark, SHARED, True)  # tests/test_analyst_guide.py: not to be stopped by a module
    try:
        yield spark
    finally:
        spark.stop()
        # py4j's connections log their closing from __del__ at interpreter exit, after
        # pytest closed the stream its handler writes to ("--- Logging error ---")
        for name in ("py4j", "py4j.clientserver", "py4j.java_gateway"):
            logging.getLogger(name).setLevel(logging.WARNING)


@pytest.fixture(scope="session")
def alltypes_stream(tmp_path_factory: pytest.TempPathFactory, mariadb_template: Path) -> Path:
    """Real closed binlog files of a MariaDB server: the all-types workload (every column
    type, FULL metadata) and the transaction workloads (XA across rotations and a pending
    XA, mixed engines, DDL).  Shared by test_lake_kill and test_s3_warehouse."""
    from .servers import start_server
    from .txn_workloads import run_all
    from .workloads import run_all_types

    srv = start_server(tmp_path_factory.mktemp("kill-srv"), mariadb_template)
    out = tmp_path_factory.mktemp("kill-binlogs")
    try:
        first = srv.current_binlog_file()
        run_all_types(srv)
        srv.flush_binary_logs()
        run_all(srv)
        srv.flush_binary_logs()
        written = srv.binlog_files()
        for f in written[written.index(first):-1]:  # the closed ones
            shutil.copyfile(f, out / f.name)
    finally:
        srv.stop(timeout=30)
    return out


@pytest.fixture(scope="session")
def alltypes_clean(alltypes_stream: Path, tmp_path_factory: pytest.TempPathFactory
                   ) -> tuple[Path, float, object]:
    """A clean ``binlake load --master local[2]`` of :func:`alltypes_stream` into a fresh
    local lake: (its home, seconds, every table dumped with pyiceberg).  Read only."""
    import os
    import subprocess
    import time

    from .lake_dump import dump

    home = tmp_path_factory.mktemp("lake-clean")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BINLAKE_")}
    env["BINLAKE_HOME"] = str(home)
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "binlake.cli", "load", "--master", "local[2]",
                           str(alltypes_stream)], env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    took = time.monotonic() - t0
    assert done.returncode == 0, done.stderr[-3000:]
    tables = dump(home)
    assert any(t.startswith("mirror__") for t in tables) and tables["row_changes"], \
        "the workload should fill typed tables and row_changes"
    return home, took, tables
