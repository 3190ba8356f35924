"""The nightly DAG's load gets the Airflow AWS connection's credentials, region and
endpoint when it runs, and never logs them (docs/orchestration.md, "S3 credentials of the
load").

``binlake_nightly`` (plan -> anything_to_load -> load) under ``dag.test()`` in a subprocess
with a private AIRFLOW_HOME and *no* AWS variable or S3 endpoint in its environment: the only
credentials are the AWS connection's (login/password, ``endpoint_url`` and ``region_name``
extras, pointing at a moto S3 server holding the archive).  The load job is a stub
(``load_job``) that starts its session with ``build_session`` as the real job does and, on an
executor, reads the archived object with binlake's boto3 client; it reports what the driver
and the executor saw (booleans, never the values).  Then the whole output of the run (the task
logs, spark-submit's logged command line and output, the rendered template fields) must not
hold the access key id, the secret key or a mask of them on the command line.  ~1 min.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from .s3 import moto_s3, signing_moto

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.spark]

ROOT = Path(__file__).resolve().parents[1]
BUCKET = "cred-archive"
ACCESS_KEY = "AKIACONNTEST0000042"
SECRET_KEY = "conn-secret-Zq9wX7pL"
REGION = "eu-north-1"
NAME = "mariadb-bin.000001"

STUB_JOB = textwrap.dedent("""
    import json, os, sys

    from binlake.lake.daemon import use_installed

    use_installed()  # as jobs/load_binlogs.py, before PySpark's import
    import pyspark

    from binlake.config import load_settings
    from binlake.lake.spark import build_session

    KEYS = ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION",
            "BINLAKE_S3_ENDPOINT_URL"]
    settings = load_settings()
    spark = build_session(settings, app_name="binlake-credentials-stub")
    sc = spark.sparkContext
    uri = [a for a in sys.argv[1:] if a.startswith("s3://")][0]

    def on_executor(_):
        from binlake.binlog.source import parse_location, s3_client

        loc = parse_location(uri)
        body = s3_client().get_object(Bucket=loc.bucket, Key=loc.key)["Body"].read()
        import pyspark

        yield {"env": {k: os.environ.get(k) for k in KEYS}, "size": len(body),
               "zipped": ".zip" in pyspark.__file__}

    got = sc.parallelize([0], 1).mapPartitions(on_executor).collect()[0]
    driver = {k: os.environ.get(k) for k in KEYS}
    out = {
        "driver_has_all": all(driver.values()),
        "executor_env_conf": all(sc.getConf().get("spark.executorEnv." + k) == v
                                 for k, v in driver.items()),
        "python_workers_env": all(sc.environment.get(k) == v for k, v in driver.items()),
        "executor_saw_driver_env": got["env"] == driver,
        "executor_read_bytes": got["size"],
        "endpoint": driver["BINLAKE_S3_ENDPOINT_URL"], "region": driver["AWS_REGION"],
        "pyspark_zipped": [".zip" in pyspark.__file__, got["zipped"]],
        "local_fs": spark._jvm.org.apache.hadoop.fs.FileSystem.getLocal(
            sc._jsc.hadoopConfiguration()).getClass().getName(),
    }
    with open(os.environ["BINLAKE_TEST_OUT"], "w") as f:
        json.dump(out, f)
    print(json.dumps({"run_id": "stub", "source": settings.source, "files": [], **out}))
""")

DAG_SCRIPT = textwrap.dedent("""
    import json, sys
    from datetime import UTC, datetime

    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=sys.argv[1])
    dag = bag.dags["binlake_nightly"].partial_subset(task_ids=["load"], include_upstream=True,
                                                     include_downstream=False)
    for t in dag.tasks:
        t.retries = 0
    conf = {"files": [sys.argv[2]], "from_file": None, "to_file": None, "from_date": None,
            "to_date": None}
    dr = dag.test(logical_date=datetime.now(UTC), run_conf=conf)
    out = {"state": str(dr.state),
           "tasks": {ti.task_id: str(ti.state) for ti in dr.get_task_instances()}}
    try:
        from airflow.models.renderedtifields import RenderedTaskInstanceFields as R
        from airflow.utils.session import create_session

        with create_session() as s:
            out["rendered"] = [r.rendered_fields for r in s.query(R).all()]
    except Exception as exc:  # (only to show them: the output is searched as a whole)
        out["rendered"] = repr(exc)
    print("RESULT " + json.dumps(out, default=str))
""")


def test_load_gets_the_connections_credentials_and_never_logs_them(tmp_path: Path) -> None:
    pytest.importorskip("airflow.providers.apache.spark")
    pytest.importorskip("airflow.providers.amazon")
    from binlake.archive.objectstore import open_store

    stub = tmp_path / "stub_job.py"
    stub.write_text(STUB_JOB)
    binlog = tmp_path / NAME
    binlog.write_bytes(b"\xfebin" + b"x" * 1000)
    result_file = tmp_path / "stub.json"
    with moto_s3(BUCKET, {}) as endpoint:
        store = open_store(f"s3://{BUCKET}/binlogs", home=tmp_path, endpoint_url=endpoint)
        store.put("shop1", NAME, binlog, sha256=hashlib.sha256(binlog.read_bytes()).hexdigest(),
                  size=binlog.stat().st_size,
                  archived_at=datetime.now(UTC).isoformat(timespec="seconds"))
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("BINLAKE_", "AIRFLOW", "AWS_"))}
        env.update({
            "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
            "AWS_EC2_METADATA_DISABLED": "true",
            "AIRFLOW_HOME": str(tmp_path / "airflow"), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
            "AIRFLOW_CONN_BINLAKE_SPARK": '{"conn_type": "spark", "host": "local[1]"}',
            "AIRFLOW_CONN_BINLAKE_S3": json.dumps(
                {"conn_type": "aws", "login": ACCESS_KEY, "password": SECRET_KEY,
                 "extra": {"endpoint_url": endpoint, "region_name": REGION}}),
            "BINLAKE_HOME": str(tmp_path / "home"), "BINLAKE_SOURCE": "shop1",
            "BINLAKE_ARCHIVE_URI": f"s3://{BUCKET}/binlogs",
            "BINLAKE_AIRFLOW_S3_CONN_ID": "binlake_s3", "BINLAKE_LOAD_JOB": str(stub),
            "BINLAKE_SPARK_DRIVER_MEMORY": "1g", "BINLAKE_TEST_OUT": str(result_file)})
        res = subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"],
                             capture_output=True, text=True, env=env, check=False)
        assert res.returncode == 0, res.stderr[-3000:]
        res = subprocess.run([sys.executable, "-c", DAG_SCRIPT, str(ROOT / "dags"), NAME],
                             capture_output=True, text=True, env=env, check=False,
                             timeout=600)
    output = res.stdout + res.stderr
    line = [x for x in res.stdout.splitlines() if x.startswith("RESULT ")]
    assert line, output[-5000:]
    run: dict[str, Any] = json.loads(line[-1][len("RESULT "):])
    assert run["tasks"] == {"plan": "success", "anything_to_load": "success",
                            "load": "success"}, (run, output[-5000:])
    seen = json.loads(result_file.read_text())
    # the load's driver, on the connection's local master, has binlake's local file system
    # (docs/lake.md, "Local files without a chmod per file") when a JDK could build it
    from binlake.lake import jvm

    local_fs = seen.pop("local_fs")
    assert (local_fs == jvm.LOCAL_FS) == (jvm.local_fs_jar() is not None), local_fs
    assert seen == {"driver_has_all": True, "executor_env_conf": True,
                    "python_workers_env": True, "executor_saw_driver_env": True,
                    "executor_read_bytes": binlog.stat().st_size, "endpoint": endpoint,
                    "region": REGION,
                    # PySpark from the installed package's compiled files, not Spark's
                    # archive, in the driver and its worker (lake/daemon.py)
                    "pyspark_zipped": [False, False]}
    # never logged, nor in the rendered fields
    assert ACCESS_KEY not in output and SECRET_KEY not in output
    cmd = [x for x in output.splitlines() if "Spark-Submit cmd" in x]
    assert cmd, output[-5000:]
    # (the region may be there, as spark.executorEnv.AWS_REGION: not a secret)
    for secret_var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        assert secret_var not in cmd[0], cmd[0]
    assert "***" not in cmd[0], cmd[0]


def test_tasks_read_an_s3_warehouse_with_the_connections_credentials(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The nightly's in-process reads (plan, files gate, report: pyiceberg) of an ``s3://``
    warehouse see the connection's credentials while a task runs (``_aws_in_process``), and
    the task's environment is as before afterwards.  Checked with a real read: a table in an
    S3 warehouse on a moto server, read by ``orchestrate.loaded_files`` with no AWS variable
    in the environment but the connection's."""
    pytest.importorskip("airflow.providers.amazon")
    import importlib.util

    import pyarrow as pa

    from binlake.config import Settings
    from binlake.orchestrate import loaded_files

    spec = importlib.util.spec_from_file_location("nightly_dag", ROOT / "dags" /
                                                  "binlake_nightly.py")
    assert spec is not None and spec.loader is not None
    with signing_moto(tmp_path) as (endpoint, key, secret):
        import boto3

        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                     aws_access_key_id=key, aws_secret_access_key=secret
                     ).create_bucket(Bucket=BUCKET)
        for var in [k for k in os.environ if k.startswith("AWS_")]:
            monkeypatch.delenv(var)
        monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
        monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
        settings = Settings(home=str(tmp_path), source="shop1",
                            warehouse=f"s3://{BUCKET}/wh", s3_endpoint_url=endpoint,
                            airflow_s3_conn_id="wh_conn")
        from pyiceberg.catalog.sql import SqlCatalog

        cat = SqlCatalog("binlake", uri=settings.sqlalchemy_uri, warehouse=f"s3://{BUCKET}/wh",
                         **{"s3.endpoint": endpoint, "s3.access-key-id": key,
                            "s3.secret-access-key": secret, "s3.region": "us-east-1"})
        cat.create_namespace_if_not_exists(settings.namespace)
        rows = pa.table({"source": ["shop1"], "file": [NAME], "status": ["loaded"],
                         "sha256": ["ab" * 32]})
        cat.create_table(f"{settings.namespace}.files", schema=rows.schema).append(rows)
        # the keys are the connection's only: no AWS variable in this process
        monkeypatch.setenv("AIRFLOW_CONN_WH_CONN", json.dumps(
            {"conn_type": "aws", "login": key, "password": secret,
             "extra": {"endpoint_url": endpoint, "region_name": "us-east-1"}}))
        before = dict(os.environ)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        with pytest.raises(OSError):  # without the connection: no credentials, refused
            loaded_files(settings)
        with module._aws_in_process("wh_conn") as env:
            assert env["AWS_ACCESS_KEY_ID"] == os.environ["AWS_ACCESS_KEY_ID"] == key
            assert loaded_files(settings) == {NAME: "ab" * 32}
        assert dict(os.environ) == before
