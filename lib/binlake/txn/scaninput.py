"""What a split scan (``txn.scan``) reads: a window over one binlog file, local or on S3, plain
or compressed, and :class:`ScanStats`, the record of what a scan read and examined.

A local file is read unbuffered, so that a seek skips the bytes for real; a gap shorter than
``READ_THROUGH`` is read through rather than seeked over.  On S3 a forward jump longer than
``S3_REOPEN_GAP`` (or a step back) re-opens the object at the landing point with a new ranged
GET; shorter jumps read through.  A compressed file is decompressed through (it cannot step
back).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..binlog.errors import BinlogError, SourceError
from ..binlog.source import open_binlog, size_of

# txn.scan imports CHUNK and S3_REOPEN_GAP by name (its hot loop reads them as globals): to
# change them at run time, set them in both modules.
CHUNK = 1 << 20  # read size of the header scan
# The fast path on a local file: after a seek read this much (txn.scan.JUMP_READ), and read
# through a gap this short rather than seek (a read from the page cache is cheaper than a
# seek plus a read per transaction).  Both 0: read exactly the GTID events and nothing else.
READ_THROUGH = 64 << 10
# S3: a forward gap longer than this re-opens the object at the landing point (a new ranged
# GET) instead of reading through; shorter jumps read through (and keep the bytes, so a
# failed landing check can step back without a new request).
S3_REOPEN_GAP = 8 << 20


@dataclass
class ScanStats:
    """What a scan did (pass one to :func:`~binlake.txn.split.transaction_starts` /
    :func:`~binlake.txn.split.split_file`).

    With ``record`` set, ``examined`` lists ``(offset, length)`` of every byte range the scan
    looked at (headers parsed, bodies decoded, checksums computed) and ``reads`` every read
    from the source.  On the fast path the scan examines nothing but the file header, the
    GTID events and the events between groups; what it *reads* around them depends on
    ``JUMP_READ`` / ``READ_THROUGH`` (both 0: exactly what it examines).
    """

    record: bool = False
    examined: list[tuple[int, int]] = field(default_factory=list)
    reads: list[tuple[int, int]] = field(default_factory=list)
    read_calls: int = 0
    bytes_read: int = 0
    bytes_skipped: int = 0  # jumped over without reading (seek, or an S3 re-open)
    bytes_read_through: int = 0  # read only to get past them (a short gap, S3, compressed)
    events: int = 0  # event headers looked at
    gtids: int = 0
    jumps: int = 0  # transaction_length jumps taken
    fast_path: bool = False  # the file was read with transaction_length jumps at first
    fallback_at: int | None = None  # the GTID whose transaction_length ended the jumps
    fallback_reason: str | None = None
    stopped_at: int | None = None  # no split points from here on
    stopped_reason: str | None = None
    end: int | None = None  # the file's (uncompressed) size
    transactions: int = 0  # split points found


class _Input:
    """A window over the file: ``buf`` holds the bytes from offset ``base``.

    ``fill(pos, n)`` makes ``[pos, pos + n)`` available (fewer bytes only at the end of the
    file), reading at least ``readahead`` bytes at a time: ``CHUNK`` for a header scan,
    ``JUMP_READ`` on a local file's fast path.
    """

    def __init__(self, uri: str, stats: ScanStats) -> None:
        self.uri = uri
        self.stats = stats
        opened = open_binlog(uri)
        self._opened = opened
        self.compressed = opened.compression is not None
        self.seekable = opened.seekable_ranges
        self.local = self.seekable and opened.location.scheme == "file"
        stream: Any = opened.stream
        # A local file is read unbuffered so a seek skips the bytes for real.
        self.stream: Any = getattr(stream, "raw", stream) if self.local else stream
        self.size: int | None = size_of(uri) if self.seekable else None
        self.eof_at: int | None = self.size  # the file's size, once known
        self.buf = b""
        self.base = 0
        self.readahead = CHUNK
        self.record = stats.record

    def close(self) -> None:
        try:
            self.stream.close()
        finally:
            self._opened.close()

    def _read(self, n: int) -> bytes:
        try:
            data = self.stream.read(n)
        except BinlogError as exc:
            raise exc.with_location(self.uri, self.base + len(self.buf)) from None
        except Exception as exc:  # I/O, corrupt gzip/zstd, S3
            raise SourceError(f"reading failed: {exc}", file=self.uri,
                              offset=self.base + len(self.buf)) from exc
        return data or b""

    def _reposition(self, pos: int) -> None:
        """Point the stream at ``pos`` and empty the window."""
        at = self.base + len(self.buf)  # where the stream is
        gap = pos - at
        if self.local and not 0 < gap <= READ_THROUGH:
            if gap > 0:
                self.stats.bytes_skipped += gap
            self.stream.seek(pos)
        elif gap >= 0 and (self.local or self.compressed or gap <= S3_REOPEN_GAP):
            left = gap  # read through (and drop) the gap
            while left > 0:
                chunk = self._read(min(left, CHUNK))
                if not chunk:
                    self.eof_at = pos - left
                    break
                left -= len(chunk)
                self.stats.bytes_read_through += len(chunk)
        elif self.compressed:
            raise SourceError("internal error: cannot step back in a compressed stream",
                              file=self.uri, offset=pos)
        else:  # S3: a long jump forward, or a step back: a new ranged GET from pos
            assert self.size is not None
            if pos > at:
                self.stats.bytes_skipped += pos - at
            self.stream.close()
            if pos < self.size:
                self.stream = open_binlog(self.uri, pos).stream
            else:
                self.stream = _Empty()
        self.buf = b""
        self.base = pos

    def fill(self, pos: int, n: int, look: bool = True) -> int:
        """Make ``buf[pos - base : pos - base + n]`` hold the file's bytes; return how many of
        the ``n`` bytes there are (fewer only at the end of the file).  ``look``: the caller
        examines them (recorded in the stats)."""
        if self.record and look:
            self.stats.examined.append((pos, n))
        base = self.base
        end = base + len(self.buf)
        if base <= pos and pos + n <= end:
            return n
        if pos < base or pos > end:
            self._reposition(pos)
            base = end = pos
        if self.eof_at is not None and end >= self.eof_at:
            return max(0, min(n, end - pos))
        keep = self.buf[pos - base:]
        parts = [keep] if keep else []
        missing = pos + n - end
        at = end
        while missing > 0:
            chunk = self._read(max(missing, self.readahead))
            if not chunk:
                self.eof_at = at
                break
            stats = self.stats
            stats.read_calls += 1
            stats.bytes_read += len(chunk)
            if self.record:
                stats.reads.append((at, len(chunk)))
            parts.append(chunk)
            at += len(chunk)
            missing -= len(chunk)
        self.buf = b"".join(parts) if len(parts) != 1 else parts[0]
        self.base = pos
        return min(n, len(self.buf))

    def file_end(self) -> int:
        """The file's (uncompressed) size; a compressed file is read to its end for it."""
        if self.eof_at is None:
            at = self.base + len(self.buf)
            while True:
                chunk = self._read(CHUNK)
                if not chunk:
                    break
                at += len(chunk)
            self.eof_at = at
        return self.eof_at


class _Empty:
    def read(self, n: int = -1) -> bytes:
        return b""

    def close(self) -> None:
        pass
