"""Numeric codes of the binlog format.

Event type codes: MySQL ``libbinlogevents/include/binlog_event.h`` (enum Log_event_type) and
MariaDB ``sql/log_event.h`` (codes 160+).  Column type codes: ``include/field_types.h``
(enum enum_field_types), shared by both servers.
"""

from __future__ import annotations

from enum import IntEnum

BINLOG_MAGIC = b"\xfebin"
# MySQL 8.0.14+ encrypted binlog files start with this magic and a 512-byte file header
# (sql/binlog_ostream.cc, Binlog_encryption_istream).
MYSQL_ENCRYPTED_MAGIC = b"\xfdbin"
GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

V4_HEADER_LEN = 19  # timestamp(4) type(1) server_id(4) event_size(4) log_pos(4) flags(2)
CHECKSUM_LEN = 4

# Common-header flags (log_event.h).
LOG_EVENT_BINLOG_IN_USE_F = 0x1
LOG_EVENT_THREAD_SPECIFIC_F = 0x4
LOG_EVENT_SUPPRESS_USE_F = 0x8
LOG_EVENT_ARTIFICIAL_F = 0x20
LOG_EVENT_RELAY_LOG_F = 0x40
LOG_EVENT_IGNORABLE_F = 0x80
LOG_EVENT_SKIP_REPLICATION_F = 0x8000

# Checksum algorithms in the FDE (binlog_event.h enum_binlog_checksum_alg).
CHECKSUM_OFF = 0
CHECKSUM_CRC32 = 1
CHECKSUM_UNDEF = 255


class EventType(IntEnum):
    UNKNOWN = 0
    START_V3 = 1
    QUERY = 2
    STOP = 3
    ROTATE = 4
    INTVAR = 5
    LOAD = 6
    SLAVE = 7
    CREATE_FILE = 8
    APPEND_BLOCK = 9
    EXEC_LOAD = 10
    DELETE_FILE = 11
    NEW_LOAD = 12
    RAND = 13
    USER_VAR = 14
    FORMAT_DESCRIPTION = 15
    XID = 16
    BEGIN_LOAD_QUERY = 17
    EXECUTE_LOAD_QUERY = 18
    TABLE_MAP = 19
    PRE_GA_WRITE_ROWS = 20
    PRE_GA_UPDATE_ROWS = 21
    PRE_GA_DELETE_ROWS = 22
    WRITE_ROWS_V1 = 23
    UPDATE_ROWS_V1 = 24
    DELETE_ROWS_V1 = 25
    INCIDENT = 26
    HEARTBEAT = 27
    IGNORABLE = 28
    ROWS_QUERY = 29
    WRITE_ROWS = 30
    UPDATE_ROWS = 31
    DELETE_ROWS = 32
    GTID = 33
    ANONYMOUS_GTID = 34
    PREVIOUS_GTIDS = 35
    TRANSACTION_CONTEXT = 36
    VIEW_CHANGE = 37
    XA_PREPARE = 38
    PARTIAL_UPDATE_ROWS = 39
    TRANSACTION_PAYLOAD = 40
    HEARTBEAT_V2 = 41
    GTID_TAGGED = 42
    # MariaDB
    ANNOTATE_ROWS = 160
    BINLOG_CHECKPOINT = 161
    MARIADB_GTID = 162
    MARIADB_GTID_LIST = 163
    START_ENCRYPTION = 164
    QUERY_COMPRESSED = 165
    WRITE_ROWS_COMPRESSED_V1 = 166
    UPDATE_ROWS_COMPRESSED_V1 = 167
    DELETE_ROWS_COMPRESSED_V1 = 168
    WRITE_ROWS_COMPRESSED = 169
    UPDATE_ROWS_COMPRESSED = 170
    DELETE_ROWS_COMPRESSED = 171
    PARTIAL_ROW_DATA = 172


def event_type_name(code: int) -> str:
    try:
        return EventType(code).name
    except ValueError:
        return f"UNKNOWN_{code}"


class ColumnType(IntEnum):
    DECIMAL = 0
    TINY = 1
    SHORT = 2
    LONG = 3
    FLOAT = 4
    DOUBLE = 5
    NULL = 6
    TIMESTAMP = 7
    LONGLONG = 8
    INT24 = 9
    DATE = 10
    TIME = 11
    DATETIME = 12
    YEAR = 13
    NEWDATE = 14
    VARCHAR = 15
    BIT = 16
    TIMESTAMP2 = 17
    DATETIME2 = 18
    TIME2 = 19
    TYPED_ARRAY = 20
    VECTOR = 242
    INVALID = 243
    BOOL = 244
    JSON = 245
    NEWDECIMAL = 246
    ENUM = 247
    SET = 248
    TINY_BLOB = 249
    MEDIUM_BLOB = 250
    LONG_BLOB = 251
    BLOB = 252
    VAR_STRING = 253
    STRING = 254
    GEOMETRY = 255
