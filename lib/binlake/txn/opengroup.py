"""An event group still being read: what :class:`~binlake.txn.groups.GroupBuilder` holds
between the first event of a group and the one that decides it.

``_Group`` is that state (position, GTID, the row changes so far, savepoints, statements and
their statement-format context, the tables touched, the first damaged event); ``_changes`` and
``_count`` read its changes whether they are all in memory or partly spilled to disk
(:mod:`binlake.txn.spill`).
"""

from __future__ import annotations

from typing import Any

from ..binlog.errors import BinlogError
from .model import RowChange, XaXid
from .spill import SpilledChanges


class _Group:
    """An open event group."""

    __slots__ = ("begun", "by_gtid", "changes", "commit_ts_us", "context", "contexts", "damage",
                 "file", "gtid", "held", "implicit", "mariadb_flags", "pos", "savepoints", "seq",
                 "server_id", "spill", "statement", "statement_pidx", "statement_pos",
                 "statements", "tables", "xa_xid")

    def __init__(self, file: str, seq: int, pos: int, server_id: int) -> None:
        self.file = file
        self.seq = seq
        self.pos = pos
        self.server_id = server_id
        self.gtid: str | None = None
        self.by_gtid = False  # opened by a GTID / ANONYMOUS_GTID / MariaDB GTID event
        self.implicit = False  # MySQL 5.0/5.1: rows events of an autocommit statement, no BEGIN
        self.begun = False  # BEGIN / XA START seen (or a MariaDB transactional GTID)
        self.mariadb_flags: int | None = None
        self.commit_ts_us: int | None = None
        self.xa_xid: XaXid | None = None
        self.changes: list[RowChange] = []  # (with ``spill``: the changes after the spilled)
        # with GroupBuilder.spill_bytes: the bytes of rows events since the last spill, and
        # where the changes before ``changes`` went (its tail *is* ``changes``)
        self.held = 0
        self.spill: SpilledChanges | None = None
        self.statements: list[str] = []
        self.statement: str | None = None  # Annotate_rows / Rows_query text in force
        self.statement_pos: int | None = None  # ... and the position of its event
        self.statement_pidx: int | None = None  # ... and its index in a Transaction_payload
        self.savepoints: list[tuple[str, int]] = []
        self.tables: set[str] = set()
        # statement-format context: what Intvar/Rand/User_var events set for the next
        # statement, and one such dict (with the statement's db) per statement
        self.context: dict[str, Any] = {}
        self.contexts: list[dict[str, Any]] = []
        self.damage: BinlogError | None = None  # the first damaged event of the group


def _changes(g: _Group) -> Any:
    """An open group's changes: its list, or (a huge transaction) the SpilledChanges whose
    tail that list is, read like a list of them."""
    return g.changes if g.spill is None else g.spill


def _count(g: _Group) -> int:
    """The changes of an open group so far (on disk too)."""
    return len(_changes(g))
