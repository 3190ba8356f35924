#!/usr/bin/env python3
"""End-to-end benchmark of the lake job (binlogs -> Spark -> Iceberg) on the perf corpus.

Measures, on the same files in the same run:
  * `mariadb-binlog -v --base64-output=decode-rows` (the C++ reference) and
    `binlake decode --rows` on one core (pinned with taskset) -- the single-core decode rate;
  * the load job (`binlake load`, a local Spark session) with 1 and with 2 executor cores,
    each into a fresh lake directory;
and prints MB/s, the job's rate relative to the single-core decode rate (required >= 0.5 on
2 cores) and the 1 -> 2 core speed-up (required >= 1.6).  A measurement, not a test: exit 0
unless --check is given and a requirement fails.

It also loads (2 cores, fresh lake) the first transactions of the last file, about 2 MB cut
at a transaction's end: the load's fixed part, which does not shrink with cores or bytes.
With F that part and D the decode tasks' core-seconds, 0.5x needs F + D/2 <= 2 d (d: the
single-core decode time) and 1.6x needs D >= 3 F, so both need F <= 0.8 d.

    python bench/bench_lake.py [--corpus DIR] [--files mariadb-bin.000001 ...] [--check]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def timed(cmd: list[str], env: dict[str, str] | None = None, out: str | None = None) -> float:
    t0 = time.time()
    with open(out or os.devnull, "wb") as sink:
        p = subprocess.run(cmd, stdout=sink, stderr=subprocess.PIPE, env=env, check=False)
    dt = time.time() - t0
    if p.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed ({p.returncode}): {p.stderr[-2000:]!r}")
    return dt


def prefix_binlog(src: Path, dst: Path, size: int = 2_000_000) -> int:
    """The bytes of ``src`` up to the end of the last transaction (Xid event) that ends
    within ``size`` bytes, written to ``dst`` (a binlog whose server is still writing it, as
    far as a reader can tell); returns its size."""
    sys.path.insert(0, str(ROOT / "lib"))
    from binlake.binlog.constants import EventType as E
    from binlake.binlog.reader import BinlogReader

    end = 0
    for ev in BinlogReader(str(src), stop=size):
        if ev.type_code == E.XID and ev.end_pos <= size:
            end = ev.end_pos
    with open(src, "rb") as f:
        dst.write_bytes(f.read(end))
    return end


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=os.environ.get(
        "PERF_CORPUS", os.path.join(tempfile.gettempdir(), "perf-corpus")))
    ap.add_argument("--files", nargs="*", default=None,
                    help="file names in the corpus (default: all mariadb-bin.* files)")
    ap.add_argument("--json", help="also write the result as JSON here")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    corpus = Path(args.corpus)
    files = [corpus / f for f in args.files] if args.files else sorted(
        p for p in corpus.glob("mariadb-bin.[0-9]*"))
    if not files:
        sys.exit(f"bench: no perf corpus in {corpus}: run "
                 f"python {ROOT.parent / 'shared/perf/make_perf_corpus.py'}")
    size = sum(f.stat().st_size for f in files)
    venv = Path(sys.executable).parent
    binlake = str(venv / "binlake")
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    load1 = os.getloadavg()

    ref = sum(timed([*pin, "mariadb-binlog", "--no-defaults", "-v",
                     "--base64-output=decode-rows", str(f)]) for f in files)
    dec = sum(timed([*pin, binlake, "-q", "decode", "--rows", str(f)]) for f in files)
    results = {}
    for cores in (1, 2):
        home = Path(tempfile.mkdtemp(prefix=f"binlake-bench-lake-{cores}-"))
        env = dict(os.environ, BINLAKE_HOME=str(home))
        lake_dir = home / "input"
        lake_dir.mkdir()
        for f in files:
            os.symlink(f, lake_dir / f.name)
        results[cores] = timed([binlake, "-q", "load", "--master", f"local[{cores}]",
                                str(lake_dir)], env=env)
        shutil.rmtree(home, ignore_errors=True)
    home = Path(tempfile.mkdtemp(prefix="binlake-bench-lake-fixed-"))
    (home / "input").mkdir()
    small = prefix_binlog(files[-1], home / "input" / files[-1].name)
    fixed = timed([binlake, "-q", "load", "--master", "local[2]", str(home / "input")],
                  env=dict(os.environ, BINLAKE_HOME=str(home)))
    shutil.rmtree(home, ignore_errors=True)
    mb = size / 1e6
    out = {
        "files": [f.name for f in files], "mb": round(mb, 1),
        "load_average_start": load1, "load_average_end": os.getloadavg(),
        "reference_s": round(ref, 2), "reference_mb_s": round(mb / ref, 1),
        "decode_rows_1core_s": round(dec, 2), "decode_rows_1core_mb_s": round(mb / dec, 1),
        "job_1core_s": round(results[1], 1), "job_1core_mb_s": round(mb / results[1], 1),
        "job_2core_s": round(results[2], 1), "job_2core_mb_s": round(mb / results[2], 1),
    }
    out["job_2core_vs_decode_1core"] = round((mb / results[2]) / (mb / dec), 3)
    out["speedup_1_to_2"] = round(results[1] / results[2], 2)
    out["fixed_load_mb"] = round(small / 1e6, 1)
    out["fixed_load_2core_s"] = round(fixed, 1)
    out["fixed_allowed_s"] = round(0.8 * dec, 1)
    ok_rate = out["job_2core_vs_decode_1core"] >= 0.5
    ok_speedup = out["speedup_1_to_2"] >= 1.6
    print(f"files      {', '.join(out['files'])} ({out['mb']} MB); load average "
          f"{load1[0]:.2f} at start")
    print(f"reference  mariadb-binlog -v         {ref:7.1f} s  {out['reference_mb_s']:6.1f} MB/s")
    print(f"decode     binlake decode --rows     {dec:7.1f} s  "
          f"{out['decode_rows_1core_mb_s']:6.1f} MB/s (1 core)")
    for cores in (1, 2):
        print(f"job        binlake load local[{cores}]     {results[cores]:7.1f} s  "
              f"{mb / results[cores]:6.1f} MB/s")
    print(f"job on 2 cores / decode on 1 core = {out['job_2core_vs_decode_1core']}x "
          f"(required >= 0.5): {'PASS' if ok_rate else 'FAIL'}")
    print(f"speed-up 1 -> 2 cores = {out['speedup_1_to_2']}x (required >= 1.6): "
          f"{'PASS' if ok_speedup else 'FAIL'}")
    print(f"fixed part: load of the first {out['fixed_load_mb']} MB (2 cores, fresh lake) "
          f"{fixed:5.1f} s; both requirements together allow at most 0.8 x decode = "
          f"{out['fixed_allowed_s']} s")
    print(json.dumps(out))
    if args.json:
        Path(args.json).write_text(json.dumps(out) + "\n")
    if args.check and not (ok_rate and ok_speedup):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
