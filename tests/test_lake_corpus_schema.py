"""The lake load of real MySQL 8 / 9 binlogs logged with ``binlog_row_metadata=MINIMAL``
(no column names in the Table_maps) whose tables are created in the file: the load names the
columns from the DDL it read (lib/binlake/lake/schemas.py, docs/lake.md "Schema history").

Files (../shared/corpus, selected by :func:`plan`): every MySQL 8 / 9 file of the corpus, not
damaged by design (MANIFEST flags, or HAND-EDITED crash-recovery files), whose Table_maps all
lack names and where some table with rows has a version in :func:`binlake.schema.build_history`
that every one of its Table_maps agrees with.  A file whose tables, CREATE statements and row
images repeat those of another selected file is not loaded again.  The file that follows a
selected one on the same server (``.000002`` after ``.000001``) is loaded after it, as one
stream: its tables are known from the first file's DDL.  Streams are packed into a few loads
(one lake each, run_load on the shared Spark session) so that no table name occurs in two
streams of a load; MySQL 8 files with rows but no CREATE at all are added where their tables
fit (the ``no_schema`` cases).

Expected values never come from binlake's schema history:

* column names, primary keys, character sets, signedness and generated columns come from the
  CREATE TABLE text of the Query events, read by the small parser below (DROP TABLE and
  CREATE ... IF NOT EXISTS followed as a server does);
* row values come from a reference decoding: ``mysqlbinlog -vv`` output stored beside the
  file (the mysql-cdc-rs dumps), else ``mariadb-binlog -vv`` run on the file (it cannot read
  Transaction_payload or PARTIAL_UPDATE_ROWS: those files have no reference), parsed by
  tests/refparse.py; the ``@n`` of the reference is the n-th column of the CREATE;
* for mdev35643_mysql_80_binlog.000001 (compressed transactions, a partial JSON update), the
  tables a MariaDB replica SELECTed after applying it (the ``.applied`` result: column names
  in its header).

Asserted, per table created in a file and having row changes: typed ``changelog__`` and
``mirror__`` tables (the mirror with ``_dup`` when the CREATE has no primary key), images of
``row_changes`` keyed by the CREATE's column names in the CREATE's order, ``pk`` holding the
CREATE's primary key, each value equal to the reference's at the column's position, generated
columns (``AS (j->>'$.k')``) equal to their expression; the mirror equal to the reference's
changes replayed in order (one row per key; for a table without a key the multiset of rows,
each copy numbered by ``_dup``).  Per table without a CREATE: images keyed ``@1..@n``, values
equal to the reference's, a ``no_schema`` finding naming it, no typed tables.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from .corpus import CORPUS, corpus_files, require_corpus
from .refparse import Output, RefRow, RefValue, parse_mysqlbinlog, read_text, unquote_mysql

TIMINGS: dict[str, float] = {}
MARIADB_BINLOG = os.environ.get("BINLAKE_MARIADB_BINLOG", "mariadb-binlog")
APPLIED_MDEV35643 = "mariadb-11.8/std_data/mdev35643_mysql_80_binlog.000001"


@pytest.fixture(scope="module", autouse=True)
def _timings() -> Iterator[None]:
    yield
    if TIMINGS:
        print("\ntest_lake_corpus_schema timings: "
              + ", ".join(f"{k} {v:.1f}s" for k, v in TIMINGS.items()))


# -- CREATE TABLE, read without binlake.schema ------------------------------------------------

_IDENT = r"(?:`(?:[^`]|``)+`|[\w$]+)"
_CREATE = re.compile(rf"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(TEMPORARY\s+)?TABLE\s+"
                     rf"(IF\s+NOT\s+EXISTS\s+)?({_IDENT}(?:\s*\.\s*{_IDENT})?)", re.I)
_DROP = re.compile(r"^\s*DROP\s+(TEMPORARY\s+)?TABLES?\s+(?:IF\s+EXISTS\s+)?(.*)$", re.I | re.S)
_ALTER = re.compile(rf"^\s*(?:ALTER\s+(?:IGNORE\s+)?TABLE|RENAME\s+TABLE|TRUNCATE(?:\s+TABLE)?)"
                    rf"\s+({_IDENT}(?:\s*\.\s*{_IDENT})?)", re.I)
_INDEX_WORDS = {"primary", "key", "index", "unique", "constraint", "foreign", "fulltext",
                "spatial", "check"}
_BINARY_TYPES = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob",
                 "geometry", "point", "linestring", "polygon"}
_DECIMAL_TYPES = {"decimal", "numeric", "dec", "fixed"}
_PY_CODECS = {"latin1": "cp1252", "utf8": "utf-8", "utf8mb3": "utf-8", "utf8mb4": "utf-8",
              "ascii": "ascii", "binary": None}


def _unq(ident: str) -> str:
    s = ident.strip()
    return s[1:-1].replace("``", "`") if s.startswith("`") else s


def _qualified(name: str, db: str | None) -> tuple[str, str]:
    parts = re.findall(_IDENT, name)
    if len(parts) == 2:
        return _unq(parts[0]), _unq(parts[1])
    assert db is not None, name
    return db, _unq(parts[0])


def _balanced(text: str, start: int) -> tuple[list[str], int]:
    """The comma-separated items inside the parentheses opening at ``text[start]`` (quotes
    and nested parentheses respected) and the index after the closing one."""
    assert text[start] == "(", text[start:start + 40]
    items, depth, quote, cur = [], 0, "", []
    i = start
    while i < len(text):
        c = text[i]
        if quote:
            cur.append(c)
            if c == quote:
                quote = ""
            elif c == "\\":
                i += 1
                cur.append(text[i])
        elif c in "'\"`":
            quote = c
            cur.append(c)
        elif c == "(":
            depth += 1
            if depth > 1:
                cur.append(c)
        elif c == ")":
            depth -= 1
            if depth == 0:
                items.append("".join(cur).strip())
                return [x for x in items if x], i + 1
            cur.append(c)
        elif c == "," and depth == 1:
            items.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    raise AssertionError(f"unbalanced parentheses: {text[start:start + 80]!r}")


def _charset(text: str) -> str | None:
    m = re.search(r"(?:CHARACTER\s+SET|CHARSET)\s*=?\s*(\w+)", text, re.I)
    return m.group(1).lower() if m else None


@dataclass(frozen=True)
class Col:
    name: str
    type: str  # the type word, lower case ("bigint", "decimal", "varchar"...)
    args: str  # "(12, 3)" ... as written
    unsigned: bool
    charset: str | None  # the column's, else the table's; None: the server's default
    generated: tuple[str, str, bool] | None  # (json column, key, ->> unquotes) of AS (c->'$.k')

    @property
    def binary(self) -> bool:
        return self.type in _BINARY_TYPES or self.charset == "binary"

    @property
    def decimal(self) -> bool:
        return self.type in _DECIMAL_TYPES

    def decode(self, data: bytes) -> str:
        codec = _PY_CODECS.get(self.charset or "utf8mb4", self.charset)
        assert codec, self
        return data.decode(codec)


@dataclass(frozen=True)
class Create:
    db: str
    table: str
    cols: tuple[Col, ...]
    pk: tuple[str, ...]
    text: str

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.cols]


def parse_create(text: str, db: str | None) -> Create:
    m = _CREATE.match(text)
    assert m, text[:80]
    cdb, table = _qualified(m.group(3), db)
    open_at = text.index("(", m.end())
    assert not text[m.end():open_at].strip(), f"not a column list: {text[:120]!r}"
    items, end = _balanced(text, open_at)
    table_charset = _charset(text[end:])
    cols, pk = [], ()
    for item in items:
        word = re.match(r"\w*", item).group(0).lower()  # type: ignore[union-attr]
        if not item.startswith("`") and word in _INDEX_WORDS:
            km = re.match(r"(?:CONSTRAINT\s+\S+\s+)?PRIMARY\s+KEY\s*(?:\w+\s*)?", item, re.I)
            if km:
                parts, _ = _balanced(item, item.index("(", km.start()))
                pk = tuple(_unq(re.match(_IDENT, p).group(0)) for p in parts)  # type: ignore
            continue
        cm = re.match(rf"\s*({_IDENT})\s+(\w+)\s*(\([^)]*\))?(.*)$", item, re.S)
        assert cm, item
        name, typ, args, rest = _unq(cm.group(1)), cm.group(2).lower(), cm.group(3) or "", \
            cm.group(4)
        gm = re.search(r"\bAS\s*\(\s*`?(\w+)`?\s*->(>?)\s*'\$\.(\w+)'\s*\)", rest, re.I)
        cols.append(Col(name, typ, args,
                        typ == "serial" or bool(re.search(r"\bunsigned\b", rest, re.I)),
                        _charset(rest) or table_charset,
                        (gm.group(1), gm.group(3), gm.group(2) == ">") if gm else None))
        if re.search(r"\bPRIMARY\s+KEY\b", rest, re.I):
            pk = (name,)
    return Create(cdb, table, tuple(cols), pk, text)


# -- the corpus files -------------------------------------------------------------------------


@dataclass
class FileInfo:
    """One corpus file as read by binlake's decoder (events only: no schema history)."""

    rel: str
    path: Path
    creates: list[tuple[int, Create]]  # (event position, statement), in file order
    ddl_tables: set[tuple[str, str]]  # tables named by any DDL statement
    altered: set[tuple[str, str]]  # ALTER / RENAME / TRUNCATE
    drops: dict[tuple[str, str], list[int]]  # positions of DROP TABLE statements, per table
    rows: Counter[tuple[str, str]]  # row images per table
    row_pos: dict[tuple[str, str], list[int]]  # positions of its rows events, per table
    named_maps: int  # Table_maps that carry column names
    tables: set[tuple[str, str]]  # every table of a Table_map
    signature: dict[tuple[str, str], tuple[Any, ...]]  # per table: CREATEs and row images


@cache
def file_info(rel: str) -> FileInfo:
    from binlake.binlog.events.rows import ROWS_EVENTS
    from binlake.binlog.reader import BinlogReader

    path = CORPUS / rel
    info = FileInfo(rel, path, [], set(), set(), {}, Counter(), {}, 0, set(), {})
    images: dict[tuple[str, str], list[Any]] = {}
    for ev in BinlogReader(path):
        if ev.error is not None:
            continue
        if ev.type == "QUERY":
            q = ev.data.get("query") or ""
            db = ev.data.get("db") or None
            if (m := _CREATE.match(q)) and not m.group(1):  # not TEMPORARY
                c = parse_create(q, db)
                info.creates.append((ev.pos, c))
                info.ddl_tables.add((c.db, c.table))
            elif (m := _DROP.match(q)) and not m.group(1):
                for name in re.findall(rf"{_IDENT}(?:\s*\.\s*{_IDENT})?",
                                       re.sub(r"/\*.*?\*/", "", m.group(2))):
                    info.ddl_tables.add(_qualified(name, db))
                    info.drops.setdefault(_qualified(name, db), []).append(ev.pos)
            elif m := _ALTER.match(q):
                info.altered.add(_qualified(m.group(1), db))
        elif ev.type == "TABLE_MAP":
            tm = ev.data.get("_table_map")
            if tm is not None:
                info.named_maps += bool(tm.has_full_metadata)
                info.tables.add((tm.db, tm.table))
        elif ev.type_code in ROWS_EVENTS and ev.data.get("rows") is not None:
            key = (ev.data["db"], ev.data["table"])
            info.rows[key] += len(ev.data["rows"])
            info.row_pos.setdefault(key, []).append(ev.pos)
            images.setdefault(key, []).extend(repr(r) for r in ev.data["rows"])
    for key in info.tables | info.ddl_tables:
        info.signature[key] = (tuple(" ".join(c.text.split()) for _, c in info.creates
                                     if (c.db, c.table) == key), tuple(images.get(key, ())))
    return info


def create_at(infos: list[FileInfo], index: int, pos: int, key: tuple[str, str]
              ) -> Create | None:
    """The CREATE in force for ``key`` at (file ``index`` of a stream, ``pos``): CREATE ...
    IF NOT EXISTS of an existing table does nothing, DROP TABLE ends it."""
    state: Create | None = None
    for i, info in enumerate(infos[: index + 1]):
        events: list[tuple[int, str, Any]] = [(p, "create", c) for p, c in info.creates]
        events += [(p, "drop", None) for p in _drops(info, key)]
        for p, kind, c in sorted(events, key=lambda e: e[0]):
            if i == index and p >= pos:
                break
            if kind == "drop":
                state = None
            elif (c.db, c.table) == key and (state is None or not re.search(
                    r"IF\s+NOT\s+EXISTS", c.text[:200], re.I)):
                state = c
    return state


def _drops(info: FileInfo, key: tuple[str, str]) -> list[int]:
    return info.drops.get(key, [])


# -- which files, in which loads ----------------------------------------------------------------


@dataclass
class Stream:
    """Files of one server loaded in order (a selected file, then its successor)."""

    files: list[FileInfo]
    no_create: bool = False  # an added file whose tables have no CREATE anywhere

    @property
    def names(self) -> set[str]:
        return {f"{d}.{t}".lower() for f in self.files for d, t in f.tables | f.ddl_tables}


@dataclass
class Plan:
    selected: list[str]  # MINIMAL files with a table created in them (history agrees)
    duplicates: dict[str, str]  # selected file -> the selected file it repeats
    groups: list[list[Stream]]
    unplaced: list[str]  # files without a CREATE whose tables no load could take


def _mysql8(cf: Any) -> bool:
    return bool(re.match(r"(8|9)\.\d", cf.version)) and not cf.broken \
        and "HAND-EDITED" not in cf.notes


def _history_verdict(rel: str) -> tuple[set[tuple[str, str]], set[tuple[str, str]]] | None:
    """(tables with a version all their Table_maps agree with, tables with no version at
    all) per binlake.schema.build_history of the file alone; None: some check disagrees, or
    the file has read errors."""
    from binlake.schema import build_history

    res = build_history([str(CORPUS / rel)])
    if res.errors:
        return None
    agree: dict[tuple[str, str], bool] = {}
    none: set[tuple[str, str]] = set()
    for c in res.checks:
        db, _, table = c.table.partition(".")
        v = res.history.at(db, table, c.pos)
        if v is None:
            none.add((db, table))
        elif v.columns is not None:
            agree[(db, table)] = agree.get((db, table), True) and c.agrees
    if not all(agree.values()):
        return None
    return set(agree), none - set(agree)


def _successor(rel: str, rels: set[str]) -> str | None:
    m = re.search(r"\.(\d+)$", rel)
    if not m:
        return None
    nxt = rel[: m.start(1)] + str(int(m.group(1)) + 1).zfill(len(m.group(1)))
    return nxt if nxt in rels else None


@cache
def plan() -> Plan:
    files = [cf for cf in corpus_files() if _mysql8(cf)]
    rels = {cf.rel for cf in files}
    selected, unnamed, no_create = [], [], []
    for cf in files:
        info = file_info(cf.rel)
        if info.named_maps or not info.tables:
            continue
        verdict = _history_verdict(cf.rel)
        if verdict is None:
            continue
        agreed, unknown = verdict
        if any(info.rows[t] for t in agreed):
            selected.append(cf.rel)
        elif unknown and not agreed and any(info.rows[t] for t in unknown):
            unnamed.append(cf.rel)  # may follow a selected file of its server
            if not info.ddl_tables:
                no_create.append(cf.rel)
    # files that only repeat another selected file's tables, DDL and rows
    duplicates: dict[str, str] = {}
    for rel in selected:
        sig = file_info(rel).signature
        for other in selected:
            if other == rel or other in duplicates:
                continue
            osig = file_info(other).signature
            if all(osig.get(k) == v for k, v in sig.items()) and (
                    len(osig) > len(sig) or other < rel):
                duplicates[rel] = other
                break
    successors = set()
    streams = []
    for rel in selected:
        if rel in duplicates:
            continue
        chain = [file_info(rel)]
        nxt = _successor(rel, rels)
        if nxt is not None and nxt in unnamed:
            chain.append(file_info(nxt))
            successors.add(nxt)
        streams.append(Stream(chain))
    groups: list[list[Stream]] = []
    for s in streams:
        for g in groups:
            if not s.names & set().union(*(x.names for x in g)):
                g.append(s)
                break
        else:
            groups.append([s])
    unplaced = []
    for rel in no_create:  # only where they fit: they add no load of their own
        if rel in successors or _successor_of_duplicate(rel, duplicates, rels):
            continue
        s = Stream([file_info(rel)], no_create=True)
        for g in groups:
            if not s.names & set().union(*(x.names for x in g)):
                g.append(s)
                break
        else:
            unplaced.append(rel)
    return Plan(selected, duplicates, groups, unplaced)


def _successor_of_duplicate(rel: str, duplicates: dict[str, str], rels: set[str]) -> bool:
    return any(_successor(d, rels) == rel for d in duplicates)


# -- references ---------------------------------------------------------------------------------


@dataclass
class Reference:
    source: str  # what printed it
    outputs: list[Output]

    @property
    def rows(self) -> list[RefRow]:
        return [r for o in self.outputs for r in o.rows]


@cache
def reference(rel: str) -> Reference | None:
    """The ``-vv`` rows of the stored mysqlbinlog output beside the file, else of
    mariadb-binlog run on it; None when neither can decode it."""
    path = CORPUS / rel
    dump = path.parent / "dump.txt"
    if dump.is_file():
        outs = parse_mysqlbinlog(read_text(dump))
        if any(o.rows for o in outs):
            return Reference(str(dump.relative_to(CORPUS)), outs)
    res = subprocess.run([MARIADB_BINLOG, "--no-defaults", "-vv", "--base64-output=decode-rows",
                          str(path)], capture_output=True, check=False)
    if res.returncode != 0:
        return None
    outs = parse_mysqlbinlog(res.stdout.decode("utf-8", "surrogateescape"))
    return Reference("mariadb-binlog -vv", outs)


_INTS = {"TINYINT", "SHORTINT", "MEDIUMINT", "INT", "LONGINT"}
_STRS = {"VARSTRING", "STRING", "BLOB", "BLOB/TEXT", "TINYBLOB", "MEDIUMBLOB", "LONGBLOB",
         "TEXT", "VARCHAR", "CHAR"}


def _epoch(text: str, fsp: int) -> str:
    sec, _, frac = text.partition(".")
    frac = (frac + "0" * fsp)[:fsp]
    if int(sec) == 0 and not frac.strip("0"):
        return "0000-00-00 00:00:00" + ("." + frac if fsp else "")
    text = datetime.fromtimestamp(int(sec), UTC).strftime("%Y-%m-%d %H:%M:%S")
    return text + ("." + frac if fsp else "")


def ref_values(rv: RefValue, col: Col | None) -> list[Any]:
    """The values in binlake's contract a printed ``@n=`` stands for (two where the
    column's signedness or charset is not known: a table without a CREATE)."""
    raw = rv.raw.strip()
    typ = rv.type or ""
    base = typ.split("(", 1)[0]
    args = typ[len(base) + 1: -1] if "(" in typ else ""
    if raw == "NULL" and rv.is_null is not False:
        return [None]
    if base in _INTS:
        m = re.fullmatch(r"(-?\d+)(?: \((\d+)\))?", raw)
        assert m, raw
        signed = int(m.group(1))
        uns = int(m.group(2)) if m.group(2) else signed
        return [signed, uns] if col is None else [uns if col.unsigned else signed]
    if base == "DECIMAL":
        return [raw]
    if base == "DOUBLE":
        return [float(raw)]
    if base == "YEAR":
        return [0 if int(raw) == 1900 else int(raw)]
    if base == "BIT":
        m = re.fullmatch(r"b'([01]*)'", raw)
        assert m, raw
        return [int(m.group(1) or "0", 2)]
    if base in ("DATE", "NEWDATE"):
        return [raw.strip("'").replace(":", "-")]
    if base in ("DATETIME", "TIME"):
        return [raw.strip("'")]
    if base == "TIMESTAMP":
        return [_epoch(raw, int(args) if args.isdigit() else 0)]
    if base in _STRS:
        data = unquote_mysql(raw)
        if col is None:
            out: list[Any] = [{"hex": data.hex()}]
            with contextlib.suppress(UnicodeDecodeError):
                out.append(data.decode("utf-8"))
            return out
        if col.binary:
            return [{"hex": data.hex()}]
        return [col.decode(data)]
    raise AssertionError(f"no rule for a printed {typ!r} value {raw!r}")


# -- lakes ----------------------------------------------------------------------------------


@dataclass
class Loaded:
    settings: Any
    summary: Any
    links: dict[str, str]  # corpus rel -> the file name the lake knows it by
    tables: set[str]  # typed tables (changelog__/mirror__)
    changes: list[dict[str, Any]]  # row_changes, in file order
    streams: list[Stream] = field(default_factory=list)


@pytest.fixture(scope="module")
def lakes(spark_lake: Any, tmp_path_factory: pytest.TempPathFactory) -> list[Loaded]:
    """Every group of :func:`plan` loaded by one ``run_load`` into a lake of its own; the
    files are symlinked as ``grp.000001``, ``grp.000002``... in the group's order."""
    from binlake.lake.job import run_load

    from .test_lake_job import make_lake

    require_corpus()
    t0 = time.monotonic()
    p = plan()
    TIMINGS["plan"] = time.monotonic() - t0
    base = tmp_path_factory.mktemp("lake-corpus-schema")
    out = []
    for i, group in enumerate(p.groups):
        src = base / f"src{i}"
        src.mkdir()
        links: dict[str, str] = {}
        for s in group:
            for f in s.files:
                name = f"grp.{len(links) + 1:06d}"
                (src / name).symlink_to(f.path)
                links[f.rel] = name
        settings = make_lake(spark_lake, base, f"corpus_schema_{i}")
        t1 = time.monotonic()
        summary = run_load(spark_lake, settings, [str(src / n) for n in links.values()])
        TIMINGS[f"load {i} ({len(links)} files)"] = time.monotonic() - t1
        assert not summary.failed, summary.files
        tables = {r.tableName for r in spark_lake.sql(
            f"SHOW TABLES IN {settings.catalog_name}.{settings.namespace}").collect()}
        changes = [r.asDict() for r in spark_lake.table(settings.table("row_changes"))
                   .select("file", "pos", "payload_index", "row", "db", "tbl", "op", "before",
                           "after", "pk").collect()]
        changes.sort(key=lambda r: (r["file"], r["pos"], -1 if r["payload_index"] is None
                                    else r["payload_index"], r["row"]))
        out.append(Loaded(settings, summary, links, tables, changes, list(group)))
    TIMINGS["loads"] = time.monotonic() - t0
    return out


def _table_names(db: str, tbl: str) -> tuple[str, str]:
    from binlake.lake.typed_plan import table_names

    return table_names(db, tbl)


def _stream_files(lake: Loaded) -> Iterator[tuple[Stream, int, FileInfo]]:
    for s in lake.streams:
        for i, f in enumerate(s.files):
            yield s, i, f


def _lake_files(lake: Loaded) -> list[FileInfo]:
    return [f for _s, _i, f in _stream_files(lake)]


def _changes_of(lake: Loaded, rel: str, key: tuple[str, str]) -> list[dict[str, Any]]:
    name = lake.links[rel]
    return [r for r in lake.changes if r["file"] == name and (r["db"], r["tbl"]) == key]


def _no_problems(problems: list[str], limit: int = 60) -> None:
    more = f"\n... and {len(problems) - limit} more" if len(problems) > limit else ""
    assert not problems, f"{len(problems)} problem(s):\n" + "\n".join(problems[:limit]) + more


def _img(text: str | None) -> dict[str, Any] | None:
    return None if text is None else json.loads(text)


# -- the tests --------------------------------------------------------------------------------


def test_selection() -> None:
    """The files the module loads (no Spark): MINIMAL files with their tables created in
    them, and files with rows but no CREATE."""
    require_corpus()
    p = plan()
    # named by the task and present in the corpus: the files must stay selected
    for rel in ("mysql-8.0/std_data/rpl_binlog_with_gipk_info_minimal_metadata.000001",
                "mysql-8.0/std_data/replicated-bin.000001",
                "mariadb-11.8/std_data/mdev35643_mysql_80_binlog.000001",
                "libs/rust_mysql_common/json.binlog.000001",
                "libs/mysql-cdc-rs/events/8.0/32_delete_rows_v2/binlog.000001",
                "libs/percona-binlog-server/data_80045_gtid/binlog.000001"):
        assert rel in p.selected, (rel, p.selected)
    # these name their columns (FULL metadata): not what this module is about
    for rel in ("libs/rust_mysql_common/mysql-enum-string-set.000001",
                "libs/rust_mysql_common/mysql_type_bit.000001",
                "libs/rust_mysql_common/binlog-invisible-columns.000001"):
        assert rel not in p.selected and file_info(rel).named_maps
    assert len(p.selected) >= 10
    loaded = [f.rel for g in p.groups for s in g for f in s.files]
    assert sorted(set(p.selected) - set(p.duplicates)) == sorted(
        r for r in loaded if r in p.selected)
    assert len(loaded) == len(set(loaded))
    for g in p.groups:  # no table name in two streams of a load
        names = [n for s in g for n in s.names]
        assert len(names) == len(set(names)), names
    assert any(s.no_create for g in p.groups for s in g)
    assert any(len(s.files) > 1 for g in p.groups for s in g)
    # the CREATEs the parser read name the tables the history made versions of
    for rel in p.selected:
        info = file_info(rel)
        agreed, _ = _history_verdict(rel)  # type: ignore[misc]
        created = {(c.db, c.table) for _, c in info.creates}
        assert agreed <= created, (rel, agreed, created)
        assert not info.altered & created, (rel, info.altered)
    print("\nloads: " + " | ".join(", ".join(f.rel for s in g for f in s.files)
                                  for g in p.groups))
    print("not loaded again (same tables, DDL and rows): " + ", ".join(
        f"{a} (= {b})" for a, b in p.duplicates.items()))
    print("without a CREATE, not loaded (their tables are in every load): "
          + ", ".join(p.unplaced))


def _data_columns(spark: Any, settings: Any, table: str) -> list[str]:
    return [f.name for f in spark.table(settings.table(table)).schema.fields
            if not f.name.startswith("_")]


def _named_tables(lake: Loaded) -> Iterator[tuple[Stream, int, FileInfo, tuple[str, str],
                                                  list[dict[str, Any]], Create]]:
    """Per file and table with rows and a CREATE in force (in the file or an earlier file
    of its stream): the lake's row changes and the CREATE."""
    for s, i, f in _stream_files(lake):
        for key in sorted(f.rows):
            creates = {create_at(s.files, i, p, key) for p in f.row_pos[key]}
            if creates == {None}:
                continue
            assert len(creates) == 1, (f.rel, key, creates)  # no DDL between its rows
            yield s, i, f, key, _changes_of(lake, f.rel, key), creates.pop()  # type: ignore


def _check_image(problems: list[str], w: str, img: dict[str, Any], c: Create) -> None:
    keys = list(img)
    if not keys or [n for n in c.names if n in img] != keys:
        problems.append(f"{w}: image keys {keys} are not the CREATE's columns {c.names} "
                        "(in its order)")
        return
    for col in c.cols:
        if col.generated is None or col.name not in img:
            continue
        src, k, _ = col.generated
        doc = img.get(src)
        if isinstance(doc, dict) and "json_diff" not in doc and img[col.name] != doc.get(k):
            problems.append(f"{w}: generated column {col.name} = {img[col.name]!r}, but "
                            f"its expression {src}->'$.{k}' gives {doc.get(k)!r}")


def test_created_tables_typed_and_keyed_by_create_names(spark_lake: Any,
                                                         lakes: list[Loaded]) -> None:
    """Every table created in a loaded stream that has row changes: typed changelog and
    mirror tables with the CREATE's columns, every ``row_changes`` image keyed by the
    CREATE's names in its order, ``pk`` the CREATE's primary key."""
    from binlake.lake.typed_plan import column_base

    problems: list[str] = []
    seen: list[str] = []
    for lake in lakes:
        for _s, _i, f, key, changes, c in _named_tables(lake):
            w = f"{f.rel} {key[0]}.{key[1]}"
            seen.append(f"{w} ({len(changes)} rows)")
            if len(changes) != f.rows[key]:
                problems.append(f"{w}: {len(changes)} row changes in the lake, the file has "
                                f"{f.rows[key]}")
            full = False
            for r in changes:
                for which in ("before", "after"):
                    img = _img(r[which])
                    if img is None:
                        continue
                    full = full or list(img) == c.names
                    _check_image(problems, f"{w} pos {r['pos']} row {r['row']} {which}", img, c)
                img = _img(r["after"] if r["op"] != "delete" else r["before"]) or {}
                pk = None if not c.pk or any(k not in img for k in c.pk) else {
                    k: img[k] for k in c.pk}
                if _img(r["pk"]) != pk:
                    problems.append(f"{w} pos {r['pos']} row {r['row']}: pk {r['pk']}, the "
                                    f"CREATE's primary key {c.pk} gives {pk}")
            if not full:
                problems.append(f"{w}: no image carries every column of the CREATE {c.names}")
            changelog, mirror = _table_names(*key)
            if not {changelog, mirror} <= lake.tables:
                problems.append(f"{w}: typed tables missing: {changelog}, {mirror} not in "
                                f"{sorted(t for t in lake.tables if '__' in t)}")
                continue
            want = [column_base(n).lower() for n in c.names]
            for t in (changelog, mirror):
                got = [x.lower() for x in _data_columns(spark_lake, lake.settings, t)]
                if got != want:
                    problems.append(f"{w}: {t} has the columns {got}, the CREATE {want}")
            fields = {x.name for x in spark_lake.table(lake.settings.table(mirror)).schema.fields}
            if ("_dup" in fields) == bool(c.pk):
                problems.append(f"{w}: {mirror} {'has' if c.pk else 'lacks'} _dup, the CREATE's "
                                f"primary key is {c.pk}")
            ops = Counter(r["_op"] for r in spark_lake.table(lake.settings.table(changelog))
                          .select("_op").collect())
            want_ops = Counter(r["op"] for r in lake.changes if (r["db"], r["tbl"]) == key)
            drops = sum(len(_drops(x, key)) for x in _lake_files(lake))
            if drops:
                want_ops["drop"] = drops
            if ops != want_ops:
                problems.append(f"{w}: {changelog} has the rows {dict(ops)}, row_changes and "
                                f"DROP statements {dict(want_ops)}")
    for lake in lakes:  # the selected files' Table_maps agree with their CREATEs
        problems += [f"finding {x}" for x in lake.summary.findings
                     if x.get("kind") == "table_map_mismatch"
                     or str(x.get("kind")).startswith("schema_")]
    print("\nnamed by a CREATE: " + ", ".join(seen))
    assert len(seen) >= 12, seen
    _no_problems(problems)


def _ref_rows_by_table(ref: Reference) -> dict[tuple[str, str], list[RefRow]]:
    out: dict[tuple[str, str], list[RefRow]] = {}
    for r in ref.rows:
        out.setdefault((r.db, r.table), []).append(r)
    return out


def _need_mariadb_binlog() -> None:
    if shutil.which(MARIADB_BINLOG) is None:
        pytest.skip(f"{MARIADB_BINLOG} (the reference decoder) is not on PATH")


def test_row_values_equal_the_reference_decoding(lakes: list[Loaded]) -> None:
    """Every row image of a file with a reference decoding: the same rows in the same order,
    the column at position n (``@n``) under the CREATE's n-th name (``@n`` itself without a
    CREATE), its value equal to the printed one."""
    _need_mariadb_binlog()
    problems: list[str] = []
    compared = Counter[str]()
    for lake in lakes:
        for s, i, f in _stream_files(lake):
            ref = reference(f.rel)
            if ref is None:
                continue
            by_table = _ref_rows_by_table(ref)
            assert set(by_table) == {k for k, n in f.rows.items() if n}, (f.rel, set(by_table))
            for key, refs in by_table.items():
                changes = _changes_of(lake, f.rel, key)
                w = f"{f.rel} {key[0]}.{key[1]} ({ref.source})"
                if len(changes) != len(refs):
                    problems.append(f"{w}: {len(changes)} row changes, reference {len(refs)}")
                    continue
                for r, rr in zip(changes, refs):
                    c = create_at(s.files, i, r["pos"], key)
                    ww = f"{w} pos {r['pos']} row {r['row']}"
                    if r["op"] != rr.op:
                        problems.append(f"{ww}: op {r['op']}, reference {rr.op}")
                    if rr.candidates and r["pos"] not in rr.candidates:
                        problems.append(f"{ww}: reference prints it for {rr.candidates}")
                    for which in ("before", "after"):
                        img, rimg = _img(r[which]), getattr(rr, which)
                        if rimg is None or img is None:
                            if (rimg is None) != (img is None):
                                problems.append(f"{ww} {which}: {img!r}, reference {rimg!r}")
                            continue
                        cols = {n: (c.cols[n - 1] if c is not None else None) for n in rimg}
                        names = [f"@{n}" if col is None else col.name
                                 for n, col in sorted(cols.items())]
                        if list(img) != names:
                            problems.append(f"{ww} {which}: keys {list(img)}, expected {names} "
                                            f"for the reference's {sorted(rimg)}")
                            continue
                        for (n, col), name in zip(sorted(cols.items()), names):
                            want = ref_values(rimg[n], col)
                            compared[f.rel] += 1
                            if img[name] not in want:
                                problems.append(f"{ww} {which} {name} (@{n}): {img[name]!r}, "
                                                f"reference {rimg[n].raw!r} = {want[0]!r}")
    print("\nvalues compared: " + ", ".join(f"{k} {v}" for k, v in sorted(compared.items())))
    assert len(compared) >= 8 and sum(compared.values()) >= 200, compared
    _no_problems(problems)


def _mirror_value(v: Any, col: Col) -> Any:
    """A typed mirror value in the form of binlake's JSON contract."""
    if v is None:
        return None
    if isinstance(v, Decimal):
        return format(v, "f") if col.decimal else int(v)
    if isinstance(v, bool | int | float | str):
        return v
    if isinstance(v, bytes | bytearray):
        return {"hex": bytes(v).hex()}
    if isinstance(v, datetime):
        raise AssertionError(f"no rule for a datetime in {col}")
    if isinstance(v, date):
        return v.isoformat()
    raise AssertionError(f"no rule for {v!r} in {col}")


def _replay(stream: Stream, key: tuple[str, str], c: Create
            ) -> tuple[dict[tuple[Any, ...], tuple[Any, ...]] | Counter[tuple[Any, ...]], int]:
    """The table's final state by the reference decodings of the stream's files: changes
    applied in file order, DROP TABLE empties it (rows keyed by the CREATE's primary key, or a
    multiset without one).  Also the number of changes replayed."""
    pk = [c.names.index(k) + 1 for k in c.pk]
    keyed: dict[tuple[Any, ...], dict[int, Any]] = {}
    bag: Counter[tuple[Any, ...]] = Counter()
    steps: list[RefRow | None] = []  # None: DROP TABLE
    for f in stream.files:
        ref = reference(f.rel)
        assert ref is not None
        for o in ref.outputs:
            for ev in o.events:
                for st in ev.statements:
                    m = _DROP.match(st.text)
                    if m and not m.group(1) and key in {_qualified(x, st.db) for x in re.findall(
                            rf"{_IDENT}(?:\s*\.\s*{_IDENT})?",
                            re.sub(r"/\*.*?\*/", "", m.group(2)))}:
                        steps.append(None)
                steps += [rr for rr in ev.rows if (rr.db, rr.table) == key]
    n = 0
    for rr in steps:
        if rr is None:
            keyed.clear()
            bag.clear()
            continue
        n += 1

        def val(img: dict[int, RefValue]) -> dict[int, Any]:
            return {p: ref_values(v, c.cols[p - 1])[0] for p, v in img.items()}

        before = val(rr.before) if rr.before is not None else None
        after = val(rr.after) if rr.after is not None else None
        if pk:
            row: dict[int, Any] = {}
            if before is not None:
                row = keyed.pop(tuple(before[p] for p in pk))
            if after is not None:
                row = {**row, **after}
                keyed[tuple(row[p] for p in pk)] = row
        else:
            if before is not None:
                t = tuple(before[p] for p in range(1, len(c.cols) + 1))
                assert bag[t] > 0, (key, t)
                bag[t] -= 1
                bag += Counter()
            if after is not None:
                bag[tuple(after[p] for p in range(1, len(c.cols) + 1))] += 1
    if pk:
        return {k: tuple(v[p] for p in range(1, len(c.cols) + 1)) for k, v in keyed.items()}, n
    return +bag, n


def test_mirrors_equal_the_reference_replayed(spark_lake: Any, lakes: list[Loaded]) -> None:
    """The mirror of every created table whose stream has reference decodings: the
    reference's changes replayed in order -- one row per primary key; without a key, the
    multiset of rows, the copies of a row numbered 1..n in ``_dup``."""
    _need_mariadb_binlog()
    from binlake.lake.typed_plan import column_base

    problems: list[str] = []
    checked: list[str] = []
    done: set[tuple[int, str, str]] = set()
    for li, lake in enumerate(lakes):
        for s, _i, f, key, _changes, c in _named_tables(lake):
            if (li, *key) in done or any(reference(x.rel) is None for x in s.files
                                         if x.rows[key]):
                continue
            done.add((li, *key))
            want, n = _replay(s, key, c)
            mirror = lake.settings.table(_table_names(*key)[1])
            cols = [column_base(x) for x in c.names]
            df = spark_lake.table(mirror)
            rows = df.select(*[f"`{x}`" for x in cols],
                             *(["_dup"] if not c.pk else [])).collect()
            got = [tuple(_mirror_value(v, col) for v, col in zip(r, c.cols)) for r in rows]
            w = f"{f.rel} {key[0]}.{key[1]} ({n} changes replayed)"
            checked.append(f"{key[0]}.{key[1]}: {len(got)} rows")
            if c.pk:
                pk = [c.names.index(k) for k in c.pk]
                by_key = {tuple(g[p] for p in pk): g for g in got}
                if len(by_key) != len(got):
                    problems.append(f"{w}: {len(got)} mirror rows for {len(by_key)} keys")
                if by_key != want:
                    problems.append(f"{w}: mirror {sorted(by_key.items())} != replayed "
                                    f"{sorted(want.items())}")  # type: ignore[union-attr]
            else:
                if Counter(got) != want:
                    problems.append(f"{w}: mirror {sorted(Counter(got).items())} != replayed "
                                    f"{sorted(want.items())}")  # type: ignore[union-attr]
                dups: dict[tuple[Any, ...], list[int]] = {}
                for g, r in zip(got, rows):
                    dups.setdefault(g, []).append(r["_dup"])
                for g, d in dups.items():
                    if sorted(d) != list(range(1, len(d) + 1)):
                        problems.append(f"{w}: copies of {g} have _dup {sorted(d)}")
    print("\nmirrors checked: " + ", ".join(checked))
    assert len(checked) >= 6, checked
    _no_problems(problems)


def test_tables_without_create_keep_positions(spark_lake: Any, lakes: list[Loaded]) -> None:
    """A table whose CREATE is in no loaded file before its rows: images keyed ``@1..@n``, a
    ``no_schema`` finding naming it, no typed tables."""
    problems: list[str] = []
    seen = []
    for lake in lakes:
        for s, i, f in _stream_files(lake):
            for key in sorted(f.rows):
                if any(create_at(s.files, i, p, key) is not None for p in f.row_pos[key]):
                    continue
                changes = _changes_of(lake, f.rel, key)
                name = f"{key[0]}.{key[1]}"
                w = f"{f.rel} {name}"
                seen.append(w)
                if len(changes) != f.rows[key]:
                    problems.append(f"{w}: {len(changes)} row changes, the file has "
                                    f"{f.rows[key]}")
                for r in changes:
                    for which in ("before", "after"):
                        img = _img(r[which])
                        if img is not None and not all(re.fullmatch(r"@\d+", k) for k in img):
                            problems.append(f"{w} pos {r['pos']} {which}: keys {list(img)}")
                    if r["pk"] is not None:
                        problems.append(f"{w} pos {r['pos']}: pk {r['pk']}")
                found = [x for x in lake.summary.findings if x.get("kind") == "no_schema"
                         and x.get("table") == name and x.get("file") == lake.links[f.rel]]
                if not found:
                    problems.append(f"{w}: no no_schema finding for it in "
                                    f"{lake.summary.findings}")
                typed = set(_table_names(*key)) & lake.tables
                if typed:
                    problems.append(f"{w}: typed tables {sorted(typed)}")
    print("\nwithout a CREATE: " + ", ".join(seen))
    assert len(seen) >= 5, seen
    _no_problems(problems)


def _select(text: str, after: str, query: str) -> list[list[str]]:
    """The tab-separated result (header first) of ``query`` in an MTR result, the first one
    after the line ``after``."""
    lines = text.splitlines()
    start = lines.index(after) if after else 0
    at = lines.index(query, start) + 1
    out = []
    while at < len(lines) and "\t" in lines[at]:
        out.append(lines[at].split("\t"))
        at += 1
    return out


def test_mdev35643_as_a_replica_applied_it(spark_lake: Any, lakes: list[Loaded]) -> None:
    """mdev35643_mysql_80_binlog.000001 (MySQL 8.0.40, compressed transactions, a partial
    JSON update) has no reference decoding; a MariaDB replica applied it (the ``.applied``
    result): ``SELECT * FROM t1`` after it (the replica skipped the Transaction_payload of
    rows 1000..1099) is the mirror without those rows, column names from the SELECT header;
    ``SELECT * FROM t2`` (it stopped at the PARTIAL_UPDATE_ROWS event) is that update's
    before image."""
    (lake,) = [x for x in lakes if APPLIED_MDEV35643 in x.links]
    text = read_text(CORPUS / (APPLIED_MDEV35643 + ".applied-mariadbd-11.8.6.result"))
    t1 = _select(text, "START SLAVE SQL_THREAD;", "SELECT * FROM t1 ORDER BY a;")
    t2 = _select(text, "START SLAVE SQL_THREAD;", "SELECT * FROM t2 ORDER BY a;")
    assert t1[0] == ["a", "b", "c"] and len(t1) == 6 and t2[0] == ["a", "b"]
    changes = _changes_of(lake, APPLIED_MDEV35643, ("test", "t1"))
    assert len(changes) == 105
    payload = {_img(r["after"])["a"] for r in changes  # type: ignore[index]
               if r["payload_index"] is not None}
    assert payload == set(range(1000, 1100))
    mirror = spark_lake.table(lake.settings.table(_table_names("test", "t1")[1]))
    rows = mirror.select(*[f"`{n}`" for n in t1[0]]).collect()
    assert sorted(r["a"] for r in rows) == sorted([int(x[0]) for x in t1[1:]] + sorted(payload))
    got = sorted([str(v) for v in r] for r in rows if r["a"] not in payload)
    assert got == sorted(t1[1:])
    (upd,) = _changes_of(lake, APPLIED_MDEV35643, ("test", "t2"))
    before = _img(upd["before"])
    assert before is not None
    assert list(before) == t2[0]
    assert [before["a"], before["b"]] == [int(t2[1][0]), json.loads(t2[1][1])]
