"""Schema snapshots: every table's schema as a live server (or a ``mysqldump --no-data``
file) says, and the binlog position it is valid at (docs/schema.md, "Snapshots").

A snapshot names the columns of tables created before the archive begins: the binlog holds
no CREATE for them.  :func:`take_snapshot` reads information_schema between two reads of the
server's binlog position; it is valid at the later one when nothing but DML was logged in
between (a DDL there: retried, then :class:`SnapshotRaceError`).  :func:`apply_snapshot`
merges one into a :class:`SchemaHistory` at its position.

On disk (:meth:`Snapshot.to_jsonl`, :func:`parse_snapshot`): JSON Lines, one header object
(``{"snapshot": 1, "position": ..., ...}``), then one ``{"version": {...}}`` per table, the
same version objects ``binlake schema`` prints."""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from .build import file_seq
from .model import SNAPSHOT_POS, Finding, Position, SchemaHistory, Version
from .seed import from_information_schema, from_mysqldump
from .sqltext import ANY_VERSION, ddl_kind, expand_versioned, is_temporary

FORMAT = 1
SYSTEM_DATABASES = frozenset({"mysql", "information_schema", "performance_schema", "sys"})
DDL_KINDS = frozenset({"table", "database", "index"})  # "other" (views, users...): no table


class SnapshotError(RuntimeError):
    """A snapshot could not be taken, read or stored."""


class SnapshotFormatError(SnapshotError, ValueError):
    """The text is not a snapshot: names the object and the line."""

    def __init__(self, name: str, line: int | None, why: str) -> None:
        where = f"{name} line {line}" if line is not None else name
        super().__init__(f"{where}: not a binlake schema snapshot: {why}")
        self.name, self.line, self.why = name, line, why


class SnapshotRaceError(SnapshotError):
    """DDL was logged while information_schema was read, on every attempt."""

    def __init__(self, attempts: int, ddl: list[str]) -> None:
        super().__init__(f"schema snapshot refused: DDL was logged while information_schema "
                         f"was read, {attempts} time(s) in a row; the last: "
                         f"{'; '.join(ddl[:3])}" + (" ..." if len(ddl) > 3 else ""))
        self.attempts, self.ddl = attempts, ddl


@dataclass(frozen=True)
class SnapshotPosition:
    """The binlog position a snapshot is valid at: after every event before ``pos`` of
    ``file`` (the position SHOW MASTER STATUS gives: where the next event starts)."""

    file: str
    seq: int
    pos: int

    @property
    def key(self) -> Position:
        return (self.seq, self.pos)

    def __str__(self) -> str:
        return f"{self.file}:{self.pos}"


@dataclass
class Snapshot:
    """Every table's version at ``position`` (None: before any binlog, ``SNAPSHOT_POS``).
    ``databases``: the databases it covers (a table of one of them that it lacks did not
    exist there); None when not known."""

    position: SnapshotPosition | None
    versions: list[Version]
    server_version: str | None = None
    flavor: str | None = None  # "mariadb" | "mysql"
    taken_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(
        timespec="seconds"))
    origin: str = "information_schema"  # or "mysqldump"
    databases: list[str] | None = None

    @property
    def start(self) -> Position:
        return self.position.key if self.position else SNAPSHOT_POS

    def schema_sha256(self) -> str:
        """A digest of the tables' schemas only (not the position, time or DDL text): equal
        for two snapshots of an unchanged schema."""
        rows = sorted(([v.db, v.table, v.exists, v.to_dict()["columns"], list(v.primary_key)]
                       for v in self.versions), key=lambda r: (r[0], r[1]))
        text = json.dumps([self.databases, rows], sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def header(self) -> dict[str, Any]:
        p = self.position
        return {"snapshot": FORMAT,
                "position": None if p is None else {"file": p.file, "seq": p.seq,
                                                    "pos": p.pos},
                "server": {"version": self.server_version, "flavor": self.flavor},
                "taken_at": self.taken_at, "origin": self.origin,
                "databases": self.databases, "tables": len(self.versions),
                "schema_sha256": self.schema_sha256()}

    def to_jsonl(self) -> bytes:
        bad = [f"{v.db}.{v.table}" for v in self.versions if v.start != self.start]
        if bad:
            raise SnapshotError(f"versions of {', '.join(bad[:3])} do not start at the "
                                f"snapshot's position {self.start}")
        lines = [json.dumps(self.header(), ensure_ascii=False)]
        for v in sorted(self.versions, key=lambda v: (v.db, v.table)):
            lines.append(json.dumps({"version": v.to_dict()}, ensure_ascii=False))
        return ("\n".join(lines) + "\n").encode("utf-8")


def parse_snapshot(text: str | bytes, name: str = "snapshot") -> Snapshot:
    """The inverse of :meth:`Snapshot.to_jsonl`; :class:`SnapshotFormatError` names ``name``
    and the line of anything wrong (a truncated file too: the header counts the tables)."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SnapshotFormatError(name, None, f"not UTF-8 text (byte {exc.start})") from None
    lines = [(i + 1, s) for i, s in enumerate(text.splitlines()) if s.strip()]
    if not lines:
        raise SnapshotFormatError(name, None, "empty")
    n, first = lines[0]
    head = _json_line(name, n, first)
    if not isinstance(head, dict) or "snapshot" not in head:
        raise SnapshotFormatError(name, n, "the first line is not a snapshot header "
                                  "(an object with a \"snapshot\" key)")
    if head["snapshot"] != FORMAT:
        raise SnapshotFormatError(name, n, f"format {head['snapshot']!r} is not {FORMAT}")
    try:
        p = head.get("position")
        position = None if p is None else SnapshotPosition(str(p["file"]), int(p["seq"]),
                                                           int(p["pos"]))
        server = head.get("server") or {}
        dbs = head.get("databases")
        snap = Snapshot(position, [], server.get("version"), server.get("flavor"),
                        str(head.get("taken_at") or ""), str(head.get("origin") or ""),
                        None if dbs is None else [str(d) for d in dbs])
        count = head.get("tables")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SnapshotFormatError(name, n, f"bad header: {type(exc).__name__} {exc}") from None
    for n, line in lines[1:]:
        d = _json_line(name, n, line)
        if not isinstance(d, dict) or not isinstance(d.get("version"), dict):
            raise SnapshotFormatError(name, n, "not a {\"version\": {...}} line")
        try:
            v = Version.from_dict(d["version"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SnapshotFormatError(name, n, f"bad version: {type(exc).__name__} "
                                      f"{exc}") from None
        if v.start != snap.start:
            raise SnapshotFormatError(name, n, f"version of {v.db}.{v.table} starts at "
                                      f"{v.start}, the snapshot is at {snap.start}")
        snap.versions.append(v)
    if count is not None and count != len(snap.versions):
        raise SnapshotFormatError(name, None, f"the header says {count} table(s), "
                                  f"{len(snap.versions)} follow (truncated?)")
    return snap


def _json_line(name: str, n: int, line: str) -> Any:
    try:
        return json.loads(line)
    except ValueError as exc:
        raise SnapshotFormatError(name, n, f"not JSON ({exc})") from None


def is_snapshot_text(text: str) -> bool:
    """JSON Lines of a snapshot (else, say, ``mysqldump`` output)."""
    return text.lstrip().startswith("{")


# -- taking one -------------------------------------------------------------------------------

def take_snapshot(conn: Any, databases: Iterable[str] | None = None, *, attempts: int = 4,
                  backoff: float = 0.2, between_reads: Callable[[int], None] | None = None,
                  sleep: Callable[[float], None] = time.sleep) -> Snapshot:
    """Read information_schema (``databases``; default every one but the system databases)
    of a DB-API connection (pymysql), valid at a binlog position: the server's position is
    read before and after; when it moved, the events between are read (``SHOW BINLOG
    EVENTS``, across rotations) and any DDL among them makes the read start again (after
    ``backoff`` * 2**attempt seconds), :class:`SnapshotRaceError` after ``attempts``.
    ``between_reads(attempt)`` runs after the read, before the second position (tests)."""
    cur = conn.cursor()
    cur.execute("SELECT VERSION()")
    version = str(cur.fetchone()[0])
    cur.close()
    flavor = "mariadb" if "mariadb" in version.lower() else "mysql"
    status = _StatusReader()
    ddl: list[str] = []
    for attempt in range(max(1, attempts)):
        if attempt:
            sleep(backoff * 2 ** (attempt - 1))
        before = status.read(conn)
        dbs = list(databases) if databases is not None else _user_databases(conn)
        history = from_information_schema(conn, dbs)
        if between_reads is not None:
            between_reads(attempt)
        after = status.read(conn)
        if before != after:
            ddl = _ddl_between(conn, before, after, version, flavor == "mariadb")
            if ddl:
                continue
        pos = None if after is None else SnapshotPosition(after[0], file_seq(after[0], 0),
                                                          after[1])
        start = pos.key if pos else SNAPSHOT_POS
        versions = [replace(v, start=start, file=pos.file if pos else None)
                    for v in history.all_versions()]
        return Snapshot(pos, versions, version, flavor, databases=sorted(dbs))
    raise SnapshotRaceError(max(1, attempts), ddl)


class _StatusReader:
    """SHOW MASTER STATUS, or what this server calls it (MySQL 8.4: SHOW BINARY LOG STATUS;
    MariaDB 10.5.2+ also SHOW BINLOG STATUS); None when binary logging is off."""

    STATEMENTS = ("SHOW MASTER STATUS", "SHOW BINLOG STATUS", "SHOW BINARY LOG STATUS")

    def __init__(self) -> None:
        self.which: str | None = None

    def read(self, conn: Any) -> tuple[str, int] | None:
        last: Exception | None = None
        for stmt in [self.which] if self.which else self.STATEMENTS:
            cur = conn.cursor()
            try:
                cur.execute(stmt)
                row = cur.fetchone()
            except Exception as exc:  # the DB-API's error: a statement this server lacks
                last = exc
                continue
            finally:
                cur.close()
            self.which = stmt
            return None if not row else (str(row[0]), int(row[1]))
        raise SnapshotError(f"cannot read the binlog position ({last})")


def _user_databases(conn: Any) -> list[str]:
    cur = conn.cursor()
    cur.execute("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA ORDER BY SCHEMA_NAME")
    out = [str(r[0]) for r in cur.fetchall() if str(r[0]).lower() not in SYSTEM_DATABASES]
    cur.close()
    return out


_USE_PREFIX = re.compile(r"^\s*use\s+(?:`(?:[^`]|``)+`|[^\s;]+)\s*;\s*", re.I)
_QUERY_EVENTS = ("query", "query_compressed")


def _ddl_between(conn: Any, before: tuple[str, int] | None, after: tuple[str, int] | None,
                 version: str, mariadb: bool, batch: int = 1000) -> list[str]:
    """The DDL statements logged from ``before`` to ``after`` ("file:pos: statement"); one
    entry saying so when the events cannot be read (the snapshot is then not trusted)."""
    if before is None or after is None:
        return [f"binary logging switched {'on' if before is None else 'off'} meanwhile"]
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", version)
    number = int(m.group(1)) * 10000 + int(m.group(2)) * 100 + int(m.group(3)) if m \
        else ANY_VERSION
    cur = conn.cursor()
    try:
        cur.execute("SHOW BINARY LOGS")
        names = [str(r[0]) for r in cur.fetchall()]
        if before[0] not in names or after[0] not in names:
            return [f"{before[0]}: not listed by SHOW BINARY LOGS (purged?): the events "
                    "between the reads cannot be checked"]
        found: list[str] = []
        for name in names[names.index(before[0]):names.index(after[0]) + 1]:
            at = before[1] if name == before[0] else 4
            end = after[1] if name == after[0] else None
            while end is None or at < end:
                quoted = name.replace("\\", "\\\\").replace("'", "''")
                cur.execute(f"SHOW BINLOG EVENTS IN '{quoted}' FROM {int(at)} "
                            f"LIMIT {int(batch)}")
                rows = cur.fetchall()
                for _log, pos, etype, _sid, _end, info in rows:
                    if end is not None and int(pos) >= end:
                        break
                    if str(etype).lower() in _QUERY_EVENTS and info:
                        sql = expand_versioned(_USE_PREFIX.sub("", str(info), count=1),
                                               number, mariadb)
                        if ddl_kind(sql) in DDL_KINDS and not is_temporary(sql):
                            found.append(f"{name}:{pos}: {' '.join(sql.split())[:200]}")
                if len(rows) < batch or int(rows[-1][4]) <= at:
                    break
                at = int(rows[-1][4])
        return found
    except Exception as exc:  # the DB-API's error
        return [f"the events between {before[0]}:{before[1]} and {after[0]}:{after[1]} "
                f"cannot be read ({exc})"]
    finally:
        cur.close()


# -- from a dump -------------------------------------------------------------------------------

_SERVER_VERSION = re.compile(r"^--\s*Server version\s+(\S+)", re.M)
_CHANGE_MASTER = re.compile(
    r"CHANGE\s+(?:MASTER|REPLICATION\s+SOURCE)\s+TO\s+(?:MASTER|SOURCE)_LOG_FILE\s*=\s*"
    r"'([^']+)'\s*,\s*(?:MASTER|SOURCE)_LOG_POS\s*=\s*(\d+)", re.I)


def snapshot_from_mysqldump(text: str, name: str = "dump",
                            databases: Iterable[str] | None = None
                            ) -> tuple[Snapshot, list[Finding]]:
    """A snapshot of ``mysqldump --no-data`` output (its CREATE TABLEs) and the findings of
    reading it.  Its position is the dump's ``CHANGE MASTER TO MASTER_LOG_FILE=...,
    MASTER_LOG_POS=...`` line (``--master-data`` / ``--source-data``), else None."""
    sv = _SERVER_VERSION.search(text)
    server = sv.group(1) if sv else None
    mariadb = bool(server and "mariadb" in server.lower()) or "MariaDB dump" in text[:300]
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", server or "")
    number = (int(m.group(1)) * 10000 + int(m.group(2)) * 100 + int(m.group(3))) if m \
        else ANY_VERSION
    given = None if databases is None else list(databases)
    wanted = None if given is None else {d.lower() for d in given}
    h = from_mysqldump(text, server_version=number, mariadb=mariadb, file=name,
                       db=given[0] if given and len(given) == 1 else None)
    if any(db == "" for db, _ in h.versions):
        raise SnapshotError(f"{name}: a CREATE TABLE comes before any USE line (a dump of "
                            "one database): name the database (--database DB)")
    cm = _CHANGE_MASTER.search(text)
    pos = SnapshotPosition(cm.group(1), file_seq(cm.group(1), 0), int(cm.group(2))) \
        if cm else None
    latest = sorted((vs[-1] for vs in h.versions.values() if vs[-1].exists),
                    key=lambda v: (v.db, v.table))
    versions = [replace(v, start=pos.key if pos else SNAPSHOT_POS,
                        file=pos.file if pos else None, change="snapshot", incarnation=1)
                for v in latest if wanted is None or v.db.lower() in wanted]
    covered = {d.lower(): d for d in [*_dump_databases(text), *(v.db for v in latest)]}
    dbs = sorted(d for k, d in covered.items() if wanted is None or k in wanted)
    flavor = "mariadb" if mariadb else ("mysql" if server else None)
    return Snapshot(pos, versions, server, flavor, origin="mysqldump",
                    databases=dbs), list(h.findings)


def _dump_databases(text: str) -> list[str]:
    out = []
    for m in re.finditer(r"^\s*(?:CREATE\s+DATABASE\s+(?:/\*!\d+\s+)?(?:IF\s+NOT\s+EXISTS\s*)?"
                         r"(?:\*/\s*)?|USE\s+)(`(?:[^`]|``)+`|[\w$]+)", text, re.I | re.M):
        raw = m.group(1)
        out.append(raw[1:-1].replace("``", "`") if raw.startswith("`") else raw)
    return out


# -- merging one into a history ---------------------------------------------------------------

def apply_snapshot(history: SchemaHistory, snapshot: Snapshot) -> list[Finding]:
    """Merge ``snapshot`` into ``history`` at its position; the findings are returned and
    appended to ``history.findings``.  Per table:

    * the history has no version in force there, or one whose columns are unknown, or a
      dropped one: the snapshot's version is added;
    * the version in force disagrees (columns, types, nullability, generated, invisible,
      primary key): the snapshot's version is added (the server is the truth) and a
      ``snapshot_disagrees`` finding names the table, position, expected and found;
    * it agrees: nothing;
    * the table has versions past the snapshot's position: left alone (versions are added
      in position order, :meth:`SchemaHistory.add`; apply a snapshot before the DDL after it).

    A table of a database the snapshot covers that exists in the history there but not in
    the snapshot gets a dropped version and a ``snapshot_disagrees`` finding.
    Snapshot versions whose columns are unknown (a CREATE a dump held that was not
    interpreted) change nothing."""
    at = snapshot.start
    where = str(snapshot.position) if snapshot.position else "the snapshot (before any binlog)"
    mariadb = snapshot.flavor == "mariadb"
    findings: list[Finding] = []
    seen: set[tuple[str, str]] = set()

    def finding(v: Version, why: str, expected: Any, found: Any) -> None:
        findings.append(Finding(
            "snapshot_disagrees", f"{v.db}.{v.table} at {where}: {why}; the snapshot's "
            "version is used from there (the server is the truth)",
            snapshot.position.file if snapshot.position else None, at, None,
            f"{v.db}.{v.table}", expected, found))

    for v in sorted(snapshot.versions, key=lambda v: (v.db, v.table)):
        key = (v.db.lower(), v.table.lower())
        seen.add(key)
        if v.columns is None or _past(history, key, at):
            continue
        prev = history.latest(v.db, v.table)
        if prev is None or not prev.exists or prev.columns is None:
            inc = 1 if prev is None else (prev.incarnation + (not prev.exists))
            history.add(replace(v, start=at, incarnation=inc, change="snapshot"))
            continue
        why = _disagreement(prev, v, mariadb)
        if why is None:
            continue
        finding(v, why, _describe(prev), _describe(v))
        history.add(replace(v, start=at, incarnation=prev.incarnation, change="snapshot"))
    covered = {d.lower() for d in snapshot.databases or ()}
    for key in list(history.versions):
        if key in seen or key[0] not in covered or _past(history, key, at):
            continue
        prev = history.versions[key][-1]
        if not prev.exists:
            continue
        gone = Version(prev.db, prev.table, prev.incarnation, at,
                       snapshot.position.file if snapshot.position else None,
                       snapshot.origin, "snapshot", None, (), exists=False)
        finding(gone, "the table is not in the snapshot (it did not exist there)",
                _describe(prev), None)
        history.add(gone)
    history.findings.extend(findings)
    return findings


def _past(history: SchemaHistory, key: tuple[str, str], at: Position) -> bool:
    """The table has a version past ``at`` (a DDL event starting at ``at`` is after it, as
    the position is where the next event starts; another snapshot's version there is not)."""
    vs = history.versions.get(key)
    if not vs:
        return False
    last = vs[-1]
    return last.start > at or (last.start == at and at != SNAPSHOT_POS
                               and last.change != "snapshot")


def _column_shape(c: Any, mariadb: bool) -> tuple[Any, ...]:
    t = "longtext" if (mariadb and c.base == "json") else c.type  # MariaDB: a LONGTEXT alias
    return (c.name.lower(), t, c.nullable, c.generated, c.invisible)


def _disagreement(had: Version, snap: Version, mariadb: bool) -> str | None:
    a = [_column_shape(c, mariadb) for c in had.columns or ()]
    b = [_column_shape(c, mariadb) for c in snap.columns or ()]
    if [x[0] for x in a] != [x[0] for x in b]:
        return "the column names differ"
    for x, y in zip(a, b):
        if x != y:
            return f"column {y[0]!r} differs"
    if [p.lower() for p in had.primary_key] != [p.lower() for p in snap.primary_key]:
        return "the primary key differs"
    return None


def _describe(v: Version) -> dict[str, Any]:
    return {"columns": [f"{c.name} {c.type}{'' if c.nullable else ' NOT NULL'}"
                        + (f" {c.generated}" if c.generated else "")
                        + (" INVISIBLE" if c.invisible else "") for c in v.columns or ()],
            "primary_key": list(v.primary_key)}
