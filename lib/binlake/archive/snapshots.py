"""Schema snapshots stored beside the archived binlogs (docs/schema.md, "Snapshots").

Layout: ``<archive>/<source>/_schema/<binlog file>-<pos>.jsonl`` (the snapshot's position),
``_schema/initial-<UTC time>.jsonl`` for one without a position.  The ``_schema/`` directory
is written like a source's directory (:mod:`.objectstore`, pseudo-source
``<source>/_schema``): never overwritten, never visible half-written, its sha256 recorded as
S3 user metadata or in the sidecar ``_schema/_meta/<name>.json``
(:func:`~binlake.archive.objectstore.recorded` reads both).  The binlog listings skip it
(``_`` names).

:func:`store_snapshot` writes nothing when the newest stored snapshot has the same schema
(:meth:`Snapshot.schema_sha256`), so taking one every archive run is cheap.
:func:`list_snapshots` / :func:`read_snapshot` are what the lake reads (by URI)."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import tempfile
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlparse

from ..schema.snapshot import Snapshot, SnapshotError, parse_snapshot
from ..txn.files import binlog_file
from .objectstore import (
    ObjectConflictError,
    ObjectStore,
    ObjectStoreError,
    S3Store,
    recorded,
)

SCHEMA_DIR = "_schema"
log = logging.getLogger(__name__)

_NAME = re.compile(r"^(?:initial|(?P<file>.+\.\d+)-(?P<pos>\d+))(?:-(?P<stamp>\d{8}T\d{6}Z))?"
                   r"\.jsonl$")


class SnapshotIntegrityError(SnapshotError, ObjectStoreError):
    """A stored snapshot's bytes do not have the sha256 recorded when it was stored (or none
    was recorded)."""

    def __init__(self, uri: str, recorded_sha: str | None, actual: str) -> None:
        why = ("no sha256 is recorded for it" if recorded_sha is None else
               f"its bytes have sha256 {actual}, {recorded_sha} was recorded when it was stored")
        super().__init__(f"{uri}: schema snapshot cannot be trusted: {why}")
        self.uri, self.recorded, self.actual = uri, recorded_sha, actual


@dataclass
class StoreResult:
    written: bool
    uri: str  # the object written, or the stored one it is identical to
    sha256: str
    reason: str  # "stored", "identical to the newest stored snapshot", "already stored"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _stamp(taken_at: str) -> str:
    return re.sub(r"[^0-9T]", "", taken_at)[:15] + "Z"


def snapshot_name(snap: Snapshot, *, unique: bool = False) -> str:
    """``<binlog file>-<pos>.jsonl`` (``-<taken_at>`` before ``.jsonl`` with ``unique``),
    or ``initial-<taken_at>.jsonl``."""
    if snap.position is None:
        return f"initial-{_stamp(snap.taken_at)}.jsonl"
    base = f"{snap.position.file}-{snap.position.pos}"
    return f"{base}-{_stamp(snap.taken_at)}.jsonl" if unique else f"{base}.jsonl"


def order_key(uri: str) -> tuple[int, int, str]:
    """Position order of stored snapshot names: the position-less first (by time), then by
    (binlog sequence, pos), then by time."""
    name = uri.rstrip("/").rsplit("/", 1)[-1]
    m = _NAME.match(name)
    if m is None:
        return (-2, 0, name)
    if m.group("file") is None:
        return (-1, 0, m.group("stamp") or "")
    return (binlog_file(m.group("file")).seq, int(m.group("pos")), m.group("stamp") or "")


def source_uri(store: ObjectStore, source: str) -> str:
    """The directory / prefix holding ``source``'s binlogs (and its ``_schema/``)."""
    return store.uri(source, "").rstrip("/")


def list_snapshots(archive_uri: str, source: str | None = None, *,
                   client: Any = None) -> list[str]:
    """URIs of the snapshots stored under ``archive_uri`` (the directory or ``s3://`` prefix
    holding a source's binlogs; with ``source``: the archive's root, as ``archive_uri``
    is set), in position order.  ``client``: a boto3 S3 client (default:
    :func:`binlake.binlog.source.s3_client`)."""
    base = archive_uri.rstrip("/") + (f"/{source}" if source else "")
    parsed = urlparse(base)
    names: list[str] = []
    if parsed.scheme == "s3":
        s3 = client or _default_client()
        prefix = "/".join(p for p in (parsed.path.strip("/"), SCHEMA_DIR) if p) + "/"
        try:
            for page in s3.get_paginator("list_objects_v2").paginate(
                    Bucket=parsed.netloc, Prefix=prefix, Delimiter="/"):
                names += [o["Key"][len(prefix):] for o in page.get("Contents", [])]
        except Exception as exc:  # botocore's errors
            raise ObjectStoreError(f"s3://{parsed.netloc}/{prefix}: cannot list: "
                                   f"{exc}") from exc
        root = f"s3://{parsed.netloc}/{prefix}"
    else:
        d = os.path.join(parsed.path if parsed.scheme == "file" else base, SCHEMA_DIR)
        try:
            names = os.listdir(d)
        except FileNotFoundError:
            return []
        root = d + "/"
    uris = [root + n for n in names if _NAME.match(n)]
    return sorted(uris, key=order_key)


def read_snapshot(uri: str, *, client: Any = None, verify: bool = True) -> Snapshot:
    """The snapshot stored at ``uri`` (a path or ``s3://``), its bytes checked against the
    sha256 recorded when it was stored (:class:`SnapshotIntegrityError`; ``verify=False``
    for a file nobody recorded one for)."""
    parsed = urlparse(uri)
    rec: str | None
    if parsed.scheme == "s3":
        s3 = client or _default_client()
        try:
            r = s3.get_object(Bucket=parsed.netloc, Key=parsed.path.lstrip("/"))
            data = r["Body"].read()
        except Exception as exc:  # botocore's errors
            from ..binlog.source import s3_problem

            raise ObjectStoreError(f"{uri}: {s3_problem(exc)}") from exc
        rec = (r.get("Metadata") or {}).get("sha256")
    else:
        path = parsed.path if parsed.scheme == "file" else uri
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            raise ObjectStoreError(f"{uri}: {exc.strerror}") from None
        rec = recorded(path)[0] if verify else None
    actual = hashlib.sha256(data).hexdigest()
    if verify and (rec is None or rec.lower() != actual):
        raise SnapshotIntegrityError(uri, rec.lower() if rec else None, actual)
    return parse_snapshot(data, uri)


def _default_client() -> Any:
    from ..binlog.source import s3_client

    return s3_client()


def store_snapshot(store: ObjectStore, source: str, snap: Snapshot) -> StoreResult:
    """Store ``snap`` under ``<source>/_schema/`` unless the newest stored snapshot has the
    same schema (then nothing is written).  A stored snapshot that cannot be read or
    verified does not count as the newest (a warning; the new one is stored)."""
    data = snap.to_jsonl()
    sha = hashlib.sha256(data).hexdigest()
    client = store.client if isinstance(store, S3Store) else None
    stored = list_snapshots(source_uri(store, source), client=client)
    for uri in reversed(stored):
        try:
            newest = read_snapshot(uri, client=client)
        except (SnapshotError, ObjectStoreError) as exc:
            log.warning("ignoring the stored schema snapshot %s: %s", uri, exc)
            continue
        if newest.schema_sha256() == snap.schema_sha256():
            return StoreResult(False, uri, sha, "identical to the newest stored snapshot")
        break
    pseudo = f"{source}/{SCHEMA_DIR}"
    fd, tmp = tempfile.mkstemp(prefix="binlake-snapshot-", suffix=".jsonl")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        name = snapshot_name(snap)
        try:
            obj, written = store.put(pseudo, name, tmp, sha256=sha, size=len(data),
                                     archived_at=snap.taken_at)
        except ObjectConflictError:  # the same position, another schema (DDL not logged)
            name = snapshot_name(snap, unique=True)
            obj, written = store.put(pseudo, name, tmp, sha256=sha, size=len(data),
                                     archived_at=snap.taken_at)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    log.info("schema snapshot %s: %s", "stored" if written else "already stored", obj.uri)
    return StoreResult(written, obj.uri, sha, "stored" if written else "already stored")
