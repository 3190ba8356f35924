"""Write-audit-publish branches for a load: a load's Iceberg reads and writes on a named branch
(:func:`on_branch`) and the check of a branch name.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def on_branch(spark: Any, branch: str | None) -> Iterator[None]:
    """Within: Iceberg reads and writes go to ``branch`` (``spark.wap.branch``; created from
    main by the first write).  Without a branch: main."""
    if branch is None:
        yield
        return
    check_branch_name(branch)
    key = "spark.wap.branch"
    before = spark.conf.get(key, None)
    spark.conf.set(key, branch)
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def check_branch_name(branch: str) -> None:
    import re

    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}", branch) or branch == "main":
        raise ValueError(f"bad branch name {branch!r}: letters, digits, _ . - only, not main")
