"""Naming the columns of Table_maps logged without names, from a schema history.

MySQL 8's default ``binlog_row_metadata=MINIMAL`` and MariaDB's default ``NO_LOG`` log no
column names: rows events then give images keyed ``@1``..``@n``.  :class:`TableMapNamer` is
a ``table_map_hook`` for :class:`binlake.binlog.reader.BinlogReader`: for every Table_map
without names it looks up the version of the table in force at the event's position
(:meth:`SchemaHistory.at`), checks the Table_map against it (:func:`check_table_map`:
column count, each column's binlog type, nullability) and, when they agree, returns a copy
of the TableMap whose columns carry what the binlog left out:

* the column names, and the primary key (``SIMPLE_PRIMARY_KEY`` is FULL-only);
* integer / decimal / float signedness when the Table_map has no SIGNEDNESS field (NO_LOG):
  an unsigned 4294967295 then reads as 4294967295, not -1;
* ENUM and SET member names (FULL-only), so values read as names, not indexes;
* the character set of text columns (NO_LOG logs none): the column's own (``CHARACTER SET``,
  or the one its ``COLLATE`` names), else its table's default, else its database's
  (:mod:`.ddl` records them), and ``binary`` for BLOB / BINARY / VARBINARY columns.  When the
  history does not know it (a table created in a database made before the binlog, without
  a default of its own) a text column is read as UTF-8 where it is valid, else as bytes.

A disagreement (say, a DDL run with ``sql_log_bin=0``) leaves the TableMap as it is (``@n``
names: no names are always better than wrong names) and is a ``table_map_mismatch``
finding, once per table, version and reason.  A table the history does not hold gets one
``no_schema`` finding."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..binlog.charsets import COLLATIONS
from ..binlog.columns import _NUMERIC, TableMap
from ..binlog.constants import ColumnType as T
from ..binlog.fde import parse_version
from .model import Finding, Position, SchemaHistory, Version
from .types import charset_of_collation, check_table_map

_BINARY_BASES = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob",
                           "longblob"})
_TEXT_TYPES = frozenset({T.STRING, T.VARCHAR, T.VAR_STRING, T.BLOB, T.TINY_BLOB,
                         T.MEDIUM_BLOB, T.LONG_BLOB})
BINARY_COLLATION = 63


def _charset_ids() -> dict[str, int]:
    """A collation id of each character set (its lowest: the codec depends only on the
    character set)."""
    out: dict[str, int] = {}
    for cid, entry in sorted(COLLATIONS.items()):
        out.setdefault(str(entry[1]).lower(), cid)
    return out


_CHARSET_ID: dict[str, int] | None = None


def collation_for(charset: str | None) -> int | None:
    global _CHARSET_ID
    if charset is None:
        return None
    if _CHARSET_ID is None:
        _CHARSET_ID = _charset_ids()
    cs = charset.lower()
    return _CHARSET_ID.get("utf8mb3" if cs == "utf8" else cs, _CHARSET_ID.get(cs))


def named_copy(tm: TableMap, version: Version) -> TableMap:
    """``tm`` with what ``version`` (which agrees with it) adds; ``tm`` is not changed."""
    assert version.columns is not None
    cols = []
    for c, sc in zip(tm.columns, version.columns):
        n = replace(c, name=sc.name)
        if not tm.has_signedness and (c.type in _NUMERIC):
            n.unsigned = sc.unsigned
        if c.type in (T.ENUM, T.SET) and c.members is None and sc.members is not None:
            n.members = tuple(sc.members)
        if c.collation is None and c.type in _TEXT_TYPES:
            # the column's character set: its own, else its collation's (histories written
            # before columns took the one their collation names)
            cs = sc.charset or charset_of_collation(sc.collation)
            if sc.base in _BINARY_BASES or cs == "binary":
                n.collation = BINARY_COLLATION
            else:
                n.collation = collation_for(cs)
        cols.append(n)
    pk = tm.primary_key
    if pk is None and version.primary_key:
        index = {c.name.lower(): i for i, c in enumerate(version.columns)}
        pk = [index[k.lower()] for k in version.primary_key if k.lower() in index]
    return TableMap(tm.table_id, tm.db, tm.table, tm.flags, cols, pk,
                    tm.primary_key_prefixes if tm.primary_key is not None else None,
                    tm.has_full_metadata, tm.has_signedness, version, readers={})


class TableMapNamer:
    """A ``table_map_hook`` naming the columns of one binlog file's Table_maps from
    ``history`` (see the module doc).  ``seq``: the file's sequence number (positions in the
    history are ``(seq, pos)``); ``file``: its name, for findings.  Findings collect in
    ``findings``; ``named`` / ``unnamed`` count the Table_maps named or left as they were."""

    def __init__(self, history: SchemaHistory, seq: int, file: str | None = None) -> None:
        self.history = history
        self.seq = seq
        self.file = file
        self.findings: list[Finding] = []
        self.named = 0
        self.unnamed = 0
        # (id(columns), id(version)) -> (columns, version, named TableMap or None): the
        # decoder shares one columns list between a table's identical Table_maps
        self._memo: dict[tuple[int, int], tuple[Any, Any, TableMap | None]] = {}
        self._reported: set[tuple[str, Position | None, str]] = set()

    def __call__(self, tm: TableMap, pos: int, fde: Any) -> TableMap:
        if tm.has_full_metadata:
            return tm
        at = (self.seq, pos)
        v = self.history.at(tm.db, tm.table, at)
        key = (id(tm.columns), id(v))
        hit = self._memo.get(key)
        if hit is None or hit[0] is not tm.columns or hit[1] is not v:
            hit = (tm.columns, v, self._name(tm, v, at, fde))
            self._memo[key] = hit
        named = hit[2]
        if named is None:
            self.unnamed += 1
            return tm
        self.named += 1
        if named.table_id != tm.table_id:
            return replace(named, table_id=tm.table_id)
        return named

    def _name(self, tm: TableMap, v: Version | None, at: Position, fde: Any
              ) -> TableMap | None:
        mariadb = getattr(fde, "flavor", "") == "mariadb"
        sv = parse_version(str(getattr(fde, "server_version", "") or ""))
        name = f"{tm.db}.{tm.table}"
        if v is None and not self.history.versions.get((tm.db.lower(), tm.table.lower())):
            self._report("no_schema", f"the schema history has no version of {name} (no "
                         "CREATE TABLE in the archive and no snapshot): its columns stay "
                         "@1..@n", at, name, None, None, None)
            return None
        ok, why, expected, found = check_table_map(tm, v, mariadb=mariadb, server_version=sv)
        if not ok:
            self._report("table_map_mismatch", f"Table_map of {name} disagrees with the "
                         f"version in force ({why}): its columns stay @1..@n", at, name,
                         expected, found, v.start if v is not None else None)
            return None
        assert v is not None
        return named_copy(tm, v)

    def _report(self, kind: str, message: str, at: Position, table: str, expected: Any,
                found: Any, start: Position | None) -> None:
        key = (table.lower(), start, kind + message)
        if key in self._reported:
            return
        self._reported.add(key)
        self.findings.append(Finding(kind, message, self.file, at, None, table, expected,
                                     found))
