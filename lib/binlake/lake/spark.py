"""A Spark session wired to binlake's Iceberg catalog.

Jars: the Iceberg Spark runtime and, for the default JDBC catalog on SQLite, a SQLite JDBC
driver.  Offline installs take them from local paths (the ``snowpark-connect-deps-iceberg``
wheel ships the runtime jar; Debian's ``libxerial-sqlite-jdbc-java`` the driver: see
infra/setup.sh; Debian's ``libpostgresql-jdbc-java`` the PostgreSQL driver); online users may
set ``spark_packages`` (``spark.jars.packages``, e.g.
``org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.2,org.xerial:sqlite-jdbc:3.40.1.0``).
"""

from __future__ import annotations

import glob
import os
import sys
from pathlib import Path
from typing import Any

from ..config import Settings

ICEBERG_RUNTIME = "iceberg-spark-runtime-3.5_2.12-*.jar"
SQLITE_JARS = ("/usr/share/java/sqlite-jdbc.jar", "/usr/share/java/xerial-sqlite-jdbc.jar")
# Debian's libpostgresql-jdbc-java
POSTGRESQL_JARS = ("/usr/share/java/postgresql.jar", "/usr/share/java/postgresql-jdbc4.jar")
SQLITE_JNI_DIRS = ("/usr/lib/x86_64-linux-gnu/jni", "/usr/lib/aarch64-linux-gnu/jni",
                   "/usr/lib/jni")


class SparkSetupError(RuntimeError):
    pass


def iceberg_runtime_jar() -> str | None:
    try:
        import snowpark_connect_deps_iceberg as deps
    except ImportError:
        return None
    found = sorted(glob.glob(os.path.join(os.path.dirname(deps.__file__), "jars",
                                          ICEBERG_RUNTIME)))
    return found[-1] if found else None


def sqlite_jdbc_jar() -> str | None:
    return next((j for j in SQLITE_JARS if os.path.exists(j)), None)


def postgresql_jdbc_jar() -> str | None:
    return next((j for j in POSTGRESQL_JARS if os.path.exists(j)), None)


def s3_fileio(settings: Settings) -> str | None:
    """The Iceberg FileIO class the catalog is configured with for an ``s3://`` warehouse
    (None: the catalog's default, as for a local warehouse).  ``io-impl`` in
    ``catalog_properties`` wins; a Glue catalog has Iceberg's S3FileIO; otherwise Iceberg's
    ``S3FileIO`` when the AWS bundle is among the jars or packages, else binlake's own
    (lake/jvm.py).  Either way the lake's commit path is the same as on a local warehouse:
    Spark's Iceberg catalog in this JVM, executors writing data files through pyarrow."""
    from .jvm import s3_io_impl

    if settings.catalog_properties.get("io-impl"):
        return settings.catalog_properties["io-impl"]
    if settings.catalog_type == "glue":
        return "org.apache.iceberg.aws.s3.S3FileIO"
    if not settings.warehouse_resolved.startswith(("s3://", "s3a://")):
        return None
    return s3_io_impl(settings.spark_packages, settings.spark_jars)


def jars_for(settings: Settings) -> list[str]:
    """The jars a session needs (see the module), plus binlake's S3 FileIO when the
    warehouse is on S3 without Iceberg's AWS bundle."""
    from .jvm import BINLAKE_S3_IO, JvmBuildError, fileio_jar

    jars = _catalog_jars(settings)
    if s3_fileio(settings) == BINLAKE_S3_IO:
        runtime = next((j for j in jars if "iceberg-spark-runtime" in j), None) \
            or iceberg_runtime_jar()
        if runtime is None:
            raise SparkSetupError(
                "binlake's S3 FileIO (an s3:// warehouse without iceberg-aws-bundle) is built "
                "against the Iceberg runtime jar: install binlake[spark], or add "
                "org.apache.iceberg:iceberg-aws-bundle:1.10.2 to spark_packages")
        try:
            jars.append(fileio_jar(runtime))
        except (JvmBuildError, OSError) as exc:
            raise SparkSetupError(str(exc)) from exc
    return jars


def _catalog_jars(settings: Settings) -> list[str]:
    if settings.spark_jars:
        return [j.strip() for j in settings.spark_jars.split(",") if j.strip()]
    if settings.spark_packages:
        return []
    jars = []
    runtime = iceberg_runtime_jar()
    if runtime is None:
        raise SparkSetupError(
            "no Iceberg Spark runtime jar: install binlake[spark] (it brings the wheel "
            "snowpark-connect-deps-iceberg), or set spark_jars / spark_packages")
    jars.append(runtime)
    if settings.catalog_type == "jdbc" and settings.jdbc_uri.startswith("jdbc:sqlite:"):
        driver = sqlite_jdbc_jar()
        if driver is None:
            raise SparkSetupError("no SQLite JDBC driver: apt-get install "
                                  "libxerial-sqlite-jdbc-java libxerial-sqlite-jdbc-jni, or set "
                                  "spark_jars")
        jars.append(driver)
    if settings.catalog_type == "jdbc" and settings.jdbc_uri.startswith("jdbc:postgresql:"):
        driver = postgresql_jdbc_jar()
        if driver is None:
            raise SparkSetupError("no PostgreSQL JDBC driver: apt-get install "
                                  "libpostgresql-jdbc-java, or set spark_jars (every jar) or "
                                  "spark_packages (org.postgresql:postgresql:42.5.5)")
        jars.append(driver)
    return jars


def warehouse_io_properties(settings: Settings) -> dict[str, str]:
    """Catalog properties of an S3 warehouse's FileIO: ``io-impl`` (:func:`s3_fileio`), and
    with ``s3_endpoint_url`` (an S3-compatible store) the endpoint and path-style access.
    Credentials are never here: the FileIOs read them from the environment (the driver's,
    and the executors' through ``spark.executorEnv``: :func:`executor_env`)."""
    io = s3_fileio(settings)
    if io is None:
        return {}
    props = {"io-impl": io}
    if settings.s3_endpoint_url:
        props["s3.endpoint"] = settings.s3_endpoint_url
        props["s3.path-style-access"] = "true"
    return props


def catalog_conf(settings: Settings) -> dict[str, str]:
    """The spark.sql.catalog.<name>.* options of the Iceberg catalog."""
    p = f"spark.sql.catalog.{settings.catalog_name}"
    conf = {p: "org.apache.iceberg.spark.SparkCatalog",
            f"{p}.warehouse": settings.warehouse_resolved}
    if settings.catalog_type == "jdbc":
        conf[f"{p}.type"] = "jdbc"
        conf[f"{p}.uri"] = settings.jdbc_uri
        conf.update({f"{p}.{k}": v for k, v in jdbc_catalog_properties(settings).items()})
        # The catalog's own tables are created (or upgraded) by prepare_catalog, with a
        # catalog that is closed at once: see its docstring.
        conf[f"{p}.jdbc.init-catalog-tables"] = "false"
        if settings.catalog_user:
            conf[f"{p}.jdbc.user"] = settings.catalog_user
        if settings.catalog_password:
            conf[f"{p}.jdbc.password"] = settings.catalog_password
    elif settings.catalog_type == "rest":
        conf[f"{p}.type"] = "rest"
        conf[f"{p}.uri"] = settings.catalog_uri_resolved
    elif settings.catalog_type == "hive":
        conf[f"{p}.type"] = "hive"
        conf[f"{p}.uri"] = settings.catalog_uri_resolved
    elif settings.catalog_type == "glue":
        conf[f"{p}.catalog-impl"] = "org.apache.iceberg.aws.glue.GlueCatalog"
    else:
        conf[f"{p}.type"] = "hadoop"
    for k, v in warehouse_io_properties(settings).items():
        conf[f"{p}.{k}"] = v
    for k, v in settings.catalog_properties.items():
        conf[f"{p}.{k}"] = v
    return conf


def jdbc_catalog_properties(settings: Settings) -> dict[str, str]:
    """Iceberg ``JdbcCatalog`` properties of the lake's JDBC catalog (Spark's and the one
    :func:`prepare_catalog` runs), besides uri/warehouse/credentials.

    * ``jdbc.schema-version=V1``: the layout pyiceberg's SqlCatalog reads and writes too.
    * On SQLite, ``clients=1``: one connection per JVM.  SQLite has one writer at a time
      anyway, so a pool of several connections in one process only adds lock contention
      between them (a commit on one connection waits for the read lock another holds); with
      one, the JVM's commits queue in the pool and only other processes meet the file lock,
      for which ``busy_timeout`` waits.
    """
    props = {"jdbc.schema-version": "V1"}
    if settings.jdbc_uri.startswith("jdbc:sqlite:"):
        props["clients"] = "1"
        props["jdbc.busy_timeout"] = "60000"  # other processes' commits: wait, not fail
    return props


def prepare_catalog(spark: Any, settings: Settings) -> None:
    """Create or upgrade the JDBC catalog's own tables (``iceberg_tables``,
    ``iceberg_namespace_properties``) with an Iceberg ``JdbcCatalog`` that is closed at
    once; Spark's catalog is configured not to do it (``jdbc.init-catalog-tables=false``).

    Why: Iceberg's ``JdbcCatalog.initialize`` on a catalog whose tables exist leaves a read
    lock (SQLite SHARED) held by one of its pooled connections for as long as the catalog
    lives (Iceberg 1.10.2 with sqlite-jdbc 3.40; seen with a second JDBC connection that can
    no longer write after ``initialize`` and can once the catalog is closed).  In Spark's
    catalog that is the whole session: every commit through the pool's other connection then
    waits for an exclusive lock it can never get, until busy_timeout says SQLITE_BUSY.  A
    fresh catalog does not take that path, which is why the first load into a new lake
    worked and a rerun into an existing one (after a kill, say) hung and failed."""
    if settings.catalog_type != "jdbc":
        return
    jvm = spark._jvm
    props = jvm.java.util.HashMap()
    for k, v in {"uri": settings.jdbc_uri, "warehouse": settings.warehouse_resolved,
                 **jdbc_catalog_properties(settings), **warehouse_io_properties(settings),
                 **settings.catalog_properties}.items():
        props.put(k, v)
    if settings.catalog_user:
        props.put("jdbc.user", settings.catalog_user)
    if settings.catalog_password:
        props.put("jdbc.password", settings.catalog_password)
    catalog = jvm.org.apache.iceberg.jdbc.JdbcCatalog()
    catalog.setConf(spark._jsc.hadoopConfiguration())
    try:
        catalog.initialize(settings.catalog_name, props)
    finally:
        catalog.close()


# What executors need from the driver's environment to read an S3 archive (and write an S3
# warehouse) with boto3/pyarrow: the endpoint, credentials and region.  In local mode the
# Python workers inherit them; on a cluster they run elsewhere and get them only this way.
EXECUTOR_ENV = ("BINLAKE_S3_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL",
                "AWS_ENDPOINT_URL_S3")
# Spark's UI and event log show its configuration: these keys' values are redacted there
# (Spark's own default misses the access key id).
REDACTION_REGEX = r"(?i)secret|password|token|access[._]?key"


def executor_env(settings: Settings, environ: dict[str, str] | None = None) -> dict[str, str]:
    """``spark.executorEnv.*`` for the executors: ``s3_endpoint_url`` and the AWS variables of
    :data:`EXECUTOR_ENV` that are set here (the Airflow AWS connection's credentials reach
    the load this way: the DAG puts them in spark-submit's environment).  Never logged."""
    env = os.environ if environ is None else environ
    out = {k: env[k] for k in EXECUTOR_ENV if env.get(k)}
    if settings.s3_endpoint_url:
        out["BINLAKE_S3_ENDPOINT_URL"] = settings.s3_endpoint_url
    return {f"spark.executorEnv.{k}": v for k, v in out.items()}


def driver_java_options(settings: Settings, jars: list[str], lib: str = "",
                        archive: bool = True) -> str:
    """The driver JVM's options: ``lib`` (the JNI path), ``spark_driver_java_options``, and
    with ``archive`` the class archive built for them when there is one whole
    (lake/classarchive.py)."""
    from .classarchive import archive_path, java_options, usable

    opts = " ".join(o for o in (lib, settings.spark_driver_java_options.strip()) if o)
    if not archive:
        return opts
    path = archive_path(settings, jars)
    if path is not None and usable(path):
        opts = f"{opts} {java_options(path)}".strip()
    return opts


# Imported while the JVM starts: what the lake's jobs import first (about 2 s of imports,
# pyiceberg's Arrow I/O the most; distutils.version: pyspark's Arrow type mapping imports it
# on first use, and setuptools with it).
WARM_MODULES = ("pyarrow.parquet", "pyarrow.dataset", "pyiceberg.table", "pyiceberg.io.pyarrow",
                "pyiceberg.expressions", "pandas", "pyspark.sql.pandas.types",
                "distutils.version")


def warm_imports(modules: tuple[str, ...] = WARM_MODULES) -> None:
    """Import ``modules`` (a missing one is imported, and reported, where it is needed)."""
    import contextlib
    import importlib

    for name in modules:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


# The warm imports start once the JVM's process is forked, never before: PySpark forks it
# with a preexec_fn, so Python's fork hooks run in the parent first -- logging's takes the
# logging lock, then the fork takes the global import lock.  A thread importing at that
# moment can hold the import lock while it waits for the logging lock (setuptools'
# distutils shim imports whole packages from a finder, under the import lock, and their
# modules call logging.getLogger): both threads then wait forever, before Spark starts.
_WARM_AFTER_FORK: list[tuple[str, ...]] = []


def _start_warm(modules: tuple[str, ...]) -> None:
    import threading

    threading.Thread(target=warm_imports, args=(modules,), name="binlake-warm-imports",
                     daemon=True).start()


def _warm_after_fork() -> None:
    if _WARM_AFTER_FORK:
        _start_warm(_WARM_AFTER_FORK.pop())


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_parent=_warm_after_fork)


def local_worker_conf(master: str | None, conf: dict[str, str]) -> dict[str, str]:
    """The Python daemon of binlake's local sessions (lake/daemon.py: PySpark imported from
    its installed, compiled files rather than compiled again from Spark's archive in every
    worker), when ``master`` is local and ``conf`` names no daemon module of its own.  Not
    for other masters: there the daemon starts before ``--py-files`` reach the worker's
    path, so binlake may not be importable by it."""
    from .daemon import DAEMON_CONF, DAEMON_MODULE

    if not (master or "").startswith("local") or DAEMON_CONF in conf:
        return {}
    return {DAEMON_CONF: DAEMON_MODULE}


def build_session(settings: Settings, *, app_name: str = "binlake",
                  master: str | None = None, warm: tuple[str, ...] = WARM_MODULES) -> Any:
    """A SparkSession (created or reused) with the Iceberg extensions and catalog.  While
    the JVM starts (a second or two of waiting), a thread imports the modules a job
    needs next (``warm``, :func:`warm_imports`), started once the JVM's process is forked
    (``_WARM_AFTER_FORK``)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if settings.s3_endpoint_url:  # the driver's boto3 (listing, splitting) and executors'
        os.environ["BINLAKE_S3_ENDPOINT_URL"] = settings.s3_endpoint_url
        from ..binlog.source import reset_s3_client

        reset_s3_client()
    # Under spark-submit the JVM already runs: its --master / --jars win (setting them here
    # would be ignored for the classpath, and would override --master).
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ and master is None
    if SparkContext._gateway is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        _WARM_AFTER_FORK[:] = [warm]  # getOrCreate forks the JVM: imports after that
    else:  # no fork to wait for (a JVM runs already)
        _start_warm(warm)
    if settings.catalog_type == "jdbc" and settings.jdbc_uri.startswith("jdbc:sqlite:"):
        Path(settings.jdbc_uri[len("jdbc:sqlite:"):]).parent.mkdir(parents=True, exist_ok=True)
    b = SparkSession.builder.appName(app_name)
    if not submitted:
        b = b.master(master or settings.spark_master)
    b = (b
         .config("spark.sql.extensions",
                 "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "4")
         .config("spark.driver.memory", settings.spark_driver_memory)
         .config("spark.executorEnv.PYSPARK_PYTHON", os.environ["PYSPARK_PYTHON"]))
    jars = [] if submitted else jars_for(settings)
    if jars:
        b = b.config("spark.jars", ",".join(jars))
    from .jvm import LOCAL_FS, local_fs_jar_for

    local_fs = None if submitted else local_fs_jar_for(settings)
    if local_fs is not None:
        # on the driver JVM's own class path (Hadoop finds the class there from any
        # thread), whatever the master, so the class archive is the same for all; used
        # only where that JVM is the only one (local masters: executors elsewhere lack it)
        b = b.config("spark.driver.extraClassPath", local_fs)
        if (master or settings.spark_master).startswith("local"):
            b = b.config("spark.hadoop.fs.file.impl", LOCAL_FS)
    for k, v in local_worker_conf(None if submitted else (master or settings.spark_master),
                                  settings.spark_conf).items():
        b = b.config(k, v)
    if settings.spark_packages:
        b = b.config("spark.jars.packages", settings.spark_packages)
    jni = next((d for d in SQLITE_JNI_DIRS if os.path.isdir(d)), None)
    lib = f"-Djava.library.path={jni}" if jni else ""
    # (under spark-submit the JVM runs already: no archive to map)
    driver_opts = driver_java_options(settings, jars, lib, archive=not submitted)
    if driver_opts:
        b = b.config("spark.driver.extraJavaOptions", driver_opts)
    if lib:
        b = b.config("spark.executor.extraJavaOptions", lib)
    for k, v in executor_env(settings).items():
        b = b.config(k, v)
    b = b.config("spark.redaction.regex", REDACTION_REGEX)
    for k, v in catalog_conf(settings).items():
        b = b.config(k, v)
    for k, v in settings.spark_conf.items():
        b = b.config(k, v)
    try:
        spark = b.getOrCreate()
    finally:
        _WARM_AFTER_FORK.clear()  # (forked, or never will)
    spark.sparkContext.setLogLevel("ERROR")
    prepare_catalog(spark, settings)
    return spark


def pyiceberg_catalog(settings: Settings) -> Any:
    """The same catalog through pyiceberg (SqlCatalog for jdbc, REST/Hive/Glue otherwise)."""
    from pyiceberg.catalog import load_catalog

    props: dict[str, str] = {"warehouse": settings.warehouse_resolved}
    if settings.catalog_type == "jdbc":
        uri = settings.sqlalchemy_uri
        if settings.catalog_user and "@" not in uri and "://" in uri:
            from urllib.parse import quote

            scheme, rest = uri.split("://", 1)
            cred = quote(settings.catalog_user, safe="")
            if settings.catalog_password:
                cred += ":" + quote(settings.catalog_password, safe="")
            uri = f"{scheme}://{cred}@{rest}"
        props.update(type="sql", uri=uri)
    elif settings.catalog_type in ("rest", "hive"):
        props.update(type=settings.catalog_type, uri=settings.catalog_uri_resolved)
    else:
        props.update(type=settings.catalog_type)
    if settings.s3_endpoint_url:
        props["s3.endpoint"] = settings.s3_endpoint_url
    props.update(settings.catalog_properties)
    return load_catalog(settings.catalog_name, **props)


# -- reading the lake's tables ---------------------------------------------------------------

# What opening a data file costs, in bytes of reading, when Iceberg packs a scan's files into
# Spark tasks.  Iceberg's default (4 MB) with its adaptive split size (16 MB at least for a
# scan smaller than a split per core) gave a task per 4 files: a night of 200 small binlogs
# left 200 tiny files in each record table, and validation read them in 50-100 tasks per
# dataset (1,083 tasks, 8 ms each of scheduling on a local[2] machine). At 1 MB a task takes
# 16 such files; a scan of big files is split as before.
SMALL_FILE_OPEN_COST = 1 << 20


def read_table(spark: Any, table: str, branch: str | None = None) -> Any:
    """The Iceberg table ``table`` (full name) as a DataFrame, as ``spark.table`` reads it
    (or its ``branch``), with its small files packed into fewer tasks
    (``SMALL_FILE_OPEN_COST``)."""
    opts = {"file-open-cost": str(SMALL_FILE_OPEN_COST)}
    if branch:
        opts["branch"] = branch
    return spark.read.options(**opts).table(table)


# -- task rows -------------------------------------------------------------------------------

def task_frame(spark: Any, tasks: list[list[tuple[Any, ...]]], schema: str) -> Any:
    """Executor task rows as a DataFrame of one partition per task: ``tasks`` holds each
    task's rows (tuples in ``schema``'s order), which a ``mapInArrow`` over the frame then
    runs one after the other in that task (``txn.split.pack_tasks`` makes such lists)."""
    rdd = spark.sparkContext.parallelize(tasks, max(1, len(tasks)))
    return spark.createDataFrame(rdd.flatMap(lambda rows: rows), schema)


# -- small driver-side tables ----------------------------------------------------------------

def local_frame(spark: Any, rows: list[tuple[Any, ...]], schema: str) -> Any:
    """``rows`` (tuples in ``schema``'s order) as a DataFrame held in the query plan (a
    LocalRelation, through Arrow), which Spark reads without a Python worker.

    ``spark.createDataFrame(rows)`` makes a Python RDD instead: every query on it starts
    Python workers to unpickle the rows again (0.3-2 s a query, for a handful of rows).
    For the driver's small tables: files, findings, validation results.  Values are typed by
    ``schema`` exactly (64-bit integers, decimals, NULLs, arrays: no pandas float detour)."""
    import pandas as pd
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType, _parse_datatype_string  # as createDataFrame

    struct = _parse_datatype_string(schema)
    if not isinstance(struct, StructType):
        raise ValueError(f"local_frame: {schema!r} is not a row schema")
    nullable = {pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(),
                pa.int32(): pd.Int32Dtype(), pa.int64(): pd.Int64Dtype(),
                pa.bool_(): pd.BooleanDtype()}  # pandas' own would make NULLs NaN floats
    arrow = to_arrow_schema(struct)
    cols = list(zip(*rows)) if rows else [() for _ in arrow]
    if len(cols) != len(arrow):
        raise ValueError(f"local_frame: rows have {len(cols)} values, the schema "
                         f"{len(arrow)} columns")
    table = pa.table([pa.array(list(c), type=f.type) for c, f in zip(cols, arrow)],
                     schema=arrow)
    # (session-wide; binlake calls toPandas nowhere, and Arrow is what makes a LocalRelation)
    if spark.conf.get("spark.sql.execution.arrow.pyspark.enabled", "false") != "true":
        spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", "true")
    return spark.createDataFrame(table.to_pandas(types_mapper=nullable.get), struct)
