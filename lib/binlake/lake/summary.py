"""The summary of a load run: :class:`LoadSummary` (what the run read, wrote, skipped and found)
and its human text (:func:`summary_text`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..txn.model import XaXid


@dataclass
class LoadSummary:
    run_id: str
    source: str
    files: list[dict[str, Any]] = field(default_factory=list)
    transactions: dict[str, int] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    pending: list[dict[str, Any]] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    bytes: int = 0
    ranges: int = 0
    typed: dict[str, Any] = field(default_factory=dict)  # typed tables' report
    branch: str | None = None  # the Iceberg branch written (write-audit-publish), or None
    timings: dict[str, float] = field(default_factory=dict)  # seconds per phase
    # surveyed and decoded in the driver's process (a small input: driver_decode_bytes)
    in_driver: bool = False
    # XAs prepared in this run's files and decided at a COMMIT/ROLLBACK a run before it
    # stored (a backfill behind loaded files): their transactions end in a file outside
    # this run, so ``transactions`` and ``rows`` do not count them
    xa_decided_late: list[dict[str, Any]] = field(default_factory=list)
    # XAs decided by a decode task, their PREPARE and COMMIT/ROLLBACK in its range (the
    # others of the run's decisions: by a Spark job after the pairing)
    xa_decided_in_range: int = 0

    @property
    def failed(self) -> list[dict[str, Any]]:
        """Files that did not land: ``failed`` (damaged, or not what was archived) and
        ``conflict`` (loaded before with other content)."""
        return [f for f in self.files if f["status"] in ("failed", "conflict")]

    @property
    def loaded(self) -> list[dict[str, Any]]:
        return [f for f in self.files if f["status"] == "loaded"]

    @property
    def skipped(self) -> list[dict[str, Any]]:
        """Files loaded by an earlier run with the same sha256: not decoded again."""
        return [f for f in self.files if f["status"] == "skipped"]

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "source": self.source, "files": self.files,
                "transactions": self.transactions, "rows": self.rows, "pending": self.pending,
                "findings": self.findings, "seconds": self.seconds, "bytes": self.bytes,
                "ranges": self.ranges, "typed": self.typed, "branch": self.branch,
                "timings": self.timings, "xa_decided_late": self.xa_decided_late,
                "xa_decided_in_range": self.xa_decided_in_range, "in_driver": self.in_driver}


def summary_text(s: LoadSummary) -> str:
    lines = [f"binlake load {s.run_id} (source {s.source}): {len(s.files)} file(s), "
             f"{s.bytes / 1e6:.1f} MB in {s.ranges} range(s), {s.seconds:.1f} s"]
    if s.branch:
        lines.append(f"written on branch {s.branch} (binlake publish --branch {s.branch})")
    if s.timings:
        lines.append("phases: " + ", ".join(f"{k} {v:.1f} s" for k, v in s.timings.items()))
    for f in s.files:
        lines.append(f"  {f['status']:8} {f['file']}" + (f"  {f['error']}" if f["error"] else ""))
    if s.files and not s.loaded and not s.failed:
        lines.append("nothing new: every file was loaded before")
    if s.transactions:
        lines.append("transactions: " + ", ".join(f"{k} {v}" for k, v in
                                                   sorted(s.transactions.items())))
    for t, n in sorted(s.rows.items()):
        lines.append(f"  rows {t}: {n}")
    if s.typed:
        merged = s.typed.get("rows_merged") or {}
        skipped = s.typed.get("skipped") or {}
        lines.append(f"typed tables: {merged.get('changelog', 0)} changelog rows, "
                     f"{merged.get('mirror', 0)} mirror changes, "
                     f"{len(s.typed.get('created') or [])} created, "
                     f"{len(s.typed.get('evolved') or [])} evolved, {len(skipped)} skipped")
        for table, why in sorted(skipped.items()):
            lines.append(f"  skipped {table}: {why}")
    if s.xa_decided_late:
        lines.append(f"XA decided at a COMMIT/ROLLBACK loaded before: {len(s.xa_decided_late)}")
        for d in s.xa_decided_late:
            lines.append(f"  {d['xid']} prepared at {d['prepare_file']}:{d['prepare_pos']}, "
                         f"{d['status']} at {d['end_file']}:{d['end_pos']}")
    lines.append(f"pending XA: {len(s.pending)}")
    for p in s.pending:
        xid = XaXid(p["xa_format_id"], p["xa_gtrid"], p["xa_bqual"])
        lines.append(f"  {xid} prepared at "
                     f"{p['prepare_file']}:{p['prepare_pos']}")
    errors = Counter(f.get("kind") for f in s.findings if f.get("severity", "error") == "error")
    if errors:
        lines.append("findings (errors): " + ", ".join(f"{k} {v}" for k, v in errors.items()))
    return "\n".join(lines)
