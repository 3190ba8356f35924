"""MySQL binary JSON (the storage format of a ``JSON`` column): decoding one document.

MySQL only: MariaDB stores ``JSON`` as ``LONGTEXT`` and its row images carry plain text.

Binary JSON (MySQL ``sql-common/json_binary.cc``, ``json_binary.h``)
====================================================================

A document is one type byte followed by the value::

    0x00 small object   0x01 large object   0x02 small array   0x03 large array
    0x04 literal (0x00 null, 0x01 true, 0x02 false)
    0x05 int16  0x06 uint16  0x07 int32  0x08 uint32  0x09 int64  0x0A uint64
    0x0B double (IEEE 754, little-endian)
    0x0C string: variable-length length, then utf8mb4 bytes
    0x0F opaque: MySQL column type byte, variable-length length, then bytes

An object/array is ``count``, ``size in bytes``, then (objects only) ``count`` key entries
``(key offset, key length u16)``, then ``count`` value entries ``(type u8, offset-or-inline)``.
Offsets and the two counts are u16 in the small form and u32 in the large form; every offset
is relative to the first byte after the container's type byte.  Literals and (u)int16 are
inlined in the value entry; (u)int32 only in the large form.  The "variable length" of strings
and opaques is 7 bits per byte, least significant first, high bit = "more" (at most 5 bytes).

How values are returned (MySQL's ``Json_wrapper::to_string``, ``sql-common/json_dom.cc``)
===========================================================================================

dict (keys in stored order, which MySQL keeps sorted by key length, then bytes), list, str,
int, float, bool, None; and for opaque values what MySQL prints for them in JSON text:

* ``NEWDECIMAL`` -> :class:`JsonNumberText`, a ``str`` subclass holding the exact decimal
  text as ``decimal2string`` prints it (scale kept: ``9.00`` stays ``9.00``).  It is a JSON
  *number*: the rendering layer must emit it raw, without quotes.  (orjson would serialize
  it as a quoted string by default, and a float would lose digits.)
* ``DATE``/``TIME``/``DATETIME``/``TIMESTAMP`` (an 8-byte "packed" longlong) -> the string
  ``my_TIME_to_str(t, 6)`` prints: ``2015-01-15``, ``23:24:25.000000``,
  ``2015-01-15 23:24:25.000000``.
* ``VAR_STRING`` -> the bytes as a string (``wrapper_to_string`` treats it as J_STRING).
* any other column type -> ``"base64:typeNN:<base64>"`` (MySQL's base64 breaks lines every
  76 characters, ``mysys/base64.cc``).

An empty document is JSON null (``json_binary::parse_binary``).  Anything malformed or
truncated raises :class:`~binlake.binlog.errors.CorruptEventError`; nesting deeper than MySQL's
``JSON_DOCUMENT_MAX_DEPTH`` (100) is malformed too.

Partial JSON updates (diff vectors) are read and applied in ``json_diff``.
"""

from __future__ import annotations

import base64
import math
import struct
from typing import NoReturn

from binlake.binlog import values
from binlake.binlog.constants import ColumnType
from binlake.binlog.errors import CorruptEventError

__all__ = ["MAX_DEPTH", "JsonNumberText", "decode_json"]

# JSON_DOCUMENT_MAX_DEPTH (sql-common/json_syntax_check.h); check_json_depth() rejects depth > it.
MAX_DEPTH = 100

# Type bytes (json_binary.cc, JSONB_TYPE_*).
_SMALL_OBJECT = 0x00
_LARGE_OBJECT = 0x01
_SMALL_ARRAY = 0x02
_LARGE_ARRAY = 0x03
_LITERAL = 0x04
_INT16 = 0x05
_UINT16 = 0x06
_INT32 = 0x07
_UINT32 = 0x08
_STRING = 0x0C
_OPAQUE = 0x0F

_LITERALS: dict[int, bool | None] = {0x00: None, 0x01: True, 0x02: False}

_COUNTS_SMALL = struct.Struct("<HH")  # element count, size in bytes
_COUNTS_LARGE = struct.Struct("<II")
_KEY_SMALL = struct.Struct("<HH")  # key offset, key length
_KEY_LARGE = struct.Struct("<IH")
_VALUE_SMALL = struct.Struct("<BH")  # type, offset or inlined value
_VALUE_LARGE = struct.Struct("<BI")
_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")

# Non-inlined numeric scalars: type byte -> reader (parse_scalar in json_binary.cc).
_NUMBERS: dict[int, struct.Struct] = {
    0x05: struct.Struct("<h"),
    0x06: struct.Struct("<H"),
    0x07: struct.Struct("<i"),
    0x08: struct.Struct("<I"),
    0x09: _I64,
    0x0A: struct.Struct("<Q"),
    0x0B: _F64,
}

_TEMPORAL_TYPES = frozenset(
    {ColumnType.DATE, ColumnType.TIME, ColumnType.DATETIME, ColumnType.TIMESTAMP}
)


class JsonNumberText(str):
    """The exact text of a JSON number that has no lossless Python value (a MySQL DECIMAL).

    A ``str`` subclass so that it is hashable, comparable and cheap.  The rendering layer must
    write it *unquoted*, since it is a number in JSON.  With orjson, which otherwise writes str
    subclasses as strings: ``orjson.dumps(v, option=orjson.OPT_PASSTHROUGH_SUBCLASS,
    default=lambda o: orjson.Fragment(o.encode()) if isinstance(o, JsonNumberText) else ...)``.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"JsonNumberText({str.__repr__(self)})"


class _Malformed(Exception):
    """Internal: the bytes are not what the format allows (message says why)."""


def _bad(message: str) -> NoReturn:
    raise _Malformed(message)


def _corrupt(
    message: str, data: bytes | None, file: str | None, offset: int | None
) -> CorruptEventError:
    return CorruptEventError(message, file=file, offset=offset, raw=data)


# --------------------------------------------------------------------------- binary JSON


def decode_json(
    data: bytes | bytearray | memoryview, *, file: str | None = None, offset: int | None = None
) -> object:
    """Decode one binary JSON document (a JSON column value without its length prefix).

    ``file`` and ``offset`` only locate the :class:`CorruptEventError` raised for bad input.
    """
    buf = data if isinstance(data, bytes) else bytes(data)
    try:
        return _Decoder(buf).document()
    except _Malformed as exc:
        raise _corrupt(f"malformed MySQL binary JSON: {exc}", buf, file, offset) from None
    except (struct.error, IndexError, ValueError, RecursionError) as exc:  # safety net
        raise _corrupt(f"malformed MySQL binary JSON: {exc!r}", buf, file, offset) from None


class _Decoder:
    """One document's bytes plus a budget that bounds the work on crafted input.

    In a document MySQL wrote, every value entry occupies its own bytes, so the number of
    entries visited cannot exceed the document length.  Entries that point at shared
    containers could otherwise make a tiny input expand exponentially.
    """

    __slots__ = ("budget", "data")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.budget = len(data)

    def document(self) -> object:
        data = self.data
        if not data:
            return None  # json_binary::parse_binary: an empty value is the null literal
        return self.value(data[0], 1, len(data), 0)

    def value(self, type_: int, pos: int, end: int, depth: int) -> object:
        """The value of type ``type_`` stored at ``pos``; it must end by ``end``."""
        if type_ == _STRING:
            return self.string(pos, end)
        if type_ <= _LARGE_ARRAY:
            return self.container(type_, pos, end, depth)
        if type_ == _LITERAL:
            if pos >= end:
                _bad("literal truncated")
            return _literal(self.data[pos])
        reader = _NUMBERS.get(type_)
        if reader is not None:
            if pos + reader.size > end:
                _bad(f"number of type {type_:#x} truncated")
            number = reader.unpack_from(self.data, pos)[0]
            if type_ == 0x0B and not math.isfinite(number):
                _bad("double is not finite")  # MySQL JSON cannot hold NaN/Infinity
            return number
        if type_ == _OPAQUE:
            return self.opaque(pos, end)
        _bad(f"unknown value type {type_:#x}")

    def varlen(self, pos: int, end: int) -> tuple[int, int]:
        """read_variable_length(): 7 bits per byte, LSB first, at most 5 bytes, <= 2**32-1."""
        data = self.data
        if pos >= end:
            _bad("length truncated")
        byte = data[pos]
        if byte < 0x80:
            return byte, pos + 1
        length = 0
        for i in range(min(5, end - pos)):
            byte = data[pos + i]
            length |= (byte & 0x7F) << (7 * i)
            if byte < 0x80:
                if length > 0xFFFFFFFF:
                    _bad("length above 2**32-1")
                return length, pos + i + 1
        _bad("length not terminated")

    def string(self, pos: int, end: int) -> str:
        length, pos = self.varlen(pos, end)
        stop = pos + length
        if stop > end:
            _bad("string runs past its container")
        return _utf8(self.data[pos:stop], "string")

    def opaque(self, pos: int, end: int) -> object:
        if pos >= end:
            _bad("opaque value truncated")
        field_type = self.data[pos]
        length, pos = self.varlen(pos + 1, end)
        if pos + length > end:
            _bad("opaque value runs past its container")
        return _render_opaque(field_type, self.data[pos:pos + length])

    def container(self, type_: int, pos: int, end: int, depth: int) -> object:
        """parse_array_or_object() + Value::element()/key() of json_binary.cc."""
        depth += 1
        if depth > MAX_DEPTH:
            _bad(f"nesting deeper than {MAX_DEPTH}")
        large = type_ & 1
        counts = _COUNTS_LARGE if large else _COUNTS_SMALL
        if end - pos < counts.size:
            _bad("container header truncated")
        count, size = counts.unpack_from(self.data, pos)
        if size > end - pos:
            _bad(f"container of {size} bytes runs past its parent ({end - pos} left)")
        is_object = type_ <= _LARGE_OBJECT
        values = _VALUE_LARGE if large else _VALUE_SMALL
        keys = _KEY_LARGE if large else _KEY_SMALL
        key_bytes = count * keys.size if is_object else 0
        header = counts.size + key_bytes + count * values.size
        if header > size:
            _bad(f"{count} entries do not fit in a container of {size} bytes")
        self.budget -= count
        if self.budget < 0:
            _bad("value entries overlap (more entries than bytes)")
        first_value = pos + counts.size + key_bytes
        entries = values.iter_unpack(self.data[first_value:first_value + count * values.size])
        stop = pos + size
        entry = self.entry
        if not is_object:
            return [entry(t, v, pos, stop, header, large, depth) for t, v in entries]
        names = self.keys(keys, pos + counts.size, count, pos, header, size)
        return {
            name: entry(t, v, pos, stop, header, large, depth)
            for name, (t, v) in zip(names, entries)
        }

    def keys(
        self, keys: struct.Struct, first: int, count: int, base: int, header: int, size: int
    ) -> list[str]:
        data = self.data
        names = []
        for key_offset, key_length in keys.iter_unpack(data[first:first + count * keys.size]):
            if key_offset < header or key_offset + key_length > size:
                _bad(f"key at {key_offset}+{key_length} outside the key area")
            start = base + key_offset
            names.append(_utf8(data[start:start + key_length], "object key"))
        return names

    def entry(
        self, type_: int, field: int, base: int, stop: int, header: int, large: int, depth: int
    ) -> object:
        """One value entry: an inlined scalar, or an offset from ``base`` to the value."""
        if type_ == _LITERAL:
            return _literal(field & 0xFF)
        if type_ == _INT16:
            field &= 0xFFFF
            return field - 0x10000 if field & 0x8000 else field
        if type_ == _UINT16:
            return field & 0xFFFF
        if large and type_ == _INT32:
            return field - 0x100000000 if field & 0x80000000 else field
        if large and type_ == _UINT32:
            return field
        if field < header or base + field >= stop:
            _bad(f"value offset {field} outside the container")
        return self.value(type_, base + field, stop, depth)


def _literal(byte: int) -> bool | None:
    try:
        return _LITERALS[byte]
    except KeyError:
        _bad(f"unknown literal {byte:#x}")


def _utf8(raw: bytes, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        _bad(f"{what} is not valid UTF-8")


# --------------------------------------------------------------------------- opaque values


def _render_opaque(field_type: int, payload: bytes) -> object:
    """What Json_wrapper::to_string() prints for an opaque value (json_dom.cc)."""
    if field_type == ColumnType.NEWDECIMAL:
        return JsonNumberText(_decimal_text(payload))
    if field_type in _TEMPORAL_TYPES:
        if len(payload) != 8:
            _bad(f"packed temporal value of {len(payload)} bytes (expected 8)")
        return _temporal_text(field_type, _I64.unpack(payload)[0])
    if field_type == ColumnType.VAR_STRING:
        # wrapper_to_string(): "Treat strings saved in opaque as plain json strings".
        try:
            return payload.decode("utf-8")
        except UnicodeDecodeError:
            pass  # not text after all: print it like any other opaque value
    return f"base64:type{field_type}:{_mysql_base64(payload)}"


def _mysql_base64(payload: bytes) -> str:
    """mysys/base64.cc base64_encode(): standard alphabet, a newline every 76 characters."""
    text = base64.b64encode(payload).decode("ascii")
    if len(text) <= 76:
        return text
    return "\n".join(text[i:i + 76] for i in range(0, len(text), 76))


_MAX_PRECISION = 65  # DECIMAL_MAX_PRECISION
_MAX_SCALE = 30  # DECIMAL_MAX_SCALE


def _decimal_text(payload: bytes) -> str:
    """Json_decimal::convert_from_binary(): precision, scale, then decimal2bin() bytes.

    Printed as decimal2string() does: no leading zeros, "0" before the point, exactly
    ``scale`` digits after it, "-" when the sign bit says negative.
    """
    if len(payload) < 2:
        _bad("decimal opaque without precision and scale")
    precision, scale = payload[0], payload[1]
    if not (1 <= precision <= _MAX_PRECISION and scale <= _MAX_SCALE and scale <= precision):
        _bad(f"decimal({precision},{scale}) is not a valid DECIMAL type")
    size = values.decimal_bin_size(precision, scale)
    if len(payload) - 2 != size:
        _bad(f"decimal({precision},{scale}) needs {size} bytes, found {len(payload) - 2}")
    try:
        return values.decimal_text(payload[2:], precision, scale)
    except ValueError as exc:
        _bad(str(exc))


def _temporal_text(field_type: int, packed: int) -> str:
    """TIME_from_longlong_packed() then my_TIME_to_str(t, 6) (mysys/my_time.cc).

    Packed layout: sign, then the value's absolute int part << 24 | microseconds.
    DATETIME/DATE/TIMESTAMP int part: ((year*13 + month) << 5 | day) << 17 | h << 12 | m << 6 | s.
    TIME int part: hour << 12 | minute << 6 | second.
    """
    negative = packed < 0
    packed = -packed if negative else packed
    micros = packed % (1 << 24)
    whole = packed >> 24
    if field_type == ColumnType.TIME:
        hour = (whole >> 12) % (1 << 10)
        minute, second = (whole >> 6) % (1 << 6), whole % (1 << 6)
        sign = "-" if negative else ""
        # my_time_to_str(): hours have at least two digits, may have more.
        return f"{sign}{hour:02d}:{_two(minute)}:{_two(second)}.{micros % 1000000:06d}"
    ymd, hms = whole >> 17, whole % (1 << 17)
    day, year_month = ymd % (1 << 5), ymd >> 5
    year, month = divmod(year_month, 13)
    date = f"{_two(year // 100)}{_two(year % 100)}-{_two(month)}-{_two(day)}"
    if field_type == ColumnType.DATE:
        return date  # my_date_to_str(): no time part, the sign is not printed
    hour, minute, second = hms >> 12, (hms >> 6) % (1 << 6), hms % (1 << 6)
    return f"{date} {_two(hour)}:{_two(minute)}:{_two(second)}.{micros % 1000000:06d}"


def _two(value: int) -> str:
    """format_two_digits() (my_time.cc): out-of-range values print as 00."""
    return f"{value:02d}" if 0 <= value < 100 else "00"
