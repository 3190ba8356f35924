#!/usr/bin/env bash
# Set up a fresh machine for binlake: system packages, the virtualenv, the pinned Python
# dependencies. Idempotent: a second run only checks. Non-interactive (CI has no stdin).
#
#   bash infra/setup.sh                        # everything: dev, spark, gx, airflow, postgresql
#   BINLAKE_EXTRAS=dev,spark bash infra/setup.sh   # without Great Expectations and Airflow
set -euo pipefail
cd "$(dirname "$0")/.."

EXTRAS="${BINLAKE_EXTRAS:-dev,spark,gx,airflow,postgresql}"
VENV="${BINLAKE_VENV:-.venv}"
PYTHON="${PYTHON:-python3}"

log() { printf 'setup: %s\n' "$*" >&2; }

# --- system packages (Debian): MariaDB server + client for tests, demo and benchmarks;
# a Java runtime and the SQLite and PostgreSQL JDBC drivers for Spark's Iceberg JDBC catalog;
# the PostgreSQL server for the cluster test's catalog (tests/test_cluster.py starts a private
# one; no service is used) --
APT_PACKAGES=(mariadb-server mariadb-client libxerial-sqlite-jdbc-java libxerial-sqlite-jdbc-jni
              libpostgresql-jdbc-java postgresql)
missing=()
for cmd in mariadbd mariadb-install-db mariadb-binlog mariadb; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
done
[ -f /usr/share/java/sqlite-jdbc.jar ] || missing+=(sqlite-jdbc)
[ -f /usr/share/java/postgresql.jar ] || missing+=(postgresql-jdbc)
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=(postgresql)
if ! command -v java >/dev/null 2>&1; then
  APT_PACKAGES+=(default-jre-headless)
  missing+=(java)
fi
if ((${#missing[@]})); then
  if ! command -v apt-get >/dev/null 2>&1; then
    log "missing ${missing[*]} and no apt-get: install MariaDB 10.11+ server and client by hand"
    exit 1
  fi
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo -n"
  log "installing ${APT_PACKAGES[*]} (missing: ${missing[*]})"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${APT_PACKAGES[@]}" >/dev/null
fi

# --- the virtualenv ----------------------------------------------------------------------
if [ ! -x "$VENV/bin/python" ]; then
  log "creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
stamp="$VENV/.binlake-setup"
want="$(cat pyproject.toml requirements/constraints.txt | sha256sum | cut -c1-16) $EXTRAS"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  log "installing binlake[$EXTRAS] with requirements/constraints.txt"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
    -c requirements/constraints.txt -e ".[$EXTRAS]"
  echo "$want" > "$stamp"
else
  log "virtualenv up to date ($VENV)"
fi
# --- the driver JVM's class archive (lake/classarchive.py: ~3 s off every local Spark
# session); best effort: without it, sessions start as usual --------------------------------
# (the archive covers binlake's local file system jar, lake/jvm.py: built first if missing)
if [[ ",$EXTRAS," == *",spark,"* ]]; then
  warm=()  # a small real binlog makes the warm-up a real load, when the shared corpus is here
  sample="../shared/corpus/libs/mariadb-poc/binlogs/domain_id_0/mariadb-repl-bin.000002"
  [ -f "$sample" ] && warm=("$sample")
  if archive="$("$VENV/bin/binlake" jvm-archive --if-missing "${warm[@]}" 2>/tmp/binlake-jvm-archive.log)"; then
    log "driver JVM class archive: $archive"
  else
    log "no driver JVM class archive (see /tmp/binlake-jvm-archive.log); sessions start without"
  fi
fi
# --- binlake's S3 FileIO for Iceberg (an s3:// warehouse without the AWS bundle: lake/jvm.py);
# built once with javac, kept in ~/.cache/binlake/jvm -----------------------------------------
if [[ ",$EXTRAS," == *",spark,"* ]] && command -v javac >/dev/null 2>&1; then
  if jar="$("$VENV/bin/python" -c 'from binlake.lake.jvm import fileio_jar; from binlake.lake.spark import iceberg_runtime_jar; print(fileio_jar(iceberg_runtime_jar()))' 2>/tmp/binlake-fileio.log)"; then
    log "S3 FileIO: $jar"
  else
    log "binlake's S3 FileIO not built (see /tmp/binlake-fileio.log): s3:// warehouses build it on first use"
  fi
fi
log "ready: $VENV/bin/binlake"
