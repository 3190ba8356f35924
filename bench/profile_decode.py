#!/usr/bin/env python3
"""Profile ``binlake decode --rows`` with cProfile over the first N MB of a binlog.

Runs the real command line in-process (binlake.cli.main, output to /dev/null) with
``--stop-position`` = N MB, then prints the top functions by tottime (time spent in the
function itself) to show where decoding time goes. cProfile slows Python code down by
roughly 1.5-3x, so the MB/s printed here is not the benchmark's (see bench_decode.py).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

MB = 1_000_000
DEFAULT_CORPUS = os.environ.get("PERF_CORPUS",
                                os.path.join(tempfile.gettempdir(), "perf-corpus"))


GTID_EVENT_TYPES = {162, 33, 34}  # MariaDB GTID, MySQL GTID and anonymous GTID


def transaction_start(path: Path, at: int) -> int:
    """The offset of the first GTID event (a transaction start) at or after byte ``at``.

    Walks the 19-byte event headers (type code at offset 4, event size at offset 9); decoding
    rows needs the Table_map events of the transaction, so a start must not be mid-transaction.
    """
    pos = 4
    with path.open("rb") as f:
        while True:
            f.seek(pos)
            header = f.read(19)
            if len(header) < 19:
                return pos
            if pos >= at and header[4] in GTID_EVENT_TYPES:
                return pos
            pos += int.from_bytes(header[9:13], "little")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("file", nargs="?",
                    default=os.path.join(DEFAULT_CORPUS, "mariadb-bin.000001"),
                    help="binlog file ($PERF_CORPUS/mariadb-bin.000001 by default)")
    ap.add_argument("--mb", type=float, default=20.0,
                    help="profile the first N MB (10^6 bytes): --stop-position N*10^6")
    ap.add_argument("--skip-mb", type=float, default=0.0,
                    help="start at the first transaction (GTID event) at or after this many "
                    "MB (then --mb counts from there): the OLTP part rather than the bulk load")
    ap.add_argument("--events", action="store_true",
                    help="profile event mode (binlake decode) instead of --rows")
    ap.add_argument("--no-verify", action="store_true", help="pass --no-verify")
    ap.add_argument("--top", type=int, default=25, help="functions to print")
    ap.add_argument("--sort", default="tottime",
                    help="pstats sort key (tottime, cumtime, ncalls, ...)")
    ap.add_argument("--output", metavar="FILE.prof",
                    help="also dump the raw stats here (for snakeviz, pstats, ...)")
    args = ap.parse_args(argv)

    # Import what decode imports lazily now, so module loading stays out of the profile.
    import binlake.binlog.reader
    import binlake.binlog.render
    import binlake.binlog.rowchanges  # noqa: F401
    from binlake.cli import main as binlake_main

    path = Path(args.file)
    if not path.is_file():
        print(f"profile_decode: error: {path} is missing (run bench/bench_decode.py, which "
              "generates the perf corpus, or give a file)", file=sys.stderr)
        return 2
    start = transaction_start(path, int(args.skip_mb * MB)) if args.skip_mb else 4
    stop = min(start + int(args.mb * MB), path.stat().st_size)
    cli = ["decode", *([] if args.events else ["--rows"]),
           *(["--no-verify"] if args.no_verify else []),
           *(["--start-position", str(start)] if start > 4 else []),
           "--stop-position", str(stop), str(path)]

    prof = cProfile.Profile()
    with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull):
        t0 = time.perf_counter()
        prof.enable()
        rc = binlake_main(cli)
        prof.disable()
        wall = time.perf_counter() - t0
    if rc != 0:
        print(f"profile_decode: binlake {' '.join(cli)} exited {rc}", file=sys.stderr)
        return 2

    span = stop - start
    print(f"binlake {' '.join(cli)}")
    print(f"{span / MB:.1f} MB in {wall:.2f} s under cProfile = {span / MB / wall:.1f} MB/s "
          "(profiler overhead included)")
    stats = pstats.Stats(prof, stream=sys.stdout)
    if args.output:
        stats.dump_stats(args.output)
        print(f"raw stats written to {args.output}")
    stats.strip_dirs().sort_stats(args.sort).print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
