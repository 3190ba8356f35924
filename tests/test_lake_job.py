"""The lake job end to end: real binlogs of a real MariaDB server, through Spark, into Iceberg.

One private MariaDB server runs the all-types workload (``tests/workloads.py``: every column
type, 260 columns, MINIMAL/NOBLOB images, 3 MiB values, compressed events, statement format)
and then every transaction scenario of ``tests/txn_workloads.py`` (XA across rotations, XA
ROLLBACK in a later file, interleaved XA with one left prepared, binary XIDs, mixed
InnoDB/MyISAM/Aria, savepoints, statement format, DDL), FLUSH BINARY LOGS between them.  The
files (the newest one still open, as an archiver would see it) are copied and loaded with
``run_load`` on one shared local[2] Spark session (``spark_lake`` in conftest); every lake has
its own ``BINLAKE_HOME`` and catalog name.

What the core tables must hold, and against what:

* ``row_changes``: exactly the applied row changes of the transaction layer's own result over
  the same files (``build_transactions``), at the same order keys; replaying them in order-key
  order gives the server's own final ``SELECT *`` (the workloads' truth);
* ``transactions``: the decided transactions of ``build_transactions``, field by field;
  ``xa_prepares`` every PREPARE group; ``xa_pending`` what ``XA RECOVER`` said;
* ``files``: one row per file, ``sha256``/``size`` of the bytes, GTIDs and timestamps as the
  transaction layer read them, ``closed_cleanly`` for all but the open newest file;
* the same content whatever the split into byte ranges, and whatever the split into runs
  (XA PREPARE and COMMIT in different runs); a rerun and a backfill change nothing but
  ``files.run_id``/``loaded_at`` and ``xa_pending.run_id`` (rewritten by every load);
* a damaged file is ``failed`` in ``files`` with its error and offset, contributes nothing,
  and the other files land as if it were absent; ``binlake load`` exits 1;
* MySQL 8 files of ../shared/corpus (TRANSACTION_PAYLOAD, PARTIAL_UPDATE_ROWS, GTIDs, a file
  name without a sequence number), each under its own ``source`` label.

The typed per-table tables (``lib/binlake/lake/typed.py``) are another suite's subject
(tests/test_lake_typed.py): here they are switched off, which keeps every load here at
seconds instead of a minute.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import re
import shutil
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .corpus import CORPUS, MANIFEST, require_corpus
from .servers import start_server
from .txn_workloads import Truth, run_all
from .workloads import DB as WL_DB
from .workloads import FULL_IMAGE_TABLES, STATEMENT_LOGGED_IDS, run_all_types

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.slow]

pytest.importorskip("pyspark")

XA_PREPARED = "xa_prepared"
STATEMENT_INLINE = 1024  # docs/lake.md: row_changes.statement is cut at 1,024 characters
# differ between loads by design (``ranges``: the decode ranges depend on the files loaded
# together, joined into full rounds of tasks)
IGNORED = frozenset({"run_id", "loaded_at", "ranges"})
TIMINGS: dict[str, float] = {}


# -- the workload --------------------------------------------------------------------------------


@dataclass
class Workload:
    dir: Path  # copies of the binlog files, the newest one still open (in use)
    files: list[Path]  # in server order
    truth: Truth  # txn_workloads: the server's record of transactions, final state, XA RECOVER
    all_types: dict[str, Any]  # workloads.run_all_types: contract state of the wl.* tables
    built: Any  # binlake.txn.build.build_transactions(files)

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.files]


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory, mariadb_template: Path) -> Workload:
    from binlake.txn.build import build_transactions

    t0 = time.monotonic()
    base = tmp_path_factory.mktemp("lake-job-srv")
    srv = start_server(base, mariadb_template)
    out = tmp_path_factory.mktemp("lake-job-binlogs")
    try:
        first = srv.current_binlog_file()
        all_types = run_all_types(srv)
        srv.flush_binary_logs()
        truth = run_all(srv)
        written = srv.binlog_files()
        for f in written[written.index(first):]:  # the open newest file too
            shutil.copyfile(f, out / f.name)
    finally:
        srv.stop(timeout=30)
    files = sorted(out.iterdir())
    built = build_transactions([str(f) for f in files])
    TIMINGS["workload"] = time.monotonic() - t0
    return Workload(out, files, truth, all_types, built)


# -- Spark and lakes -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def spark(spark_lake: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The shared session, typed tables switched off for this module (see the module doc)."""
    if spark_lake.sparkContext._jsc is None:  # another module stopped the shared session
        from binlake.config import load_settings
        from binlake.lake.spark import build_session

        home = tmp_path_factory.mktemp("lake-reboot")
        spark_lake = build_session(load_settings(env={"BINLAKE_HOME": str(home),
                                                      "BINLAKE_CATALOG_NAME": "lake_reboot"}),
                                   master="local[2]")
    try:
        import binlake.lake.typed as typed
    except ImportError:  # not built (yet): the job skips them itself
        typed = None
    with pytest.MonkeyPatch.context() as mp:
        if typed is not None:
            mp.setattr(typed, "prepare", lambda *a, **k: typed.Prepared([], {}, {}))
        yield spark_lake
    print("\ntest_lake_job timings: " + ", ".join(f"{k} {v:.1f}s" for k, v in TIMINGS.items()))


def make_lake(spark: Any, base: Path, name: str, **overrides: Any) -> Any:
    """Settings of a fresh lake: its own home and its own catalog name, registered on the
    shared session.  Its loads decode on the executors (``driver_decode_bytes`` 0, as a
    nightly's gigabytes do), unless ``overrides`` say otherwise: these inputs are small."""
    from binlake.config import load_settings
    from binlake.lake.spark import build_session

    overrides.setdefault("driver_decode_bytes", 0)

    settings = load_settings(env={"BINLAKE_HOME": str(base / name),
                                  "BINLAKE_CATALOG_NAME": f"lake_{name}"}, **overrides)
    build_session(settings, master="local[2]")
    return settings


def load(spark: Any, settings: Any, sources: Iterable[Any], run_id: str) -> Any:
    from binlake.lake.job import run_load

    t0 = time.monotonic()
    summary = run_load(spark, settings, [str(s) for s in sources], run_id=run_id)
    TIMINGS[f"load {run_id}"] = time.monotonic() - t0
    return summary


def core_tables() -> list[str]:
    from binlake.lake.tables import DDL

    return list(DDL)


def read_table(spark: Any, settings: Any, table: str, *, source: str | None = None
               ) -> list[dict[str, Any]]:
    """Every row as a dict; timestamps as epoch microseconds, arrays as lists."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampNTZType, TimestampType

    df = spark.table(settings.table(table))
    if source is not None:
        df = df.where(F.col("source") == source)
    cols = [F.unix_micros(F.col(f.name)).alias(f.name)
            if isinstance(f.dataType, (TimestampType, TimestampNTZType)) else F.col(f.name)
            for f in df.schema.fields]
    return [r.asDict(recursive=True) for r in df.select(*cols).collect()]


def _frozen(row: dict[str, Any], drop: Iterable[str] = ()) -> tuple[Any, ...]:
    skip = set(drop)
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v)
                        for k, v in row.items() if k not in skip))


def _xa_tables_pks(row: dict[str, Any]) -> dict[str, Any]:
    """A copy of an ``xa_prepares`` row whose ``pks`` keeps only the tables the prepared XA
    changed, in sorted order: what it holds beyond them is whatever Table_maps the decode
    range happened to see before the PREPARE (see test_xa_prepares_pks_independent_of_ranges).
    """
    from binlake.txn.xa import load_pending

    if row.get("pks") is None or row.get("state") is None:
        return row
    touched = {f"{c.db}.{c.table}" for t in load_pending(row["state"]) for c in t.changes}
    pks = json.loads(row["pks"])
    return {**row, "pks": json.dumps({k: pks[k] for k in sorted(pks) if k in touched})}


def frozen(raw: dict[str, list[dict[str, Any]]], drop: dict[str, set[str]] | None = None,
           xa_pks: bool = True) -> dict[str, Counter[tuple[Any, ...]]]:
    """Tables as multisets of rows, without the ``drop[table]`` columns (default: run_id and
    loaded_at); ``xa_pks``: ``xa_prepares.pks`` narrowed (``_xa_tables_pks``)."""
    drop = drop or {}
    return {t: Counter(_frozen(_xa_tables_pks(r) if t == "xa_prepares" and xa_pks else r,
                               drop.get(t, IGNORED) | ({"range_index"} if t == STREAM_FACTS
                                                       else set()))
                       for r in rows if t != STREAM_FACTS or r["kind"] != "range")
            for t, rows in raw.items()}


# stream_facts: compared without the range rows and range indexes, which follow how the
# files were cut into ranges and runs (what each range row holds: test_stream_facts)
STREAM_FACTS = "stream_facts"


def read_all(spark: Any, settings: Any, source: str | None = None
             ) -> dict[str, list[dict[str, Any]]]:
    return {t: read_table(spark, settings, t, source=source) for t in core_tables()}


def snapshot(spark: Any, settings: Any, drop: dict[str, set[str]] | None = None
             ) -> dict[str, Counter[tuple[Any, ...]]]:
    """Every core table of a lake (see ``frozen``)."""
    return frozen(read_all(spark, settings), drop)


def _short(row: tuple[Any, ...]) -> str:
    return "{" + ", ".join(f"{k}: {str(v)[:120]!r}" for k, v in row) + "}"


def diff(a: dict[str, Counter[Any]], b: dict[str, Counter[Any]], what: str = "") -> str:
    """'' when equal, else the first differences per table."""
    lines = []
    for t in sorted(set(a) | set(b)):
        ca, cb = a.get(t, Counter()), b.get(t, Counter())
        if ca == cb:
            continue
        only_a, only_b = list((ca - cb).elements()), list((cb - ca).elements())
        lines.append(f"{what}{t}: {len(only_a)} row(s) only left, {len(only_b)} only right")
        lines += [f"   left:  {_short(r)}" for r in sorted(only_a, key=repr)[:4]]
        lines += [f"   right: {_short(r)}" for r in sorted(only_b, key=repr)[:4]]
    return "\n".join(lines)


# -- expectations from the transaction layer -----------------------------------------------------


def _commit_us(part: Any) -> int | None:
    if part.commit_ts_us is not None:
        return int(part.commit_ts_us)
    return int(part.timestamp) * 1_000_000 if part.timestamp is not None else None


def _inline(text: str | None) -> str | None:
    if text is None or len(text) <= STATEMENT_INLINE:
        return text
    return text[:STATEMENT_INLINE] + "\u2026"


def expected_changes(built: Any) -> dict[tuple[int, int, int], dict[str, Any]]:
    """Applied row changes of the decided transactions, by order key, as row_changes columns
    (before/after parsed; pk left out: see ``check_pk``)."""
    out: dict[tuple[int, int, int], dict[str, Any]] = {}
    for t in built.transactions:
        if t.status == XA_PREPARED:
            continue
        for c in t.changes:
            if not c.applied:
                continue
            assert c.order is not None and c.order not in out, (t.id, c.order)
            out[c.order] = {
                "txn_id": t.id, "gtid": t.gtid, "commit_ts": _commit_us(t.part), "db": c.db,
                "tbl": c.table, "op": c.op, "before": c.before, "after": c.after,
                "statement": _inline(c.statement), "statement_pos": c.statement_pos,
                "file": c.file, "pos": c.pos, "row": c.row, "payload_index": c.payload_index,
                "statement_payload_index": c.statement_payload_index,
            }
    return out


def stored_changes(rows: list[dict[str, Any]]) -> dict[tuple[int, int, int], dict[str, Any]]:
    out: dict[tuple[int, int, int], dict[str, Any]] = {}
    for r in rows:
        key = (r["order_seq"], r["order_pos"], r["order_idx"])
        assert key not in out, f"order key {key} twice in row_changes"
        d = {k: v for k, v in r.items()
             if k not in ("source", "run_id", "order_seq", "order_pos", "order_idx", "pk")}
        d["before"] = json.loads(r["before"]) if r["before"] is not None else None
        d["after"] = json.loads(r["after"]) if r["after"] is not None else None
        out[key] = d
    return out


def compare_changes(expected: dict[Any, dict[str, Any]], got: dict[Any, dict[str, Any]]) -> str:
    lines = []
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    if missing:
        lines.append(f"{len(missing)} change(s) missing from row_changes, e.g. "
                     + "; ".join(f"{k} {expected[k]['db']}.{expected[k]['tbl']} "
                                 f"{expected[k]['op']} txn {expected[k]['txn_id']}"
                                 for k in missing[:5]))
    if extra:
        lines.append(f"{len(extra)} unexpected change(s) in row_changes, e.g. "
                     + "; ".join(f"{k} {got[k]['db']}.{got[k]['tbl']} {got[k]['op']} "
                                 f"txn {got[k]['txn_id']}" for k in extra[:5]))
    bad = 0
    for k in sorted(set(expected) & set(got)):
        e, g = expected[k], got[k]
        cols = [c for c in e if e[c] != g.get(c)]
        if cols:
            bad += 1
            if bad <= 8:
                lines.append(f"{k} {e['db']}.{e['tbl']} {e['op']}: " + ", ".join(
                    f"{c}: {str(g.get(c))[:100]!r} != expected {str(e[c])[:100]!r}"
                    for c in cols))
    if bad > 8:
        lines.append(f"... {bad} changes differ in all")
    return "\n".join(lines)


def check_pk(rows: list[dict[str, Any]], pk_columns: dict[str, list[str]] | None) -> list[str]:
    """docs/lake.md: ``pk`` is the JSON object of the primary-key columns of the after image
    (the before image for a delete), null when the image lacks a key column.  With
    ``pk_columns`` ("db.tbl" -> key columns) the exact value; otherwise consistency only."""
    problems = []
    for r in rows:
        img = json.loads(r["after"] if r["op"] != "delete" else r["before"])
        got = json.loads(r["pk"]) if r["pk"] is not None else None
        table = f"{r['db']}.{r['tbl']}"
        if pk_columns is not None:
            cols = pk_columns[table]
            want = {c: img[c] for c in cols} if all(c in img for c in cols) else None
        else:
            want = got if got is None or all(img.get(k) == v for k, v in got.items()) else "?"
        if got != want:
            problems.append(f"{table} {r['op']} at {(r['order_seq'], r['order_pos'])}: "
                            f"pk {got} != {want}")
    return problems


def expected_transactions(built: Any) -> dict[tuple[int, int], dict[str, Any]]:
    out = {}
    for t in built.transactions:
        if t.status == XA_PREPARED:
            continue
        counts = t.row_counts()
        begin = t.prepare or t.part
        xa = t.xa_xid
        out[(t.part.seq, t.part.end_pos)] = {
            "txn_id": t.id, "gtid": t.gtid, "kind": t.kind, "status": t.status,
            "begin_file": begin.file, "begin_pos": begin.begin_pos, "end_file": t.part.file,
            "end_pos": t.part.end_pos, "commit_ts": _commit_us(t.part),
            "end_event": t.end_event, "xid": t.xid,
            "xa_format_id": xa.format_id if xa else None, "xa_gtrid": xa.gtrid if xa else None,
            "xa_bqual": xa.bqual if xa else None, "one_phase": t.one_phase,
            "prepare_file": t.prepare.file if t.prepare else None,
            "prepare_pos": t.prepare.begin_pos if t.prepare else None,
            "prepare_gtid": t.prepare.gtid if t.prepare else None,
            "inserts": sum(v["insert"] for v in counts.values()),
            "updates": sum(v["update"] for v in counts.values()),
            "deletes": sum(v["delete"] for v in counts.values()),
            "tables": sorted(counts), "nontransactional": t.nontransactional,
            "statements": list(t.statements) or None,
        }
    return out


def compare_transactions(expected: dict[Any, dict[str, Any]], rows: list[dict[str, Any]]
                         ) -> str:
    got = {}
    for r in rows:
        key = (r["order_seq"], r["order_pos"])
        assert key not in got, f"transaction key {key} twice"
        got[key] = {k: v for k, v in r.items()
                    if k not in ("source", "run_id", "order_seq", "order_pos")}
    lines = []
    for k in sorted(set(expected) - set(got))[:8]:
        lines.append(f"missing {k}: {expected[k]['txn_id']} {expected[k]['status']}")
    for k in sorted(set(got) - set(expected))[:8]:
        lines.append(f"unexpected {k}: {got[k]['txn_id']} {got[k]['status']}")
    for k in sorted(set(expected) & set(got)):
        e, g = expected[k], got[k]
        cols = [c for c in e if e[c] != g.get(c)]
        if cols:
            lines.append(f"{k} {e['txn_id']}: " + ", ".join(
                f"{c}: {str(g.get(c))[:80]!r} != expected {str(e[c])[:80]!r}" for c in cols))
    return "\n".join(lines[:30])


def expected_prepares(built: Any) -> dict[tuple[int, int], dict[str, Any]]:
    """Every XA PREPARE group: of the decided XAs and of the ones still pending."""
    out = {}
    for t in built.transactions:
        if t.kind != "xa" or (t.prepare is None and t.status != XA_PREPARED):
            continue
        p = t.prepare if t.status != XA_PREPARED else t.part
        out[(p.seq, p.begin_pos)] = {
            "xa_format_id": t.xa_xid.format_id, "xa_gtrid": t.xa_xid.gtrid,
            "xa_bqual": t.xa_xid.bqual, "prepare_end_pos": p.end_pos, "prepare_file": p.file,
            "prepare_gtid": p.gtid, "rows": len(t.changes),
            "prepared_ts": p.timestamp * 1_000_000 if p.timestamp is not None else None,
        }
    return out


def replay(rows: list[dict[str, Any]], renames: dict[str, str]
           ) -> tuple[dict[str, dict[Any, dict[str, Any]]], list[tuple[str, str]]]:
    """Apply row_changes in order-key order by primary key ``id`` (every workload table has
    it), from the ``before``/``after`` JSON; problems as (table, message)."""
    problems: list[tuple[str, str]] = []
    state: dict[str, dict[Any, dict[str, Any]]] = {}
    for r in sorted(rows, key=lambda r: (r["order_seq"], r["order_pos"], r["order_idx"])):
        table = renames.get(f"{r['db']}.{r['tbl']}", f"{r['db']}.{r['tbl']}")
        cur = state.setdefault(table, {})
        before = json.loads(r["before"]) if r["before"] is not None else None
        after = json.loads(r["after"]) if r["after"] is not None else None
        row: dict[str, Any] = {}
        if r["op"] in ("update", "delete"):
            old = cur.pop(before["id"], None)
            if old is None:
                problems.append((table, f"{r['op']} of missing id {before['id']}"))
            else:
                row = old
        if r["op"] in ("insert", "update"):
            row = {**row, **after}
            if row["id"] in cur:
                problems.append((table, f"{r['op']} onto existing id {row['id']}"))
            cur[row["id"]] = row
    return state, problems


def same_rows(table: str, got: dict[Any, dict[str, Any]], want: list[dict[str, Any]],
              skip_ids: set[Any] = frozenset()) -> list[str]:
    expected = {r["id"]: r for r in want if r["id"] not in skip_ids}
    if sorted(got) != sorted(expected):
        return [f"{table}: ids {sorted(got)[:20]} != server {sorted(expected)[:20]}"]
    out = []
    for pk, row in expected.items():
        for col, w in row.items():
            g = got[pk].get(col)
            if isinstance(g, float) and isinstance(w, float) and math.isclose(g, w, rel_tol=1e-6):
                continue  # FLOAT columns: the server's text is rounded
            if g != w:
                out.append(f"{table} id={pk} {col}: replayed {str(g)[:80]!r} != server "
                           f"{str(w)[:80]!r}")
    return out


def file_infos(built: Any) -> dict[str, Any]:
    return {i.name: i for i in built.files}


# -- one run over everything -----------------------------------------------------------------------


@dataclass
class Lake:
    settings: Any
    summary: Any
    raw: dict[str, list[dict[str, Any]]]  # every core table, every column, after the load

    @property
    def snap(self) -> dict[str, Counter[Any]]:
        return frozen(self.raw)


@pytest.fixture(scope="module")
def one_run(spark: Any, workload: Workload, tmp_path_factory: pytest.TempPathFactory) -> Lake:
    """Every file in one load, one byte range per file (the default split_bytes)."""
    settings = make_lake(spark, tmp_path_factory.mktemp("lakes"), "all")
    summary = load(spark, settings, [workload.dir], "all-1")
    return Lake(settings, summary, read_all(spark, settings))


@pytest.fixture(scope="module")
def small_ranges(spark: Any, workload: Workload, tmp_path_factory: pytest.TempPathFactory
                 ) -> Lake:
    """Every file in one load, cut into ranges of about 1 KiB: below the configurable minimum
    (65536) on purpose, the workload's transaction files are a few KiB each; this puts XA
    PREPAREs and their COMMITs of one file in different ranges (mariadb-bin.000008, .000010
    in this workload)."""
    settings = make_lake(spark, tmp_path_factory.mktemp("lakes"), "small")
    settings = dataclasses.replace(settings, split_bytes=1024)
    summary = load(spark, settings, [workload.dir], "small-1")
    return Lake(settings, summary, read_all(spark, settings))


def test_workload(workload: Workload) -> None:
    assert len(workload.files) >= 7
    assert workload.built.files[-1].in_use, "the newest file should still be open"
    assert not [str(f) for f in workload.built.findings if f.severity == "error"]
    assert [e.label for e in workload.truth.pending] == ["b prepared first"]


def test_one_run_summary(one_run: Lake, workload: Workload) -> None:
    s = one_run.summary
    assert s.run_id == "all-1" and s.source == "default"
    assert [f["file"] for f in s.files] == workload.names
    assert not s.failed, s.failed
    assert s.bytes == sum(f.stat().st_size for f in workload.files)
    assert s.ranges >= len(workload.files)
    decided = Counter(t.status for t in workload.built.transactions if t.status != XA_PREPARED)
    assert s.transactions == dict(decided)
    rows = Counter(f"{c['db']}.{c['tbl']}" for c in expected_changes(workload.built).values())
    assert s.rows == dict(rows)
    assert [(p["xa_format_id"], p["xa_gtrid"], p["xa_bqual"]) for p in s.pending] == [
        r["key"] for r in workload.truth.xa_recover]
    assert not [f for f in s.findings if f.get("severity", "error") == "error"], s.findings


def test_row_changes_equal_transaction_layer(one_run: Lake, workload: Workload) -> None:
    rows = one_run.raw["row_changes"]
    expected = expected_changes(workload.built)
    report = compare_changes(expected, stored_changes(rows))
    assert not report, report
    # per table and operation, as counted by the transaction layer
    per_table: Counter[tuple[str, str, str]] = Counter(
        (e["db"], e["tbl"], e["op"]) for e in expected.values())
    assert Counter((r["db"], r["tbl"], r["op"]) for r in rows) == per_table
    # every workload table's primary key is `id`
    problems = check_pk(rows, {t: ["id"] for t in {f"{r['db']}.{r['tbl']}" for r in rows}})
    assert not problems, "\n".join(problems[:10])


def test_row_changes_replay_to_server_state(one_run: Lake, workload: Workload) -> None:
    truth = workload.truth
    state, replayed = replay(one_run.raw["row_changes"], truth.renames)
    compared = truth.row_tables | {f"{WL_DB}.{t}" for t in FULL_IMAGE_TABLES}
    problems = [f"{t}: {m}" for t, m in replayed if t in compared]
    assert truth.row_tables
    for table in sorted(truth.row_tables):
        problems += same_rows(table, state.get(table, {}), truth.state[table])
    contract = workload.all_types["contract"]
    for t in FULL_IMAGE_TABLES:
        name = f"{WL_DB}.{t}"
        problems += same_rows(name, state.get(name, {}), contract[name],
                              STATEMENT_LOGGED_IDS.get(t, set()))
    assert not problems, "\n".join(problems[:20])


def test_statements_table(one_run: Lake, workload: Workload) -> None:
    stored = {(r["file"], r["pos"], r["payload_index"]): r["statement"]
              for r in one_run.raw["statements"]}
    want = {}
    for t in workload.built.transactions:
        for c in t.changes:
            if c.statement is not None and c.statement_pos is not None:
                want[(c.file, c.statement_pos, c.statement_payload_index)] = c.statement
    # the texts of applied changes at least; undone or pending changes' texts may be there too
    applied = {(e["file"], e["statement_pos"], e["statement_payload_index"])
               for e in expected_changes(workload.built).values()
               if e["statement_pos"] is not None}
    assert applied <= set(stored)
    assert set(stored) <= set(want)
    wrong = [k for k in stored if stored[k] != want[k]]
    assert not wrong, wrong[:5]
    assert any(len(v) > STATEMENT_INLINE for v in stored.values())  # the 3 MiB LONGBLOB insert


def test_transactions_equal_transaction_layer(one_run: Lake, workload: Workload) -> None:
    report = compare_transactions(expected_transactions(workload.built),
                                  one_run.raw["transactions"])
    assert not report, report


def test_xa_prepares_and_pending(one_run: Lake, workload: Workload) -> None:
    built, truth = workload.built, workload.truth
    got = {(r["prepare_seq"], r["prepare_pos"]): {k: r[k] for k in (
        "xa_format_id", "xa_gtrid", "xa_bqual", "prepare_end_pos", "prepare_file",
        "prepare_gtid", "rows", "prepared_ts")} for r in one_run.raw["xa_prepares"]}
    assert got == expected_prepares(built)
    pending = sorted(one_run.raw["xa_pending"], key=lambda r: (r["prepare_seq"],
                                                               r["prepare_pos"]))
    assert [(r["xa_format_id"], r["xa_gtrid"], r["xa_bqual"]) for r in pending] == [
        r["key"] for r in truth.xa_recover]
    for r, e, t in zip(pending, truth.pending, built.pending):
        # where the server says it prepared it, and what binlake's own reading says
        assert (r["prepare_file"], r["prepare_gtid"]) == (e.prepare_file, e.prepare_gtid)
        assert r["rows"] == len(e.applied) == len(t.changes)
        assert (r["prepare_seq"], r["prepare_pos"]) == (t.part.seq, t.part.begin_pos)
        assert r["as_of_file"] == workload.names[-1]
        assert r["age_seconds"] == t.age_seconds
        assert r["run_id"] == "all-1"


def test_files_table(one_run: Lake, workload: Workload) -> None:
    rows = {r["file"]: r for r in one_run.raw["files"]}
    assert sorted(rows) == workload.names
    infos = file_infos(workload.built)
    for n, path in enumerate(workload.files):
        r, info = rows[path.name], infos[path.name]
        data = path.read_bytes()
        newest = n == len(workload.files) - 1
        assert r["source"] == "default"
        assert r["status"] == "loaded" and r["error"] is None and r["error_offset"] is None
        assert r["sha256"] == hashlib.sha256(data).hexdigest()
        assert r["size"] == len(data)
        assert r["uri"] == str(path)
        assert r["seq"] == int(path.name.rsplit(".", 1)[1])
        assert (r["server_version"], r["flavor"], r["checksum_alg"]) == (
            info.server_version, info.flavor, info.checksum_alg)
        assert r["in_use"] is newest
        assert r["closed_cleanly"] is (not newest), path.name
        assert (r["first_gtid"], r["last_gtid"]) == (info.first_gtid, info.last_gtid)
        assert (r["first_ts"], r["last_ts"]) == (info.first_timestamp * 1_000_000,
                                                 info.last_timestamp * 1_000_000)
        assert r["ranges"] >= 1
        assert r["run_id"] == "all-1" and r["loaded_at"] is not None


def test_files_event_counts(one_run: Lake, workload: Workload) -> None:
    """``files.events``: every event of the file, its Format_description included (the
    transaction layer's count; the corpus MANIFEST's scanner counts the same way)."""
    got = {r["file"]: r["events"] for r in one_run.raw["files"]}
    assert got == {i.name: i.events for i in workload.built.files}


def test_files_row_change_counts(one_run: Lake, workload: Workload) -> None:
    """docs/lake.md: ``files.row_changes`` = applied row changes of the transactions decided
    in the file, an XA's rows not counted."""
    decided = [t for t in workload.built.transactions if t.status != XA_PREPARED]
    got = {r["file"]: r["row_changes"] for r in one_run.raw["files"]}
    assert got == {f: sum(1 for t in decided if t.part.file == f and t.kind != "xa"
                          for c in t.changes if c.applied) for f in workload.names}


def test_files_transaction_counts(one_run: Lake, workload: Workload) -> None:
    """docs/lake.md: ``files.transactions`` = transactions decided in the file (XA PREPARE
    groups not counted): the ``transactions`` rows whose ``end_file`` it is."""
    decided = [t for t in workload.built.transactions if t.status != XA_PREPARED]
    got = {r["file"]: r["transactions"] for r in one_run.raw["files"]}
    assert got == {f: sum(1 for t in decided if t.part.file == f) for f in workload.names}
    assert {f: n for f, n in got.items() if n} == dict(
        Counter(t["end_file"] for t in one_run.raw["transactions"]))


def test_pyiceberg_reads_the_same(one_run: Lake) -> None:
    from binlake.lake.spark import pyiceberg_catalog

    cat = pyiceberg_catalog(one_run.settings)
    ns = one_run.settings.namespace
    for t in ("row_changes", "transactions", "files", "xa_pending"):
        arrow = cat.load_table(f"{ns}.{t}").scan().to_arrow()
        assert arrow.num_rows == len(one_run.raw[t]), t
    keys = cat.load_table(f"{ns}.row_changes").scan(
        selected_fields=("order_seq", "order_pos", "order_idx")).to_arrow().to_pylist()
    assert sorted((k["order_seq"], k["order_pos"], k["order_idx"]) for k in keys) == sorted(
        (r["order_seq"], r["order_pos"], r["order_idx"]) for r in one_run.raw["row_changes"])


# -- the same data, loaded differently ------------------------------------------------------------


def test_decoded_in_the_driver_same_result(spark: Any, workload: Workload, one_run: Lake,
                                           tmp_path_factory: pytest.TempPathFactory) -> None:
    """A small input surveyed and decoded in the driver's process (``driver_decode_bytes``:
    no executor task, no Python worker) gives exactly the executors' lake, XA pairing across
    files included."""
    settings = make_lake(spark, tmp_path_factory.mktemp("lakes"), "here",
                         driver_decode_bytes=1 << 30)
    summary = load(spark, settings, [workload.dir], "here-1")
    assert summary.in_driver and not one_run.summary.in_driver
    assert not summary.failed and summary.ranges == one_run.summary.ranges
    report = diff(frozen(one_run.raw), frozen(read_all(spark, settings)),
                  "executors vs driver: ")
    assert not report, report
    # too big for the driver (the bound is the files' bytes in all): the executors decode
    low = make_lake(spark, tmp_path_factory.mktemp("lakes"), "low",
                    driver_decode_bytes=one_run.summary.bytes - 1)
    assert not load(spark, low, [workload.dir], "low-1").in_driver


def test_small_ranges_same_result(one_run: Lake, small_ranges: Lake) -> None:
    """Many byte ranges per file give exactly the one-range result; only ``files.ranges``
    differs (and ``xa_prepares.pks`` beyond the XA's own tables: see the next test)."""
    assert not small_ranges.summary.failed
    assert small_ranges.summary.ranges > one_run.summary.ranges + 30
    ranges = {r["file"]: r["ranges"] for r in small_ranges.raw["files"]}
    assert sum(1 for n in ranges.values() if n > 1) >= 8, ranges
    drop = {"files": IGNORED}
    report = diff(frozen(one_run.raw, drop), frozen(small_ranges.raw, drop),
                  "one range vs many: ")
    assert not report, report
    assert sum(r["kind"] == "group" for r in one_run.raw["stream_facts"]) > 100
    n_ranges = sum(r["kind"] == "range" for r in small_ranges.raw["stream_facts"])
    assert n_ranges == small_ranges.summary.ranges


def test_small_flushes_same_result(spark: Any, workload: Workload, one_run: Lake,
                                   tmp_path_factory: pytest.TempPathFactory) -> None:
    """Decode tasks that write their records after every event that gave some
    (``flush_bytes`` 1; the default writes every 32 MiB of binlog): many data files per
    range, exactly the tables one write per range gives."""
    settings = make_lake(spark, tmp_path_factory.mktemp("lakes"), "flush", flush_bytes=1)
    summary = load(spark, settings, [workload.dir], "flush-1")
    assert not summary.failed

    def data_files(s: Any) -> int:
        return spark.sql(f"SELECT count(*) n FROM {s.table('row_changes')}.files"
                         ).collect()[0]["n"]

    assert data_files(settings) > 2 * data_files(one_run.settings)
    report = diff(frozen(one_run.raw, {"files": IGNORED}),
                  frozen(read_all(spark, settings), {"files": IGNORED}), "one write vs many: ")
    assert not report, report


def test_xa_prepares_pks_independent_of_ranges(one_run: Lake, small_ranges: Lake) -> None:
    def pks(lake: Lake) -> dict[tuple[int, int], str]:
        return {(r["prepare_seq"], r["prepare_pos"]): r["pks"] for r in lake.raw["xa_prepares"]}

    assert pks(one_run) == pks(small_ranges)


def test_decided_xas_written_in_one_round(spark: Any, small_ranges: Lake) -> None:
    """The XAs a run decides are rebuilt on the executors in one round of tasks (at most one
    per core), whatever the number of decode ranges their PREPAREs came from: fewer, larger
    data files.  Each such task names its files ``...-xa-<task>-<batch>-...``."""
    settings = small_ranges.settings
    decided = [r for r in small_ranges.raw["transactions"]
               if r["kind"] == "xa" and r["prepare_file"] is not None]
    # PREPAREs from enough ranges that one task per range would be more than one round
    prep_at = {(r["prepare_file"], r["prepare_pos"]) for r in decided}
    assert len({f for f, _ in prep_at}) >= 3, prep_at
    tasks: dict[str, set[str]] = {}
    for table in ("transactions", "row_changes"):
        paths = [r["file_path"] for r in spark.sql(
            f"SELECT file_path FROM {settings.table(table)}.files").collect()]
        tasks[table] = {m.group(1) for p in paths
                        if (m := re.search(r"-xa-([0-9a-f]{12})-\d+-", p))}
    cores = spark.sparkContext.defaultParallelism
    assert 1 <= len(tasks["transactions"]) <= cores, tasks
    assert tasks["row_changes"] <= tasks["transactions"], tasks
    # and every decided XA's transaction row is in those files
    xa_rows = spark.sql(
        f"SELECT count(*) n FROM {settings.table('transactions')} WHERE kind = 'xa' AND "
        "prepare_file IS NOT NULL AND input_file_name() RLIKE '-xa-[0-9a-f]{12}-'"
    ).collect()[0]["n"]
    assert xa_rows == len(decided)


def test_xas_decided_in_their_range(spark: Any, workload: Workload, one_run: Lake,
                                     small_ranges: Lake,
                                     tmp_path_factory: pytest.TempPathFactory,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """An XA whose COMMIT/ROLLBACK follows its PREPARE in one decode range is decided by that
    decode task (extract.decode_range: its rows written with the range's, its decision
    checked by the driver against its pairing: xa.local_decisions); the 1 KiB ranges put
    PREPAREs and COMMITs apart (the driver's pairing and a Spark job decide those), and
    the lakes are the same (test_small_ranges_same_result).  So is a lake loaded with no
    decision in a range (the data sink's local_xa off).  A file whose decisions in a range
    the pairing does not back fails, and nothing of it lands."""
    from binlake.lake import land as J

    assert one_run.summary.xa_decided_in_range >= 3, one_run.summary.xa_decided_in_range
    assert small_ranges.summary.xa_decided_in_range < one_run.summary.xa_decided_in_range
    decided = [r for r in one_run.raw["transactions"]
               if r["kind"] == "xa" and r["prepare_file"] is not None]
    assert one_run.summary.xa_decided_in_range <= len(decided)

    sink_of = J._data_sink

    def no_local_xa(*a: Any, **k: Any) -> Any:
        return dataclasses.replace(sink_of(*a, **k), local_xa=False)

    monkeypatch.setattr(J, "_data_sink", no_local_xa)
    off = make_lake(spark, tmp_path_factory.mktemp("lakes"), "xa_off")
    summary = load(spark, off, [workload.dir], "xa-off-1")
    assert summary.xa_decided_in_range == 0 and not summary.failed
    report = diff(frozen(one_run.raw), frozen(read_all(spark, off)), "in range vs not: ")
    assert not report, report
    monkeypatch.setattr(J, "_data_sink", sink_of)

    checked = J.local_decisions
    flagged: list[str] = []

    def not_backed(batches: list[dict[str, Any]], resolutions: Any) -> Any:
        done, wrong = checked(batches, resolutions)
        assert not wrong, wrong  # (backed, but for the file flagged here)
        if batches and not flagged:
            flagged.append(batches[0]["file"])
        return done, {f: "not backed (test)" for f in flagged
                      if any(b["file"] == f for b in batches)}

    monkeypatch.setattr(J, "local_decisions", not_backed)
    lake = make_lake(spark, tmp_path_factory.mktemp("lakes"), "xa_wrong")
    from binlake.lake.job import run_load

    summary = run_load(spark, lake, [str(workload.dir)], run_id="xa-wrong-1")
    assert [(f["file"], f["error"]) for f in summary.failed] == [
        (flagged[0], "not backed (test)")], summary.failed
    assert len(summary.loaded) == len(workload.files) - 1
    raw = read_all(spark, lake)
    assert raw["row_changes"] and not [r for r in raw["row_changes"] if r["file"] == flagged[0]]
    assert not [r for r in raw["transactions"] if flagged[0] in (r["begin_file"],
                                                                 r["end_file"])]


def test_local_decisions_backed_by_the_pairing() -> None:
    from binlake.lake.xa import local_decisions

    part = {"file": "b.000001", "seq": 1, "begin_pos": 500, "end_pos": 600, "gtid": None,
            "timestamp": 1, "commit_ts_us": None}
    res = {("b.000001", 100): {"commit": True, "part": part, "end_event": "XA COMMIT"},
           ("b.000001", 200): {"commit": False, "part": part, "end_event": "XA ROLLBACK"},
           ("b.000001", 300): {"commit": True, "part": part, "end_event": "XA COMMIT",
                               "late": True, "xid": (1, "x", "")}}

    def batch(*decisions: tuple[int, bool, str], **moved: Any) -> dict[str, Any]:
        return {"file": "b.000001", "decisions": [
            {"prepare_file": "b.000001", "prepare_pos": pos, "commit": commit,
             "part": dict(part, **moved), "end_event": ev} for pos, commit, ev in decisions]}

    good = batch((100, True, "XA COMMIT"), (200, False, "XA ROLLBACK"))
    assert local_decisions([good], res) == ({("b.000001", 100), ("b.000001", 200)}, {})
    for bad in (batch((100, False, "XA COMMIT")),  # the other decision
                batch((100, True, "XA ROLLBACK")),
                batch((100, True, "XA COMMIT"), (400, True, "XA COMMIT")),  # not paired
                batch((300, True, "XA COMMIT")),  # decided by a later run's stored one
                batch((100, True, "XA COMMIT"), end_pos=601),  # another COMMIT
                batch((100, True, "XA COMMIT"), (100, True, "XA COMMIT"))):  # twice
        done, wrong = local_decisions([bad], res)
        assert done == set() and list(wrong) == ["b.000001"], bad
        assert "not back" in wrong["b.000001"]
    # another file's batch is not touched by one that fails
    other = {"file": "b.000002", "decisions": [dict(good["decisions"][0],
                                                   prepare_file="b.000002")]}
    res2 = {**res, ("b.000002", 100): res[("b.000001", 100)]}
    done, wrong = local_decisions([batch((100, False, "XA COMMIT")), other], res2)
    assert done == {("b.000002", 100)} and list(wrong) == ["b.000001"]


def test_engines_known_across_ranges(workload: Workload) -> None:
    """The executor function alone (no Spark): the file with the statement-format ROLLBACK
    that changed a MyISAM table (nontransactional), cut into two ranges right before it, as
    a split_bytes can cut it."""
    from binlake.lake import extract as X
    from binlake.lake.records import TXN
    from binlake.lake.survey import engine_seeds
    from binlake.txn.split import split_file

    t = next(t for t in workload.built.transactions
             if t.status == "rolled_back" and t.nontransactional)
    ddl = [d for d in workload.built.transactions if d.kind == "ddl"
           and d.part.file == t.part.file and d.part.end_pos <= t.part.begin_pos
           and re.search(r"ENGINE=(MyISAM|Aria)", " ".join(d.statements), re.I)]
    assert ddl, "the rollback's MyISAM table is created earlier in the same file"
    path = workload.dir / t.part.file
    first = split_file(str(path))[0].start
    cut, end = t.part.begin_pos, path.stat().st_size
    records = []
    # the job seeds every range with the DDL state at its start (engine_seeds)
    (seeds,) = engine_seeds([str(path)], [[first, cut]])
    for index, (a, b) in enumerate(((first, cut), (cut, end))):
        records += X.decode_range(X.RangeTask(str(path), path.name, t.part.seq, a, b, index,
                                              index == 1, (), seeds[index]))
    got = {r["begin_pos"]: r["nontransactional"] for k, r in records if k == TXN}
    assert got[t.part.begin_pos] is True


def test_engine_seeds_carry_ddl_across_files() -> None:
    """The job surveys each file's DDL on its own executor and the driver chains them
    (seeds_from): a range starts with the DDL of every earlier file and of its own file
    before it, not with the DDL at or after its start."""
    from binlake.lake.survey import seeds_from

    ddl = [[(100, "shop", "CREATE TABLE t1 (a INT) ENGINE=MyISAM"),
            (300, "shop", "CREATE TABLE t2 (a INT) ENGINE=InnoDB")],
           [],
           [(50, "shop", "ALTER TABLE t1 ENGINE=InnoDB")]]
    got = seeds_from(ddl, [[4, 100, 200], [4], [4, 50, 51]],
                       seed=(("old.t0", False),))
    t0, t1_myisam = ("old.t0", False), ("shop.t1", False)
    assert got[0] == [(t0,), (t0,), (t0, t1_myisam)]  # the CREATE at 100: not yet at 100
    assert t1_myisam in got[1][0] and ("shop.t2", True) in got[1][0]
    assert got[2][0] == got[1][0]  # an empty file changes nothing
    assert got[2][1] == got[1][0] and ("shop.t1", True) in got[2][2]


def _xa_across(workload: Workload, gap: int) -> tuple[int, Any]:
    """An XA decided ``gap`` or more files after its PREPARE: (index of its PREPARE file,
    the transaction)."""
    names = workload.names
    for t in workload.built.transactions:
        if t.kind == "xa" and t.prepare is not None and t.status != XA_PREPARED:
            i, j = names.index(t.prepare.file), names.index(t.part.file)
            if j - i >= gap:
                return i, t
    raise AssertionError(f"the workload has no XA decided {gap} files after its PREPARE")


def _pending_keys(spark: Any, settings: Any) -> set[tuple[int, str, str]]:
    return {(r["xa_format_id"], r["xa_gtrid"], r["xa_bqual"])
            for r in read_table(spark, settings, "xa_pending")}


def _xid(t: Any) -> tuple[int, str, str]:
    return (t.xa_xid.format_id, t.xa_xid.gtrid, t.xa_xid.bqual)


def test_two_runs_same_as_one(spark: Any, workload: Workload, one_run: Lake,
                              tmp_path_factory: pytest.TempPathFactory) -> None:
    from binlake.txn.build import build_transactions

    i, xa = _xa_across(workload, 1)
    k = i + 1  # the PREPARE in the first run, the COMMIT/ROLLBACK in the second
    settings = make_lake(spark, tmp_path_factory.mktemp("lakes"), "two")
    s1 = load(spark, settings, workload.files[:k], "two-1")
    assert not s1.failed
    pending = _pending_keys(spark, settings)
    assert _xid(xa) in pending
    first_half = build_transactions([str(f) for f in workload.files[:k]])
    assert pending == {_xid(t) for t in first_half.pending}
    got = {(r["order_seq"], r["order_pos"], r["order_idx"])
           for r in read_table(spark, settings, "row_changes")}
    assert got == set(expected_changes(first_half))
    s2 = load(spark, settings, workload.files[k:], "two-2")
    assert not s2.failed
    assert _xid(xa) not in _pending_keys(spark, settings)
    report = diff(one_run.snap, snapshot(spark, settings), "one run vs two: ")
    assert not report, report


def test_three_runs_same_as_one(spark: Any, workload: Workload, one_run: Lake,
                                tmp_path_factory: pytest.TempPathFactory) -> None:
    """Cut so that an XA is prepared in run 1, still pending after run 2 (which holds no
    part of it) and decided in run 3."""
    i, xa = _xa_across(workload, 2)
    cuts = [0, i + 1, i + 2, len(workload.files)]
    settings = make_lake(spark, tmp_path_factory.mktemp("lakes"), "three")
    for n, (a, b) in enumerate(itertools.pairwise(cuts), 1):
        summary = load(spark, settings, workload.files[a:b], f"three-{n}")
        assert not summary.failed
        assert (_xid(xa) in _pending_keys(spark, settings)) is (n < 3), n
    report = diff(one_run.snap, snapshot(spark, settings), "one run vs three: ")
    assert not report, report


def test_later_files_first_same_as_one(spark: Any, workload: Workload, one_run: Lake,
                                       tmp_path_factory: pytest.TempPathFactory) -> None:
    """A backfill in reverse: the files holding an XA's COMMIT/ROLLBACK are loaded in a run
    before the files holding its PREPARE.  The first run can only record the decision
    without its PREPARE (no rows, a warning); the second run, finding the PREPARE, must
    decide it at the stored COMMIT's position: the lake ends as one run over every file."""
    i, xa = _xa_across(workload, 1)
    k = i + 1  # the PREPARE in the second run, the COMMIT/ROLLBACK in the first
    settings = make_lake(spark, tmp_path_factory.mktemp("lakes"), "reverse")
    s1 = load(spark, settings, workload.files[k:], "reverse-1")
    assert not s1.failed
    assert any(f["kind"] in ("xa_commit_without_prepare", "xa_rollback_without_prepare")
               for f in s1.findings)
    orphans = [r for r in read_table(spark, settings, "transactions")
               if r["kind"] == "xa" and r["prepare_file"] is None]
    assert orphans  # the first run's view: decisions without their PREPARE
    s2 = load(spark, settings, workload.files[:k], "reverse-2")
    assert not s2.failed
    assert _xid(xa) not in _pending_keys(spark, settings)
    # the summary names each XA prepared in the second run and decided in the first, as
    # the transaction layer over every file in one pass sees them
    from binlake.lake.summary import summary_text

    names = workload.names
    expected = sorted(
        (str(t.xa_xid), t.prepare.file, t.prepare.begin_pos, t.status, t.part.file,
         t.part.end_pos) for t in workload.built.transactions
        if t.kind == "xa" and t.prepare is not None and t.status != XA_PREPARED
        and names.index(t.prepare.file) < k <= names.index(t.part.file))
    assert expected
    assert sorted((d["xid"], d["prepare_file"], d["prepare_pos"], d["status"], d["end_file"],
                   d["end_pos"]) for d in s2.xa_decided_late) == expected
    assert f"XA decided at a COMMIT/ROLLBACK loaded before: {len(expected)}" \
        in summary_text(s2)
    # files.engines of the files loaded first hold what their DDL alone said (they could
    # not see the earlier files' DDL); everything else is as one run made it
    drop = {"files": {*IGNORED, "engines"}}
    report = diff(frozen(one_run.raw, drop), snapshot(spark, settings, drop),
                  "one run vs reversed: ")
    assert not report, report
    # loading the later files again (``reload``) seeds them from the earlier ones: now even
    # files.engines is as one run made it
    from binlake.lake.job import run_load

    s3 = run_load(spark, settings, [str(f) for f in workload.files[k:]], run_id="reverse-3",
                  reload=True)
    assert not s3.failed
    report = diff(one_run.snap, snapshot(spark, settings), "one run vs reversed + reload: ")
    assert not report, report


def _changed_only(before: list[dict[str, Any]], after: list[dict[str, Any]], key: str,
                  cols: set[str]) -> list[str]:
    """Rows matched on ``key``; every column but ``cols`` must be equal."""
    a = {r[key]: r for r in before}
    b = {r[key]: r for r in after}
    assert sorted(a) == sorted(b)
    return [f"{k}.{c}: {a[k][c]!r} -> {b[k][c]!r}" for k in a for c in a[k]
            if c not in cols and a[k][c] != b[k][c]]


def test_rerun_changes_nothing(spark: Any, workload: Workload, one_run: Lake) -> None:
    """The same load again: every file is skipped (same sha256) and every table, every
    column (run_id and loaded_at included), is exactly as before."""
    settings = one_run.settings
    summary = load(spark, settings, [workload.dir], "all-2")
    assert not summary.failed
    assert [f["file"] for f in summary.skipped] == workload.names
    assert summary.transactions == one_run.summary.transactions
    assert summary.rows == one_run.summary.rows
    for t in core_tables():
        assert Counter(_frozen(r) for r in read_table(spark, settings, t)) == Counter(
            _frozen(r) for r in one_run.raw[t]), t


def test_backfill_changes_nothing(spark: Any, workload: Workload, one_run: Lake) -> None:
    """Everything loaded, then the first two files again (the second holds XA PREPAREs whose
    COMMITs are in later files): both are skipped, nothing changes."""
    settings = one_run.settings
    before = {t: read_table(spark, settings, t) for t in core_tables()}
    summary = load(spark, settings, workload.files[:2], "backfill")
    assert not summary.failed
    assert [f["status"] for f in summary.files] == ["skipped", "skipped"]
    for t in core_tables():
        assert Counter(_frozen(r) for r in read_table(spark, settings, t)) == Counter(
            _frozen(r) for r in before[t]), t


def test_reload_rewrites_only_run_ids(spark: Any, workload: Workload,
                                      tmp_path_factory: pytest.TempPathFactory) -> None:
    """``reload``: files 2..4 decoded again over a lake that has them all: the rows they
    contributed are replaced by the same rows (only run_id differs, and only on those
    rows); every other row is untouched."""
    settings = make_lake(spark, tmp_path_factory.mktemp("lakes"), "reload")
    load(spark, settings, [workload.dir], "reload-1")
    before = read_all(spark, settings)
    from binlake.lake.job import run_load

    again = workload.files[1:4]
    seqs = {binlog_seq(f) for f in again}
    summary = run_load(spark, settings, [str(f) for f in again], run_id="reload-2",
                       reload=True)
    assert [f["status"] for f in summary.files] == ["loaded"] * 3
    after = read_all(spark, settings)
    assert diff(frozen(before), frozen(after)) == ""
    # run_id moved exactly on the rows of the reloaded files
    keyed = {"row_changes": "order_seq", "transactions": "order_seq",
             "xa_prepares": "prepare_seq", "files": "seq"}
    for t, col in keyed.items():
        for r in after[t]:
            assert (r["run_id"] == "reload-2") is (r[col] in seqs), (t, r[col], r["run_id"])


def test_same_run_id_again_keeps_committed_files(spark: Any, workload: Workload,
                                                 tmp_path_factory: pytest.TempPathFactory
                                                 ) -> None:
    """A retried Airflow task runs the load again under the same run id (here with
    ``reload``, so it decodes again): its executors must write new data files, not
    overwrite the ones the first attempt committed (their delete files point at them by
    position), and the lake ends as after one load."""
    from binlake.lake.job import run_load

    settings = make_lake(spark, tmp_path_factory.mktemp("lakes"), "same_run_id")
    some = workload.files[:3]
    run_load(spark, settings, [str(f) for f in some], run_id="retry")
    records = ("row_changes", "transactions", "statements", "xa_prepares")

    def data_files() -> dict[str, tuple[str, float]]:
        out = {}
        for t in records:
            for r in spark.sql(f"SELECT file_path FROM {settings.table(t)}.all_data_files"
                               ).collect():
                path = Path(r[0].split(":", 1)[-1])
                out[str(path)] = (t, path.stat().st_mtime_ns)
        return out

    first = data_files()
    before = read_all(spark, settings)
    run_load(spark, settings, [str(f) for f in some], run_id="retry", reload=True)
    second = data_files()
    assert first and all(second[p] == first[p] for p in first), "a committed file changed"
    assert {t for t, _ in (second[p] for p in set(second) - set(first))} == set(records)
    assert diff(frozen(before), frozen(read_all(spark, settings))) == ""


def binlog_seq(path: Path) -> int:
    return int(path.name.rsplit(".", 1)[1])


def test_changed_file_is_a_conflict(spark: Any, workload: Workload, one_run: Lake,
                                    tmp_path: Path) -> None:
    """A loaded file delivered again with other bytes under the same name: reported as a
    conflict (the run fails), nothing in the lake changes."""
    settings = one_run.settings
    before = read_all(spark, settings)
    f = workload.files[2]
    copy = tmp_path / f.name
    data = bytearray(f.read_bytes())
    data[-1] ^= 0xFF
    copy.write_bytes(bytes(data))
    summary = load(spark, settings, [copy], "conflict")
    assert [(x["file"], x["status"]) for x in summary.failed] == [(f.name, "conflict")]
    assert "differs from the loaded file" in summary.failed[0]["error"]
    after = read_all(spark, settings)
    for t in core_tables():
        assert Counter(_frozen(r) for r in after[t]) == Counter(
            _frozen(r) for r in before[t]), t


def test_recorded_sha256_mismatch_fails_the_file(spark: Any, workload: Workload,
                                                 tmp_path_factory: pytest.TempPathFactory
                                                 ) -> None:
    """The archive's sidecar (``_meta/<name>.json``) records each file's sha256: a file
    whose bytes differ from it fails (nothing from it lands); one recorded right loads."""
    base = tmp_path_factory.mktemp("recorded")
    d = base / "archive"
    (d / "_meta").mkdir(parents=True)
    files = workload.files[:3]
    for i, f in enumerate(files):
        shutil.copyfile(f, d / f.name)
        sha = hashlib.sha256(f.read_bytes()).hexdigest()
        (d / "_meta" / f"{f.name}.json").write_text(json.dumps(
            {"sha256": sha if i != 1 else "0" * 64}))
    settings = make_lake(spark, base, "recorded")
    summary = load(spark, settings, [d], "recorded-1")
    status = {x["file"]: x["status"] for x in summary.files}
    assert status == {files[0].name: "loaded", files[1].name: "failed",
                      files[2].name: "loaded"}
    rows = {r["file"]: r for r in read_table(spark, settings, "files")}
    assert "recorded when it was archived" in rows[files[1].name]["error"]
    assert not [r for r in read_table(spark, settings, "row_changes")
                if r["order_seq"] == binlog_seq(files[1])]


def test_delete_on_a_branch_of_a_file_matching_in_part(spark: Any, tmp_path: Path) -> None:
    """A DELETE on the write-audit-publish branch whose condition matches every file of
    main but only some rows of a file the branch added (a TRUNCATE after the night's first
    changes of a table): Iceberg's Spark DELETE, given the branch by ``spark.wap.branch``,
    judged it a whole-file delete from main's files and failed on the branch's ("Cannot
    delete file where some, but not all, rows match filter").  On a branch, DELETEs are
    row-level now (on_branch): the matching rows go, the others stay, main is untouched."""
    from binlake.lake.branch import on_branch
    from binlake.lake.tables import delete_where

    settings = make_lake(spark, tmp_path, "branch_delete")
    t = settings.table("part_match")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {settings.catalog_name}.{settings.namespace}")
    spark.sql(f"CREATE TABLE {t} (k INT, seq INT) USING iceberg "
              "TBLPROPERTIES ('write.wap.enabled'='true')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 0), (2, 0)")
    with on_branch(spark, "night_b"):
        spark.createDataFrame([(3, 1), (4, 3)], "k INT, seq INT").coalesce(1) \
            .writeTo(t).append()
        assert delete_where(spark, t, "seq < 2")
    def rows(ref: str) -> list[tuple[Any, ...]]:
        return sorted(tuple(r) for r in spark.read.option("branch", ref).table(t).collect())

    assert rows("night_b") == [(4, 3)]
    assert rows("main") == [(1, 0), (2, 0)]
    assert spark.conf.get("spark.sql.optimizer.excludedRules", None) is None  # restored


def test_branch_publish_and_discard(spark: Any, workload: Workload, one_run: Lake,
                                    tmp_path_factory: pytest.TempPathFactory) -> None:
    """Write-audit-publish: a load on a branch leaves main as it was; discarding the branch
    changes nothing; loading again on a branch and publishing gives main the same contents as
    one plain run over everything."""
    from binlake.lake.job import run_load
    from binlake.lake.publish import discard, publish

    settings = make_lake(spark, tmp_path_factory.mktemp("lakes"), "wap")
    k = len(workload.files) // 2
    load(spark, settings, workload.files[:k], "wap-1")
    first = read_all(spark, settings)
    s2 = run_load(spark, settings, [str(f) for f in workload.files[k:]], run_id="wap-2",
                  branch="night-2")
    assert not s2.failed and s2.branch == "night-2"
    assert spark.conf.get("spark.wap.branch", None) is None  # the session is back on main
    assert diff(frozen(first), snapshot(spark, settings)) == ""
    on_branch = frozen({t: [r.asDict(recursive=True) for r in spark.read.option(
        "branch", "night-2").table(settings.table(t)).collect()] for t in ["row_changes"]})
    assert sum(on_branch["row_changes"].values()) > len(first["row_changes"])
    assert "files" in discard(spark, settings, "night-2")
    assert diff(frozen(first), snapshot(spark, settings)) == ""
    s3 = run_load(spark, settings, [str(f) for f in workload.files[k:]], run_id="wap-3",
                  branch="night-2b")
    assert [f["status"] for f in s3.files] == ["loaded"] * (len(workload.files) - k)
    published = publish(spark, settings, "night-2b")
    assert published[-1] == "files" and "row_changes" in published
    assert publish(spark, settings, "night-2b") == []  # idempotent
    report = diff(one_run.snap, snapshot(spark, settings), "one run vs published: ")
    assert not report, report
    refs = spark.sql(f"SELECT name FROM {settings.table('row_changes')}.refs").collect()
    assert [r[0] for r in refs] == ["main"]
    # each table's snapshot summary counts its totals on from main's (Iceberg, making a
    # branch at its first commit, would count them from zero: lake/commit.fork_branch)
    ns = f"{settings.catalog_name}.{settings.namespace}"
    checked = 0
    for r in spark.sql(f"SHOW TABLES IN {ns}").collect():
        t = f"{ns}.{r.tableName}"
        snap = spark.sql(f"SELECT summary FROM {t}.snapshots ORDER BY committed_at DESC "
                         "LIMIT 1").collect()
        if not snap:
            continue
        summary = snap[0][0]
        files, records = spark.sql(f"SELECT count(*), coalesce(sum(record_count), 0) "
                                   f"FROM {t}.data_files").collect()[0]
        deletes = spark.sql(f"SELECT count(*) FROM {t}.delete_files").collect()[0][0]
        assert (int(summary["total-data-files"]), int(summary["total-records"]),
                int(summary["total-delete-files"])) == (files, records, deletes), (t, summary)
        checked += files > 0
    assert checked >= 5, checked


# -- damaged files ----------------------------------------------------------------------------------


def _event_at_middle(path: Path, types: tuple[str, ...] = ()) -> Any:
    from binlake.binlog.reader import BinlogReader

    size = path.stat().st_size
    events = [e for e in BinlogReader(str(path)) if not types or e.type in types]
    return min(events, key=lambda e: abs(e.pos + e.length // 2 - size // 2))


def _damaged_copy(workload: Workload, base: Path) -> Path:
    out = base / "binlogs"
    out.mkdir()
    for f in workload.files:
        shutil.copyfile(f, out / f.name)
    return out


def _check_damaged_load(spark: Any, settings: Any, workload: Workload, copy: Path,
                        bad: str, offset: int, summary: dict[str, Any]) -> None:
    """The damaged file is failed with its error; the other files land as if it were
    absent (the transaction layer's result over them)."""
    from binlake.txn.build import build_transactions

    files = {r["file"]: r for r in read_table(spark, settings, "files")}
    assert sorted(files) == workload.names
    r = files[bad]
    assert r["status"] == "failed"
    assert r["error"] and bad in r["error"] and f"at byte {offset}" in r["error"], r["error"]
    assert r["error_offset"] == offset
    assert r["sha256"] == hashlib.sha256((copy / bad).read_bytes()).hexdigest()
    assert all(f["status"] == "loaded" for n, f in files.items() if n != bad)
    assert [f["file"] for f in summary["files"] if f["status"] != "loaded"] == [bad]

    good = [str(copy / n) for n in workload.names if n != bad]
    built = build_transactions(good)
    rows = read_table(spark, settings, "row_changes")
    assert not [x for x in rows if x["file"] == bad]
    report = compare_changes(expected_changes(built), stored_changes(rows))
    assert not report, report
    txns = read_table(spark, settings, "transactions")
    assert not [t for t in txns if bad in (t["end_file"], t["begin_file"])]
    report = compare_transactions(expected_transactions(built), txns)
    assert not report, report
    assert _pending_keys(spark, settings) == {_xid(t) for t in built.pending}
    # The executors wrote the damaged file's records too (up to the damage): those data
    # files are deleted, not left in the tables' directories unreferenced.
    for table in ("row_changes", "transactions", "statements", "xa_prepares"):
        referenced = {r[0].split(":", 1)[-1].lstrip("/") for r in spark.sql(
            f"SELECT file_path FROM {settings.table(table)}.all_data_files").collect()}
        on_disk = {str(p).lstrip("/") for p in
                   (settings.home_path / "warehouse").rglob("*.parquet")
                   if f"/{table}/" in str(p)}
        assert on_disk and on_disk == referenced, (table, sorted(on_disk ^ referenced))


def _cli_load(monkeypatch: pytest.MonkeyPatch, settings: Any, args: list[str]
              ) -> tuple[int, str]:
    """``binlake load`` in this process (so on the shared Spark session), its settings from
    the environment as a user would give them."""
    import contextlib
    import io
    import os

    from binlake.cli import main

    for k in list(os.environ):
        if k.startswith("BINLAKE_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("BINLAKE_HOME", str(settings.home_path))
    monkeypatch.setenv("BINLAKE_CATALOG_NAME", settings.catalog_name)
    out = io.StringIO()
    t0 = time.monotonic()
    with contextlib.redirect_stdout(out):
        rc = main(["load", *args])
    TIMINGS[f"cli load {args[-1][-30:]}"] = time.monotonic() - t0
    return rc, out.getvalue()


def test_truncated_file_fails_alone(spark: Any, workload: Workload, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A file cut inside an event, in the middle of the sequence: the one holding the XA
    COMMIT of an XA prepared in an earlier file, so that XA stays pending."""
    _, xa = _xa_across(workload, 1)
    bad = xa.part.file
    copy = _damaged_copy(workload, tmp_path)
    ev = _event_at_middle(copy / bad)
    data = (copy / bad).read_bytes()
    (copy / bad).write_bytes(data[:ev.pos + ev.length // 2])
    settings = make_lake(spark, tmp_path, "truncated")
    rc, out = _cli_load(monkeypatch, settings, ["--json", str(copy)])
    assert rc == 1
    summary = json.loads(out)
    _check_damaged_load(spark, settings, workload, copy, bad, ev.pos, summary)
    assert _xid(xa) in _pending_keys(spark, settings)


def test_one_load_at_a_time(spark: Any, workload: Workload, tmp_path: Path,
                            monkeypatch: pytest.MonkeyPatch,
                            capsys: pytest.CaptureFixture[str]) -> None:
    """``binlake load`` while another process holds the lake's load lock: exit 75 at once,
    naming the lock and its holder, and the lake untouched (no table made); once the holder
    is gone (killed), the same command loads."""
    import subprocess
    import sys

    from .test_lake_lock import HOLD

    settings = make_lake(spark, tmp_path, "locked")
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(settings.home_path), "",
                               settings.source], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        capsys.readouterr()
        rc, out = _cli_load(monkeypatch, settings, [str(workload.files[0])])
        err = capsys.readouterr().err
        assert rc == 75, (out, err)
        assert "another load is writing this lake" in err and f"pid {holder.pid} " in err
        assert str(settings.home_path / "catalog.db.load.lock") in err
        assert not spark.catalog.tableExists(settings.table("files"))
    finally:
        holder.kill()
        holder.wait()
    rc, out = _cli_load(monkeypatch, settings, ["--json", str(workload.files[0])])
    assert rc == 0
    assert [f["file"] for f in json.loads(out)["files"]] == [workload.names[0]]
    assert [r["file"] for r in read_table(spark, settings, "files")] == [workload.names[0]]


def test_checksum_error_fails_the_file(spark: Any, workload: Workload, tmp_path: Path) -> None:
    """One byte flipped inside a rows event in the middle of a file: framing intact, CRC32
    wrong."""
    names = workload.names
    bad = max(names[1:-1], key=lambda n: (workload.dir / n).stat().st_size)
    copy = _damaged_copy(workload, tmp_path)
    ev = _event_at_middle(copy / bad, ("WRITE_ROWS_V1", "UPDATE_ROWS_V1", "DELETE_ROWS_V1"))
    data = bytearray((copy / bad).read_bytes())
    data[ev.pos + ev.length // 2] ^= 0xFF
    (copy / bad).write_bytes(bytes(data))
    settings = make_lake(spark, tmp_path, "checksum")
    summary = load(spark, settings, [copy], "checksum")
    _check_damaged_load(spark, settings, workload, copy, bad, ev.pos, summary.to_dict())


# -- MySQL 8 files of the corpus --------------------------------------------------------------------

MYSQL8: dict[str, list[str]] = {
    # source label -> files of one server
    "json_partial": ["libs/rust_mysql_common/json.binlog.000001"],  # PARTIAL_UPDATE_ROWS
    "trx_compression": ["libs/rust_mysql_common/transaction_compression.000001"],
    "connector_java": ["libs/mysql-binlog-connector-java/mysql-bin.compressed"],  # no seq
    "connector_rust": ["libs/mysql-binlog-connector-rust/mysql-bin.000057"],  # GTIDs, payloads
    "percona_gtid": ["libs/percona-binlog-server/data_80045_gtid/"],  # a directory: 2 files
    "mdev35643": ["mariadb-11.8/std_data/mdev35643_mysql_80_binlog.000001"],  # both, 100 rows
}


def check_statements(spark: Any, settings: Any, label: str, files: list[Any],
                     rows: list[dict[str, Any]], decoded: list[dict[str, Any]]) -> None:
    """Every Annotate_rows / Rows_query event of the files is in ``statements`` once, with
    its text, under (file, pos, payload_index): inside a MySQL Transaction_payload all events
    have the payload's position, so two statements of one compressed transaction differ only
    by their index in it.  Each row change names its own statement: ``row_changes`` and
    ``binlake decode --rows`` point at the last statement event before the row's event."""
    from binlake.binlog.constants import EventType as E
    from binlake.binlog.reader import BinlogReader

    logged: dict[tuple[str, int, int | None], str] = {}
    for f in files:
        for ev in BinlogReader(f.uri, decode={E.ROWS_QUERY, E.ANNOTATE_ROWS,
                                               E.TRANSACTION_PAYLOAD}):
            if ev.type_code in (E.ROWS_QUERY, E.ANNOTATE_ROWS):
                key = (f.name, ev.pos, ev.payload_index)
                assert key not in logged, key
                logged[key] = ev.data["query"]
    stored = [(r["file"], r["pos"], r["payload_index"], r["statement"])
              for r in read_table(spark, settings, "statements", source=label)]
    assert sorted(stored, key=repr) == sorted(((*k, v) for k, v in logged.items()), key=repr)
    for r in rows:
        if r["statement_pos"] is not None:
            text = logged[(r["file"], r["statement_pos"], r["statement_payload_index"])]
            assert r["statement"] == _inline(text), r
    for c in decoded:
        if "statement_pos" in c:
            key = (c["file"], c["statement_pos"], c.get("statement_payload_index"))
            assert key in logged, c


def test_compressed_transaction_statements_are_apart() -> None:
    """The corpus file with two Rows_query statements in one compressed transaction (the
    MANIFEST: ROWS_QUERY x3 in two Transaction_payloads): the transaction layer and
    ``decode --rows`` give each row the statement logged before it, told apart by the
    statement event's index in the payload."""
    require_corpus()
    from binlake.binlog.reader import BinlogReader
    from binlake.binlog.rowchanges import DECODE_FOR_ROWS, iter_row_changes
    from binlake.txn.build import build_transactions

    path = CORPUS / "libs/mysql-binlog-connector-rust/mysql-bin.000057"
    built = build_transactions([str(path)])
    keyed = {(c.statement_pos, c.statement_payload_index): c.statement
             for t in built.transactions for c in t.changes}
    assert len(keyed) == 3, keyed
    assert len({pos for pos, _ in keyed}) == 2  # two of them in one payload
    assert len(set(keyed.values())) == 3, keyed
    rows = list(iter_row_changes(BinlogReader(str(path), decode=DECODE_FOR_ROWS)))
    assert {(r["statement_pos"], r.get("statement_payload_index")) for r in rows} == set(keyed)
    for c in (c for t in built.transactions for c in t.changes):
        # the statement comes before its rows event in the same payload
        assert c.payload_index is not None and c.statement_payload_index is not None
        assert c.pos == c.statement_pos and c.statement_payload_index < c.payload_index


def _manifest_sha256() -> dict[str, str]:
    out = {}
    for line in MANIFEST.read_text().splitlines():
        m = re.match(r"^([0-9a-f]{64})  (\S+)$", line.strip())
        if m:
            out[m.group(2)] = m.group(1)
    return out


@pytest.fixture(scope="module")
def corpus_lake(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    require_corpus()
    return make_lake(spark, tmp_path_factory.mktemp("lakes"), "mysql8")


def _corpus_history(files: list[Any]) -> Any:
    """The schema history a load of ``files`` decodes with (lake/schemas.py)."""
    from binlake.lake.schemas import build_run_history
    from binlake.lake.survey import survey_scan

    parts = []
    for f in files:
        fde: dict[str, Any] = {}
        ddl, _ = survey_scan(f.uri, f.seq, None, fde)
        parts.append((f.name, f.seq, fde, ddl))
    return build_run_history([], [], parts).history


@pytest.mark.parametrize("label", list(MYSQL8))
def test_mysql8_corpus(spark: Any, corpus_lake: Any, label: str) -> None:
    from binlake.binlog.reader import BinlogReader
    from binlake.binlog.rowchanges import DECODE_FOR_ROWS, iter_row_changes
    from binlake.lake.discover import discover
    from binlake.txn.build import build_transactions

    sources = [str(CORPUS / p) for p in MYSQL8[label]]
    files = discover(sources)
    assert files
    settings = dataclasses.replace(corpus_lake, source=label)
    summary = load(spark, settings, sources, f"mysql8-{label}")
    assert not summary.failed, summary.failed
    # the load names MINIMAL Table_maps from the schema history of the files' DDL: the
    # library's decode with the same history is the reference
    history = _corpus_history(files)

    def hook(uri: str) -> Any:
        from binlake.schema.names import TableMapNamer

        return TableMapNamer(history, next(f.seq for f in files if f.uri == uri))

    built = build_transactions([f.uri for f in files], table_map_hooks=hook)
    assert not built.pending and not built.incomplete

    rows = read_table(spark, corpus_lake, "row_changes", source=label)
    report = compare_changes(expected_changes(built), stored_changes(rows))
    assert not report, report
    problems = check_pk(rows, None)
    assert not problems, problems
    # the same images as `binlake decode --rows` (every change here is committed)
    decoded = [c for f in files for c in iter_row_changes(BinlogReader(
        f.uri, decode=DECODE_FOR_ROWS, table_map_hook=hook(f.uri)))]
    assert sorted(json.dumps([c["db"], c["table"], c["op"], c.get("before"), c.get("after")],
                             sort_keys=True) for c in decoded) == sorted(
        json.dumps([r["db"], r["tbl"], r["op"], json.loads(r["before"] or "null"),
                    json.loads(r["after"] or "null")], sort_keys=True) for r in rows)
    txns = read_table(spark, corpus_lake, "transactions", source=label)
    report = compare_transactions(expected_transactions(built), txns)
    assert not report, report
    check_statements(spark, corpus_lake, label, files, rows, decoded)

    sums = _manifest_sha256()
    stored = {r["file"]: r for r in read_table(spark, corpus_lake, "files", source=label)}
    assert sorted(stored) == sorted(f.name for f in files)
    infos = file_infos(built)
    for f in files:
        r = stored[f.name]
        rel = str(Path(f.uri).relative_to(CORPUS))
        assert r["sha256"] == sums[rel], rel
        assert r["status"] == "loaded" and r["seq"] == f.seq
        assert r["flavor"] == "mysql" and r["server_version"].startswith("8.0")
        assert (r["first_gtid"], r["last_gtid"], r["in_use"]) == (
            infos[f.name].first_gtid, infos[f.name].last_gtid, infos[f.name].in_use)
    # nothing of the other sources in this lake leaked into this one's keys
    assert {r["source"] for r in read_table(spark, corpus_lake, "row_changes")} <= set(MYSQL8)


def test_survey_layouts_cover_every_table_map() -> None:
    """The plan's survey finds the layout of every table a Table_map names, also inside
    MySQL 8 compressed transactions (where every Table_map of those files is): the first
    layout of each table at the position of its first Table_map, with the columns the full
    decoder gives there.  Without them the typed changelogs would miss those tables."""
    require_corpus()
    from binlake.binlog.constants import EventType as E
    from binlake.binlog.reader import BinlogReader
    from binlake.lake.records import layout_record
    from binlake.lake.survey import survey_scan
    from binlake.txn.files import binlog_file

    payload_maps = 0
    for paths in MYSQL8.values():
        for p in paths:
            path = CORPUS / p
            for f in sorted(path.iterdir()) if path.is_dir() else [path]:
                if f.name.endswith(".index"):
                    continue
                seq = binlog_file(str(f)).seq
                first: dict[tuple[str, str], dict[str, Any]] = {}
                for ev in BinlogReader(str(f)):
                    tm = ev.data.get("_table_map") if ev.type_code == E.TABLE_MAP else None
                    if tm is not None:
                        payload_maps += ev.payload_index is not None
                        first.setdefault((tm.db, tm.table), layout_record(tm, seq, ev.pos))
                _, layouts = survey_scan(str(f), seq)
                got: dict[tuple[str, str], dict[str, Any]] = {}
                for lay in layouts:
                    got.setdefault((lay["db"], lay["tbl"]), lay)
                assert got == first, f
    assert payload_maps > 0  # some Table_maps were inside compressed transactions


def test_mysql8_features_present() -> None:
    """The corpus files above really exercise what they are here for."""
    require_corpus()
    from binlake.binlog.reader import BinlogReader

    types: set[str] = set()
    for paths in MYSQL8.values():
        for p in paths:
            path = CORPUS / p
            for f in sorted(path.iterdir()) if path.is_dir() else [path]:
                if not f.name.endswith(".index"):
                    types |= {e.type for e in BinlogReader(str(f))}
    assert {"TRANSACTION_PAYLOAD", "PARTIAL_UPDATE_ROWS"} <= types, sorted(types)


# -- the command line and the Spark job entry point ---------------------------------------------------


def test_cli_load(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_corpus()
    from binlake.txn.build import build_transactions

    path = CORPUS / MYSQL8["mdev35643"][0]
    settings = make_lake(spark, tmp_path, "cli")
    rc, out = _cli_load(monkeypatch, settings, ["--source-name", "cli", str(path)])
    assert rc == 0, out
    built = build_transactions([str(path)])
    n = len(built.transactions)
    assert out.startswith("binlake load "), out
    assert "(source cli): 1 file(s)" in out
    assert f"{'loaded':8} {path.name}" in out
    assert f"transactions: committed {n}" in out
    per_table = Counter(f"{e['db']}.{e['tbl']}" for e in expected_changes(built).values())
    for table, k in per_table.items():
        assert f"rows {table}: {k}" in out
    assert "pending XA: 0" in out

    rc, out = _cli_load(monkeypatch, settings, ["--source-name", "cli", "--json", str(path)])
    assert rc == 0, out
    summary = json.loads(out)
    assert summary["source"] == "cli"
    # loaded before with the same bytes: skipped, and the summary still describes it
    assert [(f["file"], f["status"]) for f in summary["files"]] == [(path.name, "skipped")]
    assert summary["rows"] == dict(per_table)
    assert summary["transactions"] == {"committed": n}
    assert summary["pending"] == []


def test_spark_job_entry_point(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    """jobs/load_binlogs.py: a @manifest of URIs, --run-id, the summary as JSON on stdout."""
    require_corpus()
    import importlib.util
    import os

    spec = importlib.util.spec_from_file_location(
        "load_binlogs", Path(__file__).resolve().parents[1] / "jobs" / "load_binlogs.py")
    assert spec is not None and spec.loader is not None
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)

    settings = make_lake(spark, tmp_path, "job")
    files = sorted((CORPUS / MYSQL8["percona_gtid"][0]).glob("binlog.0*"))
    manifest = tmp_path / "manifest.txt"
    manifest.write_text("# two files\n" + "".join(f"{f}\n" for f in reversed(files)))
    for k in list(os.environ):
        if k.startswith("BINLAKE_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("BINLAKE_HOME", str(settings.home_path))
    monkeypatch.setenv("BINLAKE_CATALOG_NAME", settings.catalog_name)
    capsys.readouterr()
    rc = job.main(["--source-name", "percona", "--run-id", "job-run-1", f"@{manifest}"])
    summary = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert summary["run_id"] == "job-run-1"
    assert [f["file"] for f in summary["files"]] == [f.name for f in files]
    rows = read_table(spark, settings, "row_changes", source="percona")
    assert rows and {r["run_id"] for r in rows} == {"job-run-1"}


def test_record_integers_out_of_range_are_null() -> None:
    """A record integer beyond its column's type (a MariaDB XID is unsigned 64-bit, the
    column BIGINT) is NULL in the data file, as Spark's JSON reading of the records made it,
    instead of failing the task."""
    import pyarrow as pa

    from binlake.lake.sink import _arrow_array

    assert _arrow_array([1, None, 1 << 31, -(1 << 31)], pa.int32()).to_pylist() == [
        1, None, None, -2147483648]
    assert _arrow_array([1 << 63, (1 << 63) - 1, -(1 << 63)], pa.int64()).to_pylist() == [
        None, 9223372036854775807, -9223372036854775808]


@dataclass
class EngineFiles:
    first: Path  # CREATE TABLE eng.i ENGINE=InnoDB, eng.m ENGINE=MyISAM
    second: Path  # a STATEMENT-format BEGIN ... ROLLBACK changing both


@pytest.fixture(scope="module")
def engine_files(tmp_path_factory: Any, mariadb_template: Path) -> EngineFiles:
    """A real server: a MyISAM table created in one file, a statement-format transaction
    that changes it and an InnoDB table rolled back in the next.  The transaction layer
    reading both files in order says the ROLLBACK group has non-transactional changes that
    happened (WL#2687); reading the second file alone it cannot know (the truth checked
    here, so the tests below can fail)."""
    from binlake.txn.build import build_transactions

    srv = start_server(tmp_path_factory.mktemp("engine-srv"), mariadb_template)
    out = tmp_path_factory.mktemp("engine-binlogs")
    try:
        srv.flush_binary_logs()
        start = srv.current_binlog_file()
        srv.execute(["CREATE DATABASE eng",
                     "CREATE TABLE eng.i (id INT PRIMARY KEY) ENGINE=InnoDB",
                     "CREATE TABLE eng.m (id INT PRIMARY KEY) ENGINE=MyISAM"])
        srv.flush_binary_logs()
        conn = srv.connect()
        with conn.cursor() as cur:
            cur.execute("SET SESSION binlog_format = 'STATEMENT'")
            cur.execute("BEGIN")
            cur.execute("INSERT INTO eng.i VALUES (1)")
            cur.execute("INSERT INTO eng.m VALUES (1)")
            cur.execute("ROLLBACK")
        conn.close()
        srv.flush_binary_logs()
        written = srv.binlog_files()
        first, second = written[written.index(start):][:2]
        for f in (first, second):
            shutil.copyfile(f, out / f.name)
    finally:
        srv.stop(timeout=30)
    files = EngineFiles(out / first.name, out / second.name)
    truth = [t for t in build_transactions([str(files.first), str(files.second)]).transactions
             if t.part.file == second.name and t.status == "rolled_back"]
    assert len(truth) == 1 and truth[0].nontransactional is True, truth
    alone = [t for t in build_transactions([str(files.second)]).transactions
             if t.status == "rolled_back"]
    assert len(alone) == 1 and alone[0].nontransactional is False, alone
    return files


def _rolled_back(spark: Any, settings: Any, file: str) -> list[dict[str, Any]]:
    return [r for r in read_table(spark, settings, "transactions")
            if r["end_file"] == file and r["status"] == "rolled_back"]


def test_engine_known_from_a_skipped_earlier_file(spark: Any, tmp_path_factory: Any,
                                                  engine_files: EngineFiles) -> None:
    """The second run is given both files: the first is skipped (loaded before), yet its DDL
    seeds the second file's ranges."""
    first, second = engine_files.first, engine_files.second
    settings = make_lake(spark, tmp_path_factory.mktemp("engine-lakes"), "engine")
    load(spark, settings, [first], "engine-1")
    s2 = load(spark, settings, [first, second], "engine-2")
    assert {f["file"]: f["status"] for f in s2.files} == {first.name: "skipped",
                                                          second.name: "loaded"}
    got = _rolled_back(spark, settings, second.name)
    assert len(got) == 1 and got[0]["nontransactional"] is True, got


def test_engine_known_from_an_earlier_run(spark: Any, tmp_path_factory: Any,
                                          engine_files: EngineFiles) -> None:
    """A nightly run is given only the night's files: the table engines the DDL of files
    loaded by earlier runs left come from ``files.engines`` (the state at the end of each
    loaded file), so the second file loaded alone gives the same transactions as the two
    files loaded together."""
    first, second = engine_files.first, engine_files.second
    settings = make_lake(spark, tmp_path_factory.mktemp("engine-lakes-run"), "engine_run")
    s1 = load(spark, settings, [first], "engine-run-1")
    assert not [f for f in s1.findings if f["kind"] == "engines_unknown_before_run"]
    files = {r["file"]: r for r in read_table(spark, settings, "files")}
    assert sorted(files[first.name]["engines"]) == ["eng.i=1", "eng.m=0"], files
    s2 = load(spark, settings, [second], "engine-run-2")
    assert [f["status"] for f in s2.files] == ["loaded"]
    got = _rolled_back(spark, settings, second.name)
    assert len(got) == 1 and got[0]["nontransactional"] is True, got
    files = {r["file"]: r for r in read_table(spark, settings, "files")}
    # nothing in the second file changed an engine: it passes the state on
    assert sorted(files[second.name]["engines"]) == ["eng.i=1", "eng.m=0"], files


def test_backfill_behind_a_loaded_file_warns_and_reload_fixes(
        spark: Any, tmp_path_factory: Any, engine_files: EngineFiles) -> None:
    """The second file loaded first (its rollback taken as transactional: nothing said
    eng.m is MyISAM), then the first file: the run warns that the second file did not see
    its DDL; reloading the second file gives the transaction two files in order give."""
    from binlake.lake.job import run_load

    first, second = engine_files.first, engine_files.second
    settings = make_lake(spark, tmp_path_factory.mktemp("engine-lakes-back"), "engine_back")
    load(spark, settings, [second], "engine-back-1")
    got = _rolled_back(spark, settings, second.name)
    assert len(got) == 1 and got[0]["nontransactional"] is False, got
    s2 = load(spark, settings, [first], "engine-back-2")
    warned = [f for f in s2.findings if f["kind"] == "engines_unseen_by_loaded_file"]
    assert [w["file"] for w in warned] == [second.name], s2.findings
    assert "eng.m" in warned[0]["message"] and "eng.i" not in warned[0]["message"]
    s3 = run_load(spark, settings, [str(second)], run_id="engine-back-3", reload=True)
    assert not s3.failed
    assert not [f for f in s3.findings if f["kind"] == "engines_unseen_by_loaded_file"]
    got = _rolled_back(spark, settings, second.name)
    assert len(got) == 1 and got[0]["nontransactional"] is True, got


def test_lake_without_engines_column_is_migrated(spark: Any, tmp_path_factory: Any,
                                                 engine_files: EngineFiles) -> None:
    """A lake made before ``files.engines`` (and the payload indexes) existed: the next load
    adds the columns (the old rows NULL), and since the earlier file recorded no engines, the run says so (a warning
    finding) and takes the unknown table as transactional, as before."""
    from binlake.lake import tables

    first, second = engine_files.first, engine_files.second
    settings = make_lake(spark, tmp_path_factory.mktemp("engine-lakes-old"), "engine_old")
    load(spark, settings, [first], "engine-old-1")
    assert len(tables.ADDED_COLUMNS) >= 4
    for table, column, _ in tables.ADDED_COLUMNS:  # as an older binlake made the lake
        spark.sql(f"ALTER TABLE {settings.table(table)} DROP COLUMN {column}")
        assert column not in spark.table(settings.table(table)).columns
    tables.ensure_tables(spark, settings)
    for table, column, _ in tables.ADDED_COLUMNS:
        assert column in spark.table(settings.table(table)).columns, (table, column)
    (old,) = read_table(spark, settings, "files")
    assert old["file"] == first.name and old["engines"] is None, old
    s2 = load(spark, settings, [second], "engine-old-2")
    warned = [f for f in s2.findings if f["kind"] == "engines_unknown_before_run"]
    assert [w["file"] for w in warned] == [first.name], s2.findings
    got = _rolled_back(spark, settings, second.name)
    assert len(got) == 1 and got[0]["nontransactional"] is False, got


def test_engine_seed_is_the_newest_earlier_loaded_file() -> None:
    from binlake.lake.loaded import Loaded, engine_seed
    from binlake.lake.survey import decode_engines, encode_engines

    state = (("d.a", True), ("d.m", False))
    assert decode_engines(encode_engines(state)) == state
    assert decode_engines(["x.=y=0", "d.a=1"]) == (("d.a", True), ("x.=y", False))
    loaded = {"b.000001": Loaded("s1", False, 1, (("d.m", True),)),
              "b.000003": Loaded("s3", False, 3, state),
              "b.000005": Loaded("s5", False, 5, (("d.z", False),))}
    assert engine_seed(loaded, 4) == (state, "b.000003")
    assert engine_seed(loaded, 3) == ((("d.m", True),), "b.000001")
    assert engine_seed(loaded, 1) == ((), None)
    assert engine_seed({"b.000002": Loaded("s", False, 2, None)}, 7) == ((), "b.000002")


def test_end_states_follow_the_ddl_across_files() -> None:
    """The state recorded at the end of each file: after the seed, the DDL of that file and
    of every file before it."""
    from binlake.lake.survey import end_states

    ddl = [[(4, "d", "CREATE TABLE m (id INT) ENGINE=MyISAM")],
           [],
           [(9, "d", "ALTER TABLE m ENGINE=InnoDB"),
            (20, None, "CREATE TABLE d.a (x INT) ENGINE=Aria")],
           [(4, "d", "DROP TABLE a")]]
    got = end_states(ddl, seed=(("d.old", False),))
    assert got == [(("d.m", False), ("d.old", False)),
                   (("d.m", False), ("d.old", False)),
                   (("d.a", False), ("d.m", True), ("d.old", False)),
                   (("d.m", True), ("d.old", False))]


def _prep(seq: int, pos: int, gtrid: str = "x") -> dict[str, Any]:
    return {"xa_format_id": 1, "xa_gtrid": gtrid, "xa_bqual": "", "prepare_seq": seq,
            "prepare_pos": pos, "prepare_file": f"b.{seq:06d}"}


def _end(seq: int, pos: int, commit: bool = True, gtrid: str = "x") -> dict[str, Any]:
    return {"xa_format_id": 1, "xa_gtrid": gtrid, "xa_bqual": "", "commit": commit,
            "end_event": "XA_COMMIT" if commit else "XA_ROLLBACK", "server_id": 1,
            "part": {"file": f"b.{seq:06d}", "seq": seq, "begin_pos": pos, "end_pos": pos + 50,
                     "gtid": f"0-1-{seq}{pos}", "timestamp": 1700000000,
                     "commit_ts_us": None}}


def _stored(seq: int, pos: int, prepared_at: tuple[int, int] | None, gtrid: str = "x",
            status: str = "xa_committed") -> dict[str, Any]:
    """A ``transactions`` row of a decided XA (``prepared_at`` None: without its PREPARE)."""
    return {"xa_format_id": 1, "xa_gtrid": gtrid, "xa_bqual": "", "status": status,
            "end_event": "XA_COMMIT" if status == "xa_committed" else "XA_ROLLBACK",
            "gtid": f"0-1-{seq}{pos}", "end_file": f"b.{seq:06d}",
            "begin_pos": pos if prepared_at is None else prepared_at[1], "end_pos": pos + 50,
            "order_seq": seq, "commit_us": 1_700_000_000_000_000,
            "prepare_file": None if prepared_at is None else f"b.{prepared_at[0]:06d}",
            "prepare_pos": None if prepared_at is None else prepared_at[1]}


def _events(*items: tuple[str, dict[str, Any]]) -> list[tuple[int, int, str, dict[str, Any]]]:
    out = []
    for kind, d in items:
        if kind == "p":
            out.append((d["prepare_seq"], d["prepare_pos"], "p", d))
        elif kind == "e":
            out.append((d["part"]["seq"], d["part"]["begin_pos"], "e", d))
        else:
            out.append((d["order_seq"], d["end_pos"], "s", d))
    return out


def test_xa_pairing_takes_stored_decisions_of_later_files() -> None:
    """A backfill's PREPARE meets the decision an earlier run stored without it: decided at
    that decision's own position, whose PREPARE-less row is to go."""
    from binlake.lake.xa import pair_events

    p = _prep(2, 100)
    res, orphans, findings, late = pair_events(
        _events(("p", p), ("s", _stored(5, 300, None, status="xa_rolled_back"))), {}, "src")
    assert not orphans and not findings
    assert late == [("b.000005", 300)]
    r = res[("b.000002", 100)]
    assert r["commit"] is False and r["end_event"] == "XA_ROLLBACK"
    assert r["part"] == {"file": "b.000005", "seq": 5, "begin_pos": 300, "end_pos": 350,
                         "gtid": "0-1-5300", "timestamp": None,
                         "commit_ts_us": 1_700_000_000_000_000}
    # an XA pending from an earlier run is decided the same way
    res, _, _, late = pair_events(_events(("s", _stored(5, 300, None))),
                                  {(1, "x", ""): _prep(1, 40)}, "src")
    assert list(res) == [("b.000001", 40)] and res[("b.000001", 40)]["commit"] is True
    assert late == [("b.000005", 300)]


def test_xa_pairing_leaves_stored_decisions_it_does_not_decide() -> None:
    from binlake.lake.xa import pair_events

    # stored with this very PREPARE (a reload of the PREPARE's file): nothing to redo, and
    # the orphan after it belongs to another PREPARE (not loaded)
    p = _prep(2, 100)
    res, orphans, findings, late = pair_events(
        _events(("p", p), ("s", _stored(4, 10, (2, 100))), ("s", _stored(6, 10, None))),
        {}, "src")
    assert (res, orphans, findings, late) == ({}, [], [], [])
    # decided in this run before the stored orphan: the orphan stays one, unreported again
    res, orphans, findings, late = pair_events(
        _events(("p", p), ("e", _end(3, 8)), ("s", _stored(6, 10, None))), {}, "src")
    assert list(res) == [("b.000002", 100)] and res[("b.000002", 100)]["part"]["seq"] == 3
    assert (orphans, findings, late) == ([], [], [])
    # a stored orphan with nothing pending under its XID: left alone
    assert pair_events(_events(("s", _stored(6, 10, None, gtrid="y")), ("p", p)), {},
                       "src") == ({}, [], [], [])


def test_xa_pairing_in_binlog_order_with_a_reused_xid() -> None:
    """One XID prepared and decided twice: each decision takes the PREPARE before it, the
    stored one (a later file loaded first) included; a decision of this run with nothing
    pending is an orphan, reported."""
    from binlake.lake.xa import pair_events

    res, orphans, findings, late = pair_events(_events(
        ("e", _end(7, 5)), ("p", _prep(4, 20)), ("p", _prep(2, 100)),
        ("s", _stored(3, 60, None)), ("e", _end(5, 30, commit=False))), {}, "src")
    assert res[("b.000002", 100)]["part"]["file"] == "b.000003"
    assert res[("b.000004", 20)]["part"]["file"] == "b.000005"
    assert res[("b.000004", 20)]["commit"] is False
    assert late == [("b.000003", 60)]
    assert [o["begin_file"] for o in orphans] == ["b.000007"]
    assert [f["kind"] for f in findings] == ["xa_commit_without_prepare"]


def test_backfill_warns_of_engines_later_files_did_not_see() -> None:
    from binlake.lake.loaded import Loaded, engines_unseen

    loaded = {"b.000004": Loaded("s", False, 4, (("d.i", True),)),
              "b.000005": Loaded("s", False, 5, (("d.i", True),)),
              "b.000009": Loaded("s", False, 9, (("d.m", False),)),
              "b.000010": Loaded("s", False, 10, None)}
    ends = {2: ("b.000002", (("d.i", True), ("d.m", False))),
            3: ("b.000003", (("d.a", False), ("d.i", True), ("d.m", False))),
            7: ("b.000007", (("d.m", False), ("d.z", False)))}
    got = engines_unseen(ends, loaded)
    # b.000004 follows b.000003 and knows neither d.a nor d.m; b.000005 follows b.000004
    # (not a file of this run); b.000009 knows d.m, not d.z; b.000010 recorded nothing
    assert [(w["file"], w["kind"], w["severity"]) for w in got] == [
        ("b.000004", "engines_unseen_by_loaded_file", "warning"),
        ("b.000009", "engines_unseen_by_loaded_file", "warning")]
    assert "d.a, d.m" in got[0]["message"] and "b.000003" in got[0]["message"]
    assert "d.z" in got[1]["message"] and "d.m" not in got[1]["message"]
    assert engines_unseen({3: ("b.000003", (("d.i", True),))}, loaded) == []


@pytest.mark.spark
def test_driver_jvm_runs_with_the_configured_options(spark: Any) -> None:
    """The session binlake starts passes ``spark_driver_java_options`` (default: C1 only, a
    256 MB code cache, JVM warnings on stderr) to the driver JVM, next to the SQLite JNI
    path; the JVM really runs with them."""
    from binlake.config import Settings

    want = Settings().spark_driver_java_options.split()
    assert want == ["-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=256m",
                    "-Xlog:disable", "-Xlog:all=warning:stderr"]
    args = list(spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
                .getInputArguments())
    for opt in want:
        assert opt in args, args
    conf = spark.sparkContext.getConf().get("spark.driver.extraJavaOptions")
    assert "-XX:TieredStopAtLevel=1" in conf


# -- what a killed run left -----------------------------------------------------------------------


def test_a_killed_runs_uncreated_table_is_swept(spark: Any, workload: Workload,
                                                tmp_path_factory: pytest.TempPathFactory
                                                ) -> None:
    """A run killed while it created a table has written the table's first
    ``00000-<uuid>.metadata.json`` into the table's directory and not registered it: the
    catalog has no such table, so a sweep of the catalog's tables does not see the file, and
    the next run's CREATE writes another beside it.  The next load removes the dead run's
    files from such directories (tables loads write, in the namespace's location), and only
    those: a file from before the dead run, and a directory named like no table loads
    write, stay; with a lock per source (not SQLite's one per lake) a new file stays too,
    since a live load of another source may be creating that table."""
    import os
    import uuid

    from binlake.lake.job import after_killed
    from binlake.lake.orphans import DeadRun, remove_orphans

    settings = make_lake(spark, tmp_path_factory.mktemp("lakes"), "killed_create")
    assert not load(spark, settings, workload.files[:1], "first").failed
    ns = Path(settings.home_path) / "warehouse" / settings.namespace
    assert (ns / "row_changes" / "metadata").is_dir()  # (where the catalog puts tables)
    since = time.time() - 30

    def left_by_dead_run(table: str, mtime: float) -> Path:
        meta = ns / table / "metadata"
        meta.mkdir(parents=True)
        f = meta / f"00000-{uuid.uuid4()}.metadata.json"
        f.write_text("{}")
        crc = meta / f".{f.name}.crc"
        crc.write_bytes(b"crc")
        for p in (f, crc):
            os.utime(p, (mtime, mtime))
        return f

    dead_file = left_by_dead_run("changelog__wl__dead_t", since + 10)
    older = left_by_dead_run("changelog__wl__older_t", since - 3600)
    foreign = left_by_dead_run("analyst_scratch", since + 10)
    note = (f"pid 1 on host-a, run dead-run, source {settings.source}, since "
            f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(since))}")
    dead = DeadRun.parse(note)
    assert dead is not None
    # a lock per source: a new file may be a live load's, so it stays
    assert remove_orphans(spark, settings, dead, time.time(), global_lock=False) == []
    assert dead_file.exists()
    findings = after_killed(spark, settings, "next-run", [note])
    assert [f["kind"] for f in findings] == ["killed_run_cleaned"]
    assert "1 file(s)" in findings[0]["message"], findings
    assert not (ns / "changelog__wl__dead_t").exists()  # the directory, left empty, too
    assert older.exists() and foreign.exists()
    # the lake's own tables lost nothing
    assert read_table(spark, settings, "files")
