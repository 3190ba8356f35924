"""Events -> event groups -> decided transactions, for one stream of events.

:class:`GroupBuilder` turns the events of one file (or of a transaction-aligned byte range of
one, which is what a Spark executor gets) into decided transactions and XA markers, using the
WL#4162 boundary parser.  :class:`~binlake.txn.stream.TransactionStream` runs it over a
sequence of files and pairs XA PREPARE groups with their XA COMMIT/ROLLBACK
(:class:`~binlake.txn.xa.XaTracker`), across files and, through ``pending_in``/``pending``,
across runs.

Outcomes (WL#2687, WL#6860):

* a group ended by Xid or COMMIT is committed; by ROLLBACK, rolled back -- its changes to
  non-transactional tables still happened (``applied`` stays True), the rest never did;
* ``ROLLBACK TO SAVEPOINT`` inside a group undoes the transactional changes logged since the
  savepoint (MariaDB logs it when a non-transactional table changed after the savepoint);
* an XA PREPARE group is pending until its XA COMMIT (the changes take effect at the COMMIT's
  position) or XA ROLLBACK (they never do); ``XA COMMIT ... ONE PHASE`` logged as an
  XA_prepare event with the one-phase flag commits at once.

A group holding an event the reader marked damaged is never yielded (``GroupBuilder.damaged``
and a DAMAGED_TRANSACTION finding).  The state of the group being read is
:class:`~binlake.txn.opengroup._Group`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..binlog.constants import EventType as E
from ..binlog.event import Event
from ..binlog.events.rows import ROWS_EVENTS, op_of
from . import findings as F
from .boundary import (
    END_EVENTS,
    GTID_EVENTS,
    IGNORED_EVENTS,
    INSIDE_EVENTS,
    PRE_STATEMENT_EVENTS,
    SELF_EVENTS,
    STATEMENT_EVENTS,
    Boundary,
    BoundaryParser,
    describe,
    query_keyword,
)
from .engines import EngineTracker, statement_target
from .findings import Finding
from .model import (
    COMMITTED,
    DDL,
    DML,
    ROLLED_BACK,
    STATEMENT,
    XA,
    XA_COMMITTED,
    XA_PREPARED,
    Part,
    RowChange,
    Transaction,
    XaXid,
)
from .opengroup import _changes, _count, _Group
from .spill import SpilledChanges, undo_changes
from .xa import parse_xa_statement, xid_of_event

_KNOWN = frozenset(int(t) for t in E)
# Enum members the per-event code compares with, as module globals: a member looked up on
# its class (E.TABLE_MAP) costs about 0.1 us in Python 3.11, a global a sixth of that.
_IGNORE, _SELF, _START, _INSIDE, _END = (Boundary.IGNORE, Boundary.SELF_CONTAINED,
                                         Boundary.START, Boundary.INSIDE, Boundary.END)
_FDE_OR_V3 = frozenset({E.FORMAT_DESCRIPTION, E.START_V3})
_STATEMENT_TEXT = frozenset({E.ANNOTATE_ROWS, E.ROWS_QUERY})
_TABLE_MAP, _MARIADB_GTID = E.TABLE_MAP, E.MARIADB_GTID
_INTVAR, _RAND, _USER_VAR = E.INTVAR, E.RAND, E.USER_VAR
_DDL_WORDS = frozenset({"CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE", "GRANT", "REVOKE",
                        "ANALYZE", "OPTIMIZE", "REPAIR", "CHECK", "INSTALL", "UNINSTALL"})
_SAVEPOINT_NAME = re.compile(r"^\s*(?:ROLLBACK\s+(?:WORK\s+)?TO\s+(?:SAVEPOINT\s+)?|SAVEPOINT\s+|"
                             r"RELEASE\s+SAVEPOINT\s+)`?(?P<name>(?:[^`]|``)+?)`?\s*;?\s*$",
                             re.I | re.S)
MARIADB_STANDALONE = 0x01
MARIADB_TRANSACTIONAL = 0x04
MARIADB_PREPARED_XA = 0x40
MARIADB_COMPLETED_XA = 0x80


@dataclass
class XaMarker:
    """An XA COMMIT/ROLLBACK group, to be paired with its PREPARE by the XaTracker."""

    xid: XaXid
    commit: bool
    part: Part
    end_event: str
    server_id: int | None


class GroupBuilder:
    """Events of one stream (files in order) -> decided transactions and XA markers."""

    def __init__(self, engines: EngineTracker | None = None, *, spill_bytes: int | None = None,
                 spill_rows: int | None = None, spill_dir: str | None = None) -> None:
        """``spill_bytes``: an open group whose rows events add up to this many bytes since
        the last time, or that holds ``spill_rows`` changes (narrow rows cost more as
        objects than as bytes), moves its changes so far to a temporary file (``spill_dir``,
        default the system's), and its transaction's ``changes`` is a
        :class:`SpilledChanges` (see :mod:`binlake.txn.spill`).  None: every change stays in
        memory."""
        self.engines = engines or EngineTracker()
        self.spill_bytes = spill_bytes
        self.spill_rows = spill_rows if spill_rows is not None else 1 << 62
        self.spill_dir = spill_dir
        self.parser = BoundaryParser()
        self.group: _Group | None = None
        self.findings: list[Finding] = []
        self.incomplete: list[Transaction] = []
        self.file = ""
        self.seq = -1
        self._last_bad: tuple[str, int, Boundary, Boundary] | None = None
        self._bad_count = 0
        self.old_server = False  # the FDE is from MySQL < 5.5 (see _classify)
        # groups with a damaged event (ev.error: a CRC32 mismatch, a body its decoder
        # rejected): never yielded, since their changes may be missing or wrong; and the
        # XIDs of damaged XA PREPARE groups, whose COMMIT/ROLLBACK is withheld too
        self.damaged: list[Transaction | XaMarker] = []
        self._damaged_xids: dict[XaXid, Part] = {}

    # -- files ----------------------------------------------------------------------------

    def begin_file(self, name: str, seq: int) -> None:
        self.file = name
        self.seq = seq

    def end_file(self, *, may_be_open: bool = False, end_offset: int | None = None) -> None:
        """A group still open at the end of a file: the file was cut or is still written."""
        self._flush_bad()
        g = self.group
        if g is not None:
            severity = F.WARNING if may_be_open else F.ERROR
            self.findings.append(Finding(
                F.OPEN_TRANSACTION_AT_EOF, severity, g.file, g.pos,
                {"gtid": g.gtid, "changes": _count(g), "end_offset": end_offset},
                "transaction still open at the end of the file"
                + (" (the newest file may still be being written)" if may_be_open else "")))
            self.incomplete.append(self._txn(g, ROLLED_BACK, DML, "", None, end_offset))
            self.group = None
        self.parser.reset()

    # -- events ---------------------------------------------------------------------------

    def note_format(self, server_version: str, flavor: str) -> None:
        """The file's FDE (a reader of a byte range never yields it, so say it here)."""
        self.old_server = flavor == "mysql" and server_version[:3] in (
            "3.2", "4.0", "4.1", "5.0", "5.1", "5.2")

    def _classify(self, ev: Event) -> Boundary:
        code = ev.type_code
        if code in INSIDE_EVENTS:  # the bulk (Table_map, rows, Annotate_rows): first
            if self.old_server:
                g = self.group
                # MySQL 5.0/5.1 logged the rows of an autocommit statement on a
                # non-transactional table without BEGIN/COMMIT: Table_map ... rows event with
                # the statement-end flag.  The log_event.cc "*1" guess of WL#4162 for events
                # without boundary markers.
                if code == _TABLE_MAP and not (self.parser.in_group and g is not None):
                    return _START
                if g is not None and g.implicit and ev.data.get("stmt_end"):
                    return _END
            return _INSIDE
        if code in _FDE_OR_V3:
            self.note_format(ev.data.get("server_version") or "", ev.data.get("flavor") or "")
        if code in IGNORED_EVENTS or code not in _KNOWN:
            return _IGNORE
        if code in GTID_EVENTS:
            return _START
        if code in END_EVENTS:
            return _END
        if code in SELF_EVENTS:
            return _SELF
        in_group = self.parser.in_group and self.group is not None
        if code in PRE_STATEMENT_EVENTS:
            return Boundary.INSIDE if in_group else Boundary.START
        if code in STATEMENT_EVENTS:
            kw = query_keyword(ev.data.get("query") or "") if "query" in ev.data else ""
            g = self.group
            if kw in ("BEGIN", "XA START"):
                return Boundary.INSIDE if in_group and g is not None and not g.begun \
                    and g.by_gtid else Boundary.START
            if kw in ("COMMIT", "ROLLBACK", "XA PREPARE"):
                return Boundary.END
            if kw in ("SAVEPOINT", "ROLLBACK TO", "XA END", "RELEASE"):
                return Boundary.INSIDE
            if kw in ("XA COMMIT", "XA ROLLBACK"):
                return Boundary.END if in_group else Boundary.SELF_CONTAINED
            if in_group:
                return Boundary.INSIDE if g is not None and g.begun else Boundary.END
            return Boundary.SELF_CONTAINED
        return Boundary.SELF_CONTAINED  # Unknown_log_event and friends (WL#4162: SELF)

    def feed(self, ev: Event) -> Iterable[Transaction | XaMarker]:
        """The transactions and XA markers ``ev`` decides.  A group holding an event the
        reader marked damaged (``ev.error``) is not yielded: it goes to ``damaged`` with a
        DAMAGED_TRANSACTION finding (an event that cannot be trusted may have lost rows).
        Not a generator: most events decide nothing (then ``()``), and making a generator
        for each would cost more than what they do."""
        b = self._classify(ev)
        if b is _IGNORE:
            self._damage(ev)
            return ()
        bad = self.parser.feed(b)
        if bad is not None:
            self._invalid(ev, bad)
            if self.group is not None:
                self.incomplete.append(self._txn(self.group, ROLLED_BACK, DML, "", None, ev.pos))
                self.group = None
            if b is _INSIDE or b is _END:
                return ()  # an orphan event: no group to put it in
        elif self._last_bad is not None:
            self._flush_bad()
        if b is _INSIDE:
            if ev.error is not None:
                self._damage(ev)
            self._inside(ev)
        elif b is _START:
            self.group = g = _Group(self.file, self.seq, ev.pos, ev.server_id)
            g.by_gtid = ev.type_code in GTID_EVENTS
            g.implicit = ev.type_code == _TABLE_MAP
            g.begun = g.implicit
            self._damage(ev)
            self._inside(ev)
        elif b is _END:
            self._damage(ev)
            if ev.type_code in ROWS_EVENTS:  # the last rows event of an implicit group
                self._inside(ev)
            return self._trusted(self.group, self._end(ev))
        elif b is _SELF and ev.type_code in STATEMENT_EVENTS:
            g = _Group(self.file, self.seq, ev.pos, ev.server_id)
            self.group = g
            self._damage(ev)
            return self._trusted(g, self._end(ev))
        return ()

    def _damage(self, ev: Event) -> None:
        g = self.group
        if ev.error is not None and g is not None and g.damage is None:
            g.damage = ev.error

    def _trusted(self, g: _Group | None, items: Iterator[Transaction | XaMarker]
                 ) -> Iterator[Transaction | XaMarker]:
        """``items`` (what group ``g`` decides), less what a damaged event spoils."""
        for item in items:
            err = g.damage if g is not None else None
            prep = self._damaged_xids.get(item.xid) if isinstance(item, XaMarker) else None
            if err is None and prep is None:
                yield item
                continue
            self.damaged.append(item)
            if isinstance(item, Transaction) and isinstance(item.changes, SpilledChanges):
                item.changes.close()  # (its temporary file)
            part = item.part
            if err is not None:
                if isinstance(item, Transaction) and item.status == XA_PREPARED \
                        and item.xa_xid is not None:
                    self._damaged_xids[item.xa_xid] = part
                where = f"byte {err.offset}" if err.offset is not None else "an event"
                message = (f"transaction at {part.begin_pos} not built: its event at {where} "
                           f"is damaged ({err.message})")
                detail: dict[str, Any] = {"event_pos": err.offset, "error": err.kind}
            else:
                assert prep is not None and isinstance(item, XaMarker)
                message = (f"XA {'COMMIT' if item.commit else 'ROLLBACK'} of {item.xid} not "
                           f"applied: its PREPARE at {prep.file}:{prep.begin_pos} is damaged")
                detail = {"prepare_file": prep.file, "prepare_pos": prep.begin_pos}
            self.findings.append(Finding(F.DAMAGED_TRANSACTION, F.ERROR, part.file,
                                         part.begin_pos, {"end_pos": part.end_pos, **detail},
                                         message))

    def _invalid(self, ev: Event, bad: tuple[Boundary, Boundary]) -> None:
        # Collapse a run of identical invalid transitions (e.g. every event of a transaction
        # whose start is missing) into one finding with a count.
        key = (self.file, 0, bad[0], bad[1])
        if self._last_bad is not None and self._last_bad[0] == self.file and \
                self._last_bad[2:] == key[2:] and bad[0] == Boundary.NOT_DEFINED:
            self._bad_count += 1
            return
        self._flush_bad()
        self._last_bad = (self.file, ev.pos, bad[0], bad[1])
        self._bad_count = 1

    def _flush_bad(self) -> None:
        if self._last_bad is None:
            return
        file, pos, a, b = self._last_bad
        self.findings.append(Finding(
            F.INVALID_TRANSITION, F.ERROR, file, pos,
            {"from": a.name, "to": b.name, "events": self._bad_count},
            describe((a, b)) + (f" ({self._bad_count} events)" if self._bad_count > 1 else "")))
        self._last_bad = None
        self._bad_count = 0

    def _inside(self, ev: Event) -> None:
        """Fold an event inside the open group into it (it decides nothing)."""
        g = self.group
        assert g is not None
        code = ev.type_code
        d = ev.data
        if code in GTID_EVENTS:
            g.gtid = d.get("gtid")
            if code == _MARIADB_GTID:
                flags = int(d.get("flags2") or 0)
                g.mariadb_flags = flags
                g.begun = not flags & MARIADB_STANDALONE
                if flags & MARIADB_PREPARED_XA:
                    g.xa_xid = xid_of_event(d.get("xid"))
            else:
                g.commit_ts_us = d.get("immediate_commit_timestamp")
        elif code in ROWS_EVENTS:
            db = d.get("db", "")
            table = d.get("table", "")
            name = f"{db}.{table}"
            g.tables.add(name)
            op = op_of(code)
            transactional = self.engines.transactional(name)
            pidx = ev.payload_index
            # (what every row of the event shares, looked up once)
            append, file, pos = g.changes.append, ev.file, ev.pos
            st, st_pos, st_pidx = g.statement, g.statement_pos, g.statement_pidx
            for i, (before, after) in enumerate(d.get("rows") or ()):
                append(RowChange(db, table, op, before, after, file, pos, i, st, True, None,
                                 transactional, st_pos, pidx, st_pidx))
            if self.spill_bytes is not None:
                g.held += ev.length
                if g.held >= self.spill_bytes or len(g.changes) >= self.spill_rows:
                    self._spill(g)
            if d.get("stmt_end"):
                g.statement = None
                g.statement_pos = None
                g.statement_pidx = ev.payload_index
        elif code in _STATEMENT_TEXT:
            g.statement = d.get("query")
            g.statement_pos = ev.pos
            g.statement_pidx = ev.payload_index
        elif code == _INTVAR:
            g.context["insert_id" if d.get("kind") == "INSERT_ID" else "last_insert_id"] = \
                d.get("value")
        elif code == _RAND:
            g.context["rand_seed1"] = d.get("seed1")
            g.context["rand_seed2"] = d.get("seed2")
        elif code == _USER_VAR:
            g.context.setdefault("user_vars", {})[d.get("name")] = \
                None if d.get("is_null") else d.get("value")
        elif code in STATEMENT_EVENTS:
            query = d.get("query") or ""
            kw = query_keyword(query)
            if kw in ("BEGIN",):
                g.begun = True
            elif kw == "XA START":
                g.begun = True
                parsed = parse_xa_statement(query)
                if parsed is not None:
                    g.xa_xid = parsed[1]
            elif kw == "SAVEPOINT":
                m = _SAVEPOINT_NAME.match(query)
                if m:
                    g.savepoints.append((m.group("name"), _count(g)))
            elif kw == "ROLLBACK TO":
                self._rollback_to(g, query, ev)
            elif kw == "RELEASE":
                m = _SAVEPOINT_NAME.match(query)
                if m:
                    g.savepoints = [s for s in g.savepoints if s[0] != m.group("name")]
            elif kw != "XA END":
                self._statement(g, d, query)
                target = statement_target(d.get("db") or None, query)
                if target:
                    g.tables.add(target)
                self._ddl(d, query, kw)

    def _rollback_to(self, g: _Group, query: str, ev: Event) -> None:
        m = _SAVEPOINT_NAME.match(query)
        name = m.group("name") if m else None
        for k in range(len(g.savepoints) - 1, -1, -1):
            if g.savepoints[k][0] == name:
                undo_changes(_changes(g), g.savepoints[k][1])
                del g.savepoints[k + 1:]
                self._assumed_engines(g, ev)
                return
        self.findings.append(Finding(
            F.INVALID_TRANSITION, F.WARNING, ev.file, ev.pos, {"savepoint": name},
            f"ROLLBACK TO a savepoint ({name}) not set in this transaction"))

    @staticmethod
    def _statement(g: _Group, d: dict[str, Any], query: str) -> None:
        g.statements.append(query)
        g.contexts.append({"db": d.get("db") or None, **g.context})
        g.context = {}

    @staticmethod
    def _is_trx_end(ev: Event) -> bool:
        if ev.type_code in END_EVENTS:
            return True
        return query_keyword(ev.data.get("query") or "") in ("COMMIT", "ROLLBACK")

    def _assumed_engines(self, g: _Group, ev: Event) -> None:
        """A rollback was resolved with a table whose engine nothing told us: say so."""
        unknown = sorted(t for t in g.tables if self.engines.is_transactional(t) is None)
        if unknown:
            self.findings.append(Finding(
                F.UNKNOWN_TABLE_ENGINE, F.INFO, ev.file, ev.pos, {"tables": unknown},
                f"assumed transactional (no CREATE TABLE or configuration says otherwise): "
                f"{', '.join(unknown)}"))

    def _ddl(self, d: dict[str, Any], query: str, kw: str) -> None:
        if kw in _DDL_WORDS:
            self.engines.observe_ddl(d.get("db") or None, query)

    def _end(self, ev: Event) -> Iterator[Transaction | XaMarker]:
        g = self.group
        assert g is not None
        self.group = None
        code = ev.type_code
        d = ev.data
        end = ev.end_pos
        if not g.begun and g.pos != ev.pos and self._is_trx_end(ev):
            # A GTID group (or a pre-statement group) must open a transaction with BEGIN / XA
            # START (MariaDB: a non-standalone GTID) before Xid, COMMIT, ROLLBACK or XA_prepare
            # can end it (rpl_trx_boundary_parser.cc: the GTID state takes BEGIN or a DDL).
            what = ev.type if code in END_EVENTS else query_keyword(d.get("query") or "")
            self.findings.append(Finding(
                F.INVALID_TRANSITION, F.ERROR, ev.file, ev.pos,
                {"from": "START", "to": "END", "event": what},
                f"unable to change boundary parser from Start Transaction to End "
                f"Transaction: {what} without BEGIN / XA START in the group at {g.pos}"))
            self.incomplete.append(self._txn(g, ROLLED_BACK, DML, what, ev, end))
            return
        if code in ROWS_EVENTS:  # implicit autocommit group of an old server (see _classify)
            yield self._txn(g, COMMITTED, DML, "STMT_END", ev, end)
            return
        if code == E.XID:
            txn = self._txn(g, COMMITTED, DML, "XID", ev, end)
            txn.xid = d.get("xid")
            self.engines.observe_group(g.tables, all_transactional=True)
            yield txn
            return
        if code == E.XA_PREPARE:
            xid = xid_of_event(d.get("xid")) or g.xa_xid
            txn = self._txn(g, XA_PREPARED, XA, "XA_PREPARE", ev, end)
            txn.xa_xid = xid
            if d.get("one_phase"):
                txn.status = XA_COMMITTED
                txn.one_phase = True
                txn.prepare = txn.part
            yield txn
            return
        query = d.get("query") or ""
        kw = query_keyword(query)
        if kw == "COMMIT":
            txn = self._txn(g, COMMITTED, DML, "COMMIT", ev, end)
            flags = g.mariadb_flags
            self.engines.observe_group(g.tables, all_transactional=flags is not None and bool(
                flags & MARIADB_TRANSACTIONAL))
            yield txn
            return
        if kw == "ROLLBACK":
            txn = self._txn(g, ROLLED_BACK, DML, "ROLLBACK", ev, end)
            undo_changes(txn.changes)
            # Statement-format changes (no rows) to non-transactional tables happened too.
            txn.nontransactional = any(c.applied for c in txn.changes) or any(
                self.engines.is_transactional(t) is False for t in g.tables)
            self._assumed_engines(g, ev)
            yield txn
            return
        if kw in ("XA COMMIT", "XA ROLLBACK"):
            parsed = parse_xa_statement(query)
            xid = parsed[1] if parsed else None
            if xid is None and g.mariadb_flags is not None:
                xid = xid_of_event(None)
            if xid is None:
                self.findings.append(Finding(F.DECODE_ERROR, F.ERROR, ev.file, ev.pos,
                                             {"query": query[:200]},
                                             "cannot read the XID of an XA statement"))
                return
            if parsed and parsed[2]:  # XA COMMIT ... ONE PHASE logged as a statement
                txn = self._txn(g, XA_COMMITTED, XA, kw.replace(" ", "_"), ev, end)
                txn.xa_xid = xid
                txn.one_phase = True
                txn.prepare = txn.part
                yield txn
                return
            part = self._part(g, ev, end)
            yield XaMarker(xid, kw == "XA COMMIT", part, kw.replace(" ", "_"), g.server_id)
            return
        # A statement: DDL, or statement-format DML (self-contained or ending its group).
        kind = DDL if kw in _DDL_WORDS else STATEMENT
        self._ddl(d, query, kw)
        txn = self._txn(g, COMMITTED, kind, kw or E(code).name, ev, end)
        if query:
            self._statement(g, d, query)
        txn.statements = g.statements
        txn.statement_context = g.contexts
        yield txn

    # -- building ------------------------------------------------------------------------

    def _part(self, g: _Group, ev: Event | None, end: int | None) -> Part:
        return Part(g.file, g.seq, g.pos, end if end is not None else g.pos, g.gtid,
                    ev.timestamp if ev is not None else None, g.commit_ts_us)

    def _txn(self, g: _Group, status: str, kind: str, end_event: str, ev: Event | None,
             end: int | None) -> Transaction:
        if kind == DML and not _count(g) and g.statements and not g.begun:
            # statements without BEGIN (old servers' pre-statement groups): not a DML group
            kind = STATEMENT if not any(query_keyword(s) in _DDL_WORDS for s in g.statements) \
                else DDL
        txn = Transaction(kind, status, self._part(g, ev, end), None, end_event, None,
                          g.xa_xid, False, _changes(g), g.statements, False, g.server_id)
        txn.statement_context = g.contexts
        return txn

    def _spill(self, g: _Group) -> None:
        if g.spill is None:
            g.spill = SpilledChanges(g.changes, self.spill_dir, f"{g.file}:{g.pos}")
        g.changes = g.spill.spill_tail()
        g.held = 0
