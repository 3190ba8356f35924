"""``binlake load``, ``binlake publish`` and ``binlake jvm-archive``: the lake on a local
(or configured) Spark session."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import UsageError

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
    pb.add_argument("--config", metavar="F", help="TOML settings file")
    pb.add_argument("--master", metavar="URL", help="Spark master (default: spark_master)")
    pb.set_defaults(func=cmd_publish)

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
                 overrides: dict[str, Any] | None = None) -> tuple[Any, Any] | None:
    """Settings (``overrides`` last) and a Spark session for the lake commands: a bad
    setting is a usage error; a Spark that cannot start is reported on stderr and gives
    None.  ``check(settings)`` runs before Spark starts."""
    from ..config import ConfigError, load_settings
    from ..lake.spark import SparkSetupError, build_session

    try:
        settings = load_settings(config, source=source, **(overrides or {}))
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    if check is not None:
        check(settings)
    try:
        kw = {"app_name": app_name} if app_name else {}
        return settings, build_session(settings, master=master, **kw)
    except SparkSetupError as exc:
        print(f"binlake: error: {exc}", file=sys.stderr)
        return None




def cmd_jvm_archive(args: argparse.Namespace) -> int:
    from ..config import ConfigError, load_settings
    from ..lake.classarchive import ClassArchiveError, archive_path, build, usable
    from ..lake.spark import SparkSetupError, jars_for

    try:
        settings = load_settings(args.config)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
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
    from ..lake.publish import discard, publish

    lake = lake_session(args.config, args.master)
    if lake is None:
        return 1
    settings, spark = lake
    try:
        done = (discard if args.discard else publish)(spark, settings, args.branch)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    verb = "discarded" if args.discard else "published"
    print(f"{verb} branch {args.branch}: {', '.join(done) if done else 'no table has it'}")
    return 0




def cmd_load(args: argparse.Namespace) -> int:
    import json

    from ..lake.job import run_load, summary_text
    from ..lake.lock import LoadLockedError, check_unlocked

    try:
        # a load holding the lock now: stop before Spark starts (the load takes the lock)
        lake = lake_session(args.config, args.master, source=args.source_name,
                            check=check_unlocked,
                            overrides={} if args.wait is None else {"lock_wait": args.wait})
        if lake is None:
            return 1
        settings, spark = lake
        summary = run_load(spark, settings, args.sources, run_id=args.run_id,
                           branch=args.branch, reload=args.reload)
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
