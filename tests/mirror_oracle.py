"""A mirror's typed values against the server's (the decode contract's form of its ``SELECT``
text, tests/reference.py): both put in one comparable form."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest


def expected(cdef: Any, v: Any) -> Any:
    """A contract value as the typed column should hold it (comparable form)."""
    if v is None:
        return None
    t = cdef.sql_type
    if t == "FLOAT":  # the server prints 6 significant digits; the lake has the stored single
        return pytest.approx(v, rel=1e-5)
    if t == "DATE":
        try:
            return date.fromisoformat(v)
        except ValueError:
            return None  # zero / partial dates
    if t in ("DATETIME", "TIMESTAMP"):
        head, _, frac = v.partition(".")
        try:
            dt = datetime.strptime(head, "%Y-%m-%d %H:%M:%S")
        except ValueError:
            return None
        dt = dt.replace(microsecond=int(frac.ljust(6, "0")) if frac else 0)
        if t == "TIMESTAMP":
            return int(dt.replace(tzinfo=UTC).timestamp()) * 10**6 + dt.microsecond
        return dt
    if isinstance(v, dict) and "hex" in v:
        return bytes.fromhex(v["hex"])
    return v


def actual(cdef: Any, v: Any) -> Any:
    if v is None:
        return None
    t = cdef.sql_type
    if t == "DECIMAL":
        return v if isinstance(v, str) else format(v, "f")
    if isinstance(v, Decimal):
        return int(v)  # BIGINT UNSIGNED, BIT(64)
    if isinstance(v, bytearray):
        return bytes(v)
    return v
