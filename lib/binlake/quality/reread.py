"""The tasks reading again the files the lake has no facts of (:func:`.datasets.build_stream`).

A file is read whole by one task (:func:`.facts.file_facts`, which also hashes the stored
object) unless it is bigger than ``split_bytes`` and than a core's share of the bytes to read
(all of them over Spark's cores): whole files cannot keep every core busy then.  Such a file
is cut as the load cuts it, so that its reading uses every core: a first job surveys the big
files on the executors (the load's survey, ``lake.discover.survey_task``: transaction-aligned
fine ranges, DDL and the sha256 from one read of each), their fine ranges are joined into
decode-sized ranges in full rounds of the cores (``txn.split.group_ranges``), and each range
is a task with the table engines the DDL before it leaves.  The ranges' facts are merged as
those the load left are.  A file that cannot be cut (compressed, damaged before its first
transaction, unreadable) is read whole; so is one whose ranges turn out unusable
(:func:`.facts.ranges_usable`: a relay log), by :func:`whole_rows` in a second job.  Small
files (or ranges) are several to a task, as the load packs them (``txn.split.pack_tasks``):
a task has a cost of its own.
"""

from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ..binlog.errors import BinlogError
from ..binlog.source import size_of
from ..config import Settings
from ..lake.discover import survey_task
from ..lake.records import ddl_events
from ..lake.survey import encode_engines, seeds_from
from ..txn.files import BinlogFile
from ..txn.split import group_ranges, pack_tasks


@dataclass
class ReadPlan:
    rows: list[tuple[Any, ...]]  # task rows (facts.TASK_SCHEMA)
    tasks: list[list[int]] = field(default_factory=list)  # rows' indexes, a list per task
    # per file read in ranges: the stored object's (sha256, size), from its survey
    hashed: dict[str, tuple[str, int]] = field(default_factory=dict)
    ranges: dict[str, int] = field(default_factory=dict)  # per file read in ranges: how many


def _survey_or_none(uri: str, split_bytes: int) -> dict[str, Any] | None:
    """The load's survey of one file, or None when it cannot be read (its whole-file task
    then reports why)."""
    try:
        return survey_task(uri, split_bytes)
    except (OSError, BinlogError):
        return None


def plan(sc: Any, settings: Settings, files: list[BinlogFile],
         todo: list[tuple[int, BinlogFile]]) -> ReadPlan:
    """The task rows of ``todo`` (each file's index in ``files``, and the file)."""
    slots = max(1, sc.defaultParallelism)

    def stored_size(f: BinlogFile) -> int | None:
        with contextlib.suppress(BinlogError):  # (read whole: its task reports it)
            return size_of(f.uri)
        return None

    with ThreadPoolExecutor(max_workers=8) as pool:  # (S3: a request each)
        sizes = dict(zip([f.name for _, f in todo], pool.map(stored_size, [f for _, f in todo])))
    share = sum(s or 0 for s in sizes.values()) / slots  # each core's, none idle
    big = [f for _, f in todo if slots > 1
           and (sizes[f.name] or 0) > max(settings.split_bytes, share)]
    surveys: dict[str, dict[str, Any]] = {}
    if big:
        got = sc.parallelize([f.uri for f in big], len(big)).map(
            partial(_survey_or_none, split_bytes=settings.split_bytes)).collect()
        surveys = {f.name: sv for f, sv in zip(big, got)
                   if sv is not None and not isinstance(sv["ranges"], str) and sv["ranges"]}
    names = list(surveys)
    grouped = dict(zip(names, group_ranges([surveys[n]["ranges"] for n in names], slots,
                                           settings.split_bytes)))
    upto = todo[-1][0] + 1  # the DDL before each file or range read: table engines
    ddl = [surveys[f.name]["ddl"] if f.name in surveys else ddl_events(f.uri)
           for f in files[:upto]]
    starts = [[r.start for r in grouped[f.name]] if f.name in grouped else [0]
              for f in files[:upto]]
    seeds = seeds_from(ddl, starts)
    out = ReadPlan([])
    nbytes: list[int] = []
    for i, f in todo:
        head = (f.uri, f.name, f.seq, f.base, i, i == len(files) - 1,
                list(settings.nontransactional))
        rs = grouped.get(f.name)
        if not rs:
            out.rows.append((*head, encode_engines(seeds[i][0]), None, None, 0, True))
            # (unknown: a task of its own)
            nbytes.append(sizes[f.name] or settings.split_bytes)
            continue
        for k, r in enumerate(rs):
            out.rows.append((*head, encode_engines(seeds[i][k]), r.start, r.end, k,
                             k == len(rs) - 1))
            nbytes.append(r.end - r.start)
        sha, size, _recorded = surveys[f.name]["sha"]
        out.hashed[f.name] = (sha, size)
        out.ranges[f.name] = len(rs)
    # small files several to a task (a task has a cost of its own), as the load packs them
    out.tasks = pack_tasks(nbytes, slots, settings.split_bytes)
    return out


def whole_rows(rows: list[tuple[Any, ...]], names: set[str]) -> list[tuple[Any, ...]]:
    """Whole-file task rows of the files ``names`` that ``rows`` read in ranges (the engines
    of each file's first range: those before the file)."""
    out = []
    for r in rows:
        if r[1] in names and r[10] == 0:  # (range_index)
            out.append((*r[:8], None, None, 0, True))
    return out
