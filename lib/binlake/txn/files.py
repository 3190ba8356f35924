"""Binlog file names and their sequence numbers (``mysql-bin.000042`` -> base ``mysql-bin``,
sequence 42): the order in which a server wrote its files."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..binlog.errors import SourceError
from ..binlog.source import check_readable, list_s3, parse_location

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


def find_binlogs(sources: Iterable[str | os.PathLike[str]], *, check: bool = True
                 ) -> list[BinlogFile]:
    """The binlog files ``sources`` name, in server order: files, directories (their files
    whose names carry a sequence number, ``*.index`` skipped) and ``s3://`` URIs (an object,
    or every such object under a prefix ending with ``/``) -- what ``binlake load`` and
    ``binlake validate`` read.  A source that does not exist or cannot be listed, a file or
    object that cannot be read (``check``: opened / one HEAD request each), and a directory or
    prefix without a binlog file are each a :class:`SourceError` naming the source."""
    uris: list[str] = []
    for src in sources:
        text = os.fspath(src)
        loc = parse_location(text)
        if loc.scheme == "s3" and text.endswith("/"):
            found = [u for u in list_s3(text)
                     if not u.endswith((".index", "/")) and binlog_file(u).seq >= 0]
        elif loc.scheme == "file" and loc.path and os.path.isdir(loc.path):
            try:
                names = sorted(os.listdir(loc.path))
            except OSError as exc:
                raise SourceError(f"cannot list the directory: {exc.strerror}",
                                  file=text) from exc
            found = [full for full in (os.path.join(loc.path, n) for n in names)
                     if os.path.isfile(full) and not full.endswith(".index")
                     and binlog_file(full).seq >= 0]
        else:
            if check:
                check_readable(text)
            uris.append(text)
            continue
        if not found:
            raise SourceError("no binlog files here (names like mysql-bin.000001; *.index "
                              "files are skipped)", file=text)
        uris += found
    return order_files(uris)
