"""Stream-level validity checks over the binlog files of one source server.

:class:`StreamChecker` is fed the events of one or more binlog files in the order the server
wrote them (``begin_file`` / ``event`` ... / ``end_file``, then ``finish``) and collects
:class:`~binlake.txn.findings.Finding` objects; :func:`check_files` does the feeding for a list
of paths or URIs.  Memory is bounded per file: nothing keeps a list of events.  What grows is
(a) one interval set per GTID source (one interval per hole in its GTID sequence), and (b) the
Xid values of the current file, kept as sorted ``array('Q')`` runs (16 bytes per transaction,
dropped at the end of each file).

The rules, and why each has the severity it has, are with the code that checks them:

* event integrity (checksums, decode and framing errors) and positions (``log_pos``):
  :mod:`binlake.txn.check_integrity`;
* transactions (``transaction_length``) and Xids: :mod:`binlake.txn.check_transactions`;
* GTID continuity, MySQL and MariaDB: :mod:`binlake.txn.check_gtids` (GTID sets:
  :mod:`binlake.txn.gtidset`);
* the file chain and the newest-file verdicts: :mod:`binlake.txn.check_chain`.

:class:`StreamChecker` combines those mixins (:mod:`binlake.txn.check_base`); here it detects
each file's format (binlog v1-v4, pre-checksum v4, relay log) and dispatches every event.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from ..binlog.constants import LOG_EVENT_RELAY_LOG_F
from ..binlog.constants import EventType as E
from ..binlog.errors import BinlogError
from ..binlog.event import Event
from ..binlog.reader import BinlogReader
from ..binlog.source import parse_location
from .check_base import FDE_TYPES
from .check_chain import ChainChecks
from .check_gtids import GtidChecks
from .check_integrity import IntegrityChecks
from .check_transactions import TransactionChecks, _XidIndex
from .files import order_files
from .findings import GTID_OUT_OF_ORDER, Finding
from .gtidset import IntervalSet

# GTID_OUT_OF_ORDER (findings.py) and IntervalSet (gtidset.py) stay importable from here.
__all__ = ["GTID_OUT_OF_ORDER", "IntervalSet", "StreamChecker", "check_files", "local_size"]

_MYSQL_GTID_TYPES = frozenset({E.GTID, E.GTID_TAGGED})

# The event types the checks read the bodies of (check_files(full_decode=False)).
CHECKED_TYPES = frozenset({E.FORMAT_DESCRIPTION, E.START_V3, E.QUERY, E.QUERY_COMPRESSED,
                           E.ROTATE, E.STOP, E.XID, E.GTID, E.ANONYMOUS_GTID, E.GTID_TAGGED,
                           E.PREVIOUS_GTIDS, E.MARIADB_GTID, E.MARIADB_GTID_LIST,
                           E.TRANSACTION_PAYLOAD})


class StreamChecker(IntegrityChecks, TransactionChecks, GtidChecks, ChainChecks):
    """Validity checks over the binlog files of one source server, fed in sequence order.

    ``begin_file`` before a file's events, ``event`` for every event (payload inner events
    included), ``end_file`` after the last one, ``finish`` after the last file; the findings
    accumulate in :attr:`findings`.
    """

    # False: no GTID continuity checks (a byte range's caller checks GTIDs over all files)
    check_gtids = True

    def __init__(self, *, newest_file_may_be_open: bool = True) -> None:
        self.newest_file_may_be_open = newest_file_may_be_open
        self.findings = []
        self._init_chain()
        self._init_gtids()
        self._in_file = False
        self._reset_file(None, None, None)

    # -- the state of the file being read -----------------------------------------------------

    def _reset_file(self, name: str | None, base: str | None, seq: int | None) -> None:
        self._name = name
        self._base = base
        self._seq = seq
        self._first_fde = None
        self._v3 = False
        self._check_positions = True
        self._pre_checksum = False
        self._relay_from = None
        self._delta = 0
        self._begin = None
        self._last_top = None
        self._group = None
        self._group_end = 0
        self._group_holed = False
        self._xids = _XidIndex()
        self._header_seen = False
        self._list_seen = False
        self._resuming = False
        self.resume_delta: int | None = None

    # -- the feeding API ----------------------------------------------------------------------

    def begin_file(self, name: str, *, seq: int | None) -> None:
        """Start a file: ``name`` is the binlog file name, ``seq`` its sequence number."""
        if self._in_file:
            raise RuntimeError("begin_file() before end_file() of the previous file")
        self._resolve_pending(newest=False)
        base = self._chain_begin(name, seq)
        self._next_file_gtids()
        self._reset_file(name, base, seq)
        self._in_file = True

    def resume_file(self, fde: Event) -> None:
        """After :meth:`begin_file`, start reading the file in its middle (a byte range that
        starts at a group): ``fde`` is the file's Format_description, which gives the
        format (positions, relay log, old servers) but is not checked again (the range at
        the file's start does that).  The position offset an earlier range may have left
        (see :mod:`.check_integrity`) is unknown here: the first top-level event's offset is
        taken as it is and kept in :attr:`resume_delta`, for the caller to compare with the
        previous range's :attr:`position_delta`."""
        saved, fde.error = fde.error, None
        try:
            self.event(fde)
        finally:
            fde.error = saved
        self._resuming = True

    @property
    def position_delta(self) -> int:
        """The position offset after the last event (0 in a sound file)."""
        return self._delta

    def end_range(self) -> None:
        """End a byte range that stops where the next group starts (not the file's end): its
        last group ends there, as the next group's GTID event would end it."""
        if self._group is not None:
            end = self._group_end
            self._close_group(self._name or "-", f"the end of the range at {end}", eof=False,
                              by_gtid=True)
            self._group = None
        self._in_file = False

    def event(self, ev: Event) -> None:
        """Feed one event of the current file (in file order)."""
        name = self._name if self._name is not None else ev.file
        err = ev.error
        if err is not None:
            self._event_error(ev, err, name)
        if ev.payload_index is not None:
            if self.check_xids:
                self._xid_checks(ev, name)
            return
        t = ev.type_code
        if self._resuming and t not in FDE_TYPES and ev.next_pos:
            self._resuming = False  # (an event with log_pos 0 says nothing: the next one)
            if self._relay_from is None and self._check_positions:
                end = ev.pos if self._v3 else ev.pos + ev.length
                self._delta = ev.next_pos - end
                self.resume_delta = self._delta
        # the file's format and where it turns into a relay log (check_integrity's docstring)
        if t in FDE_TYPES:
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
        if self.check_xids:  # (off in a load's ranges: a call saved per event)
            self._xid_checks(ev, name)
        if not self.check_gtids:
            pass
        elif t in _MYSQL_GTID_TYPES:
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
        self._chain_end(name, end_offset, error)
        self._in_file = False

    def finish(self) -> None:
        """After the last file: settle what needed to know which file is the newest."""
        if self._in_file:
            raise RuntimeError("finish() before end_file()")
        self._resolve_pending(newest=True)
        self._report_gtid_gaps()


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
