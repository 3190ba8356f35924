"""The ``binlake`` command line."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import IO, Any

from . import __version__
from .errors import BinlogError


class _Usage(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"binlake: usage error: {message}", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="binlake", description="MySQL/MariaDB binary logs to an Iceberg lakehouse.")
    p.add_argument("--version", action="version", version=f"binlake {__version__}")
    p.add_argument("-q", "--quiet", action="store_true", help="no warnings on stderr")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    d = sub.add_parser("decode", help="decode binlog files to JSON Lines on stdout",
                       description="Decode binlog files (paths or s3:// URIs, plain or "
                       "gzip/zstd) to JSON Lines: one object per event, or per row change "
                       "with --rows. See docs/decode-format.md.")
    d.add_argument("files", nargs="+", metavar="FILE")
    d.add_argument("--rows", action="store_true", help="one object per row change")
    d.add_argument("--start-position", type=int, default=None, metavar="N",
                   help="first event: the one at byte N (an event boundary)")
    d.add_argument("--stop-position", type=int, default=None, metavar="N",
                   help="stop before the first event at or after byte N")
    d.add_argument("--no-verify", action="store_true", help="do not verify event checksums")
    d.add_argument("--statement-every-row", action="store_true",
                   help="with --rows: repeat the statement text on every row change")
    d.set_defaults(func=cmd_decode)

    t = sub.add_parser("transactions", help="reconstruct transactions as JSON Lines",
                       description="One JSON object per transaction, in commit order (an XA "
                       "at its XA COMMIT/ROLLBACK; XAs still prepared at the end last). See "
                       "docs/transactions-format.md.")
    t.add_argument("files", nargs="+", metavar="FILE")
    t.add_argument("--pending-in", metavar="F",
                   help="XA transactions still prepared after an earlier run (JSON)")
    t.add_argument("--pending-out", metavar="F",
                   help="write the XA transactions still prepared at the end here (JSON)")
    t.add_argument("--changes", action="store_true",
                   help="include every row change (with its order key) in each object")
    _txn_options(t)
    t.set_defaults(func=cmd_transactions)

    v = sub.add_parser("verify", help="check that the event stream is valid",
                       description="Check transaction grammar (WL#4162), positions, "
                       "checksums, transaction_length, GTID continuity, the file chain and "
                       "XA pairing. Exit 0 when valid, 1 when not.")
    v.add_argument("files", nargs="+", metavar="FILE")
    v.add_argument("--pending-in", metavar="F",
                   help="XA transactions still prepared after an earlier run (JSON)")
    v.add_argument("--json", action="store_true", help="findings as JSON Lines")
    v.add_argument("--max-xa-age", type=float, default=None, metavar="SECONDS",
                   help="warn about XAs pending longer than this")
    _txn_options(v)
    v.set_defaults(func=cmd_verify)

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

    from .quality.cli import add_parser as add_validate

    add_validate(sub, cmd_validate)

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
                    help="hash every archived file again and compare with the source")
    ar.add_argument("--json", action="store_true", help="print the report as JSON")
    ar.set_defaults(func=cmd_archive)
    return p


def cmd_archive(args: argparse.Namespace) -> int:
    from .archive import main_archive

    return main_archive(args)


def cmd_validate(args: argparse.Namespace) -> int:
    from .quality.cli import cmd_validate as run

    return run(args, _Usage)


def lake_session(config: str | None, master: str | None, source: str | None = None,
                 app_name: str | None = None, check: Any = None,
                 overrides: dict[str, Any] | None = None) -> tuple[Any, Any] | None:
    """Settings (``overrides`` last) and a Spark session for the lake commands: a bad
    setting is a usage error; a Spark that cannot start is reported on stderr and gives
    None.  ``check(settings)`` runs before Spark starts."""
    from .config import ConfigError, load_settings
    from .lake.spark import SparkSetupError, build_session

    try:
        settings = load_settings(config, source=source, **(overrides or {}))
    except ConfigError as exc:
        raise _Usage(str(exc)) from None
    if check is not None:
        check(settings)
    try:
        kw = {"app_name": app_name} if app_name else {}
        return settings, build_session(settings, master=master, **kw)
    except SparkSetupError as exc:
        print(f"binlake: error: {exc}", file=sys.stderr)
        return None


def cmd_jvm_archive(args: argparse.Namespace) -> int:
    from .config import ConfigError, load_settings
    from .lake.classarchive import ClassArchiveError, archive_path, build, usable
    from .lake.spark import SparkSetupError, jars_for

    try:
        settings = load_settings(args.config)
    except ConfigError as exc:
        raise _Usage(str(exc)) from None
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
    from .lake.publish import discard, publish

    lake = lake_session(args.config, args.master)
    if lake is None:
        return 1
    settings, spark = lake
    try:
        done = (discard if args.discard else publish)(spark, settings, args.branch)
    except ValueError as exc:
        raise _Usage(str(exc)) from None
    verb = "discarded" if args.discard else "published"
    print(f"{verb} branch {args.branch}: {', '.join(done) if done else 'no table has it'}")
    return 0


LOCKED = 75  # sysexits' EX_TEMPFAIL: another load is writing the lake; try again later


def cmd_load(args: argparse.Namespace) -> int:
    import json

    from .lake.job import run_load, summary_text
    from .lake.lock import LoadLockedError, check_unlocked

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
        raise _Usage(str(exc)) from None
    except LoadLockedError as exc:
        print(f"binlake: error: {exc}", file=sys.stderr)
        return LOCKED
    if args.json:
        print(json.dumps(summary.to_dict(), default=str))
    else:
        print(summary_text(summary))
    return 1 if summary.failed else 0


def _txn_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--nontransactional", action="append", default=[], metavar="DB.TABLE",
                   help="a table on a non-transactional engine (MyISAM, Aria...) that the "
                   "binlog's own DDL does not show; repeatable")
    p.add_argument("--no-verify", action="store_true", help="do not verify event checksums")


def _pending_in(path: str | None) -> list:
    if not path:
        return []
    from .txn.xa import load_pending

    try:
        with open(path, encoding="utf-8") as fh:
            return load_pending(fh.read())
    except FileNotFoundError:
        raise _Usage(f"--pending-in {path}: no such file") from None
    except (ValueError, KeyError) as exc:
        raise _Usage(f"--pending-in {path}: not a pending-XA state file ({exc})") from None


def cmd_transactions(args: argparse.Namespace) -> int:
    from .render import dumps
    from .txn.build import TransactionStream
    from .txn.findings import ERROR
    from .txn.spill import SPILL_BYTES, SPILL_ROWS, SpilledChanges
    from .txn.xa import dump_pending

    # a huge transaction's changes wait on disk, and --changes writes them a chunk at a time
    stream = TransactionStream(args.files, pending_in=_pending_in(args.pending_in),
                               nontransactional=args.nontransactional,
                               verify_checksums=not args.no_verify,
                               spill_bytes=SPILL_BYTES, spill_rows=SPILL_ROWS)
    out = _out()
    buf = bytearray()
    for txn in stream:
        if args.changes and isinstance(txn.changes, SpilledChanges):
            # the bytes dumps(txn.to_dict(with_changes=True)) would give ("changes" comes
            # last), without the whole list in memory
            head = dumps(txn.to_dict())
            buf += head[:-2] + b',"changes":['
            sep = b""
            for chunk in txn.changes.chunks():
                for c in chunk:
                    buf += sep
                    buf += dumps(c.to_dict())[:-1]
                    sep = b","
                    if len(buf) > 1 << 20:
                        out.write(buf)
                        buf.clear()
            buf += b"]}\n"
        else:
            buf += dumps(txn.to_dict(with_changes=args.changes))
        if len(buf) > 1 << 20:
            out.write(buf)
            buf.clear()
    out.write(buf)
    out.flush()
    if args.pending_out:
        with open(args.pending_out, "w", encoding="utf-8") as fh:
            fh.write(dump_pending(stream.pending))
    failed = False
    for info in stream.files:
        if info.error is not None:
            failed = True
            print(f"binlake: error: {info.error}", file=sys.stderr)
    for f in stream.findings:
        if f.severity == ERROR and f.kind not in ("truncated", "decode_error"):
            print(f"binlake: finding: {f}", file=sys.stderr)
    return 1 if failed else 0


def cmd_verify(args: argparse.Namespace) -> int:
    from .render import dumps
    from .txn.verify import verify

    findings = verify(args.files, pending_in=_pending_in(args.pending_in),
                      nontransactional=args.nontransactional,
                      verify_checksums=not args.no_verify, pending_max_age=args.max_xa_age)
    out = _out()
    errors = 0
    for f in findings:
        if f.severity == "error":
            errors += 1
        if args.json:
            out.write(dumps(f.to_dict()))
        else:
            out.write((str(f) + "\n").encode("utf-8"))
    summary = (f"{len(args.files)} file(s): {errors} error(s), "
               f"{sum(1 for f in findings if f.severity == 'warning')} warning(s)")
    print(f"binlake verify: {'INVALID' if errors else 'valid'}: {summary}", file=sys.stderr)
    out.flush()
    return 1 if errors else 0


def _out() -> IO[bytes]:
    return sys.stdout.buffer


def cmd_decode(args: argparse.Namespace) -> int:
    from .reader import BinlogReader
    from .render import dumps, event_dict
    from .rowchanges import DECODE_FOR_ROWS, iter_row_changes

    if args.start_position is not None and args.start_position < 4:
        raise _Usage("--start-position must be >= 4")
    out = _out()
    failed = False
    buf = bytearray()
    for f in args.files:
        reader = BinlogReader(f, start=args.start_position, stop=args.stop_position,
                              verify_checksums=not args.no_verify,
                              decode=DECODE_FOR_ROWS if args.rows else None)
        errors: list[BinlogError] = []

        def checked(reader: BinlogReader = reader, errors: list[BinlogError] = errors):
            for ev in reader:
                if ev.error is not None:
                    errors.append(ev.error)
                yield ev

        try:
            if args.rows:
                items = iter_row_changes(checked(), statement_every_row=args.statement_every_row)
                for row in items:
                    buf += dumps(row)
                    if len(buf) > 1 << 20:
                        out.write(buf)
                        buf.clear()
            else:
                for ev in checked():
                    buf += dumps(event_dict(ev))
                    if len(buf) > 1 << 20:
                        out.write(buf)
                        buf.clear()
        except BinlogError as exc:
            errors.append(exc)
        out.write(buf)
        buf.clear()
        for err in errors:
            failed = True
            print(f"binlake: error: {err}", file=sys.stderr)
    out.flush()
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR if args.quiet else logging.WARNING,
                        format="binlake: warning: %(message)s")
    try:
        return int(args.func(args))
    except _Usage as exc:
        print(f"binlake: usage error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader of our stdout went away (e.g. `| head`): not an error of ours.
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
