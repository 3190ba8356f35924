"""The stream facts validation reads (binlake.txn.streamfacts), gathered range by range in the
load's decode pass, against the same facts of each file read whole.

Validation reads what the load gathered when it decoded a file in byte ranges; a file the lake
has no facts of is read whole instead.  Both must give validation the same verdicts: for every
file of the corpus that splits, cut into small ranges (so that most files have several), the
groups, GTIDs, xids, damaged events and findings of the ranges (plus the position findings
between ranges, made by the reader) equal those of the whole file, and the ranges' merged file
facts equal the whole file's.  Plus hand-made damage the corpus lacks: a gap in the positions
just before a range starts, and an xid repeated in two ranges.
"""

from __future__ import annotations

import shutil
import struct
import zlib
from pathlib import Path
from typing import Any

import orjson
import pytest

from binlake.binlog.errors import BinlogError
from binlake.lake import extract as LX
from binlake.lake.records import FACT
from binlake.lake.survey import engine_seeds
from binlake.quality import facts as X
from binlake.txn import streamfacts as S
from binlake.txn.split import split_file

from .corpus import corpus_files, require_corpus

AT = {n: i for i, n in enumerate(S.FACT_NAMES)}


def _whole(path: Path, newest: bool = True) -> list[tuple[Any, ...]]:
    task = X.FileTask(str(path), path.name, 1, "", 0, newest)
    return list(X.file_facts(task))


def _ranged(path: Path, target: int, newest: bool = True, cut_at: int | None = None
            ) -> tuple[list[tuple[Any, ...]], int]:
    """The facts of ``path`` decoded as the load does, in ranges of about ``target`` bytes
    (and one more starting at ``cut_at``, a group's first event, if given)."""
    ranges = split_file(str(path), target_bytes=target, min_bytes=1)
    bounds = sorted({r.start for r in ranges} | ({cut_at} if cut_at else set()))
    spans = list(zip(bounds, [*bounds[1:], ranges[-1].end]))
    seeds = engine_seeds([str(path)], [bounds])[0]
    rows = []
    for k, (start, end) in enumerate(spans):
        last = k == len(spans) - 1
        task = LX.RangeTask(str(path), path.name, 1, start, end, k, newest and last,
                            (), seeds[k], last_of_file=last, newest=newest)
        rows += [rec for kind, rec in LX.decode_range(task) if kind == FACT]
    return rows, len(spans)


def _by_kind(rows: list[tuple[Any, ...]]) -> dict[str, list[tuple[Any, ...]]]:
    out: dict[str, list[tuple[Any, ...]]] = {}
    for r in rows:
        out.setdefault(r[AT["kind"]], []).append(r)
    return out


def _strip(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Without the range index (the one column that differs by construction)."""
    i = AT["range_index"]
    return sorted((r[:i] + r[i + 1:] for r in rows), key=repr)


def _findings(rows: list[tuple[Any, ...]]) -> list[tuple[str, int | None, str]]:
    out = []
    for r in rows:
        m = orjson.loads(r[AT["meta"]])
        out.append((m["kind"], m["pos"], m["severity"]))
    return sorted(out, key=repr)


def _metas(rows: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    ranges = sorted((r for r in rows if r[AT["kind"]] == S.RANGE), key=lambda r: r[AT["range_index"]])
    return [orjson.loads(r[AT["meta"]]) for r in ranges]


def _duplicates(xids: list[tuple[Any, ...]]) -> list[int]:
    seen: dict[int, int] = {}
    dup = []
    for r in sorted(xids, key=lambda r: r[AT["pos"]]):
        if r[AT["xid"]] in seen:
            dup.append(r[AT["pos"]])
        seen.setdefault(r[AT["xid"]], r[AT["pos"]])
    return dup


def compare(path: Path, target: int, cut_at: int | None = None) -> int:
    """Assert the ranged facts equal the whole file's; returns the number of ranges."""
    whole = _by_kind(_whole(path))
    ranged_rows, n = _ranged(path, target, cut_at=cut_at)
    ranged = _by_kind(ranged_rows)
    for kind in (S.GROUP, S.GTID, S.XID, S.EVENT):
        assert _strip(ranged.get(kind, [])) == _strip(whole.get(kind, [])), (path, kind)
    metas = _metas(ranged_rows)
    if not X.ranges_usable(metas):
        return -1  # a relay log in several ranges: validation reads it whole
    between = [(f["kind"], f["pos"], f["severity"]) for f in X.range_findings(path.name, metas)]
    assert sorted(_findings(ranged.get(S.FINDING, [])) + between, key=repr) == \
        _findings(whole.get(S.FINDING, [])), path
    assert _duplicates(ranged.get(S.XID, [])) == _duplicates(whole.get(S.XID, []))
    merged, alone = X.merge_ranges(metas), X.merge_ranges(_metas(whole[S.RANGE]))
    assert merged == alone, path
    return n


def test_corpus_ranges_give_the_facts_of_the_whole_file() -> None:
    require_corpus()
    compared = split = relays = 0
    for cf in corpus_files():
        try:
            split_file(str(cf.path), target_bytes=1 << 30)
        except BinlogError:
            continue  # not splittable: the load reads it whole too
        n = compare(cf.path, max(4096, cf.size // 5))
        if n < 0:
            relays += 1
            continue
        compared += 1
        split += n > 1
    assert compared >= 60
    assert split >= 20  # the comparison means something only where files were cut
    assert relays <= 10


def test_big_file_in_many_ranges(tmp_path: Path) -> None:
    """A real OLTP file (MariaDB, mixed engines, XA) cut in 30+ ranges."""
    require_corpus()
    big = max((cf for cf in corpus_files() if not cf.broken and cf.size < 8 << 20
               and "mariadb" in cf.version.lower()), key=lambda cf: cf.size)
    assert compare(big.path, max(4096, big.size // 40)) >= 10


def _events(path: Path) -> list[tuple[int, int, int]]:
    """(pos, length, type) of the top-level events of a v4 file with CRC32."""
    data = path.read_bytes()
    out, pos = [], 4
    while pos + 19 <= len(data):
        size = struct.unpack_from("<I", data, pos + 9)[0]
        out.append((pos, size, data[pos + 4]))
        pos += size
    return out


def _with_crc(data: bytearray, pos: int, size: int) -> None:
    struct.pack_into("<I", data, pos + size - 4, zlib.crc32(bytes(data[pos:pos + size - 4])))


def _clean_mariadb_file() -> Path:
    for cf in corpus_files():
        if (not cf.broken and "mariadb" in cf.version.lower() and cf.bad_checksums == 0
                and 200_000 < cf.size < 4 << 20):
            if not any(t == 16 and n == 19 + 8 + 4 for _p, n, t in _events(cf.path)):
                continue  # (Xid events with a CRC32: the damage below rewrites it)
            ws = _whole(cf.path)
            if not [r for r in ws if r[AT["kind"]] == S.FINDING] and \
                    len([r for r in ws if r[AT["kind"]] == S.XID]) > 50:
                return cf.path
    pytest.skip("no clean MariaDB file with xids in the corpus")


def test_damage_at_a_range_start_is_seen(tmp_path: Path) -> None:
    """Positions: every event from a GTID in the middle on says it ends 100 bytes later than
    it does (bytes were removed before it, as in MySQL's binlog_recovery files).  Cut inside
    the damage, one range's checker sees it; cut right at the damaged GTID, the ranges after
    it see a consistent offset, and only the reader's comparison of a range's first offset
    with the previous range's last one finds the gap.  Xids: a later Xid event given the
    value of an earlier one, in another range."""
    require_corpus()
    src = _clean_mariadb_file()
    path = tmp_path / src.name
    shutil.copy(src, path)
    data = bytearray(path.read_bytes())
    events = _events(path)
    gtids = [i for i, (_p, _n, t) in enumerate(events) if t == 162]  # MARIADB GTID_EVENT
    mid = gtids[len(gtids) // 2]
    for p, n, _t in events[mid:]:
        next_pos = struct.unpack_from("<I", data, p + 13)[0]
        if next_pos:
            struct.pack_into("<I", data, p + 13, next_pos + 100)
            _with_crc(data, p, n)
    xid_events = [(p, n) for p, n, t in events if t == 16]  # XID_EVENT
    (p1, _), (p2, n2) = xid_events[2], xid_events[-3]
    first_xid = struct.unpack_from("<Q", data, p1 + 19)[0]
    struct.pack_into("<Q", data, p2 + 19, first_xid)
    _with_crc(data, p2, n2)
    path.write_bytes(bytes(data))

    whole = _by_kind(_whole(path))
    gaps = [f for f in _findings(whole.get(S.FINDING, [])) if f[0] == "position_gap"]
    assert len(gaps) == 1 and gaps[0][1] == events[mid][0], gaps
    assert _duplicates(whole[S.XID]) == [p2]
    target = max(4096, len(data) // 12)
    for cut_at in (None, events[mid][0]):
        assert compare(path, target, cut_at) >= 4
        rows, _ = _ranged(path, target, cut_at=cut_at)
        metas = _metas(rows)
        inside = [f for f in _findings(_by_kind(rows).get(S.FINDING, []))
                  if f[0] == "position_gap"]
        between = X.range_findings(path.name, metas)
        assert len(inside) + len(between) == 1
        if cut_at is not None:
            assert [(f["kind"], f["pos"]) for f in between] == [("position_gap", cut_at)]
            assert not inside
        assert sum(m["resume_delta"] == 100 for m in metas[1:]) >= 1
