"""Write-audit-publish branches for a load: a load's Iceberg reads and writes on a named branch
(:func:`on_branch`) and the check of a branch name.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# Spark's optimizer rule that turns a DELETE into Iceberg's whole-file (metadata) delete
METADATA_DELETE_RULE = "org.apache.spark.sql.execution.datasources.v2.OptimizeMetadataOnlyDeleteFromTable"


@contextmanager
def on_branch(spark: Any, branch: str | None) -> Iterator[None]:
    """Within: Iceberg reads and writes go to ``branch`` (``spark.wap.branch``; created from
    main by the first write).  Without a branch: main.

    Within, DELETEs are row-level, never Iceberg's whole-file delete: Iceberg 1.10's Spark
    DELETE decides that whole files match from *main's* files when the branch comes from
    ``spark.wap.branch`` (the branch named in the table identifier instead is refused beside
    it), and commits on the branch, where a file the run wrote may match only in part: the
    DELETE then fails ("Cannot delete file where some, but not all, rows match filter"), as
    a TRUNCATE after a night's first changes of a table made it (tests/random_nights.py)."""
    if branch is None:
        yield
        return
    check_branch_name(branch)
    saved = {key: spark.conf.get(key, None)
             for key in ("spark.wap.branch", "spark.sql.optimizer.excludedRules")}
    spark.conf.set("spark.wap.branch", branch)
    rules = [r for r in (saved["spark.sql.optimizer.excludedRules"] or "").split(",") if r]
    spark.conf.set("spark.sql.optimizer.excludedRules",
                   ",".join([*rules, METADATA_DELETE_RULE]))
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def check_branch_name(branch: str) -> None:
    import re

    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}", branch) or branch == "main":
        raise ValueError(f"bad branch name {branch!r}: letters, digits, _ . - only, not main")
