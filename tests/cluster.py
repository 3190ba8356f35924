"""A production-shaped stack on 127.0.0.1 for tests: a Spark standalone master and worker
from the ``pyspark`` wheel, and a private PostgreSQL server (Debian's) for the Iceberg JDBC
catalog.  Every process gets free ports and its own directories and is killed by ``stop()``
(and, should the test process die, by the kernel: PR_SET_PDEATHSIG).

Used by tests/test_cluster.py; infra/scale-out/README.md shows the same commands by hand.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from binlake_dev.mariadb import free_port


class StackError(RuntimeError):
    pass


def child_setup() -> None:  # pragma: no cover - runs in the child between fork and exec
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PDEATHSIG
    os.setsid()  # own process group: stop() kills the JVM and whatever it started


def killpg(proc: subprocess.Popen[Any], timeout: float = 15.0) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def get_json(url: str, timeout: float = 5.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read().decode())


# -- Spark standalone -----------------------------------------------------------------------

def spark_home() -> str:
    """SPARK_HOME of the installed pyspark wheel (it has bin/spark-class and the jars)."""
    import pyspark

    return os.path.dirname(os.path.abspath(pyspark.__file__))


class SparkStandalone:
    """``spark-class ...Master`` and one ``...Worker`` (``cores``, ``memory``) on 127.0.0.1.

    ``url``: the master (``spark://127.0.0.1:PORT``); ``master_ui`` / ``worker_ui``: their web
    UIs, whose ``/json/`` the tests read."""

    def __init__(self, base: Path, *, cores: int = 2, memory: str = "2g") -> None:
        self.base, self.cores, self.memory = base, cores, memory
        self.port, self.ui_port, self.worker_ui_port = free_port(), free_port(), free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.master_ui = f"http://127.0.0.1:{self.ui_port}"
        self.worker_ui = f"http://127.0.0.1:{self.worker_ui_port}"
        self.procs: list[subprocess.Popen[Any]] = []

    def env(self) -> dict[str, str]:
        return dict(os.environ, SPARK_HOME=spark_home(), SPARK_LOCAL_IP="127.0.0.1",
                    SPARK_NO_DAEMONIZE="1",
                    # executors start the same Python (binlake and its dependencies)
                    PYSPARK_PYTHON=sys.executable)

    def master_cmd(self) -> list[str]:
        return [os.path.join(spark_home(), "bin", "spark-class"),
                "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                "--port", str(self.port), "--webui-port", str(self.ui_port)]

    def worker_cmd(self) -> list[str]:
        return [os.path.join(spark_home(), "bin", "spark-class"),
                "org.apache.spark.deploy.worker.Worker", self.url, "--host", "127.0.0.1",
                "--cores", str(self.cores), "--memory", self.memory,
                "--webui-port", str(self.worker_ui_port),
                "--work-dir", str(self.base / "work")]

    def _spawn(self, cmd: list[str], log: str) -> subprocess.Popen[Any]:
        out = open(self.base / log, "wb")  # noqa: SIM115 - the child keeps it
        try:
            p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=self.env(),
                                 cwd=self.base, preexec_fn=child_setup)
        finally:
            out.close()
        self.procs.append(p)
        return p

    def log_tail(self, chars: int = 3000) -> str:
        parts = []
        for name in ("master.log", "worker.log"):
            f = self.base / name
            if f.exists():
                parts.append(f"--- {name}\n" + f.read_text(errors="replace")[-chars:])
        return "\n".join(parts)

    def start(self, timeout: float = 90.0) -> SparkStandalone:
        self.base.mkdir(parents=True, exist_ok=True)
        (self.base / "work").mkdir(exist_ok=True)
        try:
            self._spawn(self.master_cmd(), "master.log")
            self._wait(lambda: get_json(self.master_ui + "/json/").get("status") == "ALIVE",
                       timeout, "the Spark master")
            self._spawn(self.worker_cmd(), "worker.log")
            self._wait(lambda: any(w.get("state") == "ALIVE" for w in
                                   get_json(self.master_ui + "/json/").get("workers", [])),
                       timeout, "the Spark worker")
        except BaseException:
            self.stop()
            raise
        return self

    def _wait(self, ok: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self.procs):
                raise StackError(f"{what} exited:\n{self.log_tail()}")
            with contextlib.suppress(Exception):
                if ok():
                    return
            time.sleep(0.5)
        raise StackError(f"{what} not up after {timeout:.0f} s:\n{self.log_tail()}")

    def master_state(self) -> Any:
        return get_json(self.master_ui + "/json/")

    def worker_state(self) -> Any:
        return get_json(self.worker_ui + "/json/")

    def stop(self) -> None:
        for p in reversed(self.procs):  # the worker (and its executors) first
            killpg(p)
        self.procs.clear()


# -- PostgreSQL -----------------------------------------------------------------------------

def pg_bindir() -> str | None:
    """Debian's PostgreSQL server binaries (initdb, pg_ctl), newest version first."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    if found:
        return os.path.dirname(found[-1])
    initdb = shutil.which("initdb")
    return os.path.dirname(initdb) if initdb else None


class PostgresServer:
    """A private PostgreSQL cluster: ``initdb -A trust`` in its own directory, listening on
    127.0.0.1:``port`` only (its socket in its own directory too).  initdb and the server
    refuse to run as root: as root they run as the ``postgres`` user (``runuser``), in a
    directory that user owns (pytest's temp directories are private to root)."""

    def __init__(self) -> None:
        bindir = pg_bindir()
        if bindir is None:
            raise StackError("no PostgreSQL server: apt-get install postgresql")
        self.bindir = bindir
        self.port = free_port()
        self.base = Path(tempfile.mkdtemp(prefix="binlake-pg-"))
        self.datadir = self.base / "data"
        self.as_user: list[str] = []
        if os.getuid() == 0:
            self.as_user = ["runuser", "-u", "postgres", "--"]
            shutil.chown(self.base, "postgres", "postgres")
        self.started = False

    def _run(self, *args: str, timeout: float = 60.0) -> str:
        res = subprocess.run([*self.as_user, *args], capture_output=True, text=True,
                             timeout=timeout, check=False, cwd=self.base)
        if res.returncode != 0:
            raise StackError(f"{' '.join(args)} failed ({res.returncode}): "
                             f"{(res.stdout + res.stderr)[-3000:]}")
        return res.stdout

    def start(self) -> PostgresServer:
        try:
            self._run(f"{self.bindir}/initdb", "-D", str(self.datadir), "-A", "trust",
                      "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C.UTF-8")
            self._run(f"{self.bindir}/pg_ctl", "-D", str(self.datadir), "-l",
                      str(self.base / "server.log"), "-w", "-t", "60", "-o",
                      f"-h 127.0.0.1 -p {self.port} -k {self.base} -c fsync=off "
                      "-c full_page_writes=off -c shared_buffers=32MB", "start")
            self.started = True
        except BaseException:
            self.stop()
            raise
        return self

    def psql(self, sql: str, db: str = "postgres") -> str:
        return self._run(f"{self.bindir}/psql", "-h", "127.0.0.1", "-p", str(self.port),
                         "-U", "postgres", "-d", db, "-v", "ON_ERROR_STOP=1", "-Atc", sql)

    def stop(self) -> None:
        if self.started:
            with contextlib.suppress(Exception):
                self._run(f"{self.bindir}/pg_ctl", "-D", str(self.datadir), "-m", "immediate",
                          "-w", "-t", "30", "stop")
            self.started = False
        pid_file = self.datadir / "postmaster.pid"
        if pid_file.exists():  # pg_ctl could not stop it
            with contextlib.suppress(Exception):
                os.kill(int(pid_file.read_text().split()[0]), signal.SIGKILL)
        shutil.rmtree(self.base, ignore_errors=True)
