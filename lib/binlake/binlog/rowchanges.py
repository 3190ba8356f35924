"""Row changes with their context, for ``binlake decode --rows``.

Attaches to each row change of a rows event the GTID of its group (MySQL GTID / GTID_TAGGED,
MariaDB GTID) and the statement that produced it (MariaDB Annotate_rows, MySQL Rows_query:
it applies to the rows events that follow it up to the one with the statement-end flag).
This is presentation context only; transactions are the transaction layer's business.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from .constants import EventType as E
from .event import Event
from .events.rows import ROWS_EVENTS, op_of

_GTID_EVENTS = frozenset({E.GTID, E.ANONYMOUS_GTID, E.GTID_TAGGED, E.MARIADB_GTID})
_STATEMENT_EVENTS = frozenset({E.ANNOTATE_ROWS, E.ROWS_QUERY})
_RESET_STATEMENT = frozenset({E.XID, E.XA_PREPARE})

# The event types whose bodies row changes need: give this to BinlogReader(decode=...) to skip
# decoding everything else (Query, Xid, ... bodies are not looked at).
DECODE_FOR_ROWS = frozenset({*ROWS_EVENTS, E.TABLE_MAP, *_GTID_EVENTS, *_STATEMENT_EVENTS,
                             E.TRANSACTION_PAYLOAD})


def iter_row_changes(events: Iterable[Event], *, statement_every_row: bool = False
                     ) -> Iterator[dict[str, Any]]:
    """Yield one JSON-ready dict per row change.

    The statement text is large for multi-row INSERTs (a 1,000-row statement is logged once
    and produces 1,000 row changes), so by default it is given on the first row change it
    produced and every row carries ``statement_pos``, the position of the event holding the
    text; ``statement_every_row`` repeats the text on every row.
    """
    gtid: str | None = None
    statement: str | None = None
    statement_pos: int | None = None
    statement_pidx: int | None = None  # its index inside a Transaction_payload
    statement_emitted = False
    for ev in events:
        code = ev.type_code
        if code in ROWS_EVENTS:
            data = ev.data
            rows = data.get("rows")
            if rows is None:
                continue
            file = ev.file
            pos = ev.pos
            pidx = ev.payload_index
            db = data["db"]
            table = data["table"]
            op = op_of(code)
            for i, (before, after) in enumerate(rows):
                d = {"file": file, "pos": pos, "row": i, "db": db, "table": table, "op": op,
                     "before": before, "after": after, "gtid": gtid}
                if pidx is not None:
                    d["payload_index"] = pidx
                if statement is not None:
                    d["statement_pos"] = statement_pos
                    if statement_pidx is not None:
                        d["statement_payload_index"] = statement_pidx
                    if statement_every_row or not statement_emitted:
                        d["statement"] = statement
                        statement_emitted = True
                yield d
            if data.get("stmt_end"):
                statement = None
                statement_pos = None
        elif code in _STATEMENT_EVENTS:
            q = ev.data.get("query")
            if q is not None:
                statement = q
                statement_pos = ev.pos
                statement_pidx = ev.payload_index
                statement_emitted = False
        elif code in _GTID_EVENTS:
            gtid = ev.data.get("gtid")
            statement = None
        elif code in _RESET_STATEMENT:
            statement = None
