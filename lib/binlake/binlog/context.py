"""State shared by the event decoders of one file (the FDE in force, the table maps)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import BinlogError, CorruptEventError
from .fde import FormatDescription

if TYPE_CHECKING:
    from .columns import TableMap


class DecodeContext:
    __slots__ = ("fde", "file", "flags", "server_id", "table_maps", "type_code")

    def __init__(self, file: str, fde: FormatDescription) -> None:
        self.file = file
        self.fde = fde
        self.table_maps: dict[int, TableMap] = {}
        self.flags = 0  # common-header flags of the event being decoded
        self.type_code = 0
        self.server_id = 0  # common-header server_id of the event being decoded

    def corrupt(self, message: str, offset: int, *, expected: Any = None, actual: Any = None,
                raw: bytes | None = None, cls: type[BinlogError] = CorruptEventError) -> BinlogError:
        return cls(message, file=self.file, offset=offset, expected=expected, actual=actual, raw=raw)
