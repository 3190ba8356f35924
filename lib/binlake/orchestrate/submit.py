"""The load step's ``spark-submit``: its application, arguments, jars, conf and environment
(:func:`load_submit_args`, at plan time), what the load task adds where spark-submit runs
(:func:`submit_local_conf`), the AWS connection's environment for it (:func:`aws_env`,
:func:`airflow_aws_env`), and the summary the job prints (:func:`load_summary_from_line`).
Re-exported by :mod:`binlake.orchestrate`.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from ..config import Settings


def default_load_job() -> str:
    return str(Path(__file__).resolve().parents[3] / "jobs" / "load_audited.py")


DAG_LOCK_WAIT = 1800.0  # seconds the DAG's load waits for another load (lock_wait 0)

# The AWS variables that are secrets: they reach spark-submit through its environment only,
# never its command line (logged), an XCom or a rendered template field.
SECRET_ENV = frozenset({"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"})


def aws_env(*, access_key: str | None = None, secret_key: str | None = None,
            token: str | None = None, region: str | None = None,
            endpoint_url: str | None = None) -> dict[str, str]:
    """The environment that gives the load (spark-submit, its driver, and through
    :func:`binlake.lake.spark.executor_env` its executors) the credentials, region and
    endpoint of an AWS connection (the nightly DAG's load and validate tasks: the Airflow AWS
    connection ``airflow_s3_conn_id``, read when they run).  Contains secrets (see
    :data:`SECRET_ENV`): pass it as a process environment only."""
    env = {"AWS_ACCESS_KEY_ID": access_key, "AWS_SECRET_ACCESS_KEY": secret_key,
           "AWS_SESSION_TOKEN": token, "AWS_REGION": region, "AWS_DEFAULT_REGION": region,
           "BINLAKE_S3_ENDPOINT_URL": endpoint_url}
    return {k: v for k, v in env.items() if v}


def airflow_aws_env(conn_id: str) -> dict[str, str]:
    """In an Airflow task: the Airflow AWS connection's credentials (as its hook resolves
    them: keys, an assumed role...), region and S3 endpoint_url as environment variables
    (:func:`aws_env`), read when the task runs; empty without a connection.  The secrets are
    registered with Airflow's log masker.  (Airflow is imported here only.)"""
    if not conn_id:
        return {}
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook
    from airflow.sdk.log import mask_secret

    hook = S3Hook(aws_conn_id=conn_id)
    try:
        creds = hook.get_credentials()
    except AttributeError:  # boto3 found none (no login, no chain): executors use their own
        hook.log.warning("AWS connection %s: no credentials to pass on", conn_id)
        creds = None
    env = aws_env(access_key=creds and creds.access_key, secret_key=creds and creds.secret_key,
                  token=creds and creds.token, region=hook.region_name,
                  endpoint_url=hook.conn_config.get_service_endpoint_url("s3"))
    for k in SECRET_ENV & env.keys():
        mask_secret(env[k])
    return env


def load_submit_args(settings: Settings, plan_: dict[str, Any]) -> dict[str, Any]:
    """The SparkSubmitOperator's application, args, jars, conf and environment.

    ``spark_conf`` (on spark-submit's command line, in the task log and the XCom) has the
    non-secret ``spark.executorEnv.*`` of :func:`binlake.lake.spark.executor_env` (S3
    endpoint, region); the credentials never: the load task puts them in spark-submit's
    environment when it runs (dags/binlake_nightly.py), and the driver passes them on to
    its executors (``build_session``)."""
    from ..lake.spark import SQLITE_JNI_DIRS, executor_env, jars_for

    args = ["--source-name", settings.source, "--run-id", plan_["run_id"]]
    if plan_["branch"]:
        args += ["--branch", plan_["branch"]]
    config = os.environ.get("BINLAKE_CONFIG")
    if config:
        args += ["--config", config]
    conf = {"spark.ui.enabled": "false", "spark.driver.memory": settings.spark_driver_memory,
            "spark.executorEnv.PYSPARK_PYTHON": sys.executable}
    jni = next((d for d in SQLITE_JNI_DIRS if os.path.isdir(d)), None)
    if jni:
        conf["spark.driver.extraJavaOptions"] = f"-Djava.library.path={jni}"
        conf["spark.executor.extraJavaOptions"] = f"-Djava.library.path={jni}"
    conf.update({k: v for k, v in executor_env(settings).items()
                 if k[len("spark.executorEnv."):] not in SECRET_ENV})
    if settings.spark_packages:
        conf["spark.jars.packages"] = settings.spark_packages
    bindir = os.path.dirname(sys.executable)
    env = {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "PATH": bindir + os.pathsep + os.environ.get("PATH", ""),
           "BINLAKE_SOURCE": settings.source,
           # a load started by hand may hold the lake: the night waits for it
           "BINLAKE_LOCK_WAIT": str(settings.lock_wait or DAG_LOCK_WAIT)}
    return {"application": settings.load_job or default_load_job(),
            "load_args": args + list(plan_["files"]),
            "jars": ",".join(jars_for(settings)), "spark_conf": conf, "spark_env": env}


def submit_local_fs_conf(settings: Settings, conf: dict[str, str], master: str | None,
                         deploy_mode: str | None) -> dict[str, str]:
    """``conf`` (a ``spark-submit`` of the load's) with binlake's local file system
    (docs/lake.md, "Local files without a chmod per file"): its jar on the driver's class
    path and ``spark.hadoop.fs.file.impl``, when ``master`` is local and the driver runs
    here (not ``deploy_mode`` cluster), as a session binlake starts itself would have it.
    Call it where spark-submit runs: the jar is built into that machine's cache.  ``conf``
    unchanged when the settings or ``conf`` turn it off (either key set), without a JDK, or
    when the driver or its executors would not have the class."""
    from ..lake.jvm import LOCAL_FS, LOCAL_FS_KEYS, local_fs_jar_for

    if (deploy_mode == "cluster" or not (master or "").startswith("local")
            or LOCAL_FS_KEYS & conf.keys()):
        return conf
    jar = local_fs_jar_for(settings)
    if jar is None:
        return conf
    return {**conf, "spark.driver.extraClassPath": jar, "spark.hadoop.fs.file.impl": LOCAL_FS}


def submit_local_conf(settings: Settings, conf: dict[str, str], master: str | None,
                      deploy_mode: str | None) -> dict[str, str]:
    """``conf`` (a ``spark-submit`` of the load's) as a local session binlake starts itself
    has it: :func:`submit_local_fs_conf`, and the Python daemon of
    :func:`binlake.lake.spark.local_worker_conf` when the master is local."""
    from ..lake.spark import local_worker_conf

    conf = submit_local_fs_conf(settings, conf, master, deploy_mode)
    return {**conf, **local_worker_conf(master, conf)}


def load_summary_from_line(line: str) -> dict[str, Any] | None:
    """The load job's summary when ``line`` is it: ``jobs/load_binlogs.py`` prints
    ``LoadSummary.to_dict()`` as its last stdout line (one JSON object, long: every file,
    table, finding).  None for any other line of spark-submit's output."""
    text = line.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return None
    try:
        d = json.loads(text)
    except ValueError:
        return None
    if isinstance(d, dict) and {"run_id", "source", "files"} <= d.keys():
        return d
    return None


def load_summary_text(summary: dict[str, Any]) -> str:
    """The human summary of a load (``binlake.lake.summary.summary_text``) from its JSON form."""
    from dataclasses import fields

    from ..lake.summary import LoadSummary, summary_text

    known = {f.name for f in fields(LoadSummary)}
    return summary_text(LoadSummary(**{k: v for k, v in summary.items() if k in known}))
