"""binlake.txn.spill: a transaction's changes on local disk behave as the list they replace.

The builder's two in-place operations -- undo the transactional changes from an index
(ROLLBACK TO SAVEPOINT, ROLLBACK, XA ROLLBACK) and set the order keys -- are replayed on a
plain list (what GroupBuilder does without spilling) and on a SpilledChanges that spills at
random points; the changes read back must be the list's.  Real binlogs with savepoints and
XA rollbacks: test_transactions_mariadb.test_spilled_changes.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from binlake.txn.model import RowChange
from binlake.txn.spill import SpilledChanges, spill_directory


def change(i: int, transactional: bool) -> RowChange:
    return RowChange("d", "t", "insert", None, {"id": i, "v": "x" * (i % 7)}, "f", 100 + i, 0,
                     transactional=transactional)


def fields(c: RowChange) -> tuple:
    return (c.after["id"] if c.after else None, c.applied, c.order, c.transactional)


@pytest.mark.parametrize("seed", range(40))
def test_same_as_a_list(seed: int) -> None:
    rnd = random.Random(seed)
    plain: list[RowChange] = []
    spilled = SpilledChanges([])
    tail = spilled.tail
    n = 0
    for _ in range(rnd.randint(1, 30)):
        op = rnd.random()
        if op < 0.5:
            for _ in range(rnd.randint(0, 6)):
                t = rnd.random() < 0.8
                plain.append(change(n, t))
                tail.append(change(n, t))
                n += 1
        elif op < 0.75:
            tail = spilled.spill_tail()
        else:  # ROLLBACK TO a savepoint set at some earlier length
            start = rnd.randint(0, n)
            for c in plain[start:]:
                if c.transactional:
                    c.applied = False
            spilled.undo_from(start)
    assert len(spilled) == len(plain) == n
    if rnd.random() < 0.3:  # ROLLBACK of the whole transaction
        for c in plain:
            if c.transactional:
                c.applied = False
        spilled.undo_from(0)
    for i, c in enumerate(plain):
        c.order = (3, 999, i)
    spilled.set_order(3, 999)
    want = [fields(c) for c in plain]
    assert [fields(c) for c in spilled] == want
    assert [fields(c) for chunk in spilled.chunks() for c in chunk] == want  # read twice
    spilled.close()


def test_chunks_are_the_spills() -> None:
    s = SpilledChanges([change(0, True), change(1, True)])
    s.spill_tail().append(change(2, True))
    s.spill_tail()
    s.tail.append(change(3, True))
    assert [[c.after["id"] for c in chunk] for chunk in s.chunks()] == [[0, 1], [2], [3]]
    assert s.spilled == 3 and len(s) == 4


def test_in_spark_local_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    local = tmp_path / "spark-local"
    local.mkdir()
    monkeypatch.setenv("SPARK_LOCAL_DIRS", f"{tmp_path / 'missing'},{local}")
    assert spill_directory() == str(local)
    s = SpilledChanges([change(0, True)])
    s.spill_tail()
    assert s._file is not None
    target = os.readlink(f"/proc/self/fd/{s._file.fileno()}")
    assert target.startswith(str(local) + "/"), target
    s.close()
    monkeypatch.delenv("SPARK_LOCAL_DIRS")
    assert spill_directory() is None


def test_not_picklable() -> None:
    import pickle

    with pytest.raises(TypeError, match="temporary file"):
        pickle.dumps(SpilledChanges([]))


def test_disk_full_is_a_spill_error_not_a_bad_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """A full local disk fails the decode task with SpillError (an OSError naming the
    transaction and the directory), not with a BinlogError: the file is not bad, and a
    BinlogError would mark it failed instead of letting Spark run the task again."""
    import errno

    from binlake.binlog.errors import BinlogError
    from binlake.lake import extract as X
    from binlake.txn import spill

    from .corpus import CORPUS, require_corpus

    require_corpus()
    path = CORPUS / "mysql-8.0/std_data/replicated-bin.000001"

    def full(*_: object, **__: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(spill.pickle, "dump", full)
    task = X.RangeTask(str(path), path.name, 1, 4, path.stat().st_size, 0, True)
    with pytest.raises(spill.SpillError) as info:
        X.decode_range(task, lambda recs: [], flush_bytes=1)
    assert not isinstance(info.value, BinlogError)
    assert info.value.errno == errno.ENOSPC
    msg = str(info.value)
    assert "replicated-bin.000001:" in msg and "No space left" in msg, msg
