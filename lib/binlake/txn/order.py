"""Order keys: where a decided transaction's row changes take effect.

Every row change gets an order key ``(file sequence, end position of the deciding group,
index in the transaction)``: sorting by it replays changes in commit order across files and
runs.
"""

from __future__ import annotations

from .model import Transaction
from .spill import SpilledChanges


def assign_order(txn: Transaction) -> None:
    """Order keys for a decided transaction: its changes take effect at its deciding group."""
    base = (txn.part.seq, txn.part.end_pos)
    if isinstance(txn.changes, SpilledChanges):
        txn.changes.set_order(*base)
        return
    for i, c in enumerate(txn.changes):
        c.order = (base[0], base[1], i)
