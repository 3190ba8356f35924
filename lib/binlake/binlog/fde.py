"""The Format_description event (and the Start_v3 event of binlog v1/v3).

Layout (MySQL ``libbinlogevents/src/control_events.cpp``, Format_description_event):
``binlog_version(2) server_version(50) create_timestamp(4) header_length(1)
post_header_lengths(N)`` and, from MySQL 5.6.1 / MariaDB 5.3, ``checksum_alg(1) crc(4)``.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

from .constants import CHECKSUM_OFF, CHECKSUM_UNDEF, V4_HEADER_LEN, EventType
from .errors import CorruptEventError, UnsupportedFormatError

_VERSION_RE = re.compile(rb"^(\d+)\.(\d+)\.(\d+)")


def parse_version(server_version: str) -> tuple[int, int, int]:
    m = _VERSION_RE.match(server_version.encode("ascii", "replace"))
    if not m:
        return (0, 0, 0)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3)))


def _checksum_capable(version: tuple[int, int, int], mariadb: bool) -> bool:
    # The checksum alg byte exists from MySQL 5.6.1 and MariaDB 5.3.0 on
    # (log_event.cc: checksum_alg_version_split / get_checksum_alg).
    if mariadb:
        return version >= (5, 3, 0)
    return version >= (5, 6, 1)


# Post-header lengths of binlog v1/v3 (MySQL 3.23/4.x), where there is no FDE to declare them
# (log_event.cc, Format_description_log_event constructor for binlog_ver 1 and 3).
_V3_POST_HEADERS = {
    EventType.START_V3: 56,
    EventType.QUERY: 11,
    EventType.ROTATE: 8,
    EventType.LOAD: 18,
    EventType.CREATE_FILE: 22,
    EventType.APPEND_BLOCK: 4,
    EventType.EXEC_LOAD: 4,
    EventType.DELETE_FILE: 4,
    EventType.NEW_LOAD: 18,
}


# Development trees of 5.1/5.2 ("telco"/"ndb" builds named like 5.1.5-a_drop5p..., 5.2.2-a_drop6p...)
# numbered some events differently; MySQL maps them back (control_events.cpp,
# Format_description_event: event_type_permutation).  old code -> current code:
_DROP_PERMUTATION = {16: EventType.TABLE_MAP, 17: EventType.PRE_GA_WRITE_ROWS,
                     18: EventType.PRE_GA_UPDATE_ROWS, 19: EventType.PRE_GA_DELETE_ROWS,
                     20: EventType.XID, 21: EventType.BEGIN_LOAD_QUERY,
                     22: EventType.EXECUTE_LOAD_QUERY}
_DROP_VERSION = re.compile(r"^5\.(1\.[1-5]-a_drop5|1\.4-a_drop6|2\.[0-2]-a_drop6)")


def _permutation(server_version: str, post: bytes) -> tuple[dict[int, int] | None, bytes]:
    if not _DROP_VERSION.match(server_version) or len(post) != 22:
        return None, post
    fixed = bytearray(post)
    for old, new in _DROP_PERMUTATION.items():
        fixed[new - 1] = post[old - 1]
    return dict(_DROP_PERMUTATION), bytes(fixed)


@dataclass
class FormatDescription:
    binlog_version: int
    server_version: str
    create_timestamp: int
    header_length: int
    post_header_lengths: bytes
    checksum_alg: int  # CHECKSUM_OFF, CHECKSUM_CRC32, or CHECKSUM_UNDEF (no alg field)
    flavor: str  # "mysql" or "mariadb"
    version: tuple[int, int, int] = field(default=(0, 0, 0))
    # Old type code -> current type code, for the few development builds that need it.
    type_permutation: dict[int, int] | None = None

    @property
    def has_checksum(self) -> bool:
        return self.checksum_alg not in (CHECKSUM_OFF, CHECKSUM_UNDEF)

    def post_header_len(self, type_code: int, default: int = 0) -> int:
        if self.binlog_version < 4:
            return _V3_POST_HEADERS.get(type_code, 0)  # type: ignore[call-overload]
        idx = type_code - 1
        if 0 <= idx < len(self.post_header_lengths):
            return self.post_header_lengths[idx]
        return default

    def __post_init__(self) -> None:
        # A 6-byte Table_map post-header means a 4-byte table id (MySQL 5.1.0-5.1.15 era).
        # Computed once: every rows event needs it.
        self.table_id_size = 4 if self.post_header_len(EventType.TABLE_MAP, 8) == 6 else 6

    def to_dict(self) -> dict[str, object]:
        return {
            "binlog_version": self.binlog_version,
            "server_version": self.server_version,
            "create_timestamp": self.create_timestamp,
            "header_length": self.header_length,
            "checksum_alg": {0: "OFF", 1: "CRC32", 255: None}.get(self.checksum_alg,
                                                                  self.checksum_alg),
            "flavor": self.flavor,
        }


_FDE_FIXED = struct.Struct("<H50sIB")


def _clean_version(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("ascii", "replace")


def parse_fde(body: bytes, *, file: str | None, offset: int) -> FormatDescription:
    """Parse an FDE body (everything after the 19-byte common header, checksum included)."""
    if len(body) < _FDE_FIXED.size:
        raise CorruptEventError("Format_description event too short", file=file, offset=offset,
                                expected=f">= {_FDE_FIXED.size} body bytes", actual=len(body))
    binlog_version, raw_version, created, header_length = _FDE_FIXED.unpack_from(body, 0)
    server_version = _clean_version(raw_version)
    mariadb = "mariadb" in server_version.lower()
    version = parse_version(server_version)
    if binlog_version != 4:
        raise CorruptEventError("Format_description event with a binlog version other than 4",
                                file=file, offset=offset, expected=4, actual=binlog_version)
    if header_length < V4_HEADER_LEN:
        raise CorruptEventError("common header length below the v4 minimum", file=file,
                                offset=offset, expected=f">= {V4_HEADER_LEN}", actual=header_length)
    rest = body[_FDE_FIXED.size:]
    if _checksum_capable(version, mariadb):
        if len(rest) < 5:
            raise CorruptEventError("Format_description event lacks its checksum fields",
                                    file=file, offset=offset, expected=">= 5 trailing bytes",
                                    actual=len(rest))
        alg = rest[-5]
        post = rest[:-5]
    else:
        alg = CHECKSUM_UNDEF
        post = rest
    permutation, post = _permutation(server_version, bytes(post))
    return FormatDescription(binlog_version, server_version, created, header_length, post,
                             alg, "mariadb" if mariadb else "mysql", version, permutation)


_START_V3 = struct.Struct("<H50sI")


def parse_start_v3(body: bytes, *, file: str | None, offset: int) -> FormatDescription:
    """A Start_v3 event opens binlog v1/v3 files (MySQL 3.23 to 4.x); it implies the format."""
    if len(body) < _START_V3.size:
        raise CorruptEventError("Start_v3 event too short", file=file, offset=offset,
                                expected=_START_V3.size, actual=len(body))
    binlog_version, raw_version, created = _START_V3.unpack_from(body, 0)
    if binlog_version not in (2, 3):
        raise UnsupportedFormatError(
            f"binlog version {binlog_version} (MySQL 3.23) is not supported; binlake reads "
            "binlog v3 (MySQL 4.x) and v4 (MySQL 5.0+, MariaDB)", file=file, offset=offset,
            expected="binlog version 3 or 4", actual=binlog_version)
    server_version = _clean_version(raw_version)
    return FormatDescription(binlog_version, server_version, created, V4_HEADER_LEN, b"",
                             CHECKSUM_UNDEF, "mysql", parse_version(server_version))
