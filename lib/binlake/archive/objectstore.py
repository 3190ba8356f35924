"""Where archived binlog files live: a local directory (the embedded default) or S3.

Layout (both backends): one object per binlog file at ``<prefix>/<source>/<file name>``.
Each object carries its metadata -- ``sha256``, ``size``, ``source``, ``archived_at`` (UTC,
ISO 8601) -- as S3 user metadata, or, for the local directory, in a sidecar JSON file
``<root>/<source>/_meta/<file name>.json`` (the load job's directory listing does not recurse,
so it never sees ``_meta/``).

Rules every backend keeps:

* **Never overwritten.** Putting an object whose key exists with another sha256 raises
  :class:`ObjectConflictError`; with the same sha256 it is a no-op (``put`` says so).
* **Never visible half-written.** Local: the bytes go to ``<root>/<source>/_tmp/`` and are
  ``os.replace``-d into place after an fsync (the sidecar is written first, so a visible
  object always has its metadata).  S3: ``upload_file`` with a multipart threshold; a
  multipart upload becomes visible only when it completes, and is aborted on failure.
* **A killed writer's leftovers are removed by the next write.** Local: every write into a
  source's directory holds an exclusive ``flock`` on ``<root>/<source>/.lock`` (released by
  the kernel when its process dies) and stages in ``_tmp/``; whoever takes the lock removes
  what is in ``_tmp/`` (no live writer can own it).  S3: before uploading a key, ``put``
  aborts the key's incomplete multipart uploads (a process killed mid-upload never aborts
  its own; they are invisible but their parts are stored).  tests/test_archive_kill.py
  SIGKILLs ``binlake archive`` at random moments; docs/reliability.md.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlparse

from ..txn.files import binlog_file

META_DIR = "_meta"
TMP_DIR = "_tmp"
LOCK = ".lock"  # <root>/<source>/.lock: held (flock) while writing into that directory
GAPS = "_gaps.json"  # per source, under META_DIR: the purged files already reported

log = logging.getLogger(__name__)


class ObjectStoreError(RuntimeError):
    """The object store could not be read or written."""


class ObjectConflictError(ObjectStoreError):
    """An object exists under the key with different content; it is never overwritten."""

    def __init__(self, uri: str, stored: str | None, new: str) -> None:
        super().__init__(f"{uri}: already archived with sha256 {stored!r}, the source now has "
                         f"{new!r}; refusing to overwrite (a reset server reusing file names? "
                         f"move the old object away by hand if the new file is the right one)")
        self.uri, self.stored, self.new = uri, stored, new


@dataclass(frozen=True)
class StoredObject:
    source: str
    name: str  # binlog file name
    uri: str  # what the load job reads (a local path or s3://bucket/key)
    sha256: str | None
    size: int
    archived_at: str | None  # ISO 8601 UTC

    @property
    def seq(self) -> int:
        return binlog_file(self.name).seq

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _fsync_dir(path: Path) -> None:
    """Make the renames into ``path`` durable (for a power cut; a killed process loses
    nothing the kernel has)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sha256_file(path: str | os.PathLike[str]) -> tuple[str, int]:
    h = hashlib.sha256()
    n = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
            n += len(chunk)
    return h.hexdigest(), n


class ObjectStore(Protocol):
    root_uri: str

    def uri(self, source: str, name: str) -> str: ...

    def head(self, source: str, name: str) -> StoredObject | None: ...

    def list(self, source: str) -> list[StoredObject]: ...

    def put(self, source: str, name: str, path: str | os.PathLike[str], *, sha256: str,
            size: int, archived_at: str | None = None) -> tuple[StoredObject, bool]:
        """Store the file; return (object, True if written / False if already there)."""
        ...

    def read_json(self, source: str, name: str) -> Any: ...

    def write_json(self, source: str, name: str, value: Any) -> None: ...


# -- local directory ------------------------------------------------------------------------

class LocalStore:
    """A directory acting as the object store: ``<root>/<source>/<file>``."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).expanduser().absolute()
        self.root_uri = str(self.root)

    def uri(self, source: str, name: str) -> str:
        return str(self.root / source / name)

    def _meta(self, source: str, name: str) -> Path:
        return self.root / source / META_DIR / f"{name}.json"

    def head(self, source: str, name: str) -> StoredObject | None:
        path = self.root / source / name
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            return None
        try:
            meta = json.loads(self._meta(source, name).read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            meta = {}
        return StoredObject(source, name, str(path), meta.get("sha256"), size,
                            meta.get("archived_at"))

    def list(self, source: str) -> list[StoredObject]:
        d = self.root / source
        if not d.is_dir():
            return []
        out = []
        for entry in sorted(os.listdir(d)):
            if entry.startswith(("_", ".")) or binlog_file(entry).seq < 0:
                continue
            obj = self.head(source, entry)
            if obj is not None:
                out.append(obj)
        return out

    @contextlib.contextmanager
    def _writing(self, source: str) -> Iterator[Path]:
        """Hold the source's write lock (``<source>/.lock``, flock: released when the
        holder's process dies, however it dies) and yield ``_tmp/``, where every write is
        staged.  Whatever is in ``_tmp/`` when the lock is taken was left by a writer that
        died mid-write (a live one would hold the lock): it is removed here.  So are the
        staging files older versions left in ``_meta/`` (``.<name>.json.*``)."""
        base = self.root / source
        tmp = base / TMP_DIR
        tmp.mkdir(parents=True, exist_ok=True)
        fd = os.open(base / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            stale = [e.path for e in os.scandir(tmp)]
            with contextlib.suppress(FileNotFoundError):
                stale += [e.path for e in os.scandir(base / META_DIR) if e.name.startswith(".")]
            for path in stale:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
            if stale:
                log.info("%s: removed %d temporary file(s) of an interrupted write",
                         base, len(stale))
            yield tmp
        finally:
            os.close(fd)  # releases the lock

    def _stage(self, tmp_dir: Path, name: str, write: Any) -> str:
        """Write into a new temp file under ``tmp_dir`` (fsync'ed); return its path."""
        fd, tmp = tempfile.mkstemp(dir=tmp_dir, prefix=f".{name}.")
        try:
            with os.fdopen(fd, "wb") as out:
                write(out)
                out.flush()
                os.fsync(out.fileno())
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        return tmp

    def _write_json(self, tmp_dir: Path, dest: Path, value: Any) -> None:
        """Under :meth:`_writing`: stage in ``tmp_dir``, then rename into place."""
        tmp = self._stage(tmp_dir, dest.name,
                          lambda out: out.write(json.dumps(value, indent=1).encode()))
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, dest)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        _fsync_dir(dest.parent)

    def put(self, source: str, name: str, path: str | os.PathLike[str], *, sha256: str,
            size: int, archived_at: str | None = None) -> tuple[StoredObject, bool]:
        dest = self.root / source / name
        with self._writing(source) as tmp_dir:
            existing = self.head(source, name)
            if existing is not None:
                stored = existing.sha256 or sha256_file(existing.uri)[0]
                if stored != sha256:
                    raise ObjectConflictError(existing.uri, stored, sha256)
                return existing, False
            h = hashlib.sha256()

            def copy(out: Any) -> None:
                with open(path, "rb") as src:
                    while chunk := src.read(1 << 20):
                        h.update(chunk)
                        out.write(chunk)

            part = self._stage(tmp_dir, name, copy)
            try:
                # Checked as copied: a file that changed since it was hashed is not stored.
                if h.hexdigest() != sha256:
                    raise ObjectStoreError(f"{path}: changed while being archived "
                                           f"(sha256 {h.hexdigest()} != {sha256})")
                # The sidecar first: a visible object always has its metadata (a sidecar
                # without its object, left by a kill here, is rewritten by the next put).
                self._write_json(tmp_dir, self._meta(source, name),
                                 {"sha256": sha256, "size": size, "source": source,
                                  "archived_at": archived_at or now_iso()})
                os.replace(part, dest)  # the object appears complete, or not at all
                _fsync_dir(dest.parent)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(part)
        obj = self.head(source, name)
        assert obj is not None
        return obj, True

    def read_json(self, source: str, name: str) -> Any:
        try:
            return json.loads((self.root / source / META_DIR / name).read_text("utf-8"))
        except FileNotFoundError:
            return None

    def write_json(self, source: str, name: str, value: Any) -> None:
        with self._writing(source) as tmp_dir:
            self._write_json(tmp_dir, self.root / source / META_DIR / name, value)


# -- S3 -------------------------------------------------------------------------------------

class S3Store:
    """``s3://bucket/prefix/<source>/<file>`` with the metadata as object user metadata."""

    def __init__(self, bucket: str, prefix: str = "", *, client: Any = None,
                 endpoint_url: str | None = None, multipart_bytes: int = 64 << 20) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.multipart_bytes = max(5 << 20, multipart_bytes)
        if client is None:
            import boto3

            client = boto3.client("s3", endpoint_url=endpoint_url or None)
        self.client = client
        self.root_uri = f"s3://{bucket}/{self.prefix}".rstrip("/")

    def key(self, source: str, name: str) -> str:
        return "/".join(p for p in (self.prefix, source, name) if p)

    def uri(self, source: str, name: str) -> str:
        return f"s3://{self.bucket}/{self.key(source, name)}"

    def head(self, source: str, name: str) -> StoredObject | None:
        from botocore.exceptions import ClientError

        try:
            r = self.client.head_object(Bucket=self.bucket, Key=self.key(source, name))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise ObjectStoreError(f"{self.uri(source, name)}: {exc}") from exc
        meta = r.get("Metadata") or {}
        return StoredObject(source, name, self.uri(source, name), meta.get("sha256"),
                            int(r["ContentLength"]), meta.get("archived_at"))

    def list(self, source: str) -> list[StoredObject]:
        prefix = self.key(source, "") + "/"
        names = []
        for page in self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=prefix, Delimiter="/"):
            for obj in page.get("Contents", []):
                name = obj["Key"][len(prefix):]
                if name and not name.startswith(("_", ".")) and binlog_file(name).seq >= 0:
                    names.append(name)
        out = []
        for name in sorted(names):
            obj = self.head(source, name)
            if obj is not None:
                out.append(obj)
        return out

    def put(self, source: str, name: str, path: str | os.PathLike[str], *, sha256: str,
            size: int, archived_at: str | None = None) -> tuple[StoredObject, bool]:
        from boto3.s3.transfer import TransferConfig

        existing = self.head(source, name)
        if existing is not None:
            if existing.sha256 != sha256:
                raise ObjectConflictError(existing.uri, existing.sha256, sha256)
            return existing, False
        self._abort_incomplete(self.key(source, name))
        meta = {"sha256": sha256, "size": str(size), "source": source,
                "archived_at": archived_at or now_iso()}
        cfg = TransferConfig(multipart_threshold=self.multipart_bytes,
                             multipart_chunksize=self.multipart_bytes, use_threads=False)
        # s3transfer: one PutObject below the threshold, else a multipart upload that only
        # becomes an object on CompleteMultipartUpload and is aborted if any part fails.
        try:
            self.client.upload_file(os.fspath(path), self.bucket, self.key(source, name),
                                    ExtraArgs={"Metadata": meta}, Config=cfg)
        except Exception as exc:
            raise ObjectStoreError(f"upload of {path} to {self.uri(source, name)} failed: "
                                   f"{exc}") from exc
        obj = self.head(source, name)
        if obj is None or obj.size != size or obj.sha256 != sha256:
            raise ObjectStoreError(f"{self.uri(source, name)}: after upload the store says "
                                   f"{obj!r}, expected size {size} sha256 {sha256}")
        return obj, True

    def _abort_incomplete(self, key: str) -> None:
        """Abort the incomplete multipart uploads of ``key``: a process killed mid-upload
        leaves its upload behind (never an object, but its parts are stored, and billed,
        until aborted).  Best effort: without ``s3:ListBucketMultipartUploads`` /
        ``s3:AbortMultipartUpload`` the bucket's lifecycle rule
        (AbortIncompleteMultipartUpload) has to do it; a warning says so.  An upload of the
        same key by a concurrent archiver would be aborted too: that one then fails cleanly
        (NoSuchUpload), nothing half-written appears, and a rerun finds the object."""
        try:
            for page in self.client.get_paginator("list_multipart_uploads").paginate(
                    Bucket=self.bucket, Prefix=key):
                for upload in page.get("Uploads", []):
                    if upload["Key"] != key:
                        continue
                    self.client.abort_multipart_upload(Bucket=self.bucket, Key=key,
                                                       UploadId=upload["UploadId"])
                    log.info("s3://%s/%s: aborted the incomplete multipart upload %s "
                             "(an interrupted archive run)", self.bucket, key,
                             upload["UploadId"])
        except Exception as exc:  # cleanup only: the upload that follows decides
            log.warning("s3://%s/%s: could not abort incomplete multipart uploads (%s); "
                        "an AbortIncompleteMultipartUpload lifecycle rule must remove "
                        "them", self.bucket, key, exc)

    def read_json(self, source: str, name: str) -> Any:
        try:
            r = self.client.get_object(Bucket=self.bucket,
                                       Key=self.key(source, f"{META_DIR}/{name}"))
        except self.client.exceptions.NoSuchKey:
            return None
        return json.loads(r["Body"].read())

    def write_json(self, source: str, name: str, value: Any) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self.key(source, f"{META_DIR}/{name}"),
                               Body=json.dumps(value, indent=1).encode(),
                               ContentType="application/json")


# -- choosing a store -----------------------------------------------------------------------

def open_store(archive_uri: str, *, home: str | os.PathLike[str] = ".binlake",
               client: Any = None, endpoint_url: str | None = None,
               multipart_bytes: int = 64 << 20) -> ObjectStore:
    """``""`` -> ``<home>/archive``; a path or ``file://`` -> that directory;
    ``s3://bucket[/prefix]`` -> S3 (``client``: e.g. an Airflow S3Hook's client)."""
    if not archive_uri:
        return LocalStore(Path(home).expanduser() / "archive")
    parsed = urlparse(archive_uri)
    if parsed.scheme == "s3":
        return S3Store(parsed.netloc, parsed.path, client=client, endpoint_url=endpoint_url,
                       multipart_bytes=multipart_bytes)
    if parsed.scheme in ("", "file"):
        return LocalStore(parsed.path if parsed.scheme == "file" else archive_uri)
    raise ObjectStoreError(f"archive_uri: unsupported scheme {parsed.scheme!r} "
                           f"(a directory, file:// or s3://)")


def store_for(settings: Any, *, client: Any = None) -> ObjectStore:
    return open_store(settings.archive_uri, home=settings.home_path, client=client,
                      endpoint_url=settings.s3_endpoint_url or None,
                      multipart_bytes=settings.archive_multipart_bytes)


def recorded(uri: str) -> tuple[str | None, str | None]:
    """The sha256 recorded when ``uri`` (an archived object: local path or s3:// URI) was
    archived, lower-case, and where it was read: S3 object metadata ``sha256``, or the
    sidecar ``<dir>/_meta/<name>.json`` of the local store.  (None, None) when the object or
    its metadata is missing or unreadable (a plain directory of binlogs records nothing)."""
    parsed = urlparse(uri)
    if parsed.scheme == "s3":
        from ..binlog.source import s3_client

        try:
            r = s3_client().head_object(Bucket=parsed.netloc, Key=parsed.path.lstrip("/"))
        except Exception:
            return None, None
        value = (r.get("Metadata") or {}).get("sha256")
        return (str(value).lower(), "s3 object metadata") if value else (None, None)
    path = Path(parsed.path if parsed.scheme == "file" else uri)
    side = path.parent / META_DIR / f"{path.name}.json"
    try:
        meta = json.loads(side.read_text("utf-8"))
        value = meta.get("sha256")
    except (OSError, ValueError, AttributeError):
        return None, None
    return (str(value).lower(), str(side)) if value else (None, None)


def recorded_sha256(uri: str) -> str | None:
    """Just the sha256 of :func:`recorded`."""
    return recorded(uri)[0]


def iter_sorted(objs: list[StoredObject]) -> Iterator[StoredObject]:
    yield from sorted(objs, key=lambda o: (binlog_file(o.name).base, o.seq))
