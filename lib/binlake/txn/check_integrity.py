"""Stream checks: event integrity and positions (each event's bytes, and where it says it ends).

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
"""

from __future__ import annotations

from typing import Any

from ..binlog.errors import BinlogError, ChecksumError, TruncatedError
from ..binlog.event import Event
from .check_base import CheckerBase
from .findings import (
    CHECKSUM_MISMATCH,
    DECODE_ERROR,
    ERROR,
    POSITION_GAP,
    POSITION_OVERLAP,
    TRUNCATED,
)

__all__ = ["IntegrityChecks"]


class IntegrityChecks(CheckerBase):
    """Checksums, decode and framing errors, header positions (a mixin of
    :class:`~binlake.txn.checks.StreamChecker`, which detects the file's format and relay-log
    part before calling :meth:`_position_check`)."""

    _delta: int  # next_pos - end of the current event: 0 in a sound file

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


def _text(value: Any) -> Any:
    if value is None or isinstance(value, (int, str, float, bool)):
        return value
    if isinstance(value, bytes):
        return value.hex()
    return repr(value)
