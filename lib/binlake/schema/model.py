"""The schema history's data: a table's columns (:class:`SchemaColumn`), one version of a
table (:class:`Version`), a :class:`Finding`, and :class:`SchemaHistory`, which answers "the
version of db.table in force at position P" by bisection over each table's versions.

A position is ``(file seq, byte pos)``: the binlog file's sequence number (the digits of its
extension) and the event's offset in it.  Snapshots sit at ``(-1, 0)``, before any binlog."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

Position = tuple[int, int]
SNAPSHOT_POS: Position = (-1, 0)


@dataclass(frozen=True)
class SchemaColumn:
    name: str
    type: str  # the MySQL type, normalised: "int unsigned", "varchar(10)", "enum('a','b')"
    base: str  # "int", "varchar", "enum", ...
    nullable: bool = True
    length: int | None = None  # CHAR/VARCHAR/BINARY/VARBINARY/BIT length, TEXT(n)
    precision: int | None = None  # DECIMAL/FLOAT(M,D)
    scale: int | None = None  # DECIMAL/FLOAT(M,D) scale; fractional seconds of temporals
    unsigned: bool = False
    charset: str | None = None
    collation: str | None = None
    members: tuple[str, ...] | None = None  # ENUM/SET values
    generated: str | None = None  # "VIRTUAL" | "STORED"
    invisible: bool = False
    # the DEFAULT clause as SQL text ("'x'", "0", "NULL", "current_timestamp()"), None when
    # the DDL gives none; not compared (snapshots from information_schema do not carry it)
    default: str | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "type": self.type, "nullable": self.nullable}
        for k in ("length", "precision", "scale", "charset", "collation", "generated"):
            v = getattr(self, k)
            if v is not None:
                d[k] = v
        if self.unsigned:
            d["unsigned"] = True
        if self.members is not None:
            d["members"] = list(self.members)
        if self.invisible:
            d["invisible"] = True
        if self.default is not None:
            d["default"] = self.default
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SchemaColumn:
        """The inverse of :meth:`to_dict`."""
        t = str(d["type"])
        members = d.get("members")
        return cls(str(d["name"]), t, str(d.get("base") or _base_of(t)),
                   bool(d.get("nullable", True)), d.get("length"), d.get("precision"),
                   d.get("scale"), bool(d.get("unsigned", False)), d.get("charset"),
                   d.get("collation"), tuple(members) if members is not None else None,
                   d.get("generated"), bool(d.get("invisible", False)), d.get("default"))


def _base_of(type_text: str) -> str:
    """``int`` of ``int unsigned``, ``varchar`` of ``varchar(20)``."""
    return type_text.split("(", 1)[0].split(" ", 1)[0].lower()


@dataclass(frozen=True)
class Version:
    """One version of a table.  ``exists`` is False from a DROP (or a rename-out) on;
    ``columns`` is None when the DDL that made this version could not be interpreted (the
    table's schema is unknown from here: no version is guessed)."""

    db: str
    table: str
    incarnation: int
    start: Position
    file: str | None
    ddl: str
    change: str  # "create", "alter", "rename", "drop", "truncate", "snapshot", "unknown"...
    columns: tuple[SchemaColumn, ...] | None
    primary_key: tuple[str, ...] = ()
    exists: bool = True
    # the table's default character set and collation (CREATE TABLE ... DEFAULT CHARSET=,
    # else its database's default then; ALTER TABLE ... CHARACTER SET): what a text column
    # added or redefined later without its own takes.  None: not known.
    charset: str | None = None
    collation: str | None = None
    # the columns an ALTER renamed (RENAME COLUMN, CHANGE old new): (old, new) pairs
    renamed: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def column(self, name: str) -> SchemaColumn | None:
        for c in self.columns or ():
            if c.name.lower() == name.lower():
                return c
        return None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "db": self.db, "table": self.table, "incarnation": self.incarnation,
            "start": {"file": self.file, "seq": self.start[0], "pos": self.start[1]},
            "change": self.change, "exists": self.exists,
            "columns": None if self.columns is None else [c.to_dict() for c in self.columns],
            "primary_key": list(self.primary_key), "ddl": self.ddl,
        }
        if self.charset is not None:
            d["charset"] = self.charset
        if self.collation is not None:
            d["collation"] = self.collation
        if self.renamed:
            d["renamed"] = [list(p) for p in self.renamed]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Version:
        """The inverse of :meth:`to_dict` (a ``binlake schema`` line's ``version``, a
        snapshot line, a row of the lake's ``schema_history``)."""
        start = d["start"]
        cols = d.get("columns")
        return cls(str(d["db"]), str(d["table"]), int(d.get("incarnation") or 1),
                   (int(start["seq"]), int(start["pos"])), start.get("file"),
                   str(d.get("ddl") or ""), str(d.get("change") or "snapshot"),
                   None if cols is None else tuple(SchemaColumn.from_dict(c) for c in cols),
                   tuple(d.get("primary_key") or ()), bool(d.get("exists", True)),
                   d.get("charset"), d.get("collation"),
                   tuple((str(a), str(b)) for a, b in d.get("renamed") or ()))


@dataclass(frozen=True)
class Finding:
    kind: str  # "unparsed", "uninterpreted", "unknown_table", "table_map_mismatch", ...
    message: str
    file: str | None = None
    pos: Position | None = None
    statement: str | None = None
    table: str | None = None
    expected: Any = None
    found: Any = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"finding": self.kind, "message": self.message, "file": self.file}
        if self.pos is not None:
            d["seq"], d["pos"] = self.pos
        for k in ("table", "statement", "expected", "found"):
            v = getattr(self, k)
            if v is not None:
                d[k] = v
        return d

    def __str__(self) -> str:
        where = f"{self.file}:{self.pos[1]}" if self.pos is not None else (self.file or "-")
        return f"{where}: {self.kind}: {self.message}"


def _key(name: str) -> str:
    return name.lower()


@dataclass(frozen=True)
class Database:
    """What the history knows of a database: its default character set and collation
    (CREATE / ALTER DATABASE; None: not known, e.g. the server's default), and whether it
    exists (False from a DROP DATABASE)."""

    name: str
    charset: str | None = None
    collation: str | None = None
    exists: bool = True
    # the position of the statement that set this state (None: not from a binlog)
    start: Position | None = field(default=None, compare=False)


@dataclass
class SchemaHistory:
    """Every table's versions in position order, and the findings made while building."""

    versions: dict[tuple[str, str], list[Version]] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    # every table rename (RENAME TABLE pairs, ALTER TABLE ... RENAME TO) in statement order:
    # (position, (old db, old table), (new db, new table))
    renames: list[tuple[Position, tuple[str, str], tuple[str, str]]] = \
        field(default_factory=list)
    # the databases the DDL so far created, altered or dropped (lower-cased name -> state):
    # the default character set a CREATE TABLE without its own takes.  Only the state after
    # the last statement applied (it is not part of a version, nor of `binlake schema`
    # output: each table's version holds the default it took)
    databases: dict[str, Database] = field(default_factory=dict)
    _starts: dict[tuple[str, str], list[Position]] = field(default_factory=dict)

    def add(self, v: Version) -> None:
        k = (_key(v.db), _key(v.table))
        vs = self.versions.setdefault(k, [])
        starts = self._starts.setdefault(k, [])
        if starts and v.start < starts[-1]:
            raise ValueError(f"version of {v.db}.{v.table} at {v.start} before {starts[-1]}")
        vs.append(v)
        starts.append(v.start)

    def latest(self, db: str, table: str) -> Version | None:
        vs = self.versions.get((_key(db), _key(table)))
        return vs[-1] if vs else None

    def at(self, db: str, table: str, pos: Position) -> Version | None:
        """The version in force at ``pos`` (the last one starting at or before it), or None
        when the table did not exist there or nothing is known of it."""
        k = (_key(db), _key(table))
        starts = self._starts.get(k)
        if not starts:
            return None
        i = bisect.bisect_right(starts, pos)
        return self.versions[k][i - 1] if i else None

    def database(self, name: str) -> Database | None:
        return self.databases.get(_key(name))

    def tables(self) -> list[tuple[str, str]]:
        return sorted(self.versions)

    def current(self) -> dict[tuple[str, str], Version]:
        """The last version of every table that still exists."""
        return {k: vs[-1] for k, vs in self.versions.items() if vs[-1].exists}

    def all_versions(self) -> list[Version]:
        out = [v for vs in self.versions.values() for v in vs]
        out.sort(key=lambda v: (v.start, v.db, v.table))
        return out
