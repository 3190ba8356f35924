"""Splitting one binlog file into transaction-aligned byte ranges that decode independently.

A Spark job decodes a big file on many cores by giving each executor one :class:`ByteRange`;
the executor reads only that slice (``BinlogReader(uri, start=r.start, stop=r.end)``: the
reader reads the FDE at offset 4, then jumps to ``start``).  A range may start only where no
transaction is open -- at the first event of a group -- so that every rows event finds its
Table_map in the same range and every group is decoded whole by one executor.

Where groups start: at every GTID event (MySQL 5.6+, MariaDB 10.0+), and in files without GTID
events at the event that opens a transaction or a statement outside one (WL#4162); the scan
modules say exactly (``txn.scan``, ``txn.scangtidless``).

Events between groups (Rotate, Stop, Incident, a MariaDB Binlog_checkpoint, ...) stay with the
group before them; the FDE and the file-header events (Previous_gtids, Gtid_list,
Binlog_checkpoint) belong to range 0, which starts at the first event after the FDE.  An XA
PREPARE group and its XA COMMIT group are separate groups and may land in different ranges:
pairing them is the transaction layer's job, across ranges and files.

A split point is only ever an event the reader will accept as a range start.  From a point
where the framing breaks, an encrypted tail, or a later FDE describing another format, no more
split points are made: the rest of the file is one range, and the reader reports the damage
there exactly as a whole-file decode does (``txn.scanbase``).

The modules of the split, bottom up: ``txn.scaninput`` (the bytes: local, S3, compressed;
:class:`ScanStats`), ``txn.scanbase`` (the file header, the format, the split point checks),
``txn.scangtidless`` (group starts in files without GTIDs), ``txn.scan`` (the walk, GTID
events and transaction_length jumps), and this one (the ranges).
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterator
from dataclasses import dataclass

from .scan import _Scanner
from .scaninput import ScanStats

__all__ = ["ByteRange", "ScanStats", "split_file", "transaction_starts"]


@dataclass(frozen=True)
class ByteRange:
    """A transaction-aligned slice ``[start, end)`` of a binlog file (offsets in the
    uncompressed file); decode it with ``BinlogReader(uri, start=start, stop=end)``.

    ``first_event``: offset of the first event of the range's first transaction -- ``start``
    for every range but the first, where the file-header events (Previous_gtids, Gtid_list,
    ...) come before it; ``end`` when the range holds no transaction.  ``events``: how many
    events the range holds (the FDE at offset 4, which no range yields, not counted; events
    inside a Transaction_payload not counted), ``None`` when the scan jumped over them.
    ``transactions``: how many groups start in the range.
    """

    uri: str
    start: int
    end: int
    first_event: int
    events: int | None
    transactions: int

    @property
    def size(self) -> int:
        return self.end - self.start


# -- public API -------------------------------------------------------------------------------


def transaction_starts(uri: str, *, verify_checksums: bool = False,
                       stats: ScanStats | None = None) -> Iterator[int]:
    """Offsets in ``uri`` where a transaction (group) starts: the split points of the file.

    ``verify_checksums``: read every event and check its CRC32 (this turns the
    transaction_length jumps off); from the first mismatch on no split point is made.
    ``stats`` collects what the scan did (see :class:`ScanStats`).
    """
    scan = _Scanner(str(uri), verify_checksums=verify_checksums, stats=stats)
    for pos, _epoch, _count in scan:
        yield pos


def split_file(uri: str, *, target_bytes: int = 64 << 20, min_bytes: int = 1 << 20,
               stats: ScanStats | None = None) -> list[ByteRange]:
    """Cut ``uri`` into transaction-aligned ranges of about ``target_bytes`` each.

    The ranges cover ``[first event after the FDE, end of file)`` without gaps or overlaps;
    each holds whole groups (a group larger than ``target_bytes`` gets a range of its own,
    never cut).  A range is cut at the last group start that keeps it within
    ``target_bytes``, and is never made shorter than ``min_bytes`` (a short tail joins the
    range before it).  There is always at least one range.
    """
    if target_bytes <= 0:
        raise ValueError("target_bytes must be positive")
    uri = str(uri)
    scan = _Scanner(uri, verify_checksums=False, stats=stats)
    marks = iter(scan)
    ranges: list[ByteRange] = []

    def events(a: tuple[int, int, int | None], b: tuple[int, int, int | None]) -> int | None:
        if a[1] != b[1] or a[2] is None or b[2] is None:
            return None
        return b[2] - a[2]

    def emit(a: tuple[int, int, int | None], b: tuple[int, int, int | None], n: int,
             first: int | None) -> None:
        ranges.append(ByteRange(uri, a[0], b[0], b[0] if first is None else first,
                                events(a, b), n))

    # cur: the start of the range being built; prev: the latest group start in it; n: the
    # group starts in [cur, prev).
    cur: tuple[int, int, int | None] | None = None
    prev: tuple[int, int, int] | None = None
    first: int | None = None
    n = 0
    for m in marks:
        if cur is None:
            cur = (scan.fde_end, 0, 0)
        s = m[0]
        while True:
            if prev is None:
                prev, first, n = m, s, 0
                break
            if s - cur[0] <= target_bytes:
                n += 1
                prev = m
                break
            if prev[0] > cur[0] and prev[0] - cur[0] >= min_bytes:
                emit(cur, prev, n, first)
                cur, first, n = prev, prev[0], 0
                continue
            if s - cur[0] >= min_bytes:
                emit(cur, m, n + 1, first)
                cur, first, n, prev = m, s, 0, m
                break
            n += 1
            prev = m
            break
    if cur is None:
        cur = (scan.fde_end, 0, 0)
    end = scan.end_mark
    if (prev is not None and end[0] - cur[0] > target_bytes and prev[0] > cur[0]
            and prev[0] - cur[0] >= min_bytes):
        # The last group does not fit either: it gets a range of its own.
        emit(cur, prev, n, first)
        cur, first, n = prev, prev[0], 0
    tail_n = n + (1 if prev is not None else 0)
    if ranges and end[0] - cur[0] < min_bytes:
        last = ranges.pop()  # a short tail joins the range before it
        tail_events = events(cur, end)
        merged = None
        if last.events is not None and tail_events is not None:
            merged = last.events + tail_events
        ranges.append(ByteRange(uri, last.start, end[0], last.first_event, merged,
                                last.transactions + tail_n))
    else:
        emit(cur, end, tail_n, first)
    return ranges


def group_ranges(files: list[list[ByteRange]], slots: int, target_bytes: int
                 ) -> list[list[ByteRange]]:
    """Join each file's consecutive fine ranges (:func:`split_file` with a target well
    below ``target_bytes``) into decode ranges, balanced for ``slots`` tasks at a time.

    The number of decode ranges is the one ranges of ``target_bytes`` would give (at least
    one per file), rounded up to a multiple of ``slots``: the last round of tasks then
    keeps every core busy instead of leaving one range to run alone.  Each file gets its
    share of them (one more goes to the file whose ranges are largest), and a file's ranges
    are cut where they come nearest to equal bytes.  A range is never cut inside a fine
    range, so a file has at most as many decode ranges as fine ones."""
    if slots < 1 or target_bytes < 1:
        raise ValueError("slots and target_bytes must be positive")
    sizes = [rs[-1].end - rs[0].start if rs else 0 for rs in files]
    want = sum(max(1, -(-size // target_bytes)) for size in sizes)
    want = -(-want // slots) * slots
    count = [1] * len(files)
    # one more range at a time to the file whose ranges are largest (the first on a tie)
    heap: list[tuple[float, int]] = [(-float(size), i) for i, (size, rs)
                                     in enumerate(zip(sizes, files)) if len(rs) > 1]
    heapq.heapify(heap)
    for _ in range(max(0, want - sum(count))):
        if not heap:
            break
        _, i = heapq.heappop(heap)
        count[i] += 1
        if count[i] < len(files[i]):
            heapq.heappush(heap, (-sizes[i] / count[i], i))
    return [_cut(rs, n) if rs else [] for rs, n in zip(files, count)]


def _cut(fine: list[ByteRange], n: int) -> list[ByteRange]:
    """``fine`` (consecutive ranges of one file) joined into ``n`` ranges of bytes as equal
    as the fine boundaries allow."""
    start = fine[0].start
    total = fine[-1].end - start
    ends = [r.end - start for r in fine]  # cumulative bytes at each fine boundary
    cuts: list[int] = []  # index of the last fine range of each group but the last
    prev = -1
    for k in range(1, n):
        goal = total * k / n
        lo, hi = prev + 1, len(fine) - 1 - (n - k)  # leave a fine range for each group after
        # the boundary nearest the goal: the last one below it or the first at or above it
        j = bisect.bisect_left(ends, goal, lo, hi + 1)
        best = min((c for c in (j - 1, j) if lo <= c <= hi), key=lambda c: abs(ends[c] - goal))
        cuts.append(best)
        prev = best
    out: list[ByteRange] = []
    first = 0
    for last in [*cuts, len(fine) - 1]:
        out.append(_join(fine[first:last + 1]))
        first = last + 1
    return out


def _join(group: list[ByteRange]) -> ByteRange:
    if len(group) == 1:
        return group[0]
    events = [r.events for r in group]
    # the first event of the first transaction: the first fine range holding one
    first_event = next((r.first_event for r in group if r.first_event < r.end), group[-1].end)
    return ByteRange(group[0].uri, group[0].start, group[-1].end, first_event,
                     None if None in events else sum(e for e in events if e is not None),
                     sum(r.transactions for r in group))


def pack_tasks(sizes: list[int], slots: int, target_bytes: int) -> list[list[int]]:
    """Tasks for decode ranges of ``sizes`` bytes: the indexes of the ranges each task runs,
    one after the other.

    A Spark task costs about 0.1 s of its own (scheduling, the Python worker's round trip,
    the Arrow streams) whatever it decodes: fine for a range of tens of MB, most of the time
    of a 1 MB binlog (a server rotating often, or a small ``max_binlog_size``).  So ranges of
    at least ``target_bytes / 4`` keep a task each, and the smaller ones are packed into
    tasks of about ``target_bytes / 2``, as many as make full rounds of ``slots`` cores, the
    bytes spread evenly over them (the largest range first into the emptiest task).  Each
    task's ranges keep their order (one file's ranges together, in order)."""
    if slots < 1 or target_bytes < 1:
        raise ValueError("slots and target_bytes must be positive")
    alone = [[i] for i, s in enumerate(sizes) if s >= target_bytes // 4]
    small = [i for i, s in enumerate(sizes) if s < target_bytes // 4]
    if len(small) <= 1:
        return sorted(alone + [[i] for i in small])
    total = sum(sizes[i] for i in small)
    n = max(1, -(-total // max(1, target_bytes // 2)))
    n = min(len(small), -(-n // slots) * slots)
    bins: list[tuple[int, int, list[int]]] = [(0, k, []) for k in range(n)]
    heapq.heapify(bins)
    for i in sorted(small, key=lambda i: (-sizes[i], i)):
        load, k, members = heapq.heappop(bins)
        members.append(i)
        heapq.heappush(bins, (load + sizes[i], k, members))
    return sorted(alone + [sorted(m) for _, _, m in bins if m])
