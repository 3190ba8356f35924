"""The plain-data event record the reader yields."""

from __future__ import annotations

from typing import Any

from .constants import event_type_name
from .errors import BinlogError


class Event:
    """One binlog event: its common header, its decoded fields, and where it lives.

    ``pos`` is the byte offset of the event in its file and ``next_pos`` the header's
    ``log_pos`` field as the server wrote it (the end position in binlogs; a master
    position in relay logs).  Events inside a Transaction_payload carry the payload's
    ``pos``/``next_pos`` and their index in ``payload_index``.  ``error`` is set when the
    event's framing was sound but its checksum or body was not (the reader went on).
    """

    __slots__ = ("checksum", "data", "error", "file", "flags", "length", "next_pos", "payload_index",
                 "pos", "server_id", "timestamp", "type_code")

    def __init__(self, file: str, pos: int, type_code: int, timestamp: int, server_id: int,
                 length: int, next_pos: int, flags: int, data: dict[str, Any],
                 checksum: int | None = None, payload_index: int | None = None,
                 error: BinlogError | None = None) -> None:
        self.file = file
        self.pos = pos
        self.type_code = type_code
        self.timestamp = timestamp
        self.server_id = server_id
        self.length = length
        self.next_pos = next_pos
        self.flags = flags
        self.data = data
        self.checksum = checksum
        self.payload_index = payload_index
        self.error = error

    @property
    def type(self) -> str:
        return event_type_name(self.type_code)

    @property
    def end_pos(self) -> int:
        """Where the next event starts in this file (independent of ``next_pos``)."""
        return self.pos + self.length if self.payload_index is None else self.next_pos

    def header_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "file": self.file,
            "pos": self.pos,
            "next_pos": self.next_pos,
            "type": self.type,
            "type_code": self.type_code,
            "timestamp": self.timestamp,
            "server_id": self.server_id,
            "flags": self.flags,
            "length": self.length,
        }
        if self.payload_index is not None:
            d["payload_index"] = self.payload_index
        return d

    def __repr__(self) -> str:
        return f"<Event {self.type} {self.file}:{self.pos} len={self.length}>"
