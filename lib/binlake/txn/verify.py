"""`binlake verify`: every validity finding for a set of files of one source server.

One read of each file feeds both the stream checks (positions, checksums,
transaction_length, GTID continuity, the file chain; :mod:`binlake.txn.checks`) and the
transaction pass (WL#4162 grammar, open transactions, XA pairing; :mod:`binlake.txn.build`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from .files import order_files
from .findings import Finding
from .model import Transaction
from .spill import SPILL_BYTES, SPILL_ROWS
from .stream import TransactionStream


def verify(uris: Iterable[str | os.PathLike[str]], *, pending_in: list[Transaction] | None = None,
           nontransactional: Iterable[str] = (), verify_checksums: bool = True,
           pending_max_age: float | None = None,
           newest_file_may_be_open: bool = True) -> list[Finding]:
    """All findings, from one read of each file (the stream checks ride along the
    transaction pass), sorted by file order and position."""
    uris = list(uris)
    order = {f.name: i for i, f in enumerate(order_files(uris))}
    stream = TransactionStream(uris, pending_in=pending_in, nontransactional=nontransactional,
                               verify_checksums=verify_checksums,
                               pending_max_age=pending_max_age,
                               newest_file_may_be_open=newest_file_may_be_open,
                               stream_checks=True, spill_bytes=SPILL_BYTES,
                               spill_rows=SPILL_ROWS)
    for _ in stream:
        pass
    out = list(stream.findings)
    out.sort(key=lambda f: (order.get(f.file or "", -1), f.pos if f.pos is not None else -1))
    return out
