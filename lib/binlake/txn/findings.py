"""Validity findings as data: what the Great Expectations suite checks and `binlake verify`
prints. A finding never stops processing; it is collected and reported."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

ERROR = "error"
WARNING = "warning"
INFO = "info"

# Finding kinds (a public contract: the expectations suite groups on them).
INVALID_TRANSITION = "invalid_transition"  # WL#4162 boundary parser
OPEN_TRANSACTION_AT_EOF = "open_transaction_at_eof"
TRUNCATED = "truncated"  # the file ends inside an event (or its compressed container)
EVENTS_AFTER_TRUNCATION = "events_after_truncation"
DECODE_ERROR = "decode_error"  # framing or body error other than the ones below
CHECKSUM_MISMATCH = "checksum_mismatch"
POSITION_GAP = "position_gap"  # next_pos points past the next event
POSITION_OVERLAP = "position_overlap"  # next_pos points before the end of the event
TRANSACTION_LENGTH_MISMATCH = "transaction_length_mismatch"
GTID_GAP = "gtid_gap"
GTID_DUPLICATE = "gtid_duplicate"
GTID_OUT_OF_ORDER = "gtid_out_of_order"  # a hole filled later / a domain going backwards
GTID_HEADER_MISMATCH = "gtid_header_mismatch"  # Previous_gtids / GTID_list vs what came before
ROTATE_MISMATCH = "rotate_mismatch"  # Rotate names a file that does not follow
FILE_END_WITHOUT_ROTATE = "file_end_without_rotate_or_stop"
FILE_NOT_CLOSED = "file_not_closed"  # FDE in-use flag set
MISSING_FILE = "missing_file"  # a gap in the file sequence
XA_ORPHAN_COMMIT = "xa_commit_without_prepare"
XA_ORPHAN_ROLLBACK = "xa_rollback_without_prepare"
XA_DUPLICATE_PREPARE = "xa_duplicate_prepare"  # an XID prepared again while pending
XA_PENDING_TOO_LONG = "xa_pending_too_long"
DUPLICATE_XID = "duplicate_xid"  # the same Xid value ending two groups of one file
UNKNOWN_TABLE_ENGINE = "unknown_table_engine"
# a group holding a damaged event (bad CRC32, undecodable body): not built, never output
DAMAGED_TRANSACTION = "damaged_transaction"


@dataclass(frozen=True)
class Finding:
    kind: str
    severity: str  # ERROR, WARNING or INFO
    file: str | None
    pos: int | None
    detail: dict[str, Any] = field(default_factory=dict)
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        where = f"{self.file or '-'}:{self.pos if self.pos is not None else '-'}"
        return f"{self.severity.upper()} {self.kind} at {where}: {self.message}"
