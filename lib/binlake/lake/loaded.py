"""What earlier load runs loaded, as the ``files`` table records it (:class:`Loaded`): the files
a run can skip, and the table engines earlier runs' DDL left (:func:`engine_seed`), with the
warnings of a backfill behind loaded files (:func:`engines_unseen`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..config import Settings
from ..txn.files import BinlogFile
from .driver_read import all_of, eq, read_rows
from .survey import EngineState, decode_engines
from .tables import FILES


@dataclass(frozen=True)
class Loaded:
    """What ``files`` records of a file loaded before: its sha256, whether the server was
    still writing it, its sequence number and the table engines its DDL left (None: loaded
    by a binlake that did not record them)."""

    sha256: str | None
    in_use: bool
    seq: int | None
    engines: EngineState | None


def _loaded(spark: Any, settings: Settings) -> dict[str, Loaded]:
    """file name -> :class:`Loaded`, for the files recorded as loaded for this source (read
    on the driver: :func:`driver_read.read_rows`)."""
    rows = read_rows(spark, settings, settings.table(FILES),
                     all_of(eq("source", settings.source), eq("status", "loaded")),
                     ("file", "sha256", "in_use", "seq", "engines")).to_pylist()
    return {r["file"]: Loaded(r["sha256"], bool(r["in_use"]), r["seq"],
                              None if r["engines"] is None else decode_engines(r["engines"]))
            for r in rows}


def engine_seed(loaded: dict[str, Loaded], first_seq: int
                ) -> tuple[EngineState, str | None]:
    """The table engines the DDL of earlier runs' files left before file ``first_seq``: the
    state recorded with the newest loaded file before it (and that file's name), or nothing
    when there is none or it recorded none."""
    before = [(info.seq, name, info.engines) for name, info in loaded.items()
              if info.seq is not None and info.seq < first_seq]
    if not before:
        return (), None
    _, name, engines = max(before)
    return (engines or ()), name


def engines_unseen(ends: dict[int, tuple[str, EngineState]], loaded: dict[str, Loaded]
                   ) -> list[dict[str, Any]]:
    """Warnings for a backfill: the files of this run (``ends``: seq -> (name, the engine
    state its DDL left)) that are followed by a file loaded in an earlier run (not in this
    one), where a table this run's DDL made non-transactional is unknown to the state that
    later file recorded.  Its rows were derived taking that table as transactional (its
    seed could not see this run's DDL): reloading it re-derives them."""
    later = sorted((info.seq, name, info.engines) for name, info in loaded.items()
                   if info.seq is not None and info.seq not in ends
                   and info.engines is not None)
    out = []
    for seq, name, recorded in later:
        before = [s for s in ends if s < seq]
        if not before:
            continue
        last = max(before)
        if any(last < s < seq for s, _, _ in later):
            continue  # another loaded file lies between: it is the one that saw the state
        known = {t for t, _ in recorded or ()}
        unseen = sorted(t for t, tx in ends[last][1] if not tx and t not in known)
        if unseen:
            out.append({"kind": "engines_unseen_by_loaded_file", "severity": "warning",
                        "file": name, "pos": None,
                        "message": f"{name} was loaded before {ends[last][0]}, whose DDL makes "
                                   f"{', '.join(unseen)} non-transactional: its rows took "
                                   f"them as transactional; load {name} again with --reload"})
    return out


def _later_loaded(loaded: dict[str, Loaded], files: list[BinlogFile]) -> bool:
    """Whether a file after the first of ``files`` was loaded before and is not loaded
    again now (this run is a backfill behind it)."""
    first = min(f.seq for f in files)
    names = {f.name for f in files}
    return any(info.seq is not None and info.seq > first and name not in names
               for name, info in loaded.items())
