"""lake.spark.local_frame: the driver's small tables as LocalRelations, values exactly typed."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

SCHEMA = ("a INT, b BIGINT, c STRING, d ARRAY<STRING>, e BOOLEAN, f DECIMAL(20,0), "
          "g DOUBLE")
ROWS = [
    (1, 2**63 - 1, "x'\\y\u00e9", ["p", "q"], True, Decimal(2**64 - 1), 1.5),
    (None, None, None, None, None, None, None),
    (-2**31, -2**63, "", [], False, Decimal(0), None),
    (7, 2**53 + 1, "z", [None, "r"], None, None, -0.25),  # 2**53 + 1: no float detour
]


def test_values_come_back_exactly(spark_lake: Any) -> None:
    from binlake.lake.spark import local_frame

    df = local_frame(spark_lake, ROWS, SCHEMA)
    assert [tuple(r) for r in df.collect()] == ROWS
    assert df.schema.simpleString() == (
        "struct<a:int,b:bigint,c:string,d:array<string>,e:boolean,f:decimal(20,0),g:double>")
    # held in the plan: queries on it start no Python worker
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "LocalTableScan" in plan, plan
    assert df.where("b > 0").count() == 2


def test_empty_and_wrong_width(spark_lake: Any) -> None:
    from binlake.lake.spark import local_frame

    empty = local_frame(spark_lake, [], SCHEMA)
    assert empty.collect() == [] and len(empty.columns) == 7
    with pytest.raises(ValueError, match="2 values, the schema 7 columns"):
        local_frame(spark_lake, [(1, 2)], SCHEMA)
