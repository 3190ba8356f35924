"""The transaction layer on real binlogs of the shared corpus.

The binlog_recovery files are MySQL 8.0.30 binlogs hand-edited by the MySQL team for crash
recovery tests; each file's name says what was broken (an orphan COMMIT, a PREPARE without
its XA START, a duplicate XID...), which is what the boundary parser and the XA pairing must
report.  The other corpus files are well-formed and must give no error-severity finding
except where the file itself is cut short.
"""

from __future__ import annotations

import logging

import pytest

from binlake.txn import findings as F
from binlake.txn.build import build_transactions
from binlake.txn.model import XA_COMMITTED, XA_PREPARED, XA_ROLLED_BACK
from binlake.txn.xa import dump_pending, load_pending, parse_xa_statement

from .corpus import CORPUS, corpus_files, require_corpus

RECOVERY = "mysql-8.0/std_data/binlog_recovery/"

DAMAGED = {F.CHECKSUM_MISMATCH, F.DAMAGED_TRANSACTION}
# file -> the error-severity finding kinds the transaction pass must give (from the name)
EXPECTED = {
    "ddl_in_transaction": {F.INVALID_TRANSITION},  # a GTID inside an open transaction
    "orphan_begin_start": {F.INVALID_TRANSITION},  # BEGIN never ended, a new group starts
    "orphan_commit": {F.INVALID_TRANSITION},  # COMMIT with no BEGIN
    "orphan_rollback": {F.INVALID_TRANSITION},  # ROLLBACK with no BEGIN
    "orphan_xid": {F.INVALID_TRANSITION},  # Xid with no BEGIN
    "orphan_xa_prepare": {F.INVALID_TRANSITION},  # XA_prepare with no XA START
    "orphan_xa_commit": {F.INVALID_TRANSITION},  # and an XA COMMIT without PREPARE (warning)
    "orphan_xa_rollback": {F.INVALID_TRANSITION},
    # an event edited without a CRC update: its transaction is not built (damaged), and the
    # duplicate values the edits made are the stream checks' business (test_checks)
    "duplicate_xid_xa_prepare": DAMAGED,  # the second XA_PREPARE
    "duplicate_xid": DAMAGED,  # the second Xid
    "duplicate_xid_ddl": DAMAGED,  # the DDL Query
    # an XA COMMIT / ROLLBACK of an XID already committed in this file and not prepared again
    "duplicate_xid_xa_commit": {F.DUPLICATE_XID},
    "duplicate_xid_xa_rollback": {F.DUPLICATE_XID},
    "malformed_xid_xa_commit": DAMAGED,  # the XA COMMIT Query
    "malformed_xid_xa_rollback": DAMAGED,  # the XA ROLLBACK Query
}
EXPECTED_WARNINGS = {
    "orphan_xa_commit": {F.XA_ORPHAN_COMMIT},
    "orphan_xa_rollback": {F.XA_ORPHAN_ROLLBACK},
}


@pytest.fixture(autouse=True)
def _corpus() -> None:
    require_corpus()
    logging.disable(logging.WARNING)
    yield
    logging.disable(logging.NOTSET)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recovery_files_give_the_named_findings(name: str) -> None:
    res = build_transactions([CORPUS / RECOVERY / f"{name}.000001"])
    errors = {f.kind for f in res.findings if f.severity == F.ERROR}
    warnings = {f.kind for f in res.findings if f.severity == F.WARNING}
    assert errors == EXPECTED[name], [str(f) for f in res.findings]
    assert warnings == EXPECTED_WARNINGS.get(name, set()), [str(f) for f in res.findings]
    for f in res.findings:
        assert f.file == f"{name}.000001" and f.pos is not None and f.pos >= 4


def test_invalid_transition_message_follows_wl4162() -> None:
    res = build_transactions([CORPUS / RECOVERY / "ddl_in_transaction.000001"])
    (f,) = [f for f in res.findings if f.kind == F.INVALID_TRANSITION]
    assert f.message == ("unable to change boundary parser from Inside Transaction to "
                         "Start Transaction")
    # the parser reset: the transaction after the bad spot is reconstructed normally
    assert res.transactions[-1].status == "committed" and res.transactions[-1].changes


def test_xa_prepare_then_commit_in_one_file() -> None:
    # duplicate_xid_xa_rollback: an XA prepared and committed, then an XA ROLLBACK of the
    # same XID whose PREPARE the hand edit removed.
    res = build_transactions([CORPUS / RECOVERY / "duplicate_xid_xa_rollback.000001"])
    xas = [t for t in res.transactions if t.kind == "xa"]
    assert [t.status for t in xas] == [XA_COMMITTED, XA_ROLLED_BACK]
    committed = xas[0]
    assert committed.prepare is not None and committed.prepare.begin_pos < committed.part.begin_pos
    assert committed.xa_xid is not None and committed.xa_xid.gtrid == "78"  # XA START 'x'
    assert committed.changes and all(c.applied for c in committed.changes)
    assert xas[1].prepare is None and not xas[1].changes


def test_pending_xa_survives_a_run_boundary(tmp_path) -> None:
    """A PREPARE left pending by run 1 pairs with its COMMIT in run 2, through the JSON
    state; the result equals one run over both inputs."""
    whole = CORPUS / RECOVERY / "duplicate_xid_xa_rollback.000001"
    raw = whole.read_bytes()
    one = build_transactions([whole])
    xa = next(t for t in one.transactions if t.status == XA_COMMITTED)
    # Run 1: the file cut right after the PREPARE group (a valid shorter binlog).
    first = tmp_path / "cut.000001"
    first.write_bytes(raw[:xa.prepare.end_pos])
    run1 = build_transactions([first])
    assert [t.status for t in run1.pending] == [XA_PREPARED]
    state = dump_pending(run1.pending)
    # Run 2: the same file again, as if its rest arrived later: only the COMMIT part is new;
    # pairing the pending PREPARE must give the XA of the single run.
    run2 = build_transactions([whole], pending_in=load_pending(state))
    xa2 = next(t for t in run2.transactions if t.status == XA_COMMITTED)
    assert xa2.xa_xid == xa.xa_xid
    assert [(c.table, c.op, c.after) for c in xa2.changes] == \
        [(c.table, c.op, c.after) for c in xa.changes]
    assert [c.order for c in xa2.changes] == [c.order for c in xa.changes]


def test_clean_corpus_files_have_no_transaction_errors() -> None:
    allowed = {
        # cut short by design: a transaction open where the file ends
        "mysql-5.5/std_data/trunc_binlog.000001": {F.OPEN_TRANSACTION_AT_EOF},
        "libs/mysql-binlog-connector-java/mysql-bin.aurora-padding": {
            F.OPEN_TRANSACTION_AT_EOF},
    }
    checked = 0
    for f in corpus_files():
        if f.broken or f.rel.startswith(RECOVERY):
            continue
        res = build_transactions([f.path])
        errors = {x.kind for x in res.findings if x.severity == F.ERROR}
        assert errors == allowed.get(f.rel, set()), (f.rel, [str(x) for x in res.findings][:3])
        checked += 1
    assert checked > 80


def test_order_keys_sort_in_commit_order_across_files() -> None:
    files = [CORPUS / "mysql-8.0/std_data/replicated-bin.000002",  # given out of order
             CORPUS / "mysql-8.0/std_data/replicated-bin.000001"]
    res = build_transactions(files)
    keys = [c.order for t in res.transactions for c in t.changes if c.order is not None]
    assert keys and keys == sorted(keys)
    seqs = [t.part.seq for t in res.transactions]
    assert seqs == sorted(seqs) and len(set(seqs)) > 1


@pytest.mark.parametrize(("query", "verb", "xid", "one_phase"), [
    ("XA START X'74657374',X'',1", "START", (1, "74657374", ""), False),
    ("XA COMMIT X'00ff7f',X'01',7", "COMMIT", (7, "00ff7f", "01"), False),
    ("XA ROLLBACK 'abc','q'", "ROLLBACK", (1, "616263", "71"), False),
    ("XA COMMIT 'x' ONE PHASE", "COMMIT", (1, "78", ""), True),
    ("xa end 0x0102, 0x03, 5", "END", (5, "0102", "03"), False),
])
def test_xa_statement_parsing(query: str, verb: str, xid: tuple[int, str, str],
                              one_phase: bool) -> None:
    parsed = parse_xa_statement(query)
    assert parsed is not None
    assert parsed[0] == verb
    assert (parsed[1].format_id, parsed[1].gtrid, parsed[1].bqual) == xid
    assert parsed[2] is one_phase


def test_statement_context_from_intvar_rand_user_var() -> None:
    """ver_5_1_23.001 (MySQL 5.1.23, statement format): binlog_old_versions.result, section
    "Read modern binlog (version 5.1.23)", shows the rows the server got by replaying it:
    (0, 'last_insert_id'), (4, 'four') and (674568, 'random')."""
    res = build_transactions([CORPUS / "mysql-8.0/suite/binlog/std_data/ver_5_1_23.001"])
    ctx = {t.statements[-1]: t.statement_context[-1] for t in res.transactions
           if t.statements}
    four = ctx["INSERT INTO t1 VALUES (@x, 'four')"]
    assert four["user_vars"] == {"x": 4} and four["db"] == "test"
    assert ctx["INSERT INTO t1 VALUES (LAST_INSERT_ID(), 'last_insert_id')"][
        "last_insert_id"] == 0
    rand = ctx["INSERT INTO t1 VALUES (RAND() * 1000000, 'random')"]
    assert {"rand_seed1", "rand_seed2"} <= set(rand)
    # MySQL's RAND() (my_rnd.cc): seed1 = (seed1*3 + seed2) % max; value = seed1 / max
    max_value = 0x3FFFFFFF
    s1 = (rand["rand_seed1"] * 3 + rand["rand_seed2"]) % max_value
    assert round(s1 / max_value * 1000000) == 674568


def test_events_after_a_truncated_file(tmp_path) -> None:
    """replicated-bin.000001 cut inside its last transaction, followed by .000002."""
    src = CORPUS / "mysql-8.0/std_data/replicated-bin.000001"
    cut = tmp_path / "replicated-bin.000001"
    cut.write_bytes(src.read_bytes()[:1400])  # inside the group that starts at 1297
    res = build_transactions([cut, CORPUS / "mysql-8.0/std_data/replicated-bin.000002"])
    kinds = {(f.kind, f.file) for f in res.findings if f.severity == F.ERROR}
    assert (F.TRUNCATED, "replicated-bin.000001") in kinds
    assert (F.EVENTS_AFTER_TRUNCATION, "replicated-bin.000002") in kinds
    assert (F.OPEN_TRANSACTION_AT_EOF, "replicated-bin.000001") in kinds
    assert res.incomplete and res.incomplete[0].part.begin_pos == 1297
