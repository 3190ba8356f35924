"""One load at a time: the lock a load holds while it writes a lake.

Two loads at once would each read the lake's state (what is loaded, the pending XAs) before
the other's commits, and their results would depend on timing.  A load therefore holds an
exclusive ``flock`` on a lock file for its whole run:

* the embedded SQLite catalog: one lock per catalog file (``<catalog>.db.load.lock``), any
  source, as SQLite takes one writer at a time anyway;
* any other catalog: one lock per source under ``<home>/locks/``.  That guards the loads
  started on one machine (or on machines sharing ``home``); for loads from several machines
  rely on the scheduler (the nightly DAG runs one at a time per source).

A load that finds the lock held waits up to ``lock_wait`` seconds (0 by default: it stops
at once) for it.  The kernel drops the lock when its holder exits, killed or not: a dead
load leaves no lock behind.  The file names the holder (pid, host, run id, since when) for the
error the next load gives; the holder clears it when it ends, so a note found by the next
holder is a killed load's, whose uncommitted data files that load then removes
(:mod:`binlake.lake.orphans`).
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..config import Settings


class LoadLockedError(RuntimeError):
    """Another load holds the lake's lock."""

    def __init__(self, path: Path, holder: str) -> None:
        self.path = path
        self.holder = holder
        who = holder or "holder unknown"
        super().__init__(f"{path}: another load is writing this lake ({who}); try again "
                         "when it has finished")


def lock_path(settings: Settings) -> Path:
    if lock_is_global(settings):
        return Path(settings.sqlalchemy_uri[len("sqlite:///"):] + ".load.lock")
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", settings.source)
    return settings.home_path / "locks" / f"load-{safe}.lock"


def lock_is_global(settings: Settings) -> bool:
    """One lock for the whole lake (the SQLite catalog), not one per source."""
    return settings.sqlalchemy_uri.startswith("sqlite:///")


log = logging.getLogger(__name__)
POLL = 1.0  # seconds between two looks at a held lock


def _take(fd: int, path: Path, mode: int, wait: float) -> None:
    """flock ``fd`` in ``mode``, waiting up to ``wait`` seconds (polling) while another
    process holds the lock; then :class:`LoadLockedError`."""
    deadline = time.monotonic() + max(0.0, wait)
    said = False
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            holder = next(reversed(_read(fd)), "")  # the holder's note is the last line
            left = deadline - time.monotonic()
            if left <= 0:
                raise LoadLockedError(path, holder) from None
            if not said:
                log.warning("%s: another load is writing this lake (%s): waiting up to %.0f s",
                            path, holder or "holder unknown", left)
                said = True
            time.sleep(min(POLL, left))


def _read(fd: int) -> list[str]:
    """The notes in the lock file, one a line (see :func:`load_lock`)."""
    size = os.fstat(fd).st_size
    text = os.pread(fd, size, 0).decode("utf-8", "replace") if size else ""
    return [line for line in text.splitlines() if line.strip()]


def _write(fd: int, notes: list[str]) -> None:
    os.ftruncate(fd, 0)
    if notes:
        os.pwrite(fd, "".join(n + "\n" for n in notes).encode(), 0)


@contextmanager
def load_lock(settings: Settings, run_id: str,
              killed: Callable[[list[str]], None] | None = None) -> Iterator[Path]:
    """Hold the lake's load lock (see the module).  While another process holds it, wait
    up to ``settings.lock_wait`` seconds, then raise :class:`LoadLockedError`.

    The holder's note (pid, host, run id, source, since when) is the lock file's last line; a
    load that ends cleanly clears the file.  Notes found there when the lock is taken are of
    loads that did not end so (killed, or failed halfway): ``killed`` gets them, before this
    load writes anything, to clean up after them.  They stay in the file until ``killed``
    returns, so a load killed while cleaning up leaves them to the next."""
    path = lock_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _take(fd, path, fcntl.LOCK_EX, settings.lock_wait)
        dead = _read(fd)
        note = (f"pid {os.getpid()} on {socket.gethostname()}, run {run_id}, source "
                f"{settings.source}, since {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}")
        _write(fd, [*dead, note])
        if dead and killed is not None:
            killed(dead)
            _write(fd, [note])
        yield path
        # only a load that ended cleanly clears its note: one that failed halfway may have
        # left data files as a killed one does
        _write(fd, [])
    finally:
        os.close(fd)  # releases the lock


def check_unlocked(settings: Settings) -> None:
    """Return once no load holds the lock (waiting up to ``settings.lock_wait`` seconds),
    or raise :class:`LoadLockedError`: a probe (a shared lock taken and dropped), so that a
    command can stop before it starts Spark; the load itself still takes the lock."""
    path = lock_path(settings)
    if not path.exists():
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        _take(fd, path, fcntl.LOCK_SH, settings.lock_wait)
    finally:
        os.close(fd)
