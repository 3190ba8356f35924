"""``binlake archive``: copy a source's closed binlog files to the object store."""

from __future__ import annotations

import argparse
import json
import os
import sys

from .common import UsageError


def add_parsers(sub: argparse._SubParsersAction) -> None:
    ar = sub.add_parser("archive", help="copy closed binlog files to the object store",
                        description="Copy the closed binlog files of a source (a binlog "
                        "directory / .index file, or a server over the replication protocol) "
                        "to the archive (archive_uri), each once. Exit 0 ok, 1 error, 3 new gap "
                        "(files purged before they were archived). See docs/orchestration.md.")
    ar.add_argument("--config", metavar="F", help="TOML settings file")
    ar.add_argument("--source-name", metavar="NAME", help="the source server's label")
    ar.add_argument("--from-dir", metavar="DIR", help="binlog directory or .index file "
                    "(default: archive_source_dir)")
    ar.add_argument("--from-server", metavar="HOST[:PORT]",
                    help="fetch with mariadb-binlog --read-from-remote-server (password: "
                    "$MYSQL_PWD)")
    ar.add_argument("--user", default="root", help="with --from-server")
    ar.add_argument("--verify", action="store_true",
                    help="read every archived object again and compare its bytes with the "
                    "sha256 recorded when it was archived (exit 1 when one differs); also "
                    "hash the source's files again")
    ar.add_argument("--json", action="store_true", help="print the report as JSON")
    ar.set_defaults(func=cmd_archive)


def cmd_archive(args: argparse.Namespace) -> int:
    from ..archive import ArchiveGapError, ArchiveVerifyError, archive, source_from_settings
    from ..archive.objectstore import store_for
    from ..config import load_settings

    settings = load_settings(args.config, source=args.source_name,
                             archive_source_dir=args.from_dir)  # ConfigError: exit 2
    remote = None
    if args.from_server:
        host, _, port = args.from_server.partition(":")
        if not host or not (port or "3306").isdigit():
            raise UsageError(f"--from-server {args.from_server!r}: expected HOST or HOST:PORT")
        remote = {"host": host, "port": int(port or 3306), "user": args.user,
                  "password": os.environ.get("MYSQL_PWD", "")}
    rc = 0
    try:
        report = archive(source_from_settings(settings, remote=remote), store_for(settings),
                         settings.source, verify=args.verify)
    except ArchiveVerifyError as exc:  # one line per object that differs
        report, rc = exc.report, 1
        for c in report.corrupt:
            print(f"binlake: error: {c['uri']}: {c['problem']}", file=sys.stderr)
    except ArchiveGapError as exc:
        report, rc = exc.report, 3
        print(f"binlake: error: {exc}", file=sys.stderr)
    # (ArchiveError, ObjectStoreError: binlake.cli.main says it on one line, exit 1)
    print(json.dumps(report.to_dict()) if args.json else report.text())
    return rc
