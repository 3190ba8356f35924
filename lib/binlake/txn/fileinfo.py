"""What one binlog file turned out to hold: :class:`FileInfo` (event count, FDE facts,
first/last timestamp and GTID, what it ends with, the errors that failed it), filled one event
at a time by :func:`note_event`.  The transaction stream keeps one per file; the lake's decode
tasks and the quality facts keep one per byte range or file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..binlog.constants import EventType as E
from ..binlog.errors import BinlogError
from ..binlog.event import Event
from .boundary import GTID_EVENTS


@dataclass
class FileInfo:
    name: str
    uri: str
    seq: int
    events: int = 0
    end_offset: int | None = None
    server_version: str | None = None
    flavor: str | None = None
    checksum_alg: str | None = None
    in_use: bool | None = None
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    first_gtid: str | None = None
    last_gtid: str | None = None
    ends_with: str | None = None  # ROTATE / STOP / None
    error: BinlogError | None = None  # the framing error that ended the file
    # the events the reader marked damaged (a CRC32 mismatch, a body its decoder rejected):
    # the file failed too, and their transactions were not built
    damaged: list[BinlogError] = field(default_factory=list)

    @property
    def errors(self) -> list[BinlogError]:
        """Everything that failed the file, in file order (empty: it was read whole)."""
        return [*self.damaged, *([self.error] if self.error is not None else [])]

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k not in ("error", "damaged")}
        d["error"] = self.error.to_dict() if self.error else None
        d["damaged"] = [e.to_dict() for e in self.damaged]
        return d


def note_event(info: FileInfo, ev: Event) -> None:
    """Fold one event into a file's facts (count, FDE, first/last timestamp and GTID, what
    the file ends with).  Shared by the transaction stream and the lake's byte ranges."""
    info.events += 1
    code = ev.type_code
    if code == _FDE and info.server_version is None:
        info.server_version = ev.data.get("server_version")
        info.flavor = ev.data.get("flavor")
        info.checksum_alg = ev.data.get("checksum_alg")
        info.in_use = ev.data.get("in_use")
    ts = ev.timestamp
    if ts:
        if info.first_timestamp is None:
            info.first_timestamp = ts
        info.last_timestamp = ts
    if code in GTID_EVENTS:
        gtid = ev.data.get("gtid")
        if gtid:
            if info.first_gtid is None:
                info.first_gtid = gtid
            info.last_gtid = gtid
    if ev.payload_index is None:
        info.ends_with = ev.type if code in _ENDS else None


# (globals: an Enum member looked up on its class costs about 0.1 us; this runs per event)
_FDE = E.FORMAT_DESCRIPTION
_ENDS = frozenset({E.ROTATE, E.STOP})
