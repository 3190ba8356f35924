"""Seed snapshots: the schema before the first binlog, from ``mysqldump --no-data`` output or
from a live server's information_schema.  Snapshot versions start at ``(-1, 0)``."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from .ddl import apply_ddl
from .model import SNAPSHOT_POS, SchemaColumn, SchemaHistory, Version
from .sqltext import ANY_VERSION, expand_versioned, leading_words, split_statements
from .types import render_type

_USE = re.compile(r"^\s*USE\s+(`(?:[^`]|``)+`|[\w$]+)\s*$", re.I | re.S)
_CREATE_DB = re.compile(r"^\s*CREATE\s+(?:DATABASE|SCHEMA)\s+(?:IF\s+NOT\s+EXISTS\s+)?"
                        r"(`(?:[^`]|``)+`|[\w$]+)", re.I)


def _unquote(s: str) -> str:
    return s[1:-1].replace("``", "`") if s.startswith("`") else s


def from_mysqldump(text: str, *, history: SchemaHistory | None = None,
                   server_version: int = ANY_VERSION, mariadb: bool = False,
                   file: str | None = None, db: str | None = None) -> SchemaHistory:
    """The CREATE TABLE statements of ``mysqldump --no-data`` output, each in the database
    its ``USE`` / ``CREATE DATABASE`` lines select (``db`` before the first: a dump of one
    database has none).  Views and other statements are skipped."""
    h = history if history is not None else SchemaHistory()
    for stmt in split_statements(text):
        s = expand_versioned(stmt, server_version, mariadb).strip()
        m = _USE.match(s) or _CREATE_DB.match(s)
        if m:
            db = _unquote(m.group(1))
            continue
        w = leading_words(s, 3)
        if w[:2] == ["CREATE", "TABLE"] or w[:3] == ["CREATE", "OR", "REPLACE"]:
            apply_ddl(h, s, db=db, pos=SNAPSHOT_POS, file=file, server_version=server_version,
                      mariadb=mariadb)
    return h


def from_information_schema(conn: Any, databases: Iterable[str], *,
                            history: SchemaHistory | None = None) -> SchemaHistory:
    """Every base table of ``databases`` as information_schema.COLUMNS / STATISTICS says (a
    DB-API connection, e.g. pymysql)."""
    h = history if history is not None else SchemaHistory()
    dbs = list(databases)
    if not dbs:
        return h
    marks = ",".join(["%s"] * len(dbs))
    cur = conn.cursor()
    cur.execute("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE "
                f"TABLE_SCHEMA IN ({marks}) AND TABLE_TYPE = 'BASE TABLE' "
                "ORDER BY TABLE_SCHEMA, TABLE_NAME", dbs)
    tables = [(str(a), str(b)) for a, b in cur.fetchall()]
    cur.execute("SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, "
                "IS_NULLABLE, CHARACTER_MAXIMUM_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE, "
                "DATETIME_PRECISION, CHARACTER_SET_NAME, COLLATION_NAME, EXTRA "
                f"FROM information_schema.COLUMNS WHERE TABLE_SCHEMA IN ({marks}) "
                "ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION", dbs)
    cols: dict[tuple[str, str], list[SchemaColumn]] = {}
    for row in cur.fetchall():
        cols.setdefault((str(row[0]), str(row[1])), []).append(column_from_is(row[2:]))
    cur.execute("SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME FROM information_schema.STATISTICS "
                f"WHERE TABLE_SCHEMA IN ({marks}) AND INDEX_NAME = 'PRIMARY' "
                "ORDER BY TABLE_SCHEMA, TABLE_NAME, SEQ_IN_INDEX", dbs)
    pks: dict[tuple[str, str], list[str]] = {}
    for a, b, c in cur.fetchall():
        pks.setdefault((str(a), str(b)), []).append(str(c))
    cur.close()
    for key in tables:
        h.add(Version(key[0], key[1], 1, SNAPSHOT_POS, None, "information_schema", "snapshot",
                      tuple(cols.get(key, [])), tuple(pks.get(key, []))))
    return h


_MEMBERS = re.compile(r"'((?:[^']|'')*)'")


def column_from_is(row: Iterable[Any]) -> SchemaColumn:
    (name, data_type, column_type, is_nullable, char_len, num_prec, num_scale, dt_prec,
     charset, collation, extra) = row
    base = str(data_type).lower()
    ctype = str(column_type).lower()
    unsigned = base in ("tinyint", "smallint", "mediumint", "int", "bigint", "decimal",
                        "float", "double") and ("unsigned" in ctype or "zerofill" in ctype)
    length = precision = scale = None
    members = None
    if base in ("enum", "set"):
        raw = str(column_type)  # members keep their case
        inner = raw[raw.index("(") + 1: raw.rindex(")")]
        members = tuple(m.replace("''", "'") for m in _MEMBERS.findall(inner))
    elif base in ("char", "varchar", "binary", "varbinary"):
        length = int(char_len) if char_len is not None else None
    elif base == "bit":
        length = int(num_prec) if num_prec is not None else 1
    elif base == "decimal" or (base in ("float", "double") and "," in ctype):
        precision, scale = int(num_prec), int(num_scale)
    elif base in ("datetime", "timestamp", "time"):
        scale = int(dt_prec or 0)
    ex = str(extra or "").upper()
    generated = "STORED" if ("STORED" in ex or "PERSISTENT" in ex) else (
        "VIRTUAL" if "VIRTUAL" in ex else None)
    return SchemaColumn(name=str(name), type=render_type(base, length, precision, scale,
                                                         unsigned, members),
                        base=base, nullable=str(is_nullable).upper() == "YES", length=length,
                        precision=precision, scale=scale, unsigned=unsigned,
                        charset=str(charset).lower() if charset else None,
                        collation=str(collation).lower() if collation else None,
                        members=members, generated=generated, invisible="INVISIBLE" in ex)
