"""The ``binlake`` command line."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import IO

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
    return p


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
