"""Validation of decoded binlog streams and of the lake with Great Expectations 1.x.

``validate(spark, settings, sources, run_id=...)`` runs every expectation of
:mod:`binlake.quality.suite` (transaction grammar, positions, integrity, GTID continuity,
transaction_length, XA, and with ``lake=True`` the reconciliation of the Iceberg tables) and
returns a :class:`~binlake.quality.run.ValidationReport`.  See docs/validation.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..lake.worker import tune_worker

if TYPE_CHECKING:
    from .run import ValidationReport

__all__ = ["ValidationReport", "validate"]

tune_worker()  # in a Spark Python worker (the fact tasks): binlake.lake.worker


def validate(spark: Any, settings: Any, sources: list[str], *, run_id: str,
             branch: str | None = None, lake: bool = True, write: bool = True
             ) -> ValidationReport:
    """See :func:`binlake.quality.run.validate` (imported lazily: Great Expectations takes
    seconds to import)."""
    from .run import validate as _validate

    return _validate(spark, settings, sources, run_id=run_id, branch=branch, lake=lake,
                     write=write)


def __getattr__(name: str) -> Any:
    if name == "ValidationReport":
        from .run import ValidationReport

        return ValidationReport
    raise AttributeError(name)
