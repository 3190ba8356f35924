"""binlake_maintain: the lake's weekly upkeep (compaction, snapshot expiry), one DAG per lake.

Wiring only: the work is ``binlake maintain`` (binlake.lake.maintain), run by
binlake.orchestrate.upkeep.maintain.  Nothing is read at import time but environment variables
(binlake.orchestrate.dag_config): the schedule is ``$BINLAKE_AIRFLOW_MAINTAIN_CRON``
(default Sundays 05:00 UTC).  The lake is one for all sources, so this DAG is one too,
whatever ``[[sources]]`` configures.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import DAG, task

from binlake.orchestrate import dag_config

CFG = dag_config()

DOC = f"""
### binlake_maintain

Every week (`{CFG['maintain_cron']}`), per table of the lake (`{CFG['catalog_name']}.\
{CFG['namespace']}`): small data files joined (a night leaves a data file per binlog and
table), the mirrors' position deletes applied, snapshots older than `snapshot_retain_days`
(default 7) expired with the files only they referenced. Holds the load lock: a load running
then makes the task fail and retry later (every 30 minutes, 6 times). A table with an
unpublished night on its branch is skipped (reported). See docs/lake.md, "Upkeep".
"""

with DAG(
    dag_id="binlake_maintain",
    schedule=CFG["maintain_cron"],
    start_date=datetime.fromisoformat(CFG["start_date"]).replace(tzinfo=UTC),
    catchup=False,  # upkeep is about the lake now, not about past weeks
    max_active_runs=1,
    default_args={"retries": 6, "retry_delay": timedelta(minutes=30)},
    tags=["binlake", "maintain"],
    doc_md=DOC,
) as binlake_maintain:

    @task(doc_md="""
    `binlake maintain --json` in a process of its own (with the lake's AWS connection, for an
    S3 warehouse). Returns its report (XCom): per table the data files, delete files and
    snapshots before and after, or why it was skipped. Fails when a table's upkeep failed.
    """)
    def maintain() -> dict[str, Any]:
        from binlake.config import load_settings
        from binlake.orchestrate import airflow_aws_env
        from binlake.orchestrate.upkeep import maintain as run_maintain

        settings = load_settings()
        return run_maintain(env=airflow_aws_env(settings.airflow_s3_conn_id))

    maintain()
