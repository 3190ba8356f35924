"""The survey of a binlog file for the driver's plan: one pass for its DDL statements and table
layouts (:func:`survey_scan`, run in the survey task), and the table engine states that DDL
leaves at each range start and file end (:func:`engine_states`), as task rows and
``files.engines`` carry them (:func:`encode_engines`, :func:`decode_engines`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..binlog.constants import EventType as E
from ..binlog.errors import BinlogError
from ..binlog.reader import BinlogReader
from ..binlog.source import HashTap
from ..txn.engines import EngineTracker
from .records import (
    DdlEvent,
    _note_ddl,
    ddl_events,
    layout_record,
)


def survey_scan(uri: str, seq: int, tap: HashTap | None = None,
                facts: dict[str, Any] | None = None
                ) -> tuple[list[DdlEvent], list[dict[str, Any]]]:
    """One pass over a file for the driver's plan: its DDL statements (as
    :func:`ddl_events`) and its table layouts (:func:`layout_record`, for the
    first Table_map of each table and whenever the table's layout changes).  Only Query and
    Table_map events are decoded (Table_maps from a cache: the server logs the same one in
    every transaction), and compressed transactions are opened for their Table_maps.  A
    damaged file gives what comes before the damage (its decode reports it).  ``tap``
    gets the file's stored bytes as they are read (see :class:`binlake.binlog.source.HashTap`).
    ``facts`` gets the file's ``server_version`` and ``flavor``."""
    ddl: list[DdlEvent] = []
    layouts: list[dict[str, Any]] = []
    last: dict[tuple[str, str], Any] = {}  # (db, table) -> (TableMap, layout key)
    reader = BinlogReader(uri, decode={E.QUERY, E.QUERY_COMPRESSED, E.TABLE_MAP,
                                       E.TRANSACTION_PAYLOAD}, verify_checksums=False, tap=tap,
                          only_decoded=True)
    try:
        for ev in reader:
            t = ev.type_code
            if t == E.TABLE_MAP:
                tm = ev.data.get("_table_map")
                if tm is None:
                    continue
                key = (tm.db, tm.table)
                prev = last.get(key)
                if prev is not None and prev[0] is tm:
                    continue
                layout = (tuple(c.key() for c in tm.columns), tm.primary_key,
                          tm.has_full_metadata)
                if prev is None or prev[1] != layout:
                    layouts.append(layout_record(tm, seq, ev.pos))
                last[key] = (tm, layout)
            elif t in (E.QUERY, E.QUERY_COMPRESSED):
                _note_ddl(ddl, ev)
    except BinlogError:
        pass
    if facts is not None and reader.fde is not None:
        facts.update(server_version=reader.fde.server_version, flavor=reader.fde.flavor)
    return ddl, layouts


# EngineTracker.ddl_state(): ("db.table", transactional) pairs
EngineState = tuple[tuple[str, bool], ...]


def engine_states(ddl: list[list[DdlEvent]], starts: list[list[int]], seed: EngineState = ()
                  ) -> tuple[list[list[EngineState]], list[EngineState]]:
    """Driver side: what the DDL says about table engines at each range start, and at the
    end of each file.

    A range decoded alone would not see a ``CREATE TABLE ... ENGINE=MyISAM`` in an earlier
    range or file, and would then undo that table's rows on ROLLBACK.  ``ddl``: the
    :func:`ddl_events` of the files, in order; ``starts``: their ranges' start positions;
    ``seed``: the state before the first file.  The state at a start is the one after every
    DDL statement before it (earlier files included); a file's end state (what
    ``files.engines`` records, to seed the next run) is the one after all of its own."""
    tracker = EngineTracker(seen_ddl=seed)
    at_starts: list[list[EngineState]] = []
    at_ends: list[EngineState] = []
    for events, file_starts in zip(ddl, starts):
        pending = sorted(file_starts)
        states: dict[int, EngineState] = {}
        for pos, db, q in events:
            while pending and pos >= pending[0]:
                states[pending.pop(0)] = tracker.ddl_state()
            tracker.observe_ddl(db, q)
        for p in pending:
            states[p] = tracker.ddl_state()
        at_starts.append([states[p] for p in file_starts])
        at_ends.append(tracker.ddl_state())
    return at_starts, at_ends


def seeds_from(ddl: list[list[DdlEvent]], starts: list[list[int]], seed: EngineState = ()
               ) -> list[list[EngineState]]:
    """The states at the range starts of :func:`engine_states`."""
    return engine_states(ddl, starts, seed)[0]


def end_states(ddl: list[list[DdlEvent]], seed: EngineState = ()) -> list[EngineState]:
    """The states at the file ends of :func:`engine_states`."""
    return engine_states(ddl, [[] for _ in ddl], seed)[1]


def encode_engines(state: EngineState) -> list[str]:
    """An engine state as task rows and ``files.engines`` carry it: ``db.table=1``
    (transactional) or ``db.table=0``."""
    return [f"{name}={int(transactional)}" for name, transactional in state]


def decode_engines(values: Iterable[str]) -> EngineState:
    return tuple(sorted((v.rsplit("=", 1)[0], v.endswith("=1")) for v in values))


def engine_seeds(uris: list[str], starts: list[list[int]],
                 seed: tuple[tuple[str, bool], ...] = ()
                 ) -> list[list[tuple[tuple[str, bool], ...]]]:
    """:func:`seeds_from` the :func:`ddl_events` of ``uris``, read here."""
    return seeds_from([ddl_events(u) for u in uris], starts, seed)
