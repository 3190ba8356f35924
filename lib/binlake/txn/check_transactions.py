"""Stream checks: transactions (``transaction_length`` of a GTID's group) and Xids.

Transactions (MySQL 8.0.2+ ``transaction_length`` of GTID / ANONYMOUS_GTID / GTID_TAGGED)
    The bytes from the GTID event's position to the end of the last top-level event of its
    group must equal the declared length.  A group ends where the next GTID event starts, or
    at a Rotate / Stop / Format_description / Previous_gtids event (never part of a group), or
    at the end of the file -> ``TRANSACTION_LENGTH_MISMATCH`` (error) with ``{declared, actual,
    gtid}``.  A length of 0 or none (5.7 and older) is not checked.  Exceptions: a group cut
    by the end of the newest file while it may still be written is INFO (the server writes a
    transaction in several chunks, a copy can catch half of it) unless a position finding
    inside the group shows that events were removed from it; a file that ended with a
    framing error gets no verdict on its last group (``TRUNCATED`` says it); in a relay log a
    group that is *short* where a Rotate, a Format_description or the end of the file cut it
    is INFO (relay logs of MySQL < 8.0 split transactions across files, and a reconnecting
    receiver writes a Rotate + FDE and fetches the transaction again).

Xids
    The same Xid value ending two groups of one file -> ``DUPLICATE_XID`` (error).  The values
    are the internal (two-phase commit) xids that crash recovery matches against the storage
    engines: Xid events, MySQL's ``ddl_xid`` of an atomic DDL (Q_DDL_LOGGED_WITH_XID) and
    MariaDB's Query ``xid`` (Q_XID); this is the set MySQL's ``binlog::Binlog_recovery`` refuses
    to recover from when a value repeats ("Xid_log_event holds an invalid XID").  The server
    takes them from ``query_id``, which is unique within a server run, and a restart always
    starts a new file.  XA transaction ids (XA PREPARE / XA COMMIT) are *not* checked here:
    an XA xid may legitimately be reused once its transaction is over; their pairing is the XA
    layer's (``XA_DUPLICATE_PREPARE``, ``XA_ORPHAN_COMMIT``).

Memory: the Xid values of the current file, kept as sorted ``array('Q')`` runs (16 bytes per
transaction, dropped at the end of each file).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from typing import Any

from ..binlog.constants import EventType as E
from ..binlog.event import Event
from .check_base import FDE_TYPES, CheckerBase
from .findings import DUPLICATE_XID, ERROR, INFO, TRANSACTION_LENGTH_MISMATCH

__all__ = ["TransactionChecks", "duplicate_xid_message", "xid_of"]

_GTID_TYPES = frozenset({E.GTID, E.ANONYMOUS_GTID, E.GTID_TAGGED})
# Events that are never part of a transaction group: they end the one before them.
_GROUP_TERMINATORS = frozenset({E.ROTATE, E.STOP, E.FORMAT_DESCRIPTION, E.PREVIOUS_GTIDS,
                                E.START_V3})
# the events after which a BEGIN no longer counts (an Xid, a GTID, a format description)
_BEGIN_CLEARED = frozenset({E.XID, *_GTID_TYPES, *FDE_TYPES})
# (globals: an Enum member looked up on its class costs about 0.1 us; these run per event)
_XID, _QUERY = E.XID, E.QUERY
_QUERIES = frozenset({E.QUERY, E.QUERY_COMPRESSED})


class _XidIndex:
    """The Xid values of one file and where each was first seen, in compact sorted runs.

    Recent values live in a dict; every ``RECENT`` values they are sorted into a pair of
    ``array('Q')`` (value, position) and runs of similar size are merged (a binary counter),
    so a lookup is a dict probe plus one binary search per run (log2(n / RECENT) runs).
    """

    RECENT = 4096

    __slots__ = ("recent", "runs")

    def __init__(self) -> None:
        self.recent: dict[int, int] = {}
        self.runs: list[tuple[array[int], array[int]]] = []

    def get(self, xid: int) -> int | None:
        pos = self.recent.get(xid)
        if pos is not None:
            return pos
        for keys, poss in self.runs:
            i = bisect_left(keys, xid)
            if i < len(keys) and keys[i] == xid:
                return int(poss[i])
        return None

    def add(self, xid: int, pos: int) -> None:
        self.recent[xid] = pos
        if len(self.recent) >= self.RECENT:
            self._flush()

    def _flush(self) -> None:
        items = sorted(self.recent.items())
        self.recent = {}
        self.runs.append((array("Q", [k for k, _ in items]), array("Q", [p for _, p in items])))
        while len(self.runs) > 1 and len(self.runs[-2][0]) <= len(self.runs[-1][0]):
            k2, p2 = self.runs.pop()
            k1, p1 = self.runs.pop()
            merged = list(zip(k1, p1, strict=True))
            merged += zip(k2, p2, strict=True)
            merged.sort()  # two sorted runs: timsort merges them in linear time
            self.runs.append((array("Q", [k for k, _ in merged]),
                              array("Q", [p for _, p in merged])))


def _u64(value: Any) -> int | None:
    return value if isinstance(value, int) and 0 <= value < (1 << 64) else None


def xid_of(ev: Event) -> tuple[int, str] | None:
    """The internal xid an event ends its transaction with, and what kind of event says it
    (an Xid event, a DDL Query's ``ddl_xid``, a MariaDB Query's ``xid``), or None."""
    t = ev.type_code
    if t == _XID:
        xid = _u64(ev.data.get("xid"))
        return None if xid is None else (xid, "Xid event")
    if t in _QUERIES:
        status = ev.data.get("status")
        if isinstance(status, dict):
            if status.get("ddl_xid") is not None:
                xid = _u64(status.get("ddl_xid"))
                return None if xid is None else (xid, "DDL Query event (ddl_xid)")
            if status.get("xid") is not None:
                xid = _u64(status.get("xid"))
                return None if xid is None else (xid, "Query event (xid)")
    return None


def duplicate_xid_message(what: str, pos: int, xid: int, first: int) -> str:
    return (f"{what} at {pos} ends its transaction with xid {xid}, which already ended "
            f"the transaction at {first} in this file (expected a new xid, found a "
            "repeated one): crash recovery cannot tell the two apart")


class TransactionChecks(CheckerBase):
    """transaction_length and repeated Xids (a mixin of :class:`~binlake.txn.checks.StreamChecker`,
    which resets ``_group``, ``_group_end``, ``_group_holed`` and ``_xids`` per file)."""

    _group_end: int  # the end of the open group's last top-level event so far
    _xids: _XidIndex  # the Xid values of the current file
    check_xids: bool = True  # False: a byte range's caller checks Xids across ranges itself

    # -- transaction groups -------------------------------------------------------------------

    def _group_check(self, ev: Event, name: str) -> None:
        t = ev.type_code
        if t in _GTID_TYPES:
            if self._group is not None:
                self._close_group(name, f"the next GTID event at {ev.pos}", eof=False,
                                  by_gtid=True)
            declared = ev.data.get("transaction_length")
            self._group = (ev.pos, declared if isinstance(declared, int) else None,
                           ev.data.get("gtid"))
            self._group_end = ev.pos + ev.length
            self._group_holed = False
        elif t in _GROUP_TERMINATORS:
            if self._group is not None:
                self._close_group(name, f"the {ev.type} event at {ev.pos}", eof=False)
                self._group = None
        elif self._group is not None:
            self._group_end = ev.pos + ev.length
        # the BEGIN of a group, for the 5.0/5.1 cache-relative positions
        if t == _QUERY:
            q = ev.data.get("query")
            if q == "BEGIN":
                self._begin = (ev.pos, ev.pos + ev.length)
            elif q in ("COMMIT", "ROLLBACK"):
                self._begin = None
        elif t in _BEGIN_CLEARED:
            self._begin = None

    def _close_group(self, name: str, ended_by: str, *, eof: bool, by_gtid: bool = False) -> None:
        assert self._group is not None
        gpos, declared, gtid = self._group
        if not declared:
            return
        actual = self._group_end - gpos
        if actual == declared:
            return
        detail = {"declared": declared, "actual": actual, "gtid": gtid, "ended_by": ended_by}
        label = gtid or "anonymous GTID"
        message = (f"transaction {label} at {gpos}: its GTID event declares "
                   f"transaction_length {declared}, but the group spans {actual} bytes "
                   f"({gpos} to {self._group_end}, ended by {ended_by})")
        if actual < declared and self._relay_from is not None and not by_gtid:
            self._add(TRANSACTION_LENGTH_MISMATCH, INFO, name, gpos, detail,
                      message + "; in a relay log a transaction can be split across files "
                      "or fetched again after a reconnect")
        elif eof and actual < declared and not self._group_holed:
            self._pending_end.append(("group", TRANSACTION_LENGTH_MISMATCH, gpos, detail,
                                      message + ": the file ends inside the transaction",
                                      "the newest file may still be written"))
        else:
            self._add(TRANSACTION_LENGTH_MISMATCH, ERROR, name, gpos, detail, message)

    # -- Xids -----------------------------------------------------------------------------------

    def _xid_checks(self, ev: Event, name: str) -> None:
        if not self.check_xids:
            return
        found = xid_of(ev)
        if found is None:
            return
        xid, what = found
        first = self._xids.get(xid)
        if first is None:
            self._xids.add(xid, ev.pos)
            return
        detail: dict[str, Any] = {"xid": xid, "first_pos": first, "type": ev.type}
        if ev.payload_index is not None:
            detail["payload_index"] = ev.payload_index
        self._add(DUPLICATE_XID, ERROR, name, ev.pos, detail,
                  duplicate_xid_message(what, ev.pos, xid, first))
