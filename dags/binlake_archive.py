"""binlake_archive: copy closed binlog files to the object store, every 15 minutes.

Wiring only: the work is binlake.orchestrate.run_archive (binlake.archive), unit-tested
without Airflow.  Nothing is read at import time but environment variables and the local
configuration file's ``[[sources]]`` (binlake.orchestrate.dag_configs): one DAG
``binlake_archive`` for one source, or one ``binlake_archive__<name>`` per configured source
(docs/orchestration.md, "Many sources").
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import DAG, Asset, task

from binlake.orchestrate import archive_asset_uri, dag_configs


def _doc(CFG: dict[str, Any]) -> str:
    return f"""
### {CFG['archive_dag_id']} (source `{CFG['source']}`)

Every {CFG['archive_minutes']} minutes, copies the source server's **closed** binlog files to
the object store, each exactly once: never the file the server is writing (the last one in
the index, or one whose header still has the in-use flag).  Keys `<prefix>/<source>/<file>`;
the sha256 is recorded with each object.

* Source: `archive_source_dir` (a binlog directory or its `.index`), or the Airflow MySQL
  connection `airflow_source_conn_id` (fetched with `mariadb-binlog --read-from-remote-server
  --raw`).
* Store: `archive_uri` (default: the local directory `<home>/archive`); for `s3://` the
  Airflow AWS connection `airflow_s3_conn_id` (its `endpoint_url` extra for S3-compatible
  stores).
* Re-running copies nothing new.  An object that exists with other content fails the task.
* A file purged from the server before it was archived is a **gap**: the first run that sees
  it fails (no retry) after archiving everything else, and records it; later runs list it
  as known.  See docs/orchestration.md.
* With the server connection, every successful run also takes a **schema snapshot**
  (information_schema at a binlog position) and stores it under `<prefix>/<source>/_schema/`
  unless the newest stored one has the same schema (then nothing is written).  A failed
  snapshot is a warning in the log and in the result (`schema_snapshot`), never a failed
  run.  See docs/schema.md, "Snapshots".
"""


def _s3_client(conn_id: str) -> Any:
    if not conn_id:
        return None
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook

    return S3Hook(aws_conn_id=conn_id).get_conn()


def _remote(conn_id: str) -> dict[str, Any] | None:
    if not conn_id:
        return None
    from airflow.sdk import BaseHook

    c = BaseHook.get_connection(conn_id)
    return {"host": c.host, "port": c.port or 3306, "user": c.login or "root",
            "password": c.password or ""}


def build(CFG: dict[str, Any]) -> DAG:
    """The archive DAG of one source (``CFG``: one of dag_configs())."""
    ARCHIVE = Asset(name=f"binlake_archive_{CFG['source']}", uri=archive_asset_uri(CFG))
    with DAG(
        dag_id=CFG["archive_dag_id"],
        schedule=timedelta(minutes=CFG["archive_minutes"]),
        start_date=datetime.fromisoformat(CFG["start_date"]).replace(tzinfo=UTC),
        catchup=False,  # archiving is about the server's state now, not about past intervals
        max_active_runs=1,
        default_args={"retries": 2, "retry_delay": timedelta(minutes=1)},
        tags=["binlake", "archive", f"source:{CFG['source']}"],
        doc_md=_doc(CFG),
    ) as dag:

        @task(outlets=[ARCHIVE], doc_md="""
        Lists the source's binlog index, copies the closed files the store lacks (multipart for
        large files on S3, atomic rename locally), records sha256/size/archived_at. With the
        server connection, then stores a schema snapshot (skipped when the schema is unchanged;
        a failure is only a warning). Returns the report (XCom): `archived`, `already`,
        `skipped` (not closed yet), `gaps`, `new_gaps`, `schema_snapshot`.
        """)
        def archive() -> dict[str, Any]:
            from airflow.sdk.exceptions import AirflowFailException

            from binlake.archive import ArchiveGapError
            from binlake.archive.objectstore import ObjectConflictError
            from binlake.orchestrate import run_archive, task_settings

            settings = task_settings(CFG)
            try:
                return run_archive(settings, s3_client=_s3_client(settings.airflow_s3_conn_id),
                                   remote=_remote(settings.airflow_source_conn_id))
            except (ArchiveGapError, ObjectConflictError) as exc:
                raise AirflowFailException(str(exc)) from exc  # a retry would not help

        archive()
        return dag


for _cfg in dag_configs():
    globals()[_cfg["archive_dag_id"]] = build(_cfg)
