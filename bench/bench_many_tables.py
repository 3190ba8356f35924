#!/usr/bin/env python3
"""Two nights of a many-table corpus, on the embedded SQLite catalog or on PostgreSQL.

A corpus of ``bench/make_many_tables.py`` with three or more files (``--txns 40000
--file-mb 24`` gives three): night 1 loads all files but the last, night 2 the last one,
each a ``binlake load --master local[2] --json`` in a fresh ``BINLAKE_HOME``.  It prints
each night's seconds, phase timings and where the mirrors were folded.  ``--postgres``
starts a private PostgreSQL server (fsync on, as production runs it; ``tests/cluster.py``'s
``PostgresServer``) and uses it as the Iceberg JDBC catalog.  ``--local-fs`` sets
``spark_local_fs`` (``nio`` or ``hadoop``; several: one lake each, in turn):

    .venv/bin/python bench/make_many_tables.py --tables 200 --txns 40000 --file-mb 24 \\
        --out /tmp/many-tables-3
    .venv/bin/python bench/bench_many_tables.py --corpus /tmp/many-tables-3 --postgres \\
        --local-fs nio hadoop
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BINLAKE = Path(sys.executable).with_name("binlake")


def night(env: dict[str, str], files: list[str]) -> dict[str, Any]:
    p = subprocess.run([str(BINLAKE), "load", "--master", "local[2]", "--json", *files],
                       env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True,
                       check=False)
    if p.returncode != 0:
        raise SystemExit(f"load failed ({p.returncode}): {p.stderr[-2000:]}")
    return dict(json.loads(p.stdout))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--postgres", action="store_true")
    ap.add_argument("--local-fs", nargs="+", default=["nio"], choices=["nio", "hadoop"])
    args = ap.parse_args()
    files = sorted(str(p) for p in Path(args.corpus).glob("*-bin.[0-9]*"))
    if len(files) < 2:
        raise SystemExit(f"{args.corpus}: two binlog files at least")
    with contextlib.ExitStack() as stack:
        pg = None
        if args.postgres:
            sys.path.insert(0, str(ROOT))
            from tests.cluster import PostgresServer

            pg = PostgresServer()
            pg._run(f"{pg.bindir}/initdb", "-D", str(pg.datadir), "-A", "trust", "-U",
                    "postgres", "-E", "UTF8", "--locale=C.UTF-8")
            pg._run(f"{pg.bindir}/pg_ctl", "-D", str(pg.datadir), "-l",
                    str(pg.base / "server.log"), "-w", "-t", "60", "-o",
                    f"-h 127.0.0.1 -p {pg.port} -k {pg.base}", "start")
            pg.started = True
            stack.callback(pg.stop)
        for fs in args.local_fs:
            home = stack.enter_context(tempfile.TemporaryDirectory(prefix="binlake-mt-"))
            env = dict(os.environ, BINLAKE_HOME=home, BINLAKE_SPARK_LOCAL_FS=fs)
            if pg is not None:
                db = f"lake_{fs}"
                pg.psql(f"CREATE DATABASE {db}")
                env.update(BINLAKE_CATALOG_URI=f"postgresql+psycopg2://postgres@127.0.0.1:"
                                               f"{pg.port}/{db}",
                           BINLAKE_CATALOG_USER="postgres")
            for n, batch in ((1, files[:-1]), (2, files[-1:])):
                r = night(env, batch)
                folds = collections.Counter(t.get("mirror_fold")
                                            for t in r["typed"]["tables"].values())
                print(f"{'postgresql' if pg else 'sqlite'} {fs} night {n}: "
                      f"{r['seconds']:.1f} s {r['timings']} folds {dict(folds)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
