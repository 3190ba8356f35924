"""A killed load, at any moment, and its rerun give the tables a clean load gives.

Real binlogs of a real MariaDB server (the all-types workload: every column type, FULL
metadata, so typed changelog and mirror tables; then every transaction scenario: XA across
rotations, XA ROLLBACK in a later file, a pending XA, mixed InnoDB/MyISAM/Aria, savepoints,
statement format, DDL) are loaded by ``binlake load`` processes as a user runs them:

* into one lake, once, cleanly (the reference; its duration T sets the kill moments);
* into another, SIGKILLed (the whole process group: Python driver, JVM, Python workers) at
  seeded random moments between 10% and 95% of T, each kill hitting a new process that
  reruns the load, then run to the end.  The seed is printed (``BINLAKE_KILL_SEED`` sets it).

Then every table of both lakes (core, typed changelogs and mirrors) is read with pyiceberg and
compared cell by cell (``tests/lake_dump.py``: the columns that name the writing run aside);
the final run must not hang (its time is bounded) and no data file of the killed runs may be
left unreferenced.  Also a load written on a branch and ``binlake publish`` killed halfway:
publishing again finishes it, and ``main`` equals the clean load; and ``binlake maintain``
killed at random moments: the tables keep their rows, and the next maintenance leaves no
unreferenced file.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from .lake_dump import diff_lakes, dump, unreferenced_files, unused_metadata_files

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.slow]

pytest.importorskip("pyspark")
pytest.importorskip("pyiceberg")

BINLAKE = [sys.executable, "-m", "binlake.cli"]
KILLS = 3


@pytest.fixture(scope="module")
def stream(alltypes_stream: Path) -> Path:
    """The closed binlog files of the two workloads (conftest: shared with
    test_s3_warehouse)."""
    return alltypes_stream


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BINLAKE_")}
    env["BINLAKE_HOME"] = str(home)
    return env


def run(home: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*BINLAKE, *args], env=_env(home), capture_output=True, text=True,
                          timeout=timeout, check=False)


def killed_at(home: Path, seconds: float, *args: str) -> str:
    """Start ``binlake ARGS`` in its own process group and SIGKILL the group after
    ``seconds``; returns what it had printed on stderr (its last lines)."""
    proc = subprocess.Popen([*BINLAKE, *args], env=_env(home), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        proc.wait(timeout=seconds)
        ended = f"ended by itself (exit {proc.returncode}) before the kill"
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        ended = "killed"
    err = proc.stderr.read() if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    # the workers of the group die with it; give the kernel a moment to reap them
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    return ended + ": " + " | ".join(err.strip().splitlines()[-2:])


@pytest.fixture(scope="module")
def clean(alltypes_clean: tuple[Path, float, Any]) -> tuple[Path, float, Any]:
    """A clean ``local[2]`` load of the stream (conftest: shared with test_s3_warehouse)."""
    return alltypes_clean


def test_killed_load_recovers(stream: Path, clean: tuple[Path, float, Any],
                              tmp_path: Path) -> None:
    _, took, want = clean
    seed = int(os.environ.get("BINLAKE_KILL_SEED") or random.SystemRandom().randrange(10**6))
    rng = random.Random(seed)
    moments = [round(took * rng.uniform(0.10, 0.95), 1) for _ in range(KILLS)]
    print(f"\nkill test: seed {seed}, clean load {took:.1f} s, kills at {moments} s")
    home = tmp_path / "lake"
    what = [killed_at(home, m, "load", "--master", "local[2]", str(stream)) for m in moments]
    t0, rerun_at = time.monotonic(), time.time()
    # never hangs: a rerun that waited on a lock would run into this bound
    done = run(home, "load", "--master", "local[2]", str(stream), timeout=3 * took + 120)
    rerun = time.monotonic() - t0
    print(f"kill test: {what}; rerun {rerun:.1f} s, exit {done.returncode}")
    assert done.returncode == 0, f"seed {seed}: {done.stderr[-3000:]}"
    got = dump(home)
    assert not diff_lakes(want, got), f"seed {seed}, kills at {moments}:\n{diff_lakes(want, got)}"
    left = unreferenced_files(home)
    assert not left, f"seed {seed}: {len(left)} data files of killed runs left: {left[:5]}"
    left = unused_metadata_files(home, before=rerun_at)
    assert not left, f"seed {seed}: {len(left)} metadata files of killed runs left: {left[:5]}"
    staged = home / "warehouse" / "_binlake_staging"
    assert not staged.exists() or not any(staged.iterdir()), list(staged.iterdir())
    # and once more: nothing to do, nothing changes
    again = run(home, "load", "--master", "local[2]", str(stream))
    assert again.returncode == 0 and not diff_lakes(want, dump(home))


def _metadata_locations(home: Path) -> dict[str, str]:
    import sqlite3

    con = sqlite3.connect(f"file:{home}/catalog.db?mode=ro", uri=True, timeout=5)
    try:
        return dict(con.execute("SELECT table_name, metadata_location FROM iceberg_tables"))
    finally:
        con.close()


# ``binlake publish`` that SIGKILLs itself right after its K-th table was published: each
# table is one commit through the catalog, a few milliseconds apart, too close for a poller
# outside the process to land a kill between two of them
_KILL_AFTER_TABLES = """
import os, signal, sys
from binlake.lake import publish as P
left, real = int(sys.argv[1]), P._finish_in_catalog
def finish(*a, **k):
    global left
    out = real(*a, **k)
    if out:
        left -= 1
        if left == 0:
            os.kill(os.getpid(), signal.SIGKILL)
    return out
P._finish_in_catalog = finish
from binlake.cli import main
sys.exit(main(sys.argv[2:]))
"""


def published_killed_after(home: Path, tables: int, branch: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _KILL_AFTER_TABLES, str(tables), "publish",
                           "--branch", branch], env=_env(home), capture_output=True,
                          text=True, timeout=300, check=False)


def test_killed_publish_recovers(stream: Path, clean: tuple[Path, float, Any],
                                 tmp_path: Path) -> None:
    """Publishing fast-forwards main and drops the branch table by table, one commit each:
    SIGKILLed after a seeded random number of tables, publishing again finishes the rest."""
    _, _, want = clean
    home = tmp_path / "lake"
    done = run(home, "load", "--master", "local[2]", "--branch", "night1", str(stream))
    assert done.returncode == 0, done.stderr[-3000:]
    assert not diff_lakes(want, dump(home, ref="night1"))
    n = len(dump(home, ref="night1"))  # the tables having the branch
    seed = int(os.environ.get("BINLAKE_KILL_SEED") or random.SystemRandom().randrange(10**6))
    tables = random.Random(seed).randrange(1, n)
    before = _metadata_locations(home)
    killed = published_killed_after(home, tables, "night1")
    print(f"\npublish kill: seed {seed}, {n} tables, killed after {tables}")
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr[-3000:])
    moved = {k for k, v in _metadata_locations(home).items() if before.get(k) != v}
    assert len(moved) == tables and "files" not in moved, sorted(moved)
    half = dump(home, ref="night1")
    assert len(half) == n - tables, sorted(half)
    again = run(home, "publish", "--master", "local[2]", "--branch", "night1")
    assert again.returncode == 0, again.stderr[-3000:]
    assert not diff_lakes(want, dump(home)), f"seed {seed}:\n{diff_lakes(want, dump(home))}"
    still = dump(home, ref="night1")
    assert not still, f"the branch is still on {sorted(still)}"


def _committed(home: Path, table: str) -> bool:
    """``table`` of the lake under ``home`` has a snapshot (a commit, not just its creation)."""
    import json
    import sqlite3

    try:
        loc = _metadata_locations(home).get(table)
    except sqlite3.Error:  # no catalog yet
        return False
    if not loc:
        return False
    meta = json.loads(Path(loc.removeprefix("file:")).read_text())
    return meta.get("current-snapshot-id") not in (None, -1)


def _report(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    import json

    line = next(ln for ln in reversed(done.stdout.splitlines()) if ln.startswith("{"))
    return dict(json.loads(line))


def test_validation_after_a_killed_load_reads_the_files_again(stream: Path,
                                                              tmp_path: Path) -> None:
    """A load SIGKILLed after its ``stream_facts`` commit and before its ``files`` rows
    (which come last) leaves facts no finished load vouches for: validation must not take
    them, but read every file again, and give the verdicts (observed values included) of a
    validation that reads the files without the lake."""
    import json

    home = tmp_path / "lake"
    proc = subprocess.Popen([*BINLAKE, "load", "--master", "local[2]", str(stream)],
                            env=_env(home), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 600
    while proc.poll() is None and time.monotonic() < deadline \
            and not _committed(home, "stream_facts"):
        time.sleep(0.02)
    assert proc.poll() is None, f"the load ended (exit {proc.returncode}) before the kill"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert _committed(home, "stream_facts")
    assert not _committed(home, "files"), "the kill came after the files rows"
    facts = dump(home).get("stream_facts")
    assert facts, "the killed load's stream facts are not in the lake"

    names = sorted(p.name for p in stream.iterdir() if p.is_file())
    lake = run(home, "validate", "--json", "--master", "local[2]", str(stream))
    alone = run(home, "validate", "--json", "--no-lake", "--master", "local[2]", str(stream))
    got, want = _report(lake), _report(alone)
    notes = next(r for r in got["results"]
                 if r["expectation"] == "integrity.events_decode")["details"]
    assert notes["facts_from_load"] == [] and notes["read_again"] == names, notes

    def stream_results(report: dict[str, Any]) -> dict[str, tuple[bool, str]]:
        return {r["expectation"]: (r["success"], json.dumps(r["observed"], sort_keys=True))
                for r in report["results"] if r["family"] != "reconciliation"}

    assert stream_results(got) == stream_results(want)
    assert len(stream_results(got)) >= 10


def test_killed_maintenance_recovers(stream: Path, clean: tuple[Path, float, Any],
                                     tmp_path: Path) -> None:
    """``binlake maintain`` (compaction, expiry: lake/maintain.py) SIGKILLed at seeded random
    moments of a clean maintenance's time, each kill hitting a new process, then run to
    the end: every table still equals the clean load at every step, and at the end no data
    file is left that no snapshot references (a kill inside expire_snapshots leaves the
    expired files undeleted: the next maintenance's sweep takes them)."""
    _, _, want = clean
    seed = int(os.environ.get("BINLAKE_KILL_SEED") or random.SystemRandom().randrange(10**6))
    rng = random.Random(seed)
    ref, home = tmp_path / "ref", tmp_path / "lake"
    for h in (ref, home):
        assert run(h, "load", "--master", "local[2]", str(stream)).returncode == 0
    t0 = time.monotonic()
    done = run(ref, "maintain", "--retain-days", "0", "--master", "local[2]", "--json")
    took = time.monotonic() - t0
    assert done.returncode == 0, done.stderr[-3000:]
    assert not diff_lakes(want, dump(ref)) and not unreferenced_files(ref)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert sum(t["rewritten_data_files"] for t in report["tables"]) > 0, report
    moments = [round(took * rng.uniform(0.3, 0.95), 1) for _ in range(2)]
    print(f"\nmaintenance kill test: seed {seed}, clean maintenance {took:.1f} s, "
          f"kills at {moments} s")
    for m in moments:
        what = killed_at(home, m, "maintain", "--retain-days", "0", "--master", "local[2]")
        diff = diff_lakes(want, dump(home))
        assert not diff, f"seed {seed}, killed at {m} s ({what}):\n{diff}"
    last = time.time()
    done = run(home, "maintain", "--retain-days", "0", "--master", "local[2]", "--json")
    assert done.returncode == 0, f"seed {seed}: {done.stderr[-3000:]}"
    swept = sum(t["swept_files"] for t in json.loads(
        done.stdout.strip().splitlines()[-1])["tables"])
    print(f"maintenance kill test: the last run removed {swept} unreferenced file(s)")
    assert not diff_lakes(want, dump(home))
    left = unreferenced_files(home)
    assert not left, f"seed {seed}: {len(left)} unreferenced data files left: {left[:5]}"
    left = unused_metadata_files(home, before=last)
    assert not left, f"seed {seed}: {len(left)} unused metadata files left: {left[:5]}"
