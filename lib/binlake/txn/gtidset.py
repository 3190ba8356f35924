"""GTID sets: :class:`IntervalSet` (the gnos of one uuid, as intervals) and the text of a set.

The text is MySQL's GTID set notation (``uuid[:tag]:a-b:c,...``), cut to ``SET_TEXT_MAX``
characters in findings.  Used by the GTID continuity checks (:mod:`binlake.txn.check_gtids`)
and by the quality facts.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator

__all__ = ["SET_TEXT_MAX", "GtidKey", "IntervalSet", "gtid_key_text", "gtid_set_text",
           "interval_text"]

SET_TEXT_MAX = 400  # characters of a GTID set kept in a finding's message


class IntervalSet:
    """A set of integers as sorted, disjoint, non-adjacent closed intervals ``[start, end]``.

    Adding the successor of the maximum (the normal case for GTID numbers) is O(1); memory is
    one pair of ints per hole, not per number.
    """

    __slots__ = ("ends", "starts")

    def __init__(self, intervals: Iterable[tuple[int, int] | list[int]] = ()) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        for a, b in intervals:
            self.add(a, b)

    def copy(self) -> IntervalSet:
        new = IntervalSet()
        new.starts = list(self.starts)
        new.ends = list(self.ends)
        return new

    def __contains__(self, x: object) -> bool:
        if not isinstance(x, int):
            return False
        i = bisect_right(self.starts, x) - 1
        return i >= 0 and x <= self.ends[i]

    def __bool__(self) -> bool:
        return bool(self.starts)

    def __len__(self) -> int:
        """The number of intervals (not of integers)."""
        return len(self.starts)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IntervalSet):
            return NotImplemented
        return self.starts == other.starts and self.ends == other.ends

    __hash__ = None  # type: ignore[assignment]

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return zip(self.starts, self.ends, strict=True)

    def __repr__(self) -> str:
        return f"IntervalSet({list(self)})"

    def max(self) -> int | None:
        return self.ends[-1] if self.ends else None

    def min(self) -> int | None:
        return self.starts[0] if self.starts else None

    def add(self, a: int, b: int | None = None) -> None:
        """Add ``[a, b]`` (``b`` defaults to ``a``)."""
        if b is None:
            b = a
        if b < a:
            return
        starts, ends = self.starts, self.ends
        if not starts or a > ends[-1] + 1:
            starts.append(a)
            ends.append(b)
            return
        if a >= starts[-1]:  # overlaps or touches the last interval
            if b > ends[-1]:
                ends[-1] = b
            return
        i = bisect_left(ends, a - 1)  # first interval that ends at or after a - 1
        j = bisect_right(starts, b + 1)  # intervals [i, j) touch [a, b]
        if i < j:
            a = min(a, starts[i])
            b = max(b, ends[j - 1])
        starts[i:j] = [a]
        ends[i:j] = [b]

    def update(self, other: IntervalSet) -> None:
        for a, b in other:
            self.add(a, b)

    def difference(self, other: IntervalSet | None) -> list[tuple[int, int]]:
        """The intervals of ``self`` not in ``other``."""
        if other is None or not other:
            return list(self)
        out: list[tuple[int, int]] = []
        os_, oe = other.starts, other.ends
        for a, b in self:
            cur = a
            k = max(bisect_right(os_, a) - 1, 0)
            while k < len(os_) and os_[k] <= b:
                if oe[k] >= cur:
                    if os_[k] > cur:
                        out.append((cur, os_[k] - 1))
                    cur = oe[k] + 1
                    if cur > b:
                        break
                k += 1
            if cur <= b:
                out.append((cur, b))
        return out


def interval_text(intervals: Iterable[tuple[int, int]]) -> str:
    return ":".join(str(a) if a == b else f"{a}-{b}" for a, b in intervals)


GtidKey = tuple[str, str | None]  # (uuid, tag)


def gtid_set_text(sets: dict[GtidKey, list[tuple[int, int]]]) -> str:
    parts = []
    for (uuid, tag), intervals in sorted(sets.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        if intervals:
            parts.append(f"{uuid}:{tag + ':' if tag else ''}{interval_text(intervals)}")
    text = ",".join(parts)
    return text if len(text) <= SET_TEXT_MAX else text[:SET_TEXT_MAX] + "..."


def gtid_key_text(key: GtidKey) -> str:
    uuid, tag = key
    return f"{uuid}:{tag}" if tag else uuid
