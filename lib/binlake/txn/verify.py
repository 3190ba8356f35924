"""`binlake verify`: every validity finding for a set of files of one source server.

Two passes share nothing but the files: the stream checks (positions, checksums,
transaction_length, GTID continuity, the file chain; :mod:`binlake.txn.checks`) and the
transaction pass (WL#4162 grammar, open transactions, XA pairing;
:mod:`binlake.txn.build`).  Findings come out sorted by file order and position.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from .build import TransactionStream
from .files import order_files
from .findings import Finding
from .model import Transaction


def verify(uris: Iterable[str | os.PathLike[str]], *, pending_in: list[Transaction] | None = None,
           nontransactional: Iterable[str] = (), verify_checksums: bool = True,
           pending_max_age: float | None = None) -> list[Finding]:
    uris = list(uris)
    order = {f.name: i for i, f in enumerate(order_files(uris))}
    stream = TransactionStream(uris, pending_in=pending_in, nontransactional=nontransactional,
                               verify_checksums=verify_checksums,
                               pending_max_age=pending_max_age)
    for _ in stream:
        pass
    # Framing errors are reported by the stream checks too: keep one of each.
    txn_findings = [f for f in stream.findings if f.kind not in ("truncated", "decode_error")]
    try:
        from .checks import check_files
    except ImportError:  # pragma: no cover - checks.py is part of the package
        stream_findings = [f for f in stream.findings if f.kind in ("truncated",
                                                                    "decode_error")]
    else:
        stream_findings = check_files(uris)
    out = [*stream_findings, *txn_findings]
    out.sort(key=lambda f: (order.get(f.file or "", -1), f.pos if f.pos is not None else -1))
    return out
