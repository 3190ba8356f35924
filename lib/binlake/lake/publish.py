"""Write-audit-publish: a load writes on an Iceberg branch, the checks read that branch, and
publishing makes it what analysts read (``main``); a run whose checks fail is discarded.

Every binlake table is created with ``write.wap.enabled``; :func:`binlake.lake.job.run_load`
with ``branch=B`` writes all of them on ``B`` (created from ``main`` by the first write).
:func:`publish` fast-forwards each table's ``main`` to ``B`` and drops ``B`` -- ``files``
last, so a file is never shown as loaded before its rows are visible.  A fast-forward fails
loudly when ``main`` moved since the branch was made (two runs overlapping): nothing is
overwritten.  Publishing again, or after a crash halfway, finishes what is left.

What is not per branch in Iceberg: table schemas (a column a run added is visible on main,
empty, before publishing) and table properties (the mirror watermark is therefore kept
under a per-branch key and moved to the main key here).
"""

from __future__ import annotations

from typing import Any

from ..config import Settings
from .job import check_branch_name
from .tables import FILES
from .typed import WATERMARK


def _tables(spark: Any, settings: Settings) -> list[str]:
    rows = spark.sql(f"SHOW TABLES IN {settings.catalog_name}.{settings.namespace}").collect()
    names = sorted(r["tableName"] for r in rows)
    return [n for n in names if n != FILES] + ([FILES] if FILES in names else [])


def _has_branch(spark: Any, table: str, branch: str) -> bool:
    return any(r[0] == branch for r in spark.sql(
        f"SELECT name FROM {table}.refs WHERE type = 'BRANCH'").collect())


def _move_watermarks(spark: Any, table: str, branch: str, keep: bool) -> None:
    suffix = f"@{branch}"
    for key, value in spark.sql(f"SHOW TBLPROPERTIES {table}").collect():
        if key.startswith(WATERMARK) and key.endswith(suffix):
            if keep:
                spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES "
                          f"('{key[:-len(suffix)]}' = '{value}')")
            spark.sql(f"ALTER TABLE {table} UNSET TBLPROPERTIES ('{key}')")


def publish(spark: Any, settings: Settings, branch: str) -> list[str]:
    """Make ``branch`` the published state of every table that has it; returns the tables
    published (none: nothing was written on that branch, or it was published already)."""
    return _finish(spark, settings, branch, keep=True)


def discard(spark: Any, settings: Settings, branch: str) -> list[str]:
    """Drop ``branch`` everywhere (a run whose checks failed): main is untouched, and the
    run's files are loaded again by the next run."""
    return _finish(spark, settings, branch, keep=False)


def _finish(spark: Any, settings: Settings, branch: str, keep: bool) -> list[str]:
    check_branch_name(branch)
    if spark.conf.get("spark.wap.branch", None):
        spark.conf.unset("spark.wap.branch")
    done = []
    for name in _tables(spark, settings):
        table = settings.table(name)
        if not _has_branch(spark, table, branch):
            continue
        if keep:
            spark.sql(f"CALL {settings.catalog_name}.system.fast_forward("
                      f"'{settings.namespace}.{name}', 'main', '{branch}')")
        _move_watermarks(spark, table, branch, keep)
        spark.sql(f"ALTER TABLE {table} DROP BRANCH IF EXISTS `{branch}`")
        done.append(name)
    return done
