"""ALTER TABLE actions (sqlglot's MySQL reading) applied to the version in force: ADD /
DROP / MODIFY / CHANGE / RENAME COLUMN with FIRST/AFTER, ALTER COLUMN (defaults,
visibility), primary key add/drop, index and table options (the default character set
among them), RENAME TO.  Anything else is not interpreted: a finding, and the table's schema
is unknown from there."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .model import SchemaColumn
from .state import (
    _OPTIONS_ONLY,
    Ctx,
    _not_interpreted,
    _tname,
    check_no_functional_key,
    options_default,
    pk_names,
    pk_not_null,
    rename,
)
from .types import Uninterpretable, column_from_def, with_default


def apply_alter(ctx: Ctx, tree: Any, text: str) -> None:
    from sqlglot import exp

    name = _tname(ctx, tree.this)
    actions = tree.args.get("actions") or []
    if not actions and not _OPTIONS_ONLY.match(text):
        _not_interpreted(ctx, text, "sqlglot found no action in it", "uninterpreted")
        return
    prev = ctx.latest(*name)
    if prev is None or not prev.exists or prev.columns is None:
        if tree.args.get("exists") and prev is not None and not prev.exists:
            return  # ALTER TABLE IF EXISTS of a dropped table: nothing happens
        ctx.finding("unknown_table", f"ALTER TABLE {name[0]}.{name[1]}: the history does not "
                    "hold the table's schema", f"{name[0]}.{name[1]}")
        ctx.unknown(*name, "alter")
        return
    cols = list(prev.columns)
    pk = list(prev.primary_key)
    rename_to = None
    renamed: list[tuple[str, str]] = []
    # [DEFAULT] CHARACTER SET / COLLATE: the table's default for the columns this statement
    # (wherever they stand in it) and later ones add or redefine without their own; the
    # columns the table has keep theirs (CONVERT TO CHARACTER SET is not interpreted)
    default = options_default(ctx, list(tree.args.get("options") or []),
                              (prev.charset, prev.collation), name[0])
    try:
        for a in actions:
            if isinstance(a, exp.ColumnDef):
                c, inline_pk = column_from_def(a)
                c = with_default(c, default)
                if _find(cols, c.name) is not None:
                    if a.args.get("exists"):
                        continue
                    raise Uninterpretable(f"ADD COLUMN {c.name!r}, which the version holds")
                _place(cols, c, a.args.get("position"), None)
                if inline_pk:
                    pk = [c.name]
            elif isinstance(a, exp.ModifyColumn):
                cd = a.this
                old = a.args.get("rename_from")
                old_name = old.name if old is not None else cd.this.name
                i = _find(cols, old_name)
                if i is None:
                    raise Uninterpretable(f"MODIFY/CHANGE of column {old_name!r}, which the "
                                          "version does not hold")
                c, inline_pk = column_from_def(cd)
                if c.name.lower() != old_name.lower():  # CHANGE old new
                    renamed.append((cols[i].name, c.name))
                c = with_default(c, default)  # a redefined column without one: the table's
                pos = cd.args.get("position")
                if pos is None:
                    cols[i] = c
                else:
                    del cols[i]
                    _place(cols, c, pos, None)
                pk = [c.name if p.lower() == old_name.lower() else p for p in pk]
                if inline_pk:
                    pk = [c.name]
            elif isinstance(a, exp.RenameColumn):
                old_name, new_name = a.this.name, a.args["to"].name
                i = _find(cols, old_name)
                if i is None:
                    if a.args.get("exists"):
                        continue
                    raise Uninterpretable(f"RENAME COLUMN {old_name!r}, which the version "
                                          "does not hold")
                renamed.append((cols[i].name, new_name))
                cols[i] = replace(cols[i], name=new_name)
                pk = [new_name if p.lower() == old_name.lower() else p for p in pk]
            elif isinstance(a, exp.Drop):
                kind = (a.args.get("kind") or "").upper()
                target = a.args["tables"][0].name if a.args.get("tables") else ""
                if kind == "COLUMN":
                    i = _find(cols, target)
                    if i is None:
                        if a.args.get("exists"):
                            continue
                        raise Uninterpretable(f"DROP COLUMN {target!r}, which the version "
                                              "does not hold")
                    del cols[i]
                    # MySQL drops the column from its indexes; a key left empty goes
                    pk = [p for p in pk if p.lower() != target.lower()]
                elif kind in ("INDEX", "KEY") and target.upper() == "PRIMARY":
                    pk = []
                elif kind in ("INDEX", "KEY", "FOREIGN KEY", "CONSTRAINT", "CHECK"):
                    pass
                else:
                    raise Uninterpretable(f"DROP {kind} is not interpreted")
            elif isinstance(a, exp.DropPrimaryKey):
                pk = []
            elif isinstance(a, exp.AddConstraint):
                check_no_functional_key(a)
                found = a.find(exp.PrimaryKey)
                if found is not None:
                    pk = list(pk_names(found))
            elif isinstance(a, exp.AlterColumn):
                i = _find(cols, a.this.name)
                if i is None:
                    raise Uninterpretable(f"ALTER COLUMN {a.this.name!r}, which the version "
                                          "does not hold")
                if a.args.get("dtype") is not None or a.args.get("allow_null") is not None:
                    raise Uninterpretable("ALTER COLUMN changing a type or nullability")
                vis = a.args.get("visible")
                if vis is not None:
                    cols[i] = replace(cols[i], invisible=str(vis).upper() == "INVISIBLE")
                if a.args.get("drop"):  # DROP DEFAULT
                    cols[i] = replace(cols[i], default=None)
                elif a.args.get("default") is not None:  # SET DEFAULT
                    cols[i] = replace(cols[i], default=a.args["default"].sql("mysql"))
            elif isinstance(a, exp.AlterRename):
                rename_to = _tname(ctx, a.this)
            elif type(a).__name__ in ("RenameIndex", "ForceProperty", "AlterIndex"):
                pass
            else:
                raise Uninterpretable(f"ALTER TABLE action {type(a).__name__} is not "
                                      "interpreted")
    except Uninterpretable as exc:
        ctx.finding("uninterpreted", f"ALTER TABLE {name[0]}.{name[1]} not interpreted "
                    f"({exc}); the schema is unknown from here", f"{name[0]}.{name[1]}")
        ctx.unknown(*name, "alter")
        return
    for p in pk:
        if _find(cols, p) is None:
            ctx.finding("uninterpreted", f"ALTER TABLE {name[0]}.{name[1]}: primary key column "
                        f"{p!r} not in the table; the schema is unknown from here",
                        f"{name[0]}.{name[1]}")
            ctx.unknown(*name, "alter")
            return
    ctx.put(*name, "alter", tuple(pk_not_null(cols, tuple(pk))), tuple(pk), default=default,
            renamed=tuple(renamed))
    if rename_to is not None and (rename_to[0].lower(), rename_to[1].lower()) != \
            (name[0].lower(), name[1].lower()):
        rename(ctx, name, rename_to)


def _find(cols: list[SchemaColumn], name: str) -> int | None:
    for i, c in enumerate(cols):
        if c.name.lower() == name.lower():
            return i
    return None


def _place(cols: list[SchemaColumn], c: SchemaColumn, position: Any, _: Any) -> None:
    if position is None:
        cols.append(c)
        return
    where = (position.args.get("position") or "").upper()
    if where == "FIRST":
        cols.insert(0, c)
    elif where == "AFTER":
        after = position.this.name
        i = _find(cols, after)
        if i is None:
            raise Uninterpretable(f"AFTER {after!r}, which the version does not hold")
        cols.insert(i + 1, c)
    else:
        raise Uninterpretable(f"column position {where!r}")
