#!/usr/bin/env python3
"""A night of many small binlogs, from a real MariaDB server that rotates often.

Starts a private MariaDB server (``binlake_dev.mariadb``: ``mariadbd`` from the system) with
``max_binlog_size`` of ``--file-kb`` KB, runs a small order-entry workload (an order row, one
to four item rows, every third transaction an UPDATE of an earlier order; each transaction
committed alone) until ``--files`` binlogs are closed, and copies them to ``--out``.  The
default, 200 files of 1 MB, is what ``bench/README.md`` measures the per-task costs on:

    .venv/bin/python bench/make_small_binlogs.py --out /tmp/small/files
    .venv/bin/python bench/bench_lake.py --corpus /tmp/small/files

(about two minutes; seeded, so the same transactions each time, but not byte-identical
files: timestamps and server UUIDs differ.)
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "lib"))

from binlake_dev.mariadb import MariaDBServer, free_port  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--file-kb", type=int, default=1024)
    ap.add_argument("--out", default="/tmp/small/files")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="small-binlogs-"))
    srv = MariaDBServer(base, port=free_port(),
                        options={"max-binlog-size": str(args.file_kb * 1024)})
    srv.init()
    srv.start()
    t0 = time.time()
    try:
        srv.execute(["CREATE DATABASE shop",
                     "CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, customer INT, "
                     "status VARCHAR(16), amount DECIMAL(12,2), note VARCHAR(200), "
                     "ts DATETIME(6))",
                     "CREATE TABLE shop.items (id BIGINT AUTO_INCREMENT PRIMARY KEY, "
                     "order_id BIGINT, sku VARCHAR(32), qty INT)"])
        first = srv.current_binlog_file()
        conn = srv.connect(autocommit=False)
        cur = conn.cursor()
        rnd = random.Random(7)
        oid = 0
        while len(srv.binlog_files()) < args.files + 1:
            for _ in range(200):
                oid += 1
                cur.execute("INSERT INTO shop.orders VALUES (%s, %s, 'new', %s, %s, NOW(6))",
                            (oid, rnd.randint(1, 9999), rnd.randint(100, 99999) / 100,
                             "x" * rnd.randint(10, 120)))
                cur.executemany("INSERT INTO shop.items (order_id, sku, qty) "
                                "VALUES (%s, %s, %s)",
                                [(oid, f"SKU{rnd.randint(1, 5000)}", rnd.randint(1, 5))
                                 for _ in range(rnd.randint(1, 4))])
                if oid > 50 and oid % 3 == 0:
                    cur.execute("UPDATE shop.orders SET status = 'paid' WHERE id = %s",
                                (rnd.randint(1, oid),))
                conn.commit()
        conn.close()
        out = Path(args.out)
        closed = srv.copy_closed_binlogs(out, since=first)
    finally:
        srv.stop()
        shutil.rmtree(base, ignore_errors=True)
    total = sum(p.stat().st_size for p in out.iterdir())
    print(f"{len(closed)} binlogs, {total / 1e6:.1f} MB in {out} ({time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
