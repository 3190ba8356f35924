"""``binlake load``, ``binlake publish`` and ``binlake jvm-archive``: the lake on a local
(or configured) Spark session."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import CliError, UsageError, is_spark_error, one_line

LOCKED = 75  # sysexits' EX_TEMPFAIL: another load is writing the lake; try again later


def add_parsers(sub: argparse._SubParsersAction) -> None:
    ld = sub.add_parser("load", help="load binlog files into the Iceberg lake (local Spark)",
                        description="Run the lake job on this machine: decode the files (paths, "
                        "directories or s3:// URIs) on a local Spark session and land them in "
                        "Iceberg. Exit 0 ok, 1 a file failed, 75 another load is writing the "
                        "lake. See docs/lake.md.")
    ld.add_argument("sources", nargs="+", metavar="SOURCE")
    ld.add_argument("--config", metavar="F", help="TOML settings file (see docs/lake.md)")
    ld.add_argument("--master", metavar="URL", help="Spark master (default: spark_master)")
    ld.add_argument("--source-name", metavar="NAME", help="the source server's label")
    ld.add_argument("--schema-snapshot", action="append", default=[], metavar="F",
                    help="a schema snapshot of the source (binlake schema snapshot JSON "
                    "Lines, or mysqldump --no-data output): names the columns of tables "
                    "created before the first binlog (setting schema_snapshots; repeatable)")
    ld.add_argument("--json", action="store_true", help="print the summary as JSON")
    ld.add_argument("--run-id", metavar="ID", help="the run's id (default: time + random)")
    ld.add_argument("--branch", metavar="B", help="write every table on Iceberg branch B "
                    "(write-audit-publish; `binlake publish --branch B` makes it main)")
    ld.add_argument("--reload", action="store_true",
                    help="decode files already loaded again (default: skip them)")
    ld.add_argument("--wait", type=float, metavar="SECONDS",
                    help="while another load writes the lake, wait up to SECONDS for it "
                    "(default: lock_wait, 0: stop at once with exit 75)")
    ld.set_defaults(func=cmd_load)

    pb = sub.add_parser("publish", help="publish (or discard) a load written on a branch",
                        description="Fast-forward main of every lake table to branch B and "
                        "drop B (--discard: drop B, main unchanged). See docs/lake.md.")
    pb.add_argument("--branch", required=True, metavar="B")
    pb.add_argument("--discard", action="store_true")
    pb.add_argument("--if-exists", action="store_true",
                    help="no table having branch B is not an error (a retry after it was "
                    "published, a run that wrote nothing: what the nightly DAG passes)")
    pb.add_argument("--config", metavar="F", help="TOML settings file")
    pb.add_argument("--master", metavar="URL", help="Spark master (default: spark_master)")
    pb.set_defaults(func=cmd_publish)

    mt = sub.add_parser("maintain", help="compact the lake's tables and expire old snapshots",
                        description="Per table of the lake: Iceberg's rewrite_data_files "
                        "(small files joined, position deletes applied), "
                        "rewrite_position_delete_files and expire_snapshots, holding the load "
                        "lock. Tables with an unpublished branch are skipped. The "
                        "binlake_maintain DAG runs it weekly. See docs/lake.md, \"Upkeep\".")
    mt.add_argument("--config", metavar="F", help="TOML settings file (see docs/lake.md)")
    mt.add_argument("--master", metavar="URL", help="Spark master (default: spark_master)")
    mt.add_argument("--retain-days", type=float, metavar="D",
                    help="keep the snapshots of the last D days (default: "
                    "snapshot_retain_days, 7)")
    mt.add_argument("--table", action="append", metavar="T", dest="tables",
                    help="only this table (short name; repeatable)")
    mt.add_argument("--run-id", metavar="ID", help="the run's id in the lock file")
    mt.add_argument("--json", action="store_true", help="print the report as JSON")
    mt.set_defaults(func=cmd_maintain)

    ja = sub.add_parser("jvm-archive", help="build the driver JVM's class archive",
                        description="Build the class-data-sharing archive that the driver JVM "
                        "of binlake's local Spark sessions maps at start (about 3 s faster "
                        "per session); infra/setup.sh runs this. See docs/lake.md.")
    ja.add_argument("sources", nargs="*", metavar="SOURCE",
                    help="closed binlog files the warm-up run loads into a scratch lake (the "
                    "archive then holds more of what a load uses)")
    ja.add_argument("--config", metavar="F", help="TOML settings file")
    ja.add_argument("--if-missing", action="store_true",
                    help="do nothing when the archive for these settings is there already")
    ja.set_defaults(func=cmd_jvm_archive)



def lake_session(config: str | None, master: str | None, source: str | None = None,
                 app_name: str | None = None, check: Any = None,
                 overrides: dict[str, Any] | None = None,
                 debug: bool = False, warm: Any = None) -> tuple[Any, Any] | None:
    """Settings (``overrides`` last) and a Spark session for the lake commands: a bad
    setting (or ``--master``) is a :class:`~binlake.config.ConfigError` naming it, raised
    before Spark starts; a Spark that cannot start is reported on stderr and gives None.
    ``check(settings)`` runs before Spark starts; then ``warm()``, when given, returns the
    modules to import while the JVM starts (``build_session(warm=...)``).  Unless ``debug``,
    the JVM logs nothing (a failed task's stack would come before the one line binlake says
    about it)."""
    from ..config import check_spark_master, load_settings
    from ..lake.spark import SparkSetupError, build_session

    settings = load_settings(config, source=source, **(overrides or {}))
    if master is not None:
        check_spark_master(master, "--master")
    if check is not None:
        check(settings)
    kw = {} if warm is None else {"warm": warm()}
    try:
        spark = build_session(settings, master=master, app_name=app_name or "binlake", **kw)
        spark.sparkContext.setLogLevel("ERROR" if debug else "OFF")
        return settings, spark
    except SparkSetupError as exc:
        print(f"binlake: error: {exc}", file=sys.stderr)
        return None
    except Exception as exc:
        if not is_spark_error(exc):
            raise
        raise CliError(f"Spark did not start (master {master or settings.spark_master}): "
                       f"{one_line(exc)}") from exc


def check_sources(settings: Any, sources: list[str]) -> None:
    """Before Spark starts: every source names binlog files that can be read (a
    :class:`~binlake.binlog.errors.SourceError` naming the one that does not: missing, not a
    valid URI, an empty directory, an S3 endpoint that does not answer)."""
    import os

    from ..binlog.source import reset_s3_client
    from ..txn.files import find_binlogs

    if settings.s3_endpoint_url and any(s.startswith("s3://") for s in sources):
        # (as build_session will: the driver's boto3 reads it from the environment)
        os.environ["BINLAKE_S3_ENDPOINT_URL"] = settings.s3_endpoint_url
        reset_s3_client()
    find_binlogs(sources)


def is_lake_write_error(exc: BaseException) -> bool:
    """An error of the lake's own storage or engine: Java's or Spark's, or an ``OSError``
    out of the driver's own reads and writes (pyarrow, pyiceberg's FileIO: a full or
    read-only warehouse). A bad binlog is a :class:`~binlake.binlog.errors.BinlogError`,
    reported per file, never this."""
    return is_spark_error(exc) or isinstance(exc, OSError)


def lake_failure(settings: Any, exc: BaseException) -> CliError:
    """A Java or Spark error out of the lake job in one line: what failed, where the lake is
    written (the warehouse; the catalog), and what the file system there says (read-only,
    full, no permission) when it is a local directory."""
    where = f"warehouse {settings.warehouse_resolved}"
    if settings.catalog_type == "jdbc":
        where += f", catalog {settings.catalog_uri_resolved}"
    probe = _local_dir_problem(settings.warehouse_resolved)
    return CliError(f"the load failed ({where}): {one_line(exc)}"
                    + (f"; {probe}" if probe else ""))


def _local_dir_problem(uri: str) -> str | None:
    """What stops writing under a local directory (``file:`` URI or path), if anything."""
    import os
    from urllib.parse import urlparse

    parsed = urlparse(uri)
    if parsed.scheme not in ("", "file"):
        return None
    path = parsed.path or uri
    while path and not os.path.exists(path):  # the deepest directory that exists
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    if st.f_flag & os.ST_RDONLY:
        return f"{path} is on a read-only file system"
    if st.f_bavail == 0 or st.f_favail == 0:
        return f"no space left on the file system of {path}"
    if not os.access(path, os.W_OK):
        return f"no permission to write in {path}"
    return None


def cmd_jvm_archive(args: argparse.Namespace) -> int:
    from ..config import load_settings
    from ..lake.classarchive import ClassArchiveError, archive_path, build, usable
    from ..lake.spark import SparkSetupError, jars_for

    settings = load_settings(args.config)
    try:
        jars = jars_for(settings)
        there = archive_path(settings, jars)
        if args.if_missing and usable(there):
            print(there)
            return 0
        path = build(settings, jars, args.sources)
    except (ClassArchiveError, SparkSetupError) as exc:
        print(f"binlake: error: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0




def cmd_publish(args: argparse.Namespace) -> int:
    from ..config import check_spark_master, load_settings
    from ..lake.publish import publish_or_discard

    settings = load_settings(args.config)
    if args.master is not None:
        check_spark_master(args.master, "--master")

    def session() -> Any:  # only for what the catalog alone cannot publish (replays)
        lake = lake_session(args.config, args.master, debug=getattr(args, "debug", False))
        if lake is None:
            raise _NoSpark
        return lake[1]

    try:
        done, _ = publish_or_discard(settings, args.branch, not args.discard, session)
    except _NoSpark:
        return 1
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    except Exception as exc:
        if is_lake_write_error(exc):
            raise lake_failure(settings, exc) from exc
        raise
    if not done and args.if_exists:
        print(f"branch {args.branch}: no table of the lake has it: nothing to "
              f"{'discard' if args.discard else 'publish'}")
        return 0
    if not done:
        raise CliError(f"branch {args.branch}: no table of the lake has it (nothing to "
                       f"{'discard' if args.discard else 'publish'}; binlake load --branch "
                       "makes one)")
    verb = "discarded" if args.discard else "published"
    print(f"{verb} branch {args.branch}: {', '.join(done)}")
    return 0




def cmd_maintain(args: argparse.Namespace) -> int:
    import json
    import time
    import uuid

    from ..config import ConfigError
    from ..lake.lock import LoadLockedError, check_unlocked
    from ..lake.maintain import lock_settings, maintain

    if args.retain_days is not None and not 0 <= args.retain_days <= 36500:
        raise UsageError(f"--retain-days: {args.retain_days} is not in 0..36500")

    def check(settings: Any) -> None:  # a load holding the lock: stop before Spark starts
        for s in lock_settings(settings):
            check_unlocked(s)

    try:
        lake = lake_session(args.config, args.master, app_name="binlake maintain",
                            check=check, debug=getattr(args, "debug", False))
        if lake is None:
            return 1
        settings, spark = lake
        run_id = args.run_id or ("maintain-" + time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
                                 + "-" + uuid.uuid4().hex[:6])
        try:
            done = maintain(spark, settings, run_id=run_id, retain_days=args.retain_days,
                            tables=args.tables)
        except Exception as exc:
            if is_lake_write_error(exc):
                raise lake_failure(settings, exc) from exc
            raise
    except ConfigError:
        raise
    except LoadLockedError as exc:
        print(f"binlake: error: {exc}", file=sys.stderr)
        return LOCKED
    except ValueError as exc:  # a table the lake does not have
        raise UsageError(str(exc)) from None
    if args.json:
        print(json.dumps({"run_id": run_id, "tables": [u.as_dict() for u in done]}))
    else:
        for u in done:
            what = (f"skipped: {u.skipped}" if u.skipped else
                    f"data files {u.data_files[0]} -> {u.data_files[1]}, delete files "
                    f"{u.delete_files[0]} -> {u.delete_files[1]}, snapshots "
                    f"{u.snapshots[0]} -> {u.snapshots[1]}"
                    + (f", {u.swept_files} unreferenced file(s) removed" if u.swept_files else "")
                    + (f", {u.swept_metadata_files} unused metadata file(s) removed"
                       if u.swept_metadata_files else "")
                    + f" ({u.seconds:.1f} s)")
            print(f"{u.table}: {what}" + (f"; FAILED {u.error}" if u.error else ""))
    return 1 if any(u.error for u in done) else 0


class _NoSpark(Exception):
    """Spark did not start (lake_session said why on stderr)."""


def cmd_load(args: argparse.Namespace) -> int:
    import json

    from ..config import ConfigError
    from ..lake.job import run_load
    from ..lake.lock import LoadLockedError, check_unlocked
    from ..lake.summary import summary_text

    def check(settings: Any) -> None:
        # a load holding the lock now: stop before Spark starts (the load takes the lock);
        # then sources that name nothing readable
        check_unlocked(settings)
        check_sources(settings, args.sources)

    try:
        lake = lake_session(args.config, args.master, source=args.source_name, check=check,
                            overrides={**({} if args.wait is None else
                                          {"lock_wait": args.wait}),
                                       **({"schema_snapshots": tuple(args.schema_snapshot)}
                                          if args.schema_snapshot else {})},
                            debug=getattr(args, "debug", False))
        if lake is None:
            return 1
        settings, spark = lake
        try:
            summary = run_load(spark, settings, args.sources, run_id=args.run_id,
                               branch=args.branch, reload=args.reload)
        except Exception as exc:  # a read-only or full warehouse: Java's stack, in one line
            if is_lake_write_error(exc):
                raise lake_failure(settings, exc) from exc
            raise
    except ConfigError:
        raise
    except ValueError as exc:  # a bad branch name
        raise UsageError(str(exc)) from None
    except LoadLockedError as exc:
        print(f"binlake: error: {exc}", file=sys.stderr)
        return LOCKED
    if args.json:
        print(json.dumps(summary.to_dict(), default=str))
    else:
        print(summary_text(summary))
    return 1 if summary.failed else 0
