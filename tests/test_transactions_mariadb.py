"""The transaction layer against what a real MariaDB 10.11 server says.

One fresh server per module runs every scenario of ``tests/txn_workloads.py`` (XA across
rotations, XA ROLLBACK in a later file, interleaved XA with one left prepared, binary XIDs,
XA COMMIT ONE PHASE, mixed InnoDB/MyISAM/Aria rollbacks, savepoints with MyISAM, statement
format, DDL between DML) with FLUSH BINARY LOGS between them.  ``build_transactions`` over the
closed files must give:

* exactly the transactions the workload recorded from the client side, in the order the
  server decided them (matched by their row changes ``(table, op, primary key)``, split into
  applied and undone; their status, kind, XA id, GTID and file as the server reported them);
* row changes that, applied in order-key order, give the server's own final ``SELECT *`` of
  every row-logged table;
* ``pending`` equal to ``XA RECOVER``;
* the same result when the files are cut into 2 or 3 runs chained by the pending-XA state
  (``dump_pending`` / ``load_pending`` JSON);
* no ERROR findings.

Expected values come from the server (``SELECT``, ``XA RECOVER``, ``@@gtid_binlog_pos``,
affected-row counts) and the workload's bookkeeping, never from binlake.
"""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from .servers import start_server
from .txn_workloads import (
    SCENARIOS,
    XA_PREPARED,
    Expected,
    Truth,
    norm_sql,
    run_all,
)

pytestmark = [pytest.mark.integration]


# -- fixtures ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def truth(tmp_path_factory: pytest.TempPathFactory, mariadb_template: Path) -> Truth:

    base = tmp_path_factory.mktemp("txn-srv")
    srv = start_server(base, mariadb_template)
    try:
        return run_all(srv)
    finally:
        srv.stop(timeout=30)


@pytest.fixture(scope="module")
def built(truth: Truth) -> Any:
    from binlake.txn.build import build_transactions

    return build_transactions([str(f) for f in truth.files])


# -- helpers -----------------------------------------------------------------------------------


def _key(c: Any) -> tuple[str, str, Any]:
    img = c.after if c.op == "insert" else c.before
    return (f"{c.db}.{c.table}", c.op, (img or {}).get("id"))


def _changes(t: Any) -> tuple[list[Any], list[Any]]:
    """(applied, undone) keys of a transaction's changes."""
    if t.status == XA_PREPARED:  # undecided: every change is "would apply"
        return sorted(_key(c) for c in t.changes), []
    return (
        sorted(_key(c) for c in t.changes if c.applied),
        sorted(_key(c) for c in t.changes if not c.applied),
    )


def _describe(t: Any) -> str:
    applied, undone = _changes(t)
    xa = f" xa={t.xa_xid}" if t.xa_xid else ""
    prep = f" prepare={t.prepare.gtid}@{t.prepare.file}" if t.prepare else ""
    return (
        f"{t.id} {t.part.file}:{t.part.begin_pos} {t.status} {t.kind}{xa}{prep} "
        f"end={t.end_event} applied={applied} undone={undone} "
        f"statements={[s[:60] for s in t.statements]}"
    )


def mismatches(e: Expected, t: Any) -> list[str]:
    """What differs between the workload's record ``e`` and binlake's transaction ``t``."""
    out = []
    if t.status != e.status:
        out.append(f"status {t.status} != {e.status}")
    if t.kind not in e.kinds:
        out.append(f"kind {t.kind} not in {e.kinds}")
    applied, undone = _changes(t)
    if applied != sorted(e.applied):
        out.append(f"applied {applied} != {sorted(e.applied)}")
    if undone != sorted(e.undone):
        out.append(f"undone {undone} != {sorted(e.undone)}")
    got_xid = (t.xa_xid.format_id, t.xa_xid.gtrid, t.xa_xid.bqual) if t.xa_xid else None
    want_xid = e.xa.key if e.xa else None
    if got_xid != want_xid:
        out.append(f"xa_xid {got_xid} != {want_xid}")
    texts = [norm_sql(s) for s in t.statements]
    for want in e.statements:
        if not any(want in s for s in texts):
            out.append(f"statement {want[:70]!r} not in {[s[:70] for s in texts]}")
    if t.gtid != e.gtid:
        out.append(f"gtid {t.gtid} != server's {e.gtid}")
    if t.part.file != e.file:
        out.append(f"file {t.part.file} != server's {e.file}")
    if e.xa is not None:
        prep = t.prepare if t.status != XA_PREPARED else (t.prepare or t.part)
        if prep is None:
            out.append("no XA PREPARE part")
        else:
            if prep.gtid != e.prepare_gtid:
                out.append(f"prepare gtid {prep.gtid} != server's {e.prepare_gtid}")
            if prep.file != e.prepare_file:
                out.append(f"prepare file {prep.file} != server's {e.prepare_file}")
    return out


def compare(expected: list[Expected], got: list[Any]) -> str:
    """A report of every difference ('' when the lists match one to one, in order)."""
    lines = []
    for n, (e, t) in enumerate(itertools.zip_longest(expected, got)):
        if e is None:
            lines.append(f"#{n} unexpected: {_describe(t)}")
        elif t is None:
            lines.append(f"#{n} missing: {e.describe()}")
        else:
            bad = mismatches(e, t)
            if bad:
                lines.append(
                    f"#{n} {e.scenario}/{e.label}: "
                    + "; ".join(bad)
                    + f"\n      binlake: {_describe(t)}"
                )
    if lines and len(expected) != len(got):
        lines.insert(0, f"{len(got)} transactions, the workload recorded {len(expected)}")
    return "\n".join(lines)


def _in_files(t: Any, names: set[str]) -> bool:
    return (t.prepare or t.part).file in names


# -- the server truth on its own ---------------------------------------------------------------------


def test_workload_truth(truth: Truth) -> None:
    assert len(truth.files) >= 5
    assert set(truth.scenarios) == set(SCENARIOS)
    for name, part in truth.scenarios.items():
        assert part.files, name
        assert part.committed, name
    assert [e.label for e in truth.pending] == ["b prepared first"]
    assert [r["key"] for r in truth.xa_recover] == [truth.pending[0].xa.key]  # type: ignore[union-attr]
    gtids = [e.gtid for e in truth.committed]
    assert len(set(gtids)) == len(gtids), Counter(gtids).most_common(3)


# -- transactions ------------------------------------------------------------------------------------


def test_no_error_findings(built: Any) -> None:
    errors = [str(f) for f in built.findings if f.severity == "error"]
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_scenario_transactions(truth: Truth, built: Any, scenario: str) -> None:
    part = truth.scenarios[scenario]
    names = {f.name for f in part.files}
    got = [t for t in built.transactions if _in_files(t, names)]
    report = compare(part.committed, got)
    assert not report, f"{scenario}:\n{report}"


def test_all_transactions_in_order(truth: Truth, built: Any) -> None:
    report = compare(truth.committed, built.transactions)
    assert not report, report


def test_spilled_changes(truth: Truth, built: Any) -> None:
    """With ``spill_bytes=1`` every rows event moves its group's changes to a temporary file
    (binlake.txn.spill): the savepoint rollbacks, ROLLBACKs and XA ROLLBACKs that undo
    changes already on disk, and the order keys, must come out as the server did them."""
    from binlake.txn.build import build_transactions
    from binlake.txn.spill import SpilledChanges

    spilled = build_transactions([str(f) for f in truth.files], spill_bytes=1)
    on_disk = [t for t in [*spilled.transactions, *spilled.pending]
               if isinstance(t.changes, SpilledChanges) and t.changes.spilled]
    assert len(on_disk) >= 10
    report = compare(truth.committed, spilled.transactions)
    assert not report, report
    state, problems = replay(truth, spilled.transactions)
    assert not problems, "\n".join(problems[:30])
    for table in sorted(truth.row_tables):
        want = {r["id"]: r for r in truth.state[table]}
        assert state.get(table, {}) == want, table
    ordered = [c.order for t in spilled.transactions for c in t.changes]
    assert ordered == [c.order for t in built.transactions for c in t.changes]
    d = _diff(_dicts([*spilled.transactions, *spilled.pending]),
              _dicts([*built.transactions, *built.pending]))
    assert not d, d


def test_ids_and_commit_times(built: Any) -> None:
    ids = [t.id for t in built.transactions]
    assert len(set(ids)) == len(ids), Counter(ids).most_common(3)
    assert all(t.gtid for t in built.transactions)
    for t in built.transactions:
        d = t.to_dict()
        if t.status == XA_PREPARED:
            assert d["commit_time"] is None, d
        else:
            assert d["commit_time"] is not None, d
        assert d["rows"] == {k: v for k, v in t.row_counts().items()}
        if t.kind == "xa" and t.status != XA_PREPARED:
            assert d["begin_file"] == t.prepare.file and d["end_file"] == t.part.file


def test_each_scenario_alone(truth: Truth, built: Any) -> None:
    """A run over one scenario's files only (no pending state) gives that scenario's part of
    the full run: nothing in them depends on an earlier file."""
    from binlake.txn.build import build_transactions

    problems = []
    for name, part in truth.scenarios.items():
        names = {f.name for f in part.files}
        alone = build_transactions([str(f) for f in part.files])
        want = [t for t in built.transactions if _in_files(t, names)]
        # age_seconds of a pending XA counts to the end of the run's input: not comparable
        d = _diff(_dicts(alone.transactions, "age_seconds"), _dicts(want, "age_seconds"))
        if d:
            problems.append(f"{name}: {d}")
        problems += [f"{name}: {f}" for f in alone.findings if f.severity == "error"]
    assert not problems, "\n".join(problems)


def test_nontransactional_flags(truth: Truth, built: Any) -> None:
    """``Transaction.nontransactional`` (it holds changes that survive a rollback) and
    ``RowChange.transactional`` follow the engines the workload created its tables with."""
    bad = _nontransactional_problems(truth, built, statement_format=False)
    assert not bad, "\n".join(bad)


def test_nontransactional_statement_format_rollback(truth: Truth, built: Any) -> None:
    """STATEMENT format: BEGIN; INSERT InnoDB; INSERT MyISAM; ROLLBACK is logged as one group
    ending in ``Query ROLLBACK`` whose MyISAM insert happened (the row is in the server's
    table): a rolled-back transaction whose non-transactional changes happened anyway."""
    bad = _nontransactional_problems(truth, built, statement_format=True)
    assert not bad, "\n".join(bad)


def _nontransactional_problems(truth: Truth, built: Any, *, statement_format: bool) -> list[str]:
    by_gtid = {t.gtid: t for t in built.transactions}
    bad = []
    for e in truth.committed:
        if ("statement" in e.kinds) != statement_format:
            continue
        t = by_gtid.get(e.gtid)
        if t is None:
            bad.append(f"{e.scenario}/{e.label}: no transaction with GTID {e.gtid}")
            continue
        if t.nontransactional != e.nontransactional:
            bad.append(
                f"{e.scenario}/{e.label} ({e.gtid}): nontransactional "
                f"{t.nontransactional} != {e.nontransactional}"
            )
        for c in t.changes:
            table = f"{c.db}.{c.table}"
            engine = truth.engines.get(table, "INNODB")
            if c.transactional != (engine == "INNODB"):
                bad.append(
                    f"{e.scenario}/{e.label} ({e.gtid}): {table} ({engine}) change "
                    f"transactional={c.transactional}"
                )
    return bad


# -- replay -------------------------------------------------------------------------------------------


def replay(truth: Truth, transactions: list[Any]) -> tuple[dict[str, dict[Any, dict]], list[str]]:
    """Apply the applied changes of decided transactions in order-key order."""
    problems = []
    changes = []
    for t in transactions:
        if t.status == XA_PREPARED:
            continue
        for c in t.changes:
            if c.order is None:
                problems.append(f"{t.id}: change without an order key: {_key(c)}")
            elif c.applied:
                changes.append(c)
    changes.sort(key=lambda c: c.order)
    orders = [c.order for c in changes]
    if len(set(orders)) != len(orders):
        problems.append(f"order keys not unique: {Counter(orders).most_common(3)}")
    state: dict[str, dict[Any, dict]] = {}
    for c in changes:
        table = truth.renames.get(f"{c.db}.{c.table}", f"{c.db}.{c.table}")
        rows = state.setdefault(table, {})
        if c.op in ("update", "delete"):
            pk = c.before["id"]
            cur = rows.pop(pk, None)
            if cur is None:
                problems.append(f"{table} {c.op} of missing row {pk} at {c.order}")
            else:
                diff = {k: (cur[k], v) for k, v in c.before.items() if k in cur and cur[k] != v}
                if diff:
                    problems.append(
                        f"{table} {c.op} {pk} at {c.order}: before image differs "
                        f"from the replayed row: {diff}"
                    )
        if c.op in ("insert", "update"):
            pk = c.after["id"]
            if pk in rows:
                problems.append(f"{table} {c.op} of existing row {pk} at {c.order}")
            rows[pk] = dict(c.after)
    return state, problems


def test_replay_gives_server_state(truth: Truth, built: Any) -> None:
    state, problems = replay(truth, built.transactions)
    assert not problems, "\n".join(problems[:30])
    assert truth.row_tables
    for table in sorted(truth.row_tables):
        want = {r["id"]: r for r in truth.state[table]}
        got = state.get(table, {})
        assert sorted(got) == sorted(want), f"{table}: ids {sorted(got)} != server {sorted(want)}"
        for pk, row in want.items():
            assert got[pk] == row, f"{table} id={pk}: replayed {got[pk]} != server {row}"
    leftovers = set(state) - truth.row_tables - truth.dropped - set(truth.state)
    assert not leftovers, leftovers


# -- XA pending ---------------------------------------------------------------------------------------


def test_pending_equals_xa_recover(truth: Truth, built: Any) -> None:
    got = [(t.xa_xid.format_id, t.xa_xid.gtrid, t.xa_xid.bqual) for t in built.pending]
    assert got == [r["key"] for r in truth.xa_recover]
    for t, r in zip(built.pending, truth.xa_recover):
        assert bytes.fromhex(t.xa_xid.gtrid) + bytes.fromhex(t.xa_xid.bqual) == r["data"]
        assert len(bytes.fromhex(t.xa_xid.gtrid)) == r["gtrid_length"]
        assert t.status == XA_PREPARED
    assert [t.id for t in built.transactions if t.status == XA_PREPARED] == [
        t.id for t in built.pending
    ]
    (e,) = truth.pending
    (t,) = built.pending
    assert not mismatches(e, t), mismatches(e, t)


def test_pending_round_trip(built: Any) -> None:
    from binlake.txn.xa import dump_pending, load_pending

    text = dump_pending(built.pending)
    back = load_pending(text)

    def state(t: Any) -> dict[str, Any]:
        d = t.to_dict(with_changes=True)
        d.pop("age_seconds", None)  # relative to the end of a run's input: the next run's own
        return d

    assert [state(t) for t in back] == [state(t) for t in built.pending]
    assert dump_pending(back) == text


# -- split runs ---------------------------------------------------------------------------------------


class Runs:
    """Builds of file ranges chained by the pending state, memoised by (start, end, state)."""

    def __init__(self, files: list[Path]) -> None:
        self.files = [str(f) for f in files]
        self.memo: dict[tuple[int, int, str], Any] = {}

    def build(self, start: int, end: int, pending_text: str) -> Any:
        from binlake.txn.build import build_transactions
        from binlake.txn.xa import load_pending

        key = (start, end, pending_text)
        if key not in self.memo:
            self.memo[key] = build_transactions(
                self.files[start:end], pending_in=load_pending(pending_text)
            )
        return self.memo[key]

    def chain(self, cuts: tuple[int, ...]) -> tuple[list[Any], list[Any], list[str]]:
        from binlake.txn.xa import dump_pending

        bounds = [0, *cuts, len(self.files)]
        decided: list[Any] = []
        text = dump_pending([])
        pending: list[Any] = []
        errors: list[str] = []
        for a, b in itertools.pairwise(bounds):
            res = self.build(a, b, text)
            decided += [t for t in res.transactions if t.status != XA_PREPARED]
            errors += [f"run {a}:{b}: {f}" for f in res.findings if f.severity == "error"]
            pending = res.pending
            assert [t.id for t in res.transactions if t.status == XA_PREPARED] == [
                t.id for t in pending
            ]
            text = dump_pending(pending)
        return decided, pending, errors


def _dicts(ts: list[Any], *drop: str) -> list[dict[str, Any]]:
    out = [t.to_dict(with_changes=True) for t in ts]
    for d in out:
        for k in drop:
            d.pop(k, None)
    return out


def _diff(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> str:
    for n, (x, y) in enumerate(itertools.zip_longest(a, b)):
        if x != y:
            if x is None or y is None:
                return f"#{n}: split {x and x['id']} vs single {y and y['id']}"
            keys = sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k))
            return f"#{n} {y['id']}: " + "; ".join(
                f"{k}: split {str(x.get(k))[:200]} != single {str(y.get(k))[:200]}" for k in keys
            )
    return ""


@pytest.fixture(scope="module")
def runs(truth: Truth) -> Runs:
    return Runs(truth.files)


def _check_split(runs: Runs, built: Any, cuts: tuple[int, ...]) -> str:
    decided, pending, errors = runs.chain(cuts)
    single = [t for t in built.transactions if t.status != XA_PREPARED]
    problems = []
    d = _diff(_dicts(decided), _dicts(single))
    if d:
        problems.append(f"cuts {cuts}: decided transactions differ: {d}")
    d = _diff(_dicts(pending), _dicts(built.pending))
    if d:
        problems.append(f"cuts {cuts}: final pending differs: {d}")
    problems += [f"cuts {cuts}: {e}" for e in errors]
    return "\n".join(problems)


def test_split_into_two_runs(truth: Truth, built: Any, runs: Runs) -> None:
    n = len(truth.files)
    problems = [p for cut in range(1, n) if (p := _check_split(runs, built, (cut,)))]
    assert not problems, "\n".join(problems[:20])


def test_split_into_three_runs(truth: Truth, built: Any, runs: Runs) -> None:
    n = len(truth.files)
    problems = [
        p
        for cuts in itertools.combinations(range(1, n), 2)
        if (p := _check_split(runs, built, cuts))
    ]
    assert not problems, "\n".join(problems[:20])


def test_split_one_file_per_run(truth: Truth, built: Any, runs: Runs) -> None:
    cuts = tuple(range(1, len(truth.files)))
    problem = _check_split(runs, built, cuts)
    assert not problem, problem
