"""The Airflow DAGs end to end: dag.test() of binlake_archive and binlake_nightly against a real
MariaDB server and a moto S3 server on 127.0.0.1 (Spark local[1]).

One module-scoped pipeline runs the nights in order (each load is a spark-submit, ~1 min);
the tests assert on what each step left.  Airflow gets a private AIRFLOW_HOME (SQLite) set
before it is first imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from binlake_dev.mariadb import MariaDBServer

from .s3 import moto_s3

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.spark]

ROOT = Path(__file__).resolve().parents[1]
BUCKET = "binlog-archive"


def _airflow_env(home: Path) -> dict[str, str]:
    return {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
        "AIRFLOW__CORE__PARALLELISM": "2",
        "AIRFLOW_CONN_BINLAKE_SPARK": '{"conn_type": "spark", "host": "local[1]"}',
    }


@pytest.fixture(scope="module")
def airflow_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    import importlib.util

    if "airflow" in sys.modules:  # configured already (another AIRFLOW_HOME): cannot redirect
        pytest.skip("airflow was imported before the private AIRFLOW_HOME was set")
    if importlib.util.find_spec("airflow") is None:  # top level only: does not import it
        pytest.skip("apache-airflow is not installed")
    home = tmp_path_factory.mktemp("airflow")
    env = _airflow_env(home)
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    pytest.importorskip("airflow.providers.apache.spark")
    res = subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], capture_output=True,
                         text=True, env=dict(os.environ), check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    try:
        yield home
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _dagbag(airflow_home: Path) -> Any:
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(ROOT / "dags"))


def test_dags_import_without_errors(airflow_home: Path) -> None:
    bag = _dagbag(airflow_home)
    assert bag.import_errors == {}
    assert {"binlake_archive", "binlake_nightly", "binlake_maintain"} <= set(bag.dags)
    assert bag.dags["binlake_maintain"].max_active_runs == 1
    nightly = bag.dags["binlake_nightly"]
    assert nightly.max_active_runs == 1 and bag.dags["binlake_archive"].max_active_runs == 1
    assert {"files", "from_file", "to_file", "from_date", "to_date"} <= set(nightly.params)
    for dag in bag.dags.values():
        assert dag.doc_md and dag.tags
        for t in dag.tasks:
            assert t.retries >= 1, t.task_id
            assert t.doc_md, t.task_id
    outlets = {a.uri for a in nightly.get_task("publish").outlets}
    assert "iceberg://binlake/binlog/transactions" in outlets
    assert "iceberg://binlake/binlog/xa_pending" in outlets


def test_dags_pass_airflow_ruff_rules() -> None:
    ruff = Path(sys.executable).with_name("ruff")
    if not ruff.exists():
        pytest.skip("ruff is not installed next to the interpreter")
    res = subprocess.run([str(ruff), "check", "--select", "AIR,E,F,W,I,B,UP",
                          str(ROOT / "dags")], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout


# -- the pipeline ---------------------------------------------------------------------------

def _tables(settings: Any) -> dict[str, list[dict[str, Any]]]:
    from binlake.lake.spark import pyiceberg_catalog

    cat = pyiceberg_catalog(settings)
    out = {}
    for name in ("files", "transactions", "row_changes", "xa_prepares", "xa_pending"):
        rows = cat.load_table(f"binlog.{name}").scan().to_arrow().to_pylist()
        if name == "files":  # a reload refreshes these two
            rows = [{k: v for k, v in r.items() if k not in ("run_id", "loaded_at")}
                    for r in rows]
        out[name] = sorted(rows, key=lambda r: repr(sorted(r.items(), key=lambda kv: kv[0])))
    return out


def _snapshots(settings: Any) -> dict[str, int | None]:
    from binlake.lake.spark import pyiceberg_catalog

    cat = pyiceberg_catalog(settings)
    return {t: cat.load_table(f"binlog.{t}").metadata.current_snapshot_id
            for t in ("files", "transactions", "row_changes", "xa_prepares", "xa_pending")}


def _data_files(settings: Any) -> dict[str, int]:
    from binlake.lake.spark import pyiceberg_catalog

    cat = pyiceberg_catalog(settings)
    return {t: len(cat.load_table(f"binlog.{t}").inspect.data_files())
            for t in ("transactions", "row_changes", "stream_facts")}


class Pipeline:
    def __init__(self, bag: Any, srv: MariaDBServer, settings: Any) -> None:
        self.bag, self.srv, self.settings = bag, srv, settings
        self.nights = 0
        self.runs: dict[str, Any] = {}

    def archive(self) -> Any:
        return self.bag.dags["binlake_archive"].test()

    def night(self, label: str, conf: dict[str, Any] | None = None) -> Any:
        self.nights += 1
        when = datetime.now(UTC) + timedelta(days=1 + self.nights)
        # Always the full conf: in-process dag.test() keeps an earlier run's conf in the
        # DAG's params otherwise (a scheduler-run DAG gets its params per run).
        full = {"files": [], "from_file": None, "to_file": None, "from_date": None,
                "to_date": None, **(conf or {})}
        dr = self.bag.dags["binlake_nightly"].test(logical_date=when, run_conf=full)
        states = {ti.task_id: ti.state for ti in dr.get_task_instances()}
        self.runs[label] = {"state": dr.state, "tasks": states, "tables": _tables(self.settings),
                            "snapshots": _snapshots(self.settings)}
        return self.runs[label]


@pytest.fixture(scope="module")
def pipeline(airflow_home: Path, tmp_path_factory: pytest.TempPathFactory,
             mariadb_template: Path) -> Iterator[Pipeline]:
    from binlake.config import load_settings

    from .servers import start_server

    home = tmp_path_factory.mktemp("binlake-home")
    srv = start_server(tmp_path_factory.mktemp("dag-db"), mariadb_template)
    with moto_s3(BUCKET, {}) as endpoint, pytest.MonkeyPatch.context() as mp:
        env = {"BINLAKE_HOME": str(home), "BINLAKE_ARCHIVE_SOURCE_DIR": str(srv.binlog_dir),
               "BINLAKE_ARCHIVE_URI": f"s3://{BUCKET}/binlogs", "BINLAKE_SOURCE": "shop1",
               "BINLAKE_SPARK_MASTER": "local[1]", "BINLAKE_SPARK_DRIVER_MEMORY": "1g",
               "BINLAKE_AIRFLOW_S3_CONN_ID": "binlake_s3",
               "AIRFLOW_CONN_BINLAKE_S3": json.dumps(
                   {"conn_type": "aws", "login": "testing", "password": "testing",
                    "extra": {"endpoint_url": endpoint, "region_name": "us-east-1"}})}
        for k, v in env.items():
            mp.setenv(k, v)
        settings = load_settings()
        p = Pipeline(_dagbag(airflow_home), srv, settings)
        try:
            yield p
        finally:
            srv.stop()


@pytest.fixture(scope="module")
def nights(pipeline: Pipeline) -> Pipeline:
    """Run the whole story once: five nights and the archive runs between them."""
    p, srv = pipeline, pipeline.srv
    srv.execute(["CREATE DATABASE shop",
                 "CREATE TABLE shop.orders (id INT PRIMARY KEY, amount DECIMAL(10,2))",
                 "INSERT INTO shop.orders VALUES (1, 10.00), (2, 20.00)"])
    xa = srv.connect()
    with xa.cursor() as cur:  # prepared before the first night, committed after it
        cur.execute("XA START 'night-xa'")
        cur.execute("INSERT INTO shop.orders VALUES (3, 30.00)")
        cur.execute("XA END 'night-xa'")
        cur.execute("XA PREPARE 'night-xa'")
    srv.flush_binary_logs()
    srv.execute("UPDATE shop.orders SET amount = 11.00 WHERE id = 1")
    srv.flush_binary_logs()
    p.runs["archive1"] = p.archive().state
    p.runs["closed1"] = [f.name for f in srv.closed_binlog_files()]
    p.night("n1")
    p.runs["archive2"] = p.archive().state  # nothing new on the server
    p.night("n2")
    with xa.cursor() as cur:
        cur.execute("XA COMMIT 'night-xa'")
    xa.close()
    srv.execute("DELETE FROM shop.orders WHERE id = 2")
    srv.flush_binary_logs()
    p.runs["archive3"] = p.archive().state
    p.runs["closed3"] = [f.name for f in srv.closed_binlog_files()]
    p.night("n3")
    names = p.runs["closed3"]
    p.night("backfill", {"from_file": names[0], "to_file": names[-1]})
    # the weekly upkeep between two nights: compaction and expiry change no row
    before = {"tables": _tables(p.settings), "data_files": _data_files(p.settings)}
    dr = p.bag.dags["binlake_maintain"].test()
    p.runs["maintain"] = {"state": dr.state, "before": before, "tables": _tables(p.settings),
                          "data_files": _data_files(p.settings)}
    # a corrupt file: one flipped byte inside a rows event of a closed file
    srv.execute("INSERT INTO shop.orders VALUES (4, 40.00)")
    srv.flush_binary_logs()
    bad = srv.closed_binlog_files()[-1]
    raw = bytearray(bad.read_bytes())
    raw[len(raw) - 120] ^= 0xFF
    bad.write_bytes(bytes(raw))
    p.runs["bad"] = bad.name
    p.runs["archive4"] = p.archive().state
    p.night("corrupt")
    return p


def _s3_names(p: Pipeline) -> list[str]:
    from binlake.archive.objectstore import store_for

    return [o.name for o in store_for(p.settings).list("shop1")]


def test_first_run_archives_and_loads(nights: Pipeline) -> None:
    n1 = nights.runs["n1"]
    assert nights.runs["archive1"] == "success"
    assert n1["state"] == "success", n1["tasks"]
    files = {f["file"]: f for f in nights.runs["n1"]["tables"]["files"]}
    assert sorted(files) == nights.runs["closed1"]
    assert all(f["status"] == "loaded" and f["source"] == "shop1" for f in files.values())
    pending = n1["tables"]["xa_pending"]
    assert len(pending) == 1  # the XA prepared before the night, not committed yet
    assert {"id": 1} in [json.loads(r["pk"]) for r in n1["tables"]["row_changes"]]
    assert {"id": 3} not in [json.loads(r["pk"]) for r in n1["tables"]["row_changes"]]


def test_second_run_with_nothing_new_changes_nothing(nights: Pipeline) -> None:
    n1, n2 = nights.runs["n1"], nights.runs["n2"]
    assert nights.runs["archive2"] == "success"
    assert n2["state"] == "success", n2["tasks"]
    assert n2["tasks"]["load"] == "skipped" and n2["tasks"]["publish"] == "skipped"
    assert n2["tasks"]["report"] == "success"
    assert n2["snapshots"] == n1["snapshots"]


def test_new_files_and_the_xa_commit_arrive_in_the_next_night(nights: Pipeline) -> None:
    n3 = nights.runs["n3"]
    assert n3["state"] == "success", n3["tasks"]
    assert sorted(f["file"] for f in n3["tables"]["files"]) == nights.runs["closed3"]
    assert n3["tables"]["xa_pending"] == []
    xa = [t for t in n3["tables"]["transactions"] if t["kind"] == "xa"]
    assert len(xa) == 1 and xa[0]["status"] == "xa_committed"
    assert xa[0]["prepare_file"] in nights.runs["closed1"]
    assert xa[0]["end_file"] not in nights.runs["closed1"]  # landed in the second night
    assert any(json.loads(r["pk"]) == {"id": 3} and r["op"] == "insert"
               for r in n3["tables"]["row_changes"])


def test_backfill_over_loaded_range_leaves_tables_identical(nights: Pipeline) -> None:
    bf = nights.runs["backfill"]
    assert bf["state"] == "success", bf["tasks"]
    assert bf["tasks"]["load"] == "success"
    for table in ("transactions", "row_changes", "xa_prepares", "xa_pending", "files"):
        assert bf["tables"][table] == nights.runs["n3"]["tables"][table], table


def test_corrupt_file_fails_validation_and_nothing_is_published(nights: Pipeline) -> None:
    c, bad = nights.runs["corrupt"], nights.runs["bad"]
    assert bad in _s3_names(nights)  # archived (the header is fine)
    assert c["state"] == "failed", (c["tasks"], nights.runs["archive4"])
    assert c["tasks"]["load"] == "success" and c["tasks"]["validate"] == "failed"
    assert c["tasks"]["publish"] != "success"
    assert not any(r["file"] == bad for r in c["tables"]["row_changes"])
    assert not any(t["end_file"] == bad for t in c["tables"]["transactions"])
    assert all(f["status"] != "loaded" for f in c["tables"]["files"] if f["file"] == bad)


def test_weekly_maintenance_keeps_every_row(nights: Pipeline) -> None:
    m = nights.runs["maintain"]
    assert m["state"] == "success"
    assert m["tables"] == m["before"]["tables"]
    # four loads (n1, n3, the backfill's reload) each left data files: joined
    before, after = m["before"]["data_files"], m["data_files"]
    assert all(after[t] < before[t] for t in before), (before, after)


def test_archive_keys_and_metadata_on_s3(nights: Pipeline) -> None:
    from binlake.archive.objectstore import recorded_sha256, sha256_file

    names = _s3_names(nights)
    current = nights.srv.current_binlog_file()
    assert current is not None and current.name not in names  # never the file being written
    for f in nights.srv.closed_binlog_files():
        if f.name != nights.runs["bad"]:
            assert recorded_sha256(f"s3://{BUCKET}/binlogs/shop1/{f.name}") == \
                sha256_file(f)[0]


def test_great_expectations_suite_ran(nights: Pipeline) -> None:
    assert nights.runs["n3"]["tasks"]["validate"] == "success"
    assert nights.runs["corrupt"]["tasks"]["validate"] == "failed"
