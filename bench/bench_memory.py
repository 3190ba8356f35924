#!/usr/bin/env python3
"""Executor memory of the lake job on one huge transaction, at two transaction sizes.

A private MariaDB server (binlake_dev.mariadb) writes a binlog holding a single INSERT ... SELECT
of N rows in one transaction (about 135 bytes of binlog per row); `binlake load --master
local[2]` loads it into a fresh lake while this script samples the resident memory (RSS) of
every process of the load, every 0.1 s.  Printed per size: the binlog's MB, the load's
time, the peak RSS of the largest Python worker (the decode task's, or the mirror fold's) and
of the JVM.  With bounded executor memory the workers' peak does not grow with the
transaction: compare the two rows.  A measurement, not a test (exit 0).

    python bench/bench_memory.py [--rows 1000000 3000000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "lib"))

from bench_lake import descendants, kind_of  # noqa: E402  (the process tree, its kinds)
from binlake_dev.mariadb import MariaDBServer, free_port  # noqa: E402


def make_binlog(base: Path, rows: int, out: Path) -> int:
    with MariaDBServer(base, port=free_port(), options={"max-binlog-size": "1G"}) as srv:
        srv.execute([
            "CREATE DATABASE d",
            "CREATE TABLE d.t (id INT PRIMARY KEY, a VARCHAR(200), b BIGINT, c DATETIME(6))"
            " ENGINE=InnoDB",
            "INSERT INTO d.t SELECT seq, REPEAT(CONCAT('row', seq), 6), seq * 7,"
            f" '2026-01-01' + INTERVAL seq SECOND FROM d.seq_1_to_{rows}",
        ])
        srv.flush_binary_logs()
        out.mkdir(parents=True)
        for f in srv.closed_binlog_files():
            shutil.copy(f, out / f.name)
    return sum(p.stat().st_size for p in out.iterdir())


def rss_kb(pid: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def load_peak(binlake: str, source: Path, home: Path) -> dict[str, float]:
    env = dict(os.environ, BINLAKE_HOME=str(home))
    t0 = time.time()
    p = subprocess.Popen([binlake, "-q", "load", "--master", "local[2]", str(source)], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peaks: dict[str, tuple[int, str]] = {}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            for pid in descendants(p.pid):
                try:
                    kb = rss_kb(pid)
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    continue
                if kb > peaks.get(pid, (0, ""))[0]:
                    peaks[pid] = (kb, cmd)
            time.sleep(0.1)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    _, err = p.communicate()
    stop.set()
    th.join()
    if p.returncode != 0:
        sys.exit(f"bench: binlake load failed ({p.returncode}): {err[-2000:]!r}")
    workers = [kb for kb, cmd in peaks.values() if kind_of(cmd) == "worker"]
    jvm = [kb for kb, cmd in peaks.values() if "java" in cmd.split(" ", 1)[0]]
    return {"load_s": round(time.time() - t0, 1),
            "worker_peak_mb": round(max(workers, default=0) / 1024),
            "jvm_peak_mb": round(max(jvm, default=0) / 1024)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", nargs="+", type=int, default=[1_000_000, 3_000_000])
    ap.add_argument("--json")
    args = ap.parse_args()
    binlake = str(Path(sys.executable).parent / "binlake")
    work = Path(tempfile.mkdtemp(prefix="binlake-bench-mem-"))
    results = []
    try:
        for n in args.rows:
            src = work / f"in-{n}"
            size = make_binlog(work / f"db-{n}", n, src)
            r = {"rows": n, "binlog_mb": round(size / 1e6, 1),
                 **load_peak(binlake, src, work / f"home-{n}")}
            results.append(r)
            print(f"one transaction of {n:>9} rows  binlog {r['binlog_mb']:7.1f} MB  "
                  f"load {r['load_s']:5.1f} s  largest Python worker {r['worker_peak_mb']:5d} MB"
                  f"  JVM {r['jvm_peak_mb']:5d} MB", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
