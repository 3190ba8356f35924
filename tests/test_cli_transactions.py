"""`binlake transactions` and `binlake verify` as a user runs them (subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .corpus import CORPUS, require_corpus

RECOVERY = CORPUS / "mysql-8.0/std_data/binlog_recovery"
CLEAN = [CORPUS / "mysql-8.0/std_data/replicated-bin.000001",
         CORPUS / "mysql-8.0/std_data/replicated-bin.000002"]


def run(*args: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "binlake.cli", *map(str, args)],
                          capture_output=True, timeout=120, check=False)


@pytest.fixture(autouse=True)
def _corpus() -> None:
    require_corpus()


def test_transactions_jsonl_contract() -> None:
    p = run("transactions", *reversed(CLEAN))  # order on the command line does not matter
    assert p.returncode == 0, p.stderr
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    # replicated-bin.000001/2 (MySQL 8.0.29): 4 DDL/DML groups + 4 more; every group has a GTID
    assert rows and all(r["gtid"] and r["id"] == r["gtid"] for r in rows)
    keys = {"id", "gtid", "kind", "status", "begin_file", "begin_pos", "end_file", "end_pos",
            "commit_time", "xid", "rows"}
    assert all(keys <= set(r) for r in rows)
    assert [r["end_file"] for r in rows] == sorted(r["end_file"] for r in rows)
    inserts = sum(t["insert"] for r in rows for t in r["rows"].values())
    # the MANIFEST counts WRITE_v2 x4 and x3 in the two files, one row each (mysqlbinlog)
    assert inserts == 7
    assert {r["kind"] for r in rows} == {"ddl", "dml"}


def test_transactions_changes_carry_order_keys() -> None:
    p = run("transactions", "--changes", *CLEAN)
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    orders = [c["order"] for r in rows for c in r.get("changes", [])]
    assert orders == sorted(orders) and len(orders) == 7
    assert all(c["applied"] for r in rows for c in r.get("changes", []))


def test_pending_out_then_in(tmp_path: Path) -> None:
    src = RECOVERY / "duplicate_xid_xa_rollback.000001"
    raw = src.read_bytes()
    full = [json.loads(x) for x in run("transactions", src).stdout.splitlines()]
    xa = next(r for r in full if r["status"] == "xa_committed")
    cut = tmp_path / "cut.000001"
    cut.write_bytes(raw[: xa["prepare"]["end_pos"]])
    state = tmp_path / "pending.json"
    p1 = run("transactions", cut, "--pending-out", state)
    assert p1.returncode == 0
    first = [json.loads(x) for x in p1.stdout.splitlines()]
    assert first[-1]["status"] == "xa_prepared" and first[-1]["commit_time"] is None
    assert json.loads(state.read_text())["pending"][0]["xa_xid"] == xa["xid"]
    p2 = run("transactions", src, "--pending-in", state)
    second = [json.loads(x) for x in p2.stdout.splitlines()]
    again = next(r for r in second if r["status"] == "xa_committed")
    assert again["rows"] == xa["rows"] and again["xid"] == xa["xid"]


def test_verify_exit_codes() -> None:
    ok = run("verify", *CLEAN)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert b"valid" in ok.stderr
    bad = run("verify", "--json", RECOVERY / "orphan_commit.000001")
    assert bad.returncode == 1
    findings = [json.loads(x) for x in bad.stdout.splitlines()]
    kinds = {f["kind"] for f in findings if f["severity"] == "error"}
    assert "invalid_transition" in kinds
    assert all(f["file"] == "orphan_commit.000001" for f in findings)
    assert run("verify").returncode == 2
    assert run("transactions", "--pending-in", "/nonexistent.json", *CLEAN).returncode == 2


def test_truncated_file_exit_1_no_traceback() -> None:
    p = run("transactions", CORPUS / "mysql-8.0/std_data/binlog_truncated_prev_gtid_event.000001")
    assert p.returncode == 1
    assert b"Traceback" not in p.stderr and b"at byte 120" in p.stderr


def test_spilled_transactions_same_output(monkeypatch: pytest.MonkeyPatch,
                                          capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    """`transactions` and `verify` keep a huge transaction's changes on disk
    (binlake.txn.spill), and `transactions --changes` writes them out a chunk at a time;
    with every rows event spilled they print the same bytes."""
    from binlake import cli
    from binlake.txn import spill

    files = [*CLEAN, *sorted(RECOVERY.glob("*xa_rollback*")), *sorted(RECOVERY.glob("*xa_commit*")),
             # transactions of 100 and 402 row changes; JSON documents
             CORPUS / "mariadb-11.8/std_data/mdev35643_mysql_80_binlog.000001",
             CORPUS / "mariadb-11.8/std_data/mdev6020-mysql-bin.000001",
             CORPUS / "libs/rust_mysql_common/json.binlog.000001"]

    def outputs() -> list[tuple[int, bytes]]:
        got = []
        for f in files:
            for args in (["transactions", f], ["transactions", "--changes", f],
                         ["verify", "--json", f]):
                rc = cli.main([str(a) for a in args])
                got.append((rc, capsysbinary.readouterr().out))
        return got

    held = outputs()
    spills = []
    real = spill.SpilledChanges.spill_tail

    def counted(self: spill.SpilledChanges) -> list:
        spills.append(len(self.tail))
        return real(self)

    monkeypatch.setattr(spill, "SPILL_BYTES", 1)
    monkeypatch.setattr(spill.SpilledChanges, "spill_tail", counted)
    assert outputs() == held
    assert sum(spills) > 10
    assert sum(len(out) for _, out in held) > 10_000
