"""Which tables are transactional: needed to know what a ROLLBACK (or ROLLBACK TO
SAVEPOINT) undid.  WL#2687: changes to non-transactional tables (MyISAM, Aria, MEMORY...)
happen at once and survive the rollback of the transaction that made them.

The binlog does not say a table's engine in its rows events, so the tracker learns it, in this
order of authority: what the user configured; ``CREATE TABLE ... ENGINE=`` / ``ALTER TABLE
... ENGINE=`` seen in the stream; groups that prove it (a group ended by an Xid event, or a
MariaDB GTID with the transactional flag, only has transactional tables).  Nothing in a
group proves a table non-transactional: MariaDB 10.11 ends the InnoDB part of a transaction
that also changed an Aria table with a COMMIT query and no transactional flag, exactly like a
MyISAM-only group.  Unknown tables are taken as transactional (InnoDB is the default engine
of both servers) and the caller reports the assumption where it mattered.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

NONTRANSACTIONAL_ENGINES = frozenset({"MYISAM", "ARIA", "MEMORY", "HEAP", "CSV", "ARCHIVE",
                                      "MRG_MYISAM", "MERGE", "BLACKHOLE", "FEDERATED",
                                      "CONNECT", "SEQUENCE"})

_IDENT = r"(?:`(?:[^`]|``)+`|[\w$]+)"
_NAME = rf"(?P<name>{_IDENT}(?:\s*\.\s*{_IDENT})?)"
_CREATE = re.compile(rf"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMPORARY\s+)?TABLE\s+"
                     rf"(?:IF\s+NOT\s+EXISTS\s+)?{_NAME}", re.I)
_ALTER = re.compile(rf"^\s*ALTER\s+(?:ONLINE\s+|IGNORE\s+)*TABLE\s+(?:IF\s+EXISTS\s+)?{_NAME}",
                    re.I)
_DROP = re.compile(r"^\s*DROP\s+(?:TEMPORARY\s+)?TABLE\s+(?:IF\s+EXISTS\s+)?(?P<names>.*)$",
                   re.I | re.S)
_RENAME = re.compile(r"^\s*RENAME\s+TABLES?\s+(?P<pairs>.*)$", re.I | re.S)
_ENGINE = re.compile(r"\bENGINE\s*=?\s*`?(?P<engine>\w+)`?", re.I)
_LIKE = re.compile(rf"^\s*\(?\s*LIKE\s+{_NAME}", re.I)


def _unquote(ident: str) -> str:
    ident = ident.strip()
    if ident.startswith("`") and ident.endswith("`"):
        return ident[1:-1].replace("``", "`")
    return ident


def _qualify(name: str, db: str | None) -> str:
    parts = [_unquote(p) for p in re.split(r"\s*\.\s*(?=(?:[^`]*`[^`]*`)*[^`]*$)", name)]
    if len(parts) == 2:
        return f"{parts[0]}.{parts[1]}"
    return f"{db}.{parts[0]}" if db else parts[0]


_UNAME = _NAME.replace("name", "uname")
_DNAME = _NAME.replace("name", "dname")
_DML_TARGET = re.compile(
    rf"^\s*(?:INSERT|REPLACE)\s+(?:LOW_PRIORITY\s+|DELAYED\s+|HIGH_PRIORITY\s+|IGNORE\s+)*"
    rf"(?:INTO\s+)?{_NAME}"
    rf"|^\s*UPDATE\s+(?:LOW_PRIORITY\s+|IGNORE\s+)*{_UNAME}"
    rf"|^\s*DELETE\s+(?:LOW_PRIORITY\s+|QUICK\s+|IGNORE\s+)*FROM\s+{_DNAME}", re.I)


def statement_target(db: str | None, query: str) -> str | None:
    """The table a statement-format INSERT/REPLACE/UPDATE/DELETE writes ("db.table"), when
    the statement names one table first (multi-table statements: the first one)."""
    m = _DML_TARGET.match(query)
    if m is None:
        return None
    name = m.group("name") or m.group("uname") or m.group("dname")
    return _qualify(name, db) if name else None


class EngineTracker:
    def __init__(self, nontransactional: Iterable[str] = (),
                 transactional: Iterable[str] = (),
                 seen_ddl: Iterable[tuple[str, bool]] = ()) -> None:
        self._configured: dict[str, bool] = {t: False for t in nontransactional}
        self._configured.update({t: True for t in transactional})
        # engines from DDL before the events this tracker will see (a byte range's start)
        self._ddl: dict[str, bool] = dict(seen_ddl)
        self._learned: dict[str, bool] = {}

    def ddl_state(self) -> tuple[tuple[str, bool], ...]:
        """What the DDL seen so far says (to seed the tracker of a later byte range)."""
        return tuple(sorted(self._ddl.items()))

    def is_transactional(self, table: str) -> bool | None:
        """True/False when known, None when nothing says (callers assume transactional)."""
        for source in (self._configured, self._ddl, self._learned):
            if table in source:
                return source[table]
        return None

    def transactional(self, table: str) -> bool:
        known = self.is_transactional(table)
        return True if known is None else known

    def observe_ddl(self, db: str | None, query: str) -> None:
        m = _CREATE.match(query)
        if m:
            name = _qualify(m.group("name"), db)
            rest = query[m.end():]
            like = _LIKE.match(rest)
            if like:
                src = _qualify(like.group("name"), db)
                known = self.is_transactional(src)
                if known is not None:
                    self._ddl[name] = known
                return
            engine = _ENGINE.search(rest)
            self._ddl[name] = not (engine and engine.group("engine").upper()
                                   in NONTRANSACTIONAL_ENGINES)
            self._learned.pop(name, None)
            return
        m = _ALTER.match(query)
        if m:
            engine = _ENGINE.search(query[m.end():])
            if engine:
                name = _qualify(m.group("name"), db)
                self._ddl[name] = engine.group("engine").upper() not in NONTRANSACTIONAL_ENGINES
            return
        m = _DROP.match(query)
        if m:
            for raw in m.group("names").split(","):
                name = _qualify(raw.strip().split()[0] if raw.strip() else "", db)
                self._ddl.pop(name, None)
                self._learned.pop(name, None)
            return
        m = _RENAME.match(query)
        if m:
            for pair in m.group("pairs").split(","):
                parts = re.split(r"\s+TO\s+", pair.strip(), flags=re.I)
                if len(parts) == 2:
                    old, new = _qualify(parts[0], db), _qualify(parts[1], db)
                    for source in (self._ddl, self._learned):
                        if old in source:
                            source[new] = source.pop(old)

    def observe_group(self, tables: set[str], *, all_transactional: bool) -> None:
        """Learn from a committed group (see the module doc)."""
        if all_transactional:
            for t in tables:
                self._learned.setdefault(t, True)
