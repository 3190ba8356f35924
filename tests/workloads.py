"""SQL workloads that exercise every column type and binlog edge binlake must decode.

Each section is a list of SQL statements run in order on one autocommit connection, plus the
tables whose final state is read back.  :func:`run_all_types` runs the sections on a
:class:`binlake_dev.mariadb.MariaDBServer`, counts the rows each row-logged statement changed, and
returns the server's final state of every table both as pymysql values and in binlake's JSON
value contract (see ``tests/reference.py``), ready to be compared with decoded rows.

Sections (all in database ``wl``):

``ALL_TYPES``
    ``wl.all_types``: every MariaDB 10.11 column type -- integers signed/unsigned at min/max/0,
    DECIMAL(65,30)/(10,2)/(5,0), FLOAT, DOUBLE, BIT(1)/(17)/(64), YEAR (incl. 0000), DATE (incl.
    0000-00-00), TIME(0..6) (incl. -838:59:59, -00:00:01.5), DATETIME(0..6) (incl. zero),
    TIMESTAMP(0..6) (incl. zero and 2038 max), CHAR/VARCHAR in utf8mb4 (emoji), latin1 (é, €),
    utf16, ucs2, utf32, BINARY(16) (trailing 0x00!), VARBINARY, TINY/-/MEDIUM/LONG BLOB and TEXT
    (a 65535-byte BLOB, a >64 KiB MEDIUMBLOB/MEDIUMTEXT, a 3 MiB LONGBLOB), ENUM of 3 and of 300
    members (2-byte), SET of 64 members, GEOMETRY, POINT, JSON, INET6, UUID, INET4; NULL in every
    nullable column; UPDATEs (value->NULL, NULL->value, multi-row, 3 MiB before+after image) and
    DELETEs; a two-statement transaction.
``WIDE``
    ``wl.wide``: 260 columns (column count > 250 is a 3-byte packed integer; 33-byte bitmaps).
``ROW_IMAGES``
    ``wl.images``: UPDATE/INSERT/DELETE under ``binlog_row_image=MINIMAL`` and ``NOBLOB``.
``MANY``
    ``wl.many``: 3000-row INSERT ... SELECT, UPDATE and DELETE: statements spanning many rows
    events (binlog_row_event_max_size is 8 KiB).
``COMPRESSED``
    ``SET GLOBAL log_bin_compress=ON`` (dynamic in 10.11; events shorter than
    log_bin_compress_min_len=256 stay uncompressed): a long DDL and a long statement-format
    INSERT (QUERY_COMPRESSED), multi-row INSERT/UPDATE/DELETE of rows > 256 bytes
    (WRITE/UPDATE/DELETE_ROWS_COMPRESSED, one statement over two compressed events).  Note:
    MariaDB decides per rows event from the size of the event's first row, so small rows are
    never compressed even with the option on.
``STATEMENT``
    ``SET SESSION binlog_format=STATEMENT``: AUTO_INCREMENT insert and LAST_INSERT_ID() (Intvar),
    RAND() (Rand), user variables of string/int/decimal/NULL type (User_var).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .reference import ColumnDef, load_schema, server_text_to_contract

DB = "wl"

ENUM3 = ("small", "medium", "large")
ENUM300 = tuple(f"v{i:03d}" for i in range(300))
SET64 = tuple(f"f{i:02d}" for i in range(64))


def _q(members: tuple[str, ...]) -> str:
    return ",".join(f"'{m}'" for m in members)


TIME_COLS = [f"t{n}" for n in range(7)]
DATETIME_COLS = [f"dt{n}" for n in range(7)]
TIMESTAMP_COLS = [f"ts{n}" for n in range(7)]

ALL_TYPES_DDL = f"""CREATE TABLE {DB}.all_types (
  id INT NOT NULL PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
  mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,
  d65 DECIMAL(65,30), d10 DECIMAL(10,2), d5 DECIMAL(5,0), du DECIMAL(12,4) UNSIGNED,
  f FLOAT, dbl DOUBLE,
  bit1 BIT(1), bit17 BIT(17), bit64 BIT(64),
  y YEAR, d DATE,
  {", ".join(f"t{n} TIME({n})" for n in range(7))},
  {", ".join(f"dt{n} DATETIME({n})" for n in range(7))},
  {", ".join(f"ts{n} TIMESTAMP({n}) NULL" for n in range(7))},
  c_utf8 CHAR(20) CHARACTER SET utf8mb4, v_utf8 VARCHAR(200) CHARACTER SET utf8mb4,
  c_latin1 CHAR(20) CHARACTER SET latin1, v_latin1 VARCHAR(200) CHARACTER SET latin1,
  v_utf16 VARCHAR(50) CHARACTER SET utf16, v_ucs2 VARCHAR(50) CHARACTER SET ucs2,
  v_utf32 VARCHAR(20) CHARACTER SET utf32,
  c_bin BINARY(16), v_bin VARBINARY(300),
  tb TINYBLOB, bl BLOB, mb MEDIUMBLOB, lb LONGBLOB,
  tt TINYTEXT, tx TEXT, mt MEDIUMTEXT, lt LONGTEXT,
  e3 ENUM({_q(ENUM3)}), e300 ENUM({_q(ENUM300)}), s64 SET({_q(SET64)}),
  g GEOMETRY, pt POINT, j JSON,
  ip6 INET6, uu UUID, ip4 INET4
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"""


def _row(id_: int, **vals: str) -> str:
    """INSERT for wl.all_types; values are SQL expressions."""
    cols = ["id", *vals]
    return (
        f"INSERT INTO {DB}.all_types ({', '.join(cols)}) VALUES ({id_}, {', '.join(vals.values())})"
    )


_D65_MAX = "9" * 35 + "." + "9" * 30

ROW_MIN = _row(
    1,
    ti="-128", tiu="0", si="-32768", siu="0", mi="-8388608", miu="0", i="-2147483648", iu="0",
    bi="-9223372036854775808", biu="0",
    d65=f"'-{_D65_MAX}'", d10="'-99999999.99'", d5="-99999", du="0",
    f="-3.40282e38", dbl="-1.7976931348623157e308",
    bit1="b'0'", bit17="b'0'", bit64="0",
    y="1901", d="'1000-01-01'",
    **{c: "'-838:59:59'" for c in TIME_COLS},
    **{f"dt{n}": "'1000-01-01 00:00:00" + ("." + "0" * n if n else "") + "'" for n in range(7)},
    **{f"ts{n}": "'1970-01-01 00:00:01" + ("." + "0" * n if n else "") + "'" for n in range(7)},
    c_utf8="''", v_utf8="''", c_latin1="''", v_latin1="''", v_utf16="''", v_ucs2="''",
    v_utf32="''", c_bin="X''", v_bin="X''", tb="X''", bl="X''", mb="X''", lb="X''",
    tt="''", tx="''", mt="''", lt="''",
    e3="'small'", e300="'v000'", s64="''",
    g="ST_GeomFromText('POINT(0 0)')", pt="POINT(-180, -90)", j="'[]'",
    ip6="'::'", uu="'00000000-0000-0000-0000-000000000000'", ip4="'0.0.0.0'",
)  # fmt: skip

ROW_MAX = _row(
    2,
    ti="127", tiu="255", si="32767", siu="65535", mi="8388607", miu="16777215",
    i="2147483647", iu="4294967295", bi="9223372036854775807", biu="18446744073709551615",
    d65=f"'{_D65_MAX}'", d10="'99999999.99'", d5="99999", du="'99999999.9999'",
    f="3.40282e38", dbl="1.7976931348623157e308",
    bit1="b'1'", bit17="b'11111111111111111'", bit64="18446744073709551615",
    y="2155", d="'9999-12-31'",
    **{f"t{n}": "'838:59:59" + ("." + "9" * n if n else "") + "'" for n in range(7)},
    **{f"dt{n}": "'9999-12-31 23:59:59" + ("." + "9" * n if n else "") + "'" for n in range(7)},
    **{f"ts{n}": "'2038-01-19 03:14:07" + ("." + "9" * n if n else "") + "'" for n in range(7)},
    c_utf8="REPEAT('😀', 20)", v_utf8="REPEAT('ü', 200)", c_latin1="REPEAT('é', 20)",
    v_latin1="REPEAT('ÿ', 200)", v_utf16="REPEAT('😀', 50)", v_ucs2="REPEAT('Ω', 50)",
    v_utf32="REPEAT('😀', 20)", c_bin="UNHEX(REPEAT('FF', 16))", v_bin="UNHEX(REPEAT('FE', 300))",
    tb="UNHEX(REPEAT('AB', 255))", bl="REPEAT(UNHEX('00FF0A275C'), 13107)",
    mb="REPEAT(UNHEX('0102030405'), 20000)", lb="REPEAT('L', 70000)",
    tt="REPEAT('t', 255)", tx="REPEAT('x', 65535)", mt="REPEAT('é', 40000)",
    lt="REPEAT('😀', 20000)",
    e3="'large'", e300="'v299'", s64=f"'{','.join(SET64)}'",
    g="ST_GeomFromText('POLYGON((0 0,10 0,10 10,0 10,0 0))')", pt="POINT(180, 90)",
    j="'{\"k\": [1, 2.5, \"x\", null, true, {\"n\": {}}]}'",
    ip6="'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'",
    uu="'ffffffff-ffff-ffff-ffff-ffffffffffff'", ip4="'255.255.255.255'",
)  # fmt: skip

ROW_ZERO = _row(
    3,
    ti="0", tiu="0", si="0", siu="0", mi="0", miu="0", i="0", iu="0", bi="0", biu="0",
    d65="0", d10="0", d5="0", du="0", f="0", dbl="0",
    bit1="0", bit17="0", bit64="0",
    y="0", d="'0000-00-00'",
    **{c: "'00:00:00'" for c in TIME_COLS},
    **{c: "'0000-00-00 00:00:00'" for c in DATETIME_COLS},
    **{c: "'0000-00-00 00:00:00'" for c in TIMESTAMP_COLS},
    c_utf8="'0'", v_utf8="'0'", c_latin1="'0'", v_latin1="'0'", v_utf16="'0'", v_ucs2="'0'",
    v_utf32="'0'", c_bin="X'00'", v_bin="X'00'", tb="X'00'", bl="X'00'", mb="X'00'",
    lb="X'00'", tt="'0'", tx="'0'", mt="'0'", lt="'0'",
    e3="''", e300="''", s64="''",  # '' is the ENUM error value, index 0 (non-strict mode)
    g="ST_GeomFromText('POINT(0 0)')", pt="POINT(0, 0)", j="'0'",
    ip6="'::'", uu="'00000000-0000-0000-0000-000000000000'", ip4="'0.0.0.0'",
)  # fmt: skip

ROW_TYPICAL = _row(
    4,
    ti="-1", tiu="1", si="-2", siu="2", mi="-3", miu="3", i="-4", iu="4", bi="-5", biu="5",
    d65="'-0.000000000000000000000000000001'", d10="'123.45'", d5="'-1'", du="'0.0001'",
    f="3.14159274", dbl="0.1",
    bit1="b'1'", bit17="b'10000000000000001'", bit64="0x8000000000000001",
    y="2024", d="'2024-02-29'",
    t0="'-00:00:01'", t1="'-00:00:01.5'", t2="'12:34:56.78'", t3="'-00:00:00.001'",
    t4="'100:00:00.0001'", t5="'-1:02:03.04005'", t6="'-00:00:01.500000'",
    **{f"dt{n}": "'2024-02-29 12:34:56.123456'" for n in range(7)},
    **{f"ts{n}": "'2024-02-29 12:34:56.654321'" for n in range(7)},
    c_utf8="'héllo 😀'", v_utf8="'quote '' dq \" backslash \\\\ tab \\t nl \\n cr \\r nul \\0 end'",
    c_latin1="'café'", v_latin1="'€ Š Ž œ Ÿ ¡ ÿ'", v_utf16="'é😀 utf16'", v_ucs2="'éΩ ucs2'",
    v_utf32="'a😀'", c_bin="X'00112233445566778899AABBCCDDEE00'",
    v_bin="X'00FF0A275C00'", tb="X'0001FF'", bl="REPEAT('b', 65535)",
    mb="REPEAT(UNHEX('00FF0A275C41'), 20000)", lb="REPEAT('z', 100)",
    tt="'tiny'", tx="'text with\\nnewline and \\\\x41'", mt="REPEAT('é', 40000)",
    lt="'{\"json\": \"in longtext\"}'",
    e3="'medium'", e300="'v255'", s64="'f00,f07,f08,f31,f32,f63'",
    g="ST_GeomFromText('LINESTRING(0 0,1 1,2 5)')", pt="POINT(1.5, -2.25)",
    j="'{\"a\": \"é\", \"b\": [1, {\"c\": null}]}'",
    ip6="'2001:db8::ff00:42:8329'", uu="'6ccd780c-baba-1026-9564-5b8c656024db'",
    ip4="'192.168.1.0'",
)  # fmt: skip

ROW_NULLS = f"INSERT INTO {DB}.all_types (id) VALUES (5)"

# 3 MiB LONGBLOB of control bytes, quote, backslash: the binlog text is ~10 MB in mariadb-binlog
ROW_HUGE = _row(6, lb="REPEAT(UNHEX('00FF0A275C41'), 524288)", v_utf8="'literal \\\\x0a text'")

ALL_TYPES: list[str] = [
    f"CREATE DATABASE IF NOT EXISTS {DB}",
    # non-strict: zero dates, the ENUM '' error value, zero TIMESTAMP
    "SET SESSION sql_mode='NO_ENGINE_SUBSTITUTION'",
    "SET SESSION time_zone='+00:00'",
    ALL_TYPES_DDL,
    ROW_MIN,
    ROW_MAX,
    ROW_ZERO,
    ROW_TYPICAL,
    ROW_NULLS,
    ROW_HUGE,
    # updates: value -> value, value -> NULL (all nullable columns), NULL -> value, multi-row
    f"UPDATE {DB}.all_types SET v_utf8 = 'updated ✓', d10 = d10 / 2, bit64 = 0x0102030405060708, "
    "s64 = 'f01,f62', e300 = 'v128', ts3 = '2001-02-03 04:05:06.789', t6 = '-12:34:56.000001' "
    "WHERE id = 4",
    # copies of the min and zero rows (INSERT ... SELECT), which get deleted / nulled below
    "INSERT INTO {db}.all_types (id, {cols}) SELECT id + 7, {cols} FROM {db}.all_types "
    "WHERE id IN (1, 3)",
    "UPDATE {db}.all_types SET {sets} WHERE id = 10",  # every nullable column to NULL
    f"UPDATE {DB}.all_types SET ti = 5, v_utf8 = 'from null', lb = X'00', y = 1999, "
    "d = '2000-01-01' WHERE id = 5",
    f"UPDATE {DB}.all_types SET tt = 'multi' WHERE id IN (1, 2)",
    # 3 MiB before image + 3 MiB after image in one event
    f"UPDATE {DB}.all_types SET lb = CONCAT(lb, 'tail') WHERE id = 6",
    f"DELETE FROM {DB}.all_types WHERE id IN (8, 10)",
    # a two-statement transaction
    "BEGIN",
    _row(7, ti="7", v_utf8="'in a transaction'"),
    f"UPDATE {DB}.all_types SET ti = 8 WHERE id = 7",
    "COMMIT",
]

_NULLABLE = [
    "ti", "tiu", "si", "siu", "mi", "miu", "i", "iu", "bi", "biu", "d65", "d10", "d5", "du",
    "f", "dbl", "bit1", "bit17", "bit64", "y", "d", *TIME_COLS, *DATETIME_COLS, *TIMESTAMP_COLS,
    "c_utf8", "v_utf8", "c_latin1", "v_latin1", "v_utf16", "v_ucs2", "v_utf32", "c_bin", "v_bin",
    "tb", "bl", "mb", "lb", "tt", "tx", "mt", "lt", "e3", "e300", "s64", "g", "pt", "j",
    "ip6", "uu", "ip4",
]  # fmt: skip
ALL_TYPES = [
    sql.format(db=DB, cols=", ".join(_NULLABLE), sets=", ".join(f"{c} = NULL" for c in _NULLABLE))
    if "{db}" in sql
    else sql
    for sql in ALL_TYPES
]

# -- 260 columns -------------------------------------------------------------------------------

_WIDE_TYPES = ("INT", "VARCHAR(10)", "DECIMAL(8,2)", "DATE")


def _wide_value(n: int, seed: int) -> str:
    t = _WIDE_TYPES[n % 4]
    if t == "INT":
        return str(n * seed - 1000)
    if t.startswith("VARCHAR"):
        return f"'c{n}s{seed}'"
    if t.startswith("DECIMAL"):
        return f"'{n}.{seed:02d}'"
    return f"'2000-01-{(n + seed) % 28 + 1:02d}'"


WIDE_COLS = [f"c{n:03d}" for n in range(1, 260)]
WIDE: list[str] = [
    f"CREATE DATABASE IF NOT EXISTS {DB}",
    f"CREATE TABLE {DB}.wide (id INT NOT NULL PRIMARY KEY, "
    + ", ".join(f"c{n:03d} {_WIDE_TYPES[n % 4]}" for n in range(1, 260))
    + ") DEFAULT CHARSET=utf8mb4",
    f"INSERT INTO {DB}.wide VALUES (1, "
    + ", ".join(_wide_value(n, 1) for n in range(1, 260))
    + ")",
    f"INSERT INTO {DB}.wide VALUES (2, "
    + ", ".join(_wide_value(n, 2) for n in range(1, 260))
    + ")",
    f"INSERT INTO {DB}.wide (id, c259) VALUES (3, 259)",  # 258 NULLs
    f"UPDATE {DB}.wide SET c250 = 'changed', c001 = NULL WHERE id = 1",
    f"DELETE FROM {DB}.wide WHERE id = 2",
]

# -- MINIMAL / NOBLOB row images -----------------------------------------------------------------

ROW_IMAGES: list[str] = [
    f"CREATE DATABASE IF NOT EXISTS {DB}",
    f"CREATE TABLE {DB}.images (id INT NOT NULL PRIMARY KEY, a INT, b VARCHAR(20), "
    "bl BLOB, tx TEXT, n INT) DEFAULT CHARSET=utf8mb4",
    f"INSERT INTO {DB}.images VALUES (1, 10, 'one', X'01', 'text1', NULL), "
    "(2, 20, 'two', X'02', 'text2', NULL), (3, 30, 'three', X'03', 'text3', 3)",
    "SET SESSION binlog_row_image = 'MINIMAL'",
    f"UPDATE {DB}.images SET a = a + 1 WHERE id = 1",  # before: PK only; after: changed cols
    f"INSERT INTO {DB}.images (id, a) VALUES (4, 40)",  # only the columns given
    f"DELETE FROM {DB}.images WHERE id = 2",  # before: PK only
    f"UPDATE {DB}.images SET bl = X'3333', n = NULL WHERE id = 3",
    "SET SESSION binlog_row_image = 'NOBLOB'",
    f"UPDATE {DB}.images SET a = a + 1 WHERE id = 1",  # no BLOB/TEXT columns in either image
    f"UPDATE {DB}.images SET tx = 'text3 new' WHERE id = 3",  # a changed TEXT is logged
    f"INSERT INTO {DB}.images (id, a, b) VALUES (5, 50, 'five')",
    f"DELETE FROM {DB}.images WHERE id = 4",
    "SET SESSION binlog_row_image = 'FULL'",
]

# -- statements spanning many rows events --------------------------------------------------------

MANY: list[str] = [
    f"CREATE DATABASE IF NOT EXISTS {DB}",
    f"CREATE TABLE {DB}.many (id INT NOT NULL PRIMARY KEY, v VARCHAR(40), n INT) "
    "DEFAULT CHARSET=utf8mb4",
    f"INSERT INTO {DB}.many SELECT seq, CONCAT('row ', seq), NULL FROM {DB}.seq_1_to_3000",
    f"UPDATE {DB}.many SET n = id * 2 WHERE id <= 2000",
    f"DELETE FROM {DB}.many WHERE id > 1000",
]

# -- compressed events ---------------------------------------------------------------------------

COMPRESSED: list[str] = [
    f"CREATE DATABASE IF NOT EXISTS {DB}",
    "SET GLOBAL log_bin_compress = ON",
    # > 256 bytes: logged as QUERY_COMPRESSED
    f"CREATE TABLE {DB}.compressed (id INT NOT NULL PRIMARY KEY, t TEXT, b BLOB, n INT) "
    "DEFAULT CHARSET=utf8mb4 COMMENT '" + "compressed query event " * 12 + "'",
    # 30 rows of ~600 bytes: two WRITE_ROWS_COMPRESSED events for one statement
    f"INSERT INTO {DB}.compressed SELECT seq, REPEAT(CONCAT('row', seq, ' é '), 60), "
    f"REPEAT(UNHEX('00FF0A275C'), 20), NULL FROM {DB}.seq_1_to_30",
    f"UPDATE {DB}.compressed SET n = id, t = CONCAT(t, '!') WHERE id <= 5",
    f"DELETE FROM {DB}.compressed WHERE id > 25",
    # small rows: not compressed even with the option on
    f"INSERT INTO {DB}.compressed (id, n) VALUES (100, 1)",
    # a long statement-format DML: QUERY_COMPRESSED
    "SET SESSION binlog_format = 'STATEMENT'",
    f"INSERT INTO {DB}.compressed (id, t) VALUES (101, '" + "statement text " * 30 + "')",
    "SET SESSION binlog_format = 'ROW'",
    "SET GLOBAL log_bin_compress = OFF",
]
COMPRESSED_CLEANUP = ["SET GLOBAL log_bin_compress = OFF"]

# -- statement format: Intvar / Rand / User_var ------------------------------------------------

STATEMENT: list[str] = [
    f"CREATE DATABASE IF NOT EXISTS {DB}",
    f"CREATE TABLE {DB}.stmt (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, r DOUBLE, "
    "u VARCHAR(20), n INT, dv DECIMAL(10,3), x VARCHAR(10)) DEFAULT CHARSET=utf8mb4",
    "SET SESSION binlog_format = 'STATEMENT'",
    "SET @uv = 'hello', @n = 42, @dv = 1.5, @nv = NULL",
    f"INSERT INTO {DB}.stmt (r, u) VALUES (RAND(), @uv)",  # Intvar INSERT_ID, Rand, User_var
    f"INSERT INTO {DB}.stmt (n) VALUES (LAST_INSERT_ID())",  # Intvar LAST_INSERT_ID + INSERT_ID
    f"UPDATE {DB}.stmt SET n = @n, dv = @dv, x = @nv WHERE id = 1",  # int, decimal, NULL vars
    "SET SESSION binlog_format = 'ROW'",
]

SECTIONS: dict[str, list[str]] = {
    "all_types": ALL_TYPES,
    "wide": WIDE,
    "images": ROW_IMAGES,
    "many": MANY,
    "compressed": COMPRESSED,
    "statement": STATEMENT,
}
CLEANUP: dict[str, list[str]] = {"compressed": COMPRESSED_CLEANUP}

# tables read back, and the SELECT that reads each
TABLES = ("all_types", "wide", "images", "many", "compressed", "stmt")
SELECTS: dict[str, str] = {t: f"SELECT * FROM {DB}.{t} ORDER BY id" for t in TABLES}
# tables whose changes are row-logged with full images (the decoded rows replay to the state)
FULL_IMAGE_TABLES = ("all_types", "wide", "many", "compressed")
# ... except these rows, written by statement-format DML (no rows event)
STATEMENT_LOGGED_IDS: dict[str, set[int]] = {"compressed": {101}}

_DML = re.compile(r"^\s*(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+`?(\w+)`?\.`?(\w+)`?", re.I)
_FORMAT = re.compile(r"binlog_format\s*=\s*'?(\w+)'?", re.I)


@dataclass
class WorkloadResult:
    """What :func:`run_all_types` returns (also available as a dict via ``as_dict``)."""

    tables: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)  # pymysql values
    contract: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # contract values
    columns: dict[str, list[ColumnDef]] = field(default_factory=dict)
    # rows changed by row-logged statements: {"wl.t": {"insert": n, "update": n, "delete": n}}
    changes: dict[str, dict[str, int]] = field(default_factory=dict)
    # rows changed by statement-logged DML (not in rows events)
    statement_changes: dict[str, dict[str, int]] = field(default_factory=dict)
    statements: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "tables": self.tables,
            "contract": self.contract,
            "columns": self.columns,
            "changes": self.changes,
            "statement_changes": self.statement_changes,
            "statements": self.statements,
        }

    @property
    def schema(self) -> dict[tuple[str, str], list[ColumnDef]]:
        """For ``mariadb_binlog_rows(schema=...)``."""
        return {(DB, t.split(".", 1)[1]): cols for t, cols in self.columns.items()}


def run_statements(conn: Any, statements: list[str], result: WorkloadResult) -> None:
    """Run statements on ``conn``; count changed rows per table (row vs statement format)."""
    fmt = "ROW"
    with conn.cursor() as cur:
        for sql in statements:
            cur.execute(sql)
            result.statements.append(sql)
            m = _FORMAT.search(sql) if sql.upper().startswith("SET") else None
            if m:
                fmt = m.group(1).upper()
            m = _DML.match(sql)
            if m:
                op = m.group(1).split()[0].lower()
                table = f"{m.group(2)}.{m.group(3)}"
                target = result.changes if fmt == "ROW" else result.statement_changes
                counts = target.setdefault(table, {"insert": 0, "update": 0, "delete": 0})
                counts[op] += max(cur.rowcount, 0)


def read_state(server: Any, result: WorkloadResult, tables: tuple[str, ...] = TABLES) -> None:
    """Final ``SELECT *`` of each table: pymysql values and contract values."""
    schema = {}
    with server.connect() as conn:
        schema = load_schema(conn, [DB])
        with conn.cursor() as cur:
            for t in tables:
                if (DB, t) not in schema:
                    continue
                cur.execute(SELECTS[t])
                result.tables[f"{DB}.{t}"] = list(cur.fetchall())
                result.columns[f"{DB}.{t}"] = schema[(DB, t)]
    # the server's text for each value (no client-side conversion), then contract form
    with server.connect(conv={}) as conn, conn.cursor() as cur:
        for t in tables:
            if (DB, t) not in schema:
                continue
            cols = schema[(DB, t)]
            cur.execute(SELECTS[t])
            result.contract[f"{DB}.{t}"] = [
                {c.name or "": server_text_to_contract(v, c) for c, v in zip(cols, row)}
                for row in cur.fetchall()
            ]


def run_all_types(server: Any, sections: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Run the workload sections (all by default) and return the server's final state.

    Returns ``WorkloadResult.as_dict()``: ``tables`` (``SELECT *`` as pymysql values),
    ``contract`` (the same rows as ``{column: contract value}``), ``columns``
    (``[ColumnDef]`` per table), ``changes`` (rows changed by row-logged statements per table and
    operation), ``statement_changes``, ``statements``; plus ``schema`` for the reference parser.
    """
    result = WorkloadResult()
    names = sections or tuple(SECTIONS)
    with server.connect(max_allowed_packet=64 * 1024 * 1024) as conn:
        for name in names:
            try:
                run_statements(conn, SECTIONS[name], result)
            finally:
                for sql in CLEANUP.get(name, []):
                    with conn.cursor() as cur:
                        cur.execute(sql)
    read_state(server, result)
    out = result.as_dict()
    out["schema"] = result.schema
    return out
