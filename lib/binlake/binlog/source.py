"""Opening binlog bytes: local paths or ``s3://`` URIs, plain or gzip/zstd compressed.

The decoder reads through :func:`open_binlog`, which returns a binary file object that
reads forward (``read``) and, for plain local files and S3 objects, can also be opened at a
byte offset so that a Spark executor reads only its transaction-aligned slice.  Compressed
containers are detected from their magic bytes, not from the name, and are decompressed as a
stream (memory is bounded by the read size, never by the file).
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from typing import IO, Any, cast
from urllib.parse import urlparse

from .constants import GZIP_MAGIC, ZSTD_MAGIC
from .errors import SourceError


@dataclass(frozen=True)
class Location:
    """Where a binlog lives: a local path or an object in S3."""

    uri: str
    scheme: str  # "file" or "s3"
    bucket: str | None = None
    key: str | None = None
    path: str | None = None

    @property
    def name(self) -> str:
        """The binlog file name (last path component), e.g. ``mariadb-bin.000042``."""
        tail = (self.key or self.path or self.uri).rstrip("/").rsplit("/", 1)[-1]
        for suffix in (".gz", ".zst", ".zstd"):
            if tail.endswith(suffix):
                return tail[: -len(suffix)]
        return tail


def parse_location(uri: str | os.PathLike[str]) -> Location:
    text = os.fspath(uri)
    parsed = urlparse(text)
    if parsed.scheme == "s3":
        if not parsed.netloc or not parsed.path.lstrip("/"):
            raise SourceError(f"not a valid s3 URI {text!r}; expected s3://bucket/key", file=text)
        return Location(uri=text, scheme="s3", bucket=parsed.netloc, key=parsed.path.lstrip("/"))
    if parsed.scheme == "file":
        return Location(uri=text, scheme="file", path=parsed.path)
    if parsed.scheme and len(parsed.scheme) > 1:
        raise SourceError(f"unsupported URI scheme {parsed.scheme!r}", file=text,
                          expected="a local path, file:// or s3://", actual=parsed.scheme)
    return Location(uri=text, scheme="file", path=text)


# --- S3 ----------------------------------------------------------------------------------

_S3_CLIENT: Any = None


def s3_client() -> Any:
    """A boto3 S3 client configured from the environment.

    ``BINLAKE_S3_ENDPOINT_URL`` (or ``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL``, which
    boto3 honours itself) points it at an S3-compatible store such as a moto server.
    """
    global _S3_CLIENT
    if _S3_CLIENT is None:
        import boto3  # lazy: the decoder works without boto3 for local files

        endpoint = os.environ.get("BINLAKE_S3_ENDPOINT_URL") or None
        _S3_CLIENT = boto3.client("s3", endpoint_url=endpoint)
    return _S3_CLIENT


def reset_s3_client() -> None:
    """Forget the cached client (tests change the endpoint between servers)."""
    global _S3_CLIENT
    _S3_CLIENT = None


def s3_problem(exc: BaseException) -> str:
    """What went wrong with an S3 call, in a few words: the missing object or bucket, the
    endpoint that cannot be reached, the missing credentials, else botocore's text."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        code = str(response.get("Error", {}).get("Code", ""))
        if code in ("404", "NoSuchKey", "NotFound"):
            return f"no such object ({code})"
        if code == "NoSuchBucket":
            return f"no such bucket ({code})"
        if code in ("403", "AccessDenied"):
            return f"access denied ({code})"
    name = type(exc).__name__
    if name in ("EndpointConnectionError", "ConnectTimeoutError", "ConnectionClosedError"):
        return f"cannot reach the S3 endpoint ({exc})"
    if name in ("NoCredentialsError", "PartialCredentialsError"):
        return "no AWS credentials (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or a profile)"
    return str(exc) or name


def check_readable(uri: str | os.PathLike[str]) -> None:
    """Raise :class:`SourceError` unless ``uri`` names an object that can be read: a local
    file (not a directory) or an ``s3://`` object (one HEAD request)."""
    loc = parse_location(uri)
    if loc.scheme == "s3":
        try:
            s3_client().head_object(Bucket=loc.bucket, Key=loc.key)
        except Exception as exc:  # botocore errors have no common importable base here
            raise SourceError(f"cannot read object: {s3_problem(exc)}", file=loc.uri) from exc
        return
    assert loc.path is not None
    if os.path.isdir(loc.path):
        raise SourceError("is a directory, not a binlog file", file=loc.uri)
    try:
        with open(loc.path, "rb"):
            pass
    except OSError as exc:
        raise SourceError(f"cannot open: {exc.strerror}", file=loc.uri) from exc


def list_s3(uri: str) -> list[str]:
    """The ``s3://`` URIs of the objects under the prefix ``uri`` (which ends with ``/``)."""
    loc = parse_location(uri)
    out = []
    try:
        for page in s3_client().get_paginator("list_objects_v2").paginate(
                Bucket=loc.bucket, Prefix=loc.key):
            out += [f"s3://{loc.bucket}/{obj['Key']}" for obj in page.get("Contents", [])]
    except Exception as exc:
        raise SourceError(f"cannot list objects: {s3_problem(exc)}", file=uri) from exc
    return out


class _S3Stream(io.RawIOBase):
    """A forward-only reader over ``GetObject`` with an optional byte range."""

    def __init__(self, loc: Location, start: int = 0, end: int | None = None) -> None:
        self._loc = loc
        rng = f"bytes={start}-" if end is None else f"bytes={start}-{end - 1}"
        try:
            kwargs: dict[str, Any] = {"Bucket": loc.bucket, "Key": loc.key}
            if start or end is not None:
                kwargs["Range"] = rng
            self._body = s3_client().get_object(**kwargs)["Body"]
        except Exception as exc:  # botocore errors have no common importable base here
            raise SourceError(f"cannot read object: {s3_problem(exc)}", file=loc.uri,
                              offset=start) from exc

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        try:
            data = self._body.read(len(b))
        except Exception as exc:
            raise SourceError(f"reading object failed: {exc}", file=self._loc.uri) from exc
        n = len(data)
        b[:n] = data
        return n

    def close(self) -> None:
        try:
            self._body.close()
        finally:
            super().close()


def _open_raw(loc: Location, start: int = 0, end: int | None = None) -> IO[bytes]:
    if loc.scheme == "s3":
        return io.BufferedReader(_S3Stream(loc, start, end), buffer_size=1 << 20)
    assert loc.path is not None
    try:
        f = open(loc.path, "rb")  # noqa: SIM115 - returned to the caller
    except OSError as exc:
        raise SourceError(f"cannot open: {exc.strerror}", file=loc.uri) from exc
    if start:
        f.seek(start)
    return f


class HashTap:
    """The sha256 and size of a stored object, taken from the bytes a reader reads anyway:
    :func:`open_binlog` with ``tap=`` feeds it every raw (stored, still compressed) byte
    read from the start of the object, in order; :meth:`finish` reads and hashes whatever
    the reader left (after a damaged event, or buffered past its end), so that a survey
    reads an S3 object once instead of once for the hash and once for the events."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        import hashlib

        self._h = hashlib.sha256()
        self.n = 0  # bytes hashed, all from offset 0 on
        self.eof = False  # the object's end was read

    def update(self, data: bytes | memoryview) -> None:
        if data:
            self._h.update(data)
            self.n += len(data)
        else:
            self.eof = True

    def finish(self, uri: str | os.PathLike[str]) -> tuple[str, int]:
        """(sha256 hex digest, size) of the whole stored object at ``uri``."""
        if not self.eof:
            loc = parse_location(uri)
            try:
                rest = _open_raw(loc, self.n)
            except SourceError:
                if not self.n:
                    raise
                # (an S3 range starting at the object's end is refused: hash it all again)
                self._reset()
                rest = _open_raw(loc)
            with rest:
                while True:
                    b = rest.read(1 << 20)
                    self.update(b)
                    if not b:
                        break
        return self._h.hexdigest(), self.n


class _Tapped(io.RawIOBase):
    """A raw stream whose bytes also go to a :class:`HashTap` as they are read."""

    def __init__(self, raw: IO[bytes], tap: HashTap) -> None:
        self._raw = raw
        self._tap = tap

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        data = self._raw.read(len(b))
        n = len(data)
        b[:n] = data
        self._tap.update(data)
        return n

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            super().close()


def _tapped(raw: IO[bytes], tap: HashTap | None) -> IO[bytes]:
    return raw if tap is None else cast(IO[bytes], _Tapped(raw, tap))


def size_of(uri: str | os.PathLike[str]) -> int:
    """Size in bytes of the stored object (compressed size for compressed files)."""
    loc = parse_location(uri)
    if loc.scheme == "s3":
        try:
            return int(s3_client().head_object(Bucket=loc.bucket, Key=loc.key)["ContentLength"])
        except Exception as exc:
            raise SourceError(f"cannot stat object: {s3_problem(exc)}", file=loc.uri) from exc
    assert loc.path is not None
    try:
        return os.path.getsize(loc.path)
    except OSError as exc:
        raise SourceError(f"cannot stat: {exc.strerror}", file=loc.uri) from exc


class _Decompressing(io.RawIOBase):
    """A gzip or zstd stream decompressed incrementally (zlib / zstandard decompressobj).

    Unlike ``gzip.GzipFile``, a stream that ends before its end marker does not lose the
    bytes already decompressed: they are returned, and ``truncated`` is set so the reader can
    report the damaged container after the last whole event.  Concatenated members (gzip)
    and frames (zstd) are read one after the other.
    """

    def __init__(self, raw: IO[bytes], kind: str) -> None:
        self._raw = raw
        self._kind = kind
        self._pending = b""
        self._at = 0  # read offset into _pending
        self._obj: Any = self._new()
        self._finished = False  # the current member/frame reached its end marker
        self.truncated = False
        self._eof = False

    def _new(self) -> Any:
        if self._kind == "gzip":
            import zlib

            return zlib.decompressobj(wbits=31)
        import zstandard

        return zstandard.ZstdDecompressor().decompressobj()

    def readable(self) -> bool:
        return True

    def _fill(self) -> None:
        if self._at >= len(self._pending):
            self._pending = b""
            self._at = 0
        while not self._pending and not self._eof:
            chunk = self._raw.read(1 << 20)
            if not chunk:
                self._eof = True
                self.truncated = not self._finished
                return
            while chunk:
                if self._finished:
                    self._obj = self._new()
                    self._finished = False
                try:
                    out = self._obj.decompress(chunk)
                except Exception as exc:  # zlib.error / zstandard.ZstdError
                    raise SourceError(f"corrupt {self._kind} stream: {exc}") from exc
                self._pending += out
                if self._obj.eof:
                    self._finished = True
                    chunk = self._obj.unused_data
                else:
                    chunk = b""

    def readinto(self, b: Any) -> int:
        self._fill()
        n = min(len(b), len(self._pending) - self._at)
        b[:n] = memoryview(self._pending)[self._at:self._at + n]
        self._at += n
        return n

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            super().close()


@dataclass
class OpenedBinlog:
    """An open stream plus what we learnt opening it."""

    stream: IO[bytes]
    location: Location
    compression: str | None  # None, "gzip" or "zstd"
    seekable_ranges: bool  # True when a byte range can be opened without reading the prefix
    container: _Decompressing | None = None  # for compressed files: knows if it was cut short

    @property
    def truncated_container(self) -> bool:
        return self.container is not None and self.container.truncated

    def close(self) -> None:
        self.stream.close()


def _sniff(loc: Location) -> bytes:
    if loc.scheme == "s3":
        try:
            body = s3_client().get_object(Bucket=loc.bucket, Key=loc.key, Range="bytes=0-3")["Body"]
            head = body.read()
            body.close()
            return bytes(head)
        except Exception as exc:
            raise SourceError(f"cannot read object: {s3_problem(exc)}", file=loc.uri) from exc
    with _open_raw(loc) as f:
        return f.read(4)


def open_binlog(uri: str | os.PathLike[str], start: int = 0, end: int | None = None,
                tap: HashTap | None = None) -> OpenedBinlog:
    """Open a binlog for reading from byte ``start`` (of the uncompressed stream) to ``end``.

    For plain files and S3 objects the range is read directly; for compressed files the
    stream is decompressed from the beginning and the prefix skipped.  ``tap`` (only with
    neither ``start`` nor ``end``) gets the stored bytes as they are read.
    """
    if tap is not None and (start or end is not None):
        raise ValueError("a HashTap needs the whole object, read from its start")
    loc = parse_location(uri)
    head = _sniff(loc)
    compression = None
    if head.startswith(GZIP_MAGIC):
        compression = "gzip"
    elif head.startswith(ZSTD_MAGIC):
        compression = "zstd"
    if compression is None:
        raw = _open_raw(loc, start, end)
        return OpenedBinlog(_tapped(raw, tap), loc, None, True)
    container = _Decompressing(_tapped(_open_raw(loc), tap), compression)
    stream: IO[bytes] = io.BufferedReader(container, buffer_size=1 << 20)
    remaining = start
    while remaining > 0:
        chunk = stream.read(min(remaining, 1 << 20))
        if not chunk:
            break
        remaining -= len(chunk)
    return OpenedBinlog(stream, loc, compression, False, container)
