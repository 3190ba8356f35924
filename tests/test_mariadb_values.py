"""binlake against the reference decoder on binlogs a real MariaDB server writes here.

A fresh server runs the all-types workload (every column type and edge value, 260 columns,
MINIMAL/NOBLOB images, 3 MB values, multi-event statements, compressed events, statement-format
DML); binlake's rows are compared with ``mariadb-binlog -vv --base64-output=decode-rows`` row
by row and value by value, and replaying binlake's rows must give the server's own final
``SELECT *``.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import pytest

from binlake.binlog.reader import BinlogReader
from binlake.binlog.rowchanges import iter_row_changes

from .reference import RefRow, encode_charset, mariadb_binlog_rows, render_quoted
from .workloads import DB, FULL_IMAGE_TABLES, STATEMENT_LOGGED_IDS, run_all_types

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory, mariadb_template: Path) -> dict[str, Any]:
    from binlake_dev.mariadb import MariaDBServer, free_port

    srv = MariaDBServer(tmp_path_factory.mktemp("values-srv"), port=free_port())
    srv.init(template=mariadb_template)
    srv.start()
    try:
        result = run_all_types(srv)
        srv.flush_binary_logs()
        files = srv.closed_binlog_files()
    finally:
        srv.stop()
    ours: list[dict[str, Any]] = []
    errors = []
    for f in files:
        for ev in BinlogReader(f):
            if ev.error is not None:
                errors.append(ev.error)
        ours += list(iter_row_changes(_checked(f, errors)))
    ref: list[RefRow] = []
    for f in files:
        ref += mariadb_binlog_rows(f, schema=result["schema"])
    return {"result": result, "files": files, "ours": ours, "ref": ref, "errors": errors}


def _checked(f: Path, errors: list) -> Any:
    for ev in BinlogReader(f):
        if ev.error is not None:
            errors.append(ev.error)
        yield ev


def test_no_decode_errors(generated: dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    assert generated["files"], "the workload wrote no closed binlog"
    assert generated["errors"] == []
    with caplog.at_level(logging.WARNING, logger="binlake"):
        for f in generated["files"]:
            for _ in BinlogReader(f):
                pass
    assert not [r for r in caplog.records if "unknown event type" in r.getMessage()]


def test_row_counts_equal_server_rowcounts(generated: dict[str, Any]) -> None:
    counts: dict[str, dict[str, int]] = {}
    for r in generated["ours"]:
        c = counts.setdefault(f"{r['db']}.{r['table']}", {"insert": 0, "update": 0, "delete": 0})
        c[r["op"]] += 1
    assert counts == generated["result"]["changes"]


def _equal(ours: Any, ref: Any, ref_row: RefRow, n: int, raw: bytes | None, charset: str | None
           ) -> bool:
    if ours == ref:
        return True
    if n in ref_row.lossy and isinstance(ours, float) and isinstance(ref, float):
        # mariadb-binlog prints FLOAT with %g (6 significant digits)
        return math.isclose(ours, ref, rel_tol=1e-5)
    if isinstance(ours, str) and raw is not None and charset:
        # the printed text is ambiguous (a literal "\x0a" vs an escaped newline): compare forward
        return render_quoted(encode_charset(ours, charset)) == raw
    return False


def test_values_match_reference_decoder(generated: dict[str, Any]) -> None:
    ours, ref = generated["ours"], generated["ref"]
    assert len(ours) == len(ref) > 3000
    schema = generated["result"]["schema"]
    mismatches = []
    for o, r in zip(ours, ref):
        assert (o["pos"], o["row"], o["db"], o["table"], o["op"]) == (
            r.pos, r.row_index, r.db, r.table, r.op)
        cols = schema[(r.db, r.table)]
        for which in ("before", "after"):
            img_ref = getattr(r, which)
            img_ours = o[which]
            if img_ref is None:
                assert img_ours is None
                continue
            raws = getattr(r, f"raw_{which}") or {}
            assert len(img_ours) == len(img_ref), (o["table"], which, sorted(img_ours))
            for n, v in img_ref.items():
                name = cols[n - 1].name
                got = img_ours[name]
                if not _equal(got, v, r, n, raws.get(n), cols[n - 1].charset):
                    mismatches.append((r.table, r.pos, r.row_index, which, name, got, v))
    assert not mismatches, "\n".join(map(repr, mismatches[:25]))


def test_replay_gives_server_final_state(generated: dict[str, Any]) -> None:
    result = generated["result"]
    for table in FULL_IMAGE_TABLES:
        name = f"{DB}.{table}"
        state: dict[Any, dict[str, Any]] = {}
        for r in generated["ours"]:
            if f"{r['db']}.{r['table']}" != name:
                continue
            if r["op"] == "delete":
                del state[r["before"]["id"]]
            elif r["op"] == "insert":
                state[r["after"]["id"]] = dict(r["after"])
            else:
                row = state.pop(r["before"]["id"])
                row.update(r["after"])
                state[row["id"]] = row
        skip = STATEMENT_LOGGED_IDS.get(table, set())
        expected = {row["id"]: row for row in result["contract"][name] if row["id"] not in skip}
        assert sorted(state) == sorted(expected), name
        cols = {c.name: c for c in result["columns"][name]}
        for key, row in expected.items():
            for col, want in row.items():
                got = state[key][col]
                if got != want and isinstance(got, float) and isinstance(want, float):
                    assert math.isclose(got, want, rel_tol=1e-6), (name, key, col)
                elif got != want and isinstance(got, str) and cols[col].charset:
                    # the server's text of an unambiguous value is exact: no tolerance
                    pytest.fail(f"{name} id={key} {col}: {got!r} != {want!r}")
                else:
                    assert got == want, (name, key, col, got, want)


def test_statements_attached(generated: dict[str, Any]) -> None:
    with_text = [r for r in generated["ours"] if "statement" in r]
    assert with_text, "no Annotate_rows text was attached"
    stmts = set(generated["result"]["statements"])
    # every attached statement is one the workload ran (Annotate_rows holds the query text)
    assert all(r["statement"] in stmts for r in with_text)
