"""Archiving closed binlog files to the object store, each exactly once.

A source lists the server's binlog files in order and says which are **closed**: every file
of the index but the last (the one the server is writing), and only if its Format_description
event no longer carries ``LOG_EVENT_BINLOG_IN_USE_F`` (the server clears the flag when it
closes a file cleanly; MariaDB ``sql/log.cc``, MYSQL_BIN_LOG::close).  Two sources:

* :class:`LocalBinlogSource`: a binlog directory and its ``.index`` file (the server's datadir,
  a mount of it, or a host where the worker runs);
* :class:`RemoteBinlogSource`: a running server, listed with ``SHOW BINARY LOGS`` and fetched
  over the replication protocol with ``mariadb-binlog --read-from-remote-server --raw``
  (``mysqlbinlog`` has the same options).

:func:`archive` copies the closed files the store does not have yet
(:mod:`binlake.archive.objectstore`: never overwritten, never visible half-written, sha256 recorded),
and reports **gaps**: files missing from the sequence, neither archived nor on the server any
more (purged before they were archived).  A gap is reported once: the first run that sees it
records it in the store (``_meta/_gaps.json``) and raises :class:`ArchiveGapError` after
archiving everything else; later runs list it as known and succeed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from ..binlog.errors import BinlogError
from ..binlog.reader import BinlogReader
from ..txn.files import binlog_file, order_files
from .objectstore import (
    GAPS,
    ObjectConflictError,
    ObjectStore,
    ObjectStoreError,
    S3Store,
    StoredObject,
    sha256_file,
)

log = logging.getLogger(__name__)


class ArchiveError(RuntimeError):
    """The source cannot be read (no index, the client failed, ...)."""


class ArchiveGapError(ArchiveError):
    """Files were purged from the source before they were archived (reported once)."""

    def __init__(self, report: ArchiveReport) -> None:
        super().__init__(f"source {report.source}: {len(report.new_gaps)} binlog file(s) "
                         f"purged before they were archived: {', '.join(report.new_gaps)}")
        self.report = report


class ArchiveVerifyError(ArchiveError):
    """``archive --verify``: archived objects whose stored bytes no longer have the sha256
    recorded when they were archived (``report.corrupt``, one entry per object)."""

    def __init__(self, report: ArchiveReport) -> None:
        super().__init__(f"source {report.source}: {len(report.corrupt)} archived object(s) "
                         "differ from the sha256 recorded when they were archived: "
                         f"{', '.join(c['name'] for c in report.corrupt)}")
        self.report = report


@dataclass(frozen=True)
class SourceFile:
    name: str
    size: int | None
    path: Path | None = None  # local sources: where it is
    last: bool = False  # the last file of the index: the one the server writes


class BinlogSource(Protocol):
    label: str  # where the files come from, for messages

    def files(self) -> list[SourceFile]: ...

    @contextmanager
    def local_copy(self, f: SourceFile) -> Iterator[Path]: ...


def fde_in_use(path: str | os.PathLike[str]) -> bool | None:
    """The in-use flag of the file's Format_description event (None: no FDE)."""
    reader = BinlogReader(path, decode=(), verify_checksums=False)
    for _ in reader:  # the first event is the FDE; the reader has read its flags
        break
    return reader.in_use


class LocalBinlogSource:
    """A binlog directory (or its ``.index`` file) on this machine."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        p = Path(path)
        if p.is_dir():
            found = sorted(p.glob("*.index"))
            if len(found) != 1:
                raise ArchiveError(f"{p}: expected one binlog .index file, found "
                                   f"{[f.name for f in found] or 'none'}; name it instead")
            p = found[0]
        elif p.exists() and p.suffix != ".index":
            # (a binlog file itself, say: its bytes are not a list of file names)
            raise ArchiveError(f"{p}: not a binlog directory or .index file (the source is "
                               "the server's binlog directory, or the .index file in it)")
        self.index = p
        self.label = str(p)

    def files(self) -> list[SourceFile]:
        try:
            raw = self.index.read_bytes()
        except FileNotFoundError:
            raise ArchiveError(f"{self.index}: no such binlog index file") from None
        except OSError as exc:
            raise ArchiveError(f"{self.index}: cannot read the binlog index: "
                               f"{exc.strerror}") from None
        try:
            lines = raw.decode("utf-8").splitlines()
        except UnicodeDecodeError as exc:
            raise ArchiveError(f"{self.index} at byte {exc.start}: not a binlog index (not "
                               f"UTF-8 text: {raw[exc.start:exc.start + 4]!r})") from None
        paths = []
        for line in lines:
            line = line.strip()
            if not line:
                continue
            p = Path(line)
            if not p.is_absolute():
                p = self.index.parent / p
            if not p.exists():  # a mount: the index names paths of the server's host
                p = self.index.parent / p.name
            paths.append(p)
        out = []
        for i, p in enumerate(paths):
            try:
                size: int | None = p.stat().st_size
            except FileNotFoundError:
                size = None
            out.append(SourceFile(p.name, size, p, last=i == len(paths) - 1))
        return out

    @contextmanager
    def local_copy(self, f: SourceFile) -> Iterator[Path]:
        assert f.path is not None
        yield f.path


class RemoteBinlogSource:
    """A running server, read through the replication protocol (needs REPLICATION SLAVE /
    REPLICA and BINLOG MONITOR / REPLICATION CLIENT privileges).  The password goes through
    ``MYSQL_PWD`` in the clients' environment, never on the command line."""

    def __init__(self, host: str, port: int = 3306, user: str = "root", password: str = "", *,
                 client: str | None = None, binlog_tool: str | None = None) -> None:
        self.host, self.port, self.user, self.password = host, int(port), user, password
        self.client = client or shutil.which("mariadb") or shutil.which("mysql") or "mariadb"
        self.tool = (binlog_tool or shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")
                     or "mariadb-binlog")
        self.label = f"{user}@{host}:{port}"

    def _conn_args(self) -> list[str]:
        return [f"--host={self.host}", f"--port={self.port}", f"--user={self.user}"]

    def _run(self, cmd: list[str]) -> str:
        env = dict(os.environ, MYSQL_PWD=self.password)
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600,
                                 check=False)
        except FileNotFoundError as exc:
            raise ArchiveError(f"{cmd[0]}: not installed ({exc})") from None
        if res.returncode != 0:
            raise ArchiveError(f"{os.path.basename(cmd[0])} failed on {self.label} "
                               f"(exit {res.returncode}): {res.stderr.strip()[-2000:]}")
        return res.stdout

    def files(self) -> list[SourceFile]:
        out = self._run([self.client, "--no-defaults", *self._conn_args(), "-N", "-B", "-e",
                         "SHOW BINARY LOGS"])
        rows = [line.split("\t") for line in out.splitlines() if line.strip()]
        return [SourceFile(r[0], int(r[1]) if len(r) > 1 else None, None,
                           last=i == len(rows) - 1) for i, r in enumerate(rows)]

    @contextmanager
    def local_copy(self, f: SourceFile) -> Iterator[Path]:
        with fetch_dir() as tmp:
            self._run([self.tool, "--no-defaults", "--read-from-remote-server", "--raw",
                       *self._conn_args(), f"--result-file={tmp}/", f.name])
            path = tmp / f.name
            if not path.exists():
                raise ArchiveError(f"{self.tool} wrote no {f.name} for {self.label}")
            yield path


FETCH_DIR = "binlake-fetch"
_UNLOCKED_AGE = 3600.0  # a fetch directory without its lock file (killed in between)


@contextmanager
def fetch_dir() -> Iterator[Path]:
    """A directory of its own under ``$TMPDIR/binlake-fetch/`` for one fetched binlog,
    removed afterwards.  Its ``.lock`` is flocked while it lives; the kernel drops that lock
    when the process dies, so directories whose lock can be taken are a killed run's (with a
    whole binlog in them, maybe): removed here first."""
    import fcntl

    parent = Path(tempfile.gettempdir()) / FETCH_DIR
    parent.mkdir(exist_ok=True)
    for old in parent.iterdir():
        lock = old / ".lock"
        try:
            fd = os.open(lock, os.O_RDWR)
        except FileNotFoundError:
            try:
                stale = time.time() - old.stat().st_mtime > _UNLOCKED_AGE
            except OSError:
                continue
            if stale:
                shutil.rmtree(old, ignore_errors=True)
            continue
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # a live run's
        finally:
            os.close(fd)
        shutil.rmtree(old, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(dir=parent))
    fd = os.open(tmp / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        os.close(fd)
        with contextlib.suppress(OSError):
            parent.rmdir()  # only when empty


@dataclass
class ArchiveReport:
    source: str  # the source label (settings.source): the key prefix
    origin: str  # where the files were read
    store: str
    archived: list[dict[str, Any]] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # name -> why not archived now
    gaps: list[str] = field(default_factory=list)  # every known gap
    new_gaps: list[str] = field(default_factory=list)  # first seen by this run
    # with verify: the archived objects whose stored bytes were read again and match their
    # recorded sha256, and those that do not (name, uri, recorded, stored sha256, problem)
    verified: list[str] = field(default_factory=list)
    corrupt: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def text(self) -> str:
        lines = [f"binlake archive {self.origin} -> {self.store}/{self.source}: "
                 f"{len(self.archived)} archived, {len(self.already)} already there, "
                 f"{len(self.skipped)} not closed yet"]
        for a in self.archived:
            lines.append(f"  archived {a['name']} ({a['size']} bytes, sha256 {a['sha256'][:16]})")
        for name, why in self.skipped.items():
            lines.append(f"  skipped  {name}: {why}")
        if self.verified or self.corrupt:
            lines.append(f"verified {len(self.verified)} archived object(s) against their "
                         f"recorded sha256: {len(self.corrupt)} differ")
        for c in self.corrupt:
            lines.append(f"  CORRUPT  {c['name']}: {c['problem']}")
        if self.gaps:
            lines.append(f"GAP: purged before archiving: {', '.join(self.gaps)}"
                         + (f" (new: {', '.join(self.new_gaps)})" if self.new_gaps else ""))
        return "\n".join(lines)


def _missing(names: Sequence[str], archived: Sequence[str]) -> list[str]:
    """Names absent from the sequence: from the first archived file (or the first on the
    server, before anything was archived) to the newest known, per base name."""
    known = {n for n in names} | set(archived)
    out = []
    by_base: dict[str, list[tuple[int, str]]] = {}
    for f in order_files(known):
        if f.seq >= 0:
            by_base.setdefault(f.base, []).append((f.seq, f.name))
    for base, seqs in by_base.items():
        have = {s for s, _ in seqs}
        arch = [binlog_file(a).seq for a in archived if binlog_file(a).base == base]
        lo = min(arch) if arch else min(have)
        width = len(seqs[-1][1]) - len(base) - 1
        out += [f"{base}.{s:0{width}d}" for s in range(lo, max(have) + 1) if s not in have]
    return out


def archive(source: BinlogSource, store: ObjectStore, label: str, *, verify: bool = False,
            fail_on_new_gaps: bool = True) -> ArchiveReport:
    """Copy the source's closed files the store does not have; see the module doc.

    ``verify``: read every archived object of ``label`` again and compare its bytes with the
    sha256 recorded when it was archived (:class:`ArchiveVerifyError` lists those that
    differ, after everything else is done); and hash every closed source file already
    archived and compare (by default only when its size differs -- a conflict -- or it
    changed after it was archived)."""
    report = ArchiveReport(label, source.label, store.root_uri)
    files = source.files()
    archived = {o.name: o for o in store.list(label)}
    for f in files:
        if f.last:
            report.skipped[f.name] = "the server is still writing it (last in the index)"
            continue
        if f.size is None:
            continue  # listed but gone: purged while we looked; a gap if never archived
        have = archived.get(f.name)
        if have is not None:
            if have.size != f.size:
                raise ObjectConflictError(have.uri, have.sha256,
                                          f"(size {f.size} != archived {have.size})")
            if not (verify or _changed_since(f, have.archived_at)):
                report.already.append(f.name)
                continue
        with source.local_copy(f) as path:
            try:
                in_use = fde_in_use(path)
            except BinlogError as exc:
                report.skipped[f.name] = f"unreadable header: {exc}"
                log.error("not archiving %s: %s", f.name, exc)
                continue
            if in_use:
                report.skipped[f.name] = "its header still carries the in-use flag"
                log.warning("not archiving %s: in-use flag set (server crashed?)", f.name)
                continue
            sha, size = sha256_file(path)
            obj, written = store.put(label, f.name, path, sha256=sha, size=size)
        if written:
            report.archived.append({"name": f.name, "uri": obj.uri, "sha256": sha,
                                    "size": size, "archived_at": obj.archived_at})
            log.info("archived %s -> %s", f.name, obj.uri)
        else:
            report.already.append(f.name)
    names = [f.name for f in files if f.size is not None]
    stored = sorted(set(archived) | {a["name"] for a in report.archived})
    report.gaps = _missing(names, stored)
    known = set(store.read_json(label, GAPS) or [])
    report.new_gaps = [g for g in report.gaps if g not in known]
    if report.new_gaps:
        log.error("source %s: purged before archiving: %s", label, ", ".join(report.new_gaps))
        store.write_json(label, GAPS, sorted(known | set(report.new_gaps)))
    if verify:
        for obj in store.list(label):
            problem = verify_object(store, obj)
            if problem is None:
                report.verified.append(obj.name)
            else:
                log.error("%s: %s", obj.uri, problem)
                report.corrupt.append({"name": obj.name, "uri": obj.uri,
                                       "recorded": obj.sha256, "problem": problem})
        if report.corrupt:
            raise ArchiveVerifyError(report)
    if report.new_gaps and fail_on_new_gaps:
        raise ArchiveGapError(report)
    return report


def verify_object(store: ObjectStore, obj: StoredObject) -> str | None:
    """None when the stored bytes of ``obj`` (read again, from the store itself) have the
    sha256 and size recorded when it was archived, else what differs."""
    if not obj.sha256:
        return "no sha256 recorded for it: it cannot be verified"
    try:
        if isinstance(store, S3Store):
            sha, size = _s3_sha256(store, obj)
        else:
            sha, size = sha256_file(obj.uri)
    except (OSError, ObjectStoreError) as exc:
        return f"cannot read the stored object: {exc}"
    if sha != obj.sha256.lower():
        return (f"stored bytes have sha256 {sha} ({size} bytes), recorded {obj.sha256} "
                "when it was archived: the object changed after it was archived")
    return None


def _s3_sha256(store: S3Store, obj: StoredObject) -> tuple[str, int]:
    import hashlib

    h = hashlib.sha256()
    n = 0
    try:
        body = store.client.get_object(Bucket=store.bucket,
                                       Key=store.key(obj.source, obj.name))["Body"]
        while chunk := body.read(1 << 20):
            h.update(chunk)
            n += len(chunk)
        body.close()
    except Exception as exc:  # botocore's errors
        raise ObjectStoreError(str(exc)) from exc
    return h.hexdigest(), n


def _changed_since(f: SourceFile, archived_at: str | None) -> bool:
    if f.path is None or not archived_at:
        return False
    try:
        return f.path.stat().st_mtime > datetime.fromisoformat(archived_at).timestamp() + 1
    except (OSError, ValueError):
        return False


def source_from_settings(settings: Any, *, remote: dict[str, Any] | None = None
                         ) -> BinlogSource:
    """The configured source: ``remote`` (host/port/user/password, e.g. from an Airflow
    connection) wins over ``archive_source_dir``."""
    if remote:
        return RemoteBinlogSource(remote["host"], int(remote.get("port") or 3306),
                                  remote.get("user") or "root", remote.get("password") or "")
    if not settings.archive_source_dir:
        raise ArchiveError("no archive source: set archive_source_dir (BINLAKE_ARCHIVE_SOURCE_"
                           "DIR) to the binlog directory or .index file, or a source connection")
    return LocalBinlogSource(settings.archive_source_dir)
