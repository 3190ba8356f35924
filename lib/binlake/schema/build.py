"""Building a :class:`SchemaHistory` from binlog files: every DDL Query event becomes a
versioned change at its position (file seq, pos), and every Table_map is checked against the
version in force at its position (:func:`binlake.schema.types.check_table_map`)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from ..binlog.constants import EventType as E
from ..binlog.errors import BinlogError
from ..binlog.fde import parse_version
from .ddl import apply_ddl
from .model import Finding, SchemaHistory
from .sqltext import version_number
from .types import check_table_map

_DECODE = frozenset({E.FORMAT_DESCRIPTION, E.QUERY, E.QUERY_COMPRESSED, E.TABLE_MAP,
                     E.TRANSACTION_PAYLOAD})
_SEQ = re.compile(r"\.(\d+)(?:\.(?:gz|zst|zstd))?$")


def file_seq(path: str, index: int) -> int:
    """A binlog file's sequence number: the digits of its extension (else its index)."""
    m = _SEQ.search(path)
    return int(m.group(1)) if m else index


def expand_sources(sources: Iterable[str]) -> list[str]:
    out: list[str] = []
    for s in sources:
        if os.path.isdir(s):
            out.extend(sorted(os.path.join(s, f) for f in os.listdir(s) if _SEQ.search(f)))
        else:
            out.append(s)
    return out


@dataclass
class TableMapCheck:
    file: str
    pos: tuple[int, int]
    table: str
    agrees: bool
    why: str


@dataclass
class BuildResult:
    """The history, and what the Table_map checks found: counts always, every check only
    with ``keep_checks`` (a big binlog has millions of Table_maps)."""

    history: SchemaHistory
    checks: list[TableMapCheck] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    checked: int = 0
    agreed: int = 0
    disagreed: list[TableMapCheck] = field(default_factory=list)


def build_history(sources: Iterable[str], *, history: SchemaHistory | None = None,
                  verify_checksums: bool = True, keep_checks: bool = True,
                  max_disagreements: int = 10000) -> BuildResult:
    """Read the files in order; DDL extends ``history`` (a seeded snapshot, or empty)."""
    from ..binlog.reader import BinlogReader

    res = BuildResult(history if history is not None else SchemaHistory())
    h = res.history
    reported: set[tuple[str, tuple[int, int] | None, str]] = set()
    # the decoder shares one columns list between the Table_maps of a table: one check per
    # (columns, version) pair; the key's objects are held by the value, so ids stay unique
    memo: dict[tuple[int, int, bool], tuple[Any, Any, tuple[bool, str, Any, Any]]] = {}
    files = expand_sources(sources)
    seqs = [file_seq(f, i) for i, f in enumerate(files)]
    if any(b <= a for a, b in pairwise(seqs)):
        # positions must grow with the stream: keep the order given, number files by it
        h.findings.append(Finding("file_order", "binlog sequence numbers do not increase in "
                                  f"the order given ({seqs}); positions use each file's "
                                  "index in the list instead"))
        seqs = list(range(len(files)))
    for f, seq in zip(files, seqs):
        version: tuple[int, int, int] | None = None
        mariadb = False
        try:
            for ev in BinlogReader(f, decode=_DECODE, verify_checksums=verify_checksums):
                t = ev.type_code
                if ev.error is not None:
                    res.errors.append(str(ev.error))
                    continue
                if t == E.FORMAT_DESCRIPTION:
                    sv = str(ev.data.get("server_version") or "")
                    version = parse_version(sv)
                    mariadb = ev.data.get("flavor") == "mariadb" or "mariadb" in sv.lower()
                elif t in (E.QUERY, E.QUERY_COMPRESSED):
                    q = ev.data.get("query")
                    if isinstance(q, str):
                        apply_ddl(h, q, db=ev.data.get("db"), pos=(seq, ev.pos), file=f,
                                  server_version=version_number(version) if version
                                  else 999999, mariadb=mariadb)
                elif t == E.TABLE_MAP:
                    tm = ev.data.get("_table_map")
                    if tm is None:
                        continue
                    pos = (seq, ev.pos)
                    v = h.at(tm.db, tm.table, pos)
                    mkey = (id(tm.columns), id(v), tm.has_full_metadata)
                    hit = memo.get(mkey)
                    if hit is None or hit[0] is not tm.columns or hit[1] is not v:
                        hit = (tm.columns, v, check_table_map(tm, v, mariadb=mariadb,
                                                              server_version=version))
                        memo[mkey] = hit
                    ok, why, expected, found = hit[2]
                    name = f"{tm.db}.{tm.table}"
                    check = TableMapCheck(f, pos, name, ok, why)
                    res.checked += 1
                    res.agreed += ok
                    if keep_checks:
                        res.checks.append(check)
                    if not ok and len(res.disagreed) < max_disagreements:
                        res.disagreed.append(check)
                    key = (name.lower(), v.start if v else None, why)
                    if not ok and key not in reported:
                        reported.add(key)
                        h.findings.append(Finding(
                            "table_map_mismatch", f"Table_map of {name} disagrees with the "
                            f"version in force ({why})", f, pos, None, name, expected, found))
        except BinlogError as exc:
            res.errors.append(str(exc))
    return res
