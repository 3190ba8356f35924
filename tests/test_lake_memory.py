"""A decode task's memory does not grow with the size of one transaction.

A real MariaDB server writes two binlogs, each one INSERT ... SELECT in one transaction: N
and 3N narrow rows.  A decode task (``extract.decode_range`` with a flush, as the Spark job
runs it) decodes each in a child process, and the child's peak RSS (``VmHWM``) is
compared between the sizes.  The same runs with every change held in memory (no flush: no
spill, the way it was before ``binlake.txn.spill``) show the test sees the difference: there
the peak grows with the transaction.  The records the task hands to each flush stay within
a bound too (they are what the writer turns into Arrow and Parquet at 10-12x their binlog
bytes).  Relative figures only: no machine-specific limit.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from binlake_dev.mariadb import MariaDBServer

pytestmark = [pytest.mark.integration]

N = 300_000

CHILD = r"""
import json, os, sys
from binlake.lake import extract as X
from binlake.lake.records import RANGE
path, mode = sys.argv[1], sys.argv[2]
task = X.RangeTask(path, os.path.basename(path), 1, 4, os.path.getsize(path), 0, True)
batches, ranges = [], []
def flush(recs):
    batches.append(len(recs))
    ranges.extend(r for k, r in recs if k == RANGE)
    recs.clear()
    return []
if mode == "spill":
    X.decode_range(task, flush)
else:
    flush(X.decode_range(task))
rows = ranges[0]["rows"]
# VmHWM: this process image's peak RSS (ru_maxrss would carry the parent's over the fork)
hwm = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0])
print(json.dumps({"peak_kb": hwm,
                  "batches": batches, "rows": rows}))
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory,
           mariadb_template: Path) -> Iterator[MariaDBServer]:
    from .servers import start_server

    srv: MariaDBServer = start_server(tmp_path_factory.mktemp("mem-srv"), mariadb_template)
    try:
        srv.execute([
            "CREATE DATABASE m",
            "CREATE TABLE m.t (id INT PRIMARY KEY, a VARCHAR(80), b BIGINT) ENGINE=InnoDB",
            "CREATE PROCEDURE m.p(n INT) BEGIN DECLARE i INT DEFAULT 0; START TRANSACTION; "
            "WHILE i < n DO INSERT INTO m.t VALUES (i, CONCAT('row ', i), i * 3); "
            "SET i = i + 1; END WHILE; COMMIT; END"])
        yield srv
    finally:
        srv.stop(timeout=30)


def one_transaction_binlogs(srv: MariaDBServer, sql: Callable[[int], str], n: int
                            ) -> list[Path]:
    """A binlog of one transaction ``sql(k)`` of k rows each, for k = n and 3n."""
    out = []
    for k in (n, 3 * n):
        srv.flush_binary_logs()
        srv.execute(["TRUNCATE TABLE m.t", sql(k)])
        srv.flush_binary_logs()
        out.append(max(srv.closed_binlog_files(), key=lambda p: p.stat().st_size))
    return out


@pytest.fixture(scope="module")
def binlogs(server: MariaDBServer) -> list[Path]:
    """One INSERT ... SELECT of N rows, and one of 3N."""
    return one_transaction_binlogs(
        server, lambda k: f"INSERT INTO m.t SELECT seq, CONCAT('row ', seq), seq * 3"
                          f" FROM m.seq_1_to_{k}", N)


@pytest.fixture(scope="module")
def statement_binlogs(server: MariaDBServer) -> list[Path]:
    """One transaction of N/3 and one of N single-row INSERT statements (a stored
    procedure's loop: every row has its own Annotate_rows statement)."""
    return one_transaction_binlogs(server, lambda k: f"CALL m.p({k})", N // 3)


def run(path: Path, mode: str) -> dict:
    p = subprocess.run([sys.executable, "-c", CHILD, str(path), mode], capture_output=True,
                       text=True, timeout=600, check=False)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_decode_task_memory_bounded_by_transaction(binlogs: list[Path]) -> None:
    from binlake.lake.sink import FLUSH_ROWS

    small, big = binlogs
    assert big.stat().st_size > 2.5 * small.stat().st_size > 2.5 * 5e6
    spill = [run(p, "spill") for p in binlogs]
    held = [run(p, "held") for p in binlogs]
    assert [r["rows"] for r in spill] == [r["rows"] for r in held] == [N, 3 * N]
    grow_spill = (spill[1]["peak_kb"] - spill[0]["peak_kb"]) / 1024
    grow_held = (held[1]["peak_kb"] - held[0]["peak_kb"]) / 1024
    # holding the whole transaction: hundreds of MB more for 2N more rows
    assert grow_held > 300, (held, spill)
    # spilled and flushed: the peak stays where it was
    assert grow_spill < grow_held / 5, (spill, held)
    for r in spill:
        assert max(r["batches"]) <= 2 * FLUSH_ROWS, r["batches"]


def test_decode_task_memory_bounded_by_statements(statement_binlogs: list[Path]) -> None:
    """Per statement a decode task keeps a key (not to write a statement twice) and its
    UTF-8 bytes (for the writer): bounded too, for a transaction of 100k or 300k
    statements (before the bounds: +115 MB for the 200k more)."""
    spill = [run(p, "spill") for p in statement_binlogs]
    assert [r["rows"] for r in spill] == [N // 3, N]
    grow = (spill[1]["peak_kb"] - spill[0]["peak_kb"]) / 1024
    assert grow < 30, spill


def test_spilled_temp_files_gone(binlogs: list[Path], tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The spill files live in Spark's local directory while the task runs and are gone
    (anonymous, never named) after it."""
    local = tmp_path / "local"
    local.mkdir()
    monkeypatch.setenv("SPARK_LOCAL_DIRS", str(local))
    from binlake.lake import extract as X

    seen: list[int] = []
    path = binlogs[0]
    task = X.RangeTask(str(path), path.name, 1, 4, path.stat().st_size, 0, True)

    def flush(recs: list) -> list:
        import os

        fds = [os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")
               if _is_link(f"/proc/self/fd/{fd}")]
        seen.append(sum(1 for t in fds if t.startswith(str(local) + "/")))
        recs.clear()
        return []

    X.decode_range(task, flush)
    assert max(seen) >= 1  # a spill file was open in the local dir while the task ran
    assert list(local.iterdir()) == []


def _is_link(p: str) -> bool:
    import os

    try:
        os.readlink(p)
        return True
    except OSError:
        return False
