"""What DDL interpretation shares: :class:`Ctx` (the statement's place and the history it
extends), table names, primary keys, renames, and the "not interpreted" path."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from .model import Finding, Position, SchemaColumn, SchemaHistory, Version
from .sqltext import leading_words
from .types import Uninterpretable, table_default

_OPTIONS_ONLY = re.compile(
    r"^\s*ALTER\s+(?:ONLINE\s+|IGNORE\s+)*TABLE\s+(?:IF\s+EXISTS\s+)?(?:`(?:[^`]|``)+`|[\w$.]+)"
    r"(?:\s*\.\s*(?:`(?:[^`]|``)+`|[\w$]+))?\s*(?:(?:,\s*)?(?:ENGINE|AUTO_INCREMENT|COMMENT|"
    r"ROW_FORMAT|KEY_BLOCK_SIZE|STATS_\w+|PACK_KEYS|CHECKSUM|ALGORITHM|LOCK|MAX_ROWS|MIN_ROWS|"
    r"(?:DEFAULT\s+)?(?:CHARACTER\s+SET|CHARSET|COLLATE)|PAGE_CHECKSUM|TRANSACTIONAL|"
    r"ENCRYPTED|ENCRYPTION|COMPRESSION)\s*=?\s*(?:'[^']*'|[\w$]+)\s*|(?:,\s*)?(?:ORDER\s+BY\s+"
    r"[\w`, ]+|FORCE))*;?\s*$", re.I | re.S)


class Ctx:
    """Where the statement is: its file, position, default database, server."""

    def __init__(self, history: SchemaHistory, file: str | None, pos: Position,
                 db: str | None, ddl: str) -> None:
        self.h = history
        self.file = file
        self.pos = pos
        self.db = db or ""
        self.ddl = ddl

    def finding(self, kind: str, message: str, table: str | None = None) -> None:
        self.h.findings.append(Finding(kind, message, self.file, self.pos, self.ddl, table))

    def latest(self, db: str, table: str) -> Version | None:
        return self.h.latest(db, table)

    def incarnation(self, db: str, table: str) -> int:
        v = self.h.latest(db, table)
        return v.incarnation + 1 if v else 1

    def put(self, db: str, table: str, change: str, columns: tuple[SchemaColumn, ...] | None,
            pk: tuple[str, ...] = (), *, exists: bool = True, new: bool = False,
            default: tuple[str | None, str | None] | None = None,
            renamed: tuple[tuple[str, str], ...] = ()) -> None:
        """A new version.  ``default``: the table's default (character set, collation); when
        not given, a version of a table that goes on (same incarnation, columns known) keeps
        the previous one's, others have none."""
        prev = self.h.latest(db, table)
        inc = self.incarnation(db, table) if new else (prev.incarnation if prev else 1)
        if default is None:
            keep = (not new and exists and columns is not None and prev is not None
                    and prev.exists and prev.columns is not None)
            default = (prev.charset, prev.collation) if keep and prev is not None \
                else (None, None)
        self.h.add(Version(db, table, inc, self.pos, self.file, self.ddl, change, columns,
                           tuple(pk), exists, default[0], default[1], renamed))

    def db_default(self, db: str) -> tuple[str | None, str | None]:
        """The default (character set, collation) of database ``db`` as far as known."""
        d = self.h.database(db)
        return (d.charset, d.collation) if d is not None and d.exists else (None, None)

    def unknown(self, db: str, table: str, change: str = "unknown") -> None:
        prev = self.h.latest(db, table)
        new = prev is None or not prev.exists
        self.put(db, table, change, None, new=new)


def options_default(ctx: Ctx, options: list[Any], base: tuple[str | None, str | None],
                    db: str) -> tuple[str | None, str | None]:
    """A table's default (character set, collation) after its options (sqlglot's
    ``CharacterSetProperty`` / ``CollateProperty`` of a CREATE or ALTER TABLE): ``base`` (the
    database's default for a CREATE, the table's for an ALTER) changed by them;
    ``CHARACTER SET DEFAULT`` is the database's."""
    from sqlglot import exp

    cs = coll = None
    for p in options:
        if isinstance(p, exp.CharacterSetProperty):
            cs = p.this.name
        elif isinstance(p, exp.CollateProperty):
            coll = p.this.name
    if coll is not None and coll.lower() == "default":
        coll = None
    if cs is not None and cs.lower() == "default":
        if coll is None:
            return ctx.db_default(db)
        cs = ctx.db_default(db)[0]
    return table_default(cs, coll, base)


def _names_in(text: str) -> list[tuple[str, str]]:
    """The table a CREATE/ALTER/TRUNCATE names (for marking it unknown), when it can be told
    from the tokens: the name after TABLE [IF [NOT] EXISTS]."""
    from sqlglot.dialects.mysql import MySQL

    try:
        toks = MySQL().tokenize(text)
    except Exception:
        return []
    words = [t.text for t in toks]
    up = [w.upper() for w in words]
    if "TABLE" not in up:
        return []
    i = up.index("TABLE") + 1
    while i < len(up) and up[i] in ("IF", "NOT", "EXISTS"):
        i += 1
    if i >= len(toks):
        return []
    if i + 2 < len(toks) and words[i + 1] == ".":
        return [(words[i], words[i + 2])]
    return [("", words[i])]


def _not_interpreted(ctx: Ctx, text: str, why: str, kind: str) -> None:
    names = [] if leading_words(text, 1)[0] == "DROP" else _names_in(text)
    tables = [f"{d or ctx.db}.{t}" for d, t in names]
    ctx.finding(kind, f"DDL not interpreted ({why}); "
                + (f"the schema of {', '.join(tables)} is unknown from here" if tables
                   else "no table could be told from it"), tables[0] if tables else None)
    for d, t in names:
        ctx.unknown(d or ctx.db, t)


def _tname(ctx: Ctx, table: Any) -> tuple[str, str]:
    return (table.db or ctx.db, table.name)


def check_no_functional_key(node: Any) -> None:
    """MySQL 8 functional key parts (``INDEX ((a+1))``) add a hidden generated column that
    Table_maps carry; where it sits is not interpreted here."""
    from sqlglot import exp

    for k in node.find_all(exp.IndexColumnConstraint, exp.UniqueColumnConstraint,
                           exp.PrimaryKey, exp.IndexParameters):
        parts = list(k.expressions or [])
        if isinstance(k, exp.IndexParameters):
            parts = list(k.args.get("columns") or [])
        if isinstance(k.this, exp.Schema):
            parts += list(k.this.expressions)
        for p in parts:
            if isinstance(p, exp.Ordered):
                p = p.this
            if isinstance(p, exp.Paren):
                raise Uninterpretable("a functional key part (MySQL 8 adds a hidden "
                                      "generated column for it)")


def pk_names(pk: Any) -> tuple[str, ...]:
    from sqlglot import exp

    out = []
    for x in pk.expressions:
        if isinstance(x, exp.ColumnPrefix):
            x = x.this
        if isinstance(x, exp.Ordered):
            x = x.this
        out.append(x.name)
    return tuple(out)


def pk_not_null(cols: list[SchemaColumn], pk: tuple[str, ...]) -> list[SchemaColumn]:
    """Primary key columns are NOT NULL (the server makes them so)."""
    low = {p.lower() for p in pk}
    return [replace(c, nullable=False) if c.name.lower() in low else c for c in cols]


def rename(ctx: Ctx, old: tuple[str, str], new: tuple[str, str]) -> None:
    prev = ctx.latest(*old)
    cols: tuple[SchemaColumn, ...] | None
    pk: tuple[str, ...]
    default: tuple[str | None, str | None] | None = None
    if prev is None or not prev.exists:
        ctx.finding("unknown_table", f"rename of {old[0]}.{old[1]} to {new[0]}.{new[1]}: the "
                    "history does not hold the source", f"{new[0]}.{new[1]}")
        cols, pk = None, ()
    else:
        cols, pk = prev.columns, prev.primary_key
        default = (prev.charset, prev.collation) if cols is not None else None
        ctx.put(*old, "rename_out", None, exists=False)
        ctx.h.renames.append((ctx.pos, old, new))
    ctx.put(*new, "rename_in", cols, pk, new=True, default=default)
