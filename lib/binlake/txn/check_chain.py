"""Stream checks: the file chain, and the verdicts that wait for the newest file.

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

from ..binlog.constants import LOG_EVENT_BINLOG_IN_USE_F
from ..binlog.constants import EventType as E
from ..binlog.errors import BinlogError
from .check_base import CheckerBase
from .files import binlog_file
from .findings import (
    ERROR,
    FILE_END_WITHOUT_ROTATE,
    FILE_NOT_CLOSED,
    INFO,
    MISSING_FILE,
    ROTATE_MISMATCH,
    WARNING,
)

__all__ = ["ChainChecks"]

_FILE_END_OK = frozenset({E.ROTATE, E.STOP})


class ChainChecks(CheckerBase):
    """The file chain (a mixin of :class:`~binlake.txn.checks.StreamChecker`, which calls
    :meth:`_init_chain` once, :meth:`_chain_begin` from ``begin_file``, :meth:`_chain_end` from
    ``end_file`` and :meth:`_resolve_pending` when it knows whether the file just ended is the
    newest)."""

    def _init_chain(self) -> None:
        # the previous file (for the chain checks)
        self._prev_name: str | None = None
        self._prev_base: str | None = None
        self._prev_seq: int | None = None
        self._prev_rotate: tuple[str, int] | None = None  # (next_file, pos of the Rotate)
        self._prev_error = False
        self._pending_end = []
        self._pending_file: str | None = None

    def _chain_begin(self, name: str, seq: int | None) -> str | None:
        """A file begins: a gap in the sequence numbers, a Rotate naming another file.  Returns
        the base name of the file (None without a sequence number)."""
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
        return base

    def _chain_end(self, name: str, end_offset: int | None, error: BinlogError | None) -> None:
        """A file ends (after its last group was closed): how it ends, its in-use flag."""
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
