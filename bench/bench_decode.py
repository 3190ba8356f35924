#!/usr/bin/env python3
"""Decode benchmark: ``binlake decode`` next to ``mariadb-binlog`` on the same real binlog.

Measures, in one run and on the same file (by default the 268 MB OLTP MariaDB binlog that
``../shared/perf/make_perf_corpus.py`` produces):

  reference   mariadb-binlog --no-defaults -v --base64-output=decode-rows FILE > /dev/null
  rows        binlake decode --rows FILE > /dev/null
  events      binlake decode FILE > /dev/null
  rows-nv     binlake decode --rows --no-verify FILE > /dev/null   (only with --no-verify-variant)

Each command runs --repeat times (round-robin, so drift hits every command alike), pinned to
one CPU with ``taskset`` when available; the median wall time is reported as MB/s
(MB = 10^6 bytes of binlog file) and rows/s. Row counts come from one extra, piped run of
each tool (binlake: output lines; reference: ``### INSERT/UPDATE/DELETE`` lines), streamed.
Peak RSS is taken per process with /usr/bin/time (else wait4(2)) and checked against the issue's memory bound:
peak RSS <= largest event in the file + 256 MiB.

It is a measurement, not a test: the exit status is 0 unless the tool itself fails (2), or,
with --check, 1 when binlake --rows is below 0.2x the reference's MB/s or the memory bound fails.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REQUIRED_RATIO = 0.2          # binlake --rows MB/s / reference MB/s, required by the issue
GOAL_RATIO = 1.0
MEMORY_HEADROOM = 256 << 20   # peak RSS <= largest event + 256 MiB
LOAD_WARN = 0.5
MB = 1_000_000                # throughput unit
MIB = 1 << 20                 # memory unit

REPO = Path(__file__).resolve().parent.parent
GENERATOR = REPO.parent / "shared" / "perf" / "make_perf_corpus.py"
DEFAULT_CORPUS = os.environ.get("PERF_CORPUS",
                                os.path.join(tempfile.gettempdir(), "perf-corpus"))
DEFAULT_FILE = "mariadb-bin.000001"

BINLOG_MAGIC = b"\xfebin"
HEADER_LEN = 19
ROW_MARKERS = (b"\n### INSERT INTO ", b"\n### UPDATE ", b"\n### DELETE FROM ")


class BenchError(Exception):
    """The benchmark itself could not run (missing tool or file, a command failed)."""


# ---------------------------------------------------------------------------------------------
# the file


@dataclass
class FileScan:
    size: int
    events: int
    largest_event: int
    largest_event_pos: int


def scan_events(path: Path) -> FileScan:
    """Walk the event headers (event_size is the uint32 at offset 9 of each 19-byte header).

    Reads 1 MiB blocks, skipping over large events: the scan must not inflate this process's
    peak RSS, which the fallback RSS measurement (wait4) would pass on to the children.
    """
    size = path.stat().st_size
    unpack = struct.Struct("<I").unpack_from
    with path.open("rb", buffering=0) as f:
        if f.read(4) != BINLOG_MAGIC:
            raise BenchError(f"{path}: not a plain binlog file (no \\xfebin magic)")
        buf, base = b"", 0  # base: file offset of buf[0]
        pos, events, largest, largest_pos = 4, 0, 0, 4
        while True:
            off = pos - base
            if off + HEADER_LEN > len(buf):
                f.seek(pos)
                buf, base, off = f.read(MIB), pos, 0
                if len(buf) < HEADER_LEN:
                    break
            (ev_size,) = unpack(buf, off + 9)
            if ev_size < HEADER_LEN:
                raise BenchError(f"{path}: bad event size {ev_size} at byte {pos}")
            if ev_size > largest:
                largest, largest_pos = ev_size, pos
            events += 1
            pos += ev_size
    if pos != size:
        raise BenchError(f"{path}: the last event ends at byte {pos}, the file at {size}")
    return FileScan(size, events, largest, largest_pos)


def ensure_corpus(path: Path, corpus: Path, generate: bool) -> None:
    if path.is_file():
        return
    if not generate:
        raise BenchError(f"{path} is missing (and --no-generate was given); run "
                         f"{sys.executable} {GENERATOR} --out {corpus}")
    if not GENERATOR.is_file():
        raise BenchError(f"{path} is missing and the generator {GENERATOR} is not there")
    print(f"# {path} is missing: generating the perf corpus (~90 s, starts a private "
          f"MariaDB on port 3308): {sys.executable} {GENERATOR} --out {corpus}", flush=True)
    subprocess.run([sys.executable, str(GENERATOR), "--out", str(corpus)], check=True)
    if not path.is_file():
        raise BenchError(f"the generator ran but {path} is still missing")


# ---------------------------------------------------------------------------------------------
# the machine


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def tool_version(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr) \
        else "unknown"


# ---------------------------------------------------------------------------------------------
# running one command


@dataclass
class Sample:
    wall_s: float
    user_s: float
    sys_s: float
    maxrss_bytes: int


@dataclass
class Subject:
    key: str
    label: str
    argv: list[str]
    is_binlake: bool
    samples: list[Sample] = field(default_factory=list)
    rows: int | None = None
    rows_note: str = ""

    @property
    def median_s(self) -> float:
        return statistics.median(s.wall_s for s in self.samples)

    @property
    def peak_rss(self) -> int:
        return max(s.maxrss_bytes for s in self.samples)


def _pin_prefix(cpu: int | None) -> list[str]:
    if cpu is None:
        return []
    taskset = shutil.which("taskset")
    return [taskset, "-c", str(cpu)] if taskset else []


def _fail(argv: list[str], rc: int, err: bytes) -> BenchError:
    tail = err.decode("utf-8", "replace").strip().splitlines()[-5:]
    return BenchError(f"command failed (exit {rc}): {' '.join(argv)}\n  " + "\n  ".join(tail))


TIME_BIN = "/usr/bin/time"


def rss_method() -> str:
    return "time" if os.access(TIME_BIN, os.X_OK) else "wait4"


def run_timed(argv: list[str], method: str) -> Sample:
    """Run argv with stdout to /dev/null; wall time around it, CPU time and peak RSS of it.

    Peak RSS comes from ``/usr/bin/time -f %M`` (method "time"), which forks the command
    from its own small process. The fallback (method "wait4") takes ru_maxrss of exactly this
    child from wait4(2); Linux carries the forking process's high-water RSS into the child, so
    there the figure is at least this benchmark process's own peak RSS (an upper bound).
    User and system CPU come from wait4 in both cases (they include reaped grandchildren).
    """
    with tempfile.TemporaryFile() as err, open(os.devnull, "wb") as devnull, \
            tempfile.NamedTemporaryFile("r", suffix=".time") as tout:
        cmd = [TIME_BIN, "-f", "%M", "-o", tout.name, *argv] if method == "time" else argv
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=devnull, stderr=err)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = rc = os.waitstatus_to_exitcode(status)
        if rc != 0:
            err.seek(0)
            raise _fail(argv, rc, err.read())
        if method == "time":
            lines = tout.read().split()
            if not lines or not lines[-1].isdigit():
                raise BenchError(f"cannot read the peak RSS from {TIME_BIN}: {lines!r}")
            maxrss_kib = int(lines[-1])
        else:
            maxrss_kib = ru.ru_maxrss
    return Sample(wall, ru.ru_utime, ru.ru_stime, maxrss_kib * 1024)


def run_counting(argv: list[str], markers: tuple[bytes, ...] | None) -> tuple[int, float]:
    """Run argv with stdout piped to us; count newlines (markers None) or marker lines.

    Streamed in 1 MiB chunks, never the whole output in memory. Returns (count, wall seconds).
    """
    count = 0
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=err)
        assert proc.stdout is not None
        carry = b"\n"  # markers are matched at a line start: pretend a newline before byte 0
        while chunk := proc.stdout.read(MIB):
            if markers is None:
                count += chunk.count(b"\n")
                continue
            buf = carry + chunk
            cut = buf.rfind(b"\n")
            if cut < 0:           # no newline yet: keep accumulating (a very long line)
                carry = buf
                continue
            whole, carry = buf[:cut], buf[cut:]  # carry starts with that newline
            count += sum(whole.count(m) for m in markers)
        if markers is not None:
            count += sum(carry.count(m) for m in markers)
        proc.stdout.close()
        rc = proc.wait()
        wall = time.perf_counter() - t0
        if rc != 0:
            err.seek(0)
            raise _fail(argv, rc, err.read())
    return count, wall


# ---------------------------------------------------------------------------------------------
# main


def find_binlake(explicit: str | None) -> str:
    if explicit:
        return explicit
    beside = Path(sys.executable).parent / "binlake"
    if beside.is_file():
        return str(beside)
    found = shutil.which("binlake") or (str(REPO / ".venv" / "bin" / "binlake")
                                        if (REPO / ".venv" / "bin" / "binlake").is_file()
                                        else None)
    if not found:
        raise BenchError("binlake console script not found (give --binlake PATH)")
    return found


def find_reference(explicit: str | None) -> str:
    if explicit:
        return explicit
    found = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")
    if not found:
        raise BenchError("mariadb-binlog not found (give --reference PATH)")
    return found


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--corpus", default=DEFAULT_CORPUS,
                    help="perf corpus directory ($PERF_CORPUS or <tempdir>/perf-corpus)")
    ap.add_argument("--file", default=DEFAULT_FILE,
                    help="binlog file inside --corpus (or an absolute path)")
    ap.add_argument("--generate", action=argparse.BooleanOptionalAction, default=True,
                    help="run the corpus generator when the file is missing")
    ap.add_argument("--repeat", type=int, default=3, help="runs per command; median reported")
    ap.add_argument("--cpu", type=int, default=0, help="CPU to pin every run to (taskset -c)")
    ap.add_argument("--no-pin", action="store_true", help="do not pin to one CPU")
    ap.add_argument("--no-verify-variant", action="store_true",
                    help="also time binlake decode --rows --no-verify")
    ap.add_argument("--count-reference-rows", action=argparse.BooleanOptionalAction,
                    default=True, help="count the reference's ### row lines in an extra run "
                    "(else reuse binlake's row count)")
    ap.add_argument("--binlake", help="binlake console script (default: the one beside "
                    "this Python, else on PATH)")
    ap.add_argument("--reference", help="mariadb-binlog binary (default: on PATH)")
    ap.add_argument("--json", metavar="FILE", help="also write the JSON result line here")
    ap.add_argument("--check", action="store_true",
                    help=f"exit 1 if binlake --rows < {REQUIRED_RATIO}x the reference's "
                    "MB/s or the memory bound fails")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    return args


def fmt_int(n: float | None) -> str:
    return "-" if n is None else f"{n:,.0f}"


def bench(args: argparse.Namespace) -> tuple[dict, bool]:
    corpus = Path(args.corpus)
    path = Path(args.file) if os.path.isabs(args.file) else corpus / args.file
    ensure_corpus(path, corpus, args.generate)
    path = path.resolve()

    load_start = os.getloadavg()
    method = rss_method()
    binlake = find_binlake(args.binlake)
    reference = find_reference(args.reference)
    pin = [] if args.no_pin else _pin_prefix(args.cpu)
    pinned = f"pinned to CPU {args.cpu} with taskset" if pin else (
        "NOT pinned (--no-pin)" if args.no_pin else "NOT pinned (no taskset)")

    print(f"# scanning event headers of {path} ...", file=sys.stderr, flush=True)
    scan = scan_events(path)
    f = str(path)
    subjects = [
        Subject("reference", "mariadb-binlog -v --base64-output=decode-rows",
                [reference, "--no-defaults", "-v", "--base64-output=decode-rows", f], False),
        Subject("rows", "binlake decode --rows", [binlake, "decode", "--rows", f], True),
        Subject("events", "binlake decode (events)", [binlake, "decode", f], True),
    ]
    if args.no_verify_variant:
        subjects.append(Subject("rows_no_verify", "binlake decode --rows --no-verify",
                                [binlake, "decode", "--rows", "--no-verify", f], True))
    by_key = {s.key: s for s in subjects}

    # Row counts first (also warms the page cache for the timed runs).
    print("# counting rows (one piped run of binlake --rows"
          + (" and of the reference" if args.count_reference_rows else "") + ") ...",
          file=sys.stderr, flush=True)
    rows, count_wall = run_counting(pin + by_key["rows"].argv, None)
    by_key["rows"].rows = rows
    by_key["rows"].rows_note = "output lines of a piped run"
    if "rows_no_verify" in by_key:
        by_key["rows_no_verify"].rows = rows
        by_key["rows_no_verify"].rows_note = "binlake --rows count"
    ref = by_key["reference"]
    ref_count_wall = None
    if args.count_reference_rows:
        ref.rows, ref_count_wall = run_counting(pin + ref.argv, ROW_MARKERS)
        ref.rows_note = "### INSERT/UPDATE/DELETE lines of a piped run"
    else:
        ref.rows, ref.rows_note = rows, "reused binlake --rows count"

    for i in range(args.repeat):
        for s in subjects:
            print(f"# run {i + 1}/{args.repeat}: {s.label} ...", file=sys.stderr, flush=True)
            s.samples.append(run_timed(pin + s.argv, method))
    load_end = os.getloadavg()

    ref_mbs = scan.size / MB / ref.median_s
    results = {}
    for s in subjects:
        mbs = scan.size / MB / s.median_s
        results[s.key] = {
            "command": " ".join(s.argv) + " > /dev/null",
            "median_s": round(s.median_s, 3),
            "runs_s": [round(x.wall_s, 3) for x in s.samples],
            "median_cpu_s": round(statistics.median(x.user_s + x.sys_s for x in s.samples), 3),
            "mb_per_s": round(mbs, 2),
            "rows": s.rows,
            "rows_source": s.rows_note,
            "rows_per_s": round(s.rows / s.median_s) if s.rows is not None else None,
            "ratio_vs_reference": round(mbs / ref_mbs, 4),
            "peak_rss_bytes": s.peak_rss,
        }

    ratio = results["rows"]["ratio_vs_reference"]
    cpu_ratio = round(results["reference"]["median_cpu_s"] / results["rows"]["median_cpu_s"], 4)
    speed_ok = ratio >= REQUIRED_RATIO
    binlake_rss = max(s.peak_rss for s in subjects if s.is_binlake)
    mem_bound = scan.largest_event + MEMORY_HEADROOM
    mem_ok = binlake_rss <= mem_bound

    result = {
        "benchmark": "binlake-decode",
        "time": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "file": f,
        "file_bytes": scan.size,
        "events": scan.events,
        "largest_event_bytes": scan.largest_event,
        "largest_event_pos": scan.largest_event_pos,
        "repeat": args.repeat,
        "pinned_cpu": args.cpu if pin else None,
        "rss_method": "/usr/bin/time -f %M" if method == "time" else "wait4 (upper bound)",
        "machine": {
            "nproc": os.cpu_count(),
            "cpu_model": cpu_model(),
            "loadavg_start": [round(x, 2) for x in load_start],
            "loadavg_end": [round(x, 2) for x in load_end],
            "load_warning": load_start[0] > LOAD_WARN,
            "python": platform.python_version(),
        },
        "versions": {"binlake": tool_version([binlake, "--version"]),
                     "reference": tool_version([reference, "--version"])},
        "results": results,
        "row_count_runs_s": {"binlake_rows_piped": round(count_wall, 3),
                             "reference_piped": (round(ref_count_wall, 3)
                                                 if ref_count_wall is not None else None)},
        "rows_match": (ref.rows == rows) if args.count_reference_rows else None,
        "speed": {"ratio": ratio, "required": REQUIRED_RATIO, "goal": GOAL_RATIO,
                  "pass": speed_ok, "cpu_time_ratio": cpu_ratio},
        "memory": {"peak_rss_bytes": binlake_rss, "bound_bytes": mem_bound,
                   "headroom_bytes": MEMORY_HEADROOM, "pass": mem_ok},
    }
    print_table(result, subjects, pinned)
    return result, speed_ok and mem_ok


def print_table(r: dict, subjects: list[Subject], pinned: str) -> None:
    m = r["machine"]
    la = " ".join(f"{x:.2f}" for x in m["loadavg_start"])
    print(f"file     {r['file']}: {r['file_bytes'] / MB:.1f} MB ({r['file_bytes']:,} bytes), "
          f"{r['events']:,} events, largest event {r['largest_event_bytes']:,} bytes "
          f"at {r['largest_event_pos']:,}")
    print(f"machine  {m['nproc']} CPUs, {m['cpu_model']}, Python {m['python']}; {pinned}")
    print(f"load     average at start {la}, at end "
          + " ".join(f"{x:.2f}" for x in m["loadavg_end"]))
    if m["load_warning"]:
        print(f"WARNING  load average {m['loadavg_start'][0]:.2f} > {LOAD_WARN} at start: "
              "other work shares the machine, the numbers are unreliable")
    print(f"tools    {r['versions']['reference']}; {r['versions']['binlake']}")
    print(f"runs     {r['repeat']} per command, round-robin, median wall time (cpu s: median "
          "user+sys); "
          f"MB = 10^6 bytes of binlog; peak RSS in MiB, by {r['rss_method']}")
    print()
    head = (f"{'command':<46} {'median s':>9} {'cpu s':>7} {'MB/s':>8} {'rows/s':>11} "
            f"{'vs ref':>8} {'peak RSS':>9}  runs (s)")
    print(head)
    print("-" * len(head))
    for s in subjects:
        x = r["results"][s.key]
        print(f"{s.label:<46} {x['median_s']:>9.2f} {x['median_cpu_s']:>7.2f} "
              f"{x['mb_per_s']:>8.1f} "
              f"{fmt_int(x['rows_per_s']):>11} {x['ratio_vs_reference']:>7.3f}x "
              f"{x['peak_rss_bytes'] / MIB:>9.1f}  "
              + " ".join(f"{v:.2f}" for v in x["runs_s"]))
    print()
    rows = r["results"]["rows"]["rows"]
    ref_rows = r["results"]["reference"]["rows"]
    if r["rows_match"] is None:
        print(f"rows     {rows:,} (binlake --rows output lines; reused for the reference)")
    else:
        print(f"rows     binlake {rows:,}, reference {ref_rows:,} ### row lines: "
              + ("match" if r["rows_match"] else "MISMATCH"))
    sp, mem = r["speed"], r["memory"]
    print(f"speed    binlake decode --rows = {sp['ratio']:.3f}x reference MB/s, required "
          f">= {sp['required']}x (goal {sp['goal']}x): {'PASS' if sp['pass'] else 'FAIL'}"
          f"  [by CPU time instead of wall: {sp['cpu_time_ratio']:.3f}x, for information]")
    print(f"memory   peak RSS of binlake {mem['peak_rss_bytes'] / MIB:.1f} MiB <= largest "
          f"event {r['largest_event_bytes'] / MIB:.2f} MiB + 256 MiB = "
          f"{mem['bound_bytes'] / MIB:.1f} MiB: {'PASS' if mem['pass'] else 'FAIL'}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        result, ok = bench(args)
    except (BenchError, subprocess.CalledProcessError, OSError) as exc:
        print(f"bench_decode: error: {exc}", file=sys.stderr)
        return 2
    line = json.dumps(result, separators=(",", ":"))
    print(line)
    if args.json:
        Path(args.json).write_text(line + "\n")
    if args.check and not ok:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
