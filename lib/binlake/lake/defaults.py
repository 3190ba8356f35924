"""What the server writes into a column that an INSERT leaves out, in the form the decoder
writes row images (docs/decode-format.md "Values").

A MINIMAL row image (``binlog_row_image=MINIMAL``) of an INSERT carries only the columns
the statement gave (``INSERT INTO t (id) VALUES (1)`` logs ``id`` alone); the server wrote
each other column's default, which the binlog does not hold.  The schema history does (the
``DEFAULT`` clause of CREATE TABLE, ALTER TABLE ADD / MODIFY / CHANGE COLUMN, ALTER COLUMN
SET / DROP DEFAULT), and the typed tables take it from there (:mod:`binlake.lake.typedconv`
gets it per layout).  Only literals whose stored value is certain are given: not an
expression (``CURRENT_TIMESTAMP``, a function), a TIMESTAMP (its literal is in the session
time zone of the DDL), a fraction of seconds longer than the column keeps, a generated
column, JSON or spatial types.  A NOT NULL column without a DEFAULT clause holds its
type's implicit default (0, '', the first ENUM member, the zero date) in any row the
server wrote without it.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

_INTS = frozenset({"tinyint", "smallint", "mediumint", "int", "integer", "bigint"})
_TEXTS = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext"})
_BINARIES = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"})
_DECIMALS = frozenset({"decimal", "numeric", "dec", "fixed"})
_FLOATS = frozenset({"float", "double", "real"})
_INT = re.compile(r"^[+-]?\d+$")
_NUM = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?)?$")
_TIME = re.compile(r"^(-)?(\d{1,3}):(\d{2}):(\d{2})(?:\.(\d+))?$")

UNKNOWN: tuple[bool, Any] = (False, None)


def _literal(text: str) -> tuple[str, str] | None:
    """(kind, text) of a default's SQL: ``str`` (a string literal, unescaped), ``num``,
    ``bits`` (b'0101'), ``hex`` (X'0aff'); None for anything else."""
    import sqlglot
    from sqlglot import exp

    try:
        e = sqlglot.parse_one(text, read="mysql")
    except Exception:  # sqlglot's errors: not a literal it reads
        return None
    sign = ""
    while isinstance(e, exp.Paren):
        e = e.this
    if isinstance(e, exp.Neg):
        sign, e = "-", e.this
    if isinstance(e, exp.Literal):
        if e.is_string:
            return None if sign else ("str", str(e.this))
        return "num", sign + str(e.this)
    if sign:
        return None
    if isinstance(e, exp.BitString):
        return "bits", str(e.this)
    if isinstance(e, exp.HexString):
        return "hex", str(e.this)
    if isinstance(e, exp.Boolean):
        return "num", "1" if e.this else "0"
    return None


def image_default(c: Any) -> tuple[bool, Any]:
    """(known, value): what the server writes into column ``c`` (a
    :class:`binlake.schema.model.SchemaColumn`) of a row an INSERT does not give it, as a
    row image holds it: an integer, a DECIMAL's digits at its scale, a float, a string, a
    date or time's text, ``{"hex": ...}`` for binary types, NULL.  (False, None) where
    that is not certain (see the module doc)."""
    if c.generated:
        return UNKNOWN
    if c.default is None:
        if c.base == "timestamp":  # (maybe the server's implicit CURRENT_TIMESTAMP:
            return UNKNOWN  # explicit_defaults_for_timestamp OFF)
        if c.nullable:
            return True, None
        # NOT NULL without a DEFAULT: strict mode refuses the INSERT; a row the server
        # wrote anyway (INSERT IGNORE, no strict mode, a non-transactional table past the
        # statement's first row) holds the type's implicit default
        value = _implicit(c)
        return UNKNOWN if value is _NONE else (True, value)
    text = str(c.default).strip()
    if text.upper() == "NULL":
        return True, None
    lit = _literal(text)
    if lit is None:
        return UNKNOWN
    try:
        value = _value(c, *lit)
    except (ValueError, InvalidOperation, UnicodeError, IndexError):
        return UNKNOWN
    return UNKNOWN if value is _NONE else (True, value)


_NONE = object()


def _value(c: Any, kind: str, text: str) -> Any:
    base = c.base
    binary_text = (c.charset or "").lower() == "binary"
    if kind in ("bits", "hex"):
        raw = (int(text or "0", 2).to_bytes((len(text) + 7) // 8, "big") if kind == "bits"
               else bytes.fromhex(text if len(text) % 2 == 0 else "0" + text))
        if base in _INTS or base == "bit":
            return int.from_bytes(raw, "big")
        if base in _BINARIES or binary_text:
            return _hex(c, raw)
        return _NONE
    if base in _INTS or base == "bit":
        num = text.strip()
        return int(num) if _INT.match(num) else _NONE
    if base in _DECIMALS:
        num = text.strip()
        if not _NUM.match(num):
            return _NONE
        return format(Decimal(num).quantize(Decimal(1).scaleb(-int(c.scale or 0)),
                                            rounding=ROUND_HALF_UP), "f")
    if base in _FLOATS:
        num = text.strip()
        return float(num) if _NUM.match(num) else _NONE
    if base == "year":
        num = text.strip()
        if kind == "num" and _INT.match(num) and (int(num) == 0 or 1901 <= int(num) <= 2155):
            return int(num)
        return _NONE
    if kind != "str":  # a number for a string column: its text
        return text if base in _TEXTS else _NONE
    if base in _BINARIES or binary_text:
        return _hex(c, text.encode("utf-8"))
    if base == "char":
        return text.rstrip(" ")
    if base in _TEXTS:
        return text
    if base == "enum":
        members = list(c.members or ())
        hit = [m for m in members if m.lower() == text.lower()]
        return hit[0] if hit else _NONE
    if base == "set":
        members = list(c.members or ())
        want = {p.lower() for p in text.split(",") if p}
        if not want <= {m.lower() for m in members}:
            return _NONE
        return ",".join(m for m in members if m.lower() in want)
    if base == "date":
        return text if _DATE.match(text) else _NONE
    if base == "datetime":
        m = _DATETIME.match(text)
        if m is None:
            return _NONE
        return m.group(1) + " " + _clock(m.group(2) or "0", m.group(3) or "0",
                                         m.group(4) or "0", m.group(5), int(c.scale or 0))
    if base == "time":
        m = _TIME.match(text)
        if m is None:
            return _NONE
        return (m.group(1) or "") + _clock(m.group(2), m.group(3), m.group(4), m.group(5),
                                           int(c.scale or 0))
    return _NONE


def _implicit(c: Any) -> Any:
    """The implicit default of a NOT NULL column's type, as a row image holds it."""
    base = c.base
    scale = int(c.scale or 0)
    if base in _INTS or base in ("bit", "year"):
        return 0
    if base in _DECIMALS:
        return format(Decimal(0).quantize(Decimal(1).scaleb(-scale)), "f")
    if base in _FLOATS:
        return 0.0
    if base in _BINARIES or (c.charset or "").lower() == "binary":
        return _hex(c, b"")
    if base in _TEXTS or base == "set":
        return ""
    if base == "enum":
        return c.members[0] if c.members else _NONE
    if base == "date":
        return "0000-00-00"
    if base == "datetime":
        return "0000-00-00 " + _clock("0", "0", "0", None, scale)
    if base == "time":
        return _clock("0", "0", "0", None, scale)
    return _NONE


def _clock(h: str, m: str, s: str, frac: str | None, scale: int) -> str:
    frac = frac or ""
    if len(frac) > scale:
        raise ValueError("more fractional digits than the column keeps")
    out = f"{int(h):02d}:{int(m):02d}:{int(s):02d}"
    return out + ("." + frac.ljust(scale, "0") if scale else "")


def _hex(c: Any, raw: bytes) -> dict[str, str]:
    if c.base == "binary" and c.length:  # BINARY(n): padded with 0x00, as the server does
        raw = raw.ljust(int(c.length), b"\x00")
    return {"hex": raw.hex()}
