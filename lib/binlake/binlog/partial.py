"""MySQL 8.0 partial JSON updates (PARTIAL_UPDATE_ROWS_EVENT, binlog_row_value_options=
PARTIAL_JSON): rebuild the full after image from the before image and the logged diffs.

After image layout (``sql/rpl_record.cc`` unpack_row / ``log_event.cc``
print_verbose_one_row): ``value_options(packed)``; when it has PARTIAL_JSON_UPDATES (1), a
bitmap with one bit per JSON column of the table; then the usual NULL bitmap and values, where a
JSON column whose partial bit is set holds a diff vector instead of a document.
"""

from __future__ import annotations

from typing import Any

from .constants import ColumnType as T
from .context import DecodeContext
from .packed import packed_len
from .rowcodec import PartialJson, RowReader, compile_reader
from .tablemap import TableMap

PARTIAL_JSON_UPDATES = 1


def read_partial_update(ctx: DecodeContext, tm: TableMap, present_after: int,
                        read_after: RowReader, data: bytes, p: int, before: dict[str, Any],
                        pos: int) -> tuple[dict[str, Any], int]:
    options, p = packed_len(data, p)
    if not options & PARTIAL_JSON_UPDATES:
        return read_after(data, p)
    json_cols = [c for c in tm.columns if c.type == T.JSON]
    nbytes = (len(json_cols) + 7) >> 3
    bits = int.from_bytes(data[p:p + nbytes], "little")
    p += nbytes
    partial = frozenset(c.index for k, c in enumerate(json_cols) if bits >> k & 1
                        and present_after >> c.index & 1)
    if not partial:
        return read_after(data, p)
    after, p = compile_reader(tm, present_after, partial)(data, p)
    from .mysql_json import apply_json_diffs

    names = tm.column_names
    for idx in partial:
        name = names[idx]
        value = after.get(name)
        if isinstance(value, PartialJson):
            if name in before:
                after[name] = apply_json_diffs(before[name], value.diffs)
            else:
                # binlog_row_image=MINIMAL: no document to apply the diffs to; give the diffs
                # themselves (what mysqlbinlog prints as JSON_REPLACE/INSERT/REMOVE calls).
                after[name] = {"json_diff": [
                    {"op": d.op.name.lower(), "path": d.path, "value": d.value}
                    if d.op.name != "REMOVE" else {"op": "remove", "path": d.path}
                    for d in value.diffs]}
    return after, p
