"""Crash safety of ``binlake archive``: SIGKILLed at any moment, into the local store and S3.

A real MariaDB server writes ~50 MB of binlogs across six rotated files (1 MB rows of random
bytes; the files are 3-16 MB, so on S3 with 5 MiB parts most of them go up as multipart
uploads of 2-4 parts).  Then, per store, ``binlake archive --from-dir <binlog dir>`` runs as a
subprocess in a process group of its own and the group is SIGKILLed, again and again, until a
run finishes by itself.  A kill lands either at a seeded random time (uniform over a full
run's duration) or at a seeded random point of the copy of a seeded random file (so many kills
land mid-copy / mid multipart upload, not only during the interpreter's start; each round
starts with such a kill).  Three rounds per store, each archiving the same files from scratch
under another source name.

After every run (killed or not) the store is listed and:

* every visible object is a closed binlog (never the file the server is writing), its size
  is the source file's, its bytes (read back when it is first seen) hash to the source
  file's sha256, and its recorded sha256 (sidecar / S3 metadata) is that sha256: nothing
  half-written is ever visible;
* an object once visible never changes nor disappears (inode+mtime / ETag+LastModified,
  archived_at): never written twice;
* temporary leftovers (local ``_tmp/`` files, sidecars without their object; S3 incomplete
  multipart uploads, stray keys) are at most those of the one run just killed -- a later run
  removes the earlier ones.

When a run finishes: it archived exactly the closed files not yet visible, nothing is left
over, and one more run archives nothing.

``--from-server`` (files fetched with ``mariadb-binlog`` into ``$TMPDIR/binlake-fetch-*``)
leaves its fetched copy behind when killed: an expected failure (archiver.py), below.

The seed and every kill (what decided it, when it landed, what it left) are printed; the
seed is in every failure message; ``BINLAKE_KILL_SEED=N`` repeats its choices (not the
timings: the machine decides where a timed kill lands).  docs/reliability.md, "Archive:
killed at any moment".
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from binlake.archive.objectstore import (
    LOCK,
    META_DIR,
    TMP_DIR,
    LocalStore,
    S3Store,
    StoredObject,
    sha256_file,
)

from .s3 import moto_s3
from .servers import start_server

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PART = 5 << 20  # the smallest S3 part size: archive_multipart_bytes
# 1 MB rows per binlog file (then FLUSH BINARY LOGS).  A row takes ~3 MB of binlog: its image
# and the INSERT's text (annotated, the blob escaped); so files of 3-16 MB, ~50 MB in all
ROWS = [1, 2, 4, 5, 2, 3]
ROUNDS = 3  # per store; each archives all the files from scratch, under kills
MAX_KILLS = 8  # per round; then a run that is not killed
BINLAKE = str(Path(sys.executable).with_name("binlake"))


@dataclass(frozen=True)
class Binlogs:
    dir: Path
    closed: list[Path]  # in index order
    sha: dict[str, str]
    size: dict[str, int]
    current: str  # the file the server is writing
    port: int  # the server's, for --from-server


@pytest.fixture(scope="module")
def binlogs(tmp_path_factory: pytest.TempPathFactory,
            mariadb_template: Path) -> Iterator[Binlogs]:
    srv = start_server(tmp_path_factory.mktemp("kill-db"), mariadb_template)
    try:
        rng = random.Random(20240611)  # the workload is always the same
        conn = srv.connect()
        try:
            with conn.cursor() as cur:
                cur.execute("CREATE DATABASE k")
                cur.execute("CREATE TABLE k.blobs (id INT AUTO_INCREMENT PRIMARY KEY, "
                            "v LONGBLOB)")
                for rows in ROWS:
                    for _ in range(rows):
                        cur.execute("INSERT INTO k.blobs (v) VALUES (%s)", (rng.randbytes(1 << 20),))
                    srv.flush_binary_logs()
        finally:
            conn.close()
        closed = srv.closed_binlog_files()
        assert len(closed) == len(ROWS)
        assert sum(f.stat().st_size for f in closed) > 40 << 20
        assert sum(f.stat().st_size > PART for f in closed) >= 4  # multipart uploads
        shas = {f.name: sha256_file(f) for f in closed}
        yield Binlogs(srv.binlog_dir, closed, {n: s for n, (s, _) in shas.items()},
                      {n: z for n, (_, z) in shas.items()}, srv.binlog_files()[-1].name,
                      srv.port)
    finally:
        srv.stop(timeout=30)


# -- what the test sees of a store ----------------------------------------------------------

class View:
    """The store as a reader sees it (the test process's own client), for one source."""

    store: LocalStore | S3Store

    def visible(self, source: str) -> list[StoredObject]:
        return self.store.list(source)

    def count(self, source: str) -> int:
        """How many objects are visible (cheaper than :meth:`visible`, for polling)."""
        return len(self.store.list(source))

    def identity(self, obj: StoredObject) -> tuple[Any, ...]:
        raise NotImplementedError

    def read_sha(self, obj: StoredObject) -> str:
        raise NotImplementedError

    def leftovers(self, source: str, visible: set[str]) -> dict[str, list[str]]:
        """Temporary things a killed run may leave: kind -> entries."""
        raise NotImplementedError

    def copying(self, source: str) -> dict[str, int]:
        """The copies in progress (or left by a killed run): id -> bytes / parts uploaded."""
        raise NotImplementedError


class LocalView(View):
    def __init__(self, root: Path, sizes: dict[str, int]) -> None:
        self.root, self.sizes = root, sizes
        self.store = LocalStore(root)

    def identity(self, obj: StoredObject) -> tuple[Any, ...]:
        st = os.stat(obj.uri)
        return st.st_ino, st.st_mtime_ns, obj.archived_at

    def read_sha(self, obj: StoredObject) -> str:
        return sha256_file(obj.uri)[0]

    def leftovers(self, source: str, visible: set[str]) -> dict[str, list[str]]:
        base = self.root / source
        out: dict[str, list[str]] = {"partial copies": [], "temp files": [],
                                     "orphan sidecars": [], "other": []}
        if not base.exists():
            return out
        for dirpath, _dirs, files in os.walk(base):
            for f in files:
                rel = os.path.relpath(os.path.join(dirpath, f), base)
                if rel in visible or rel == LOCK:
                    continue
                if rel.startswith(f"{META_DIR}/") and rel.endswith(".json") \
                        and not f.startswith("."):
                    if rel[len(META_DIR) + 1:-5] not in visible:
                        out["orphan sidecars"].append(rel)
                    continue
                if rel.startswith(f"{TMP_DIR}/") or f.startswith("."):
                    kind = "temp files" if ".json" in f else "partial copies"
                    out[kind].append(f"{rel} ({os.path.getsize(os.path.join(dirpath, f))} B)")
                else:
                    out["other"].append(rel)
        return out

    def copying(self, source: str) -> dict[str, int]:
        """Any file in the source's directory but the lock, the JSON and the complete
        objects: where the copy is staged is the store's business."""
        out = {}
        for dirpath, _dirs, files in os.walk(self.root / source):
            for f in files:
                path = os.path.join(dirpath, f)
                with contextlib.suppress(FileNotFoundError):
                    size = os.stat(path).st_size
                    if f == LOCK or ".json" in f or (
                            dirpath == str(self.root / source) and size == self.sizes.get(f)):
                        continue
                    out[path] = size
        return out


class S3View(View):
    def __init__(self, client: Any, bucket: str, prefix: str) -> None:
        self.client, self.bucket = client, bucket
        self.s3 = self.store = S3Store(bucket, prefix, client=client)

    def identity(self, obj: StoredObject) -> tuple[Any, ...]:
        r = self.client.head_object(Bucket=self.bucket, Key=self.s3.key(obj.source, obj.name))
        return r["ETag"], r["LastModified"], obj.archived_at

    def read_sha(self, obj: StoredObject) -> str:
        body = self.client.get_object(Bucket=self.bucket,
                                      Key=self.s3.key(obj.source, obj.name))["Body"]
        h = hashlib.sha256()
        for chunk in iter(lambda: body.read(1 << 20), b""):
            h.update(chunk)
        return h.hexdigest()

    def count(self, source: str) -> int:
        r = self.client.list_objects_v2(Bucket=self.bucket, Prefix=self.s3.key(source, "") + "/",
                                        Delimiter="/")
        return sum(not o["Key"].rsplit("/", 1)[-1].startswith("_")
                   for o in r.get("Contents", []))

    def _uploads(self, source: str) -> list[dict[str, Any]]:
        r = self.client.list_multipart_uploads(Bucket=self.bucket,
                                               Prefix=self.s3.key(source, "") + "/")
        return list(r.get("Uploads", []))

    def leftovers(self, source: str, visible: set[str]) -> dict[str, list[str]]:
        prefix = self.s3.key(source, "") + "/"
        keys = [o["Key"][len(prefix):] for page in
                self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket,
                                                                       Prefix=prefix)
                for o in page.get("Contents", [])]
        return {"incomplete multipart uploads":
                [f"{u['Key'][len(prefix):]} ({self._parts(u)} parts)"
                 for u in self._uploads(source)],
                "other": [k for k in keys if k not in visible]}

    def _parts(self, u: dict[str, Any]) -> int:
        try:
            r = self.client.list_parts(Bucket=self.bucket, Key=u["Key"], UploadId=u["UploadId"])
        except self.client.exceptions.NoSuchUpload:
            return 0
        return len(r.get("Parts", []))

    def copying(self, source: str) -> dict[str, int]:
        return {u["UploadId"]: self._parts(u) for u in self._uploads(source)}


# -- the kill loop --------------------------------------------------------------------------

@dataclass
class Run:
    how: str  # what decided the kill
    killed: bool
    at: float  # seconds after the start
    rc: int | None
    out: str
    err: str


@dataclass
class Tally:
    lines: list[str] = field(default_factory=list)
    kills: int = 0
    mid_copy: int = 0  # kills after which a partial copy was left over


def _run(env: dict[str, str], args: list[str], *, kill_at: float | None = None,
         kill_when: Callable[[], bool] | None = None, poll: float = 0.002,
         how: str = "not killed") -> Run:
    """Run ``binlake archive ARGS --json`` in a process group of its own; SIGKILL the group
    ``kill_at`` seconds after the start, or as soon as ``kill_when()`` (polled) is true."""
    t0 = time.monotonic()
    proc = subprocess.Popen([BINLAKE, "archive", *args, "--json"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    kill = False
    try:
        if kill_when is None:
            try:
                proc.wait(timeout=120 if kill_at is None else kill_at)
            except subprocess.TimeoutExpired:
                kill = True
        else:
            while proc.poll() is None and not (kill := kill_when()):
                if time.monotonic() - t0 > 120:
                    break
                time.sleep(poll)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the group: children too
        out, err = proc.communicate(timeout=60)
    at = time.monotonic() - t0
    assert at < 120, f"binlake archive still running after {at:.0f} s: {err.decode()}"
    return Run(how, kill and proc.returncode == -signal.SIGKILL, at, proc.returncode,
               out.decode(), err.decode())


def _check(view: View, source: str, logs: Binlogs, seen: dict[str, tuple[Any, ...]],
           ctx: str) -> list[str]:
    """The invariants that hold after any run; returns the visible names.  ``seen``: each
    object's identity when its bytes were read back (the first time it was seen); it must
    never change, so they are the same bytes now."""
    names = []
    for obj in view.visible(source):
        names.append(obj.name)
        assert obj.name in logs.sha, f"{ctx}: {obj.name} archived but it is not closed"
        want = logs.sha[obj.name]
        assert obj.size == logs.size[obj.name], f"{ctx}: {obj.name} visible with {obj.size} " \
            f"bytes, the source has {logs.size[obj.name]}: half-written"
        assert obj.sha256 == want, f"{ctx}: {obj.name} recorded sha256 {obj.sha256}, " \
            f"the source has {want}"
        ident = view.identity(obj)
        if obj.name not in seen:
            assert view.read_sha(obj) == want, f"{ctx}: {obj.name}'s bytes are not the source's"
        assert seen.setdefault(obj.name, ident) == ident, \
            f"{ctx}: {obj.name} was written again ({seen[obj.name]} -> {ident})"
    assert set(seen) <= set(names), f"{ctx}: {sorted(set(seen) - set(names))} disappeared"
    return names


def _kill_rounds(view: View, env: dict[str, str], logs: Binlogs, seed: int,
                 label: str) -> Tally:
    rng = random.Random(f"{seed}/{label}")
    tally = Tally()
    closed = [f.name for f in logs.closed]
    args = ["--from-dir", str(logs.dir)]
    # how long an undisturbed run takes here: the range of the timed kills
    calib = _run(env, [*args, "--source-name", "calibrate"])
    assert calib.rc == 0, calib.err
    full = calib.at
    tally.lines.append(f"{label}: a full run takes {full:.2f} s")
    for r in range(ROUNDS):
        source = f"db{r}"
        seen: dict[str, tuple[Any, ...]] = {}
        kills = 0
        while True:
            visible = set(_check(view, source, logs, seen, f"{label} seed={seed}"))
            left = [n for n in closed if n not in visible]
            if kills >= MAX_KILLS or not left:
                run = _run(env, [*args, "--source-name", source])
            elif kills and rng.random() < 0.5:  # a round starts with a kill mid-copy
                t = rng.uniform(0, full)
                run = _run(env, [*args, "--source-name", source], kill_at=t,
                           how=f"timed {t:.3f} s")
            else:
                # the copy of one of the files not archived yet, at a random point of it
                i = rng.randrange(len(left))
                if isinstance(view, S3View):
                    n_parts = -(-logs.size[left[i]] // PART)
                    point = rng.randrange(max(1, n_parts - 1)) if n_parts > 1 else 0
                    what = f"{left[i]}, {point} of {n_parts} parts up" if n_parts > 1 \
                        else f"{left[i]} (one PutObject: waits for the next multipart)"
                else:
                    point = rng.randrange(logs.size[left[i]])
                    what = f"{left[i]}, {point} of {logs.size[left[i]]} bytes copied"

                def when(source: str = source, target: int = len(visible) + i,
                         point: int = point, old: frozenset[str] = frozenset(
                             view.copying(source))) -> bool:
                    if view.count(source) < target:
                        return False
                    # a copy of this run's (not one a killed run left)
                    return any(n >= point for k, n in view.copying(source).items()
                               if k not in old)

                run = _run(env, [*args, "--source-name", source], kill_when=when,
                           poll=0.02 if isinstance(view, S3View) else 0.002,
                           how=f"copying {what}")
            ctx = f"{label} seed={seed} round {r} run {kills + 1} ({run.how}, {run.at:.3f} s)"
            names = _check(view, source, logs, seen, ctx)
            left_over = {k: v for k, v in view.leftovers(source, set(names)).items() if v}
            if left_over.get("other"):
                # S3: a request the killed client had sent (CompleteMultipartUpload) may
                # still finish on the server; its object is whole, look again
                tally.lines.append(f"  ({ctx}: {left_over['other']} appeared after the kill)")
                time.sleep(0.5)
                names = _check(view, source, logs, seen, ctx)
                left_over = {k: v for k, v in view.leftovers(source, set(names)).items() if v}
            state = f"{len(names)}/{len(closed)} visible" + \
                (f", left over: {left_over}" if left_over else "")
            if run.killed:
                kills += 1
                tally.kills += 1
                partial = left_over.get("partial copies", []) + \
                    left_over.get("incomplete multipart uploads", [])
                tally.mid_copy += bool(partial)
                tally.lines.append(f"  {source} kill {kills}: {run.how}, killed at "
                                   f"{run.at:.3f} s: {state}")
                # at most what the one killed run left; earlier runs' leftovers are gone
                assert len(left_over.get("partial copies", [])) <= 1, f"{ctx}: {left_over}"
                assert len(left_over.get("temp files", [])) <= 1, f"{ctx}: {left_over}"
                assert len(left_over.get("orphan sidecars", [])) <= 1, f"{ctx}: {left_over}"
                assert len(left_over.get("incomplete multipart uploads", [])) <= 1, \
                    f"{ctx}: {left_over}"
                assert not left_over.get("other"), f"{ctx}: {left_over}"
                continue
            assert run.rc == 0, f"{ctx}: exit {run.rc}: {run.err}"
            rep = json.loads(run.out)
            tally.lines.append(f"  {source} run {kills + 1} finished ({run.how}, "
                               f"{run.at:.3f} s): archived {len(rep['archived'])}")
            archived = [a["name"] for a in rep["archived"]]
            assert archived == [n for n in closed if n not in visible], \
                f"{ctx}: archived {archived}, {sorted(visible)} were already there"
            assert sorted(archived + rep["already"]) == closed, ctx
            assert list(rep["skipped"]) == [logs.current], ctx
            assert sorted(names) == closed, ctx
            assert not left_over, f"{ctx}: a finished run leaves {left_over}"
            again = _run(env, [*args, "--source-name", source])
            assert again.rc == 0 and json.loads(again.out)["archived"] == [], again.err
            _check(view, source, logs, seen, ctx + ", run again")
            break
    return tally


def _report(capsys: pytest.CaptureFixture[str], seed: int, tally: Tally, t0: float) -> None:
    with capsys.disabled():
        print(f"\nkill test seed={seed} (BINLAKE_KILL_SEED={seed} repeats the choices)")
        print("\n".join(tally.lines))
        print(f"{tally.kills} kills, {tally.mid_copy} left a partial copy behind; "
              f"{time.monotonic() - t0:.1f} s")


@pytest.fixture
def seed() -> int:
    s = int(os.environ.get("BINLAKE_KILL_SEED") or random.SystemRandom().randrange(1 << 31))
    print(f"kill test seed={s}")
    return s


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The subprocess's environment: no BINLAKE_* of the caller's but ours (moto_s3 points
    BINLAKE_S3_ENDPOINT_URL and the AWS variables at its server)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("BINLAKE_") or k == "BINLAKE_S3_ENDPOINT_URL"}
    env.update(BINLAKE_HOME=str(tmp_path / "home"), **extra)
    return env


def test_archive_killed_local(binlogs: Binlogs, tmp_path: Path, seed: int,
                              capsys: pytest.CaptureFixture[str]) -> None:
    t0 = time.monotonic()
    root = tmp_path / "archive"
    env = _env(tmp_path, BINLAKE_ARCHIVE_URI=str(root))
    tally = _kill_rounds(LocalView(root, binlogs.size), env, binlogs, seed, "local")
    _report(capsys, seed, tally, t0)
    assert tally.mid_copy >= 1, f"seed={seed}: no kill landed mid-copy"


def test_archive_killed_s3(binlogs: Binlogs, tmp_path: Path, seed: int,
                           capsys: pytest.CaptureFixture[str]) -> None:
    import boto3

    t0 = time.monotonic()
    # a bucket of its own: moto's buckets live as long as the process, whatever the server
    bucket = f"archive-kill-{uuid.uuid4().hex[:12]}"
    with moto_s3(bucket, {}) as endpoint:
        client = boto3.client("s3", endpoint_url=endpoint)
        env = _env(tmp_path, BINLAKE_ARCHIVE_URI=f"s3://{bucket}/binlogs",
                   BINLAKE_ARCHIVE_MULTIPART_BYTES=str(PART))
        tally = _kill_rounds(S3View(client, bucket, "binlogs"), env, binlogs, seed, "s3")
    _report(capsys, seed, tally, t0)
    assert tally.mid_copy >= 1, f"seed={seed}: no kill landed mid multipart upload"


def test_archive_killed_remote_fetch_leaves_nothing(binlogs: Binlogs, tmp_path: Path) -> None:
    """``--from-server``: the files come through ``mariadb-binlog --raw`` into a temporary
    directory (the process group's kill takes the client too).  A run killed while a fetched
    copy exists must not leave it behind for good: after a finished run, $TMPDIR holds no
    ``binlake-fetch-*``."""
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    root = tmp_path / "archive"
    env = _env(tmp_path, BINLAKE_ARCHIVE_URI=str(root), TMPDIR=str(tmp), MYSQL_PWD="")
    view = LocalView(root, binlogs.size)
    args = ["--from-server", f"127.0.0.1:{binlogs.port}", "--user", "root",
            "--source-name", "remote"]
    seen: dict[str, tuple[Any, ...]] = {}
    for _ in range(2):  # killed while a fetched copy of its own is there
        old = set(tmp.rglob("*"))

        def fetched(old: set[Path] = old) -> bool:
            try:  # the archiver creates and removes its fetch directories meanwhile
                return any(p.is_file() and p not in old for p in tmp.rglob("*"))
            except FileNotFoundError:
                return False

        run = _run(env, args, kill_when=fetched, how="fetched a copy")
        assert run.killed, run.err
        _check(view, "remote", binlogs, seen, "remote, killed")
    run = _run(env, args)
    assert run.rc == 0, run.err
    assert sorted(_check(view, "remote", binlogs, seen, "remote")) == sorted(binlogs.sha)
    left = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*"))
    assert not left, f"left in $TMPDIR by the killed runs: {left}"
