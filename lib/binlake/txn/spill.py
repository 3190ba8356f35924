"""The row changes of a huge transaction, kept on local disk instead of in memory.

A transaction's outcome (and so its order key, its commit time and whether its changes took
effect) is known only at its last event, so the changes of an open group are held until then.
For a bulk load or a mass DELETE of a gigabyte that does not fit in a worker's memory: a
:class:`~binlake.txn.build.GroupBuilder` given ``spill_bytes`` (and ``spill_rows``) moves an
open group's changes to a :class:`SpilledChanges` each time its rows events add up to that
many bytes of binlog (or it holds that many changes).
Each move is one pickled chunk in an anonymous temporary file (deleted by the kernel when the
file is closed or the process dies, whatever happens), in Spark's local directory inside a
Spark task (``SPARK_LOCAL_DIRS``, which Spark sets for its Python workers: the disk it keeps
for shuffle spills), else in the system's temporary directory.

What the builder would do to the changes in place while they sit on disk is kept as a note
and applied when they are read back: ``ROLLBACK TO SAVEPOINT`` and ``ROLLBACK`` (the
transactional changes of an index range did not take effect: :meth:`undo_from`) and the
order keys (:meth:`set_order`).  Reading back (:meth:`chunks`, or iterating) yields the
changes in their logged order, one chunk at a time, so a reader that writes each chunk out
before it takes the next holds one chunk of a transaction, whatever its size.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Iterator
from typing import IO, Any

from .model import RowChange

# What the tools that read whole files use (verify, transactions, the quality facts): spill
# a transaction's changes past 32 MiB of rows events or 100,000 changes.
SPILL_BYTES = 32 << 20
SPILL_ROWS = 100_000


class SpillError(OSError):
    """A transaction's changes could not be written to local disk (full, or not writable).
    Not a fault of the binlog: the task fails (Spark runs it again) and the file is not
    marked as bad."""


def spill_directory() -> str | None:
    """Where spilled changes go: the first of Spark's local directories that exists (None:
    the system's temporary directory)."""
    for d in os.environ.get("SPARK_LOCAL_DIRS", "").split(","):
        if d.strip() and os.path.isdir(d.strip()):
            return d.strip()
    return None


def undo_changes(changes: Any, start: int = 0) -> None:
    """The transactional changes of ``changes`` (a list, or a :class:`SpilledChanges`) from
    index ``start`` on did not take effect (ROLLBACK TO SAVEPOINT, ROLLBACK, XA ROLLBACK):
    their ``applied`` becomes False; changes to non-transactional tables stay applied."""
    if isinstance(changes, SpilledChanges):
        changes.undo_from(start)
        return
    for c in changes[start:] if start else changes:
        if c.transactional:
            c.applied = False


class SpilledChanges:
    """The changes of one transaction: chunks on disk, then a ``tail`` list in memory.

    Indexes are the changes' positions in the whole transaction (what savepoints hold)."""

    def __init__(self, tail: list[RowChange], directory: str | None = None,
                 where: str = "") -> None:
        self._dir = directory
        self._where = where  # "file:pos" of the transaction, for errors
        self._file: IO[bytes] | None = None
        self._chunks: list[tuple[int, int]] = []  # (file offset, changes) per chunk
        self.spilled = 0  # changes on disk (they come before the tail)
        self.tail = tail  # the builder appends to this very list
        self._undone: list[tuple[int, int]] = []  # [start, end) of undone transactional changes
        self._order: tuple[int, int] | None = None

    # -- while the group is open (GroupBuilder) --------------------------------------------------

    def spill_tail(self) -> list[RowChange]:
        """Move the tail to disk (one chunk); returns the new, empty tail."""
        if self.tail:
            where = self._dir or spill_directory() or tempfile.gettempdir()
            try:
                if self._file is None:
                    self._file = tempfile.TemporaryFile(  # noqa: SIM115 - closed by close()
                        prefix="binlake-txn-", dir=where)
                f = self._file
                f.seek(0, 2)
                at = f.tell()
                pickle.dump(self.tail, f, protocol=pickle.HIGHEST_PROTOCOL)
            except OSError as exc:
                raise SpillError(
                    exc.errno, f"cannot keep the {len(self)} changes so far of the "
                    f"transaction at {self._where or '?'} on local disk in {where} "
                    f"({exc.strerror or exc}): give the executors more local disk "
                    "(spark.local.dir, SPARK_LOCAL_DIRS)") from exc
            self._chunks.append((at, len(self.tail)))
            self.spilled += len(self.tail)
            self.tail = []
        return self.tail

    def undo_from(self, start: int) -> None:
        """The transactional changes from index ``start`` to the last so far did not take
        effect: marked now in the tail, when read back on disk."""
        if start < self.spilled:
            self._undone.append((start, self.spilled))
        undo_changes(self.tail, max(0, start - self.spilled))

    def set_order(self, seq: int, end_pos: int) -> None:
        """The order keys ``(seq, end_pos, index)`` (see build.assign_order)."""
        self._order = (seq, end_pos)
        for i, c in enumerate(self.tail, self.spilled):
            c.order = (seq, end_pos, i)

    # -- reading back ---------------------------------------------------------------------------

    def __len__(self) -> int:
        return self.spilled + len(self.tail)

    def __bool__(self) -> bool:
        return len(self) > 0

    def chunks(self) -> Iterator[list[RowChange]]:
        """The changes in order, one list per spilled chunk, the tail last."""
        at = 0
        for offset, n in self._chunks:
            if self._file is None:
                raise ValueError("the changes of a closed SpilledChanges are gone")
            self._file.seek(offset)
            chunk: list[RowChange] = pickle.load(self._file)
            self._marked(chunk, at)
            at += n
            yield chunk
        if self.tail:
            yield self.tail

    def _marked(self, chunk: list[RowChange], first: int) -> None:
        last = first + len(chunk)
        for start, end in self._undone:
            undo_changes(chunk[max(start, first) - first:max(min(end, last) - first, 0)])
        if self._order is not None:
            seq, pos = self._order
            for i, c in enumerate(chunk, first):
                c.order = (seq, pos, i)

    def __iter__(self) -> Iterator[RowChange]:
        for chunk in self.chunks():
            yield from chunk

    def close(self) -> None:
        """Delete the file (also done when this object goes, or the process does)."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def __del__(self) -> None:
        self.close()

    def __getstate__(self) -> Any:
        raise TypeError("SpilledChanges lives in one process's temporary file: "
                        "read its changes out instead of pickling it")
