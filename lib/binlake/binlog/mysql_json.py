"""MySQL's ``JSON`` column, for the row decoder: binary JSON documents and partial JSON updates.

MySQL only: MariaDB stores ``JSON`` as ``LONGTEXT`` and its row images carry plain text.

* ``json_binary``: a binary JSON document (``sql-common/json_binary.cc``) to Python values
  (:func:`decode_json`, :class:`JsonNumberText` for DECIMALs, :data:`MAX_DEPTH`);
* ``json_diff``: the diff vectors of a partial update (``PARTIAL_UPDATE_ROWS_EVENT``,
  ``sql-common/json_diff.cc``): :func:`read_json_diffs`, :func:`apply_json_diffs`,
  :class:`JsonDiff`, :class:`JsonDiffOp`.

Both raise :class:`~binlake.binlog.errors.CorruptEventError` for malformed input.
"""

from __future__ import annotations

from binlake.binlog.json_binary import MAX_DEPTH, JsonNumberText, decode_json
from binlake.binlog.json_diff import JsonDiff, JsonDiffOp, apply_json_diffs, read_json_diffs

__all__ = [
    "MAX_DEPTH",
    "JsonDiff",
    "JsonDiffOp",
    "JsonNumberText",
    "apply_json_diffs",
    "decode_json",
    "read_json_diffs",
]
