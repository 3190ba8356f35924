"""State shared by the event decoders of one file (the FDE in force, the table maps)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import BinlogError, CorruptEventError
from .fde import FormatDescription

if TYPE_CHECKING:
    from collections.abc import Callable

    from .columns import TableMap

    TableMapHook = Callable[[TableMap, int, FormatDescription], TableMap]


class DecodeContext:
    __slots__ = ("fde", "file", "flags", "server_id", "table_map_hook", "table_maps",
                 "type_code")

    def __init__(self, file: str, fde: FormatDescription,
                 table_map_hook: TableMapHook | None = None) -> None:
        self.file = file
        self.fde = fde
        self.table_maps: dict[int, TableMap] = {}
        # called with every decoded Table_map, its event's position and the FDE in force;
        # what it returns is the TableMap the rows events use (see BinlogReader)
        self.table_map_hook = table_map_hook
        self.flags = 0  # common-header flags of the event being decoded
        self.type_code = 0
        self.server_id = 0  # common-header server_id of the event being decoded

    def corrupt(self, message: str, offset: int, *, expected: Any = None, actual: Any = None,
                raw: bytes | None = None, cls: type[BinlogError] = CorruptEventError) -> BinlogError:
        return cls(message, file=self.file, offset=offset, expected=expected, actual=actual, raw=raw)
