"""binlake_nightly: load the night's archived binlogs into Iceberg, validate, publish.

Wiring only: the steps are binlake.orchestrate.{plan,validate,publish,report} and the Spark
job jobs/load_audited.py (jobs/load_binlogs.py).  Nothing is read at import time but
environment variables and the local configuration file's ``[[sources]]``
(binlake.orchestrate.dag_configs): one DAG ``binlake_nightly`` for one source, or one
``binlake_nightly__<name>`` per configured source (docs/orchestration.md, "Many sources").
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG, Asset, CronDataIntervalTimetable, Param, TriggerRule, task

from binlake.orchestrate import LAKE_TABLES, archive_asset_uri, dag_configs, table_asset_uri
from binlake.orchestrate import airflow_aws_env as _aws_env


def _s3_client(conn_id: str) -> Any:
    """A boto3 client of the Airflow AWS connection (as the archive DAG's), or None."""
    if not conn_id:
        return None
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook

    return S3Hook(aws_conn_id=conn_id).get_conn()


@contextmanager
def _aws_in_process(conn_id: str) -> Iterator[dict[str, str]]:
    """The connection's AWS variables (:func:`_aws_env`) in this task's own environment while
    the block runs, restored after: the task's in-process reads of an ``s3://`` warehouse
    (pyiceberg: the plan's look at ``main``, the files gate, the report) use the
    connection's credentials, as its subprocesses do."""
    env = _aws_env(conn_id)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield env
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class LoadOperator(SparkSubmitOperator):
    """spark-submit of the load job, whose last stdout line is its summary as one long JSON
    line: that line is kept out of the task log, which gets the load's human summary
    instead; the JSON is the task's return value (XCom ``return_value``).

    With an Airflow AWS connection (``airflow_s3_conn_id`` of the source, read when the task
    runs), its credentials, region and endpoint go into spark-submit's *environment* only:
    not into ``conf``/``env_vars`` (rendered template fields, and on YARN/Kubernetes
    ``--conf`` arguments of the logged command line).  The driver hands them to its executors
    as ``spark.executorEnv.*`` (binlake.lake.spark.build_session -> executor_env)."""

    def __init__(self, *, binlake_cfg: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.binlake_cfg = binlake_cfg  # None: no AWS connection (the environment's own)

    def execute(self, context: Any) -> dict[str, Any] | None:
        from binlake.orchestrate import (
            load_summary_from_line,
            load_summary_text,
            submit_local_conf,
            task_settings,
        )

        hook = self._hook = self._get_hook()  # a fresh one: a retry wraps no wrapper
        settings = task_settings(self.binlake_cfg) if self.binlake_cfg is not None else None
        if settings is not None:  # (built on this machine, where spark-submit runs)
            hook._conf = submit_local_conf(settings, hook._conf,
                                           hook._connection.get("master"),
                                           hook._connection.get("deploy_mode"))
        secret_env = _aws_env(settings.airflow_s3_conn_id) if settings is not None else {}
        if secret_env:
            if hook._connection.get("deploy_mode") == "cluster":
                self.log.warning("deploy mode cluster: the driver does not run here, so the AWS "
                                 "connection's credentials do not reach it; give the cluster "
                                 "its own (instance profile, secrets in spark-defaults)")
            build = hook._build_spark_submit_command

            def with_env(application: str) -> list[str]:
                cmd: list[str] = build(application)  # (sets hook._env from env_vars)
                hook._env = {**(hook._env or {}), **secret_env}  # Popen's env only
                return cmd

            hook._build_spark_submit_command = with_env  # type: ignore[method-assign]
        found: list[dict[str, Any]] = []
        log_lines = hook._process_spark_submit_log

        def without_summary(itr: Any) -> Any:
            for line in itr:
                summary = load_summary_from_line(line)
                if summary is None:
                    yield line
                else:
                    found.append(summary)

        hook._process_spark_submit_log = (  # type: ignore[method-assign]
            lambda itr: log_lines(without_summary(itr)))
        super().execute(context)
        if not found:
            self.log.warning("the load printed no summary line")
            return None
        self.log.info("load summary:\n%s", load_summary_text(found[-1]))
        return found[-1]


def _doc(CFG: dict[str, Any]) -> str:
    return f"""
### {CFG['nightly_dag_id']} (source `{CFG['source']}`)

Nightly (`{CFG['nightly_cron']}` UTC), for its data interval:

1. **plan**: the files archived in the interval, plus older archived files `main` does not
   have as loaded (a night that failed is retried by the next one; XA pairing needs every
   file, in order).
2. **load**: Spark (`SparkSubmitOperator`, connection `{CFG['spark_conn_id']}`; `local[*]`
   by default) decodes them into the Iceberg tables, in a branch named after the run
   (write-audit-publish).  Idempotent: files already loaded change nothing.
3. **validate**: every planned file is `loaded` with its archived sha256, and the Great
   Expectations suite passes on the branch.
4. **publish**: `main` of every lake table (what analysts read) gets the branch: a
   fast-forward, or a replay of the branch's changes when another source's night moved
   `main` meanwhile.  Only after validation passed.
5. **report**: files, transactions, pending XAs, validation result and where to look.

**Backfill from the UI** ("Trigger DAG" with a config): `files` (binlog names or URIs), or
`from_file`/`to_file` (names, inclusive), or `from_date`/`to_date` (archive dates, UTC,
inclusive).  Empty params = this run's data interval.  Airflow's own backfill ("Backfill"
button or `airflow backfill create`) runs past intervals, without params: each run loads
the files archived in its interval (by archive time) plus older ones `main` lacks.  Loads
are idempotent, so a backfill over loaded data leaves the tables as they were.  One run at a
time (`max_active_runs=1`): XA state flows from each run to the next through the tables.
"""


def _params() -> dict[str, Param]:
    """Fresh Param objects for each DAG (never shared between two sources' DAGs)."""
    return {
        "files": Param([], type=["null", "array"], items={"type": "string"},
                       title="Binlog files",
                       description="Load exactly these archived files (e.g. mariadb-bin.000042, or "
                       "its URI). Wins over the other fields."),
        "from_file": Param(None, type=["null", "string"], title="From file",
                           description="First binlog file name of a range (inclusive)."),
        "to_file": Param(None, type=["null", "string"], title="To file",
                         description="Last binlog file name of a range (inclusive)."),
        "from_date": Param(None, type=["null", "string"], format="date", title="From date",
                           description="Files archived on or after this UTC date."),
        "to_date": Param(None, type=["null", "string"], format="date", title="To date",
                         description="Files archived on or before this UTC date."),
    }


def build(CFG: dict[str, Any]) -> DAG:
    """The nightly DAG of one source (``CFG``: one of dag_configs())."""
    ARCHIVE = Asset(name=f"binlake_archive_{CFG['source']}", uri=archive_asset_uri(CFG))
    TABLES = [Asset(name=f"{CFG['catalog_name']}.{CFG['namespace']}.{t}",
                    uri=table_asset_uri(CFG, t)) for t in LAKE_TABLES]
    with DAG(
        dag_id=CFG["nightly_dag_id"],
        schedule=CronDataIntervalTimetable(CFG["nightly_cron"], timezone="UTC"),
        start_date=datetime.fromisoformat(CFG["start_date"]).replace(tzinfo=UTC),
        catchup=CFG["catchup"],
        max_active_runs=1,  # one run per source at a time: XA state flows run to run
        default_args={"retries": 2, "retry_delay": timedelta(minutes=2)},
        params=_params(),
        tags=["binlake", "lake", f"source:{CFG['source']}"],
        doc_md=_doc(CFG),
    ) as dag:

        @task(multiple_outputs=True, inlets=[ARCHIVE], doc_md="""
        Chooses the archived files of this run (params, else the data interval + older files
        `main` lacks) and computes the Spark job's arguments, branch and run id (from the Airflow
        run id). XCom: `names`, `files`, `sha256`, `branch`, `run_id`, `load_args`, ...
        """)
        def plan(**context: Any) -> dict[str, Any]:
            from binlake.orchestrate import plan as plan_files
            from binlake.orchestrate import task_settings

            start, end = context.get("data_interval_start"), context.get("data_interval_end")
            settings = task_settings(CFG)
            with _aws_in_process(settings.airflow_s3_conn_id):
                return plan_files(settings, run_id=context["run_id"],
                                  interval_start=start.isoformat() if start else None,
                                  interval_end=end.isoformat() if end else None,
                                  params=dict(context["params"]),
                                  s3_client=_s3_client(settings.airflow_s3_conn_id))

        @task.short_circuit(ignore_downstream_trigger_rules=False, doc_md="""
        Skips load, validate and publish when no file was planned (nothing new arrived).
        """)
        def anything_to_load(names: list[str]) -> bool:
            return bool(names)

        p = plan()
        gate = anything_to_load(p["names"])

        load = LoadOperator(
            task_id="load",
            binlake_cfg=CFG,
            conn_id=CFG["spark_conn_id"],
            application=p["application"],
            application_args=p["load_args"],
            jars=p["jars"],
            conf=p["spark_conf"],
            env_vars=p["spark_env"],
            name="binlake-load",
            doc_md="""
            spark-submit `jobs/load_audited.py`: decodes the planned files on Spark and MERGEs them
            into the Iceberg tables (into the run's branch). Idempotent, so retries are safe. A file
            that fails to decode is recorded as `failed` and fails the validation step. The AWS
            connection's credentials reach spark-submit through its environment only (never its
            command line or this task's rendered fields). The log ends
            with the load's summary (files, transactions, rows, pending XAs); the full summary
            (JSON) is the task's XCom `return_value`.
            """,
        )

        @task(doc_md="""
        The audit: every planned file `loaded` with its archived sha256 (files gate), then the
        Great Expectations suite on the run's branch. Fails the run (no retry) when a check fails:
        nothing is published.
        """)
        def validate(plan_: dict[str, Any]) -> dict[str, Any]:
            from airflow.sdk.exceptions import AirflowFailException

            from binlake.orchestrate import ValidationFailed, task_settings
            from binlake.orchestrate import validate as run_validation

            settings = task_settings(CFG)
            try:
                with _aws_in_process(settings.airflow_s3_conn_id) as env:
                    return run_validation(settings, plan_, env=env)
            except ValidationFailed as exc:
                raise AirflowFailException(str(exc)) from exc

        @task(outlets=TABLES, doc_md="""
        Publishes the validated branch: `main` of every lake table fast-forwards to it (or gets
        its changes replayed, when another source's night moved `main` meanwhile) and the
        branch is dropped (`binlake publish --branch B`). Emits the tables' asset events.
        """)
        def publish(plan_: dict[str, Any]) -> dict[str, Any]:
            from binlake.orchestrate import publish as run_publish
            from binlake.orchestrate import task_settings

            settings = task_settings(CFG)
            with _aws_in_process(settings.airflow_s3_conn_id) as env:
                return run_publish(settings, plan_, env=env)

        @task(trigger_rule=TriggerRule.NONE_FAILED, doc_md="""
        What landed in `main`: the run's files, transactions by status, pending XAs, the
        validation result, where the catalog and Data Docs are. Runs also when nothing was new.
        """)
        def report(**context: Any) -> dict[str, Any]:
            from binlake.orchestrate import report as make_report
            from binlake.orchestrate import task_settings

            ti = context["ti"]
            keys = ["names", "files", "sha256", "run_id", "branch", "mode"]
            plan_ = {k: ti.xcom_pull(task_ids="plan", key=k) for k in keys}
            settings = task_settings(CFG)
            with _aws_in_process(settings.airflow_s3_conn_id):
                return make_report(settings, plan_,
                                   validation=ti.xcom_pull(task_ids="validate"),
                                   published=ti.xcom_pull(task_ids="publish"))

        plan_all = {"names": p["names"], "files": p["files"], "sha256": p["sha256"],
                    "run_id": p["run_id"], "branch": p["branch"]}
        checked = validate(plan_all)
        done = publish(plan_all)
        gate >> load >> checked >> done >> report()
        return dag


for _cfg in dag_configs():
    globals()[_cfg["nightly_dag_id"]] = build(_cfg)
