"""Applying one DDL statement to a :class:`SchemaHistory`: CREATE TABLE (LIKE, ... SELECT,
OR REPLACE, IF NOT EXISTS), ALTER TABLE (ADD/DROP/MODIFY/CHANGE/RENAME COLUMN, FIRST/AFTER,
primary key add/drop, RENAME TO, index and table options), RENAME TABLE, DROP TABLE, DROP
DATABASE, TRUNCATE, CREATE/DROP INDEX, and CREATE [OR REPLACE] / ALTER DATABASE (the
database's default character set).  Parsing is sqlglot's MySQL dialect; a statement it
cannot parse, or parses into something not interpreted here, is a finding, and the tables it
names (when they can be told) get a version whose columns are unknown -- never a guess.

Character sets: a text column without its own (``CHARACTER SET``, or the one its
``COLLATE`` names) takes its table's default, which is the table's options' or else its
database's default at the CREATE (:attr:`SchemaHistory.databases`); ``ALTER TABLE ...
CHARACTER SET`` changes it for the columns added or redefined from then on.  A default
not named in the DDL is not known (None), never guessed.

Before parsing (all faithful rewrites): versioned comments are expanded for the server's
version (:mod:`.sqltext`); a CREATE TABLE's top-level ``PARTITION BY`` clause is cut (it
does not change columns; sqlglot cannot parse ``ENGINE=`` inside partition definitions);
MySQL 8's trailing ``START TRANSACTION`` of an atomic CREATE ... SELECT is cut; MariaDB's
``PERSISTENT`` (a synonym of ``STORED``) is read as ``STORED``; SIGNED / UNSIGNED / ZEROFILL
after a numeric type are written as sqlglot parses them (:func:`_field_options`: ``FLOAT
UNSIGNED`` as ``FLOAT ZEROFILL``, read as unsigned)."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from .model import Database, Position, SchemaColumn, SchemaHistory
from .sqltext import ddl_kind, expand_versioned, is_temporary, leading_words
from .state import (
    Ctx,
    _names_in,
    _not_interpreted,
    _tname,
    check_no_functional_key,
    options_default,
    pk_names,
    pk_not_null,
    rename,
)
from .types import (
    MISREAD_TYPE_WORDS,
    TEXT_BASES,
    Uninterpretable,
    column_from_def,
    table_default,
    with_default,
)

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
    ctx = Ctx(history, file, pos, db, sql)
    if kind == "database" and leading_words(text, 1) != ["DROP"]:
        _database(ctx, text)  # CREATE / ALTER DATABASE: its default character set
        return True
    words = leading_words(text, 3)
    if kind == "table" and words[0] == "ALTER" and _NO_COLUMN_CHANGE.match(text):
        _touch(ctx, _alter_target(text, ctx), "alter")
        return True
    if kind == "table" and words[0] == "RENAME":
        _rename_table(ctx, text)
        return True
    conv = _CONVERT.match(text)
    if kind == "table" and conv is not None:
        _convert_to(ctx, conv)
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
    cuts: list[tuple[int, int, str]] = _field_options(toks)
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
    kept: list[tuple[int, int, str]] = []
    for cut in sorted(cuts):
        if not kept or cut[0] >= kept[-1][1]:
            kept.append(cut)
    for a, b, rep in reversed(kept):
        text = text[:a] + rep + text[b:]
    return text


# numeric type words that take SIGNED / UNSIGNED / ZEROFILL (FLOAT/FLOAT4 apart)
_NUMERIC_WORDS = frozenset({"TINYINT", "SMALLINT", "MEDIUMINT", "INT", "INTEGER", "BIGINT",
                            "INT1", "INT2", "INT3", "INT4", "INT8", "MIDDLEINT", "DOUBLE",
                            "FLOAT8", "REAL", "DECIMAL", "DEC", "NUMERIC", "FIXED"})
_FLOAT_WORDS = frozenset({"FLOAT", "FLOAT4"})
_FIELD_OPTIONS = frozenset({"SIGNED", "UNSIGNED", "ZEROFILL"})
_WORD = ("IDENTIFIER", "STRING")  # token types of quoted names and strings: never keywords


def _field_options(toks: list[Any]) -> list[tuple[int, int, str]]:
    """Rewrites of the SIGNED / UNSIGNED / ZEROFILL words after a numeric type, to forms
    sqlglot parses.  MySQL takes them in any order and number: SIGNED does nothing, UNSIGNED
    makes the column unsigned, ZEROFILL zero-filled and unsigned.  sqlglot parses one
    UNSIGNED, then ZEROFILL (``UNSIGNED ZEROFILL``), and no UNSIGNED after FLOAT ("cannot
    convert FLOAT to unsigned"): a run becomes ``UNSIGNED [ZEROFILL]``, or nothing, and after
    FLOAT ``ZEROFILL``, which binlake reads as unsigned (it does not model zero-filling:
    the column's model is the one ``FLOAT UNSIGNED`` means)."""
    cuts: list[tuple[int, int, str]] = []
    n = len(toks)
    for i, t in enumerate(toks):
        word = t.text.upper().split()[0] if t.text.strip() else ""  # "DOUBLE PRECISION"
        if t.token_type.name in _WORD or word not in (_NUMERIC_WORDS | _FLOAT_WORDS):
            continue
        j = i + 1
        if word == "DOUBLE" and j < n and toks[j].text.upper() == "PRECISION":
            j += 1
        if j < n and toks[j].token_type.name == "L_PAREN":
            depth = 0
            while j < n:
                tt = toks[j].token_type.name
                depth += tt == "L_PAREN"
                depth -= tt == "R_PAREN"
                j += 1
                if depth == 0:
                    break
        k = j
        while k < n and toks[k].token_type.name not in _WORD \
                and toks[k].text.upper() in _FIELD_OPTIONS:
            k += 1
        if k == j:
            continue
        run = [x.text.upper() for x in toks[j:k]]
        unsigned = "UNSIGNED" in run or "ZEROFILL" in run
        if word in _FLOAT_WORDS:
            want = ["ZEROFILL"] if unsigned else []
        else:
            want = (["UNSIGNED"] if "UNSIGNED" in run else []) + \
                (["ZEROFILL"] if "ZEROFILL" in run else [])
        if run != want:
            cuts.append((toks[j].start, toks[k - 1].end + 1, " ".join(want)))
    return cuts


def _misread_words(text: str) -> str | None:
    from sqlglot.dialects.mysql import MySQL

    for t in MySQL().tokenize(text):
        if t.token_type.name != "IDENTIFIER" and t.text.upper() in MISREAD_TYPE_WORDS:
            return t.text.upper()
    return None


_IDENT = r"(?:`(?:[^`]|``)+`|[\w$]+)"
# ALTER TABLE t CONVERT TO CHARACTER SET x [COLLATE y], the statement's only action (sqlglot
# cannot parse it)
_CONVERT = re.compile(
    rf"^\s*ALTER\s+(?:ONLINE\s+)?(?:IGNORE\s+)?TABLE\s+(?P<name>{_IDENT}(?:\s*\.\s*{_IDENT})?)"
    r"\s+CONVERT\s+TO\s+(?:CHARACTER\s+SET|CHARSET)\s*=?\s*(?P<cs>\w+)"
    r"(?:\s+COLLATE\s*=?\s*(?P<coll>\w+))?\s*$", re.I | re.S)


def _convert_to(ctx: Ctx, m: re.Match[str]) -> None:
    """``CONVERT TO CHARACTER SET``: every character column (CHAR, VARCHAR, TEXT types,
    ENUM, SET) takes the character set (and collation), and so does the table's default.
    The server may also promote a TEXT column to a bigger TEXT type to keep its length in
    characters: that changes no binlog type code (every TEXT is BLOB) and is not modelled in
    the version's type text."""
    name = _alter_target(m.string, ctx)
    prev = ctx.latest(*name)
    if prev is None or not prev.exists or prev.columns is None:
        ctx.finding("unknown_table", f"ALTER TABLE {name[0]}.{name[1]}: the history does not "
                    "hold the table's schema", f"{name[0]}.{name[1]}")
        ctx.unknown(*name, "alter")
        return
    cs, coll = m.group("cs").lower(), m.group("coll")
    if cs == "default":
        cs, dcoll = ctx.db_default(name[0])
        coll = coll or dcoll
        if cs is None:
            _not_interpreted(ctx, ctx.ddl, "CONVERT TO CHARACTER SET DEFAULT of a database "
                             "whose default is not known", "uninterpreted")
            return
    coll = coll.lower() if coll else None
    cols = tuple(replace(c, charset=cs, collation=coll) if c.base in TEXT_BASES else c
                 for c in prev.columns)
    ctx.put(*name, "alter", cols, prev.primary_key, default=(cs, coll))


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
            name = tree.args["tables"][0].name if tree.args.get("tables") else ""
            if name:
                _drop_database(ctx, name)
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
    options = list(props.expressions) if props else []
    like = [p for p in options if isinstance(p, exp.LikeProperty)]
    if like:
        src = _tname(ctx, like[0].this)
        sv = ctx.latest(*src)
        if sv is None or not sv.exists or sv.columns is None:
            ctx.finding("unknown_table", f"CREATE TABLE {d}.{n} LIKE {src[0]}.{src[1]}: the "
                        "source's schema is not known", f"{d}.{n}")
            ctx.put(d, n, "create", None, new=True)
            return
        ctx.put(d, n, "create", sv.columns, sv.primary_key, new=True,
                default=(sv.charset, sv.collation))
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
    # the table's default character set: its options', else its database's
    default = options_default(ctx, options, ctx.db_default(d), d)
    cols, pk = table_elements(schema.expressions, default)
    if select is not None:
        ctx.finding("create_select", f"CREATE TABLE {d}.{n} ... SELECT: the version holds "
                    "the declared columns; columns the SELECT adds are not known", f"{d}.{n}")
    ctx.put(d, n, "create", tuple(cols), pk, new=True, default=default)


def table_elements(elements: list[Any],
                   default: tuple[str | None, str | None] | None = None
                   ) -> tuple[list[SchemaColumn], tuple[str, ...]]:
    """Columns and primary key of a CREATE TABLE's element list; ``default``: the table's
    default (character set, collation), which text columns without their own take."""
    from sqlglot import exp

    cols: list[SchemaColumn] = []
    pk: tuple[str, ...] = ()
    for e in elements:
        if isinstance(e, exp.ColumnDef):
            c, inline_pk = column_from_def(e)
            c = with_default(c, default)
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




def _drop_database(ctx: Ctx, name: str) -> None:
    """DROP DATABASE (and the drop of CREATE OR REPLACE DATABASE): every table of it."""
    for v in list(ctx.h.current().values()):
        if v.db.lower() == name.lower():
            ctx.put(v.db, v.table, "drop", None, exists=False)
    ctx.h.databases[name.lower()] = Database(name, exists=False, start=ctx.pos)


_DB_SYMBOLS = frozenset({"EQ", "COMMA", "L_PAREN", "R_PAREN", "SEMICOLON", "DOT", "STRING",
                         "NUMBER"})


def _database(ctx: Ctx, text: str) -> None:
    """CREATE [OR REPLACE] DATABASE [IF NOT EXISTS] d [options], ALTER DATABASE [d] options:
    the database's default character set and collation, which a CREATE TABLE in it without
    its own takes.  A default not named (the server's, ``CHARACTER SET DEFAULT``) is not
    known.  A CREATE ... IF NOT EXISTS of a database the history cannot tell exists or not
    changes nothing (the server logs it either way)."""
    from sqlglot.dialects.mysql import MySQL

    try:
        toks = MySQL().tokenize(text)
    except Exception:
        toks = []
    words = [t.text.upper() if t.token_type.name not in _WORD else "" for t in toks]
    create = bool(words) and words[0] == "CREATE"
    i = 1
    replace = create and words[1:3] == ["OR", "REPLACE"]
    if replace:
        i = 3
    if i >= len(words) or words[i] not in ("DATABASE", "SCHEMA"):
        ctx.finding("uninterpreted", "database statement not interpreted")
        return
    i += 1
    if_not_exists = create and words[i:i + 3] == ["IF", "NOT", "EXISTS"]
    if if_not_exists:
        i += 3
    name: str | None = None
    opts = None if create else _db_options(toks, words, i)
    if opts is None and i < len(toks) and toks[i].token_type.name not in _DB_SYMBOLS:
        name = toks[i].text
        opts = _db_options(toks, words, i + 1)
    if name is None and not create:
        name = ctx.db or None
    if name is None:
        ctx.finding("uninterpreted", "database statement not interpreted: no database named")
        return
    key = name.lower()
    prev = ctx.h.databases.get(key)
    if opts is None:
        ctx.finding("uninterpreted", f"{'CREATE' if create else 'ALTER'} DATABASE {name} not "
                    "interpreted: the default character set of the database is unknown from "
                    "here")
        if replace:
            _drop_database(ctx, name)
        ctx.h.databases[key] = Database(name, start=ctx.pos)
        return
    cs, coll = opts
    # CHARACTER SET / COLLATE DEFAULT: the server's default, not known
    reset = any(x is not None and x.lower() == "default" for x in (cs, coll))
    if reset:
        cs = None if cs is not None and cs.lower() == "default" else cs
        coll = None if coll is not None and coll.lower() == "default" else coll
    if create:
        if if_not_exists:
            if prev is not None and prev.exists:
                return
            if prev is None:
                # it has tables (it exists), or may exist (created before the binlog):
                # whether its default changed cannot be told
                return
        if replace:
            _drop_database(ctx, name)
        default = table_default(cs, coll)
    else:
        base = (prev.charset, prev.collation) if prev is not None and prev.exists \
            and not reset else (None, None)
        default = table_default(cs, coll, base)
    ctx.h.databases[key] = Database(name, default[0], default[1], start=ctx.pos)


def _db_options(toks: list[Any], words: list[str], i: int
                ) -> tuple[str | None, str | None] | None:
    """(character set, collation) of CREATE / ALTER DATABASE options from token ``i`` (each
    None when not named); None when they are not all understood."""
    cs = coll = None
    n = len(toks)

    def value(j: int) -> tuple[str | None, int]:
        if j < n and toks[j].token_type.name == "EQ":
            j += 1
        if j >= n or toks[j].token_type.name in ("COMMA", "L_PAREN", "R_PAREN", "SEMICOLON"):
            return None, j
        return toks[j].text, j + 1

    while i < n:
        w = words[i]
        got: str | None
        if w == "DEFAULT":
            i += 1
            continue
        if (w == "CHARACTER" and i + 1 < n and words[i + 1] == "SET") or w == "CHARSET":
            got, i = value(i + (2 if w == "CHARACTER" else 1))
            if got is None:
                return None
            cs = got
        elif w == "COLLATE":
            got, i = value(i + 1)
            if got is None:
                return None
            coll = got
        elif w in ("ENCRYPTION", "COMMENT"):
            got, i = value(i + 1)
            if got is None:
                return None
        elif w == "READ" and i + 1 < n and words[i + 1] == "ONLY":
            got, i = value(i + 2)
            if got is None:
                return None
        elif words[i:i + 4] == ["UPGRADE", "DATA", "DIRECTORY", "NAME"]:
            i += 4
        else:
            return None
    return cs, coll
