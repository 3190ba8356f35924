"""A table's columns as a Table_map describes them: :class:`Column` (the type code, its
metadata resolved to length/precision/scale, and what optional metadata adds) and
:class:`TableMap`.  The parsing of the event lives in :mod:`.tablemap`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .constants import ColumnType as T

_NUMERIC = frozenset({T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG, T.NEWDECIMAL, T.FLOAT,
                      T.DOUBLE})
GEOMETRY_NAMES = {0: "GEOMETRY", 1: "POINT", 2: "LINESTRING", 3: "POLYGON", 4: "MULTIPOINT",
                  5: "MULTILINESTRING", 6: "MULTIPOLYGON", 7: "GEOMETRYCOLLECTION"}


@dataclass
class Column:
    index: int
    type: int  # the real type: STRING columns resolve to ENUM/SET/STRING via their metadata
    binlog_type: int  # the type code as written in the Table_map
    meta: int  # raw metadata value (0, 1 byte or 2 bytes little-endian as stored)
    nullable: bool
    name: str | None = None
    unsigned: bool = False
    collation: int | None = None
    members: tuple[str, ...] | None = None  # ENUM / SET strings
    geometry_type: int | None = None
    visible: bool = True
    vector_dimensions: int | None = None
    # Derived from meta:
    length: int = 0  # max byte length (CHAR/VARCHAR/BINARY), pack length (BLOB/ENUM/SET...)
    precision: int = 0
    scale: int = 0  # DECIMAL scale or fractional seconds digits

    def key(self) -> tuple[Any, ...]:
        return (self.type, self.binlog_type, self.meta, self.nullable, self.name, self.unsigned,
                self.collation, self.members)

    def describe(self) -> dict[str, Any]:
        d: dict[str, Any] = {"index": self.index, "name": self.name, "type": type_name(self)}
        d["binlog_type"] = self.binlog_type
        d["meta"] = self.meta
        d["nullable"] = self.nullable
        if self.type in _NUMERIC:
            d["unsigned"] = self.unsigned
        if self.collation is not None:
            d["collation"] = self.collation
        if self.members is not None:
            d["members"] = list(self.members)
        if self.geometry_type is not None:
            d["geometry_type"] = GEOMETRY_NAMES.get(self.geometry_type, self.geometry_type)
        if not self.visible:
            d["visible"] = False
        if self.vector_dimensions is not None:
            d["vector_dimensions"] = self.vector_dimensions
        return d


def type_name(col: Column) -> str:
    t = col.type
    try:
        base = T(t).name
    except ValueError:
        return f"TYPE_{t}"
    if t == T.NEWDECIMAL:
        return f"DECIMAL({col.precision},{col.scale})"
    if t in (T.DATETIME2, T.TIMESTAMP2, T.TIME2):
        return f"{base[:-1]}({col.scale})" if col.scale else base[:-1]
    if t in (T.VARCHAR, T.VAR_STRING, T.STRING):
        return f"{'CHAR' if t == T.STRING else 'VARCHAR'}({col.length} bytes)"
    if t == T.BIT:
        return f"BIT({col.length})"
    return base


@dataclass
class TableMap:
    table_id: int
    db: str
    table: str
    flags: int
    columns: list[Column]
    primary_key: list[int] | None = None
    primary_key_prefixes: list[int] | None = None
    has_full_metadata: bool = False  # the optional metadata names the columns
    has_signedness: bool = False  # ... and says which numeric columns are unsigned
    # The schema history version that named the columns of a Table_map logged without names
    # (binlake.schema.names), or None
    schema_version: Any = None
    # Compiled row readers, keyed by the columns-present bitmap (see rowcodec).
    readers: dict[Any, Any] = field(default_factory=dict)

    @property
    def named(self) -> bool:
        """The columns have their names: from the binlog or from a schema history."""
        return self.has_full_metadata or self.schema_version is not None

    @property
    def column_names(self) -> list[str]:
        return [c.name if c.name is not None else f"@{c.index + 1}" for c in self.columns]

    def describe(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "table_id": self.table_id,
            "db": self.db,
            "table": self.table,
            "table_flags": self.flags,
            "column_count": len(self.columns),
            "columns": [c.describe() for c in self.columns],
        }
        if self.primary_key is not None:
            d["primary_key"] = [self.column_names[i] for i in self.primary_key
                                if i < len(self.columns)]
        if self.primary_key_prefixes is not None:
            d["primary_key_prefixes"] = self.primary_key_prefixes
        return d


def _resolve_meta(col: Column) -> None:
    t = col.binlog_type
    m = col.meta
    if t == T.STRING and m == 0:
        col.type = T.STRING  # no metadata (pre-5.1.18): a CHAR of at most 255 bytes
        col.length = 255
    elif t == T.STRING:
        # field_string::save_field_metadata: byte0 = real type (with length bits folded into
        # 0x30 for CHARs longer than 255 bytes), byte1 = length low byte (field.cc / Bug#37426).
        b0, b1 = m & 0xFF, m >> 8
        if (b0 & 0x30) != 0x30:
            col.length = b1 | (((b0 & 0x30) ^ 0x30) << 4)
            col.type = b0 | 0x30
        else:
            col.type = b0
            col.length = b1
        if col.type not in (T.ENUM, T.SET, T.STRING):
            col.type = T.STRING
    elif t in (T.VARCHAR, T.VAR_STRING):
        col.length = m
    elif t == T.NEWDECIMAL:
        col.precision, col.scale = m & 0xFF, m >> 8
    elif t == T.BIT:
        col.length = (m >> 8) * 8 + (m & 0xFF)  # bytes*8 + bits%8
    elif t in (T.TIMESTAMP2, T.DATETIME2, T.TIME2):
        col.scale = m
    elif t in (T.ENUM, T.SET):
        col.length = m >> 8 or m & 0xFF
    elif t in (T.BLOB, T.GEOMETRY, T.JSON, T.VECTOR, T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB):
        col.length = m
