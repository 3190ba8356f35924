"""Transaction reconstruction: events -> event groups -> transactions.  This module gathers
the names the other floors use; each lives in the module named for its role:

* :mod:`binlake.txn.groups`: :class:`GroupBuilder` turns the events of one file (or of a
  transaction-aligned byte range of one, which is what a Spark executor gets) into decided
  transactions and :class:`XaMarker` (XA COMMIT/ROLLBACK groups), using the WL#4162 boundary
  parser; how a group's outcome is decided is described there (the group being read:
  :mod:`binlake.txn.opengroup`);
* :mod:`binlake.txn.stream`: :class:`TransactionStream` runs it over a sequence of files and
  pairs XA PREPARE groups with their XA COMMIT/ROLLBACK (:class:`~binlake.txn.xa.XaTracker`),
  across files and, through ``pending_in``/``pending``, across runs;
  :func:`build_transactions` collects all of it in memory (:class:`BuildResult`);
* :mod:`binlake.txn.order`: :func:`assign_order`, the order keys ``(file sequence, end
  position of the deciding group, index in the transaction)``: sorting by them replays
  changes in commit order across files and runs;
* :mod:`binlake.txn.fileinfo`: :class:`FileInfo` and :func:`note_event`, what one file
  turned out to hold.
"""

from __future__ import annotations

from .fileinfo import FileInfo, note_event
from .groups import (
    MARIADB_COMPLETED_XA,
    MARIADB_PREPARED_XA,
    MARIADB_STANDALONE,
    MARIADB_TRANSACTIONAL,
    GroupBuilder,
    XaMarker,
)
from .order import assign_order
from .stream import BuildResult, TransactionStream, build_transactions

__all__ = [
    "MARIADB_COMPLETED_XA",
    "MARIADB_PREPARED_XA",
    "MARIADB_STANDALONE",
    "MARIADB_TRANSACTIONAL",
    "BuildResult",
    "FileInfo",
    "GroupBuilder",
    "TransactionStream",
    "XaMarker",
    "assign_order",
    "build_transactions",
    "note_event",
]
