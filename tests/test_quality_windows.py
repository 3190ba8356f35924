"""The GTID and XA checks read window columns the datasets compute once (``covered_to``,
``highest_before``; ``xa_prev_record``, ``xa_next_record``: quality/datasets.py) instead of
computing a window in every query (the XA ones over the XA groups alone).  Here each
check's query over a dataset with those
columns gives the same unexpected rows as the check written with its window in the query (the
suite's queries before that change, kept below as the reference), on random streams full of
duplicates, gaps, out-of-order servers, headers, repeated and undecided XIDs, ties and NULLs."""

from __future__ import annotations

import random
from typing import Any

import pytest

pytestmark = [pytest.mark.spark]
pytest.importorskip("pyspark")

# The reference: the checks with their windows in the query.
_BELOW = ("max(gno_end) OVER (PARTITION BY flavor, uuid, tag, domain ORDER BY gno_start, o, "
          "seq, pos ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)")
_ORDERED = "(SELECT *, CASE origin WHEN 'header' THEN 0 ELSE 1 END AS o FROM {batch})"
_XA_ORDER = ("(SELECT *, lag(record) OVER w AS prev_record, lead(record) OVER w AS next_record "
             "FROM {batch} WHERE record IN ('xa_prepare', 'xa_end') "
             "WINDOW w AS (PARTITION BY xa_xid ORDER BY seq, begin_pos))")
REFERENCE = {
    "gtid.no_duplicates": (
        f"SELECT file, pos, gtid FROM (SELECT *, {_BELOW} AS covered_to FROM {_ORDERED}) "
        "WHERE origin = 'event' AND covered_to >= gno_start"),
    "gtid.mysql_no_gaps": (
        f"SELECT file, pos, gtid, below + 1 AS missing_from, gno_start - 1 AS missing_to "
        f"FROM (SELECT *, {_BELOW} AS below FROM {_ORDERED} WHERE flavor = 'mysql') "
        "WHERE origin = 'event' AND below IS NOT NULL AND gno_start > below + 1"),
    "gtid.mariadb_no_gaps": (
        f"SELECT file, pos, gtid, below + 1 AS missing_from, gno_start - 1 AS missing_to "
        f"FROM (SELECT *, {_BELOW} AS below FROM {_ORDERED} WHERE flavor = 'mariadb') "
        "WHERE origin = 'event' AND below IS NOT NULL AND gno_start > below + 1"),
    "gtid.mariadb_per_server_order": (
        "SELECT file, pos, gtid, highest_before FROM (SELECT *, max(gno_end) OVER "
        "(PARTITION BY domain, server ORDER BY o, seq, pos ROWS BETWEEN UNBOUNDED PRECEDING "
        f"AND 1 PRECEDING) AS highest_before FROM {_ORDERED} WHERE flavor = 'mariadb') "
        "WHERE origin = 'event' AND highest_before > gno_start"),
    "xa.decisions_match_prepares": (
        f"SELECT file, begin_pos, xa_xid, status, prev_record FROM {_XA_ORDER} "
        "WHERE record = 'xa_end' AND (prev_record IS NULL OR prev_record <> 'xa_prepare')"),
    "xa.no_duplicate_prepare": (
        f"SELECT file, begin_pos, xa_xid FROM {_XA_ORDER} "
        "WHERE record = 'xa_prepare' AND prev_record = 'xa_prepare'"),
    "xa.pending_age": (
        f"SELECT file, begin_pos, xa_xid, run_last_ts - ts AS age_seconds FROM {_XA_ORDER} "
        "WHERE record = 'xa_prepare' AND next_record IS NULL AND run_last_ts - ts > 50.0"),
}


@pytest.fixture(scope="module")
def spark(spark_lake: Any) -> Any:
    return spark_lake


def _gtids(rng: random.Random) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    uuids = ["u1", "u2"]
    for f in range(1, 4):
        pos = 4
        for _ in range(rng.randint(20, 60)):
            pos += rng.choice([0, 50, 120])  # some positions repeat: ties in the order
            if rng.random() < 0.5:
                gno = rng.randint(1, 40)
                rows.append(("event", "mysql", f"f{f}", f, pos, f"g{gno}", rng.choice(uuids),
                             rng.choice(["", "", "t"]), None, None, gno, gno))
            else:
                seq_no = rng.randint(1, 40)
                rows.append(("event", "mariadb", f"f{f}", f, pos, f"m{seq_no}", None, None,
                             rng.choice([0, 1]), rng.choice([1, 2, 3]), seq_no, seq_no))
    # the first file's header (intervals), at a position among its events: the checks order
    # it before every event by its origin, not by its position
    for u in uuids:
        lo = rng.randint(1, 5)
        rows.append(("header", "mysql", "f1", 1, rng.randint(4, 2000), None, u, "", None, None,
                     lo, lo + rng.randint(0, 6)))
    for d in (0, 1):
        hi = rng.randint(1, 8)
        rows.append(("header", "mariadb", "f1", 1, rng.randint(4, 2000), None, None, None, d,
                     rng.choice([1, 2]), hi, hi))
    return rows


def _groups(rng: random.Random) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    xids = [f"1:{n}:" for n in range(8)] + [None]
    for f in range(1, 4):
        pos = 4
        for _ in range(rng.randint(20, 50)):
            pos += rng.choice([0, 80, 200])
            record = rng.choice(["txn", "txn", "xa_prepare", "xa_end", "incomplete"])
            xid = rng.choice(xids) if record.startswith("xa") or rng.random() < 0.1 else None
            status = ("xa_commit" if rng.random() < 0.7 else "xa_rollback") \
                if record == "xa_end" else None
            rows.append((f"f{f}", f, pos, pos + 50, record, "k", status, "e", None,
                         rng.randint(0, 100), xid, 1, 0, 0, 0, 0, 0))
    return rows


def _unexpected(spark: Any, df: Any, query: str) -> list[tuple[Any, ...]]:
    df.createOrReplaceTempView("windows_batch")
    return sorted((tuple(r) for r in spark.sql(query.format(batch="windows_batch")).collect()),
                  key=repr)


@pytest.mark.parametrize("seed", range(6))
def test_window_columns_give_the_same_unexpected_rows(spark: Any, seed: int) -> None:
    from pyspark.sql import functions as F

    from binlake.lake.spark import local_frame
    from binlake.quality import datasets as D
    from binlake.quality import facts as X
    from binlake.quality.suite import checks

    rng = random.Random(seed)
    raw_gtids = local_frame(spark, _gtids(rng), D.GTIDS_SCHEMA)
    raw_groups = local_frame(spark, _groups(rng), X.GROUP_SCHEMA).withColumn(
        "origin", F.lit("run")).withColumn("run_last_ts", F.lit(100).cast("bigint"))
    gtids = D._with_gtid_order(raw_gtids)
    groups = D._with_xa_order(raw_groups)
    assert sorted(map(repr, groups.drop("xa_prev_record", "xa_next_record").collect())) \
        == sorted(map(repr, raw_groups.collect()))  # every group, XA or not
    by_name = {c.name: c for c in checks(xa_max_age=50.0)}
    found = 0
    for name, reference in REFERENCE.items():
        raw, ready = (raw_gtids, gtids) if name.startswith("gtid") else (raw_groups, groups)
        want = _unexpected(spark, raw, reference)
        got = _unexpected(spark, ready, by_name[name].expectation().unexpected_rows_query)
        assert got == want, name
        found += bool(want)
    assert found >= 5, "the random streams should break most of these checks"
