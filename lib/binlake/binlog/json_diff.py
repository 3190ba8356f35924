"""Partial JSON updates: MySQL's JSON diff vectors, read and applied to the before image.

Partial updates (MySQL 8.0 ``PARTIAL_UPDATE_ROWS_EVENT``, ``binlog_row_value_options=PARTIAL_JSON``)
====================================================================================================

In the after image, a JSON column whose partial bit is set holds a diff vector instead of a
document (``Json_diff_vector::write_binary`` / ``read_binary``, ``sql-common/json_diff.cc``)::

    u32 LE  length of the diffs that follow (not counting these 4 bytes)
    per diff:  u8 operation (0 REPLACE, 1 INSERT, 2 REMOVE)
               packed length + path text (``Json_path::to_string``, e.g. ``$.a[1]."b c"``)
               unless REMOVE: packed length + binary JSON value

:func:`apply_json_diffs` applies them to the before-image value like ``apply_json_diff``.
Diff values are binary JSON (``json_binary``).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from binlake.binlog.json_binary import _bad, _corrupt, _Decoder, _Malformed, _utf8

__all__ = ["JsonDiff", "JsonDiffOp", "apply_json_diffs", "read_json_diffs"]

_U32 = struct.Struct("<I")


class JsonDiffOp(IntEnum):
    """enum_json_diff_operation (sql-common/json_diff.h)."""

    REPLACE = 0
    INSERT = 1
    REMOVE = 2


@dataclass(frozen=True, slots=True)
class JsonDiff:
    """One logical change of a JSON column: ``value`` is None for REMOVE (and for JSON null)."""

    op: JsonDiffOp
    path: str
    value: object = None


# A parsed path leg: a member name, or an array index (index, counted from the end?).
_Leg = str | tuple[int, bool]

_LENGTH_PREFIX = 4  # Json_diff_vector::ENCODED_LENGTH_BYTES


def read_json_diffs(
    data: bytes | bytearray | memoryview,
    pos: int,
    *,
    file: str | None = None,
    offset: int | None = None,
) -> tuple[list[JsonDiff], int]:
    """Read a diff vector starting at ``data[pos]`` (its u32 length prefix included).

    Returns the diffs and the position just after the vector.  Values are decoded as
    :func:`~binlake.binlog.json_binary.decode_json` does; each path is checked to parse.
    ``file``/``offset`` locate errors.
    """
    buf = data if isinstance(data, bytes) else bytes(data)
    try:
        return _read_diff_vector(buf, pos)
    except _Malformed as exc:
        raise _corrupt(f"malformed JSON diff vector: {exc}", buf[pos:], file, offset) from None
    except (struct.error, IndexError, ValueError, RecursionError) as exc:  # safety net
        raise _corrupt(f"malformed JSON diff vector: {exc!r}", buf[pos:], file, offset) from None


def _read_diff_vector(data: bytes, pos: int) -> tuple[list[JsonDiff], int]:
    """Json_diff_vector::read_binary(): u32 length, then diffs filling exactly that length."""
    if pos < 0 or pos + _LENGTH_PREFIX > len(data):
        _bad("length prefix truncated")
    (length,) = _U32.unpack_from(data, pos)
    pos += _LENGTH_PREFIX
    end = pos + length
    if end > len(data):
        _bad(f"diffs of {length} bytes run past the row ({len(data) - pos} left)")
    diffs = []
    while pos < end:
        diff, pos = _read_diff(data, pos, end)
        diffs.append(diff)
    return diffs, end


def _read_diff(data: bytes, pos: int, end: int) -> tuple[JsonDiff, int]:
    """read_json_diff() (json_diff.cc): operation, path, and unless REMOVE a value."""
    op_byte = data[pos]
    if op_byte > JsonDiffOp.REMOVE:
        _bad(f"unknown diff operation {op_byte}")
    op = JsonDiffOp(op_byte)
    raw_path, pos = _packed_string(data, pos + 1, end, "path")
    path = _utf8(raw_path, "diff path")
    _parse_path(path)  # parse_path() rejects the diff if the path is not valid
    if op is JsonDiffOp.REMOVE:
        return JsonDiff(op, path), pos
    raw_value, pos = _packed_string(data, pos, end, "value")
    return JsonDiff(op, path, _Decoder(raw_value).document()), pos


def _packed_string(data: bytes, pos: int, end: int, what: str) -> tuple[bytes, int]:
    length, pos = _packed_length(data, pos, end, what)
    if pos + length > end:
        _bad(f"{what} of {length} bytes runs past the diff vector")
    return data[pos:pos + length], pos + length


def _packed_length(data: bytes, pos: int, end: int, what: str) -> tuple[int, int]:
    """net_field_length_checked(): <251 itself; 252/253/254 + 2/3/8 bytes LE; 251 is NULL."""
    if pos >= end:
        _bad(f"{what} length truncated")
    first = data[pos]
    if first < 251:
        return first, pos + 1
    width = {252: 2, 253: 3, 254: 8}.get(first)
    if width is None:
        _bad(f"{what} length has invalid first byte {first}")
    if pos + 1 + width > end:
        _bad(f"{what} length truncated")
    return int.from_bytes(data[pos + 1:pos + 1 + width], "little"), pos + 1 + width


# Json path text (sql-common/json_path.cc parse_path(); only what Json_path::to_string writes
# for diffs: member legs and array cells, optionally counted from "last").
_WHITESPACE = " \t\n\r\x0b\x0c"
_MEMBER_END = _WHITESPACE + "[.*"


def _parse_path(text: str) -> list[_Leg]:
    i = _skip_ws(text, 0)
    if i >= len(text) or text[i] != "$":
        _bad(f"path {text!r} does not start with $")
    i = _skip_ws(text, i + 1)
    legs: list[_Leg] = []
    while i < len(text):
        if text[i] == ".":
            name, i = _member_leg(text, _skip_ws(text, i + 1))
            legs.append(name)
        elif text[i] == "[":
            cell, i = _array_leg(text, _skip_ws(text, i + 1))
            legs.append(cell)
        else:
            _bad(f"unsupported path leg at {i} in {text!r}")
        i = _skip_ws(text, i)
    return legs


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WHITESPACE:
        i += 1
    return i


def _member_leg(text: str, i: int) -> tuple[str, int]:
    """``.name`` or ``."quoted name"`` (JSON string escapes in both, as parse_member_leg())."""
    if i >= len(text) or text[i] == "*":
        _bad(f"member wildcard or empty member in {text!r}")
    if text[i] == '"':
        j = i + 1
        while j < len(text) and text[j] != '"':
            j += 2 if text[j] == "\\" else 1
        stop = j + 1
        quoted = text[i:stop]
    else:
        stop = i
        while stop < len(text) and text[stop] not in _MEMBER_END:
            stop += 1
        quoted = f'"{text[i:stop]}"'
    if stop == i or stop > len(text):
        _bad(f"bad member name in {text!r}")
    try:
        name = json.loads(quoted)
        name.encode("utf-8")  # rejects lone surrogates from \ud800-style escapes
    except (ValueError, AttributeError):
        _bad(f"bad member name in {text!r}")
    if not isinstance(name, str):
        _bad(f"bad member name in {text!r}")
    return name, stop


def _array_leg(text: str, i: int) -> tuple[tuple[int, bool], int]:
    """``[n]``, ``[last]`` or ``[last-n]`` (parse_array_index(); ranges and * not allowed)."""
    from_end = text.startswith("last", i)
    index = 0
    if from_end:
        i = _skip_ws(text, i + 4)
        if i < len(text) and text[i] == "-":
            index, i = _digits(text, _skip_ws(text, i + 1))
    else:
        index, i = _digits(text, i)
    i = _skip_ws(text, i)
    if i >= len(text) or text[i] != "]":
        _bad(f"unsupported array leg in {text!r}")
    return (index, from_end), i + 1


def _digits(text: str, i: int) -> tuple[int, int]:
    start = i
    while i < len(text) and "0" <= text[i] <= "9":
        i += 1
    if i == start:
        _bad(f"array index expected at {start} in {text!r}")
    value = int(text[start:i])
    if value > 0xFFFFFFFF:
        _bad(f"array index {value} above 2**32-1")
    return value, i


def apply_json_diffs(
    doc: object,
    diffs: Sequence[JsonDiff],
    *,
    file: str | None = None,
    offset: int | None = None,
) -> object:
    """Apply diffs in order to a decoded before-image value, as apply_json_diff() does.

    REPLACE needs the path to exist; INSERT needs the parent to exist and, for a member,
    the member not to exist (an array insert at n shifts the rest; past the end appends);
    REMOVE needs the path to exist.  A diff that MySQL would reject
    (``enum_json_diff_status::REJECTED``) raises :class:`CorruptEventError`.

    The input is not modified.  The result shares unchanged sub-values with ``doc`` and
    with the diff values, so treat all of them as read-only.
    """
    try:
        for diff in diffs:
            doc = _apply_one(doc, diff)
    except _Malformed as exc:
        raise _corrupt(f"JSON diff cannot be applied: {exc}", None, file, offset) from None
    return doc


def _apply_one(doc: object, diff: JsonDiff) -> object:
    legs = _parse_path(diff.path)
    if not legs:
        if diff.op is JsonDiffOp.REPLACE:
            return diff.value  # MySQL never writes this (asserts a leg); the meaning is clear
        _bad(f"{diff.op.name} at the document root")
    chain: list[tuple[Any, Any]] = []  # (container, key) from the root to the parent
    node = doc
    for leg in legs[:-1]:
        key = _existing_child(node, leg, diff)
        chain.append((node, key))
        node = node[key]  # type: ignore[index]
    new = _change_parent(node, legs[-1], diff)
    for parent, key in reversed(chain):  # copy-on-write back up to the root
        parent = parent.copy()
        parent[key] = new
        new = parent
    return new


def _existing_child(node: object, leg: _Leg, diff: JsonDiff) -> str | int:
    """seek_exact_path(): members only in objects, cells only in arrays, no auto-wrapping."""
    if isinstance(leg, str):
        if isinstance(node, dict) and leg in node:
            return leg
    elif isinstance(node, list):
        position, within = _array_position(leg, len(node))
        if within:
            return position
    _bad(f"{diff.op.name} {diff.path}: path not found")


def _array_position(leg: tuple[int, bool], length: int) -> tuple[int, bool]:
    """Json_array_index (json_path.h): position, and whether the index is within bounds."""
    index, from_end = leg
    if from_end:
        return (length - index - 1 if index < length else 0), index < length
    return min(index, length), index < length


def _change_parent(node: object, leg: _Leg, diff: JsonDiff) -> object:
    """The last leg: a copy of ``node`` with the change made (apply_json_diff())."""
    if isinstance(leg, str) and isinstance(node, dict):
        return _change_object(node, leg, diff)
    if isinstance(leg, tuple) and isinstance(node, list):
        return _change_array(node, leg, diff)
    _bad(f"{diff.op.name} {diff.path}: parent is not a matching container")


def _change_object(node: dict[str, Any], key: str, diff: JsonDiff) -> dict[str, Any]:
    present = key in node
    if diff.op is JsonDiffOp.INSERT:
        if present:
            _bad(f"INSERT {diff.path}: member already exists")
        return _insert_member(node, key, diff.value)
    if not present:
        _bad(f"{diff.op.name} {diff.path}: member not found")
    new = node.copy()
    if diff.op is JsonDiffOp.REPLACE:
        new[key] = diff.value
    else:
        del new[key]
    return new


def _insert_member(node: dict[str, Any], key: str, value: object) -> dict[str, Any]:
    """Place the new key where MySQL's object map would (Json_key_comparator: length, bytes)."""
    order = _key_order(key)
    items = list(node.items())
    at = next((i for i, (k, _) in enumerate(items) if _key_order(k) > order), len(items))
    items.insert(at, (key, value))
    return dict(items)


def _key_order(key: str) -> tuple[int, bytes]:
    raw = key.encode("utf-8", "surrogatepass")
    return len(raw), raw


def _change_array(node: list[Any], leg: tuple[int, bool], diff: JsonDiff) -> list[Any]:
    position, within = _array_position(leg, len(node))
    new = node.copy()
    if diff.op is JsonDiffOp.INSERT:
        new.insert(position, diff.value)  # Json_array::insert_alias(): at or past the end
        return new
    if not within:
        _bad(f"{diff.op.name} {diff.path}: array index out of range")
    if diff.op is JsonDiffOp.REPLACE:
        new[position] = diff.value
    else:
        del new[position]
    return new
