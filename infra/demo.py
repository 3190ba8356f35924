"""The main job on embedded defaults, for now: make real binlogs and decode them.

Starts a private MariaDB server (Debian's package, 127.0.0.1, its own datadir under
.binlake/demo), runs a small workload -- InnoDB and Aria tables, every common column type,
an XA transaction prepared in one binlog file and committed in the next -- rotates the logs,
then decodes every closed binlog with binlake and prints what it found.  The Airflow pipeline
(archive -> Spark -> Iceberg -> Great Expectations) will take this command's place.
"""

from __future__ import annotations

import collections
import shutil
import sys
from pathlib import Path

from binlake.devserver import MariaDBServer, free_port
from binlake.reader import BinlogReader
from binlake.rowchanges import iter_row_changes

ROOT = Path(__file__).resolve().parents[1]
STATE = ROOT / ".binlake" / "demo"

WORKLOAD = [
    "CREATE DATABASE shop",
    "CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, customer VARCHAR(40) NOT NULL,"
    " amount DECIMAL(12,2) NOT NULL, placed_at DATETIME(6) NOT NULL, note TEXT,"
    " status ENUM('new','paid','shipped') NOT NULL DEFAULT 'new') ENGINE=InnoDB",
    "CREATE TABLE shop.audit (id INT AUTO_INCREMENT PRIMARY KEY, msg VARCHAR(100)) ENGINE=Aria",
    "INSERT INTO shop.orders VALUES (1, 'Zoë', 19.99, '2026-11-20 09:00:00.123456', 'gift 🎁', 'new'),"
    " (2, 'Bob', 250.00, '2026-11-20 10:30:00', NULL, 'paid')",
    "BEGIN",
    "UPDATE shop.orders SET status='shipped' WHERE id=2",
    "INSERT INTO shop.audit (msg) VALUES ('order 2 shipped')",
    "COMMIT",
]


def main() -> int:
    if STATE.exists():
        shutil.rmtree(STATE)
    STATE.mkdir(parents=True)
    srv = MariaDBServer(STATE / "server", port=free_port())
    srv.init()
    srv.start()
    try:
        srv.execute(WORKLOAD)
        xa = srv.connect()
        with xa.cursor() as cur:
            cur.execute("XA START 'demo-xa-1'")
            cur.execute("INSERT INTO shop.orders VALUES (3, 'Chen', 7.50, NOW(6), 'xa', 'new')")
            cur.execute("XA END 'demo-xa-1'")
            cur.execute("XA PREPARE 'demo-xa-1'")
        srv.flush_binary_logs()  # the PREPARE and the COMMIT land in different files
        with xa.cursor() as cur:
            cur.execute("XA COMMIT 'demo-xa-1'")
        xa.close()
        srv.execute(["DELETE FROM shop.orders WHERE id=1"])
        srv.flush_binary_logs()
        files = srv.closed_binlog_files()
    finally:
        srv.stop()

    print(f"binlake demo: {len(files)} closed binlog files from MariaDB in {STATE / 'server'}")
    failed = False
    for f in files:
        types: collections.Counter[str] = collections.Counter()
        errors = []

        def events(f: Path = f, types: collections.Counter[str] = types, errors: list = errors):
            for ev in BinlogReader(f):
                types[ev.type] += 1
                if ev.error:
                    errors.append(ev.error)
                yield ev

        rows = list(iter_row_changes(events()))
        print(f"\n{f.name}: {sum(types.values())} events "
              f"({', '.join(f'{k} {v}' for k, v in sorted(types.items()))})")
        for r in rows:
            print(f"  {r['op']:6} {r['db']}.{r['table']} at {r['pos']}: "
                  f"before={r['before']} after={r['after']} gtid={r['gtid']}")
        for e in errors:
            failed = True
            print(f"  ERROR {e}")
    print("\nTry it yourself:  .venv/bin/binlake decode --rows "
          f"{files[0] if files else 'FILE'} | head")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
