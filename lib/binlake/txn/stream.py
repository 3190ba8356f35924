"""Files -> transactions: :class:`TransactionStream` reads a sequence of binlog files in
order, feeds every event to one :class:`~binlake.txn.groups.GroupBuilder`, pairs XA PREPARE
groups with their XA COMMIT/ROLLBACK (:class:`~binlake.txn.xa.XaTracker`) across files and,
through ``pending_in``/``pending``, across runs, and gives each decided transaction its order
keys (:func:`~binlake.txn.order.assign_order`).  Afterwards it describes the rest: the XAs
still prepared, findings, each file's :class:`~binlake.txn.fileinfo.FileInfo`, the groups
that never closed.  :func:`build_transactions` collects all of it in memory.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..binlog.errors import BinlogError, ChecksumError, TruncatedError
from ..binlog.reader import BinlogReader
from . import findings as F
from .checks import StreamChecker, local_size
from .engines import EngineTracker
from .fileinfo import FileInfo, note_event
from .files import BinlogFile, order_files
from .findings import Finding
from .groups import GroupBuilder, XaMarker
from .model import XA_PREPARED, Transaction
from .order import assign_order
from .xa import XaTracker


@dataclass
class BuildResult:
    transactions: list[Transaction] = field(default_factory=list)
    pending: list[Transaction] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    files: list[FileInfo] = field(default_factory=list)
    incomplete: list[Transaction] = field(default_factory=list)


class TransactionStream:
    """Iterate the decided transactions of a sequence of files; afterwards ``pending``,
    ``findings``, ``files`` and ``incomplete`` describe the rest."""

    def __init__(self, uris: Iterable[str | os.PathLike[str]], *,
                 pending_in: list[Transaction] | None = None,
                 nontransactional: Iterable[str] = (), verify_checksums: bool = True,
                 newest_file_may_be_open: bool = True,
                 pending_max_age: float | None = None, stream_checks: bool = False,
                 spill_bytes: int | None = None, spill_rows: int | None = None,
                 table_map_hooks: Callable[[str], Any] | None = None) -> None:
        self.files_in: list[BinlogFile] = order_files(uris)
        self.engines = EngineTracker(nontransactional)
        self.builder = GroupBuilder(self.engines, spill_bytes=spill_bytes, spill_rows=spill_rows)
        self.tracker = XaTracker(pending_in)
        self.verify = verify_checksums
        self.newest_may_be_open = newest_file_may_be_open
        self.pending_max_age = pending_max_age
        self.checker: StreamChecker | None = (
            StreamChecker(newest_file_may_be_open=newest_file_may_be_open)
            if stream_checks else None)
        self.files: list[FileInfo] = []
        self.pending: list[Transaction] = []
        self.findings: list[Finding] = []
        self.last_timestamp: int | None = None
        # called with each file's URI before it is read; what it returns (None: nothing) is
        # the file's BinlogReader table_map_hook (opaque here: the CLI passes one that names
        # the columns of MINIMAL / NO_LOG Table_maps from a schema history)
        self.table_map_hooks = table_map_hooks

    def __iter__(self) -> Iterator[Transaction]:
        b = self.builder
        for n, f in enumerate(self.files_in):
            info = FileInfo(f.name, f.uri, f.seq)
            self.files.append(info)
            b.begin_file(f.name, f.seq)
            checker = self.checker
            if checker is not None:
                checker.begin_file(f.name, seq=f.seq if f.seq >= 0 else None)
            hook = self.table_map_hooks(f.uri) if self.table_map_hooks is not None else None
            reader = BinlogReader(f.uri, verify_checksums=self.verify, name=f.name,
                                  table_map_hook=hook)
            try:
                for ev in reader:
                    note_event(info, ev)
                    if ev.timestamp:
                        self.last_timestamp = ev.timestamp
                    if checker is not None:
                        checker.event(ev)
                    if ev.error is not None:  # (the builder withholds its transaction)
                        info.damaged.append(ev.error)
                        self.findings.append(Finding(
                            F.CHECKSUM_MISMATCH if isinstance(ev.error, ChecksumError)
                            else F.DECODE_ERROR, F.ERROR, f.name, ev.pos, ev.error.to_dict(),
                            str(ev.error)))
                    for item in b.feed(ev):
                        txn = self._decide(item)
                        if txn is not None:
                            yield txn
            except BinlogError as exc:
                info.error = exc
                kind = F.TRUNCATED if isinstance(exc, TruncatedError) else F.DECODE_ERROR
                self.findings.append(Finding(kind, F.ERROR, f.name, exc.offset,
                                             exc.to_dict(), str(exc)))
            info.end_offset = reader.end_offset
            if checker is not None:
                checker.end_file(
                    end_offset=reader.end_offset if info.error is None else info.error.offset,
                    error=info.error,
                    size=local_size(f.uri) if reader.compression is None else None)
            newest = n == len(self.files_in) - 1
            b.end_file(may_be_open=newest and self.newest_may_be_open and bool(info.in_use),
                       end_offset=reader.end_offset)
        self.pending = list(self.tracker.pending.values())
        for t in self.pending:
            ts = t.part.timestamp
            if ts is not None and self.last_timestamp is not None:
                t.age_seconds = float(self.last_timestamp - ts)
            if self.pending_max_age is not None and t.age_seconds is not None \
                    and t.age_seconds > self.pending_max_age:
                self.findings.append(Finding(
                    F.XA_PENDING_TOO_LONG, F.WARNING, t.part.file, t.part.begin_pos,
                    {"xid": t.xa_xid.to_dict() if t.xa_xid else None,
                     "age_seconds": t.age_seconds},
                    f"XA {t.xa_xid} prepared {t.age_seconds:.0f} s before the end of the input "
                    "and still pending"))
        for info, nxt in zip(self.files, self.files[1:]):
            if isinstance(info.error, TruncatedError):
                # A cut file followed by more files: what was cut off is lost, and the later
                # files' events come after a hole in the stream.
                self.findings.append(Finding(
                    F.EVENTS_AFTER_TRUNCATION, F.ERROR, nxt.name, 4,
                    {"truncated_file": info.name, "at": info.error.offset},
                    f"{nxt.name} follows {info.name}, which is cut short at byte "
                    f"{info.error.offset}: the events lost there come before these"))
        if self.checker is not None:
            # the stream checks report framing errors themselves: keep theirs
            self.checker.finish()
            self.findings = [*self.checker.findings,
                             *(f for f in self.findings if f.kind == F.EVENTS_AFTER_TRUNCATION)]
        self.findings = [*self.builder.findings, *self.tracker.findings, *self.findings]
        yield from self.pending

    def _decide(self, item: Transaction | XaMarker) -> Transaction | None:
        if isinstance(item, XaMarker):
            txn = self.tracker.completed(item.xid, item.commit, item.part,
                                         end_event=item.end_event, server_id=item.server_id)
            assign_order(txn)
            return txn
        if item.status == XA_PREPARED:
            self.tracker.prepared(item)
            return None
        assign_order(item)
        return item

    def result(self) -> BuildResult:
        return BuildResult([], self.pending, self.findings, self.files,
                           self.builder.incomplete)


def build_transactions(uris: Iterable[str | os.PathLike[str]], *,
                       pending_in: list[Transaction] | None = None,
                       nontransactional: Iterable[str] | None = None,
                       **kw: Any) -> BuildResult:
    """All transactions of ``uris`` (decided ones in commit order, then the XAs still
    prepared), with findings.  Holds everything in memory: for big inputs iterate a
    :class:`TransactionStream` instead."""
    stream = TransactionStream(uris, pending_in=pending_in,
                               nontransactional=nontransactional or (), **kw)
    txns = list(stream)
    res = stream.result()
    res.transactions = txns
    return res
