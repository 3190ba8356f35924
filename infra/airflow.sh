#!/usr/bin/env bash
# The Airflow UI on this machine, sized for a small one: `airflow standalone` (API server +
# scheduler + DAG processor + triggerer, LocalExecutor, SQLite) with the binlake DAGs, on the
# demo's state (.binlake/demo, written by `bash infra/demo.sh`). Open http://127.0.0.1:$PORT
# (user admin; the password is printed at start and kept in $AIRFLOW_HOME).
#
#   bash infra/airflow.sh                 # port 8080
#   AIRFLOW_PORT=8793 bash infra/airflow.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash infra/setup.sh
VENV="${BINLAKE_VENV:-.venv}"
PORT="${AIRFLOW_PORT:-8080}"
STATE="$PWD/.binlake/demo"

export PATH="$PWD/$VENV/bin:$PATH"
export AIRFLOW_HOME="${AIRFLOW_HOME:-$STATE/airflow}"
export AIRFLOW__CORE__DAGS_FOLDER="$PWD/dags"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
# Small machine: a handful of task slots (the default LocalExecutor starts 32 workers).
export AIRFLOW__CORE__PARALLELISM="${AIRFLOW__CORE__PARALLELISM:-4}"
export AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG="${AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG:-2}"
export AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES=1
export AIRFLOW__API__WORKERS=1
export AIRFLOW__API__HOST=127.0.0.1
export AIRFLOW__API__PORT="$PORT"
# On a non-default port the task runners must be told where the execution API is.
export AIRFLOW__CORE__EXECUTION_API_SERVER_URL="http://127.0.0.1:$PORT/execution/"
# binlake on embedded defaults (the demo's server binlogs, lake and archive)
export BINLAKE_HOME="${BINLAKE_HOME:-$STATE/lake}"
export BINLAKE_SOURCE="${BINLAKE_SOURCE:-demo}"
export BINLAKE_ARCHIVE_SOURCE_DIR="${BINLAKE_ARCHIVE_SOURCE_DIR:-$STATE/server/binlog}"
export BINLAKE_SPARK_DRIVER_MEMORY="${BINLAKE_SPARK_DRIVER_MEMORY:-2g}"
LOCAL_SPARK='{"conn_type": "spark", "host": "local[2]"}'
export AIRFLOW_CONN_BINLAKE_SPARK="${AIRFLOW_CONN_BINLAKE_SPARK:-$LOCAL_SPARK}"
exec airflow standalone
