"""binlake.quality without Spark: the catalogue, the exported suites, the GTID header rule.

The header rule is checked against what real servers wrote: in a clean corpus chain each
file's Previous_gtids (MySQL) / Gtid_list (MariaDB) is the previous one's plus the GTIDs of the
previous file, so the expected text computed from file N's facts must be file N+1's own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("great_expectations")

from binlake.quality import facts as X
from binlake.quality.datasets import expected_headers
from binlake.quality.export import family_suites
from binlake.quality.names import ERROR, FAMILIES, WARNING
from binlake.quality.suite import checks
from binlake.txn.files import order_files

from .corpus import CORPUS, require_corpus

ROOT = Path(__file__).resolve().parents[1]


def test_catalogue() -> None:
    cs = checks()
    assert len({c.name for c in cs}) == len(cs)
    assert {c.family for c in cs} == set(FAMILIES)
    for c in cs:
        assert c.name.startswith(c.family + ".")
        assert c.severity in (ERROR, WARNING)
        e = c.expectation()
        assert e.description and len(e.description) > 30, c.name
        assert e.meta == {"check": c.name, "family": c.family, "severity": c.severity}
    age = next(c for c in checks(xa_max_age=120) if c.name == "xa.pending_age").expectation()
    assert "> 120.0" in age.unexpected_rows_query


def test_exported_suites_are_current() -> None:
    for fam, suite in family_suites().items():
        path = ROOT / "expectations" / f"{fam}.json"
        assert json.loads(path.read_text()) == json.loads(json.dumps(suite)), (
            f"{path} is stale: PYTHONPATH=lib python -m binlake.quality.export expectations/")


def _rows(paths: list[Path]) -> list[dict]:
    files = order_files([str(p) for p in paths])
    rows = []
    for i, f in enumerate(files):
        task = X.FileTask(f.uri, f.name, f.seq, f.base, i, i == len(files) - 1)
        rows.append(next(r for k, r in X.file_records(task) if k == X.FILE))
    return rows


@pytest.mark.parametrize("pattern", [
    "libs/percona-binlog-server/data_80045_gtid/binlog.0*",
    "mysql-8.0/std_data/replicated-bin.0*",
    "libs/mariadb-poc/binlogs/domain_id_1/mariadb-repl-bin.0*",
])
def test_expected_headers_on_real_chains(pattern: str) -> None:
    require_corpus()
    rows = _rows(sorted(CORPUS.glob(pattern)))
    assert len(rows) >= 2
    expected_headers(rows)
    assert rows[0]["expected_gtid_header"] is None
    for r in rows[1:]:
        assert r["gtid_header"] is not None
        assert r["gtid_header"] == r["expected_gtid_header"], r["file"]


def test_spilled_transactions_same_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The facts keep a huge transaction's changes on disk while it is open (txn.spill):
    with every rows event spilled, every file of the corpus gives the same group records.
    (Rollbacks of spilled changes are checked on real MariaDB savepoints and XA ROLLBACKs
    in test_transactions_mariadb.test_spilled_changes: the corpus has next to none.)"""
    require_corpus()
    from binlake.txn import spill

    from .corpus import corpus_files

    def groups() -> list[list[dict]]:
        out = []
        for cf in corpus_files():
            task = X.FileTask(str(cf.path), cf.path.name, 1, "", 0, True)
            out.append([r for k, r in X.file_records(task) if k == X.GROUP])
        return out

    held = groups()
    monkeypatch.setattr(spill, "SPILL_BYTES", 1)
    spilled = groups()
    assert sum(len(g) for g in held) > 1000
    assert sum(1 for g in held for r in g if r["inserts"] + r["updates"] + r["deletes"]) > 1000
    assert spilled == held
