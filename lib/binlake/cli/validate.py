"""``binlake validate``: run the validation suite on its own (files, directories, s3:// URIs),
outside the nightly pipeline.  Exit 0 when every error-severity expectation passed (warnings
allowed), 1 when one failed, 2 on usage or input errors."""

from __future__ import annotations

import argparse
import json
import time
import uuid
from typing import Any

from .common import CliError, UsageError
from .lake import check_sources, lake_session


def add_parsers(sub: argparse._SubParsersAction) -> None:
    v = sub.add_parser("validate", help="run the Great Expectations validation suite",
                       description="Check that binlog files (paths, directories or s3:// URIs) "
                       "are a valid, complete stream (grammar, positions, integrity, GTIDs, "
                       "transaction_length, XA) and, unless --no-lake, that the lake "
                       "reconciles with them. Writes Data Docs and validation_results. "
                       "See docs/validation.md.")
    v.add_argument("sources", nargs="+", metavar="SOURCE")
    v.add_argument("--config", metavar="F", help="TOML settings file (see docs/lake.md)")
    v.add_argument("--run-id", metavar="R", help="run id (default: a new one)")
    v.add_argument("--branch", metavar="B",
                   help="read the lake tables from this Iceberg branch (WAP)")
    v.add_argument("--no-lake", action="store_true",
                   help="only the stream expectations (no reconciliation with the lake)")
    v.add_argument("--master", metavar="URL", help="Spark master (default: spark_master)")
    v.add_argument("--source-name", metavar="NAME", help="the source server's label")
    v.add_argument("--json", action="store_true", help="print the report as JSON")
    v.set_defaults(func=cmd_validate)


def cmd_validate(args: argparse.Namespace) -> int:
    from ..binlog.errors import SourceError

    def check(settings: Any) -> None:
        try:
            check_sources(settings, args.sources)  # before starting Spark
        except SourceError as exc:  # an input error: 2, as the verb's usage errors
            raise CliError(str(exc), 2) from None

    run_id = args.run_id or (time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-"
                             + uuid.uuid4().hex[:6])
    from ..quality.run import InputError, suite_warm_modules, validate

    # (Great Expectations, seconds of imports: after the checks, while the JVM starts)
    lake = lake_session(args.config, args.master, source=args.source_name,
                        app_name="binlake-validate", check=check,
                        debug=getattr(args, "debug", False), warm=suite_warm_modules)
    if lake is None:
        return 2
    settings, spark = lake

    try:
        report = validate(spark, settings, args.sources, run_id=run_id, branch=args.branch,
                          lake=not args.no_lake)
    except (InputError, FileNotFoundError) as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        print(json.dumps(report.to_dict(), default=str))
    else:
        print(report.summary_text())
    return 0 if report.success else 1
