#!/usr/bin/env bash
# The Airflow UI on this machine, sized for a small one: `airflow standalone` (API server +
# scheduler + DAG processor + triggerer, LocalExecutor, SQLite) with the binlake DAGs, on the
# demo's state (.binlake/demo, written by `bash infra/demo.sh`). Open http://127.0.0.1:$PORT
# (user admin; the password is printed at start and kept in $AIRFLOW_HOME).
#
#   bash infra/airflow.sh                 # port 8080
#   AIRFLOW_PORT=8081 bash infra/airflow.sh
#
# The scheduler's log server (task logs) listens on AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT
# (8793) and the triggerer's on AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT (8794): AIRFLOW_PORT
# must be another port (refused otherwise). Ctrl-C or SIGTERM stops everything this script
# started: the API server, scheduler, DAG processor, triggerer and their task workers.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${AIRFLOW_PORT:-8080}"
export AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT="${AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT:-8793}"
export AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT="${AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT:-8794}"
if ! [[ "$PORT" =~ ^[0-9]+$ ]] || ((PORT < 1 || PORT > 65535)); then
  echo "airflow.sh: AIRFLOW_PORT=$PORT is not a TCP port" >&2
  exit 2
fi
for pair in "worker log server:AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT" \
            "triggerer log server:AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT"; do
  what="${pair%%:*}" var="${pair#*:}"
  if [ "$PORT" = "${!var}" ]; then
    echo "airflow.sh: AIRFLOW_PORT=$PORT is the port of Airflow's $what ($var=${!var});" \
         "choose another AIRFLOW_PORT (e.g. 8081) or set $var to another port" >&2
    exit 2
  fi
done
bash infra/setup.sh
VENV="${BINLAKE_VENV:-.venv}"
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

# `airflow standalone` does not stop its components when it gets SIGTERM. So it runs in a
# session (process group) of its own, and this script stops that group and every
# descendant (also those that started a session of their own): TERM, then KILL after
# BINLAKE_AIRFLOW_STOP_SECONDS (20).
descendants() {
  local child
  for child in $(pgrep -P "$1" || true); do
    echo "$child"
    descendants "$child"
  done
}
alive() {
  local p
  kill -0 -- "-$AIRFLOW_PID" 2>/dev/null && return 0
  for p in "$@"; do kill -0 "$p" 2>/dev/null && return 0; done
  return 1
}
stop() {
  trap - TERM INT EXIT
  local status="$1" pids i
  pids="$(descendants "$AIRFLOW_PID" | tr '\n' ' ')"
  echo "airflow.sh: stopping airflow standalone (pid $AIRFLOW_PID) and its processes" >&2
  kill -TERM -- "-$AIRFLOW_PID" 2>/dev/null || true
  # shellcheck disable=SC2086
  kill -TERM "$AIRFLOW_PID" $pids 2>/dev/null || true
  for ((i = 0; i < ${BINLAKE_AIRFLOW_STOP_SECONDS:-20} * 4; i++)); do
    # shellcheck disable=SC2086
    alive "$AIRFLOW_PID" $pids || break
    sleep 0.25
  done
  # shellcheck disable=SC2086
  if alive "$AIRFLOW_PID" $pids; then
    echo "airflow.sh: still running after ${BINLAKE_AIRFLOW_STOP_SECONDS:-20} s: SIGKILL" >&2
    kill -KILL -- "-$AIRFLOW_PID" 2>/dev/null || true
    # shellcheck disable=SC2086
    kill -KILL "$AIRFLOW_PID" $pids 2>/dev/null || true
  fi
  wait "$AIRFLOW_PID" 2>/dev/null || true
  exit "$status"
}
setsid airflow standalone &
AIRFLOW_PID=$!
trap 'stop 143' TERM
trap 'stop 130' INT
trap 'stop $?' EXIT
wait "$AIRFLOW_PID"
