#!/usr/bin/env python3
"""Profile a ``binlake load``: the driver under cProfile, every executor decode task (and
survey task) under cProfile, and the JVM side from Spark's event log.

Runs ``binlake load --master MASTER`` in this process (binlake.cli.main, a fresh lake in a
temporary BINLAKE_HOME) of the given binlog files, with

* the driver's main thread under cProfile (``driver.prof``; the catalog thread of the survey
  phase and the typed tables' thread pool are not in it: their time shows as the main
  thread's waits);
* each executor task's function under cProfile, as the executor calls it:
  ``lake/extract.py``'s ``decode_tasks_arrow`` (one transaction-aligned range per task row:
  decode, transaction layer, Parquet and typed writes), ``lake/discover.py``'s ``_survey``
  and ``lake/xa.py``'s ``decide_xa_arrow`` (the XAs decided in the run); each task writes ``exec-*.prof`` /
  ``survey-*.prof`` / ``decide-*.prof``, merged here (the Arrow serialization of the batches
  a task yields is outside);
* Spark's event log (``eventlog/``): per stage its wall time, tasks, and the executors' run,
  CPU and GC time summed over its tasks.

Prints the load's phases, then the top functions of each profile by cumulative time and by
tottime (``--top N``), then the stages.  cProfile slows Python code down (1.5-3x for the
decoder): compare shares, not seconds, with the benchmark's (bench_lake.py).

    python bench/profile_load.py [--corpus DIR] [--files mariadb-bin.000001] [--master local[1]]
                                 [--top 15] [--out DIR] [--no-executors] [--no-driver]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import glob
import io
import json
import os
import pstats
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "lib"))

PROF_DIR = ""  # set in main(); read by the wrapped executor functions (pickled by value)


def _profiled_batches(gen: Iterator[Any], kind: str) -> Iterator[Any]:
    """The batches of an executor's generator, under cProfile only while it makes them (not
    while they are serialized to the JVM); the profile goes to ``{kind}-*.prof``."""
    import cProfile as cp
    import os as _os
    import time as _time

    prof = cp.Profile()
    while True:
        prof.enable()
        try:
            batch = next(gen)
        except StopIteration:
            prof.disable()
            break
        prof.disable()
        yield batch
    prof.dump_stats(_os.path.join(PROF_DIR, f"{kind}-{_os.getpid()}-{_time.time_ns()}.prof"))


def profiled_decode(batches: Any, sink: Any, history: Any = None) -> Iterator[Any]:
    """``extract.decode_tasks_arrow`` under cProfile; one profile file per task."""
    from binlake.lake import extract

    yield from _profiled_batches(extract.decode_tasks_arrow(batches, sink, history), "exec")


def profiled_survey(uri: str, split_bytes: int) -> dict[str, Any]:
    import cProfile as cp
    import os as _os
    import time as _time

    from binlake.lake import job

    prof = cp.Profile()
    try:
        out: dict[str, Any] = prof.runcall(ORIGINAL_SURVEY, uri, split_bytes)
    finally:
        prof.dump_stats(_os.path.join(PROF_DIR, f"survey-{_os.getpid()}-{_time.time_ns()}.prof"))
    del job
    return out


ORIGINAL_SURVEY: Any = None


def profiled_decide(batches: Any, sink: Any) -> Iterator[Any]:
    """``xa.decide_xa_arrow`` (the XAs decided in the run, written by the executors) under
    cProfile; one profile file per task."""
    yield from _profiled_batches(ORIGINAL_DECIDE(batches, sink), "decide")


ORIGINAL_DECIDE: Any = None


def top(stats: pstats.Stats, key: str, n: int) -> str:
    buf = io.StringIO()
    stats.stream = buf  # type: ignore[attr-defined]
    stats.sort_stats(key).print_stats(n)
    text = buf.getvalue()
    # from the column header on (the preamble names the profile files)
    i = text.find("   ncalls")
    return text[i:] if i >= 0 else text


def stages(eventlog_dir: Path) -> list[dict[str, Any]]:
    """Per stage of Spark's event log: name, wall seconds, tasks, and executor run / CPU / GC
    seconds summed over its tasks."""
    out: dict[int, dict[str, Any]] = {}
    for path in eventlog_dir.iterdir():
        with path.open() as f:
            for line in f:
                e = json.loads(line)
                ev = e.get("Event")
                if ev == "SparkListenerStageCompleted":
                    si = e["Stage Info"]
                    s = out.setdefault(si["Stage ID"], {"run_s": 0.0, "cpu_s": 0.0, "gc_s": 0.0,
                                                       "tasks": 0})
                    s["name"] = si["Stage Name"].split(" at ")[0]
                    s["wall_s"] = (si.get("Completion Time", 0)
                                   - si.get("Submission Time", 0)) / 1000
                    s["submitted"] = si.get("Submission Time", 0)
                elif ev == "SparkListenerTaskEnd":
                    m = e.get("Task Metrics") or {}
                    s = out.setdefault(e["Stage ID"], {"run_s": 0.0, "cpu_s": 0.0, "gc_s": 0.0,
                                                      "tasks": 0})
                    s["tasks"] += 1
                    s["run_s"] += m.get("Executor Run Time", 0) / 1000
                    s["cpu_s"] += m.get("Executor CPU Time", 0) / 1e9
                    s["gc_s"] += m.get("JVM GC Time", 0) / 1000
    return [dict(s, stage=k) for k, s in sorted(out.items())]


def main() -> int:
    global PROF_DIR, ORIGINAL_SURVEY, ORIGINAL_DECIDE
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=os.environ.get(
        "PERF_CORPUS", os.path.join(tempfile.gettempdir(), "perf-corpus")))
    ap.add_argument("--files", nargs="*", help="file names in the corpus (default: all)")
    ap.add_argument("--master", default="local[1]")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--out", help="where the profiles and the event log go (default: a new "
                    "temporary directory, kept)")
    ap.add_argument("--no-executors", action="store_true", help="no executor profiles")
    ap.add_argument("--no-driver", action="store_true", help="no driver profile")
    args = ap.parse_args()
    corpus = Path(args.corpus)
    files = [corpus / f for f in args.files] if args.files else sorted(
        corpus.glob("mariadb-bin.[0-9]*"))
    if not files:
        sys.exit(f"profile_load: no binlog files in {corpus}")
    out = Path(args.out or tempfile.mkdtemp(prefix="binlake-profile-load-"))
    out.mkdir(parents=True, exist_ok=True)
    PROF_DIR = str(out)
    home = Path(tempfile.mkdtemp(prefix="binlake-profile-home-"))
    (out / "eventlog").mkdir(exist_ok=True)
    config = home / "binlake.toml"
    config.write_text('[spark_conf]\n"spark.eventLog.enabled" = "true"\n'
                      f'"spark.eventLog.dir" = "file://{out / "eventlog"}"\n')
    os.environ["BINLAKE_HOME"] = str(home)

    from binlake import cli
    from binlake.lake import extract, job, land

    if not args.no_executors:
        # job.py and land.py call X.decode_tasks_arrow, _survey (imported into job.py from
        # lake/discover.py) and decide_xa_arrow (into land.py from lake/xa.py) by name
        # when they run: these wrappers
        # (defined in __main__, so pickled by value) reach the executors instead
        ORIGINAL_SURVEY = job._survey
        extract.decode_tasks_arrow = profiled_decode
        job._survey = profiled_survey
        ORIGINAL_DECIDE = land.decide_xa_arrow
        land.decide_xa_arrow = profiled_decide
    argv = ["-q", "load", "--json", "--config", str(config), "--master", args.master,
            *map(str, files)]
    prof = cProfile.Profile()
    t0 = time.time()
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        if args.no_driver:
            rc = cli.main(argv)
        else:
            rc = prof.runcall(cli.main, argv)
    wall = time.time() - t0
    summary = json.loads(buf.getvalue().strip().splitlines()[-1])
    print(f"load of {', '.join(f.name for f in files)} "
          f"({sum(f.stat().st_size for f in files) / 1e6:.1f} MB) on {args.master}: exit {rc}, "
          f"{wall:.1f} s in this process (profiled), {summary['seconds']:.1f} s in the job, "
          f"{summary['ranges']} decode ranges; load average {os.getloadavg()[0]:.2f}")
    print("phases: " + ", ".join(f"{k} {v:.1f} s" for k, v in summary["timings"].items()))
    if not args.no_driver:
        prof.dump_stats(out / "driver.prof")
        st = pstats.Stats(str(out / "driver.prof"))
        for key in ("cumulative", "tottime"):
            print(f"\n== driver (main thread), by {key}")
            print(top(st, key, args.top))
    for kind, pattern in (("decode tasks", "exec-*.prof"), ("survey tasks", "survey-*.prof"),
                          ("XA decision tasks", "decide-*.prof")):
        found = sorted(glob.glob(str(out / pattern)))
        if not found:
            continue
        st = pstats.Stats(*found)
        total = getattr(st, "total_tt", 0.0)
        print(f"\n== executors: {len(found)} {kind} (summed; {total:.1f} s profiled)")
        for key in ("cumulative", "tottime"):
            print(f"-- by {key}")
            print(top(st, key, args.top))
    print("\n== Spark stages (event log): wall s, tasks, executor run / CPU / GC s")
    for s in stages(out / "eventlog"):
        print(f"  {s['stage']:3} {s.get('name', '?')[:40]:40} {s.get('wall_s', 0):6.1f} "
              f"{s['tasks']:4} {s['run_s']:7.1f} {s['cpu_s']:7.1f} {s['gc_s']:5.1f}")
    print(f"\nprofiles and event log in {out}")
    import shutil

    shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
