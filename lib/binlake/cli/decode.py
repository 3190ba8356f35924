"""``binlake decode``, ``binlake transactions`` and ``binlake verify``: the decoder and the
transaction layer on files, without Spark."""

from __future__ import annotations

import argparse
import sys
from itertools import pairwise
from typing import Any, cast

from ..binlog.errors import BinlogError, CorruptEventError
from .common import UsageError, out


def add_parsers(sub: argparse._SubParsersAction) -> None:
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
    _schema_option(d)
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
    _schema_option(t)
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



def _schema_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--schema", metavar="F",
                   help="name the columns of Table_maps logged without names "
                   "(binlog_row_metadata MINIMAL on MySQL 8, NO_LOG on MariaDB: images keyed "
                   "@1..@n) from F, the JSON Lines output of `binlake schema` on these files "
                   "(or on all files up to them); also gives signedness, ENUM/SET members "
                   "and charsets. A Table_map that disagrees with the version in force keeps "
                   "@n and is a finding on stderr (binlake: schema: ...). See docs/schema.md")


class _SchemaNaming:
    """``--schema F``: one history, a :class:`~binlake.schema.names.TableMapNamer` per file
    read (its sequence number numbered as ``binlake schema`` numbers it: the digits of its
    extension, or its index in the list when those do not increase in the order given)."""

    def __init__(self, path: str, files: list[str]) -> None:
        from ..schema.build import file_seq
        from ..schema.jsonl import SchemaFileError, load_history

        try:
            self.history = load_history(path)
        except SchemaFileError as exc:
            raise UsageError(f"--schema {exc}") from None
        seqs = [file_seq(f, i) for i, f in enumerate(files)]
        if any(b <= a for a, b in pairwise(seqs)):
            seqs = list(range(len(files)))
        self.seqs = dict(zip(files, seqs))
        self.namers: list[Any] = []
        self._printed = 0  # findings of namers[:_printed] were printed

    def hook(self, uri: str) -> Any:
        from ..schema.build import file_seq
        from ..schema.names import TableMapNamer

        seq = self.seqs.get(uri)
        namer = TableMapNamer(self.history, file_seq(uri, 0) if seq is None else seq, uri)
        self.namers.append(namer)
        return namer

    def report(self) -> None:
        """The findings of the namers made since the last call, one line each on stderr
        (they do not change the exit code)."""
        for namer in self.namers[self._printed:]:
            for f in namer.findings:
                print(f"binlake: schema: {f}", file=sys.stderr)
        self._printed = len(self.namers)


def _schema_naming(args: argparse.Namespace) -> _SchemaNaming | None:
    return _SchemaNaming(args.schema, list(args.files)) if args.schema else None


def _txn_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--nontransactional", action="append", default=[], metavar="DB.TABLE",
                   help="a table on a non-transactional engine (MyISAM, Aria...) that the "
                   "binlog's own DDL does not show; repeatable")
    p.add_argument("--no-verify", action="store_true", help="do not verify event checksums")




def _pending_in(path: str | None) -> list:
    if not path:
        return []
    from ..txn.xa import load_pending

    try:
        with open(path, encoding="utf-8") as fh:
            return load_pending(fh.read())
    except FileNotFoundError:
        raise UsageError(f"--pending-in {path}: no such file") from None
    except (ValueError, KeyError) as exc:
        raise UsageError(f"--pending-in {path}: not a pending-XA state file ({exc})") from None




def cmd_transactions(args: argparse.Namespace) -> int:
    from ..binlog.render import dumps
    from ..txn import findings as F
    from ..txn.build import TransactionStream
    from ..txn.findings import ERROR
    from ..txn.spill import SPILL_BYTES, SPILL_ROWS, SpilledChanges
    from ..txn.xa import dump_pending

    naming = _schema_naming(args)
    # a huge transaction's changes wait on disk, and --changes writes them a chunk at a time
    stream = TransactionStream(args.files, pending_in=_pending_in(args.pending_in),
                               nontransactional=args.nontransactional,
                               verify_checksums=not args.no_verify,
                               spill_bytes=SPILL_BYTES, spill_rows=SPILL_ROWS,
                               table_map_hooks=naming.hook if naming is not None else None)
    stdout = out()
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
                        stdout.write(buf)
                        buf.clear()
            buf += b"]}\n"
        else:
            buf += dumps(txn.to_dict(with_changes=args.changes))
        if len(buf) > 1 << 20:
            stdout.write(buf)
            buf.clear()
    stdout.write(buf)
    stdout.flush()
    if naming is not None:
        naming.report()
    if args.pending_out:
        with open(args.pending_out, "w", encoding="utf-8") as fh:
            fh.write(dump_pending(stream.pending))
    failed = False
    for info in stream.files:
        for err in info.errors:  # a damaged event, a framing error: the file failed
            failed = True
            print(f"binlake: error: {err}", file=sys.stderr)
    for f in stream.findings:
        if f.severity == ERROR and f.kind not in (F.TRUNCATED, F.DECODE_ERROR,
                                                  F.CHECKSUM_MISMATCH):
            print(f"binlake: finding: {f}", file=sys.stderr)
    return 1 if failed else 0




def cmd_verify(args: argparse.Namespace) -> int:
    from ..binlog.render import dumps
    from ..txn import findings as F
    from ..txn.verify import verify

    findings = verify(args.files, pending_in=_pending_in(args.pending_in),
                      nontransactional=args.nontransactional,
                      verify_checksums=not args.no_verify, pending_max_age=args.max_xa_age)
    stdout = out()
    errors = 0
    for f in findings:
        if f.severity == "error":
            errors += 1
        if args.json:
            stdout.write(dumps(f.to_dict()))
        else:
            stdout.write((str(f) + "\n").encode("utf-8"))
    stdout.flush()
    for f in findings:  # a file that could not be read whole, or trusted: on stderr too
        if f.severity == F.ERROR and f.kind in (F.TRUNCATED, F.DECODE_ERROR,
                                                F.CHECKSUM_MISMATCH, F.DAMAGED_TRANSACTION):
            print(f"binlake: error: {f.file} at byte {f.pos}: {f.message}", file=sys.stderr)
    summary = (f"{len(args.files)} file(s): {errors} error(s), "
               f"{sum(1 for f in findings if f.severity == 'warning')} warning(s)")
    print(f"binlake verify: {'INVALID' if errors else 'valid'}: {summary}", file=sys.stderr)
    stdout.flush()
    return 1 if errors else 0




def cmd_decode(args: argparse.Namespace) -> int:
    from ..binlog.reader import BinlogReader
    from ..binlog.render import dumps, event_dict
    from ..binlog.rowchanges import DECODE_FOR_ROWS, iter_row_changes

    if args.start_position is not None and args.start_position < 4:
        raise UsageError("--start-position must be >= 4")
    naming = _schema_naming(args)
    stdout = out()
    failed = False
    buf = bytearray()
    for f in args.files:
        reader = BinlogReader(f, start=args.start_position, stop=args.stop_position,
                              verify_checksums=not args.no_verify,
                              decode=DECODE_FOR_ROWS if args.rows else None,
                              table_map_hook=naming.hook(f) if naming is not None else None)
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
                    line = _render(dumps, row, f, row.get("pos"), errors)
                    if line is not None:
                        buf += line
                    if len(buf) > 1 << 20:
                        stdout.write(buf)
                        buf.clear()
            else:
                for ev in checked():
                    line = _render(dumps, event_dict(ev), f, ev.pos, errors)
                    if line is not None:
                        buf += line
                    if len(buf) > 1 << 20:
                        stdout.write(buf)
                        buf.clear()
        except BinlogError as exc:
            errors.append(exc)
        finally:  # whatever stops the file, what was decoded before it is written
            stdout.write(buf)
            buf.clear()
        if naming is not None:
            stdout.flush()
            naming.report()
        for err in errors:
            failed = True
            print(f"binlake: error: {err}", file=sys.stderr)
    stdout.flush()
    return 1 if failed else 0


def _render(dumps: Any, obj: dict[str, Any], file: str, pos: int | None,
            errors: list[BinlogError]) -> bytes | None:
    """One JSON line; an object that cannot be written as JSON is an error located at its
    event (the events after it are still written)."""
    try:
        return cast(bytes, dumps(obj))
    except (TypeError, ValueError) as exc:
        errors.append(CorruptEventError(f"cannot write the event as JSON ({exc})", file=file,
                                        offset=pos))
        return None
