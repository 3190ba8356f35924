"""The reference decoder: run ``mariadb-binlog`` and parse the rows it prints.

``mariadb_binlog_rows(path)`` runs::

    mariadb-binlog --no-defaults -vv --base64-output=decode-rows --print-table-metadata PATH

and turns its pseudo-SQL (``### INSERT INTO `db`.`t` / ### SET / ###   @1=... /* TYPE meta=...
nullable=... is_null=... */``) into :class:`RefRow` objects whose values follow binlake's JSON
value contract, so a binlake row and a reference row compare with ``==``.

Value contract (per column type) and how mariadb-binlog 10.11 prints each one -- the raw form is
quoted in each normalisation function below:

=================  ================================  ==========================================
type               mariadb-binlog prints             contract value
=================  ================================  ==========================================
TINY..BIGINT       ``-1 (255)`` signed (unsigned)    ``int`` with the column's signedness
DECIMAL            ``-12345678.90``                  ``str``, exactly as printed
FLOAT              ``1.5                  `` (%-20g) ``float`` -- only 6 significant digits!
DOUBLE             ``0.10000000000000000555`` %.20g  ``float`` (exact: 20 digits round-trip)
BIT(n)             ``b'101'``                        ``int``
YEAR               ``2024``; 0000 prints ``1900``     ``int``; 1900 -> 0
DATE               ``'2024:01:02'``                  ``"2024-01-02"``
TIME(n)            ``'-838:59:59'``, ``'12:34:56.7'``  ``str`` as printed, n fractional digits
DATETIME(n)        ``'2024-01-02 03:04:05.678'``     ``str`` as printed, n fractional digits
TIMESTAMP(n)       ``981173106.007`` epoch seconds   ``"YYYY-MM-DD HH:MM:SS[.f]"`` in UTC; 0 -> zero
CHAR/VARCHAR/TEXT  ``'é\\x0a'`` raw bytes, <0x20 hex  ``str`` decoded with the column charset
BINARY/BLOB/GEOM   same quoting                      ``{"hex": "..."}`` lowercase; BINARY(n)
                                                     right-padded with 0x00 to n bytes
ENUM               ``2`` (1-based index)             member ``str`` (index in ``alt``)
SET                ``b'00000101'`` stored bytes, LE  ``"x,z"`` members (bitmap int in ``alt``)
INET6/UUID/INET4   ``STRING(16)``: binary bytes      ``{"hex": ...}`` of the 16/16/4 stored bytes
JSON (MariaDB)     LONGTEXT utf8mb4_bin              ``str``
NULL               ``NULL``                          ``None``
=================  ================================  ==========================================

Lossy or surprising output of mariadb-binlog 10.11 (each handled or flagged below):

* FLOAT is printed with ``%g`` (6 significant digits): 3.14159274 prints ``3.14159``.
* A quote or backslash inside a string is not escaped, only bytes < 0x20 are (``\\xNN``), so
  data containing the four characters ``\\x0a`` prints exactly like an escaped newline.
* BINARY(n) values lose their trailing 0x00 bytes in the binlog itself (INET4 '1.2.3.0' is
  logged as 3 bytes); the server pads them back -- so does this parser, from the metadata.
* YEAR 0000 prints as ``1900`` (it prints stored byte + 1900).
* SET prints its 1..8 stored bytes in storage (little-endian) order, each byte MSB first.
* ``--print-table-metadata`` misreads SIGNEDNESS after a YEAR column (see
  :func:`mariadb_signedness_fix`).
* Annotate_rows: ``#Q>`` lines drop empty lines and ``\\r``; the statement is rejoined with
  ``\\n``.  TIMESTAMP is printed as epoch seconds, DATE with colons, ENUM as its index.

Where the printed text cannot be read back exactly, :attr:`RefRow.lossy` says so per column, and
:attr:`RefRow.raw_before` / :attr:`RefRow.raw_after` keep the exact printed bytes so a comparer can
render binlake's value the way mariadb-binlog does (:func:`render_quoted`) and compare forwards.

Positions: mariadb-binlog prints the row images of a statement's rows events only at the
statement's last (STMT_END_F) event, after the headers of all its events, so the text alone cannot
say which of several rows events a row came from.  When a statement spans several rows events,
this module parses a temporary copy of the binlog in which each of those events has the
STMT_END_F flag set (2 bytes at event offset 19+6; CRC not recomputed -- mariadb-binlog does not
verify it unless asked), which makes mariadb-binlog print each event's rows right after it.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import shutil
import struct
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MARIADB_BINLOG = os.environ.get("BINLAKE_MARIADB_BINLOG", "mariadb-binlog")

STMT_END_F = 0x0001

__all__ = [
    "ColumnDef",
    "RefEvent",
    "RefRow",
    "decode_quoted",
    "encode_charset",
    "load_schema",
    "mariadb_binlog_events",
    "mariadb_binlog_rows",
    "render_quoted",
    "server_text_to_contract",
]


# --------------------------------------------------------------------------------------------
# Column definitions (from mariadb-binlog --print-table-metadata, or from information_schema)


@dataclass(frozen=True)
class ColumnDef:
    """What the reference needs to know about a column to normalise its values.

    ``sql_type``: upper-case base type as in DDL (``INT``, ``VARCHAR``, ``BINARY``, ``ENUM``,
    ``INET6``, ...).  ``charset``: ``"binary"`` for binary strings, the character set name for
    text, None for non-strings.  ``length``: declared length of CHAR/BINARY (chars / bytes).
    ``unsigned``: None when unknown (then integers are read signed and flagged lossy).
    """

    name: str | None
    sql_type: str
    unsigned: bool | None = False
    charset: str | None = None
    length: int | None = None
    members: tuple[str, ...] = ()
    nullable: bool = True


INT_TYPES = {"TINYINT", "SMALLINT", "MEDIUMINT", "INT", "INTEGER", "BIGINT"}
# numeric columns whose signedness mariadb-binlog reads from the SIGNEDNESS metadata
_CLIENT_NUMERIC = INT_TYPES | {"DECIMAL", "FLOAT", "DOUBLE"}
_STRING_TYPES = {
    "CHAR", "VARCHAR", "TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT", "JSON",
    "BINARY", "VARBINARY", "TINYBLOB", "BLOB", "MEDIUMBLOB", "LONGBLOB",
}  # fmt: skip
_BINARY_TYPES = {"BINARY", "VARBINARY", "TINYBLOB", "BLOB", "MEDIUMBLOB", "LONGBLOB"}
_GEOMETRY_TYPES = {
    "GEOMETRY", "POINT", "LINESTRING", "POLYGON", "MULTIPOINT", "MULTILINESTRING",
    "MULTIPOLYGON", "GEOMETRYCOLLECTION",
}  # fmt: skip
# MariaDB data-type plugins: logged as BINARY(n) with the stored bytes
_FIXED_BINARY_PLUGIN = {"INET6": 16, "UUID": 16, "INET4": 4}


def _split_type(text: str) -> tuple[str, str | None, str]:
    """``"ENUM('a','b)') CHARSET x"`` -> ``("ENUM", "'a','b)'", " CHARSET x")``; quote-aware."""
    m = re.match(r"\s*([A-Za-z0-9_]+)", text)
    if not m:
        return text.strip().upper(), None, ""
    base = m.group(1).upper()
    i = m.end()
    if i >= len(text) or text[i] != "(":
        return base, None, text[i:]
    depth, j, quote = 0, i, False
    while j < len(text):
        ch = text[j]
        if quote:
            if ch == "\\":
                j += 2
                continue
            if ch == "'":
                if j + 1 < len(text) and text[j + 1] == "'":
                    j += 2
                    continue
                quote = False
        elif ch == "'":
            quote = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return base, text[i + 1 : j], text[j + 1 :]
        j += 1
    return base, text[i + 1 :], ""


def _parse_members(args: str) -> tuple[str, ...]:
    """ENUM/SET member list: ``'it\\'s','a,b'`` (mariadb-binlog) or ``'it''s','a,b'`` (DDL)."""
    out = []
    for m in re.finditer(r"'((?:[^'\\]|\\.|'')*)'", args, re.S):
        s = m.group(1)
        s = re.sub(r"\\(.)", r"\1", s, flags=re.S).replace("''", "'")
        out.append(s)
    return tuple(out)


def column_def_from_type(name: str | None, type_text: str) -> ColumnDef:
    """A ColumnDef from a type as mariadb-binlog's ``# Columns(...)`` block prints it."""
    base, args, rest = _split_type(type_text)
    rest_u = rest.upper()
    unsigned = " UNSIGNED" in rest_u
    nullable = "NOT NULL" not in rest_u
    m = re.search(r"CHARSET (\w+)", rest, re.I)
    charset: str | None = m.group(1).lower() if m else None
    length = None
    members: tuple[str, ...] = ()
    if base in ("ENUM", "SET"):
        members = _parse_members(args or "")
    elif args and re.fullmatch(r"\d+", args.strip()):
        length = int(args)
    if base in _BINARY_TYPES or base in _GEOMETRY_TYPES:
        charset = "binary"
    return ColumnDef(name, base, unsigned, charset, length, members, nullable)


def column_def_from_information_schema(
    name: str, data_type: str, column_type: str, charset: str | None, nullable: str
) -> ColumnDef:
    base = data_type.upper()
    _, args, _ = _split_type(column_type)
    unsigned = "unsigned" in column_type.lower()
    length = None
    members: tuple[str, ...] = ()
    if base in ("ENUM", "SET"):
        members = _parse_members(args or "")
    elif args and re.fullmatch(r"\d+", args.strip()):
        length = int(args)
    if base in _FIXED_BINARY_PLUGIN:
        length = _FIXED_BINARY_PLUGIN[base]
    if base in _BINARY_TYPES or base in _GEOMETRY_TYPES or base in _FIXED_BINARY_PLUGIN:
        cs: str | None = "binary"
    elif base in _STRING_TYPES or base in ("ENUM", "SET"):
        cs = (charset or "binary").lower()
    else:
        cs = None
    return ColumnDef(name, base, unsigned, cs, length, members, nullable.upper() == "YES")


def load_schema(
    conn: Any, databases: Iterable[str] | None = None
) -> dict[tuple[str, str], list[ColumnDef]]:
    """``{(db, table): [ColumnDef, ...]}`` from information_schema (a pymysql connection)."""
    sql = (
        "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, "
        "CHARACTER_SET_NAME, IS_NULLABLE FROM information_schema.COLUMNS "
        "WHERE TABLE_SCHEMA NOT IN ('mysql','information_schema','performance_schema','sys')"
    )
    args: list[str] = []
    if databases is not None:
        dbs = list(databases)
        sql += " AND TABLE_SCHEMA IN (" + ",".join(["%s"] * len(dbs)) + ")"
        args = dbs
    sql += " ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION"
    out: dict[tuple[str, str], list[ColumnDef]] = {}
    with conn.cursor() as cur:
        cur.execute(sql, args or None)
        for db, table, col, dtype, ctype, cs, nullable in cur.fetchall():
            out.setdefault((db, table), []).append(
                column_def_from_information_schema(col, dtype, ctype, cs, nullable)
            )
    return out


def mariadb_signedness_fix(cols: Sequence[ColumnDef]) -> list[ColumnDef]:
    """Undo mariadb-binlog 10.11's misreading of the SIGNEDNESS metadata.

    The MariaDB 10.11 server puts a bit for every YEAR column into the SIGNEDNESS bitmap (YEAR is
    a numeric field there), but mariadb-binlog counts only TINYINT..BIGINT, DECIMAL, FLOAT and
    DOUBLE columns, so after the first YEAR column it prints each numeric column with the bit of
    the one before.  Measured: ``(y YEAR, a INT, b INT UNSIGNED, c INT)`` prints ``a INT UNSIGNED,
    b INT, c INT UNSIGNED``.  The bits of the last ``#YEAR`` server-side entries are never printed:
    those columns come back with ``unsigned=None`` (unknown).
    """
    client = [i for i, c in enumerate(cols) if c.sql_type in _CLIENT_NUMERIC]
    server = [
        i for i, c in enumerate(cols) if c.sql_type in _CLIENT_NUMERIC or c.sql_type == "YEAR"
    ]
    if len(server) == len(client):
        return list(cols)
    bits = [cols[i].unsigned for i in client]
    fixed = list(cols)
    for j, i in enumerate(server):
        if cols[i].sql_type == "YEAR":
            continue
        unsigned = bits[j] if j < len(bits) else None
        c = cols[i]
        fixed[i] = ColumnDef(
            c.name, c.sql_type, unsigned, c.charset, c.length, c.members, c.nullable
        )
    return fixed


# --------------------------------------------------------------------------------------------
# Quoted strings


def render_quoted(data: bytes) -> bytes:
    """Render bytes the way mariadb-binlog -v prints a string value (``my_b_write_quoted``).

    Bytes 0x00..0x1f become ``\\xNN`` (lower-case hex); every other byte -- including ``'``,
    ``\\``, 0x7f and 0x80..0xff -- is written as is, between single quotes.
    """
    out = bytearray(b"'")
    for b in data:
        if b > 0x1F:
            out.append(b)
        else:
            out += b"\\x%02x" % b
    out += b"'"
    return bytes(out)


_ESC = re.compile(rb"\\x([0-9a-fA-F]{2})")


def decode_quoted(text: bytes) -> tuple[bytes, bool]:
    """Inverse of :func:`render_quoted` (text without the outer quotes).

    Returns ``(bytes, ambiguous)``.  ``\\xNN`` with NN < 0x20 is read as an escaped byte, any
    other text as itself.  This is ambiguous: the data may itself contain the four characters
    ``\\x0a`` (a literal backslash is not escaped), which print exactly like an escaped newline.
    ``ambiguous`` is True if at least one such escape was decoded *and* the value also contains
    a literal backslash elsewhere -- the case where a mix-up is plausible.  (Compare forwards with
    :func:`render_quoted` to be exact.)
    """
    escapes = 0

    def sub(m: re.Match[bytes]) -> bytes:
        nonlocal escapes
        v = int(m.group(1), 16)
        if v < 0x20:
            escapes += 1
            return bytes([v])
        return m.group(0)

    data = _ESC.sub(sub, text)
    literal_backslashes = text.count(b"\\") - escapes
    return data, bool(escapes and literal_backslashes)


# MySQL's latin1 is Windows-1252, with the five bytes cp1252 leaves undefined mapped to U+0081..
_CP1252_UPPER = bytes(range(0x80, 0xA0)).decode("cp1252", errors="replace")
_LATIN1_TABLE = {
    0x80 + i: (ch if ch != "\ufffd" else chr(0x80 + i)) for i, ch in enumerate(_CP1252_UPPER)
}
_CODECS = {
    "utf8mb4": "utf-8", "utf8mb3": "utf-8", "utf8": "utf-8", "ascii": "ascii",
    "ucs2": "utf-16-be", "utf16": "utf-16-be", "utf16le": "utf-16-le", "utf32": "utf-32-be",
    "latin2": "iso8859-2", "latin5": "iso8859-9", "latin7": "iso8859-13", "greek": "iso8859-7",
    "hebrew": "iso8859-8", "cp1250": "cp1250", "cp1251": "cp1251", "cp1256": "cp1256",
    "cp1257": "cp1257", "cp850": "cp850", "cp852": "cp852", "cp866": "cp866", "koi8r": "koi8-r",
    "koi8u": "koi8-u", "sjis": "shift_jis", "cp932": "cp932", "ujis": "euc_jp",
    "eucjpms": "euc_jp", "gbk": "gbk", "gb2312": "gb2312", "big5": "big5", "euckr": "euc_kr",
    "tis620": "tis-620", "macroman": "mac-roman", "macce": "mac-latin2",
}  # fmt: skip


def decode_charset(data: bytes, charset: str) -> str | None:
    """Text of ``data`` in a MariaDB character set; None if unknown or undecodable."""
    cs = charset.lower()
    try:
        if cs == "latin1":
            return data.decode("latin-1").translate(_LATIN1_TABLE)
        codec = _CODECS.get(cs)
        return None if codec is None else data.decode(codec)
    except UnicodeDecodeError:
        return None


_LATIN1_REVERSE = {ord(v): k for k, v in _LATIN1_TABLE.items()}


def encode_charset(text: str, charset: str) -> bytes:
    """Bytes of ``text`` in a MariaDB character set (inverse of :func:`decode_charset`)."""
    cs = charset.lower()
    if cs == "latin1":
        return text.translate(_LATIN1_REVERSE).encode("latin-1")
    return text.encode(_CODECS[cs])


def hexval(data: bytes) -> dict[str, str]:
    return {"hex": data.hex()}


# --------------------------------------------------------------------------------------------
# Rows


@dataclass
class RefRow:
    """One row image pair as mariadb-binlog printed it, normalised to the value contract.

    ``before``/``after``: ``{column number (1-based, like @1): value}``; only the columns present
    in the image (MINIMAL/NOBLOB images leave some out).  ``raw_*``: the exact printed value text
    (bytes, e.g. ``b"-1 (255)"``, ``b"'a\\x0ab'"``, ``b"NULL"``).  ``alt_*``: the other reading of
    the same text where there is one: integers under the opposite signedness (only where the two
    differ), ENUM index, SET bitmap.  ``lossy``: column -> why its value is not exact.
    """

    pos: int
    db: str
    table: str
    op: str
    before: dict[int, Any] | None
    after: dict[int, Any] | None
    col_types: dict[int, str]
    raw_before: dict[int, bytes] | None = None
    raw_after: dict[int, bytes] | None = None
    alt_before: dict[int, Any] = field(default_factory=dict)
    alt_after: dict[int, Any] = field(default_factory=dict)
    lossy: dict[int, str] = field(default_factory=dict)
    statement: str | None = None
    event_type: str = ""
    end_log_pos: int = 0
    table_id: int = 0
    row_index: int = 0  # index of the row within its rows event
    col_names: dict[int, str] = field(default_factory=dict)
    file: str = ""

    @property
    def image(self) -> dict[int, Any]:
        """The after image for inserts/updates, the before image for deletes."""
        img = self.after if self.op != "delete" else self.before
        return img or {}

    def named(self, which: str = "image") -> dict[str, Any]:
        """An image keyed by column name (falls back to ``@N``)."""
        img = getattr(self, which) or {}
        return {self.col_names.get(k, f"@{k}"): v for k, v in img.items()}


@dataclass
class RefEvent:
    """One event header as mariadb-binlog printed it."""

    pos: int | None
    end_log_pos: int
    server_id: int
    kind: str  # first word of the description: Query, Write_rows, Table_map, GTID, Intvar, ...
    description: str
    # SQL-ish lines printed for it: "SET INSERT_ID=514/*!*/;", "use `d`/*!*/;", the query ...
    body: list[str] = field(default_factory=list)


_HEADER = re.compile(
    rb"^#\d{6} +\d{1,2}:\d\d:\d\d server id (\d+)  end_log_pos (\d+)(?: CRC32 0x[0-9a-f]+)? *\t(.*)$"
)
_AT = re.compile(rb"^# at (\d+)$")
_ROWS_EVENT = re.compile(
    rb"^((?:Write|Update|Delete)(?:_compressed)?_rows(?:_v1)?): table id (\d+)"
)
_TABLE_MAP = re.compile(rb"^Table_map: `(.*)`\.`(.*)` mapped to number (\d+)")
_ROW_START = re.compile(rb"^### (INSERT INTO|UPDATE|DELETE FROM) `(.*)`\.`(.*)`$")
_VALUE = re.compile(
    rb"^###   @(\d+)=(.*) /\* ([^*]*?) meta=(\d+) nullable=(\d) is_null=(\d) \*/$", re.S
)
_COLUMN_LINE = re.compile(rb"^#(?: Columns\(| {9})(?:`(.*?)` )?(.*)$")
_NROWS = re.compile(rb"^# Number of rows: (\d+)$")
_OPS = {b"INSERT INTO": "insert", b"UPDATE": "update", b"DELETE FROM": "delete"}


def _run(path: Path, extra_args: Sequence[str], metadata: bool) -> bytes:
    cmd = [MARIADB_BINLOG, "--no-defaults", "-vv", "--base64-output=decode-rows"]
    if metadata:
        cmd.append("--print-table-metadata")
    cmd += [*extra_args, str(path)]
    res = subprocess.run(cmd, capture_output=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr.decode(errors='replace')[-2000:]}"
        )
    return res.stdout


class _Parser:
    def __init__(
        self,
        schema: Mapping[tuple[str, str], Sequence[ColumnDef]] | None,
        mariadb_fix: bool | None,
        file: str,
    ) -> None:
        self.schema = schema or {}
        self.mariadb_fix = mariadb_fix
        self.file = file
        self.server_is_mariadb = False
        self.events: list[RefEvent] = []
        self.rows: list[RefRow] = []
        self.multi_groups: list[list[tuple[int, int]]] = []  # [(pos, end_log_pos)] per group
        self.tables: dict[int, tuple[str, str, list[ColumnDef]]] = {}
        self.defs_by_name: dict[tuple[str, str], list[ColumnDef]] = {}
        self.pending_at: list[int] = []
        self.statement: str | None = None
        self.group: list[tuple[int | None, int, str, int]] = []  # (pos, end, type, table id)
        self.group_rows: list[RefRow] = []
        self.cur_row: RefRow | None = None
        self.cur_img: str = "after"
        self.in_columns: tuple[str, str, int] | None = None
        self.col_buf: list[ColumnDef] = []
        self.in_annotate = False
        self.annotate: list[str] = []

    # -- line dispatch ---------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        for line in data.split(b"\n"):
            self.line(line)
        self.flush_group()

    def line(self, line: bytes) -> None:
        if line.startswith(b"###"):
            self.in_annotate = False
            self.row_line(line)
            return
        if self.in_annotate:
            if line.startswith(b"#Q> "):
                self.annotate.append(line[4:].decode("utf-8", "replace"))
                self.statement = "\n".join(self.annotate)
                return
            self.in_annotate = False
        if self.in_columns is not None and self.column_line(line):
            return
        m = _AT.match(line)
        if m:
            self.pending_at.append(int(m.group(1)))
            return
        m = _HEADER.match(line)
        if m:
            self.header(int(m.group(1)), int(m.group(2)), m.group(3))
            return
        m = _NROWS.match(line)
        if m:
            n = int(m.group(1))
            if n != len(self.group_rows):
                raise RuntimeError(
                    f"{self.file}: mariadb-binlog said {n} rows, parsed {len(self.group_rows)}"
                )
            self.flush_group()
            return
        if self.events and not line.startswith(b"#") and line.strip():
            self.events[-1].body.append(line.decode("utf-8", "replace"))

    def header(self, server_id: int, end: int, desc: bytes) -> None:
        pos = self.pending_at.pop(0) if self.pending_at else None
        text = desc.decode("utf-8", "replace").rstrip()
        kind = re.split(r"[\s:]", text, maxsplit=1)[0]
        self.events.append(RefEvent(pos, end, server_id, kind, text))
        if kind == "Start" and "MariaDB" in text:
            self.server_is_mariadb = True
        m = _ROWS_EVENT.match(desc)
        if m:
            if self.group_rows:  # rows already printed belong to an earlier group
                self.flush_group()
            self.group.append((pos, end, m.group(1).decode(), int(m.group(2))))
            return
        if self.group_rows or (self.group and kind not in ("Table_map", "Annotate_rows")):
            self.flush_group()
        if kind == "Annotate_rows":
            self.in_annotate = True
            self.annotate = []
            self.statement = None
        elif kind == "Table_map":
            tm = _TABLE_MAP.match(desc)
            if tm:
                db, tbl, tid = tm.group(1).decode(), tm.group(2).decode(), int(tm.group(3))
                self.tables[tid] = (db, tbl, self.defs_by_name.get((db, tbl), []))
                self.in_columns = (db, tbl, tid)
                self.col_buf = []
        elif kind in ("GTID", "Xid", "Query", "Query_compressed", "XA"):
            self.statement = None

    def column_line(self, line: bytes) -> bool:
        """A line of the ``# Columns(...)`` block after a Table_map; False when it ends."""
        assert self.in_columns is not None
        if not (
            line.startswith(b"# Columns(") or (self.col_buf and line.startswith(b"#" + b" " * 9))
        ):
            self.end_columns()
            return False
        m = _COLUMN_LINE.match(line)
        if not m:
            self.end_columns()
            return False
        name = m.group(1).decode("utf-8", "replace") if m.group(1) is not None else None
        body = m.group(2).decode("utf-8", "replace")
        # every column line ends with "," except the last, which ends with the block's ")"
        self.col_buf.append(column_def_from_type(name, body[:-1]))
        return True

    def end_columns(self) -> None:
        assert self.in_columns is not None
        db, tbl, tid = self.in_columns
        cols = self.col_buf
        fix = self.mariadb_fix if self.mariadb_fix is not None else self.server_is_mariadb
        if fix and cols:
            cols = mariadb_signedness_fix(cols)
        if cols:
            self.defs_by_name[(db, tbl)] = cols
            self.tables[tid] = (db, tbl, cols)
        self.in_columns = None
        self.col_buf = []

    # -- rows --------------------------------------------------------------------------------

    def row_line(self, line: bytes) -> None:
        m = _ROW_START.match(line)
        if m:
            op = _OPS[m.group(1)]
            db, tbl = m.group(2).decode(), m.group(3).decode()
            ev = self.group[-1] if self.group else (None, 0, "", 0)
            self.cur_row = RefRow(
                pos=-1, db=db, table=tbl, op=op,
                before={} if op != "insert" else None,
                after={} if op != "delete" else None,
                col_types={},
                raw_before={} if op != "insert" else None,
                raw_after={} if op != "delete" else None,
                statement=self.statement, event_type=ev[2], table_id=ev[3], file=self.file,
            )  # fmt: skip
            self.group_rows.append(self.cur_row)
            self.cur_img = "after" if op == "insert" else "before"
            return
        if line == b"### SET":
            self.cur_img = "after"
            return
        if line == b"### WHERE":
            self.cur_img = "before"
            return
        m = _VALUE.match(line)
        if not m or self.cur_row is None:
            raise RuntimeError(f"{self.file}: cannot parse mariadb-binlog line {line[:200]!r}")
        row = self.cur_row
        col = int(m.group(1))
        raw = m.group(2)
        typ = m.group(3).decode()
        is_null = m.group(6) == b"1"
        cdef = self.column_def(row.db, row.table, col)
        if cdef is not None and cdef.name is not None:
            row.col_names[col] = cdef.name
        row.col_types[col] = typ
        value, alt, lossy = normalise(raw, typ, cdef, is_null)
        img = row.after if self.cur_img == "after" else row.before
        raw_img = row.raw_after if self.cur_img == "after" else row.raw_before
        if img is None or raw_img is None:
            raise RuntimeError(f"{self.file}: {self.cur_img} image in a {row.op} row")
        img[col] = value
        raw_img[col] = raw
        if alt is not _NO_ALT:
            (row.alt_after if self.cur_img == "after" else row.alt_before)[col] = alt
        if lossy:
            row.lossy[col] = lossy

    def column_def(self, db: str, tbl: str, col: int) -> ColumnDef | None:
        cols = self.schema.get((db, tbl)) or self.defs_by_name.get((db, tbl))
        if cols and 0 < col <= len(cols):
            return cols[col - 1]
        return None

    def flush_group(self) -> None:
        if self.in_columns is not None:
            self.end_columns()
        rows, group = self.group_rows, self.group
        self.group_rows, self.group = [], []
        self.cur_row = None
        if not rows:
            return
        if len(group) == 1:
            pos, end, typ, tid = group[0]
            for i, r in enumerate(rows):
                r.pos = pos if pos is not None else -1
                r.end_log_pos, r.event_type, r.table_id, r.row_index = end, typ, tid, i
        else:
            # several rows events printed together: positions need the patched second pass
            self.multi_groups.append([(p if p is not None else -1, e) for p, e, _, _ in group])
            for r in rows:
                r.pos = -1
        self.rows.extend(rows)


_NO_ALT = object()


# --------------------------------------------------------------------------------------------
# Normalisation of one printed value


def normalise(raw: bytes, typ: str, cdef: ColumnDef | None, is_null: bool) -> tuple[Any, Any, str]:
    """``(contract value, alternative reading or _NO_ALT, lossy reason or "")``."""
    text = raw.strip()
    if is_null and text == b"NULL":
        return None, _NO_ALT, ""
    base = typ.split("(", 1)[0]
    args = typ[len(base) + 1 : -1] if "(" in typ else ""

    if base in ("TINYINT", "SHORTINT", "MEDIUMINT", "INT", "LONGINT"):
        # "-1 (255)": signed reading, then in parentheses the unsigned one (only when negative)
        m = re.fullmatch(rb"(-?\d+)(?: \((\d+)\))?", text)
        if not m:
            return text.decode(), _NO_ALT, "unparsed integer"
        signed = int(m.group(1))
        unsigned = int(m.group(2)) if m.group(2) else signed
        if cdef is None or cdef.unsigned is None:
            return (
                signed,
                (unsigned if unsigned != signed else _NO_ALT),
                ("signedness unknown" if unsigned != signed else ""),
            )
        if cdef.unsigned:
            return unsigned, (signed if unsigned != signed else _NO_ALT), ""
        return signed, (unsigned if unsigned != signed else _NO_ALT), ""

    if base == "DECIMAL":
        # "-0.000000000000000000000000000001", "123.450", "99999": exactly the server's digits
        return text.decode(), _NO_ALT, ""

    if base == "FLOAT":
        # printed with "%-20g": 6 significant digits (3.14159274 -> "3.14159"); lossy
        return float(text), _NO_ALT, "FLOAT printed with 6 significant digits"

    if base == "DOUBLE":
        # printed with "%.20g": "-2.2499999999999999694e+300" reads back to the same double
        return float(text), _NO_ALT, ""

    if base == "BIT":
        # b'10101010101010101': n bits, most significant first
        m = re.fullmatch(rb"b'([01]*)'", text)
        return (int(m.group(1), 2) if m and m.group(1) else 0), _NO_ALT, ""

    if base == "YEAR":
        # the stored byte + 1900: YEAR 0000 (byte 0) prints as 1900, a year YEAR cannot hold
        y = int(text)
        return (0 if y == 1900 else y), _NO_ALT, ""

    if base in ("DATE", "NEWDATE"):
        # '2024:01:02' (colons!) -> "2024-01-02"; zero date '0000:00:00' -> "0000-00-00"
        return text.strip(b"'").decode().replace(":", "-"), _NO_ALT, ""

    if base in ("TIME", "DATETIME"):
        # '-838:59:59', '-00:00:01.500000', '2024-01-02 03:04:05.678': already in contract form,
        # with exactly the column's fractional digits; zero datetime '0000-00-00 00:00:00' kept
        return text.strip(b"'").decode(), _NO_ALT, ""

    if base == "TIMESTAMP":
        # epoch seconds with the column's fractional digits: "981173106.007", "0.000000"
        fsp = int(args) if args.isdigit() else 0
        s = text.decode()
        sec, _, frac = s.partition(".")
        frac = (frac + "0" * fsp)[:fsp]
        if int(sec) == 0 and not frac.strip("0"):
            out = "0000-00-00 00:00:00"  # the zero TIMESTAMP is stored as 0
        else:
            out = _dt.datetime.fromtimestamp(int(sec), _dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
        return (out + ("." + frac if fsp else "")), _NO_ALT, ""

    if base == "ENUM":
        # 1-based member index ("2" for the 2nd member); 0 = the '' error value
        idx = int(text)
        if cdef is not None and cdef.members:
            if idx == 0:
                return "", idx, ""
            if idx <= len(cdef.members):
                return cdef.members[idx - 1], idx, ""
        return idx, _NO_ALT, "ENUM members unknown"

    if base == "SET":
        # b'00000101': the stored bytes (1..8, little-endian) in storage order, each byte
        # printed most significant bit first -- SET(s0..s63) with s0,s63 prints
        # b'00000001' + 48 zeros + b'10000000'.  Bit i of the value = member i+1.
        m = re.fullmatch(rb"b'([01]*)'", text)
        digits = m.group(1) if m else b""
        bits = sum(int(digits[i : i + 8], 2) << (8 * (i // 8)) for i in range(0, len(digits), 8))
        if cdef is not None and cdef.members:
            names = [cdef.members[i] for i in range(len(cdef.members)) if bits >> i & 1]
            return ",".join(names), bits, ""
        return bits, _NO_ALT, "SET members unknown"

    if text.startswith(b"'") and text.endswith(b"'") and len(text) >= 2:
        # 'abc\x0a': bytes as is, 0x00..0x1f as \xNN; quote and backslash NOT escaped
        data, ambiguous = decode_quoted(text[1:-1])
        lossy = "string contains \\x escapes and literal backslashes" if ambiguous else ""
        charset = cdef.charset if cdef is not None else None
        if base == "GEOMETRY" or charset == "binary":
            if base == "STRING" and cdef is not None and cdef.length:
                # BINARY(n): the binlog drops trailing 0x00 bytes; the column value has n bytes
                data = data.ljust(cdef.length, b"\x00")
            return hexval(data), _NO_ALT, lossy
        if charset is None:
            decoded = decode_charset(data, "utf8mb4")
            if decoded is None:
                return hexval(data), _NO_ALT, lossy or "charset unknown, not UTF-8"
            return decoded, _NO_ALT, lossy or "charset unknown, read as UTF-8"
        decoded = decode_charset(data, charset)
        if decoded is None:
            return hexval(data), _NO_ALT, lossy or f"cannot decode as {charset}"
        return decoded, _NO_ALT, lossy

    return text.decode("utf-8", "replace"), _NO_ALT, f"unhandled type {typ}"


# --------------------------------------------------------------------------------------------
# Entry points


def _parse(
    path: Path,
    extra_args: Sequence[str],
    schema: Mapping[tuple[str, str], Sequence[ColumnDef]] | None,
    mariadb_fix: bool | None,
) -> _Parser:
    p = _Parser(schema, mariadb_fix, str(path))
    p.feed(_run(path, extra_args, metadata=True))
    if not p.multi_groups:
        return p
    # Second pass: a copy with STMT_END_F on every rows event of the multi-event statements
    with tempfile.TemporaryDirectory(prefix="bl-ref-") as tmp:
        copy = Path(tmp) / Path(path).name
        shutil.copyfile(path, copy)
        with open(copy, "r+b") as fh:
            for group in p.multi_groups:
                for pos, end in group[:-1]:
                    if pos < 0:
                        raise RuntimeError(f"{path}: rows event without position")
                    fh.seek(pos + 4)
                    etype = fh.read(1)[0]
                    fh.seek(pos + 9)
                    (size,) = struct.unpack("<I", fh.read(4))
                    if pos + size != end:
                        raise RuntimeError(f"{path}: event at {pos} size {size} != end {end}")
                    if etype not in (23, 24, 25, 30, 31, 32, 166, 167, 168, 169, 170, 171):
                        raise RuntimeError(f"{path}: event at {pos} has type {etype}, not rows")
                    fh.seek(pos + 19 + 6)
                    (flags,) = struct.unpack("<H", fh.read(2))
                    fh.seek(pos + 19 + 6)
                    fh.write(struct.pack("<H", flags | STMT_END_F))
        args = [a for a in extra_args if not a.startswith("--verify-binlog-checksum")]
        p2 = _Parser(schema, mariadb_fix, str(path))
        p2.feed(_run(copy, args, metadata=True))
    if p2.multi_groups:
        raise RuntimeError(f"{path}: rows events still grouped after patching")
    if len(p2.rows) != len(p.rows):
        raise RuntimeError(
            f"{path}: patched pass gave {len(p2.rows)} rows, first pass {len(p.rows)}"
        )
    return p2


def mariadb_binlog_rows(
    path: Path | str,
    *,
    extra_args: Sequence[str] = (),
    schema: Mapping[tuple[str, str], Sequence[ColumnDef]] | None = None,
    mariadb_signedness_fix: bool | None = None,
) -> list[RefRow]:
    """Every row of every rows event in ``path``, in file order.

    ``schema``: ``{(db, table): [ColumnDef]}`` (see :func:`load_schema`) -- the authority for
    signedness, charsets and ENUM/SET members.  Without it the ``--print-table-metadata`` block
    is used (needs binlog_row_metadata=FULL), with the YEAR signedness fix
    (:func:`mariadb_signedness_fix`) applied to MariaDB binlogs unless told otherwise.
    """
    return _parse(Path(path), extra_args, schema, mariadb_signedness_fix).rows


def mariadb_binlog_events(path: Path | str, *, extra_args: Sequence[str] = ()) -> list[RefEvent]:
    """Every event header mariadb-binlog prints (position, end position, kind, text)."""
    p = _Parser(None, False, str(path))
    p.feed(_run(Path(path), extra_args, metadata=False))
    return p.events


def table_definitions(path: Path | str) -> dict[tuple[str, str], list[ColumnDef]]:
    """The column definitions of each table as printed by --print-table-metadata (last seen),
    with the MariaDB YEAR signedness fix applied."""
    return _parse(Path(path), (), None, None).defs_by_name


# --------------------------------------------------------------------------------------------
# Server values (SELECT with pymysql ``conv={}``: the server's text) -> contract


def server_text_to_contract(value: Any, cdef: ColumnDef) -> Any:
    """A value fetched with a converter-less pymysql connection (text protocol, ``conv={}``:
    str for text columns, bytes for binary ones) in contract form for column ``cdef``."""
    if value is None:
        return None
    t = cdef.sql_type
    binaryish = cdef.charset == "binary" or t in ("BIT", *_GEOMETRY_TYPES)
    if isinstance(value, bytes) and not binaryish:
        value = value.decode("utf-8")
    if t in INT_TYPES or t == "YEAR":
        return int(value)
    if t == "DECIMAL":
        return str(value)
    if t in ("FLOAT", "DOUBLE", "REAL"):
        return float(value)
    if t == "BIT":
        data = value if isinstance(value, bytes) else str(value).encode("latin-1")
        return int.from_bytes(data, "big")
    if t in ("DATE", "TIME", "DATETIME", "TIMESTAMP"):
        return str(value)
    if t == "INET6":
        import ipaddress

        return hexval(ipaddress.IPv6Address(value).packed)
    if t == "INET4":
        import ipaddress

        return hexval(ipaddress.IPv4Address(value).packed)
    if t == "UUID":
        # binlog bytes of a MariaDB 10.11 UUID are in text order (measured on v1 and v4 UUIDs)
        return hexval(bytes.fromhex(str(value).replace("-", "")))
    if cdef.charset == "binary" or t in _GEOMETRY_TYPES:
        data = value if isinstance(value, bytes) else str(value).encode("utf-8")
        return hexval(data)
    return value if isinstance(value, str) else str(value)
