"""Where groups start in a binlog file without GTID events (MySQL 5.5 and older, 5.6 with
``gtid_mode=OFF``, MariaDB 5.x): the event-by-event boundary parser of WL#4162 (MySQL
``rpl_trx_boundary_parser.cc``), run by the header scan of ``txn.scan`` until the first GTID.

A group starts at a ``BEGIN`` (or ``XA START``) query, at a self-contained statement outside a
transaction (DDL, a statement-logged DML on a non-transactional table), at the first Intvar /
Rand / User_var event before such a statement, at a Begin_load_query / Create_file event that
opens a LOAD DATA outside a transaction, and at a Table_map outside a transaction (old servers
logged row events on non-transactional tables without BEGIN; such a statement ends at the
rows event carrying STMT_END_F).
"""

from __future__ import annotations

import struct

from ..binlog.constants import EventType
from .scanbase import _ScanBase
from .scaninput import ScanStats

E = EventType

_U16 = struct.Struct("<H")

# Event classes of the GTID-less boundary parser (WL#4162).
_C_IGNORE, _C_BEGIN, _C_END, _C_STMT, _C_PRE, _C_LOAD, _C_MAP, _C_ROWS, _C_INSIDE = range(9)
# Parser states: outside a group; waiting for the statement that ends a group opened by
# pre-statement events (Intvar/Rand/User_var) or a LOAD DATA block; inside BEGIN ... COMMIT;
# inside a rows statement logged without BEGIN (ends at STMT_END_F).
_S_NONE, _S_WAIT, _S_DML, _S_ROWS = range(4)

_ROWS_EVENTS = frozenset({E.PRE_GA_WRITE_ROWS, E.PRE_GA_UPDATE_ROWS, E.PRE_GA_DELETE_ROWS,
                          E.WRITE_ROWS_V1, E.UPDATE_ROWS_V1, E.DELETE_ROWS_V1, E.WRITE_ROWS,
                          E.UPDATE_ROWS, E.DELETE_ROWS, E.PARTIAL_UPDATE_ROWS,
                          E.WRITE_ROWS_COMPRESSED_V1, E.UPDATE_ROWS_COMPRESSED_V1,
                          E.DELETE_ROWS_COMPRESSED_V1, E.WRITE_ROWS_COMPRESSED,
                          E.UPDATE_ROWS_COMPRESSED, E.DELETE_ROWS_COMPRESSED})
_STMT_END_F = 0x1
_CLASS: dict[int, int] = {
    **{t: _C_ROWS for t in _ROWS_EVENTS},
    E.TABLE_MAP: _C_MAP,
    E.ROWS_QUERY: _C_MAP,  # precedes the Table_maps of its statement
    E.ANNOTATE_ROWS: _C_MAP,
    E.INTVAR: _C_PRE, E.RAND: _C_PRE, E.USER_VAR: _C_PRE,
    E.BEGIN_LOAD_QUERY: _C_LOAD, E.CREATE_FILE: _C_LOAD,
    E.APPEND_BLOCK: _C_INSIDE,
    E.EXECUTE_LOAD_QUERY: _C_STMT, E.EXEC_LOAD: _C_STMT, E.DELETE_FILE: _C_STMT,
    E.LOAD: _C_STMT, E.NEW_LOAD: _C_STMT, E.QUERY_COMPRESSED: _C_STMT,
    E.TRANSACTION_PAYLOAD: _C_STMT,  # a whole transaction (MySQL 8 has GTIDs anyway)
    E.XID: _C_END, E.XA_PREPARE: _C_END,
    E.TRANSACTION_CONTEXT: _C_INSIDE, E.VIEW_CHANGE: _C_INSIDE,
}


class _GtidLessGroups(_ScanBase):
    """The WL#4162 parser's state (``state``, one of ``_S_*``) and its steps."""

    def __init__(self, uri: str, *, verify_checksums: bool, stats: ScanStats | None) -> None:
        super().__init__(uri, verify_checksums=verify_checksums, stats=stats)
        self.state = _S_NONE

    def _classic(self, pos: int, type_code: int, size: int) -> None:
        cls = _CLASS.get(type_code, _C_IGNORE)
        if type_code == E.QUERY:
            cls = self._query_class(pos, size)
        elif cls == _C_ROWS and self.state in (_S_NONE, _S_ROWS):
            if self._stmt_end(pos, size):
                self.state = _S_NONE
            else:
                self.state = _S_ROWS
            return
        if cls in (_C_IGNORE, _C_ROWS):
            return
        state = self.state
        if state == _S_NONE:
            if cls == _C_BEGIN:
                self.state = _S_DML
            elif cls in (_C_PRE, _C_LOAD):
                self.state = _S_WAIT
            elif cls == _C_MAP:
                self.state = _S_ROWS
            elif cls != _C_STMT:
                return  # an END or INSIDE event outside a group: it stays where it is
            if self._start_ok(pos, size):
                self._mark(pos)
        elif state == _S_WAIT:
            if cls in (_C_STMT, _C_END):
                self.state = _S_NONE
            elif cls == _C_BEGIN:
                self.state = _S_DML
        elif state == _S_DML:
            if cls == _C_END:
                self.state = _S_NONE
            elif cls == _C_BEGIN and self._start_ok(pos, size):
                self._mark(pos)  # the transaction before never ended (a crash)
        elif cls == _C_END:  # _S_ROWS: only a COMMIT or the STMT_END_F rows event ends it
            self.state = _S_NONE

    def _query_class(self, pos: int, size: int) -> int:
        fde = self.fde
        assert fde is not None
        inp = self.inp
        hl = self.hl
        post = fde.post_header_len(E.QUERY, 13)
        body_end = size - self.crc_len
        if body_end < hl + post or inp.fill(pos, hl + post) < hl + post:
            return _C_STMT  # a damaged event: the reader reports it
        i = pos - inp.base + hl
        buf = inp.buf
        db_len = buf[i + 8]
        status_len = _U16.unpack_from(buf, i + 11)[0] if post >= 13 else 0
        start = hl + post + status_len + db_len + 1  # the query text, from the event start
        stop = min(body_end, start + 16)  # enough to tell BEGIN/COMMIT/XA ... apart
        if stop <= start or inp.fill(pos, stop) < stop:
            return _C_STMT
        i = pos - inp.base
        head = inp.buf[i + start:i + stop].strip().upper()
        if head == b"BEGIN" or head.startswith(b"XA START"):
            return _C_BEGIN
        if head in (b"COMMIT", b"ROLLBACK"):
            return _C_END
        if head.startswith((b"XA COMMIT", b"XA ROLLBACK")) and self.state == _S_DML:
            return _C_END
        return _C_STMT

    def _stmt_end(self, pos: int, size: int) -> bool:
        fde = self.fde
        assert fde is not None
        at = self.hl + fde.table_id_size
        inp = self.inp
        if inp.fill(pos, at + 2) < at + 2 or size < at + 2:
            return False
        return bool(_U16.unpack_from(inp.buf, pos - inp.base + at)[0] & _STMT_END_F)
