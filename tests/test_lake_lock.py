"""The load lock (binlake.lake.lock): one load at a time per lake (SQLite catalog) or per
source (other catalogs); a holder that dies releases it.  The lock inside a real load is
tested in test_lake_job.py (test_one_load_at_a_time)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from binlake.config import load_settings
from binlake.lake.lock import LoadLockedError, check_unlocked, load_lock, lock_path

HOLD = """
import sys, time
from binlake.config import load_settings
from binlake.lake.lock import load_lock
s = load_settings(env={"BINLAKE_HOME": sys.argv[1], "BINLAKE_CATALOG_URI": sys.argv[2]},
                  source=sys.argv[3])
with load_lock(s, "other-run"):
    print("held", flush=True)
    time.sleep(float(sys.argv[4]) if len(sys.argv) > 4 else 600)
"""


def hold(home: Path, catalog_uri: str = "", source: str = "db1", seconds: float = 600
         ) -> subprocess.Popen[str]:
    """Another process holding the load lock of these settings for ``seconds`` (or until
    killed)."""
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(home), catalog_uri, source,
                          str(seconds)], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None
    assert p.stdout.readline().strip() == "held"
    return p


def settings(home: Path, catalog_uri: str = "", source: str = "db1",  # type: ignore[no-untyped-def]
             wait: float = 0):
    return load_settings(env={"BINLAKE_HOME": str(home), "BINLAKE_CATALOG_URI": catalog_uri},
                         source=source, lock_wait=wait)


def test_lock_paths(tmp_path: Path) -> None:
    # SQLite: one lock beside the catalog file, whatever the source
    a, b = settings(tmp_path, source="db1"), settings(tmp_path, source="db2")
    assert lock_path(a) == lock_path(b) == tmp_path / "catalog.db.load.lock"
    other = tmp_path / "elsewhere" / "cat.db"
    assert lock_path(settings(tmp_path, f"sqlite:///{other}")) == Path(f"{other}.load.lock")
    # another catalog: one lock per source under home
    pg = "postgresql://u@db.example/lake"
    p1, p2 = lock_path(settings(tmp_path, pg, "db1")), lock_path(settings(tmp_path, pg, "a b:c"))
    assert p1 == tmp_path / "locks" / "load-db1.lock"
    assert p2 == tmp_path / "locks" / "load-a_b_c.lock"


def test_held_lock_refuses_and_names_the_holder(tmp_path: Path) -> None:
    holder = hold(tmp_path)
    try:
        with pytest.raises(LoadLockedError) as err, load_lock(settings(tmp_path), "mine"):
            raise AssertionError("the lock was given twice")
        msg = str(err.value)
        assert str(tmp_path / "catalog.db.load.lock") in msg
        assert f"pid {holder.pid} " in msg and "run other-run" in msg and "source db1" in msg
        # another source on the same SQLite catalog waits for the same lock
        with pytest.raises(LoadLockedError), load_lock(settings(tmp_path, source="db2"), "x"):
            raise AssertionError("the lock was given twice")
    finally:
        holder.kill()
        holder.wait()
    # the holder was killed: the kernel dropped its lock, nothing to clean up
    with load_lock(settings(tmp_path), "mine") as path:
        assert "run mine" in path.read_text()
    assert path.read_text() == ""  # released: the holder's note is gone


def test_other_catalog_locks_per_source(tmp_path: Path) -> None:
    pg = "postgresql://u@db.example/lake"
    holder = hold(tmp_path, pg, "db1")
    try:
        with pytest.raises(LoadLockedError), load_lock(settings(tmp_path, pg, "db1"), "x"):
            raise AssertionError("the lock was given twice")
        with load_lock(settings(tmp_path, pg, "db2"), "y"):  # another source: its own lock
            pass
    finally:
        os.kill(holder.pid, signal.SIGTERM)
        holder.wait()


def test_lock_is_exclusive_within_one_process(tmp_path: Path) -> None:
    """Two loads in one process (threads, or a load inside a load) are refused too."""
    with load_lock(settings(tmp_path), "first"):
        with pytest.raises(LoadLockedError) as err, load_lock(settings(tmp_path), "second"):
            raise AssertionError("the lock was given twice")
        assert f"pid {os.getpid()} " in str(err.value) and "run first" in str(err.value)
    with load_lock(settings(tmp_path), "third"):
        pass


def test_probe(tmp_path: Path) -> None:
    check_unlocked(settings(tmp_path))  # no lock file yet: nothing holds it
    assert not lock_path(settings(tmp_path)).exists()  # and the probe made none
    holder = hold(tmp_path)
    try:
        with pytest.raises(LoadLockedError) as err:
            check_unlocked(settings(tmp_path))
        assert f"pid {holder.pid} " in str(err.value)
    finally:
        holder.kill()
        holder.wait()
    check_unlocked(settings(tmp_path))  # the lock file stays; nobody holds it
    with load_lock(settings(tmp_path), "after"):  # and the probe left no lock behind
        pass


def cli_without_spark(home: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``binlake.cli.main`` with its settings from the environment (home ``home``, nothing
    else), failing the test if it starts a Spark session."""
    import binlake.lake.spark as lake_spark
    from binlake.cli import main

    def no_spark(*a: object, **k: object) -> None:
        raise AssertionError("Spark was started")

    monkeypatch.setattr(lake_spark, "build_session", no_spark)
    for k in list(os.environ):
        if k.startswith("BINLAKE_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("BINLAKE_HOME", str(home))
    return main


def test_cli_load_stops_before_spark_when_locked(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """``binlake load`` against a held lock exits 75 without starting a Spark session."""
    main = cli_without_spark(tmp_path, monkeypatch)
    holder = hold(tmp_path, source="default")
    try:
        assert main(["load", str(tmp_path / "mariadb-bin.000001")]) == 75
    finally:
        holder.kill()
        holder.wait()
    err = capsys.readouterr().err
    assert "another load is writing this lake" in err and f"pid {holder.pid} " in err


def test_wait_for_the_holder(tmp_path: Path) -> None:
    """``lock_wait``: a load waits for a holder that finishes in time, and gives up (the
    holder named) on one that does not."""
    import time

    holder = hold(tmp_path, seconds=1.5)
    t0 = time.monotonic()
    with load_lock(settings(tmp_path, wait=30), "waited") as path:
        waited = time.monotonic() - t0
        assert "run waited" in path.read_text()
    holder.wait()
    assert 0.8 < waited < 20, waited
    holder = hold(tmp_path)
    try:
        t0 = time.monotonic()
        with pytest.raises(LoadLockedError) as err, \
                load_lock(settings(tmp_path, wait=0.7), "gave up"):
            raise AssertionError("the lock was given twice")
        assert time.monotonic() - t0 >= 0.7
        assert f"pid {holder.pid} " in str(err.value)
        t0 = time.monotonic()
        with pytest.raises(LoadLockedError):  # the probe waits as long
            check_unlocked(settings(tmp_path, wait=0.7))
        assert time.monotonic() - t0 >= 0.7
    finally:
        holder.kill()
        holder.wait()


def test_cli_wait_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                         capsys: pytest.CaptureFixture[str],
                         caplog: pytest.LogCaptureFixture) -> None:
    """``binlake load --wait S`` waits S seconds for a held lock before it gives up (75),
    still without starting Spark; a bad value is a usage error."""
    import time

    main = cli_without_spark(tmp_path, monkeypatch)
    holder = hold(tmp_path, source="default")
    try:
        t0 = time.monotonic()
        assert main(["load", "--wait", "1.2", str(tmp_path / "mariadb-bin.000001")]) == 75
        assert time.monotonic() - t0 >= 1.2
        assert main(["load", "--wait", "-1", str(tmp_path / "mariadb-bin.000001")]) == 2
    finally:
        holder.kill()
        holder.wait()
    err = capsys.readouterr().err
    assert "another load is writing this lake" in err and "lock_wait: -1" in err
    assert any("waiting up to 1 s" in r.getMessage() for r in caplog.records)


def test_the_dags_load_waits_for_a_load_by_hand(tmp_path: Path) -> None:
    from binlake.orchestrate import DAG_LOCK_WAIT, load_submit_args

    plan = {"run_id": "r", "branch": "b", "files": []}
    env = load_submit_args(settings(tmp_path), plan)["spark_env"]
    assert float(env["BINLAKE_LOCK_WAIT"]) == DAG_LOCK_WAIT > 0
    env = load_submit_args(settings(tmp_path, wait=5), plan)["spark_env"]
    assert float(env["BINLAKE_LOCK_WAIT"]) == 5
    assert load_settings(env={"BINLAKE_HOME": str(tmp_path), **env}).lock_wait == 5



def test_killed_holders_notes_reach_the_next_load(tmp_path: Path) -> None:
    """A holder clears its note when it ends cleanly; a killed one (or one that failed
    halfway) leaves it, and the next holder gets every such note (a load killed while it
    cleaned up after another leaves both), then only its own note is in the file."""
    from binlake.lake.orphans import DeadRun

    s = settings(tmp_path)
    seen: list[list[str]] = []
    with load_lock(s, "clean-run", killed=seen.append):
        pass
    assert seen == [] and lock_path(s).read_text() == ""

    for _ in range(2):  # two holders killed in a row
        p = hold(tmp_path)
        p.send_signal(signal.SIGKILL)
        p.wait()
    with pytest.raises(RuntimeError), load_lock(s, "failing-run", killed=seen.append):
        raise RuntimeError("a load that fails halfway")
    # the second killed holder took no note of the first (it had no cleanup): both reach
    # the next load that cleans up
    assert len(seen) == 1 and [DeadRun.parse(n).run_id for n in seen[0]] == ["other-run"] * 2
    with load_lock(s, "next", killed=seen.append) as path:
        assert [DeadRun.parse(n).run_id for n in seen[-1]] == ["failing-run"]
        assert "run next," in path.read_text() and "run failing-run" not in path.read_text()
    assert lock_path(s).read_text() == ""


def test_dead_run_note_parsed() -> None:
    from binlake.lake.orphans import DeadRun

    d = DeadRun.parse("pid 12 on host-a, run 20261126T075500Z-210ccf, source db 1, "
                      "since 2026-11-26T07:55:00Z")
    assert d is not None and d.run_id == "20261126T075500Z-210ccf" and d.source == "db 1"
    assert d.since == 1795679700.0
    assert DeadRun.parse("garbage") is None
