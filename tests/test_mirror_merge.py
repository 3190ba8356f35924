"""The driver's MERGE of a small folded delta into a mirror (lake/mirror_merge.py): against a
plain model of the MERGE's rules, and against Spark's own MERGE of the same delta into a twin
mirror (typed_mirror._merge_mirror, the path a bigger delta takes)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.spark]

TYPED = [("k", "bigint"), ("v", "string"), ("d", "decimal(10,2)")]
ORDER = ("_order_seq", "_order_pos", "_order_idx")


@pytest.fixture
def lake(spark_lake: Any, tmp_path: Path) -> Any:
    from binlake.config import load_settings
    from binlake.lake.spark import build_session

    name = f"mm_{tmp_path.name[-12:].replace('-', '_').lower()}"
    settings = load_settings(env={"BINLAKE_HOME": str(tmp_path), "BINLAKE_CATALOG_NAME": name})
    spark = build_session(settings, master="local[2]")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {settings.catalog_name}.{settings.namespace}")
    return SimpleNamespace(spark=spark, settings=settings)


def _mirror(lake: Any, name: str, rows: list[tuple[Any, ...]],
            partitioning: str | None = None) -> str:
    """A mirror table (the typed columns, then binlake's), holding ``rows``: (source, k, v, d,
    order key)."""
    from binlake.lake.typed_ddl import _create
    from binlake.lake.typed_plan import MIRROR_META

    table = lake.settings.table(name)
    _create(lake.spark, table, TYPED, {}, MIRROR_META, partitioning)
    if rows:
        values = ", ".join(
            f"({k}, '{v}', {d}, '{src}', {o[0]}, {o[1]}, {o[2]}, TIMESTAMP '2024-01-01 00:00:00')"
            for src, k, v, d, o in rows)
        lake.spark.sql(f"INSERT INTO {table} VALUES {values}")
    return table


def _delta(changes: list[tuple[Any, ...]]) -> Any:
    """A folded delta (one change per key): (op, k, v, d, order key)."""
    import pyarrow as pa

    schema = pa.schema([("k", pa.int64()), ("v", pa.string()), ("d", pa.decimal128(10, 2)),
                        ("_op", pa.string()), ("_order_seq", pa.int32()),
                        ("_order_pos", pa.int64()), ("_order_idx", pa.int32()),
                        ("_commit_ts", pa.timestamp("us", tz="UTC"))])
    ts = datetime(2024, 1, 2, tzinfo=UTC)
    return pa.Table.from_pylist(
        [{"k": k, "v": v, "d": None if d is None else Decimal(d), "_op": op,
          "_order_seq": o[0], "_order_pos": o[1], "_order_idx": o[2], "_commit_ts": ts}
         for op, k, v, d, o in changes], schema=schema)


def _model(rows: list[tuple[Any, ...]], changes: list[tuple[Any, ...]], source: str
           ) -> dict[tuple[str, int], tuple[Any, ...]]:
    """What the MERGE's rules leave: per (source, key), the row; a change of this source's
    key applies when the key is absent or the change is newer than the row."""
    state = {(src, k): (v, Decimal(d) if d is not None else None, o)
             for src, k, v, d, o in rows}
    for op, k, v, d, o in changes:
        cur = state.get((source, k))
        if cur is not None and not o > cur[2]:
            continue
        if op == "delete":
            state.pop((source, k), None)
        else:
            state[(source, k)] = (v, Decimal(d) if d is not None else None, o)
    return state


def _read(lake: Any, table: str, key: str = "k", branch: str | None = None
          ) -> dict[tuple[str, int], tuple[Any, ...]]:
    at = f" VERSION AS OF '{branch}'" if branch else ""
    got: dict[tuple[str, int], tuple[Any, ...]] = {}
    for r in lake.spark.sql(f"SELECT _source, {key}, v, d, _order_seq, _order_pos, "
                            f"_order_idx FROM {table}{at}").collect():
        assert (r[0], r[1]) not in got, f"two live rows of key {r[0]}, {r[1]}"
        got[(r[0], r[1])] = (r[2], r[3], (r[4], r[5], r[6]))
    return got


def _spark_merge(lake: Any, table: str, changes: list[tuple[Any, ...]]) -> None:
    from binlake.lake.spark import local_frame
    from binlake.lake.typed_mirror import _merge_mirror

    rows = [(k, v, None if d is None else Decimal(d), op, *o,
             datetime(2024, 1, 2)) for op, k, v, d, o in changes]
    df = local_frame(lake.spark, rows, "k BIGINT, v STRING, d DECIMAL(10,2), _op STRING, "
                     "_order_seq INT, _order_pos BIGINT, _order_idx INT, _commit_ts TIMESTAMP")
    _merge_mirror(lake.spark, lake.settings, df, table,
                  SimpleNamespace(columns=dict(TYPED)), ["k"], False, False, folded=True)


ROWS = [("default", k, f"v{k}", f"{k}.50", (1, 100, k)) for k in range(1, 7)] + [
    ("other", 1, "theirs", "9.00", (1, 50, 0)), ("other", 7, "theirs7", "1.00", (1, 50, 1))]
CHANGES = [
    ("update", 1, "u1", "1.75", (2, 10, 0)),      # newer: replaces
    ("delete", 2, None, None, (2, 10, 1)),        # newer: deletes
    ("update", 3, "stale", "0.00", (1, 50, 0)),   # older than the row: nothing
    ("delete", 4, None, None, (1, 99, 9)),        # older: nothing
    ("insert", 7, "new", "7.00", (2, 10, 2)),     # a new key here (another source has it)
    ("delete", 8, None, None, (2, 10, 3)),        # a key nowhere: nothing
    ("insert", 5, "again", "5.25", (2, 10, 4)),   # an insert over a live row, newer
]


def _java_list(iterable: Any) -> list[Any]:
    """A Java iterable's items (by its iterator's hasNext, not Python's iteration)."""
    it, out = iterable.iterator(), []
    while it.hasNext():
        out.append(it.next())
    return out


def test_driver_merge_matches_model_and_spark(lake: Any) -> None:
    from binlake.lake.mirror_merge import merge_on_driver

    here = _mirror(lake, "mirror__t__a", ROWS)
    twin = _mirror(lake, "mirror__t__b", ROWS)
    got = merge_on_driver(lake.spark, lake.settings, here, _delta(CHANGES), ["k"], "run1")
    assert got == {"deleted": 3, "inserted": 3}  # keys 1, 2, 5 replaced or gone; 1, 5, 7 in
    _spark_merge(lake, twin, CHANGES)
    want = _model(ROWS, CHANGES, "default")
    assert _read(lake, here) == want
    assert _read(lake, twin) == want
    # one commit: a row delta with a position delete file and a data file
    snap = lake.spark.sql(f"SELECT operation, summary FROM {here}.snapshots "
                          "ORDER BY committed_at DESC LIMIT 1").collect()[0]
    assert snap["operation"] == "overwrite" and snap["summary"]["binlake.run_id"] == "run1"
    assert snap["summary"]["added-position-deletes"] == "3"
    deletes = lake.spark.sql(f"SELECT content, record_count FROM {here}.delete_files").collect()
    assert [(r[0], r[1]) for r in deletes] == [(1, 3)]  # content 1: position deletes
    # its column statistics (commit.parquet_size_and_metrics: the local footer) are
    # Iceberg's own ParquetUtil.fileMetrics of the file
    from binlake.lake.commit import java_table

    ice = lake.spark._jvm.org.apache.iceberg
    jt = java_table(lake.spark, here)
    spec, io = jt.spec(), jt.io()
    found = [t.deletes().get(i) for t in _java_list(jt.newScan().planFiles())
             for i in range(t.deletes().size())]
    assert len({f.location() for f in found}) == 1
    dfile = found[0]
    iceberg_s = ice.FileMetadata.deleteFileBuilder(spec).copy(dfile).withMetrics(
        ice.parquet.ParquetUtil.fileMetrics(io.newInputFile(dfile.location()),
                                            ice.MetricsConfig.forPositionDelete(jt))).build()
    assert dfile.fileSizeInBytes() == io.newInputFile(dfile.location()).getLength()
    to_json = ice.ContentFileParser.toJson
    assert to_json(dfile, spec) == to_json(iceberg_s, spec)

    # the same delta again: nothing is newer, nothing is committed
    n = lake.spark.sql(f"SELECT count(*) FROM {here}.snapshots").collect()[0][0]
    assert merge_on_driver(lake.spark, lake.settings, here, _delta(CHANGES), ["k"],
                           "run2") == {"deleted": 0, "inserted": 0}
    assert lake.spark.sql(f"SELECT count(*) FROM {here}.snapshots").collect()[0][0] == n

    # a later delta: the rows deleted above are not matched again, the live ones are
    later = [("update", 1, "u2", "1.00", (3, 1, 0)), ("delete", 5, None, None, (3, 1, 1)),
             ("insert", 2, "back", "2.00", (3, 1, 2)), ("update", 6, "six", "6.00", (3, 1, 3))]
    assert merge_on_driver(lake.spark, lake.settings, here, _delta(later), ["k"],
                           "run3") == {"deleted": 3, "inserted": 3}
    _spark_merge(lake, twin, later)
    want = _model([(s, k, v, None if d is None else str(d), o)
                   for (s, k), (v, d, o) in want.items()], later, "default")
    assert _read(lake, here) == want == _read(lake, twin)
    # pyiceberg (the analysts' reader) applies the position deletes too
    from binlake.lake.spark import pyiceberg_catalog

    t = pyiceberg_catalog(lake.settings).load_table(
        f"{lake.settings.namespace}.mirror__t__a").scan().to_arrow()
    assert sorted(zip(t.column("_source").to_pylist(), t.column("k").to_pylist())) == \
        sorted(want)


def test_renamed_key_column_is_found_by_field_id(lake: Any) -> None:
    from binlake.lake.mirror_merge import merge_on_driver

    table = _mirror(lake, "mirror__t__r", ROWS)
    lake.spark.sql(f"ALTER TABLE {table} RENAME COLUMN k TO id")
    changes = [("update", 3, "moved", "3.00", (2, 1, 0)), ("delete", 4, None, None, (2, 1, 1))]
    delta = _delta(changes).rename_columns(["id", *_delta(changes).column_names[1:]])
    assert merge_on_driver(lake.spark, lake.settings, table, delta, ["id"], "r1") == \
        {"deleted": 2, "inserted": 1}
    assert _read(lake, table, key="id") == _model(ROWS, changes, "default")


def test_branch_is_written_main_is_not(lake: Any) -> None:
    from binlake.lake.branch import on_branch
    from binlake.lake.commit import java_table
    from binlake.lake.mirror_merge import merge_on_driver

    table = _mirror(lake, "mirror__t__w", ROWS)
    before = _read(lake, table)
    main_head = java_table(lake.spark, table).currentSnapshot().snapshotId()
    key = "binlake.watermark.default@audit1"
    with on_branch(lake.spark, "audit1"):
        assert merge_on_driver(lake.spark, lake.settings, table, _delta(CHANGES), ["k"],
                               "w1", props={key: "2,10,4"}) == {"deleted": 3, "inserted": 3}
    assert _read(lake, table) == before
    assert _read(lake, table, branch="audit1") == _model(ROWS, CHANGES, "default")
    # the properties came in the MERGE's own commit (one transaction): the metadata version
    # that made the branch's head already has them; the branch was forked at main's head
    # first (its snapshot counts main's rows), and main did not move
    jtable = java_table(lake.spark, table)
    now = jtable.operations().current()
    assert now.currentSnapshot().snapshotId() == main_head
    head = now.ref("audit1").snapshotId()
    assert jtable.snapshot(head).parentId() == main_head
    assert now.properties().get(key) == "2,10,4"
    ice = lake.spark._jvm.org.apache.iceberg
    log = now.previousFiles()
    versions = [ice.TableMetadataParser.read(jtable.io(), log.get(i).file())
                for i in range(log.size())] + [now]
    made = next(m for m in versions
                if m.ref("audit1") is not None and m.ref("audit1").snapshotId() == head)
    assert made.properties().get(key) == "2,10,4"


def test_declines_what_it_does_not_write(lake: Any) -> None:
    """A partitioned mirror, a NULL key: None, nothing written (Spark's MERGE takes them)."""
    from binlake.lake.mirror_merge import merge_on_driver

    part = _mirror(lake, "mirror__t__p", ROWS, partitioning="v")
    n = lake.spark.sql(f"SELECT count(*) FROM {part}.snapshots").collect()[0][0]
    assert merge_on_driver(lake.spark, lake.settings, part, _delta(CHANGES), ["k"], "p") \
        is None
    plain = _mirror(lake, "mirror__t__n", ROWS)
    nulls = _delta([("insert", None, "x", "1.00", (2, 1, 0))])
    assert merge_on_driver(lake.spark, lake.settings, plain, nulls, ["k"], "n") is None
    assert lake.spark.sql(f"SELECT count(*) FROM {part}.snapshots").collect()[0][0] == n
    assert _read(lake, plain) == _model(ROWS, [], "default")


def _compacting(lake: Any, table: str, times: int) -> Any:
    """A stand-in for ``mirror_merge._commit`` that first compacts ``table`` (Iceberg's
    rewrite_data_files, every data file rewritten: the maintenance job a user runs beside
    the nightly load) in its first ``times`` calls, then commits as the real one does."""
    from binlake.lake import mirror_merge

    real = mirror_merge._commit
    calls: list[int] = []

    def commit(*args: Any, **kw: Any) -> None:
        if len(calls) < times:
            lake.spark.sql(f"CALL {lake.settings.catalog_name}.system.rewrite_data_files("
                           f"table => '{table.split('.', 1)[1]}', "
                           "options => map('rewrite-all', 'true'))").collect()
        calls.append(1)
        real(*args, **kw)

    commit.calls = calls  # type: ignore[attr-defined]
    return commit


def _data_files(lake: Any, table: str) -> set[str]:
    return {r[0] for r in lake.spark.sql(f"SELECT file_path FROM {table}.data_files").collect()}


def test_compaction_between_read_and_commit_is_retried(lake: Any, monkeypatch: Any) -> None:
    """A compaction commits after the driver's MERGE read the mirror's files and before it
    commits: the position deletes name data files that are gone, so the commit must not go
    in as it is (it would lose the deletes: old rows would come back). The MERGE reads again
    from the compacted snapshot and commits that."""
    from binlake.lake import mirror_merge

    table = _mirror(lake, "mirror__t__c", ROWS)
    before = _data_files(lake, table)
    commit = _compacting(lake, table, times=1)
    monkeypatch.setattr(mirror_merge, "_commit", commit)
    got = mirror_merge.merge_on_driver(lake.spark, lake.settings, table, _delta(CHANGES),
                                       ["k"], "c1")
    assert len(commit.calls) == 2, "the compaction did not fail the first commit"
    assert got == {"deleted": 3, "inserted": 3}
    assert _read(lake, table) == _model(ROWS, CHANGES, "default")
    # the deletes name the compacted files, not the ones the compaction removed
    deleted = {r[0] for r in lake.spark.sql(
        f"SELECT DISTINCT file_path FROM {table}.position_deletes").collect()}
    assert deleted and not deleted & before, deleted
    # the failed attempt's files were removed, not left in the table's data directory
    live = {_local(p) for p in _data_files(lake, table) | {r[0] for r in lake.spark.sql(
        f"SELECT file_path FROM {table}.delete_files").collect()}}
    old = {_local(p) for p in before}
    data_dir = Path(next(iter(old))).parent
    leftover = {str(p) for p in data_dir.rglob("*.parquet")} - live - old
    assert not leftover, leftover


def _local(uri: str) -> str:
    from urllib.parse import urlparse

    return urlparse(uri).path


def test_compaction_every_time_fails_the_merge_and_changes_nothing(
        lake: Any, monkeypatch: Any) -> None:
    from binlake.lake import mirror_merge

    table = _mirror(lake, "mirror__t__e", ROWS)
    commit = _compacting(lake, table, times=99)
    monkeypatch.setattr(mirror_merge, "_commit", commit)
    with pytest.raises(Exception, match="ValidationException: Cannot commit, missing data files"):
        mirror_merge.merge_on_driver(lake.spark, lake.settings, table, _delta(CHANGES),
                                     ["k"], "e1")
    assert len(commit.calls) == mirror_merge.MERGE_ATTEMPTS
    assert _read(lake, table) == _model(ROWS, [], "default")


def _partial_delta(changes: list[tuple[Any, ...]]) -> Any:
    """A partial fold's delta (fold.fold_partial): (op, k, v, d, order key, kept columns):
    a kept column's value is NULL, and its flag (``__bl_kf0`` for v, ``__bl_kf1`` for d)
    set."""
    import pyarrow as pa

    t = _delta([c[:5] for c in changes])
    for i, c in enumerate(("v", "d")):
        t = t.append_column(f"__bl_kf{i}", pa.array([c in ch[5] for ch in changes]))
    return t


def _spark_partial_merge(lake: Any, table: str, changes: list[tuple[Any, ...]]) -> None:
    from binlake.lake.spark import local_frame
    from binlake.lake.typed_mirror import _merge_mirror

    rows = [(k, v, None if d is None else Decimal(d), op, *o, datetime(2024, 1, 2),
             "v" in kept, "d" in kept) for op, k, v, d, o, kept in changes]
    df = local_frame(lake.spark, rows, "k BIGINT, v STRING, d DECIMAL(10,2), _op STRING, "
                     "_order_seq INT, _order_pos BIGINT, _order_idx INT, _commit_ts TIMESTAMP, "
                     "__bl_kf0 BOOLEAN, __bl_kf1 BOOLEAN")
    _merge_mirror(lake.spark, lake.settings, df, table,
                  SimpleNamespace(columns=dict(TYPED)), ["k"], True, False, folded=True)


def test_driver_merge_of_a_partial_fold_keeps_the_mirrors_values(lake: Any) -> None:
    """A partial fold (binlog_row_image MINIMAL / NOBLOB): a row that replaces a mirror's
    row takes that row's values of the columns its flags name, and its own of the others;
    a new key's row has NULL there; a stale change changes nothing.  The driver's MERGE
    gives what Spark's MERGE of the same delta gives (typed_mirror._apply_mirror with
    ``partial``), and what the rules say (written out here)."""
    from binlake.lake.mirror_merge import merge_on_driver

    changes = [
        ("update", 1, None, "1.75", (2, 10, 0), ("v",)),      # keeps v1, takes 1.75
        ("update", 2, "u2", None, (2, 10, 1), ("d",)),        # takes u2, keeps 2.50
        ("update", 3, None, None, (1, 50, 0), ("v", "d")),    # older than the row: nothing
        ("update", 4, None, None, (2, 10, 2), ("v", "d")),    # keeps both: only the order
        ("update", 9, None, "9.99", (2, 10, 3), ("v",)),      # a key not in the mirror
        ("delete", 5, None, None, (2, 10, 4), ()),
        ("insert", 6, "six", "6.00", (2, 10, 5), ()),         # a whole row over a live one
    ]
    here = _mirror(lake, "mirror__t__pa", ROWS)
    twin = _mirror(lake, "mirror__t__pb", ROWS)
    got = merge_on_driver(lake.spark, lake.settings, here, _partial_delta(changes), ["k"],
                          "run1", [("v", "__bl_kf0"), ("d", "__bl_kf1")])
    assert got == {"deleted": 5, "inserted": 5}
    _spark_partial_merge(lake, twin, changes)
    want = {key: row for key, row in _model(ROWS, [], "default").items()}
    want[("default", 1)] = ("v1", Decimal("1.75"), (2, 10, 0))
    want[("default", 2)] = ("u2", Decimal("2.50"), (2, 10, 1))
    want[("default", 4)] = ("v4", Decimal("4.50"), (2, 10, 2))
    want[("default", 9)] = (None, Decimal("9.99"), (2, 10, 3))
    del want[("default", 5)]
    want[("default", 6)] = ("six", Decimal("6.00"), (2, 10, 5))
    assert _read(lake, twin) == want
    assert _read(lake, here) == want


def test_java_table_sees_a_commit_made_outside_spark(lake: Any) -> None:
    """commit.java_table refreshes through the catalog's invalidateTable (no REFRESH TABLE
    statement): after a commit by another client (pyiceberg, on the same catalog), the Java
    table and Spark's reads see it, where the cached table does not."""
    from binlake.lake.commit import java_table, jclass
    from binlake.lake.spark import pyiceberg_catalog

    table = _mirror(lake, "mirror__t__fresh", ROWS)
    before = java_table(lake.spark, table).currentSnapshot().snapshotId()
    assert lake.spark.table(table).count() == len(ROWS)
    outside = pyiceberg_catalog(lake.settings).load_table(
        f"{lake.settings.namespace}.mirror__t__fresh")
    outside.delete("k = 1")
    now = pyiceberg_catalog(lake.settings).load_table(
        f"{lake.settings.namespace}.mirror__t__fresh").current_snapshot().snapshot_id
    util = jclass(lake.spark, "org.apache.iceberg.spark.Spark3Util")
    cached = util.loadIcebergTable(lake.spark._jsparkSession, table)
    assert cached.currentSnapshot().snapshotId() == before != now
    assert java_table(lake.spark, table).currentSnapshot().snapshotId() == now
    assert lake.spark.table(table).count() == len(ROWS) - 2  # key 1 of both sources
