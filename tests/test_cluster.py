"""binlake on a cluster, end to end on one machine: a Spark standalone master and one worker
(from the pyspark wheel), a PostgreSQL Iceberg JDBC catalog (Debian's server, private
datadir on 127.0.0.1), moto S3 for the archive and the warehouse, and two live MariaDB
sources in one configuration (``[[binlake.sources]]``).  Per source, the nightly as the DAG runs it:
``binlake archive`` -> ``orchestrate.plan`` -> ``spark-submit --master spark://...
jobs/load_audited.py`` with the plan's jars/conf/env (what ``SparkSubmitOperator`` runs) ->
``orchestrate.validate`` (files gate + Great Expectations) -> ``orchestrate.publish``.

Checked: every lake table equals a ``local[2]`` load (``binlake load``) of the same archived
files into a separate lake (SQLite catalog), cell by cell, run columns aside; the Spark
master's and worker's JSON APIs and each load's event log show the load's tasks ran in
executors on the worker.

infra/scale-out/README.md is the runbook of the same steps: it mirrors this test's commands
(keep the two in step).  The warehouse is on the same moto S3 (``WAREHOUSE`` below); the
reference lake is a local directory.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from .cluster import PostgresServer, SparkStandalone, StackError, child_setup, killpg, pg_bindir
from .s3 import moto_s3

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.spark,
              pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[1]
BUCKET = "binlog-archive"
# two sources, each with XA across rotations; shop1 leaves an XA prepared (pending)
SOURCES = {"shop1": ("xa_across_rotations", "interleaved_xa"),
           "crm": ("xa_rollback_later_file", "one_phase")}
TIMINGS: dict[str, float] = {}


def _bin(name: str) -> str:
    return os.path.join(os.path.dirname(sys.executable), name)


def _run(cmd: list[str], *, env: dict[str, str] | None = None, timeout: float = 300,
         what: str = "") -> subprocess.CompletedProcess[str]:
    t0 = time.monotonic()
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout,
                         check=False)
    TIMINGS[what or cmd[0]] = time.monotonic() - t0
    assert res.returncode == 0, (f"{' '.join(cmd)}: exit {res.returncode}\n"
                                 f"{res.stdout[-3000:]}\n{res.stderr[-5000:]}")
    return res


def spark_submit_command(master: str, plan: dict[str, Any],
                         extra_conf: dict[str, str] | None = None) -> list[str]:
    """The command SparkSubmitOperator builds from the plan task's XCom (the DAG's load
    task: application, load_args, jars, spark_conf; its env is ``spark_env``)."""
    cmd = [_bin("spark-submit"), "--master", master, "--deploy-mode", "client",
           "--name", "binlake-load"]
    for k, v in {**plan["spark_conf"], **(extra_conf or {})}.items():
        cmd += ["--conf", f"{k}={v}"]
    if plan["jars"]:
        cmd += ["--jars", plan["jars"]]
    return [*cmd, plan["application"], *plan["load_args"]]


REFERENCE = """
import sys
from binlake.config import load_settings
from binlake.lake.job import run_load
from binlake.lake.spark import build_session

settings = load_settings(sys.argv[1])
spark = build_session(settings, app_name="binlake-reference", master="local[2]")
for arg in sys.argv[2:]:
    name, files = arg.split("=", 1)
    summary = run_load(spark, settings.for_source(name), files.split(","), run_id=f"ref_{name}")
    assert not summary.failed, summary.failed
spark.stop()
"""


def _config(path: Path, **values: Any) -> Path:
    lines = ["[binlake]"]
    sources = values.pop("sources")
    lines += [f"{k} = {json.dumps(v)}" for k, v in values.items()]
    for name, srcdir in sources.items():
        lines += ["", "[[binlake.sources]]", f'name = "{name}"',
                  f'archive_source_dir = "{srcdir}"']
    path.write_text("\n".join(lines) + "\n")
    return path


def _need(ok: bool, why: str) -> None:
    if not ok:
        pytest.skip(why)


class Night:
    """What the pipeline left, for the tests."""

    def __init__(self) -> None:
        self.settings: Any = None
        self.ref_settings: Any = None
        self.plans: dict[str, dict[str, Any]] = {}
        self.summaries: dict[str, dict[str, Any]] = {}
        self.validations: dict[str, dict[str, Any]] = {}
        self.published: dict[str, dict[str, Any]] = {}
        self.apps: dict[str, str] = {}  # source -> Spark application id of its load
        self.tasks_on: dict[str, dict[str, int]] = {}  # source -> executor id -> tasks
        self.master_json: dict[str, Any] = {}
        self.worker_json: dict[str, Any] = {}
        self.archive_reports: dict[str, dict[str, Any]] = {}


def _event_log_tasks(logdir: Path) -> tuple[str, dict[str, int]]:
    """The application id of the one event log in ``logdir`` and its finished tasks per
    executor id."""
    logs = [p for p in logdir.iterdir() if not p.name.startswith(".")]
    assert len(logs) == 1, logs
    per: dict[str, int] = {}
    app_id = ""
    for line in logs[0].read_text().splitlines():
        ev = json.loads(line)
        if ev.get("Event") == "SparkListenerApplicationStart":
            app_id = ev.get("App ID", "")
        elif ev.get("Event") == "SparkListenerTaskEnd":
            ex = ev["Task Info"]["Executor ID"]
            per[ex] = per.get(ex, 0) + 1
    return app_id or logs[0].name, per


@pytest.fixture(scope="module")
def night(tmp_path_factory: pytest.TempPathFactory, mariadb_template: Path
          ) -> Iterator[Night]:
    pytest.importorskip("pyspark")
    pytest.importorskip("moto")
    pytest.importorskip("psycopg2")
    _need(shutil.which("java") is not None, "no java")
    _need(pg_bindir() is not None, "no PostgreSQL server (apt-get install postgresql)")
    from binlake.lake.spark import postgresql_jdbc_jar

    _need(postgresql_jdbc_jar() is not None, "no PostgreSQL JDBC driver "
          "(apt-get install libpostgresql-jdbc-java)")
    if os.getuid() == 0:
        import pwd

        try:
            pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root without a postgres user to run PostgreSQL as")

    from binlake import orchestrate as O
    from binlake.config import load_settings

    from . import txn_workloads
    from .servers import start_server

    base = tmp_path_factory.mktemp("cluster")
    out = Night()
    servers: list[Any] = []
    pg: PostgresServer | None = None
    spark: SparkStandalone | None = None
    procs: list[subprocess.Popen[Any]] = []
    t_all = time.monotonic()
    with pytest.MonkeyPatch.context() as mp, moto_s3(BUCKET, {}) as endpoint:
        for k in list(os.environ):
            if k.startswith("BINLAKE_") and k != "BINLAKE_S3_ENDPOINT_URL":
                mp.delenv(k)
        try:
            # -- the stack -----------------------------------------------------------------
            t0 = time.monotonic()
            pg = PostgresServer().start()
            pg.psql("CREATE ROLE binlake LOGIN")
            pg.psql("CREATE DATABASE lake OWNER binlake")
            spark = SparkStandalone(base / "spark", cores=2, memory="2g").start()
            TIMINGS["stack"] = time.monotonic() - t0

            # -- two live sources with a workload each --------------------------------------
            t0 = time.monotonic()
            srcdirs = {}
            for name, scenarios in SOURCES.items():
                srv = start_server(base / f"mariadb-{name}", mariadb_template)
                servers.append(srv)
                txn_workloads.run_all(srv, scenarios)
                srcdirs[name] = str(srv.binlog_dir)
            TIMINGS["workloads"] = time.monotonic() - t0

            # -- configuration (infra/scale-out/binlake.toml, with this machine's values) ---
            # the warehouse on S3 too: Spark's catalog writes it through binlake's JDK-only
            # S3 FileIO (no AWS bundle offline: docs/lake.md "Where the tables live") on
            # the driver and the worker's executors; executors' data files through pyarrow
            WAREHOUSE = f"s3://{BUCKET}/warehouse"
            cfg = _config(
                base / "binlake.toml", home=str(base / "home"),
                archive_uri=f"s3://{BUCKET}/binlogs", s3_endpoint_url=endpoint,
                catalog_type="jdbc",
                catalog_uri=f"postgresql+psycopg2://binlake@127.0.0.1:{pg.port}/lake",
                catalog_user="binlake", warehouse=WAREHOUSE, spark_driver_memory="1g",
                sources=srcdirs)
            ref_cfg = _config(
                base / "reference.toml", home=str(base / "ref"),
                archive_uri=f"s3://{BUCKET}/binlogs", s3_endpoint_url=endpoint,
                spark_master="local[2]", spark_driver_memory="1g", sources=srcdirs)
            mp.setenv("BINLAKE_CONFIG", str(cfg))
            env = dict(os.environ)
            out.settings = load_settings()
            out.ref_settings = load_settings(ref_cfg)

            # -- archive (the binlake_archive__<name> DAGs' task) ---------------------------
            for name in SOURCES:
                res = _run([_bin("binlake"), "archive", "--config", str(cfg),
                            "--source-name", name, "--json"], env=env,
                           what=f"archive {name}")
                out.archive_reports[name] = json.loads(res.stdout)

            # -- the reference: the same archived files, local[2], its own lake (SQLite
            # catalog): `binlake load --master local[2] --source-name S FILES...` per source,
            # here in one JVM for both, and meanwhile the nightlies run (a shorter test) ----
            ref_log = open(base / "reference.log", "w+")  # noqa: SIM115
            reference = subprocess.Popen(
                [sys.executable, "-c", REFERENCE, str(ref_cfg), *(
                    f"{n}={','.join(a['uri'] for a in out.archive_reports[n]['archived'])}"
                    for n in SOURCES)],
                stdout=ref_log, stderr=subprocess.STDOUT, env=env, preexec_fn=child_setup)
            procs.append(reference)

            for name in SOURCES:
                settings = out.settings.for_source(name)
                # -- the nightly (binlake_nightly__<name>): plan ----------------------------
                now = datetime.now(UTC)
                plan = O.plan(settings, run_id=f"scheduled__{now:%Y-%m-%dT02:00:00+00:00}",
                              interval_start=(now - timedelta(days=1)).isoformat(),
                              interval_end=(now + timedelta(minutes=1)).isoformat())
                out.plans[name] = plan
                # -- load: spark-submit on the cluster -------------------------------------
                events = base / f"events-{name}"
                events.mkdir()
                cmd = spark_submit_command(spark.url, plan, {
                    "spark.eventLog.enabled": "true", "spark.eventLog.dir": events.as_uri()})
                res = _run(cmd, env={**env, **plan["spark_env"]}, timeout=480,
                           what=f"load {name}")
                summary = next(s for s in map(O.load_summary_from_line,
                                              reversed(res.stdout.splitlines())) if s)
                out.summaries[name] = summary
                out.apps[name], out.tasks_on[name] = _event_log_tasks(events)
                # -- validate, publish -----------------------------------------------------
                t0 = time.monotonic()
                out.validations[name] = O.validate(settings, plan)
                TIMINGS[f"validate {name}"] = time.monotonic() - t0
                t0 = time.monotonic()
                out.published[name] = O.publish(settings, plan)
                TIMINGS[f"publish {name}"] = time.monotonic() - t0
            out.master_json = spark.master_state()
            out.worker_json = spark.worker_state()

            t0 = time.monotonic()
            rc = reference.wait(timeout=480)
            TIMINGS["reference (after the nightlies)"] = time.monotonic() - t0
            ref_log.seek(0)
            assert rc == 0, f"reference load: exit {rc}\n{ref_log.read()[-5000:]}"
            TIMINGS["all"] = time.monotonic() - t_all
            print("timings: " + ", ".join(f"{k} {v:.0f}s" for k, v in TIMINGS.items()))
            yield out
        except StackError as exc:
            pytest.fail(str(exc))
        finally:
            for p in procs:
                killpg(p)
            if spark is not None:
                spark.stop()
            if pg is not None:
                pg.stop()
            for srv in servers:
                srv.stop(timeout=30)


def test_both_sources_archived_loaded_validated_published(night: Night) -> None:
    for name in SOURCES:
        rep = night.archive_reports[name]
        plan = night.plans[name]
        assert [a["name"] for a in rep["archived"]] == plan["names"], name
        assert len(plan["names"]) >= 3, plan["names"]  # rotations
        assert all(u.startswith(f"s3://{BUCKET}/binlogs/{name}/") for u in plan["files"])
        summary = night.summaries[name]
        assert summary["source"] == name and not summary.get("failed"), summary
        assert night.validations[name]["success"], night.validations[name]
        assert night.validations[name]["files_gate"] == "passed"
        assert night.published[name]["published"]
    from binlake import orchestrate as O

    for name in SOURCES:  # what the DAG's report task reads from main
        rep = O.report(night.settings.for_source(name), night.plans[name])
        assert [f["status"] for f in rep["files"]] == ["loaded"] * len(night.plans[name]["names"])
        pending = [p["xa_gtrid"] for p in rep["pending_xa"]]
        assert (len(pending) == 1) == (name == "shop1"), rep["pending_xa"]


def test_tables_equal_a_local_run(night: Night) -> None:
    from binlake.lake.spark import pyiceberg_catalog

    from .lake_dump import diff_lakes, dump

    cat = pyiceberg_catalog(night.settings)
    for ident in cat.list_tables(night.settings.namespace):  # the tables live on S3
        location = cat.load_table(ident).metadata.location
        assert location.startswith(f"s3://{BUCKET}/warehouse/"), (ident, location)
    cluster = dump(None, cat=cat)
    local = dump(None, cat=pyiceberg_catalog(night.ref_settings))
    # validation results are the nightly's own (appended on main by validate)
    vr = cluster.pop("validation_results")
    assert {dict(r)["source"] for r in vr} == set(SOURCES)
    assert "validation_results" not in local
    assert set(cluster) == set(local)
    assert {"files", "transactions", "row_changes", "xa_prepares", "xa_pending"} <= set(cluster)
    assert len(cluster) > 7, sorted(cluster)  # the typed tables of the sources' tables too
    assert diff_lakes(cluster, local) == ""
    files = {dict(r)["source"] for r in cluster["files"]}
    assert files == set(SOURCES)


def test_loads_ran_on_the_worker(night: Night) -> None:
    """The master lists each load as a finished application that had cores; the worker ran
    executors for it; every task of the load ran in an executor (none in the driver)."""
    apps = {a["id"]: a for a in night.master_json["completedapps"]}
    worker = night.worker_json
    assert worker["cores"] >= 1
    ran = {e["appid"]: e for e in worker["finishedexecutors"]}
    for name in SOURCES:
        app = night.apps[name]
        assert app in apps, (app, sorted(apps))
        assert apps[app]["cores"] >= 1, apps[app]
        assert app in ran and ran[app]["memory"] > 0, (app, worker["finishedexecutors"])
        tasks = night.tasks_on[name]
        assert sum(tasks.values()) > 0 and "driver" not in tasks, tasks
    hosts = {w["host"] for w in night.master_json["workers"]}
    assert hosts == {"127.0.0.1"}
