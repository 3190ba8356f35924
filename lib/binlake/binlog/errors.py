"""The one error family of binlake.

Every error raised for bad input is a :class:`BinlogError`.  It names the file and
the byte offset where the problem was found, what was expected and what was found,
and carries (a bounded prefix of) the raw bytes of the offending event, so a
message alone is enough to find the spot with ``hexdump -s OFFSET``.
"""

from __future__ import annotations

from typing import Any

RAW_KEEP = 64  # bytes of the offending event kept on the error (go-mysql's EventError does the same)


class BinlogError(Exception):
    """Base class: a binlog (or a byte range of one) could not be read as it should."""

    kind = "binlog_error"

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        offset: int | None = None,
        expected: Any = None,
        actual: Any = None,
        raw: bytes | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.offset = offset
        self.expected = expected
        self.actual = actual
        self.raw = bytes(raw[:RAW_KEEP]) if raw is not None else None
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = f"{self.file or '<stream>'}"
        if self.offset is not None:
            where += f" at byte {self.offset}"
        text = f"{where}: {self.message}"
        if self.expected is not None or self.actual is not None:
            text += f" (expected {self.expected!r}, found {self.actual!r})"
        return text

    def with_location(self, file: str | None = None, offset: int | None = None) -> BinlogError:
        """Fill in the file / offset if a lower layer did not know them."""
        if self.file is None and file is not None:
            self.file = file
        if self.offset is None and offset is not None:
            self.offset = offset
        self.args = (self.__str__(),)
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "error": type(self).__name__,
            "kind": self.kind,
            "file": self.file,
            "offset": self.offset,
            "message": self.message,
            "expected": None if self.expected is None else repr(self.expected),
            "actual": None if self.actual is None else repr(self.actual),
            "raw_hex": None if self.raw is None else self.raw.hex(),
        }


class SourceError(BinlogError):
    """The file or object could not be opened or read (missing, permission, S3 error)."""

    kind = "source"


class NotABinlogError(BinlogError):
    """The first bytes are not the binlog magic (and not a known compressed container)."""

    kind = "not_a_binlog"


class UnsupportedFormatError(BinlogError):
    """A binlog we recognise but do not decode (e.g. binlog v1/v3 from MySQL 3.23/4.x)."""

    kind = "unsupported_format"


class EncryptedBinlogError(UnsupportedFormatError):
    """An encrypted binlog (MariaDB Start_encryption or MySQL's encrypted file header)."""

    kind = "encrypted"


class TruncatedError(BinlogError):
    """The file (or an event body) ends before the length it declares."""

    kind = "truncated"


class ChecksumError(BinlogError):
    """An event's CRC32 does not match its bytes."""

    kind = "checksum"


class CorruptEventError(BinlogError):
    """An event header or body that cannot be what it claims to be."""

    kind = "corrupt"


class MissingTableMapError(CorruptEventError):
    """A rows event refers to a table id with no preceding Table_map in its group."""

    kind = "missing_table_map"


class UnsupportedFeatureError(BinlogError):
    """Valid input that uses a feature binlake does not decode (named in the message)."""

    kind = "unsupported_feature"
