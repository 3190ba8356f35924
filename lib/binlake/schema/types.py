"""MySQL column types: from a sqlglot column definition to a :class:`SchemaColumn`, and from
a column to the type code a Table_map logs for it (``Field::binlog_type()``; MySQL
``sql/field.h``, MariaDB ``sql/field.h``), and the check of a Table_map against a version.

Type codes: TINYINT/BOOL TINY, SMALLINT SHORT, MEDIUMINT INT24, INT LONG, BIGINT LONGLONG,
FLOAT, DOUBLE, DECIMAL NEWDECIMAL, DATE DATE, DATETIME DATETIME2 / TIMESTAMP TIMESTAMP2 /
TIME TIME2 (the 5.6.4 / MariaDB 10.1.2 formats; older servers log DATETIME/TIMESTAMP/TIME),
YEAR, CHAR/BINARY/ENUM/SET STRING (254; the real type ENUM/SET is in the metadata),
VARCHAR/VARBINARY VARCHAR (15), every TEXT/BLOB BLOB (252), MySQL JSON JSON (245), MariaDB
JSON (a LONGTEXT alias) BLOB, BIT, every spatial type GEOMETRY, MySQL 9 VECTOR VECTOR."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..binlog.charsets import COLLATIONS, MYSQL_COLLATION_NAMES
from ..binlog.constants import ColumnType as T
from .model import SchemaColumn, Version

# sqlglot DType name -> MySQL base type
_BASE = {
    "TINYINT": "tinyint", "UTINYINT": "tinyint", "SMALLINT": "smallint",
    "USMALLINT": "smallint", "MEDIUMINT": "mediumint", "UMEDIUMINT": "mediumint",
    "INT": "int", "UINT": "int", "BIGINT": "bigint", "UBIGINT": "bigint",
    "BOOLEAN": "tinyint", "FLOAT": "float", "DOUBLE": "double", "UDOUBLE": "double",
    "DECIMAL": "decimal",
    "UDECIMAL": "decimal", "DATE": "date", "DATETIME": "datetime", "TIMESTAMP": "timestamp",
    "TIMESTAMPTZ": "timestamp", "TIME": "time", "YEAR": "year", "CHAR": "char",
    "NCHAR": "char", "VARCHAR": "varchar", "NVARCHAR": "varchar", "BINARY": "binary",
    "VARBINARY": "varbinary", "TINYTEXT": "tinytext", "TEXT": "text",
    "MEDIUMTEXT": "mediumtext", "LONGTEXT": "longtext", "TINYBLOB": "tinyblob",
    "BLOB": "blob", "MEDIUMBLOB": "mediumblob", "LONGBLOB": "longblob", "JSON": "json",
    "ENUM": "enum", "SET": "set", "BIT": "bit", "GEOMETRY": "geometry", "SERIAL": "bigint",
    "VECTOR": "vector", "UUID": "uuid",
}
INTEGERS = ("tinyint", "smallint", "mediumint", "int", "bigint")
TEMPORALS = ("datetime", "timestamp", "time")
SPATIAL = ("geometry", "point", "linestring", "polygon", "multipoint", "multilinestring",
           "multipolygon", "geometrycollection")
# the types that have a character set (a column of one without its own takes the table's)
TEXT_BASES = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum",
                        "set"})
# Type words sqlglot reads as another MySQL type (REAL is DOUBLE, LONG is MEDIUMTEXT, INT8
# is BIGINT in MySQL; sqlglot makes them FLOAT, BIGINT, TINYINT): a statement using one is
# not interpreted.
MISREAD_TYPE_WORDS = frozenset({"REAL", "LONG", "INT8"})


class Uninterpretable(ValueError):
    """A definition sqlglot parsed into something binlake cannot take faithfully."""


def column_from_def(cd: Any) -> tuple[SchemaColumn, bool]:
    """A sqlglot ColumnDef -> (column, declared PRIMARY KEY inline)."""
    from sqlglot import exp

    name = cd.this.name
    kind = cd.args.get("kind")
    if kind is None or not isinstance(kind, exp.DataType):
        raise Uninterpretable(f"column {name!r} has no type sqlglot understood")
    dtype = kind.this.name if hasattr(kind.this, "name") else str(kind.this)
    base = _BASE.get(dtype)
    if base is None:
        raise Uninterpretable(f"column {name!r}: type {kind.sql('mysql')!r} ({dtype}) unknown")
    rendered = kind.sql("mysql").upper()
    unsigned = dtype.startswith("U") or "UNSIGNED" in rendered
    params = kind.expressions
    nullable = True
    pk = False
    charset = collation = generated = default = None
    invisible = False
    for c in cd.constraints:
        k = c.args.get("kind")
        kn = type(k).__name__
        if kn == "NotNullColumnConstraint":
            nullable = bool(k.args.get("allow_null"))
        elif kn == "PrimaryKeyColumnConstraint":
            pk = True
            nullable = False
        elif kn == "AutoIncrementColumnConstraint":
            nullable = False  # the server makes an AUTO_INCREMENT column NOT NULL
        elif kn == "ZeroFillColumnConstraint":
            unsigned = True
        elif kn == "CharacterSetColumnConstraint":
            charset = k.this.name.lower()  # ASCII / UNICODE: sqlglot gives latin1 / ucs2
        elif kn == "CollateColumnConstraint":
            collation = k.this.name.lower()
        elif kn == "ComputedColumnConstraint":
            generated = "STORED" if k.args.get("persisted") else "VIRTUAL"
        elif kn == "InvisibleColumnConstraint":
            invisible = True
        elif kn == "DefaultColumnConstraint" and k.this is not None:
            default = k.this.sql("mysql")
    length = precision = scale = None
    members = None
    nums: list[int] = []
    if base in ("enum", "set"):
        members = tuple(p.this for p in params)
    else:
        for p in params:
            v = p.this if isinstance(p, exp.DataTypeParam) else p
            if not (isinstance(v, exp.Literal) and not v.is_string):
                raise Uninterpretable(f"column {name!r}: type parameter {p.sql('mysql')!r}")
            nums.append(int(v.this))
    if dtype == "SERIAL":
        unsigned, nullable = True, False
    if dtype in ("NCHAR", "NVARCHAR") and charset is None:
        charset = "utf8mb3"  # NATIONAL CHAR / NCHAR / NVARCHAR: the server's utf8 (utf8mb3)
    if charset is None and collation is not None:
        charset = charset_of_collation(collation)  # COLLATE latin1_bin: latin1
    if dtype == "BOOLEAN":
        nums = []
    if base in ("char", "binary", "bit"):
        length = nums[0] if nums else 1
    elif base in ("varchar", "varbinary"):
        if not nums:
            raise Uninterpretable(f"column {name!r}: {base} without a length")
        length = nums[0]
    elif base in ("text", "blob") and nums:
        length = nums[0]
    elif base == "decimal":
        precision = nums[0] if nums else 10
        scale = nums[1] if len(nums) > 1 else 0
    elif base in ("float", "double") and len(nums) == 2:
        precision, scale = nums
    elif base == "float" and len(nums) == 1:
        if nums[0] > 24:  # FLOAT(p), p 25..53: a DOUBLE
            base = "double"
    elif base in TEMPORALS:
        scale = nums[0] if nums else 0
    elif base == "vector":
        length = nums[0] if nums else None
    if base not in (*INTEGERS, "decimal", "float", "double"):
        unsigned = False  # "UNSIGNED" in an ENUM member is not a signedness
    return SchemaColumn(name=name, type=render_type(base, length, precision, scale, unsigned,
                                                    members),
                        base=base, nullable=nullable, length=length, precision=precision,
                        scale=scale, unsigned=unsigned, charset=charset, collation=collation,
                        members=members, generated=generated, invisible=invisible,
                        default=default), pk


_COLLATION_CHARSET: dict[str, str] | None = None


def _collation_charsets() -> dict[str, str]:
    global _COLLATION_CHARSET
    if _COLLATION_CHARSET is None:
        out = {name.lower(): cs for name, cs in COLLATIONS.values()}
        for cid, name in MYSQL_COLLATION_NAMES.items():
            if cid in COLLATIONS:
                out.setdefault(name.lower(), COLLATIONS[cid][1])
        _COLLATION_CHARSET = out
    return _COLLATION_CHARSET


def charset_of_collation(collation: str | None) -> str | None:
    """The character set of a collation name (``latin1_bin`` -> ``latin1``; MySQL 5.7's
    ``utf8_general_ci`` -> ``utf8mb3``), None when it cannot be told (MariaDB 11's
    character-set-less ``uca1400_ai_ci``, whose character set comes from the context)."""
    if not collation:
        return None
    name = collation.lower()
    known = _collation_charsets()
    if name in known:
        return known[name]
    if name.startswith("utf8_"):
        name = "utf8mb3_" + name[5:]
        if name in known:
            return known[name]
    # a collation the table does not list: its name begins with its character set's
    charsets = set(known.values())
    return max((cs for cs in charsets if name.startswith(cs + "_")), key=len, default=None)


def table_default(charset: str | None, collation: str | None,
                  base: tuple[str | None, str | None] = (None, None)
                  ) -> tuple[str | None, str | None]:
    """A default (character set, collation) from table or database options naming a
    ``charset`` and/or a ``collation``; ``base``: the default they change (a collation whose
    character set cannot be told keeps the base's character set)."""
    cs = charset.lower() if charset else None
    coll = collation.lower() if collation else None
    if cs is None and coll is None:
        return base
    if cs is None:
        cs = charset_of_collation(coll) or base[0]
    return cs, coll


def with_default(col: SchemaColumn, default: tuple[str | None, str | None] | None
                 ) -> SchemaColumn:
    """A text column whose definition names no character set takes the table's default
    (and its collation when the column names none); other columns are returned as given."""
    if col.base not in TEXT_BASES or col.charset is not None or default is None \
            or default[0] is None:
        return col
    return replace(col, charset=default[0],
                   collation=col.collation if col.collation is not None else default[1])


def render_type(base: str, length: int | None, precision: int | None, scale: int | None,
                unsigned: bool, members: tuple[str, ...] | None) -> str:
    if members is not None:
        inner = ",".join("'" + m.replace("'", "''") + "'" for m in members)
        t = f"{base}({inner})"
    elif base == "decimal" or (base in ("float", "double") and precision is not None):
        t = f"{base}({precision},{scale})"
    elif base in TEMPORALS:
        t = f"{base}({scale})" if scale else base
    elif length is not None:
        t = f"{base}({length})"
    else:
        t = base
    return t + " unsigned" if unsigned and base in (*INTEGERS, "decimal", "float",
                                                     "double") else t


def binlog_type(col: SchemaColumn, *, mariadb: bool,
                version: tuple[int, int, int] | None = None) -> int | None:
    """The type code a Table_map logs for the column (None: not known)."""
    b = col.base
    new_temporal = version is None or (version >= (10, 1, 2) if mariadb
                                       else version >= (5, 6, 4))
    simple = {"tinyint": T.TINY, "smallint": T.SHORT, "mediumint": T.INT24, "int": T.LONG,
              "bigint": T.LONGLONG, "float": T.FLOAT, "double": T.DOUBLE,
              "decimal": T.NEWDECIMAL, "date": T.DATE, "year": T.YEAR, "bit": T.BIT,
              "char": T.STRING, "binary": T.STRING, "enum": T.STRING, "set": T.STRING,
              "varchar": T.VARCHAR, "varbinary": T.VARCHAR, "vector": T.VECTOR}
    if b in simple:
        return int(simple[b])
    if b in ("tinytext", "text", "mediumtext", "longtext", "tinyblob", "blob", "mediumblob",
             "longblob"):
        return int(T.BLOB)
    if b == "json":
        return int(T.BLOB if mariadb else T.JSON)
    if b in SPATIAL:
        return int(T.GEOMETRY)
    if b in TEMPORALS:
        if new_temporal:
            return int({"datetime": T.DATETIME2, "timestamp": T.TIMESTAMP2,
                        "time": T.TIME2}[b])
        return int({"datetime": T.DATETIME, "timestamp": T.TIMESTAMP, "time": T.TIME}[b])
    if b == "uuid" and mariadb:
        return int(T.STRING)
    return None


def real_string_type(col: SchemaColumn) -> int | None:
    """For STRING-logged columns, the real type the metadata gives (ENUM/SET/STRING)."""
    if col.base == "enum":
        return int(T.ENUM)
    if col.base == "set":
        return int(T.SET)
    if col.base in ("char", "binary"):
        return int(T.STRING)
    return None


def check_table_map(tm: Any, version: Version | None, *, mariadb: bool,
                    server_version: tuple[int, int, int] | None = None
                    ) -> tuple[bool, str, Any, Any]:
    """(agrees, why, expected, found) for a binlake.binlog.columns.TableMap against the
    version in force at its position."""
    found_types = [c.binlog_type for c in tm.columns]
    if version is None or not version.exists:
        return False, "no version of the table in force", None, found_types
    if version.columns is None:
        return False, "the table's schema is unknown here (an earlier DDL was not " \
                      "interpreted)", None, found_types
    cols = version.columns
    if len(cols) != len(tm.columns):
        return (False, "column count differs", [c.name for c in cols],
                [c.name or f"@{c.index + 1}" for c in tm.columns])
    for sc, bc in zip(cols, tm.columns):
        want = binlog_type(sc, mariadb=mariadb, version=server_version)
        if want is None:
            return False, f"column {sc.name!r}: type {sc.type} has no known binlog type", \
                sc.type, bc.binlog_type
        if want != bc.binlog_type:
            return False, f"column {sc.name!r}: binlog type differs", \
                f"{sc.name} {sc.type} -> {T(want).name}", _code_name(bc.binlog_type)
        real = real_string_type(sc)
        if real is not None and bc.meta and real != bc.type:
            return False, f"column {sc.name!r}: real type differs", \
                f"{sc.name} {sc.type} -> {T(real).name}", _code_name(bc.type)
        want_bytes = byte_length(sc)
        if want_bytes is not None and bc.meta and bc.type in (T.VARCHAR, T.VAR_STRING,
                                                              T.STRING) \
                and bc.length != want_bytes:
            # VARCHAR/CHAR metadata is the length in bytes (characters x the charset's
            # longest character): an unlogged charset change shows here
            return False, f"column {sc.name!r}: length in bytes differs", \
                f"{sc.name} {sc.type} {sc.charset or 'binary'}: {want_bytes} bytes", \
                f"{bc.length} bytes"
        if bc.nullable != sc.nullable:  # the null bitmap is in every Table_map
            return False, f"column {sc.name!r}: nullability differs", \
                f"{sc.name} {'NULL' if sc.nullable else 'NOT NULL'}", \
                "NULL" if bc.nullable else "NOT NULL"
        if bc.name is not None and bc.name.lower() != sc.name.lower():
            return False, f"column {bc.index + 1}: name differs", sc.name, bc.name
        if (tm.has_full_metadata and sc.base in (*INTEGERS, "decimal", "float", "double")
                and bc.unsigned != sc.unsigned):
            return False, f"column {sc.name!r}: signedness differs", \
                sc.type, "unsigned" if bc.unsigned else "signed"
    return True, "agrees", None, None


def byte_length(sc: SchemaColumn) -> int | None:
    """The length in bytes a Table_map gives a CHAR / VARCHAR / BINARY / VARBINARY column
    (``Field_varstring`` / ``Field_string`` metadata: characters x the charset's longest
    character), or None when the history cannot tell (charset unknown)."""
    if sc.length is None:
        return None
    if sc.base in ("binary", "varbinary"):
        return sc.length
    if sc.base not in ("char", "varchar") or sc.charset is None:
        return None
    from ..binlog.charsets import max_bytes_per_char

    try:
        n = sc.length * max_bytes_per_char(sc.charset.lower())
    except ValueError:
        return None
    return n


def _code_name(code: int) -> str:
    try:
        return T(code).name
    except ValueError:
        return f"TYPE_{code}"
