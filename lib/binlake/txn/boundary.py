"""Transaction boundaries (WL#4162): every event gets a boundary type, and a state machine
checks that the stream is a valid sequence of event groups.

Valid stream (WL#4162, "Transaction Boundary Parser"):
``( (SELF | IGNORE)* START (INSIDE | IGNORE)* END )*``.  Transition table (from -> to):

=================  =========  =====  =====  ======  ===
to \\ from          NOT_DEF.   SELF   START  INSIDE  END
=================  =========  =====  =====  ======  ===
SELF_CONTAINED     ok         ok     err    err     ok
START_TRANSACTION  ok         ok     err    err     ok
INSIDE_TRANSACTION err        err    ok     ok      err
END_TRANSACTION    err        err    ok     ok      err
=================  =========  =====  =====  ======  ===

IGNORE keeps the current state.  An invalid transition is reported as "unable to change
boundary parser from X to Y" and the parser resets to NOT_DEFINED (for a START or SELF event
it then takes that event, as MySQL's rpl_trx_boundary_parser.cc does for a GTID), so one bad
spot does not poison the rest of the stream.

Which type an event has depends on the event and on the group it is in (WL#4162 "Transaction
boundary types for log event types" and binlog.cc M1/M2): a GTID starts a group; BEGIN and
XA START start one (or are inside one after a GTID); Intvar/Rand/User_var before a statement
outside a group start it; Xid, COMMIT, ROLLBACK and XA_prepare end one; a DDL is
self-contained, or ends the group its GTID (or a pre-statement event) started;
Format_description, Rotate and Heartbeat are ignored.  MariaDB: its GTID event starts every
group (with the standalone flag, the one statement after it ends the group; without it the
group runs to Xid/COMMIT/ROLLBACK/XA_prepare), Annotate_rows is inside, Binlog_checkpoint and
GTID_list are self-contained.
"""

from __future__ import annotations

import re
from enum import IntEnum

from ..binlog.constants import EventType as E
from ..binlog.events.rows import ROWS_EVENTS


class Boundary(IntEnum):
    NOT_DEFINED = 0
    IGNORE = 1
    SELF_CONTAINED = 2
    START = 3
    INSIDE = 4
    END = 5


NAMES = {Boundary.NOT_DEFINED: "Not Defined", Boundary.IGNORE: "Ignore",
         Boundary.SELF_CONTAINED: "Self Contained", Boundary.START: "Start Transaction",
         Boundary.INSIDE: "Inside Transaction", Boundary.END: "End Transaction"}

_B = Boundary
# TRANSITIONS[to] = the states from which `to` is allowed.
TRANSITIONS: dict[Boundary, frozenset[Boundary]] = {
    _B.SELF_CONTAINED: frozenset({_B.NOT_DEFINED, _B.SELF_CONTAINED, _B.END}),
    _B.START: frozenset({_B.NOT_DEFINED, _B.SELF_CONTAINED, _B.END}),
    _B.INSIDE: frozenset({_B.START, _B.INSIDE}),
    _B.END: frozenset({_B.START, _B.INSIDE}),
}

# (globals: an Enum member looked up on its class costs about 0.1 us; feed runs per event)
_IGNORE = Boundary.IGNORE
_IN_GROUP = frozenset({Boundary.START, Boundary.INSIDE})

IGNORED_EVENTS = frozenset({E.FORMAT_DESCRIPTION, E.ROTATE, E.HEARTBEAT, E.HEARTBEAT_V2,
                            E.IGNORABLE, E.TRANSACTION_PAYLOAD})
SELF_EVENTS = frozenset({E.STOP, E.PREVIOUS_GTIDS, E.INCIDENT, E.START_V3,
                         E.BINLOG_CHECKPOINT, E.MARIADB_GTID_LIST, E.START_ENCRYPTION})
GTID_EVENTS = frozenset({E.GTID, E.ANONYMOUS_GTID, E.GTID_TAGGED, E.MARIADB_GTID})
# Events that prepare the statement after them: inside a group, or starting one (WL#4162 M2;
# the LOAD DATA blocks precede their Execute_load_query / Exec_load the same way).
PRE_STATEMENT_EVENTS = frozenset({E.INTVAR, E.RAND, E.USER_VAR, E.BEGIN_LOAD_QUERY,
                                  E.APPEND_BLOCK, E.CREATE_FILE})
INSIDE_EVENTS = frozenset({*ROWS_EVENTS, E.TABLE_MAP, E.ROWS_QUERY, E.ANNOTATE_ROWS,
                           E.TRANSACTION_CONTEXT, E.VIEW_CHANGE})
END_EVENTS = frozenset({E.XID, E.XA_PREPARE})
STATEMENT_EVENTS = frozenset({E.QUERY, E.QUERY_COMPRESSED, E.EXECUTE_LOAD_QUERY, E.LOAD,
                              E.NEW_LOAD, E.EXEC_LOAD, E.DELETE_FILE})

# Query texts with a transaction meaning (MySQL log_event.h is_begin/commit/rollback;
# the XA forms per WL#6860).
_LEAD = re.compile(r"^\s*(?:/\*.*?\*/\s*)*", re.S)


def query_keyword(query: str) -> str:
    """The statement's leading keywords, upper-case: 'BEGIN', 'COMMIT', 'ROLLBACK',
    'ROLLBACK TO', 'SAVEPOINT', 'XA START', 'XA END', 'XA COMMIT', 'XA ROLLBACK',
    'XA PREPARE', or the first word of any other statement."""
    q = _LEAD.sub("", query, count=1)[:40].upper()
    words = q.split(None, 3)
    if not words:
        return ""
    first = words[0].rstrip(";")
    if first == "XA" and len(words) > 1:
        return "XA " + words[1].rstrip(";")
    if first == "ROLLBACK" and len(words) > 1 and words[1] in ("TO", "WORK"):
        if words[1] == "TO":
            return "ROLLBACK TO"
        return "ROLLBACK"
    if first == "START" and len(words) > 1 and words[1].rstrip(";") == "TRANSACTION":
        return "BEGIN"
    if first == "COMMIT":
        return "COMMIT"
    return first


class BoundaryParser:
    """The WL#4162 state machine.  ``feed`` returns None, or the (from, to) pair of an
    invalid transition after which the parser was reset."""

    __slots__ = ("state",)

    def __init__(self) -> None:
        self.state = Boundary.NOT_DEFINED

    def reset(self) -> None:
        self.state = Boundary.NOT_DEFINED

    def feed(self, b: Boundary) -> tuple[Boundary, Boundary] | None:
        if b == _IGNORE:
            return None
        if self.state in TRANSITIONS[b]:
            self.state = b
            return None
        bad = (self.state, b)
        self.reset()
        if b in (Boundary.START, Boundary.SELF_CONTAINED):
            self.state = b  # a new group (or statement) starts cleanly after the bad spot
        return bad

    @property
    def in_group(self) -> bool:
        return self.state in _IN_GROUP


def describe(transition: tuple[Boundary, Boundary]) -> str:
    a, b = transition
    return f"unable to change boundary parser from {NAMES[a]} to {NAMES[b]}"
