"""binlake's configuration: one typed, frozen object.

Sources, later ones winning: the defaults (everything under one local directory, ``.binlake``
next to where you run, or ``$BINLAKE_HOME``), a TOML file (``--config F`` or
``$BINLAKE_CONFIG``), then ``BINLAKE_*`` environment variables (``BINLAKE_CATALOG_URI``,
``BINLAKE_WAREHOUSE``, ``BINLAKE_NAMESPACE``, ... one per field, upper-case).  A bad value
raises :class:`ConfigError` naming its key and where it came from.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ENV_PREFIX = "BINLAKE_"


class ConfigError(ValueError):
    """A configuration value is missing or invalid; the message names the key."""


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
CATALOG_TYPES = ("jdbc", "rest", "hive", "glue", "hadoop")


@dataclass(frozen=True)
class Settings:
    home: str = ".binlake"
    # Iceberg catalog (the same name for Spark and pyiceberg: they share the tables)
    catalog_name: str = "binlake"
    catalog_type: str = "jdbc"
    catalog_uri: str = ""  # default: sqlite:///<home>/catalog.db
    catalog_user: str = ""
    catalog_password: str = ""
    warehouse: str = ""  # default: file://<home>/warehouse
    namespace: str = "binlog"
    catalog_properties: dict[str, str] = field(default_factory=dict)  # extra catalog options
    # Spark
    spark_master: str = "local[*]"
    spark_jars: str = ""  # comma-separated local jars; default: found in the installed wheels
    spark_packages: str = ""  # spark.jars.packages (online installs), instead of spark_jars
    spark_conf: dict[str, str] = field(default_factory=dict)
    spark_driver_memory: str = "4g"  # local mode: the driver JVM is the executor too
    # JVM options of the driver binlake starts (local mode: the executor too).  C1 only: the
    # C2 compiler's threads take CPU from the decode tasks on a small machine, and a load's
    # JVM work is short (catalog calls, commits, small jobs).  C1 alone gets a 48 MB code
    # cache, which a long load fills ("CodeCache is full. Compiler has been disabled": the
    # rest of the run interpreted), hence 256 MB.  The JVM's own warnings go to stderr, not
    # into stdout (`binlake load --json`).  Empty: the JVM's defaults.
    spark_driver_java_options: str = ("-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m "
                                      "-Xlog:disable -Xlog:all=warning:stderr")
    # "auto": the driver JVM maps the class archive `binlake jvm-archive` built for this Java,
    # these jars and options, when there is one (lake/classarchive.py); "off": never.
    spark_class_archive: str = "auto"
    # "nio": a local master's Hadoop "file:" file system sets permissions through the JDK
    # (lake/jvm/NioLocalFileSystem.java) instead of a chmod process per file; "hadoop": never.
    spark_local_fs: str = "nio"
    split_bytes: int = 64 << 20  # target size of a transaction-aligned decode range
    # bytes of binlog a decode task reads between two writes of its records as data files
    # (its memory, besides the transactions still open; less: more, smaller data files)
    flush_bytes: int = 32 << 20
    typed_parallelism: int = 4  # source tables whose typed tables are filled at once
    # Where the decode tasks stage the mirrors' deltas for the run (lake/staging.py): a
    # directory the driver and every executor reach.  Default: under a local warehouse, or
    # under home when the warehouse is remote and the master local (one machine); else none
    # (mirrors are then filled from row_changes by Spark: slower)
    staging_dir: str = ""
    # A load of at most this many bytes of binlog is surveyed and decoded in the driver's
    # own process (no Python workers to start: seconds of a small incremental load); 0: never
    driver_decode_bytes: int = 16 << 20
    # seconds a load waits for another load of the lake to finish (lake/lock.py); 0: none
    lock_wait: float = 0.0
    # The source server the files come from (a label; one lake holds several sources)
    source: str = "default"
    # S3 (binlog objects; Spark reads them through boto3 on the executors)
    s3_endpoint_url: str = ""
    # XA prepared longer than this (seconds) is flagged by verify / the expectations
    xa_max_age: float = 86400.0
    # What validation's mirror counts compare (docs/validation.md): "night", on a
    # write-audit-publish branch, each mirror's change over the branch against the night's
    # inserts - deletes (the lake's history is not read again); "lake", every mirror against
    # the source's whole row_changes history (a scan that grows with the lake)
    mirror_counts: str = "night"
    # `binlake maintain` (lake/maintain.py): snapshots younger than this many days are kept
    # (time travel), older ones expire with the files only they reference
    snapshot_retain_days: float = 7.0
    # Great Expectations Data Docs of `binlake validate` (a directory or s3:// prefix);
    # default: <home>/data_docs
    data_docs_dir: str = ""
    # Tables on non-transactional engines the binlog's own DDL does not show ("db.table")
    nontransactional: tuple[str, ...] = ()
    # Schema snapshots of the source (docs/schema.md): files or s3:// objects, each the
    # JSON Lines `binlake schema snapshot` writes or `mysqldump --no-data` output (the schema
    # before the first binlog); they name the columns of tables created before the archive
    # begins.  Snapshots stored beside the binlogs (`_schema/` under a source directory or
    # prefix) are found without this.
    schema_snapshots: tuple[str, ...] = ()
    # Archiving and orchestration (docs/orchestration.md)
    archive_uri: str = ""  # default: <home>/archive (a local directory); or s3://bucket/prefix
    archive_source_dir: str = ""  # the source server's binlog directory or its .index file
    archive_multipart_bytes: int = 64 << 20  # S3 multipart threshold and part size
    airflow_s3_conn_id: str = ""  # Airflow AWS connection for an s3:// archive_uri
    airflow_source_conn_id: str = ""  # Airflow MySQL connection: fetch from a remote server
    airflow_spark_conn_id: str = "binlake_spark"  # read from the environment at DAG parse time
    load_job: str = ""  # default: jobs/load_binlogs.py next to lib/ of this checkout
    # Many sources in one deployment (``[[sources]]`` tables; docs/orchestration.md, "Many
    # sources"): empty = one source, ``source``.  ``source_base``: the values of the
    # per-source keys before a source's overrides were applied (internal, for for_source).
    sources: tuple[SourceSettings, ...] = ()
    source_base: tuple[tuple[str, Any], ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        # Settings(**dataclasses.asdict(s)) (lake/warmup.py rebuilds them so): the sources
        # come back as dicts and lists
        if any(not isinstance(x, SourceSettings) for x in self.sources):
            object.__setattr__(self, "sources", tuple(
                x if isinstance(x, SourceSettings) else SourceSettings(
                    **{k: tuple(v) if isinstance(v, list) else v for k, v in dict(x).items()})
                for x in self.sources))
        if any(not isinstance(kv, tuple) for kv in self.source_base):
            object.__setattr__(self, "source_base", tuple(
                (k, tuple(v) if isinstance(v, list) else v) for k, v in self.source_base))

    # -- derived ------------------------------------------------------------------------

    @property
    def home_path(self) -> Path:
        return Path(self.home).expanduser().resolve()

    @property
    def catalog_uri_resolved(self) -> str:
        return self.catalog_uri or f"sqlite:///{self.home_path / 'catalog.db'}"

    @property
    def warehouse_resolved(self) -> str:
        return self.warehouse or (self.home_path / "warehouse").as_uri()

    @property
    def jdbc_uri(self) -> str:
        """The catalog URI as Spark's JDBC catalog wants it (``jdbc:sqlite:/path``)."""
        uri = self.catalog_uri_resolved
        if uri.startswith("jdbc:"):
            return uri
        if uri.startswith("sqlite:///"):  # sqlite:////abs/path -> jdbc:sqlite:/abs/path
            return "jdbc:sqlite:" + uri[len("sqlite:///"):]
        m = re.match(r"^postgresql(?:\+\w+)?://(?:(?P<cred>[^@]*)@)?(?P<rest>.*)$", uri)
        if m:
            return "jdbc:postgresql://" + m.group("rest")
        return uri

    @property
    def sqlalchemy_uri(self) -> str:
        """The catalog URI as pyiceberg's SqlCatalog wants it."""
        uri = self.catalog_uri_resolved
        if uri.startswith("jdbc:sqlite:"):  # jdbc:sqlite:/abs/path -> sqlite:////abs/path
            return "sqlite:///" + uri[len("jdbc:sqlite:"):]
        if uri.startswith("jdbc:postgresql://"):
            return "postgresql+psycopg2://" + uri[len("jdbc:postgresql://"):]
        return uri

    def table(self, name: str) -> str:
        """Fully qualified Spark name of a lake table."""
        return f"{self.catalog_name}.{self.namespace}.{name}"

    @property
    def source_names(self) -> tuple[str, ...]:
        """The configured sources' names; without ``[[sources]]``: ``(source,)``."""
        return tuple(s.name for s in self.sources) or (self.source,)

    def source_settings(self, name: str) -> SourceSettings:
        for s in self.sources:
            if s.name == name:
                return s
        raise ConfigError(f"sources: no source named {name!r} (configured: "
                          f"{', '.join(self.source_names)})")

    def for_source(self, name: str) -> Settings:
        """The settings of source ``name``: ``source = name`` and its ``[[sources]]``
        overrides applied over the top-level values.  Without ``[[sources]]`` only the
        configured ``source`` is known (returns these settings)."""
        if not self.sources:
            if name != self.source:
                raise ConfigError(f"sources: no source named {name!r} (one source "
                                  f"configured: {self.source!r})")
            return self
        src = self.source_settings(name)
        base = dict(self.source_base) or {k: getattr(self, k) for k in SOURCE_KEYS}
        values = {**base, **src.overrides()}
        return dataclasses.replace(self, source=name, source_base=tuple(base.items()),
                                   **values).validate()

    def validate(self) -> Settings:
        if not _NAME.match(self.catalog_name):
            raise ConfigError(f"catalog_name: {self.catalog_name!r} is not a valid identifier")
        if not all(_NAME.match(p) for p in self.namespace.split(".")):
            raise ConfigError(f"namespace: {self.namespace!r} is not a valid namespace")
        if self.catalog_type not in CATALOG_TYPES:
            raise ConfigError(f"catalog_type: {self.catalog_type!r} is not one of "
                              f"{', '.join(CATALOG_TYPES)}")
        check_spark_master(self.spark_master)
        if self.warehouse and self.catalog_type in ("jdbc", "hadoop") \
                and "://" not in self.warehouse and not self.warehouse.startswith("/"):
            raise ConfigError(f"warehouse: {self.warehouse!r} is a relative path: give an "
                              "absolute path or a URI (file:///..., s3://bucket/prefix)")
        if self.staging_dir and not (self.staging_dir.startswith(("/", "file:/"))):
            raise ConfigError(f"staging_dir: {self.staging_dir!r} is not an absolute local "
                              "path (a directory the driver and every executor reach)")
        if self.spark_class_archive not in ("auto", "off"):
            raise ConfigError(f"spark_class_archive: {self.spark_class_archive!r} is not "
                              "auto or off")
        if self.spark_local_fs not in ("nio", "hadoop"):
            raise ConfigError(f"spark_local_fs: {self.spark_local_fs!r} is not nio or hadoop")
        if not 1 <= self.typed_parallelism <= 64:
            raise ConfigError(f"typed_parallelism: {self.typed_parallelism} is not in 1..64")
        if not 0 <= self.lock_wait <= 86400:
            raise ConfigError(f"lock_wait: {self.lock_wait} is not in 0..86400 seconds")
        if not 0 <= self.driver_decode_bytes <= 1 << 30:
            raise ConfigError(f"driver_decode_bytes: {self.driver_decode_bytes} is not in "
                              "0..1073741824")
        if self.flush_bytes < 1:
            raise ConfigError(f"flush_bytes: {self.flush_bytes} is not positive")
        if self.split_bytes < 1 << 16:
            raise ConfigError(f"split_bytes: {self.split_bytes} is below 65536")
        if not self.source or "/" in self.source:
            raise ConfigError(f"source: {self.source!r} must be a non-empty label without '/'")
        if self.xa_max_age <= 0:
            raise ConfigError(f"xa_max_age: {self.xa_max_age} must be positive")
        if not 0 <= self.snapshot_retain_days <= 36500:
            raise ConfigError(f"snapshot_retain_days: {self.snapshot_retain_days} is not in "
                              "0..36500")
        if self.mirror_counts not in ("night", "lake"):
            raise ConfigError(f"mirror_counts: {self.mirror_counts!r} is not night or lake")
        if self.archive_multipart_bytes < 5 << 20:
            raise ConfigError(f"archive_multipart_bytes: {self.archive_multipart_bytes} is "
                              "below S3's 5 MiB minimum part size")
        for t in self.nontransactional:
            if t.count(".") != 1:
                raise ConfigError(f"nontransactional: {t!r} is not db.table")
        seen: dict[str, str] = {}
        for i, src in enumerate(self.sources):
            check_source_name(src.name, f"sources[{i}].name")
            if src.name.lower() in seen:
                raise ConfigError(f"sources[{i}].name: {src.name!r} is configured twice "
                                  f"(names are compared ignoring case: {seen[src.name.lower()]!r})")
            seen[src.name.lower()] = src.name
        return self


# The settings a ``[[sources]]`` table may give for its source (the rest is the lake's and
# the deployment's, shared by every source).
SOURCE_KEYS = ("archive_source_dir", "airflow_source_conn_id", "archive_uri",
               "airflow_s3_conn_id", "s3_endpoint_url", "schema_snapshots",
               "nontransactional", "xa_max_age")
# A source name: a DAG id part (binlake_archive__<name>), an object-store prefix
# (<archive_uri>/<name>/), a lock file name; letters, digits, _ and -.
_SOURCE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


def check_source_name(name: str, key: str = "sources.name") -> None:
    if not isinstance(name, str) or not _SOURCE_NAME.match(name):
        raise ConfigError(f"{key}: {name!r} is not a source name (1-64 letters, digits, _ "
                          "or -, starting with a letter or digit: it is part of DAG ids and "
                          "object-store prefixes)")


@dataclass(frozen=True)
class SourceSettings:
    """One ``[[sources]]`` table: a source's name and its overrides (None: the top-level
    value).  ``nightly_cron`` is the DAGs' only (the schedule of its nightly DAG)."""

    name: str
    archive_source_dir: str | None = None
    airflow_source_conn_id: str | None = None
    archive_uri: str | None = None
    airflow_s3_conn_id: str | None = None
    s3_endpoint_url: str | None = None
    schema_snapshots: tuple[str, ...] | None = None
    nontransactional: tuple[str, ...] | None = None
    xa_max_age: float | None = None
    nightly_cron: str | None = None

    def overrides(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in SOURCE_KEYS if getattr(self, k) is not None}


def _source_entries(value: Any, origin: str) -> tuple[SourceSettings, ...]:
    """``[[sources]]`` (a list of tables) or ``$BINLAKE_SOURCES`` (the same as JSON)."""
    if isinstance(value, str) and origin.startswith("$"):
        import json

        try:
            value = json.loads(value) if value.strip() else []
        except ValueError as exc:
            raise ConfigError(f"sources: invalid JSON (from {origin}): {exc}") from None
    if not isinstance(value, list):
        raise ConfigError(f"sources: expected a list of tables ([[sources]]) (from {origin}), "
                          f"not {_type_word(value)}")
    out = []
    for i, entry in enumerate(value):
        key = f"sources[{i}]"
        if not isinstance(entry, dict):
            raise ConfigError(f"{key}: expected a table (from {origin}), not "
                              f"{_type_word(entry)}")
        if "name" not in entry:
            raise ConfigError(f"{key}.name: missing (from {origin})")
        check_source_name(entry["name"], f"{key}.name")
        values: dict[str, Any] = {"name": entry["name"]}
        for k, v in entry.items():
            if k == "name":
                continue
            if k == "nightly_cron":
                if not isinstance(v, str) or len(v.split()) != 5:
                    raise ConfigError(f"{key}.nightly_cron: {v!r} is not a 5-field cron "
                                      f"expression (from {origin})")
                values[k] = v
            elif k in SOURCE_KEYS:
                try:
                    values[k] = _coerce(k, v, origin)
                except ConfigError as exc:
                    raise ConfigError(f"{key}.{exc}") from None
            else:
                raise ConfigError(f"{key}.{k}: not a per-source setting (from {origin}); "
                                  f"known: name, nightly_cron, {', '.join(SOURCE_KEYS)}")
        out.append(SourceSettings(**values))
    return tuple(out)


_FIELDS = {f.name: f for f in dataclasses.fields(Settings)}
_NOT_SCALAR = ("sources", "source_base")


def _coerce(key: str, value: Any, origin: str) -> Any:
    f = _FIELDS.get(key)
    if f is None or key in _NOT_SCALAR:
        raise ConfigError(f"{key}: unknown setting (from {origin}); known: "
                          f"{', '.join(sorted(_FIELDS))}")
    kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    try:
        if isinstance(value, bool):  # (a bool is an int to Python, never a setting's value)
            raise TypeError(f"expected {_KIND_WORDS.get(kind, 'a value')}, not a boolean")
        if kind == "int":
            return int(value)
        if kind == "float":
            return float(value)
        if kind.startswith("dict"):
            if isinstance(value, str):
                pairs = [p.split("=", 1) for p in value.split(",") if p.strip()]
                return {k.strip(): v.strip() for k, v in pairs}
            if not isinstance(value, dict):
                raise TypeError("expected a table of strings")
            return {str(k): str(v) for k, v in value.items()}
        if kind.startswith("tuple"):
            if isinstance(value, str):
                return tuple(p.strip() for p in value.split(",") if p.strip())
            return tuple(str(v) for v in value)
        if isinstance(value, os.PathLike):
            return os.fspath(value)
        if not isinstance(value, str):  # TOML `warehouse = 17`: not a path named "17"
            raise TypeError(f"expected a string (quoted in TOML), not {_type_word(value)}")
        return value
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{key}: invalid value {value!r} (from {origin}): {exc}") from None


_KIND_WORDS = {"int": "an integer", "float": "a number", "str": "a string"}


def _type_word(value: Any) -> str:
    return {int: "an integer", float: "a number", dict: "a table", list: "an array"}.get(
        type(value), type(value).__name__)


# What Spark itself accepts as a master (SparkSubmit: "Master must either be yarn or start
# with spark, mesos, k8s, or local"), checked before a JVM is started for it.
_SPARK_MASTER = re.compile(r"^(?:local(?:\[[^\]]+\])?|local-cluster\[[^\]]+\]|yarn|"
                           r"(?:spark|mesos|k8s)://.+)$")


def check_spark_master(value: str, key: str = "spark_master") -> None:
    """Raise :class:`ConfigError` (naming ``key``) unless ``value`` is a Spark master URL."""
    if not _SPARK_MASTER.match(value):
        raise ConfigError(f"{key}: {value!r} is not a Spark master (local, local[N], "
                          "local[*], spark://HOST:PORT, yarn, k8s://..., mesos://...)")


def load_settings(path: str | os.PathLike[str] | None = None,
                  env: dict[str, str] | None = None, **overrides: Any) -> Settings:
    """Defaults <- TOML file <- BINLAKE_* environment <- keyword overrides."""
    env = dict(os.environ if env is None else env)
    values: dict[str, Any] = {}
    path = path or env.get(ENV_PREFIX + "CONFIG") or None
    if path:
        p = Path(path)
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"config: {p} does not exist") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config: {p} is not valid TOML: {exc}") from None
        data = data.get("binlake", data)
        for k, v in data.items():
            if k == "sources":
                values[k] = _source_entries(v, str(p))
            else:
                values[k] = _coerce(k, v, str(p))
    for k, v in env.items():
        if k.startswith(ENV_PREFIX) and k != ENV_PREFIX + "CONFIG":
            key = k[len(ENV_PREFIX):].lower()
            if key == "sources":
                values[key] = _source_entries(v, f"${k}")
            elif key in _FIELDS and key not in _NOT_SCALAR:
                values[key] = _coerce(key, v, f"${k}")
    for k, v in overrides.items():
        if v is not None:
            values[k] = (_source_entries(list(v), "arguments") if k == "sources"
                         else _coerce(k, v, "arguments"))
    settings = Settings(**values).validate()
    for src in settings.sources:  # every source's settings are valid, not only the chosen one
        settings.for_source(src.name)
    # ``source`` naming a configured source (BINLAKE_SOURCE / --source-name, as the DAGs'
    # load, validate and publish steps pass it): that source's settings
    if settings.source in settings.source_names and settings.sources:
        settings = settings.for_source(settings.source)
    return settings
