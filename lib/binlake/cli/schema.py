"""``binlake schema``: the schema history of binlog files as JSON Lines (docs/schema.md)."""

from __future__ import annotations

import argparse
import sys

from .common import UsageError, out


def add_parsers(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("schema", help="the schema history of binlog files as JSON Lines",
                       description="Every DDL Query event becomes a versioned table schema "
                       "keyed by its position; every Table_map is checked against the "
                       "version in force. One JSON object per version, then one per "
                       "finding. See docs/schema.md.")
    s.add_argument("sources", nargs="+", metavar="SOURCE",
                   help="binlog files (or directories of them), in order")
    s.add_argument("--snapshot", metavar="F",
                   help="seed snapshot: mysqldump --no-data output of the schema before "
                   "the first file")
    s.add_argument("--no-verify", action="store_true", help="do not verify event checksums")
    s.set_defaults(func=cmd_schema)


def cmd_schema(args: argparse.Namespace) -> int:
    from ..binlog.render import dumps
    from ..schema.build import build_history
    from ..schema.model import SchemaHistory
    from ..schema.seed import from_mysqldump

    history = SchemaHistory()
    if args.snapshot:
        try:
            with open(args.snapshot, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as exc:
            raise UsageError(f"--snapshot {args.snapshot}: {exc.strerror}") from None
        from_mysqldump(text, history=history, file=args.snapshot)
    res = build_history(args.sources, history=history, verify_checksums=not args.no_verify,
                        keep_checks=False)
    stdout = out()
    for v in res.history.all_versions():
        stdout.write(dumps({"version": v.to_dict()}))
    for f in res.history.findings:
        stdout.write(dumps(f.to_dict()))
    stdout.flush()
    for err in res.errors:
        print(f"binlake: error: {err}", file=sys.stderr)
    bad = res.checked - res.agreed
    print(f"binlake schema: {len(res.history.versions)} table(s), "
          f"{sum(len(v) for v in res.history.versions.values())} version(s), "
          f"{res.checked} Table_map(s) checked, {bad} disagree(s), "
          f"{len(res.history.findings)} finding(s)", file=sys.stderr)
    return 1 if res.errors else 0
