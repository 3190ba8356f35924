"""What the groups of stream checks share (:class:`~binlake.txn.checks.StreamChecker` is made
of them).

Each group of checks is a mixin over :class:`CheckerBase`, in a module named for what it checks
(the rules, their severities and the specifications behind them are in each module's docstring):

* :mod:`binlake.txn.check_integrity`: event checksums, decode and framing errors, header
  positions (``log_pos``);
* :mod:`binlake.txn.check_transactions`: ``transaction_length`` of GTID groups, Xids repeated
  within a file;
* :mod:`binlake.txn.check_gtids`: GTID continuity, MySQL (GTIDs and Previous_gtids) and MariaDB
  (GTIDs and Gtid_list);
* :mod:`binlake.txn.check_chain`: the file chain (missing files, Rotate targets, how a file
  ends, the in-use flag) and the verdicts that wait to know which file is the newest.

The mixins only add methods (and the state only they use); :class:`StreamChecker
<binlake.txn.checks.StreamChecker>` feeds them, so each check is still one method call on the
checker per event.  The attributes declared here are read or written by more than one group;
``StreamChecker`` sets them (``__init__``, ``_reset_file`` per file, ``event``).
"""

from __future__ import annotations

from typing import Any

from ..binlog.constants import EventType as E
from ..binlog.event import Event
from .findings import Finding

__all__ = ["FDE_TYPES", "CheckerBase"]

FDE_TYPES = frozenset({E.FORMAT_DESCRIPTION, E.START_V3})


class CheckerBase:
    """The findings, how they are added, and the state the groups of checks share."""

    newest_file_may_be_open: bool
    findings: list[Finding]
    # the file being read (reset per file)
    _name: str | None
    _base: str | None
    _seq: int | None
    _first_fde: Event | None
    _v3: bool  # binlog v3: log_pos is the event's own offset
    _pre_checksum: bool  # binlog v4 whose FDE predates checksums (MySQL 5.0/5.1)
    _relay_from: int | None  # the position from which the file is a relay log
    _begin: tuple[int, int] | None  # (pos, end) of the group's BEGIN
    _last_top: Event | None  # the last top-level event
    _group: tuple[int, int | None, str | None] | None  # pos, declared, gtid
    _group_holed: bool  # a position finding inside the open group
    # across files
    _prev_error: bool  # the previous file ended with a framing error
    # verdicts that depend on whether the file just ended is the newest one
    _pending_end: list[tuple[str, str, int | None, dict[str, Any], str, str]]

    def _add(self, kind: str, severity: str, file: str | None, pos: int | None,
             detail: dict[str, Any], message: str) -> None:
        self.findings.append(Finding(kind, severity, file, pos, detail, message))
