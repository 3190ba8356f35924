"""The Airflow path a user clicks through: the demo's run dates, infra/airflow.sh (ports,
stopping it), the load task's log.

Airflow is only imported in subprocesses here (tests/test_dags.py needs to be the first to
import it in the test process, with its private AIRFLOW_HOME).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from binlake import orchestrate as O
from binlake.archive.objectstore import LocalStore, sha256_file
from binlake.config import load_settings

ROOT = Path(__file__).resolve().parents[1]
AIRFLOW_SH = ROOT / "infra" / "airflow.sh"


def _demo() -> Any:
    spec = importlib.util.spec_from_file_location("binlake_demo", ROOT / "infra" / "demo.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# -- (a) the demo's nightly run is not dated in the future ----------------------------------

def test_demo_nightly_run_has_no_future_logical_date() -> None:
    before = datetime.now(UTC)
    run = _demo().nightly_run()
    assert before <= run["logical_date"] <= datetime.now(UTC)
    assert set(run["run_conf"]) == {"files", "from_file", "to_file", "from_date", "to_date"}


def test_demo_nightly_run_loads_what_was_just_archived(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    now = datetime(2026, 11, 20, 15, 0, tzinfo=UTC)
    store = LocalStore(tmp_path / "home" / "archive")
    for name, at in {"mariadb-bin.000001": "2026-11-18T10:00:00+00:00",
                     "mariadb-bin.000002": "2026-11-20T14:59:00+00:00"}.items():  # just now
        f = tmp_path / name
        f.write_bytes(name.encode())
        sha, size = sha256_file(f)
        store.put("demo", name, f, sha256=sha, size=size, archived_at=at)
    monkeypatch.setenv("BINLAKE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BINLAKE_SOURCE", "demo")
    run = _demo().nightly_run(now)
    assert run["logical_date"] == now
    p = O.plan(load_settings(), run_id="manual__x", params=run["run_conf"])
    assert p["names"] == ["mariadb-bin.000001", "mariadb-bin.000002"]
    # what the run's data interval alone would give (the last complete day before it,
    # dag.test's infer_manual_data_interval): not the file archived a minute ago
    interval = O.plan(load_settings(), run_id="manual__x",
                      interval_start="2026-11-19T02:00:00+00:00",
                      interval_end="2026-11-20T02:00:00+00:00")
    assert "mariadb-bin.000002" not in interval["names"]


# -- (b) the API port and the log servers' ports --------------------------------------------

def _run_sh(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(AIRFLOW_SH)], capture_output=True, text=True,
                          timeout=60, env={**os.environ, **env}, check=False)


@pytest.mark.parametrize("env, var", [
    ({"AIRFLOW_PORT": "8793"}, "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT"),
    ({"AIRFLOW_PORT": "8794"}, "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT"),
    ({"AIRFLOW_PORT": "9100", "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": "9100"},
     "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT"),
])
def test_airflow_sh_refuses_a_log_server_port(env: dict[str, str], var: str) -> None:
    clean = {"AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": "8793",
             "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": "8794"}
    res = _run_sh({**clean, **env})
    assert res.returncode == 2, res.stderr[-2000:]
    assert var in res.stderr and "choose another AIRFLOW_PORT" in res.stderr
    assert "setup:" not in res.stderr  # refused before anything was done


def test_airflow_sh_examples_use_a_free_port() -> None:
    text = AIRFLOW_SH.read_text()
    ports = re.findall(r"AIRFLOW_PORT=(\d+) bash", text)
    assert ports and not {"8793", "8794"} & set(ports)


# -- (c) SIGTERM stops everything -----------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _procs_with(marker: str) -> list[int]:
    """Processes whose environment holds ``marker`` (this test's private AIRFLOW_HOME)."""
    out = []
    needle = marker.encode()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            env = (d / "environ").read_bytes()
        except OSError:
            continue
        if needle in env.split(b"\0"):
            out.append(int(d.name))
    return out


def _api_answers(port: int) -> bool:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/version", timeout=2)
    except urllib.error.HTTPError:
        return True  # it answers
    except OSError:
        return False
    return True


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_airflow_sh_sigterm_stops_its_whole_process_tree(tmp_path: Path) -> None:
    if importlib.util.find_spec("airflow") is None:
        pytest.skip("apache-airflow is not installed")
    port = _free_port()
    home = tmp_path / "airflow"
    marker = f"AIRFLOW_HOME={home}"
    env = {**os.environ, "AIRFLOW_HOME": str(home), "BINLAKE_HOME": str(tmp_path / "lake"),
           "AIRFLOW_PORT": str(port),
           "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(_free_port()),
           "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(_free_port())}
    out = (tmp_path / "airflow.out").open("w")
    script = subprocess.Popen(["bash", str(AIRFLOW_SH)], stdout=out, stderr=subprocess.STDOUT,
                              env=env)
    try:
        deadline = time.monotonic() + 180
        while not _api_answers(port):
            assert script.poll() is None, (tmp_path / "airflow.out").read_text()[-3000:]
            assert time.monotonic() < deadline, "API not up in 180 s:\n" + \
                (tmp_path / "airflow.out").read_text()[-3000:]
            time.sleep(1)
        started = _procs_with(marker)
        assert len(started) >= 4, started  # standalone, scheduler, api server, ...
        script.send_signal(signal.SIGTERM)
        assert script.wait(timeout=40) == 143
        deadline = time.monotonic() + 30
        while (left := _procs_with(marker)) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert left == [], [Path(f"/proc/{p}/cmdline").read_bytes() for p in left]
    finally:
        if script.poll() is None:
            script.kill()
        for pid in _procs_with(marker):  # only this test's processes
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        out.close()


# -- (d) the load task's log: a human summary, the JSON in XCom ----------------------------

SUMMARY = {"run_id": "af_manual_1", "source": "demo", "branch": "af_manual_1",
           "files": [{"file": "mariadb-bin.000001", "status": "loaded", "error": None}],
           "transactions": {"committed": 3}, "rows": {"row_changes": 5}, "pending": [],
           "findings": [], "seconds": 4.2, "bytes": 2_000_000, "ranges": 1, "typed": {},
           "timings": {"decode": 1.5}, "xa_decided_late": [], "some_future_key": 1}


def test_load_summary_line_is_recognised() -> None:
    line = json.dumps(SUMMARY) + "\n"
    assert O.load_summary_from_line(line) == SUMMARY
    assert O.load_summary_from_line("26/11/20 INFO SparkContext: Running Spark") is None
    assert O.load_summary_from_line('{"not": "a summary"}') is None
    assert O.load_summary_from_line("{broken") is None
    text = O.load_summary_text(SUMMARY)
    assert text.startswith("binlake load af_manual_1 (source demo): 1 file(s)")
    assert "loaded   mariadb-bin.000001" in text and "committed 3" in text


def test_load_task_logs_the_summary_and_returns_the_json(tmp_path: Path) -> None:
    if importlib.util.find_spec("airflow") is None:
        pytest.skip("apache-airflow is not installed")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "spark-submit"
    fake.write_text("#!/bin/sh\necho '26/11/20 INFO SparkContext: Running Spark version'\n"
                    f"echo '{json.dumps(SUMMARY)}'\n")
    fake.chmod(0o755)
    code = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(ROOT / 'dags')!r})
        import binlake_nightly
        op = binlake_nightly.LoadOperator(task_id="load", conn_id="binlake_spark",
                                          application="app.py", application_args=["f1"])
        print("RESULT " + json.dumps(op.execute({{}})), flush=True)
    """)
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path / "airflow"),
           "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
           "AIRFLOW_CONN_BINLAKE_SPARK": '{"conn_type": "spark", "host": "local[1]"}',
           "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=180, check=False)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    result = next(ln for ln in res.stdout.splitlines() if ln.startswith("RESULT "))
    assert json.loads(result[len("RESULT "):]) == SUMMARY  # the XCom return_value
    logged = out.replace(result, "")
    assert "Running Spark version" in logged  # spark-submit's other output is still logged
    assert "binlake load af_manual_1 (source demo): 1 file(s)" in logged
    assert '"xa_decided_late"' not in logged  # the JSON line is not in the log
