"""JSON Lines rendering of events and row changes (the public contract in
docs/decode-format.md)."""

from __future__ import annotations

from typing import Any

import orjson

from .event import Event

# PASSTHROUGH_SUBCLASS sends str/int subclasses to _default, so that a JSON DECIMAL
# (mysql_json.JsonNumberText) is written as a bare number with its exact digits.
_OPTS = orjson.OPT_APPEND_NEWLINE | orjson.OPT_PASSTHROUGH_SUBCLASS


def dumps(obj: Any, _dumps: Any = orjson.dumps) -> bytes:
    return _dumps(obj, _default, _OPTS)


def _default(obj: Any) -> Any:
    if isinstance(obj, str):
        if type(obj).__name__ == "JsonNumberText":
            return orjson.Fragment(str(obj))
        return str(obj)
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, dict):
        return dict(obj)
    if isinstance(obj, list):
        return list(obj)
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return {"hex": bytes(obj).hex()}
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    raise TypeError(f"cannot render {type(obj).__name__}")


def event_dict(ev: Event) -> dict[str, Any]:
    """One event as a JSON-ready dict: the common header plus the event's own fields."""
    d = ev.header_dict()
    tm = ev.data.get("_table_map")
    if tm is not None:
        d.update(tm.describe())
    for k, v in ev.data.items():
        if k[0] == "_":
            continue
        if k == "rows":
            v = [_row_images(before, after) for before, after in v]
        d[k] = v
    if ev.error is not None:
        d["error"] = ev.error.to_dict()
    return d


def _row_images(before: Any, after: Any) -> dict[str, Any]:
    out = {}
    if before is not None:
        out["before"] = before
    if after is not None:
        out["after"] = after
    return out
