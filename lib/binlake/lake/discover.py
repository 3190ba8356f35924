"""Discovering a load's input: the binlog files named by the sources, and the per-file survey
run on executors (archived sha256, transaction-aligned byte ranges, DDL statements and table
layouts).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from ..binlog.errors import BinlogError
from ..binlog.source import HashTap, parse_location, s3_client
from ..txn.files import BinlogFile, binlog_file, order_files
from ..txn.split import split_file
from .records import DdlEvent
from .survey import survey_scan
from .worker import settle


def discover(sources: Iterable[str]) -> list[BinlogFile]:
    """Files, directories (their binlog files; ``*.index`` skipped) and ``s3://`` URIs (an
    object, or every object under a prefix ending with ``/``), in server order."""
    uris: list[str] = []
    for src in sources:
        loc = parse_location(src)
        if loc.scheme == "s3":
            if src.endswith("/"):
                paginator = s3_client().get_paginator("list_objects_v2")
                for page in paginator.paginate(Bucket=loc.bucket, Prefix=loc.key):
                    for obj in page.get("Contents", []):
                        key = obj["Key"]
                        if not key.endswith((".index", "/")) and binlog_file(key).seq >= 0:
                            uris.append(f"s3://{loc.bucket}/{key}")
            else:
                uris.append(src)
        elif loc.path and os.path.isdir(loc.path):
            for name in sorted(os.listdir(loc.path)):
                full = os.path.join(loc.path, name)
                if os.path.isfile(full) and not name.endswith(".index") \
                        and binlog_file(full).seq >= 0:
                    uris.append(full)
        else:
            uris.append(src)
    return order_files(uris)


def _sha256(uri: str, tap: HashTap | None = None) -> tuple[str, int, str | None]:
    """sha256 and size of the stored object, and the sha256 recorded when it was archived
    (None when nothing was recorded).  ``tap``: what a scan of the file already hashed (the
    rest is read here).  Runs on an executor."""
    from ..archive.objectstore import recorded_sha256

    sha, size = (tap or HashTap()).finish(uri)
    return sha, size, recorded_sha256(uri)


# The survey cuts files into ranges this many times finer than ``split_bytes``; the driver
# joins them into the decode ranges (txn.split.group_ranges), as many as the cores can take
# in full rounds.
FINE_SPLIT = 8


def _survey(uri: str, split_bytes: int) -> dict[str, Any]:
    """What the driver needs of one file before decoding it, read on an executor: its sha256,
    size and archived sha256 (:func:`_sha256`), its transaction-aligned ranges of about
    ``split_bytes / FINE_SPLIT`` (or why it cannot be split), its DDL statements and its
    table layouts (:func:`survey.survey_scan`)."""
    fine = max(1, split_bytes // FINE_SPLIT)
    try:
        ranges: list[Any] | str = split_file(uri, target_bytes=fine,
                                             min_bytes=min(1 << 20, fine))
    except BinlogError as exc:
        ranges = str(exc)
    ddl: list[DdlEvent] = []
    layouts: list[dict[str, Any]] = []
    fde: dict[str, Any] = {}
    tap = HashTap()  # the scan reads every byte: the sha256 comes from the same read
    if not isinstance(ranges, str):
        ddl, layouts = survey_scan(uri, binlog_file(uri).seq, tap, fde)
    sha, size, recorded = _sha256(uri, tap)
    return {"sha": (sha, size, recorded), "ranges": ranges, "ddl": ddl, "layouts": layouts,
            "fde": fde}


def survey_task(uri: str, split_bytes: int) -> dict[str, Any]:
    """:func:`_survey` as an executor task: the worker settles after it (lake.worker)."""
    try:
        return _survey(uri, split_bytes)
    finally:
        settle()
