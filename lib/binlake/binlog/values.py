"""Column value readers that are too involved to inline: DECIMAL, TIME2, old temporals.

Each returns the value in binlake's JSON value contract (docs/decode-format.md): DECIMAL as
the exact text the server prints, temporals as strings, floats as the shortest text that
round-trips the stored single-precision value.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from functools import cache

# decimal2bin: bytes needed for a leftover group of 0..8 digits (strings/decimal.cc dig2bytes).
DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)


def decimal_code(precision: int, scale: int, src: str, out: str) -> tuple[int, list[str]]:
    """(byte size, Python statements) that read a DECIMAL(precision, scale) from the bytes
    expression ``src`` into the variable ``out``; inlined by the generated row readers.

    Layout (strings/decimal.cc, decimal2bin): integer digits then fraction digits, in groups
    of 9 digits stored as 4-byte big-endian integers, with a leading/trailing partial group
    of DIG2BYTES[n] bytes.  The top bit of the first byte is flipped (1 = non-negative) and a
    negative number has every byte inverted.
    """
    intg = precision - scale
    ig0, igx = divmod(intg, 9)
    fr0, frx = divmod(scale, 9)
    isz = DIG2BYTES[igx]
    fsz = DIG2BYTES[frx]
    size = isz + ig0 * 4 + fr0 * 4 + fsz
    bits = size * 8
    top = 1 << (bits - 1)
    ones = (1 << bits) - 1
    lines = [f"x = int.from_bytes({src}, 'big')",
             f"if x & {top}:",
             f"    x ^= {top}; sg = ''",
             "else:",
             f"    x ^= {top ^ ones}; sg = '-'"]
    frac_fmt = []
    frac_vars = []
    if frx:  # trailing partial fraction group (least significant bytes)
        lines.append(f"f{fr0} = x & {(1 << fsz * 8) - 1}; x >>= {fsz * 8}")
    for k in reversed(range(fr0)):
        lines.append(f"f{k} = x & 0xFFFFFFFF; x >>= 32")
    for k in range(fr0):
        frac_fmt.append("%09d")
        frac_vars.append(f"f{k}")
    if frx:
        frac_fmt.append(f"%0{frx}d")
        frac_vars.append(f"f{fr0}")
    int_terms = []
    for k in range(ig0):  # full integer groups, least significant first
        lines.append(f"i{k} = x & 0xFFFFFFFF; x >>= 32")
        int_terms.append(f"i{k} * {10 ** (9 * k)}" if k else "i0")
    int_terms.append(f"x * {10 ** (9 * ig0)}" if ig0 else "x")
    fmt = "%s%d" + ("." + "".join(frac_fmt) if scale else "")
    args = ", ".join(["sg", " + ".join(int_terms), *frac_vars])
    lines.append(f"{out} = '{fmt}' % ({args})")
    return size, lines


def decimal_bin_size(precision: int, scale: int) -> int:
    """Bytes of a DECIMAL(precision, scale) in decimal2bin format (decimal_bin_size())."""
    full_int, rest_int = divmod(precision - scale, 9)
    full_frac, rest_frac = divmod(scale, 9)
    return (full_int + full_frac) * 4 + DIG2BYTES[rest_int] + DIG2BYTES[rest_frac]


def decimal_text(data: bytes, precision: int, scale: int) -> str:
    """One decimal2bin value as the server prints it, checked as bin2decimal() checks it:
    a digit group larger than its digits raises ValueError (corrupt input).  For values that
    come one at a time (User_var, JSON opaques); row images use :func:`decimal_code`.
    ``data`` must hold at least decimal_bin_size(precision, scale) bytes."""
    size = decimal_bin_size(precision, scale)
    if size == 0:  # DECIMAL(0,0)
        return "0"
    negative = not data[0] & 0x80
    number = int.from_bytes(data[:size], "big") ^ (1 << (8 * size - 1))
    if negative:
        number ^= (1 << (8 * size)) - 1
    digits = number.to_bytes(size, "big")
    intg = precision - scale
    widths = [9] * (intg // 9)
    if intg % 9:
        widths.insert(0, intg % 9)  # the integer part's partial group comes first
    n_int = len(widths)
    widths += [9] * (scale // 9)
    if scale % 9:
        widths.append(scale % 9)  # the fraction's partial group comes last
    parts = []
    pos = 0
    for width in widths:
        nbytes = 4 if width == 9 else DIG2BYTES[width]
        group = int.from_bytes(digits[pos:pos + nbytes], "big")
        if group >= 10 ** width:
            raise ValueError(f"decimal digit group {group} out of range (more than {width} "
                             "digits)")
        parts.append(str(group).zfill(width))
        pos += nbytes
    text = "".join(parts[:n_int]).lstrip("0") or "0"
    if scale:
        text += "." + "".join(parts[n_int:])
    return "-" + text if negative else text


@cache
def decimal_reader(precision: int, scale: int) -> tuple[int, Callable[[bytes], str]]:
    """(byte size, reader) for a DECIMAL(precision, scale) in decimal2bin format: the
    statements of :func:`decimal_code` as a function of the value's bytes."""
    size, body = decimal_code(precision, scale, "b", "v")
    src = "def read(b):\n" + "".join(f"    {line}\n" for line in body) + "    return v\n"
    namespace: dict[str, Callable[[bytes], str]] = {}
    exec(compile(src, f"<decimal({precision},{scale})>", "exec"), namespace)
    return size, namespace["read"]


def fsp_bytes(fsp: int) -> int:
    """Bytes of fractional seconds for fsp 0..6 (my_time.cc, my_datetime_binary_length)."""
    return (fsp + 1) // 2


def _frac_signed(b: bytes, fsp: int) -> int:
    """Fractional part as microseconds, signed as stored (TIME2 and DATETIME2 use it)."""
    n = (fsp + 1) // 2
    if n == 0:
        return 0
    v = int.from_bytes(b[:n], "big", signed=True)
    return v * (10000 if n == 1 else 100 if n == 2 else 1)


def _fmt_frac(micro: int, fsp: int) -> str:
    return "." + f"{micro:06d}"[:fsp] if fsp else ""


def time2(b: bytes, fsp: int) -> str:
    """TIME2 (MySQL 5.6.4+): 3 bytes big-endian with 0x800000 offset, then fsp bytes.

    Follows my_time.cc my_time_packed_from_binary + TIME_from_longlong_time_packed, where a
    negative value with a fraction borrows one second from the integer part.
    """
    intpart = int.from_bytes(b[:3], "big") - 0x800000
    n = (fsp + 1) // 2
    if n == 0:
        packed = intpart << 24
    elif n == 1 or n == 2:
        frac = int.from_bytes(b[3:3 + n], "big", signed=False)
        if intpart < 0 and frac:
            intpart += 1
            frac -= 0x100 if n == 1 else 0x10000
        packed = (intpart << 24) + frac * (10000 if n == 1 else 100)
    else:
        packed = int.from_bytes(b[:6], "big") - 0x800000000000
    neg = packed < 0
    if neg:
        packed = -packed
    hms = packed >> 24
    micro = packed % (1 << 24)
    hour = (hms >> 12) % (1 << 10)
    minute = (hms >> 6) % (1 << 6)
    second = hms % (1 << 6)
    return f"{'-' if neg else ''}{hour:02d}:{minute:02d}:{second:02d}{_fmt_frac(micro, fsp)}"


def time_old(v: int) -> str:
    """Old TIME (MYSQL_TYPE_TIME): signed 3-byte integer ``[-]HHMMSS``."""
    neg = v < 0
    v = -v if neg else v
    return f"{'-' if neg else ''}{v // 10000:02d}:{v // 100 % 100:02d}:{v % 100:02d}"


def datetime_old(v: int) -> str:
    """Old DATETIME (MYSQL_TYPE_DATETIME): 8-byte integer YYYYMMDDhhmmss."""
    d, t = divmod(v, 1_000_000)
    return (f"{d // 10000:04d}-{d // 100 % 100:02d}-{d % 100:02d} "
            f"{t // 10000:02d}:{t // 100 % 100:02d}:{t % 100:02d}")


def timestamp_utc(seconds: int, micro: int, fsp: int) -> str:
    """A TIMESTAMP rendered in UTC; 0 is MySQL's zero timestamp '0000-00-00 00:00:00'."""
    if seconds == 0 and micro == 0:
        return "0000-00-00 00:00:00" + ("." + "0" * fsp if fsp else "")
    t = time.gmtime(seconds)
    return (f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d} "
            f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}{_fmt_frac(micro, fsp)}")


_F32 = struct.Struct("<f")


def float32(b: bytes) -> float:
    """The shortest decimal that reads back as the same single-precision value (as
    MySQL prints FLOAT), not the double nearest to it (1.1 rather than 1.100000023841858)."""
    (v,) = _F32.unpack(b)
    if v != v or v in (float("inf"), float("-inf")):
        return v
    for digits in range(6, 10):
        s = float(f"{v:.{digits}g}")
        if _F32.pack(s) == b:
            return s
    return v


def vector(b: bytes) -> list[float]:
    """MySQL 9 VECTOR: little-endian float32 values."""
    n = len(b) // 4
    return [float32(b[i * 4:i * 4 + 4]) for i in range(n)]
