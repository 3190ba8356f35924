"""The pending-XA state (``txn.xa.dump_pending`` / ``load_pending``) and the decode task's
local XA decision (``lake.xa.decide_records`` with the prepared XA in hand).

A prepared XA's rows reach the lake from its state when its XA COMMIT comes in another range
or run; they must render exactly as they would have straight from the decoder.  The row
images here are real ones: MySQL 9.0.1 JSON documents holding DECIMALs (``9.00``: its digits
are the value) from rust_mysql_common's ``json-opaque.binlog``, and VECTOR columns (lists of
single-precision floats) from its ``vector.binlog``.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from binlake.binlog.json_binary import JsonNumberText
from binlake.lake.records import CHANGE, TXN, _json
from binlake.lake.transport import _CHANGE_NAMES
from binlake.lake.xa import decide_records
from binlake.txn.build import build_transactions
from binlake.txn.model import XA, XA_PREPARED, Part, RowChange, Transaction, XaXid
from binlake.txn.xa import detached, dump_pending, load_pending

from .corpus import CORPUS, require_corpus

RMC = "libs/rust_mysql_common"


def _changes(name: str) -> list[RowChange]:
    require_corpus()
    built = build_transactions([str(CORPUS / RMC / name)])
    return [c for t in built.transactions for c in t.changes]


def _has_decimal(v: Any) -> bool:
    if isinstance(v, JsonNumberText):
        return True
    if isinstance(v, dict):
        return any(_has_decimal(x) for x in v.values())
    if isinstance(v, list):
        return any(_has_decimal(x) for x in v)
    return False


def _prepared(changes: list[RowChange]) -> Transaction:
    """The changes as one prepared XA (what a decode task holds at its XA PREPARE)."""
    return Transaction(XA, XA_PREPARED, Part("mysql-bin.000007", 7, 1000, 5000, "u:9", 1700000000),
                       None, "XA_PREPARE", None, XaXid(1, "6162", "6364"), False, changes,
                       ["INSERT INTO t VALUES (...)"], False, 42)


@pytest.fixture(scope="module")
def real_changes() -> list[RowChange]:
    changes = _changes("json-opaque.binlog") + _changes("vector.binlog")
    # the premise: DECIMALs inside JSON documents, and floats, are in these images
    assert sum(_has_decimal(c.after) for c in changes) == 2
    assert any(isinstance(v, float) for c in changes for col in (c.after or {}).values()
               if isinstance(col, list) for v in col)
    return changes


def test_state_renders_row_images_as_the_decoder_does(real_changes: list[RowChange]) -> None:
    txn = _prepared(real_changes)
    (back,) = load_pending(dump_pending([txn]))
    assert len(back.changes) == len(real_changes)
    for c, b in zip(real_changes, back.changes):
        assert (_json(b.before), _json(b.after)) == (_json(c.before), _json(c.after))
        assert (b.db, b.table, b.op, b.file, b.pos, b.row) == (c.db, c.table, c.op, c.file,
                                                                c.pos, c.row)
    # a JSON DECIMAL stays a number with its digits ("9.00", not 9.0 and not "9.00")
    rendered = [_json(b.after) for c, b in zip(real_changes, back.changes)
                if _has_decimal(c.after)]
    assert len(rendered) == 2
    assert any('"e":9.00' in r for r in rendered), rendered
    assert any('"d":123.456' in r for r in rendered), rendered
    # (version 1's json.dumps wrote it as a string: what this test guards against)
    old = json.dumps({"version": 1, "pending": [{
        "part": txn.part.to_dict(), "xa_xid": txn.xa_xid.to_dict() if txn.xa_xid else None,
        "end_event": txn.end_event, "changes": [c.to_dict() for c in txn.changes],
        "statements": txn.statements, "statement_context": [], "nontransactional": False,
        "server_id": 42}]}, ensure_ascii=False, separators=(",", ":"))
    (v1,) = load_pending(old)
    assert any('"e":"9.00"' in _json(b.after) for b in v1.changes if b.after)
    # the state itself is stable: written again, the same text
    assert dump_pending([back]) == dump_pending([txn])


def test_version_1_state_still_loads() -> None:
    text = ('{"version":1,"pending":[{"part":{"file":"b.000002","seq":2,"begin_pos":4,'
            '"end_pos":90,"gtid":"0-1-5","timestamp":1700000000,"commit_ts_us":null},'
            '"xa_xid":{"format_id":1,"gtrid":"78","bqual":""},"end_event":"XA_PREPARE",'
            '"changes":[{"db":"d","table":"t","op":"insert","before":null,'
            '"after":{"id":1,"f":0.5,"big":1e+16},"file":"b.000002","pos":40,"row":0,'
            '"statement":null,"applied":true,"order":null,"transactional":true,'
            '"statement_pos":null}],"statements":[],"statement_context":[],'
            '"nontransactional":false,"server_id":1}]}')
    (t,) = load_pending(text)
    assert t.status == XA_PREPARED and t.part.gtid == "0-1-5" and t.xa_xid == XaXid(1, "78", "")
    assert t.changes[0].after == {"id": 1, "f": 0.5, "big": 1e16}
    assert all(type(v) in (int, float) for v in t.changes[0].after.values())
    assert load_pending("") == [] and load_pending("  ") == []
    with pytest.raises(ValueError, match="version 3"):
        load_pending('{"version":3,"pending":[]}')


def _decided(prep: dict[str, Any], commit: bool, prepared: Transaction | None
             ) -> list[tuple[str, Any]]:
    res = {"commit": commit, "end_event": "XA_COMMIT" if commit else "XA_ROLLBACK",
           "part": {"file": "mysql-bin.000008", "seq": 8, "begin_pos": 300, "end_pos": 420,
                    "gtid": "u:11", "timestamp": 1700000100, "commit_ts_us": None}}
    return list(decide_records(prep, {(prep["prepare_file"], prep["prepare_pos"]): res},
                               prepared))


@pytest.mark.parametrize("commit", [True, False])
def test_local_decision_equals_the_state_s(real_changes: list[RowChange], commit: bool) -> None:
    """The decode task decides an XA from the prepared XA it holds; the driver's decide task
    from the stored state: the same records, and the held XA is left as it was."""
    changes = [RowChange(c.db, c.table, c.op, c.before, c.after, c.file, c.pos, c.row,
                         c.statement, True, None, k % 3 != 0, 100 + k)
               for k, c in enumerate(real_changes)]  # some non-transactional: a ROLLBACK keeps them
    txn = _prepared(changes)
    tables = sorted({f"{c.db}.{c.table}" for c in changes})
    prep = {"prepare_file": txn.part.file, "prepare_pos": txn.part.begin_pos,
            "state": dump_pending([txn]),
            "pks": orjson.dumps({t: (["id"] if k == 0 else None)
                                 for k, t in enumerate(tables)}).decode()}
    from_state = _decided(prep, commit, None)
    held = _decided(prep, commit, txn)
    assert held == from_state
    kinds = [k for k, _ in held]
    assert kinds[0] == TXN
    applied = len(changes) if commit else sum(1 for c in changes if not c.transactional)
    assert kinds.count(CHANGE) == applied > 0
    rows = [dict(zip(_CHANGE_NAMES, r)) for k, r in held if k == CHANGE]
    assert {r["order_seq"] for r in rows} == {8} and {r["order_pos"] for r in rows} == {420}
    assert [r["after"] for r in rows] == [_json(c.after) for c in changes
                                           if commit or not c.transactional]
    # the held XA: untouched (no order, every change applied, still prepared)
    assert txn.status == XA_PREPARED and txn.part.file == "mysql-bin.000007"
    assert all(c.applied and c.order is None for c in txn.changes)


def test_detached_is_a_copy(real_changes: list[RowChange]) -> None:
    txn = _prepared(real_changes)
    d = detached(txn)
    assert d is not txn and d.part == txn.part and d.part is not txn.part
    assert all(a is not b and a.to_dict() == b.to_dict() for a, b in zip(d.changes, txn.changes))
    d.changes[0].applied = False
    d.statements.append("x")
    assert txn.changes[0].applied and txn.statements == ["INSERT INTO t VALUES (...)"]
