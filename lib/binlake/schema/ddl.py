"""Applying one DDL statement to a :class:`SchemaHistory`: CREATE TABLE (LIKE, ... SELECT,
OR REPLACE, IF NOT EXISTS), ALTER TABLE (ADD/DROP/MODIFY/CHANGE/RENAME COLUMN, FIRST/AFTER,
primary key add/drop, RENAME TO, index and table options), RENAME TABLE, DROP TABLE, DROP
DATABASE, TRUNCATE, CREATE/DROP INDEX.  Parsing is sqlglot's MySQL dialect; a statement it
cannot parse, or parses into something not interpreted here, is a finding, and the tables it
names (when they can be told) get a version whose columns are unknown -- never a guess.

Before parsing (all faithful rewrites): versioned comments are expanded for the server's
version (:mod:`.sqltext`); a CREATE TABLE's top-level ``PARTITION BY`` clause is cut (it
does not change columns; sqlglot cannot parse ``ENGINE=`` inside partition definitions);
MySQL 8's trailing ``START TRANSACTION`` of an atomic CREATE ... SELECT is cut; MariaDB's
``PERSISTENT`` (a synonym of ``STORED``) is read as ``STORED``."""

from __future__ import annotations

import re
from typing import Any

from .model import Position, SchemaColumn, SchemaHistory
from .sqltext import ddl_kind, expand_versioned, is_temporary, leading_words
from .state import (
    Ctx,
    _names_in,
    _not_interpreted,
    _tname,
    check_no_functional_key,
    pk_names,
    pk_not_null,
    rename,
)
from .types import MISREAD_TYPE_WORDS, Uninterpretable, column_from_def

_NO_COLUMN_CHANGE = re.compile(
    r"^\s*ALTER\s+(?:ONLINE\s+|IGNORE\s+)*TABLE\s+(?:IF\s+EXISTS\s+)?\S+\s+(?:(?:ALGORITHM|LOCK)"
    r"\s*=?\s*\w+\s*,?\s*)*(?:ADD|DROP|COALESCE|REORGANIZE|EXCHANGE|ANALYZE|CHECK|OPTIMIZE|"
    r"REBUILD|REPAIR|TRUNCATE|DISCARD|IMPORT|CONVERT)\s+PARTITION\b|^\s*ALTER\s+TABLE\s+\S+\s+"
    r"(?:REMOVE\s+PARTITIONING|PARTITION\s+BY|(?:DISABLE|ENABLE)\s+KEYS\s*$|(?:DISCARD|IMPORT)"
    r"\s+TABLESPACE\s*$)", re.I | re.S)


def apply_ddl(history: SchemaHistory, sql: str, *, db: str | None, pos: Position,
              file: str | None = None, server_version: int = 999999,
              mariadb: bool = False) -> bool:
    """Apply one statement; False when it is not DDL that concerns tables."""
    text = expand_versioned(sql, server_version, mariadb).strip().rstrip(";").strip()
    kind = ddl_kind(text)
    if kind is None or kind == "other":
        return kind == "other"
    if is_temporary(text):
        return True  # temporary tables are not part of the schema history
    if kind == "database" and leading_words(text, 1) != ["DROP"]:
        return True  # CREATE / ALTER DATABASE change no table
    ctx = Ctx(history, file, pos, db, sql)
    words = leading_words(text, 3)
    if kind == "table" and words[0] == "ALTER" and _NO_COLUMN_CHANGE.match(text):
        _touch(ctx, _alter_target(text, ctx), "alter")
        return True
    if kind == "table" and words[0] == "RENAME":
        _rename_table(ctx, text)
        return True
    prepared = _prepare(text)
    bad = _misread_words(prepared)
    if bad:
        _not_interpreted(ctx, text, f"uses the type word {bad}, which sqlglot reads as "
                         "another type", "uninterpreted")
        return True
    try:
        import sqlglot
        from sqlglot.errors import SqlglotError

        try:
            tree = sqlglot.parse_one(prepared, read="mysql")
        except SqlglotError as exc:
            _not_interpreted(ctx, text, f"sqlglot cannot parse it: {_plain(exc)}",
                             "unparsed")
            return True
        if type(tree).__name__ == "Command":  # sqlglot's fallback: it could not parse it
            _not_interpreted(ctx, text, "sqlglot cannot parse it (read as a bare command)",
                             "unparsed")
            return True
        _apply_tree(ctx, tree, text)
    except Uninterpretable as exc:
        _not_interpreted(ctx, text, str(exc), "uninterpreted")
    return True


def _plain(exc: Exception) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).replace("\n", " ")[:200]


def _prepare(text: str) -> str:
    from sqlglot.dialects.mysql import MySQL

    toks = MySQL().tokenize(text)
    cuts: list[tuple[int, int, str]] = []
    depth = 0
    create_table = leading_words(text, 1) == ["CREATE"]
    for i, t in enumerate(toks):
        tt = t.token_type.name
        if tt == "L_PAREN":
            depth += 1
        elif tt == "R_PAREN":
            depth -= 1
        elif (depth == 0 and create_table and tt == "PARTITION_BY") or (depth == 0 and t.text.upper() == "START" and i + 1 < len(toks) and \
                toks[i + 1].text.upper() == "TRANSACTION" and i + 2 == len(toks)):
            cuts.append((t.start, len(text), ""))
            break
        elif t.text.upper() == "PERSISTENT" and tt != "IDENTIFIER":
            cuts.append((t.start, t.end + 1, "STORED"))
    for a, b, rep in reversed(cuts):
        text = text[:a] + rep + text[b:]
    return text


def _misread_words(text: str) -> str | None:
    from sqlglot.dialects.mysql import MySQL

    for t in MySQL().tokenize(text):
        if t.token_type.name != "IDENTIFIER" and t.text.upper() in MISREAD_TYPE_WORDS:
            return t.text.upper()
    return None


def _alter_target(text: str, ctx: Ctx) -> tuple[str, str]:
    names = _names_in(text)
    d, t = names[0] if names else ("", "")
    return (d or ctx.db, t)


def _touch(ctx: Ctx, name: tuple[str, str], change: str) -> None:
    """A DDL that does not change columns: a new version with the same columns."""
    prev = ctx.latest(*name)
    if prev is None or not prev.exists:
        ctx.finding("unknown_table", f"{change} of {name[0]}.{name[1]}, which the history "
                    "does not hold", f"{name[0]}.{name[1]}")
        ctx.unknown(*name, change)
        return
    ctx.put(*name, change, prev.columns, prev.primary_key)


def _apply_tree(ctx: Ctx, tree: Any, text: str) -> None:
    from sqlglot import exp

    if isinstance(tree, exp.Create):
        k = (tree.args.get("kind") or "").upper()
        if k == "TABLE":
            _create_table(ctx, tree)
        elif k == "INDEX":
            idx = tree.this
            tbl = idx.args.get("table") if isinstance(idx, exp.Index) else None
            if tbl is None:
                raise Uninterpretable("CREATE INDEX without a table sqlglot understood")
            check_no_functional_key(idx)
            _touch(ctx, _tname(ctx, tbl), "index")
        return  # CREATE DATABASE/SCHEMA: no table changes
    if isinstance(tree, exp.Drop):
        k = (tree.args.get("kind") or "").upper()
        if k == "TABLE":
            for t in tree.args.get("tables") or []:
                d, n = _tname(ctx, t)
                prev = ctx.latest(d, n)
                if prev is not None and not prev.exists:
                    continue  # DROP ... IF EXISTS of a dropped table: nothing happens
                ctx.put(d, n, "drop", None, exists=False)
        elif k in ("DATABASE", "SCHEMA"):
            name = tree.args["tables"][0].name.lower() if tree.args.get("tables") else ""
            for v in list(ctx.h.current().values()):
                if v.db.lower() == name:
                    ctx.put(v.db, v.table, "drop", None, exists=False)
        elif k == "INDEX":
            cluster = tree.args.get("cluster")
            on = re.match(r"^\s*ON\s+(.*)$", cluster.sql("mysql") if cluster is not None
                          else "", re.I | re.S)
            if on is None:
                raise Uninterpretable("DROP INDEX without a table sqlglot understood")
            tbl = exp.to_table(on.group(1), dialect="mysql")
            name = _tname(ctx, tbl)
            idx = tree.args["tables"][0].name
            prev = ctx.latest(*name)
            if idx.upper() == "PRIMARY" and prev is not None and prev.exists:
                ctx.put(*name, "alter", prev.columns, ())
            else:
                _touch(ctx, name, "index")
        return
    if isinstance(tree, exp.TruncateTable):
        for t in tree.expressions:
            _touch(ctx, _tname(ctx, t), "truncate")
        return
    if isinstance(tree, exp.Alter) and (tree.args.get("kind") or "").upper() == "TABLE":
        from .alter import apply_alter

        apply_alter(ctx, tree, text)
        return
    raise Uninterpretable(f"sqlglot read it as {type(tree).__name__}")


def _create_table(ctx: Ctx, tree: Any) -> None:
    from sqlglot import exp

    schema = tree.this
    table = schema.this if isinstance(schema, exp.Schema) else schema
    d, n = _tname(ctx, table)
    prev = ctx.latest(d, n)
    if tree.args.get("exists") and prev is not None and prev.exists:
        ctx.put(d, n, "create_skipped", prev.columns, prev.primary_key)
        return
    props = tree.args.get("properties")
    like = [p for p in (props.expressions if props else []) if isinstance(p, exp.LikeProperty)]
    if like:
        src = _tname(ctx, like[0].this)
        sv = ctx.latest(*src)
        if sv is None or not sv.exists or sv.columns is None:
            ctx.finding("unknown_table", f"CREATE TABLE {d}.{n} LIKE {src[0]}.{src[1]}: the "
                        "source's schema is not known", f"{d}.{n}")
            ctx.put(d, n, "create", None, new=True)
            return
        ctx.put(d, n, "create", sv.columns, sv.primary_key, new=True)
        return
    select = tree.args.get("expression")
    if not isinstance(schema, exp.Schema):
        if select is not None:
            ctx.finding("create_select", f"CREATE TABLE {d}.{n} ... SELECT without a column "
                        "list: its columns come from the SELECT and are not known", f"{d}.{n}")
        else:
            ctx.finding("uninterpreted", f"CREATE TABLE {d}.{n} without columns", f"{d}.{n}")
        ctx.put(d, n, "create", None, new=True)
        return
    check_no_functional_key(schema)
    cols, pk = table_elements(schema.expressions)
    if select is not None:
        ctx.finding("create_select", f"CREATE TABLE {d}.{n} ... SELECT: the version holds "
                    "the declared columns; columns the SELECT adds are not known", f"{d}.{n}")
    ctx.put(d, n, "create", tuple(cols), pk, new=True)


def table_elements(elements: list[Any]) -> tuple[list[SchemaColumn], tuple[str, ...]]:
    """Columns and primary key of a CREATE TABLE's element list."""
    from sqlglot import exp

    cols: list[SchemaColumn] = []
    pk: tuple[str, ...] = ()
    for e in elements:
        if isinstance(e, exp.ColumnDef):
            c, inline_pk = column_from_def(e)
            cols.append(c)
            if inline_pk:
                pk = (c.name,)
        else:
            found = e if isinstance(e, exp.PrimaryKey) else e.find(exp.PrimaryKey)
            if found is not None:
                pk = pk_names(found)
    return pk_not_null(cols, pk), pk


def _rename_table(ctx: Ctx, text: str) -> None:
    from sqlglot.dialects.mysql import MySQL

    m = re.match(r"^\s*RENAME\s+TABLES?\s+", text, re.I)
    toks = MySQL().tokenize(text[m.end():]) if m else []
    words = [(t.text, t.token_type.name) for t in toks]
    i = 0
    pairs: list[tuple[tuple[str, str], tuple[str, str]]] = []
    if_exists = False
    try:
        if i + 1 < len(words) and [w[0].upper() for w in words[:2]] == ["IF", "EXISTS"]:
            if_exists, i = True, 2  # MariaDB 10.5+: pairs whose source is missing are skipped
        while i < len(words):
            old, i = _read_name(words, i, ctx.db)
            if words[i][0].upper() != "TO":
                raise Uninterpretable(f"expected TO, found {words[i][0]!r}")
            new, i = _read_name(words, i + 1, ctx.db)
            pairs.append((old, new))
            if i < len(words):
                if words[i][0] not in (",",):
                    raise Uninterpretable(f"unexpected {words[i][0]!r}")
                i += 1
    except (Uninterpretable, IndexError) as exc:
        named = [(w, words[j + 2][0] if j + 2 < len(words) and words[j + 1][0] == "." else None)
                 for j, (w, t) in enumerate(words) if t in ("VAR", "IDENTIFIER")
                 and w.upper() not in ("TO", "IF", "EXISTS")
                 and (j == 0 or words[j - 1][0] != ".")]
        tables = [(a, b) if b is not None else (ctx.db, a) for a, b in named]
        ctx.finding("uninterpreted", f"RENAME TABLE not interpreted ({exc or 'truncated'}); "
                    "the tables it names are unknown from here: "
                    + ", ".join(f"{d}.{t}" for d, t in tables))
        for d, t in tables:
            ctx.unknown(d, t)
        return
    for old, new in pairs:
        prev = ctx.latest(*old)
        if if_exists and prev is not None and not prev.exists:
            continue
        rename(ctx, old, new)


def _read_name(words: list[tuple[str, str]], i: int, db: str) -> tuple[tuple[str, str], int]:
    a = words[i][0]
    if words[i][1] not in ("VAR", "IDENTIFIER") and not words[i][0].isidentifier():
        raise Uninterpretable(f"expected a table name, found {a!r}")
    if i + 2 < len(words) and words[i + 1][0] == ".":
        return (a, words[i + 2][0]), i + 3
    return (db, a), i + 1


