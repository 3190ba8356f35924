"""Binlog file names and their sequence numbers (``mysql-bin.000042`` -> base ``mysql-bin``,
sequence 42): the order in which a server wrote its files."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..binlog.source import parse_location

_SEQ = re.compile(r"^(?P<base>.*?)\.(?P<seq>\d+)$")


@dataclass(frozen=True, order=True)
class BinlogFile:
    base: str  # the name without the sequence suffix, e.g. "mysql-bin"
    seq: int  # the sequence number, or -1 when the name has none
    name: str  # the binlog file name (compression suffix removed)
    uri: str  # where to read it


def binlog_file(uri: str | os.PathLike[str]) -> BinlogFile:
    text = os.fspath(uri)
    name = parse_location(text).name
    m = _SEQ.match(name)
    if m is None:
        return BinlogFile(name, -1, name, text)
    return BinlogFile(m.group("base"), int(m.group("seq")), name, text)


def sequence_of(name: str) -> int | None:
    m = _SEQ.match(name)
    return int(m.group("seq")) if m else None


def order_files(uris: Iterable[str | os.PathLike[str]]) -> list[BinlogFile]:
    """Files in the order the server wrote them: by base name, then sequence number (names
    without a sequence keep their given order, after the numbered ones of their base)."""
    files = [binlog_file(u) for u in uris]
    indexed = list(enumerate(files))
    indexed.sort(key=lambda t: (t[1].base, t[1].seq if t[1].seq >= 0 else float("inf"), t[0]))
    return [f for _, f in indexed]
