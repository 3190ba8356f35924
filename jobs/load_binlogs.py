"""Spark entry point: archived binlogs -> Iceberg.

    spark-submit --py-files binlake.zip jobs/load_binlogs.py [--config F] [--run-id R]
        [--branch B] [--reload] SOURCE...

SOURCE: binlog files, directories, or s3:// URIs (a prefix ending in / lists its objects), or
``@manifest.txt`` (one URI per line).  Settings come from --config and BINLAKE_* variables
(docs/lake.md).  Prints the run summary as JSON; exits 1 when a file failed to decode.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="load_binlogs")
    p.add_argument("sources", nargs="+")
    p.add_argument("--config")
    p.add_argument("--source-name")
    p.add_argument("--run-id")
    p.add_argument("--branch", help="write on this Iceberg branch (write-audit-publish)")
    p.add_argument("--reload", action="store_true", help="decode loaded files again")
    return p.parse_args(argv)


def expand(sources: list[str]) -> list[str]:
    out: list[str] = []
    for s in sources:
        if s.startswith("@"):
            with open(s[1:], encoding="utf-8") as fh:
                out += [line.strip() for line in fh if line.strip() and not line.startswith("#")]
        else:
            out.append(s)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    from binlake.lake.daemon import use_installed

    use_installed()  # before PySpark's import: its compiled files, not Spark's archive
    from binlake.config import load_settings
    from binlake.lake.job import run_load
    from binlake.lake.spark import build_session

    settings = load_settings(args.config, source=args.source_name)
    spark = build_session(settings)  # under spark-submit the master comes from spark-submit
    summary = run_load(spark, settings, expand(args.sources), run_id=args.run_id,
                       branch=args.branch, reload=args.reload)
    print(json.dumps(summary.to_dict(), default=str))
    return 1 if summary.failed else 0


if __name__ == "__main__":
    sys.exit(main())
