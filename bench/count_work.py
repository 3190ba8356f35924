#!/usr/bin/env python3
"""Work of a load decode task against ``binlake decode --rows``, in instructions: a measure
that the machine's speed does not move.

On this machine (a VM) the same run's CPU time moves by half within minutes (``decode --rows``
of one 60 MB file: 1.45 s at 09:01, 2.8 s at 10:09 on 2026-11-29), so a few per cent of a
decode task's cost cannot be seen in seconds.  Valgrind's callgrind counts the instructions a
process executes: the same count for the same program and input whatever else the machine
does.  This script runs, each under callgrind:

* ``binlake decode --rows --stop-position S`` of the file, ``S`` the end of an Xid event (the
  task's range), for a small and a large ``S``;
* one decode task over the same two ranges (``profile_range.run``: ``decode_range`` with the
  sink's Parquet writes, typed changelogs and staged mirror deltas; its set-up, the whole
  file's survey for the typed tables' layouts, is the same for both sizes).

The difference between the two sizes takes away what does not grow with the range (process
start, imports, the set-up); each side's instructions per MB of binlog, and their ratio, are
printed.  The large range holds one more flush (every ``flush_bytes``, 32 MiB) than the small
one, as a load's ranges hold one per 32 MiB.  callgrind runs a program about 50 times slower:
the default sizes (8 and 40 MiB) take about 10 minutes in all.

    python bench/count_work.py [--binlog /tmp/perf-corpus-xl/mariadb-bin.000003]
        [--small-mb 8] [--large-mb 40]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def callgrind(cmd: list[str], workdir: Path, label: str) -> int:
    """Instructions ``cmd`` executed under callgrind (its ``Collected`` total)."""
    out = workdir / f"{label}.callgrind"
    done = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                           *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, check=False)
    m = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or m is None:
        sys.exit(f"count_work: {label} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    out.unlink(missing_ok=True)
    return int(m.group(1))


def task_main(binlog: str, end: int) -> None:
    """One decode task over [4, end) of ``binlog`` (run under callgrind by main)."""
    sys.path.insert(0, str(HERE))
    import profile_range as P

    out = tempfile.mkdtemp(prefix="count-work-")
    try:
        _secs, records = P.run(binlog, end, out, True)
        print(f"{len(records)} records")
    finally:
        shutil.rmtree(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binlog", default="/tmp/perf-corpus-xl/mariadb-bin.000003")
    ap.add_argument("--small-mb", type=int, default=8)
    ap.add_argument("--large-mb", type=int, default=40)
    ap.add_argument("--task", nargs=2, metavar=("BINLOG", "END"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.task:
        task_main(args.task[0], int(args.task[1]))
        return
    if shutil.which("valgrind") is None:
        sys.exit("count_work: needs valgrind (apt-get install valgrind)")
    sys.path.insert(0, str(HERE))
    import profile_range as P

    py = sys.executable
    work = Path(tempfile.mkdtemp(prefix="count-work-"))
    counts: dict[str, dict[int, int]] = {"decode --rows": {}, "decode task": {}}
    ends: dict[int, int] = {}
    try:
        for mb in (args.small_mb, args.large_mb):
            end = ends[mb] = P.find_end(args.binlog, mb)
            counts["decode --rows"][mb] = callgrind(
                [py, "-m", "binlake.cli", "decode", "--rows", "--stop-position", str(end),
                 args.binlog], work, f"rows{mb}")
            counts["decode task"][mb] = callgrind(
                [py, str(Path(__file__).resolve()), "--task", args.binlog, str(end)], work,
                f"task{mb}")
            print(f"range 4..{end}: decode --rows {counts['decode --rows'][mb]:,}, "
                  f"decode task {counts['decode task'][mb]:,} instructions", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    mb = (ends[args.large_mb] - ends[args.small_mb]) / 1e6
    per = {k: (v[args.large_mb] - v[args.small_mb]) / mb for k, v in counts.items()}
    for k, v in per.items():
        print(f"{k:<14} {v / 1e6:8.1f} M instructions per MB of binlog")
    print(f"decode task / decode --rows: {per['decode task'] / per['decode --rows']:.2f}x "
          f"(over the {mb:.1f} MB between the two ranges' ends)")


if __name__ == "__main__":
    main()
