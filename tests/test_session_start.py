"""``build_session``'s warm imports never run while PySpark forks the JVM.

PySpark starts the JVM with a ``preexec_fn``, so Python's fork hooks run in the parent:
logging's takes the logging lock, then the fork takes the global import lock.  A thread
importing at that moment could hold the import lock (setuptools' distutils shim imports
whole packages from a meta path finder, under it) while waiting for the logging lock: the
driver then hung before Spark started (seen once in a test run: the main thread in
``Popen._execute_child``, the warm-imports thread in ``logging._acquireLock``).  The warm
thread now starts after the fork (lake/spark.py, ``_WARM_AFTER_FORK``).

Each case runs in a fresh interpreter (the fork happens once per process); the check is
the threads alive at the moment of the fork, seen from a ``before`` fork hook."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark]

pytest.importorskip("pyspark")

_PROBE = """
import json, os, sys, threading
from binlake.config import load_settings
from binlake.lake import spark as S

at_fork = []
os.register_at_fork(before=lambda: at_fork.append(sorted(t.name for t in threading.enumerate())))
settings = load_settings()
spark = S.build_session(settings, master="local[1]", warm=("binlake.quality.suite",))
warm = [t for t in threading.enumerate() if t.name == "binlake-warm-imports"]
for t in warm:
    t.join(120)
print(json.dumps({"at_fork": at_fork, "warm_threads": len(warm),
                  "suite_imported": "binlake.quality.suite" in sys.modules}))
spark.stop()
"""


def test_warm_imports_start_after_the_jvm_fork(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BINLAKE_", "PYSPARK_"))}
    env["BINLAKE_HOME"] = str(tmp_path / "home")
    done = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["at_fork"], "the JVM was not forked from this process"
    assert all("binlake-warm-imports" not in names for names in out["at_fork"]), out
    # and the imports did run (in a thread started once the fork was done)
    assert out["warm_threads"] <= 1 and out["suite_imported"], out


def test_binlake_validate_imports_the_suite_while_the_jvm_starts(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``binlake validate`` gives build_session the suite's modules to import beside the
    JVM's start (Great Expectations: 5-6 s of imports), as the nightly DAG's validate step
    does, and only after its checks of the sources (a missing file is told at once)."""
    from binlake.cli import main
    from binlake.lake import spark as S

    seen: list[tuple[str, ...]] = []

    def fake_session(settings: object, **kw: object) -> None:
        seen.append(tuple(kw.get("warm") or ()))  # type: ignore[arg-type]
        raise S.SparkSetupError("stopped by the test")

    monkeypatch.setattr(S, "build_session", fake_session)
    monkeypatch.setenv("BINLAKE_HOME", str(tmp_path / "home"))
    binlog = tmp_path / "mariadb-bin.000001"
    assert main(["validate", str(binlog)]) == 2  # the source check: no Spark
    assert seen == []
    binlog.write_bytes(b"\xfebin")
    assert main(["validate", str(binlog)]) == 2  # Spark "did not start"
    assert len(seen) == 1 and "binlake.quality.suite" in seen[0], seen
    assert set(S.WARM_MODULES) <= set(seen[0])
