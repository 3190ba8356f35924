"""Records built from decoded transactions, one per table row: the record kinds a decode task
emits (``CHANGE``, ``TXN``, ``XA_PREPARE``, ...), a row change's record
(:func:`change_record`, :func:`change_tuple`) and a transaction's (:func:`txn_record`), the
statement texts they carry, and the DDL and table layouts a file's survey records
(:func:`ddl_events`, :func:`layout_record`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

import orjson

from ..binlog.constants import EventType as E
from ..binlog.errors import BinlogError
from ..binlog.reader import BinlogReader
from ..binlog.render import _default as _render_default
from ..txn.boundary import query_keyword
from ..txn.model import RowChange, Transaction

# record kinds
CHANGE = "change"


TXN = "txn"


XA_PREPARE = "xa_prepare"  # a prepare group: metadata + its changes as a JSON state


XA_END = "xa_end"  # an XA COMMIT / ROLLBACK group (marker)


# XAs a decode task decided itself, their PREPARE and COMMIT/ROLLBACK both in its range: the
# decisions and the WRITTEN / TYPED records of the data files it wrote for them, which the
# driver adds only if its own pairing decided the same (extract.decode_range)
XA_LOCAL = "xa_local"


FINDING = "finding"


RANGE = "range"  # per-range summary (events, timestamps, GTIDs, errors)


FACT = "fact"  # what validation needs of the range (txn.streamfacts), for stream_facts


STREAM_FACTS = "stream_facts"


STATEMENT = "statement"  # an Annotate_rows / Rows_query text, once (file, pos)


# A multi-row INSERT's text is logged once and produces thousands of row changes: row_changes
# keeps the first STATEMENT_INLINE characters of it (and statement_pos); the `statements`
# table keeps the whole text once.
STATEMENT_INLINE = 1024


_OPTS = orjson.OPT_PASSTHROUGH_SUBCLASS


def _json(v: Any) -> str | None:
    """JSON text of a row image, rendered exactly as ``binlake decode --rows`` does."""
    if v is None:
        return None
    return orjson.dumps(v, _render_default, _OPTS).decode()


def _pk(change: RowChange, pk: list[str] | None) -> str | None:
    if not pk:
        return None
    img = change.after if change.after is not None else change.before
    if img is None:
        return None
    try:
        if len(pk) == 1:  # (the usual key: no comprehension)
            k = pk[0]
            return _dumps({k: img[k]}, _render_default, _OPTS).decode()
        return _dumps({k: img[k] for k in pk}, _render_default, _OPTS).decode()
    except KeyError:  # a MINIMAL image without the key columns
        return None


def change_record(t: Transaction, c: RowChange, pk: list[str] | None,
                  txn_id: str | None = None, commit_us: int | None = None) -> dict[str, Any]:
    order = c.order or (None, None, None)
    return {
        "txn_id": txn_id or t.id, "gtid": t.gtid, "order_seq": order[0],
        "order_pos": order[1], "order_idx": order[2],
        "commit_us": commit_us if commit_us is not None else _commit_us(t), "db": c.db,
        "tbl": c.table, "op": c.op, "before": _json(c.before), "after": _json(c.after),
        "pk": _pk(c, pk), "statement": _inline(c.statement), "statement_pos": c.statement_pos,
        "file": c.file, "pos": c.pos, "row": c.row, "payload_index": c.payload_index,
        "statement_payload_index": c.statement_payload_index,
    }


def change_tuple(c: RowChange, gtid: str | None, txn_id: str, commit_us: int | None,
                 pk: list[str] | None, statement: str | bytes | None) -> tuple[Any, ...]:
    """The hot path of :func:`change_record`: the values in CHANGE_FIELDS order.
    ``statement``: the change's statement as :func:`_statement_value` gives it (inline),
    which the rows of one statement share."""
    order = c.order or _NO_ORDER
    before, after = c.before, c.after
    return (txn_id, gtid, order[0], order[1], order[2], commit_us, c.db, c.table, c.op,
            None if before is None else _dumps(before, _render_default, _OPTS).decode(),
            None if after is None else _dumps(after, _render_default, _OPTS).decode(),
            _pk(c, pk) if pk else None, statement, c.statement_pos, c.file, c.pos, c.row,
            c.payload_index, c.statement_payload_index)


_NO_ORDER = (None, None, None)


_dumps = orjson.dumps


_OPS = {"insert": 0, "update": 1, "delete": 2}  # op_counts' order


def _change_records(out: list[tuple[str, Any]], changes: Iterable[RowChange],
                    gtid: str | None, txn_id: str, commit_us: int | None,
                    pks: dict[tuple[str, str], list[str] | None],
                    utf8: dict[int, list[Any]] | None, counts: dict[str, dict[str, int]],
                    total: list[int]) -> int:
    """Append a CHANGE record for each change of ``changes`` that took effect, and count
    them in the same pass: per table in ``counts`` (as ``Transaction.row_counts``), per
    operation in ``total`` (as :func:`~binlake.txn.streamfacts.op_counts`).  Returns how
    many."""
    append = out.append
    per_table: dict[tuple[str, str], list[int]] = {}  # (db, table) -> per operation
    n = 0
    last_st: Any = None  # the rows of one statement come together: its value, once
    last_value: str | bytes | None = None
    for c in changes:
        if not c.applied:
            continue
        n += 1
        k = _OPS[c.op]
        total[k] += 1
        if not c.transactional:
            total[3 + k] += 1
        key = (c.db, c.table)
        t = per_table.get(key)
        if t is None:
            t = per_table[key] = [0, 0, 0]
        t[k] += 1
        st = c.statement
        if st is not last_st:
            last_st = st
            last_value = None if st is None else _statement_value(st, utf8, True)
        append((CHANGE, change_tuple(c, gtid, txn_id, commit_us, pks.get(key), last_value)))
    for (db, table), t in per_table.items():
        d = counts.setdefault(f"{db}.{table}", {"insert": 0, "update": 0, "delete": 0})
        d["insert"] += t[0]
        d["update"] += t[1]
        d["delete"] += t[2]
    return n


def _statement_value(text: str | None, utf8: dict[int, list[Any]] | None,
                     inline: bool) -> str | bytes | None:
    """A statement text as the tables take it (cut to STATEMENT_INLINE characters when
    ``inline``): as UTF-8 bytes when ``utf8`` (text id -> [text, its logged UTF-8 bytes,
    the cut's bytes or None], from the events' ``_utf8``) knows this very text object, else
    as text.  Arrow takes UTF-8 bytes as a string after checking them, without encoding
    the text again; a cut shared by the rows of one long statement is encoded once.  An
    ASCII text stays text: its characters are its UTF-8 already, which Arrow reads in place
    (about twice as fast as checking the bytes)."""
    if text is None:
        return None
    if text.isascii() and (not inline or len(text) <= STATEMENT_INLINE):
        return text
    if utf8:
        known = utf8.get(id(text))
        if known is not None and known[0] is text:
            if not inline or len(text) <= STATEMENT_INLINE:
                return cast(bytes, known[1])
            if known[2] is None:
                known[2] = cast(str, _inline(text)).encode()
            return cast(bytes, known[2])
    return _inline(text) if inline else text


def _inline(text: str | None) -> str | None:
    if text is None or len(text) <= STATEMENT_INLINE:
        return text
    return text[:STATEMENT_INLINE] + "\u2026"


def _commit_us(t: Transaction) -> int | None:
    if t.part.commit_ts_us is not None:
        return int(t.part.commit_ts_us)
    return int(t.part.timestamp) * 1_000_000 if t.part.timestamp is not None else None


def txn_record(t: Transaction, counts: dict[str, dict[str, int]] | None = None
               ) -> dict[str, Any]:
    """``counts``: ``t.row_counts()`` when the caller has them."""
    counts = t.row_counts() if counts is None else counts
    xa = t.xa_xid
    begin = t.prepare or t.part
    return {
        "txn_id": t.id, "gtid": t.gtid, "kind": t.kind, "status": t.status,
        "begin_file": begin.file, "begin_pos": begin.begin_pos, "end_file": t.part.file,
        "end_pos": t.part.end_pos, "commit_us": _commit_us(t), "end_event": t.end_event,
        "xid": t.xid, "xa_format_id": xa.format_id if xa else None,
        "xa_gtrid": xa.gtrid if xa else None, "xa_bqual": xa.bqual if xa else None,
        "one_phase": t.one_phase,
        "prepare_file": t.prepare.file if t.prepare else None,
        "prepare_pos": t.prepare.begin_pos if t.prepare else None,
        "prepare_gtid": t.prepare.gtid if t.prepare else None,
        "inserts": sum(v["insert"] for v in counts.values()),
        "updates": sum(v["update"] for v in counts.values()),
        "deletes": sum(v["delete"] for v in counts.values()),
        "tables": sorted(counts), "nontransactional": t.nontransactional,
        "statements": t.statements or None,
        "order_seq": t.part.seq, "order_pos": t.part.end_pos,
    }


DdlEvent = tuple[int, "str | None", str]  # (position, default database, statement)


DDL_WORDS = ("CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE")


def ddl_events(uri: str) -> list[DdlEvent]:
    """The DDL statements of a file, in order: only its Query events are decoded (row events
    are not).  A damaged file gives those before the damage (the decode of its ranges
    reports it).  Runs wherever the file is read (an executor, in the load job)."""
    out: list[DdlEvent] = []
    try:
        for ev in BinlogReader(uri, decode={E.QUERY, E.QUERY_COMPRESSED},
                               verify_checksums=False):
            _note_ddl(out, ev)
    except BinlogError:
        pass
    return out


def _note_ddl(out: list[DdlEvent], ev: Any) -> None:
    """Append ``ev`` to ``out`` when it is a Query event carrying a DDL statement."""
    q = ev.data.get("query")
    if q and query_keyword(q) in DDL_WORDS:
        out.append((ev.pos, ev.data.get("db") or None, q))


def layout_record(tm: Any, seq: int, pos: int) -> dict[str, Any]:
    """A layout record: the layout of a Table_map (columns, primary key, names or not) and
    where it was seen."""
    names = tm.column_names
    return {"db": tm.db, "tbl": tm.table, "columns": [c.describe() for c in tm.columns],
            "primary_key": [names[i] for i in tm.primary_key] if tm.primary_key else None,
            "has_names": tm.named, "signedness": tm.has_signedness, "seq": seq, "pos": pos}
