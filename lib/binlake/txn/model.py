"""Transactions and row changes: the plain data the transaction layer produces.

``Transaction.to_dict()`` is the public contract of ``binlake transactions`` (one JSON object
per transaction, docs/transactions-format.md); ``RowChange`` carries the values exactly as
``binlake decode --rows`` renders them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# kinds
DML = "dml"  # row changes (or statement-format DML inside BEGIN ... COMMIT)
DDL = "ddl"  # a DDL statement
STATEMENT = "statement"  # other self-contained statements (statement-format autocommit DML, ...)
XA = "xa"

# statuses
COMMITTED = "committed"
ROLLED_BACK = "rolled_back"
XA_COMMITTED = "xa_committed"
XA_ROLLED_BACK = "xa_rolled_back"
XA_PREPARED = "xa_prepared"  # still pending at the end of the input

# OrderKey: sorts row changes correctly across files and runs:
# (file sequence, position of the commit (end) event of the group that made them take effect,
#  index of the change inside that transaction)
OrderKey = tuple[int, int, int]


@dataclass(frozen=True, order=True)
class XaXid:
    """An XA transaction id (formatID, gtrid, bqual); gtrid/bqual as hex: binary XIDs
    survive."""

    format_id: int
    gtrid: str
    bqual: str

    def to_dict(self) -> dict[str, Any]:
        return {"format_id": self.format_id, "gtrid": self.gtrid, "bqual": self.bqual}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> XaXid:
        return cls(int(d["format_id"]), str(d["gtrid"]).lower(), str(d["bqual"]).lower())

    def __str__(self) -> str:
        return f"X'{self.gtrid}',X'{self.bqual}',{self.format_id}"


@dataclass
class RowChange:
    db: str
    table: str
    op: str  # insert | update | delete
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    file: str  # the rows event
    pos: int
    row: int  # index in its rows event
    statement: str | None = None
    applied: bool = True  # False: undone by ROLLBACK / ROLLBACK TO SAVEPOINT / XA ROLLBACK
    order: OrderKey | None = None  # set when the transaction's outcome is known
    transactional: bool = True  # the table's engine is transactional (as far as known)
    statement_pos: int | None = None  # the Annotate_rows / Rows_query event holding it
    # Inside a MySQL Transaction_payload every event has the payload's position: the index
    # of the rows event, and of the statement's event, among the payload's events (None
    # outside a payload)
    payload_index: int | None = None
    statement_payload_index: int | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {"db": self.db, "table": self.table, "op": self.op, "before": self.before,
             "after": self.after, "file": self.file, "pos": self.pos, "row": self.row,
             "statement": self.statement, "applied": self.applied,
             "order": list(self.order) if self.order is not None else None,
             "transactional": self.transactional, "statement_pos": self.statement_pos}
        if self.payload_index is not None:
            d["payload_index"] = self.payload_index
        if self.statement_payload_index is not None:
            d["statement_payload_index"] = self.statement_payload_index
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RowChange:
        order = d.get("order")
        return cls(d["db"], d["table"], d["op"], d.get("before"), d.get("after"), d["file"],
                   int(d["pos"]), int(d["row"]), d.get("statement"), bool(d.get("applied", True)),
                   tuple(order) if order is not None else None,
                   bool(d.get("transactional", True)), d.get("statement_pos"),
                   d.get("payload_index"), d.get("statement_payload_index"))


@dataclass
class Part:
    """Where one event group of a transaction lies (an XA has two: prepare and commit)."""

    file: str
    seq: int
    begin_pos: int
    end_pos: int  # position just after the group's last event
    gtid: str | None = None
    timestamp: int | None = None  # header timestamp of the ending event (seconds)
    commit_ts_us: int | None = None  # MySQL immediate_commit_timestamp (microseconds)

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "seq": self.seq, "begin_pos": self.begin_pos,
                "end_pos": self.end_pos, "gtid": self.gtid, "timestamp": self.timestamp,
                "commit_ts_us": self.commit_ts_us}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Part:
        return cls(d["file"], int(d["seq"]), int(d["begin_pos"]), int(d["end_pos"]),
                   d.get("gtid"), d.get("timestamp"), d.get("commit_ts_us"))


@dataclass
class Transaction:
    kind: str
    status: str
    part: Part  # the group that decided the outcome (commit / rollback / the XA COMMIT group)
    prepare: Part | None = None  # XA: the XA PREPARE group (None for an orphan COMMIT)
    end_event: str = ""  # XID, COMMIT, ROLLBACK, XA_PREPARE, XA_COMMIT, XA_ROLLBACK, DDL ...
    xid: int | None = None  # the Xid event's value
    xa_xid: XaXid | None = None
    one_phase: bool = False
    changes: list[RowChange] = field(default_factory=list)
    statements: list[str] = field(default_factory=list)  # statement-format SQL, DDL text
    nontransactional: bool = False  # contains changes that survive a rollback (WL#2687)
    server_id: int | None = None
    age_seconds: float | None = None  # pending XA: from its PREPARE to the end of the input
    # one dict per statement: its db and the Intvar/Rand/User_var values logged before it
    statement_context: list[dict[str, Any]] = field(default_factory=list)

    @property
    def gtid(self) -> str | None:
        return self.part.gtid

    @property
    def id(self) -> str:
        """Identity: the GTID of the deciding group, else ``file:pos`` of its start."""
        if self.part.gtid:
            return self.part.gtid
        return f"{self.part.file}:{self.part.begin_pos}"

    @property
    def order(self) -> tuple[int, int]:
        return (self.part.seq, self.part.begin_pos)

    @property
    def commit_time(self) -> float | None:
        """Seconds since the epoch (microsecond precision where the server logged it)."""
        if self.part.commit_ts_us is not None:
            return self.part.commit_ts_us / 1e6
        return float(self.part.timestamp) if self.part.timestamp is not None else None

    def row_counts(self) -> dict[str, dict[str, int]]:
        """{"db.table": {"insert": n, "update": n, "delete": n}} of the changes that took
        effect (never rows undone by ROLLBACK TO SAVEPOINT, ROLLBACK or XA ROLLBACK)."""
        out: dict[str, dict[str, int]] = {}
        for c in self.changes:
            if not c.applied:
                continue
            t = out.setdefault(f"{c.db}.{c.table}", {"insert": 0, "update": 0, "delete": 0})
            t[c.op] += 1
        return out

    def to_dict(self, *, with_changes: bool = False) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.id,
            "gtid": self.gtid,
            "kind": self.kind,
            "status": self.status,
            "begin_file": (self.prepare or self.part).file,
            "begin_pos": (self.prepare or self.part).begin_pos,
            "end_file": self.part.file,
            "end_pos": self.part.end_pos,
            "commit_time": self.commit_time if self.status != XA_PREPARED else None,
            "end_event": self.end_event,
            "xid": self.xid,
            "rows": self.row_counts(),
            "nontransactional": self.nontransactional,
        }
        if self.kind == XA:
            d["xa_xid"] = self.xa_xid.to_dict() if self.xa_xid else None
            d["xid"] = d["xa_xid"]  # the contract names the XA id `xid`
            d["one_phase"] = self.one_phase
            d["prepare"] = self.prepare.to_dict() if self.prepare else None
            d["commit"] = self.part.to_dict() if self.status != XA_PREPARED else None
            if self.status == XA_PREPARED:
                d["prepared_at"] = self.commit_time
                d["age_seconds"] = self.age_seconds
        if self.statements:
            d["statements"] = self.statements
            d["statement_context"] = self.statement_context
        if with_changes:
            d["changes"] = [c.to_dict() for c in self.changes]
        return d
