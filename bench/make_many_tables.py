#!/usr/bin/env python3
"""A night that changes many tables, from a real MariaDB server.

The perf corpus changes six tables; production schemas have hundreds, and a night's changes
spread over many of them.  Every table the night changes costs the load a typed changelog
and a mirror (their data files, commits, and a fold and MERGE per mirror), whatever its
number of rows.  This starts a private MariaDB server (``binlake_dev.mariadb``), creates
``--tables`` tables of a few column types (integer, text, decimal, datetime, a nullable
JSON-ish text) and runs ``--txns`` transactions of one to four statements on random
tables (a few tables hot, most of them cold: a Zipf-like choice), INSERTs, UPDATEs and
DELETEs, and copies the closed binlogs to ``--out``:

    .venv/bin/python bench/make_many_tables.py --tables 200 --out /tmp/many-tables
    .venv/bin/python bench/bench_lake.py --corpus /tmp/many-tables --skip-1core

``--row-image MINIMAL`` logs partial row images.  Seeded (the same statements each run),
but not byte-identical files: timestamps and server UUIDs differ.
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
    ap.add_argument("--tables", type=int, default=200)
    ap.add_argument("--txns", type=int, default=20_000)
    ap.add_argument("--file-mb", type=int, default=64)
    ap.add_argument("--row-image", default="FULL", choices=["FULL", "MINIMAL", "NOBLOB"])
    ap.add_argument("--out", default="/tmp/many-tables")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="many-tables-"))
    srv = MariaDBServer(base, port=free_port(),
                        options={"max-binlog-size": str(args.file_mb << 20),
                                 "binlog-row-image": args.row_image})
    srv.init()
    srv.start()
    t0 = time.time()
    rnd = random.Random(11)
    names = [f"app.t{i:04d}" for i in range(args.tables)]
    # a table's weight: 1 / rank (a few hot tables, a long tail of cold ones)
    weights = [1 / (i + 1) for i in range(args.tables)]
    try:
        srv.execute(["CREATE DATABASE app", *(
            f"CREATE TABLE {t} (id BIGINT PRIMARY KEY, account INT NOT NULL, "
            "status VARCHAR(16), amount DECIMAL(12,2), note VARCHAR(200), "
            "attrs TEXT, updated DATETIME(6))" for t in names)])
        first = srv.current_binlog_file()
        conn = srv.connect(autocommit=False)
        cur = conn.cursor()
        live: dict[str, list[int]] = {t: [] for t in names}
        next_id = dict.fromkeys(names, 0)
        for _ in range(args.txns):
            for t in rnd.choices(names, weights, k=rnd.randint(1, 4)):
                ids = live[t]
                r = rnd.random()
                if not ids or r < 0.45:
                    rows = []
                    for _ in range(rnd.randint(1, 3)):
                        next_id[t] += 1
                        ids.append(next_id[t])
                        rows.append((next_id[t], rnd.randint(1, 99_999), "new",
                                     rnd.randint(100, 999_999) / 100,
                                     "n" * rnd.randint(0, 120),
                                     None if rnd.random() < 0.5 else
                                     f'{{"k": {rnd.randint(1, 999)}, "tags": ["a", "b"]}}'))
                    cur.executemany(f"INSERT INTO {t} VALUES (%s, %s, %s, %s, %s, %s, NOW(6))",
                                    rows)
                elif r < 0.9:
                    cur.execute(f"UPDATE {t} SET status = %s, amount = amount + 1, "
                                "updated = NOW(6) WHERE id = %s",
                                (rnd.choice(["paid", "shipped", "open"]), rnd.choice(ids)))
                else:
                    gone = ids.pop(rnd.randrange(len(ids)))
                    cur.execute(f"DELETE FROM {t} WHERE id = %s", (gone,))
            conn.commit()
        conn.close()
        srv.execute(["FLUSH BINARY LOGS"])
        out = Path(args.out)
        closed = srv.copy_closed_binlogs(out, since=first)
    finally:
        srv.stop()
        shutil.rmtree(base, ignore_errors=True)
    total = sum(p.stat().st_size for p in out.iterdir())
    print(f"{len(closed)} binlogs, {total / 1e6:.1f} MB, {args.tables} tables, {args.txns} "
          f"transactions in {out} ({time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
