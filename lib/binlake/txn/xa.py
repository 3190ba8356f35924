"""XA transactions (WL#6860): an XA PREPARE is logged as its own group and its XA COMMIT or
XA ROLLBACK later, as another group, maybe in another file or another nightly run.

:class:`XaTracker` pairs them by XID.  It starts from the prepared XAs still pending after
earlier runs (``pending_in``) and ends with the ones still pending (``pending``), so nothing is
lost between runs; ``dump_pending``/``load_pending`` are the JSON form of that state.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from ..binlog.json_binary import JsonNumberText
from ..binlog.render import _default as _render_default
from . import findings as F
from .findings import Finding
from .model import (
    XA,
    XA_COMMITTED,
    XA_PREPARED,
    XA_ROLLED_BACK,
    Part,
    RowChange,
    Transaction,
    XaXid,
)
from .spill import undo_changes

# XA statement ids as the servers log them: X'hex' (MySQL, MariaDB), 'text', "text" or 0xhex,
# then optional bqual and formatID (sql/xa.cc, XID::serialize / MariaDB xid_t).
_LIT = r"""(?:X'(?P<{n}x>[0-9A-Fa-f]*)'|0x(?P<{n}h>[0-9A-Fa-f]+)|'(?P<{n}s>(?:[^'\\]|\\.|'')*)'|"(?P<{n}d>(?:[^"\\]|\\.|"")*)")"""
_XID_RE = re.compile(
    r"^\s*XA\s+(?P<verb>START|BEGIN|END|PREPARE|COMMIT|ROLLBACK|RECOVER)\s*"
    + _LIT.format(n="g")
    + r"(?:\s*,\s*" + _LIT.format(n="b") + r")?"
    + r"(?:\s*,\s*(?P<fmt>-?\d+))?"
    + r"(?P<rest>.*)$", re.I | re.S)

_ESC = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a"}


def _unescape(s: str, quote: str) -> bytes:
    out = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            out.append(_ESC.get(s[i + 1], s[i + 1]))
            i += 2
            continue
        if c == quote and i + 1 < len(s) and s[i + 1] == quote:
            out.append(quote)
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out).encode("utf-8", "surrogateescape")


def _lit(m: re.Match[str], n: str) -> str | None:
    if m.group(n + "x") is not None:
        return m.group(n + "x").lower()
    if m.group(n + "h") is not None:
        return m.group(n + "h").lower()
    if m.group(n + "s") is not None:
        return _unescape(m.group(n + "s"), "'").hex()
    if m.group(n + "d") is not None:
        return _unescape(m.group(n + "d"), '"').hex()
    return None


def parse_xa_statement(query: str) -> tuple[str, XaXid, bool] | None:
    """('START'|'END'|'PREPARE'|'COMMIT'|'ROLLBACK', xid, one_phase) of an XA statement."""
    m = _XID_RE.match(query)
    if m is None:
        return None
    gtrid = _lit(m, "g")
    if gtrid is None:
        return None
    bqual = _lit(m, "b") or ""
    fmt = int(m.group("fmt")) if m.group("fmt") else 1
    verb = m.group("verb").upper()
    one_phase = bool(re.search(r"\bONE\s+PHASE\b", m.group("rest") or "", re.I))
    return ("START" if verb == "BEGIN" else verb), XaXid(fmt, gtrid, bqual), one_phase


def xid_of_event(d: dict[str, Any] | None) -> XaXid | None:
    """The XaXid of an XA_PREPARE event's or MariaDB GTID event's ``xid`` field."""
    if not d:
        return None
    return XaXid.from_dict(d)


class XaTracker:
    def __init__(self, pending_in: list[Transaction] | None = None) -> None:
        self.pending: dict[XaXid, Transaction] = {}
        for t in pending_in or []:
            if t.xa_xid is not None:
                self.pending[t.xa_xid] = t
        self.findings: list[Finding] = []
        self.completed_xids: dict[XaXid, Part] = {}  # decided in this run, for duplicates

    def prepared(self, txn: Transaction) -> None:
        assert txn.xa_xid is not None
        if txn.xa_xid in self.pending:
            old = self.pending[txn.xa_xid]
            self.findings.append(Finding(
                F.XA_DUPLICATE_PREPARE, F.ERROR, txn.part.file, txn.part.begin_pos,
                {"xid": txn.xa_xid.to_dict(), "first": old.part.to_dict()},
                f"XA {txn.xa_xid} prepared again while its earlier PREPARE at "
                f"{old.part.file}:{old.part.begin_pos} is still pending"))
        txn.status = XA_PREPARED
        self.pending[txn.xa_xid] = txn

    def completed(self, xid: XaXid, commit: bool, part: Part, *, end_event: str,
                  server_id: int | None) -> Transaction:
        """The transaction an XA COMMIT / XA ROLLBACK group decides (its changes take effect
        at this group's position when committed, never when rolled back)."""
        prep = self.pending.pop(xid, None)
        earlier = self.completed_xids.get(xid)
        self.completed_xids[xid] = part
        if prep is None and earlier is not None:
            self.findings.append(Finding(
                F.DUPLICATE_XID, F.ERROR, part.file, part.begin_pos,
                {"xid": xid.to_dict(), "first": earlier.to_dict()},
                f"XA {'COMMIT' if commit else 'ROLLBACK'} of {xid}, already decided at "
                f"{earlier.file}:{earlier.begin_pos} and not prepared again since"))
        elif prep is None:
            kind = F.XA_ORPHAN_COMMIT if commit else F.XA_ORPHAN_ROLLBACK
            self.findings.append(Finding(
                kind, F.WARNING, part.file, part.begin_pos, {"xid": xid.to_dict()},
                f"XA {'COMMIT' if commit else 'ROLLBACK'} of {xid} without its PREPARE "
                "(prepared before the archive starts, or lost)"))
        if prep is None:
            return Transaction(XA, XA_COMMITTED if commit else XA_ROLLED_BACK, part, None,
                               end_event, None, xid, False, [], [], False, server_id)
        prep.status = XA_COMMITTED if commit else XA_ROLLED_BACK
        prep.prepare = prep.part
        prep.part = part
        prep.end_event = end_event
        if not commit:
            undo_changes(prep.changes)  # XA ROLLBACK undoes what a rollback can undo
        return prep


def dump_pending(pending: list[Transaction]) -> str:
    """JSON text of the still-prepared XAs (with their row changes): the next run's input.

    Version 2: the row images are written as the decoder's JSON renders them
    (:mod:`binlake.binlog.render`), so a DECIMAL inside a MySQL JSON document stays a bare
    number with its digits, and :func:`load_pending` keeps every number with a fraction or
    an exponent as written: the decided XA's rows render as they would have without the
    state.  (Version 1, ``json.dumps``, wrote such a DECIMAL as a string.)"""
    return orjson.dumps({"version": 2, "pending": [_to_state(t) for t in pending]},
                        _render_default, orjson.OPT_PASSTHROUGH_SUBCLASS).decode()


def load_pending(text: str) -> list[Transaction]:
    if not text.strip():
        return []
    # numbers with a fraction or exponent as their text (rendered back bare, digits kept)
    data = json.loads(text, parse_float=JsonNumberText)
    version = data.get("version", 1)
    if version == 1:  # written with json.dumps: its floats are Python's repr of floats
        data = json.loads(text)
    elif version != 2:
        raise ValueError(f"unsupported pending-XA state version {version!r}")
    return [_from_state(d) for d in data.get("pending", [])]


def detached(t: Transaction) -> Transaction:
    """A prepared XA ``t`` as :func:`load_pending` gives back what :func:`dump_pending` made
    of it, without the JSON: a new Transaction and new RowChanges (their row images shared:
    nothing changes them), so that deciding it leaves ``t`` as it was.  The images render
    as the state's do (a float's text, a JSON DECIMAL's digits)."""
    changes = [RowChange(c.db, c.table, c.op, c.before, c.after, c.file, c.pos, c.row,
                         c.statement, c.applied, c.order, c.transactional, c.statement_pos,
                         c.payload_index, c.statement_payload_index) for c in t.changes]
    p = t.part
    out = Transaction(XA, XA_PREPARED, Part(p.file, p.seq, p.begin_pos, p.end_pos, p.gtid,
                                            p.timestamp, p.commit_ts_us),
                      None, t.end_event, None, t.xa_xid, False, changes, list(t.statements),
                      bool(t.nontransactional), t.server_id)
    out.statement_context = list(t.statement_context)
    return out


def _to_state(t: Transaction) -> dict[str, Any]:
    return {
        "part": t.part.to_dict(),
        "xa_xid": t.xa_xid.to_dict() if t.xa_xid else None,
        "end_event": t.end_event,
        "changes": [c.to_dict() for c in t.changes],
        "statements": t.statements,
        "statement_context": t.statement_context,
        "nontransactional": t.nontransactional,
        "server_id": t.server_id,
    }


def _from_state(d: dict[str, Any]) -> Transaction:
    changes = [RowChange.from_dict(c) for c in d.get("changes", [])]
    txn = Transaction(XA, XA_PREPARED, Part.from_dict(d["part"]), None, d.get("end_event", ""),
                      None, XaXid.from_dict(d["xa_xid"]) if d.get("xa_xid") else None, False,
                      changes, list(d.get("statements", [])), bool(d.get("nontransactional")),
                      d.get("server_id"))
    txn.statement_context = list(d.get("statement_context", []))
    return txn
