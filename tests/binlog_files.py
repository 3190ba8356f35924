"""Small helpers for tests that copy real binlog files and then damage the copies."""

from __future__ import annotations

import shutil
from pathlib import Path

from binlake.binlog.event import Event
from binlake.binlog.reader import BinlogReader


def copy_files(files: list[Path], dest: Path) -> list[Path]:
    """Copies of ``files`` in ``dest`` (created), in the same order."""
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for f in files:
        shutil.copyfile(f, dest / f.name)
        out.append(dest / f.name)
    return out


def top_events(path: Path) -> list[Event]:
    """The file's events, without the ones inside a Transaction_payload."""
    return [ev for ev in BinlogReader(path) if ev.payload_index is None]
