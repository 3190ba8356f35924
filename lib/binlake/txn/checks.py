"""Stream-level validity checks over the binlog files of one source server.

:class:`StreamChecker` is fed the events of one or more binlog files in the order the server
wrote them (``begin_file`` / ``event`` ... / ``end_file``, then ``finish``) and collects
:class:`~binlake.txn.findings.Finding` objects; :func:`check_files` does the feeding for a list
of paths or URIs.  Memory is bounded per file: nothing keeps a list of events.  What grows is
(a) one interval set per GTID source (one interval per hole in its GTID sequence), and (b) the
Xid values of the current file, kept as sorted ``array('Q')`` runs (16 bytes per transaction,
dropped at the end of each file).

The rules, and why each has the severity it has
-----------------------------------------------

Event integrity
    * ``ev.error`` a :class:`~binlake.binlog.errors.ChecksumError` -> ``CHECKSUM_MISMATCH`` (error);
      any other per-event error -> ``DECODE_ERROR`` (error).
    * the framing error that ended a file: :class:`~binlake.binlog.errors.TruncatedError` ->
      ``TRUNCATED`` (error) at the offset of the event that is cut; anything else (not a binlog,
      no FDE, encrypted, garbage event size) -> ``DECODE_ERROR`` (error).

Positions (top-level events only: events inside a Transaction_payload carry the payload's)
    In binlog v4 the header's ``log_pos`` (``ev.next_pos``) is the offset where the next event
    starts, so ``next_pos == pos + length``.  Rather than comparing each event on its own, the
    checker follows the *offset* ``next_pos - (pos + length)``, which is 0 in a sound file and
    changes exactly where bytes were removed or inserted: one finding per hole, not one per
    event after it (the hand-edited ``binlog_recovery`` files of the MySQL test suite lost one
    event each and every later event keeps the old positions).  An offset that grows ->
    ``POSITION_GAP`` (error: events were removed before this one); one that shrinks ->
    ``POSITION_OVERLAP`` (error: bytes were inserted, or a header was edited).  Exempt:

    * ``next_pos == 0``: old servers' Stop/Rotate, artificial events, and MariaDB 11.4+, which
      leaves the field 0 for events inside a transaction (the mariadb-operator 11.8 files of
      the corpus; go-mysql PR #1052);
    * binlog v3 files (a ``START_V3`` first event, MySQL 4.0.2 - 4.1), where ``log_pos`` is
      the event's *own* offset, except that the events a transaction cache wrote carry the
      offset of their ``BEGIN``: there ``next_pos == pos`` (or the BEGIN's offset) is checked.
      Binlog v1/v2 (MySQL 3.23 - 4.0.1) positions are not checked: v2 wrote other numbers
      there (the 4.0.0 file of the MySQL test suite has 1 in its Start event);
    * MySQL 5.0/5.1 wrote the events it copied from a transaction cache with positions relative
      to the cache (the event after ``BEGIN`` says it ends at its own length): in files whose
      FDE predates checksums (no ``checksum_alg``), an event after a ``BEGIN`` whose
      ``next_pos`` equals its end minus the end of that ``BEGIN`` is accepted;
    * relay logs.  A relay log keeps each event of its source with the source's ``log_pos``;
      the replica's own events (its FDE, Rotate, Previous_gtids) carry
      ``LOG_EVENT_RELAY_LOG_F`` (0x40) in MySQL 5.6+, and every relay log stores its source's
      Format_description after its own, which a binlog never does (one FDE per file).  So a
      file is treated as a relay log from the first event with the 0x40 flag, or from a second
      Format_description event on; position checks stop there (the events before, written by
      the replica itself, were checked).

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

MySQL GTIDs, per (uuid, tag)
    The first file's Previous_gtids is the starting set; the stream's GTIDs are added to it.
    * a gno already in the set -> ``GTID_DUPLICATE`` (error; warning in relay logs, where a
      receiver that reconnects fetches a partial transaction again);
    * a gno more than 1 above the highest so far opens a *pending* hole; holes still open at
      :meth:`StreamChecker.finish` -> ``GTID_GAP`` (error) with the missing range, at the
      event after the hole.  They are pending because a multi-threaded replica without
      ``replica_preserve_commit_order`` commits (and binlogs) transactions out of order and
      fills the hole a few events later; such a fill -> ``GTID_OUT_OF_ORDER`` (warning: legal,
      but a consumer that takes GTID order for commit order is misled);
    * the first GTID of a uuid not in the starting set starts that uuid's sequence wherever it
      is (a replica restored from a backup starts at the backup's position);
    * each later file's Previous_gtids must equal the previous file's Previous_gtids plus the
      GTIDs that file contained -> ``GTID_HEADER_MISMATCH``, detail ``{expected, found,
      missing, extra}``: error, except when the only difference is GTIDs the stream never had
      that lie below everything it has of their uuid (``SET GTID_PURGED`` on a server that had
      already opened its file), which is a warning.  The header's GTIDs join the set, so a
      missing file gives one header mismatch and not a gap at every later event.

MariaDB GTIDs, per domain (``domain_id-server_id-seq_no``; server_id is the event's)
    The first file's Gtid_list is the starting state.  MariaDB allocates seq_no per domain as
    the highest so far + 1, but does not promise a gap-free sequence: Kristian Nielsen's design
    notes for MariaDB GTID say it "does not enforce or rely on absence of holes in the sequence
    numbers", and a replica with replication filters, ``SET gtid_seq_no`` or a domain written
    by several servers all produce holes.  Monotonicity is required per server_id; between
    servers of one domain it is only enforced with ``gtid_strict_mode`` (off by default,
    rpl_gtid.cc ``rpl_binlog_state::update_nolock`` raises ER_GTID_STRICT_OUT_OF_ORDER when the
    new seq_no is not above the domain's last).  So:

    * seq_no already seen in the domain in this stream -> ``GTID_DUPLICATE`` (error);
    * seq_no more than 1 above the domain's highest -> ``GTID_GAP`` (warning);
    * seq_no below the domain's highest, not seen: from a server whose own last seq_no in the
      domain is higher -> ``GTID_OUT_OF_ORDER`` (error, per-server monotonicity broken); else
      (another server of the domain is behind) -> ``GTID_OUT_OF_ORDER`` (warning: only possible
      with gtid_strict_mode off, a misconfiguration MariaDB tolerates);
    * each later file's Gtid_list must equal the previous file's Gtid_list updated with the
      last GTID per (domain, server_id) of that file (``rpl_binlog_state`` keeps exactly that)
      -> ``GTID_HEADER_MISMATCH`` (error; a warning when the only difference is whole domains
      missing from the list, which ``FLUSH BINARY LOGS DELETE_DOMAIN_ID`` does).

The file chain (files ordered by :func:`~binlake.txn.files.order_files`)
    * a file ending in a Rotate whose ``next_file`` is not the next file given ->
      ``ROTATE_MISMATCH`` (error), at the Rotate; not reported when it names exactly the file
      that ``MISSING_FILE`` reports missing;
    * same base name, sequence number jumping by more than 1 -> ``MISSING_FILE`` (error);
    * a file whose last event is neither Rotate nor Stop -> ``FILE_END_WITHOUT_ROTATE``: error
      (crash, or a copy cut at an event boundary), INFO for the newest file given when
      ``newest_file_may_be_open``; not reported after a framing error (``TRUNCATED`` says more);
    * the FDE's in-use flag (LOG_EVENT_BINLOG_IN_USE_F) -> ``FILE_NOT_CLOSED``: warning on a
      file that is not the newest (server crashed, or the file was copied while open), INFO on
      the newest.

"Newest" is only known when the next file begins or the stream finishes, so those verdicts
are emitted then.
"""

from __future__ import annotations

import os
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..binlog.constants import LOG_EVENT_BINLOG_IN_USE_F, LOG_EVENT_RELAY_LOG_F
from ..binlog.constants import EventType as E
from ..binlog.errors import BinlogError, ChecksumError, TruncatedError
from ..binlog.event import Event
from ..binlog.reader import BinlogReader
from ..binlog.source import parse_location
from .files import binlog_file, order_files
from .findings import (
    CHECKSUM_MISMATCH,
    DECODE_ERROR,
    DUPLICATE_XID,
    ERROR,
    FILE_END_WITHOUT_ROTATE,
    FILE_NOT_CLOSED,
    GTID_DUPLICATE,
    GTID_GAP,
    GTID_HEADER_MISMATCH,
    GTID_OUT_OF_ORDER,
    INFO,
    MISSING_FILE,
    POSITION_GAP,
    POSITION_OVERLAP,
    ROTATE_MISMATCH,
    TRANSACTION_LENGTH_MISMATCH,
    TRUNCATED,
    WARNING,
    Finding,
)

__all__ = ["GTID_OUT_OF_ORDER", "IntervalSet", "StreamChecker", "check_files", "local_size"]

# Proposed for findings.py (a GTID below the highest one seen, not a duplicate).

_GTID_TYPES = frozenset({E.GTID, E.ANONYMOUS_GTID, E.GTID_TAGGED})
_MYSQL_GTID_TYPES = frozenset({E.GTID, E.GTID_TAGGED})
# Events that are never part of a transaction group: they end the one before them.
_GROUP_TERMINATORS = frozenset({E.ROTATE, E.STOP, E.FORMAT_DESCRIPTION, E.PREVIOUS_GTIDS,
                                E.START_V3})
_FILE_END_OK = frozenset({E.ROTATE, E.STOP})
_FDE_TYPES = frozenset({E.FORMAT_DESCRIPTION, E.START_V3})
_SET_TEXT_MAX = 400  # characters of a GTID set kept in a finding's message

# The event types the checks read the bodies of (check_files(full_decode=False)).
CHECKED_TYPES = frozenset({E.FORMAT_DESCRIPTION, E.START_V3, E.QUERY, E.QUERY_COMPRESSED,
                           E.ROTATE, E.STOP, E.XID, E.GTID, E.ANONYMOUS_GTID, E.GTID_TAGGED,
                           E.PREVIOUS_GTIDS, E.MARIADB_GTID, E.MARIADB_GTID_LIST,
                           E.TRANSACTION_PAYLOAD})


# -- small data structures ----------------------------------------------------------------------


class IntervalSet:
    """A set of integers as sorted, disjoint, non-adjacent closed intervals ``[start, end]``.

    Adding the successor of the maximum (the normal case for GTID numbers) is O(1); memory is
    one pair of ints per hole, not per number.
    """

    __slots__ = ("ends", "starts")

    def __init__(self, intervals: Iterable[tuple[int, int] | list[int]] = ()) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        for a, b in intervals:
            self.add(a, b)

    def copy(self) -> IntervalSet:
        new = IntervalSet()
        new.starts = list(self.starts)
        new.ends = list(self.ends)
        return new

    def __contains__(self, x: object) -> bool:
        if not isinstance(x, int):
            return False
        i = bisect_right(self.starts, x) - 1
        return i >= 0 and x <= self.ends[i]

    def __bool__(self) -> bool:
        return bool(self.starts)

    def __len__(self) -> int:
        """The number of intervals (not of integers)."""
        return len(self.starts)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IntervalSet):
            return NotImplemented
        return self.starts == other.starts and self.ends == other.ends

    __hash__ = None  # type: ignore[assignment]

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return zip(self.starts, self.ends, strict=True)

    def __repr__(self) -> str:
        return f"IntervalSet({list(self)})"

    def max(self) -> int | None:
        return self.ends[-1] if self.ends else None

    def min(self) -> int | None:
        return self.starts[0] if self.starts else None

    def add(self, a: int, b: int | None = None) -> None:
        """Add ``[a, b]`` (``b`` defaults to ``a``)."""
        if b is None:
            b = a
        if b < a:
            return
        starts, ends = self.starts, self.ends
        if not starts or a > ends[-1] + 1:
            starts.append(a)
            ends.append(b)
            return
        if a >= starts[-1]:  # overlaps or touches the last interval
            if b > ends[-1]:
                ends[-1] = b
            return
        i = bisect_left(ends, a - 1)  # first interval that ends at or after a - 1
        j = bisect_right(starts, b + 1)  # intervals [i, j) touch [a, b]
        if i < j:
            a = min(a, starts[i])
            b = max(b, ends[j - 1])
        starts[i:j] = [a]
        ends[i:j] = [b]

    def update(self, other: IntervalSet) -> None:
        for a, b in other:
            self.add(a, b)

    def difference(self, other: IntervalSet | None) -> list[tuple[int, int]]:
        """The intervals of ``self`` not in ``other``."""
        if other is None or not other:
            return list(self)
        out: list[tuple[int, int]] = []
        os_, oe = other.starts, other.ends
        for a, b in self:
            cur = a
            k = max(bisect_right(os_, a) - 1, 0)
            while k < len(os_) and os_[k] <= b:
                if oe[k] >= cur:
                    if os_[k] > cur:
                        out.append((cur, os_[k] - 1))
                    cur = oe[k] + 1
                    if cur > b:
                        break
                k += 1
            if cur <= b:
                out.append((cur, b))
        return out


def _interval_text(intervals: Iterable[tuple[int, int]]) -> str:
    return ":".join(str(a) if a == b else f"{a}-{b}" for a, b in intervals)


GtidKey = tuple[str, str | None]  # (uuid, tag)


def _gtid_set_text(sets: dict[GtidKey, list[tuple[int, int]]]) -> str:
    parts = []
    for (uuid, tag), intervals in sorted(sets.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        if intervals:
            parts.append(f"{uuid}:{tag + ':' if tag else ''}{_interval_text(intervals)}")
    text = ",".join(parts)
    return text if len(text) <= _SET_TEXT_MAX else text[:_SET_TEXT_MAX] + "..."


def _gtid_key_text(key: GtidKey) -> str:
    uuid, tag = key
    return f"{uuid}:{tag}" if tag else uuid


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


@dataclass
class _Hole:
    """A range of gnos the stream jumped over (MySQL), still waiting to be filled."""

    start: int
    end: int
    file: str
    pos: int
    gtid: str
    before: int  # the highest gno before the jump


# -- the checker --------------------------------------------------------------------------------


class StreamChecker:
    """Validity checks over the binlog files of one source server, fed in sequence order.

    ``begin_file`` before a file's events, ``event`` for every event (payload inner events
    included), ``end_file`` after the last one, ``finish`` after the last file; the findings
    accumulate in :attr:`findings`.
    """

    def __init__(self, *, newest_file_may_be_open: bool = True) -> None:
        self.newest_file_may_be_open = newest_file_may_be_open
        self.findings: list[Finding] = []
        # the previous file (for the chain checks)
        self._prev_name: str | None = None
        self._prev_base: str | None = None
        self._prev_seq: int | None = None
        self._prev_rotate: tuple[str, int] | None = None  # (next_file, pos of the Rotate)
        self._prev_error = False
        # verdicts that depend on whether the file just ended is the newest one
        self._pending_end: list[tuple[str, str, int | None, dict[str, Any], str, str]] = []
        # MySQL GTIDs
        self._gtid_state: dict[GtidKey, IntervalSet] = {}
        self._gtid_stream_min: dict[GtidKey, int] = {}
        self._holes: dict[GtidKey, list[_Hole]] = {}
        self._prev_header: dict[GtidKey, IntervalSet] | None = None
        self._prev_header_file: str | None = None
        self._prev_contained: dict[GtidKey, IntervalSet] = {}
        self._contained: dict[GtidKey, IntervalSet] = {}
        # MariaDB GTIDs
        self._dom_max: dict[int, int] = {}
        self._dom_seen: dict[int, IntervalSet] = {}
        self._server_last: dict[tuple[int, int], int] = {}
        self._prev_list: dict[tuple[int, int], int] | None = None
        self._prev_list_file: str | None = None
        self._prev_file_last: dict[tuple[int, int], int] = {}
        self._file_last: dict[tuple[int, int], int] = {}
        self._in_file = False
        self._pending_file: str | None = None
        self._reset_file(None, None, None)

    # -- helpers ----------------------------------------------------------------------------

    def _add(self, kind: str, severity: str, file: str | None, pos: int | None,
             detail: dict[str, Any], message: str) -> None:
        self.findings.append(Finding(kind, severity, file, pos, detail, message))

    def _reset_file(self, name: str | None, base: str | None, seq: int | None) -> None:
        self._name = name
        self._base = base
        self._seq = seq
        self._first_fde: Event | None = None
        self._v3 = False
        self._check_positions = True
        self._pre_checksum = False
        self._relay_from: int | None = None
        self._delta = 0
        self._begin: tuple[int, int] | None = None  # (pos, end) of the group's BEGIN
        self._last_top: Event | None = None
        self._group: tuple[int, int | None, str | None] | None = None  # pos, declared, gtid
        self._group_end = 0
        self._group_holed = False  # a position finding inside the open group
        self._xids = _XidIndex()
        self._header_seen = False
        self._list_seen = False

    # -- the feeding API ----------------------------------------------------------------------

    def begin_file(self, name: str, *, seq: int | None) -> None:
        """Start a file: ``name`` is the binlog file name, ``seq`` its sequence number."""
        if self._in_file:
            raise RuntimeError("begin_file() before end_file() of the previous file")
        self._resolve_pending(newest=False)
        bf = binlog_file(name)
        base = bf.base if seq is not None else None
        missing_named: str | None = None
        prev_seq = self._prev_seq
        if (base is not None and base == self._prev_base and prev_seq is not None
                and seq is not None and seq > prev_seq + 1):
            width = len(name) - len(base) - 1
            first = f"{base}.{prev_seq + 1:0{width}d}"
            last = f"{base}.{seq - 1:0{width}d}"
            missing_named = first
            count = seq - prev_seq - 1
            self._add(MISSING_FILE, ERROR, name, None,
                      {"previous": self._prev_name, "found": name, "missing_from": first,
                       "missing_to": last, "count": count},
                      f"{count} file(s) missing before {name}: expected {first} after "
                      f"{self._prev_name}, found {name}"
                      + (f" (missing {first} .. {last})" if count > 1 else ""))
        if self._prev_rotate is not None:
            target, rpos = self._prev_rotate
            target_name = target.replace("\\", "/").rsplit("/", 1)[-1]
            if target_name != name and target_name != missing_named:
                self._add(ROTATE_MISMATCH, ERROR, self._prev_name, rpos,
                          {"expected": target_name, "found": name},
                          f"the Rotate event at the end of {self._prev_name} names the next file "
                          f"{target_name!r}, but the next file given is {name!r}")
        self._prev_contained = self._contained
        self._contained = {}
        self._prev_file_last = self._file_last
        self._file_last = {}
        self._reset_file(name, base, seq)
        self._in_file = True

    def event(self, ev: Event) -> None:
        """Feed one event of the current file (in file order)."""
        name = self._name if self._name is not None else ev.file
        err = ev.error
        if err is not None:
            self._event_error(ev, err, name)
        if ev.payload_index is not None:
            self._xid_checks(ev, name)
            return
        t = ev.type_code
        if t in _FDE_TYPES:
            if self._first_fde is None:
                self._first_fde = ev
                self._v3 = t == E.START_V3
                version = ev.data.get("binlog_version")
                self._check_positions = isinstance(version, int) and version >= 3
                self._pre_checksum = (t == E.FORMAT_DESCRIPTION
                                      and ev.data.get("binlog_version") == 4
                                      and "checksum_alg" in ev.data
                                      and ev.data.get("checksum_alg") is None)
            elif self._relay_from is None:
                self._relay_from = ev.pos  # the source's FDE stored in a relay log
        if self._relay_from is None and ev.flags & LOG_EVENT_RELAY_LOG_F:
            self._relay_from = ev.pos
        if self._relay_from is None and self._check_positions:
            self._position_check(ev, name)
        self._group_check(ev, name)
        self._xid_checks(ev, name)
        if t in _MYSQL_GTID_TYPES:
            self._mysql_gtid(ev, name)
        elif t == E.PREVIOUS_GTIDS and not self._header_seen:
            self._header_seen = True  # a relay log may hold its source's too: the first counts
            self._previous_gtids(ev, name)
        elif t == E.MARIADB_GTID:
            self._mariadb_gtid(ev, name)
        elif t == E.MARIADB_GTID_LIST and not self._list_seen:
            self._list_seen = True
            self._gtid_list(ev, name)
        self._last_top = ev

    def end_file(self, *, end_offset: int | None, error: BinlogError | None,
                 size: int | None) -> None:
        """End the current file: ``end_offset`` is where reading stopped (after the last event),
        ``error`` the framing error that ended it, if any, ``size`` the file size if known."""
        name = self._name or "-"
        if error is not None:
            self._framing_error(error, name, size)
        # the last transaction group
        if self._group is not None:
            if error is None:
                self._close_group(name, "the end of the file", eof=True)
            self._group = None
        last = self._last_top
        self._prev_rotate = None
        if last is not None and last.type_code == E.ROTATE:
            self._prev_rotate = (str(last.data.get("next_file") or ""), last.pos)
        if error is None and (last is None or last.type_code not in _FILE_END_OK):
            at = end_offset if end_offset is not None else (
                last.pos + last.length if last is not None else None)
            what = "no events" if last is None else f"a {last.type} event at {last.pos}"
            self._pending_end.append((
                "end", FILE_END_WITHOUT_ROTATE, at,
                {"expected": "ROTATE or STOP", "found": None if last is None else last.type},
                f"{name} ends with {what}, not with a Rotate or Stop event: the server "
                "crashed or the file was copied before it was closed",
                "the newest file may still be written"))
        fde = self._first_fde
        if fde is not None and fde.flags & LOG_EVENT_BINLOG_IN_USE_F:
            self._pending_end.append((
                "in_use", FILE_NOT_CLOSED, fde.pos, {"flags": fde.flags},
                f"the Format_description event of {name} has the in-use flag "
                "(LOG_EVENT_BINLOG_IN_USE_F) set: the server did not close the file cleanly "
                "(crash), or the file was copied while the server was writing it",
                "the newest file is normally open"))
        self._pending_file = name
        self._prev_name = name
        self._prev_base = self._base
        self._prev_seq = self._seq
        self._prev_error = error is not None
        self._in_file = False

    def finish(self) -> None:
        """After the last file: settle what needed to know which file is the newest."""
        if self._in_file:
            raise RuntimeError("finish() before end_file()")
        self._resolve_pending(newest=True)
        for key, holes in self._holes.items():
            for h in holes:
                missing = h.start if h.start == h.end else f"{h.start}-{h.end}"
                self._add(GTID_GAP, ERROR, h.file, h.pos,
                          {"uuid": key[0], "tag": key[1], "missing": [h.start, h.end],
                           "previous": h.before, "found": h.gtid},
                          f"GTID gap: after {_gtid_key_text(key)}:{h.before} the stream "
                          f"continues with {h.gtid}; {_gtid_key_text(key)}:{missing} never "
                          "appears (expected gno "
                          f"{h.before + 1}, found {h.gtid.rsplit(':', 1)[-1]})")
        self._holes = {}

    # -- event integrity --------------------------------------------------------------------

    def _event_error(self, ev: Event, err: BinlogError, name: str) -> None:
        detail: dict[str, Any] = {"type": ev.type, "error": type(err).__name__,
                                  "expected": _text(err.expected), "found": _text(err.actual)}
        if ev.payload_index is not None:
            detail["payload_index"] = ev.payload_index
        if isinstance(err, ChecksumError):
            self._add(CHECKSUM_MISMATCH, ERROR, name, ev.pos, detail,
                      f"{ev.type} event at {ev.pos}: CRC32 mismatch (expected "
                      f"{_text(err.expected)}, found {_text(err.actual)}): the event's bytes "
                      "changed after the server wrote them")
        else:
            self._add(DECODE_ERROR, ERROR, name, ev.pos, detail,
                      f"{ev.type} event at {ev.pos}: {err.message}"
                      + (f" (expected {_text(err.expected)}, found {_text(err.actual)})"
                         if err.expected is not None or err.actual is not None else ""))

    def _framing_error(self, error: BinlogError, name: str, size: int | None) -> None:
        detail: dict[str, Any] = {"error": type(error).__name__,
                                  "expected": _text(error.expected),
                                  "found": _text(error.actual), "file_size": size}
        where = "" if error.offset is None else f" at byte {error.offset}"
        text = (f"{name}{where}: {error.message}"
                + (f" (expected {_text(error.expected)}, found {_text(error.actual)})"
                   if error.expected is not None or error.actual is not None else ""))
        kind = TRUNCATED if isinstance(error, TruncatedError) else DECODE_ERROR
        self._add(kind, ERROR, name, error.offset, detail, text)

    # -- positions ----------------------------------------------------------------------------

    def _position_check(self, ev: Event, name: str) -> None:
        next_pos = ev.next_pos
        if next_pos == 0:
            return
        end = ev.pos if self._v3 else ev.pos + ev.length
        delta = next_pos - end
        if delta == self._delta:
            return
        begin = self._begin
        if begin is not None and begin[0] != ev.pos:
            if self._v3 and next_pos == begin[0] + self._delta:
                return  # MySQL 4.x: an event of a transaction carries its BEGIN's position
            if self._pre_checksum and next_pos == ev.pos + ev.length - begin[1]:
                return  # MySQL 5.0/5.1: a position relative to the transaction cache
        change = delta - self._delta
        expected = end + self._delta
        if self._group is not None:
            self._group_holed = True
        what = "its own position" if self._v3 else "where it ends"
        if change > 0:
            self._add(POSITION_GAP, ERROR, name, ev.pos,
                      {"type": ev.type, "expected_next_pos": expected, "found_next_pos": next_pos,
                       "missing_bytes": change},
                      f"{ev.type} event at {ev.pos}: header log_pos is {next_pos}, expected "
                      f"{expected} ({what}{' + earlier offset' if self._delta else ''}): "
                      f"{change} bytes (one or more events) are missing before this event")
        else:
            self._add(POSITION_OVERLAP, ERROR, name, ev.pos,
                      {"type": ev.type, "expected_next_pos": expected, "found_next_pos": next_pos,
                       "extra_bytes": -change},
                      f"{ev.type} event at {ev.pos}: header log_pos is {next_pos}, expected "
                      f"{expected} ({what}{' + earlier offset' if self._delta else ''}): "
                      f"{-change} bytes were inserted before this event, or its header was "
                      "edited")
        self._delta = delta

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
        if t == E.QUERY:
            q = ev.data.get("query")
            if q == "BEGIN":
                self._begin = (ev.pos, ev.pos + ev.length)
            elif q in ("COMMIT", "ROLLBACK"):
                self._begin = None
        elif t in (E.XID, *_GTID_TYPES, *_FDE_TYPES):
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
        t = ev.type_code
        xid: int | None = None
        what = ""
        if t == E.XID:
            xid = _u64(ev.data.get("xid"))
            what = "Xid event"
        elif t in (E.QUERY, E.QUERY_COMPRESSED):
            status = ev.data.get("status")
            if isinstance(status, dict):
                if status.get("ddl_xid") is not None:
                    xid = _u64(status.get("ddl_xid"))
                    what = "DDL Query event (ddl_xid)"
                elif status.get("xid") is not None:
                    xid = _u64(status.get("xid"))
                    what = "Query event (xid)"
        if xid is None:
            return
        first = self._xids.get(xid)
        if first is None:
            self._xids.add(xid, ev.pos)
            return
        detail: dict[str, Any] = {"xid": xid, "first_pos": first, "type": ev.type}
        if ev.payload_index is not None:
            detail["payload_index"] = ev.payload_index
        self._add(DUPLICATE_XID, ERROR, name, ev.pos, detail,
                  f"{what} at {ev.pos} ends its transaction with xid {xid}, which already ended "
                  f"the transaction at {first} in this file (expected a new xid, found a "
                  "repeated one): crash recovery cannot tell the two apart")

    # -- MySQL GTIDs ----------------------------------------------------------------------------

    def _mysql_gtid(self, ev: Event, name: str) -> None:
        uuid = ev.data.get("uuid")
        gno = ev.data.get("gno")
        if not isinstance(uuid, str) or not isinstance(gno, int) or gno <= 0:
            return
        key: GtidKey = (uuid, ev.data.get("tag") or None)
        text = ev.data.get("gtid") or f"{_gtid_key_text(key)}:{gno}"
        self._contained.setdefault(key, IntervalSet()).add(gno)
        low = self._gtid_stream_min.get(key)
        if low is None or gno < low:
            self._gtid_stream_min[key] = gno
        state = self._gtid_state.get(key)
        if state is None or not state:
            self._gtid_state[key] = IntervalSet([(gno, gno)])
            return
        top = state.max()
        assert top is not None
        relay = self._relay_from is not None
        if gno in state:
            self._add(GTID_DUPLICATE, WARNING if relay else ERROR, name, ev.pos,
                      {"gtid": text, "uuid": key[0], "tag": key[1], "gno": gno},
                      f"GTID {text} at {ev.pos} was already executed earlier in the stream "
                      "(or is in a Previous_gtids set): expected a new gno, found a repeated one"
                      + ("; in a relay log a receiver that reconnects fetches a transaction "
                         "again" if relay else ""))
            return
        if gno == top + 1:
            state.add(gno)
            return
        if gno > top + 1:
            state.add(gno)
            self._holes.setdefault(key, []).append(
                _Hole(top + 1, gno - 1, name, ev.pos, text, top))
            return
        # below the highest gno and not seen: fills a hole, out of order
        state.add(gno)
        filled = self._fill_hole(key, gno)
        self._add(GTID_OUT_OF_ORDER, WARNING, name, ev.pos,
                  {"gtid": text, "uuid": key[0], "tag": key[1], "gno": gno, "highest": top,
                   "hole_opened_at": None if filled is None else [filled.file, filled.pos]},
                  f"GTID {text} at {ev.pos} comes after gno {top} of the same uuid (expected "
                  f"{top + 1}): transactions were committed out of order (a multi-threaded "
                  "replica without replica_preserve_commit_order) or gtid_next was set by hand")

    def _fill_hole(self, key: GtidKey, gno: int) -> _Hole | None:
        holes = self._holes.get(key)
        if not holes:
            return None
        for i, h in enumerate(holes):
            if h.start <= gno <= h.end:
                parts = []
                if h.start < gno:
                    parts.append(_Hole(h.start, gno - 1, h.file, h.pos, h.gtid, h.before))
                if gno < h.end:
                    parts.append(_Hole(gno + 1, h.end, h.file, h.pos, h.gtid, h.before))
                holes[i:i + 1] = parts
                if not holes:
                    del self._holes[key]
                return h
        return None

    def _fill_holes_with(self, sets: dict[GtidKey, IntervalSet]) -> None:
        for key, iv in sets.items():
            holes = self._holes.get(key)
            if not holes:
                continue
            left: list[_Hole] = []
            for h in holes:
                whole = IntervalSet([(h.start, h.end)])
                for a, b in whole.difference(iv):
                    left.append(_Hole(a, b, h.file, h.pos, h.gtid, h.before))
            if left:
                self._holes[key] = left
            else:
                del self._holes[key]

    def _previous_gtids(self, ev: Event, name: str) -> None:
        uuid_sets = ev.data.get("uuid_sets")
        if not isinstance(uuid_sets, list):
            return
        header: dict[GtidKey, IntervalSet] = {}
        for entry in uuid_sets:
            key: GtidKey = (entry["uuid"], entry.get("tag") or None)
            header.setdefault(key, IntervalSet()).update(IntervalSet(entry["intervals"]))
        header = {k: v for k, v in header.items() if v}
        if self._prev_header is not None:
            self._compare_headers(ev, name, header)
        for key, iv in header.items():
            self._gtid_state.setdefault(key, IntervalSet()).update(iv)
        self._fill_holes_with(header)
        self._prev_header = header
        self._prev_header_file = name

    def _compare_headers(self, ev: Event, name: str, header: dict[GtidKey, IntervalSet]) -> None:
        assert self._prev_header is not None
        expected: dict[GtidKey, IntervalSet] = {k: v.copy() for k, v in self._prev_header.items()}
        for key, iv in self._prev_contained.items():
            expected.setdefault(key, IntervalSet()).update(iv)
        missing: dict[GtidKey, list[tuple[int, int]]] = {}
        extra: dict[GtidKey, list[tuple[int, int]]] = {}
        for key, iv in expected.items():
            d = iv.difference(header.get(key))
            if d:
                missing[key] = d
        for key, iv in header.items():
            d = iv.difference(expected.get(key))
            if d:
                extra[key] = d
        if not missing and not extra:
            return
        benign = not missing
        for key, d in extra.items():
            low = self._gtid_stream_min.get(key)
            if low is not None and d[-1][1] >= low:
                benign = False
        exp_text = _gtid_set_text({k: list(v) for k, v in expected.items()})
        found_text = _gtid_set_text({k: list(v) for k, v in header.items()})
        prev = self._prev_header_file
        parts = []
        if missing:
            parts.append(f"missing {_gtid_set_text(missing)}")
        if extra:
            parts.append(f"extra {_gtid_set_text(extra)}")
        message = (f"Previous_gtids of {name} at {ev.pos} does not follow from the files before "
                   f"it: expected {exp_text or '(empty)'} (Previous_gtids of {prev} plus the "
                   f"GTIDs in {prev}), found {found_text or '(empty)'}; {', '.join(parts)}")
        if benign:
            message += ("; the extra GTIDs precede everything the stream has of their uuid "
                        "(added outside the binlog, e.g. SET GTID_PURGED)")
        elif self._prev_error:
            message += f"; {prev} ended with a read error, its last GTIDs may be in the lost part"
        self._add(GTID_HEADER_MISMATCH, WARNING if benign else ERROR, name, ev.pos,
                  {"expected": exp_text, "found": found_text,
                   "missing": _gtid_set_text(missing), "extra": _gtid_set_text(extra),
                   "previous_file": prev},
                  message)

    # -- MariaDB GTIDs --------------------------------------------------------------------------

    def _mariadb_gtid(self, ev: Event, name: str) -> None:
        domain = ev.data.get("domain_id")
        seq = ev.data.get("seq_no")
        if not isinstance(domain, int) or not isinstance(seq, int):
            return
        server = ev.server_id
        text = f"{domain}-{server}-{seq}"
        self._file_last[(domain, server)] = seq
        seen = self._dom_seen.setdefault(domain, IntervalSet())
        top = self._dom_max.get(domain)
        own = self._server_last.get((domain, server))
        detail: dict[str, Any] = {"gtid": text, "domain_id": domain, "server_id": server,
                                  "seq_no": seq, "highest": top}
        if seq in seen:
            self._add(GTID_DUPLICATE, ERROR, name, ev.pos, detail,
                      f"GTID {text} at {ev.pos}: seq_no {seq} of domain {domain} was already "
                      "used earlier in the stream (expected a new seq_no, found a repeated one)")
        elif top is not None and seq > top + 1:
            self._add(GTID_GAP, WARNING, name, ev.pos,
                      {**detail, "missing": [top + 1, seq - 1]},
                      f"GTID {text} at {ev.pos}: domain {domain} jumps from seq_no {top} to "
                      f"{seq} (expected {top + 1}; {top + 1}"
                      + (f"-{seq - 1}" if seq - 1 > top + 1 else "")
                      + " not in the stream). MariaDB does not promise gap-free sequences "
                      "(replication filters, SET gtid_seq_no, several servers in one domain)")
        elif top is not None and seq < top:
            if own is not None and seq < own:
                self._add(GTID_OUT_OF_ORDER, ERROR, name, ev.pos, {**detail, "server_last": own},
                          f"GTID {text} at {ev.pos}: server {server} already logged seq_no "
                          f"{own} in domain {domain} (expected above {own}, found {seq}); "
                          "sequence numbers must grow per server")
            else:
                self._add(GTID_OUT_OF_ORDER, WARNING, name, ev.pos, detail,
                          f"GTID {text} at {ev.pos}: domain {domain} is already at seq_no {top} "
                          f"(expected above {top}, found {seq}): two servers write domain "
                          f"{domain}, possible only with gtid_strict_mode off")
        seen.add(seq)
        if top is None or seq > top:
            self._dom_max[domain] = seq
        if own is None or seq > own:
            self._server_last[(domain, server)] = seq

    def _gtid_list(self, ev: Event, name: str) -> None:
        gtids = ev.data.get("gtids")
        if not isinstance(gtids, list) or ev.data.get("list_flags"):
            return
        header: dict[tuple[int, int], int] = {}
        for g in gtids:
            header[(g["domain_id"], g["server_id"])] = g["seq_no"]
        if self._prev_list is not None:
            self._compare_lists(ev, name, header)
        for (domain, server), seq in header.items():
            self._dom_seen.setdefault(domain, IntervalSet()).add(seq)
            if seq > self._dom_max.get(domain, -1):
                self._dom_max[domain] = seq
            if seq > self._server_last.get((domain, server), -1):
                self._server_last[(domain, server)] = seq
        self._prev_list = header
        self._prev_list_file = name

    def _compare_lists(self, ev: Event, name: str, header: dict[tuple[int, int], int]) -> None:
        assert self._prev_list is not None
        expected = dict(self._prev_list)
        expected.update(self._prev_file_last)
        if header == expected:
            return
        missing = {k: v for k, v in expected.items() if k not in header}
        extra = {k: v for k, v in header.items() if k not in expected}
        differ = {k: (expected[k], v) for k, v in header.items()
                  if k in expected and expected[k] != v}
        header_domains = {d for d, _ in header}
        benign = not extra and not differ and all(d not in header_domains for d, _ in missing)

        def fmt(d: dict[tuple[int, int], int]) -> str:
            return ",".join(f"{a}-{b}-{s}" for (a, b), s in sorted(d.items())) or "(empty)"

        prev = self._prev_list_file
        parts = []
        if missing:
            parts.append(f"missing {fmt(missing)}")
        if extra:
            parts.append(f"extra {fmt(extra)}")
        if differ:
            parts.append("different " + ",".join(
                f"{a}-{b}: expected {e}, found {f}" for (a, b), (e, f) in sorted(differ.items())))
        message = (f"Gtid_list of {name} at {ev.pos} does not follow from the files before it: "
                   f"expected {fmt(expected)} (Gtid_list of {prev} updated with the last GTID "
                   f"per domain and server in {prev}), found {fmt(header)}; {'; '.join(parts)}")
        if benign:
            message += " (whole domains dropped: FLUSH BINARY LOGS DELETE_DOMAIN_ID)"
        elif self._prev_error:
            message += f"; {prev} ended with a read error, its last GTIDs may be in the lost part"
        self._add(GTID_HEADER_MISMATCH, WARNING if benign else ERROR, name, ev.pos,
                  {"expected": fmt(expected), "found": fmt(header), "missing": fmt(missing),
                   "extra": fmt(extra),
                   "different": {f"{a}-{b}": [e, f] for (a, b), (e, f) in differ.items()},
                   "previous_file": prev},
                  message)

    # -- newest-file verdicts ---------------------------------------------------------------------

    def _resolve_pending(self, *, newest: bool) -> None:
        name = self._pending_file
        for what, kind, pos, detail, message, open_note in self._pending_end:
            if what == "in_use":
                sev = INFO if newest else WARNING
            elif newest and self.newest_file_may_be_open:
                sev = INFO
            else:
                sev = ERROR
            note = f" ({open_note})" if sev == INFO else ""
            self._add(kind, sev, name, pos, detail, message + note)
        self._pending_end = []


def _text(value: Any) -> Any:
    if value is None or isinstance(value, (int, str, float, bool)):
        return value
    if isinstance(value, bytes):
        return value.hex()
    return repr(value)


def local_size(uri: str) -> int | None:
    try:
        loc = parse_location(uri)
    except BinlogError:
        return None
    if loc.scheme != "file" or not loc.path:
        return None
    try:
        return os.path.getsize(loc.path)
    except OSError:
        return None


def check_files(uris: Iterable[str | os.PathLike[str]], *, newest_file_may_be_open: bool = True,
                verify_checksums: bool = True, full_decode: bool = True) -> list[Finding]:
    """Check the binlog files of one source server and return the findings.

    The files are put in the order the server wrote them (:func:`order_files`), each is read
    with :class:`~binlake.binlog.reader.BinlogReader` and fed to a :class:`StreamChecker`; a framing
    error ends that file (and is a finding) and the next file is read.  ``full_decode=False``
    decodes only the bodies the checks read (checksums are still verified for every event),
    which skips the row images but also their decode errors.
    """
    checker = StreamChecker(newest_file_may_be_open=newest_file_may_be_open)
    for f in order_files(uris):
        checker.begin_file(f.name, seq=f.seq if f.seq >= 0 else None)
        reader = BinlogReader(f.uri, verify_checksums=verify_checksums, name=f.name,
                              decode=None if full_decode else CHECKED_TYPES)
        error: BinlogError | None = None
        try:
            for ev in reader:
                checker.event(ev)
        except BinlogError as exc:
            error = exc
        size = local_size(f.uri) if reader.compression is None else None
        checker.end_file(end_offset=reader.end_offset if error is None else error.offset,
                         error=error, size=size)
    checker.finish()
    return checker.findings
