"""The main job on embedded defaults: the whole pipeline, end to end, on this machine.

1. starts a private MariaDB server (Debian's package; 127.0.0.1, datadir under
   ``.binlake/demo/server``) and, the first time, runs a workload: InnoDB and Aria tables,
   an XA transaction prepared in one binlog file and committed in the next, and one left
   prepared (pending) across rotations;
2. runs the Airflow DAGs in-process with ``dag.test()`` (private ``AIRFLOW_HOME`` with a
   SQLite metadata DB under ``.binlake/demo/airflow``): ``binlake_archive`` (closed binlogs ->
   the local object store ``.binlake/demo/lake/archive``), then ``binlake_nightly`` (Spark
   ``local[2]`` -> Iceberg tables in a SQLite catalog -> validation -> publish -> report);
3. prints what landed and where to look.

Idempotent: a second run archives nothing, the nightly load changes nothing, and it says so.
``--fresh`` starts over (deletes ``.binlake/demo``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
STATE = ROOT / ".binlake" / "demo"

WORKLOAD = [
    "CREATE DATABASE shop",
    "CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, customer VARCHAR(40) NOT NULL,"
    " amount DECIMAL(12,2) NOT NULL, placed_at DATETIME(6) NOT NULL, note TEXT,"
    " status ENUM('new','paid','shipped') NOT NULL DEFAULT 'new') ENGINE=InnoDB",
    "CREATE TABLE shop.audit (id INT AUTO_INCREMENT PRIMARY KEY, msg VARCHAR(100)) ENGINE=Aria",
    "INSERT INTO shop.orders VALUES (1, 'Zoë', 19.99, '2026-11-20 09:00:00.123456', 'gift 🎁', 'new'),"
    " (2, 'Bob', 250.00, '2026-11-20 10:30:00', NULL, 'paid')",
    "BEGIN",
    "UPDATE shop.orders SET status='shipped' WHERE id=2",
    "INSERT INTO shop.audit (msg) VALUES ('order 2 shipped')",
    "COMMIT",
]


def _env() -> dict[str, str]:
    lake = STATE / "lake"
    return {
        "BINLAKE_HOME": str(lake),
        "BINLAKE_SOURCE": "demo",
        "BINLAKE_ARCHIVE_SOURCE_DIR": str(STATE / "server" / "binlog"),
        "BINLAKE_SPARK_MASTER": "local[2]",
        "BINLAKE_SPARK_DRIVER_MEMORY": "2g",
        "AIRFLOW_HOME": str(STATE / "airflow"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
        "AIRFLOW__CORE__PARALLELISM": "2",
        "AIRFLOW_CONN_BINLAKE_SPARK": '{"conn_type": "spark", "host": "local[2]"}',
        "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
    }


def _workload(srv: Any) -> bool:
    """Run the workload once (False when the server already has it)."""
    if srv.execute("SHOW DATABASES LIKE 'shop'"):
        return False
    srv.execute(WORKLOAD)
    xa = srv.connect()
    with xa.cursor() as cur:
        cur.execute("XA START 'demo-xa-1'")
        cur.execute("INSERT INTO shop.orders VALUES (3, 'Chen', 7.50, NOW(6), 'xa', 'new')")
        cur.execute("XA END 'demo-xa-1'")
        cur.execute("XA PREPARE 'demo-xa-1'")
    srv.flush_binary_logs()  # the PREPARE and the COMMIT land in different files
    with xa.cursor() as cur:
        cur.execute("XA COMMIT 'demo-xa-1'")
        cur.execute("XA START 'demo-xa-2'")  # left prepared: a pending XA in the lake
        cur.execute("UPDATE shop.orders SET amount = 8.00 WHERE id = 3")
        cur.execute("XA END 'demo-xa-2'")
        cur.execute("XA PREPARE 'demo-xa-2'")
    xa.close()  # MariaDB keeps a prepared XA after its connection ends
    srv.execute(["DELETE FROM shop.orders WHERE id=1"])
    srv.flush_binary_logs()
    srv.flush_binary_logs()  # the XA prepared two files ago stays pending across rotations
    return True


def nightly_run(now: datetime | None = None) -> dict[str, Any]:
    """The keyword arguments of the demo's ``binlake_nightly`` ``dag.test()``.

    The logical date is *now*, never in the future.  ``dag.test()`` gives a run the data
    interval ``timetable.infer_manual_data_interval(logical_date)``: for the nightly cron that
    is the last *complete* day before it (``[yesterday 02:00, today 02:00)`` UTC), which does
    not hold the files archived a moment ago.  The demo used to move the logical date a day
    ahead to reach them (a run dated tomorrow: negative durations in the UI).  Instead it
    passes ``to_date`` = today (the trigger form's field): every file archived up to now;
    files loaded before are skipped by the load (same sha256), so a second demo changes
    nothing.  The full conf, because in-process ``dag.test()`` keeps an earlier run's
    params otherwise.
    """
    now = now or datetime.now(UTC)
    return {"logical_date": now,
            "run_conf": {"files": [], "from_file": None, "to_file": None, "from_date": None,
                         "to_date": now.astimezone(UTC).date().isoformat()}}


def _counts(settings: Any) -> dict[str, int]:
    from binlake.orchestrate import read_table

    return {t: len(read_table(settings, t, ["source"]))
            for t in ("transactions", "row_changes", "xa_prepares")}


def main(argv: list[str]) -> int:
    if "--fresh" in argv and STATE.exists():
        shutil.rmtree(STATE)
    STATE.mkdir(parents=True, exist_ok=True)
    os.environ.update(_env())
    res = subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"],
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        print(res.stderr[-3000:], file=sys.stderr)
        return 1

    from binlake.config import load_settings
    from binlake.orchestrate import report, report_text
    from binlake_dev.mariadb import MariaDBServer, free_port

    srv = MariaDBServer(STATE / "server", port=free_port())
    srv.start()
    try:
        fresh = _workload(srv)
        print(f"binlake demo: MariaDB on 127.0.0.1:{srv.port} ({STATE / 'server'}); workload "
              f"{'written' if fresh else 'already there (run with --fresh to start over)'}; "
              f"binlogs: {', '.join(f.name for f in srv.binlog_files())}")
        settings = load_settings()
        before = _counts(settings)

        from airflow.dag_processing.dagbag import DagBag

        bag = DagBag(dag_folder=str(ROOT / "dags"))
        if bag.import_errors:
            print(f"DAG import errors: {bag.import_errors}", file=sys.stderr)
            return 1
        from binlake.archive.objectstore import store_for

        had = {o.name for o in store_for(settings).list(settings.source)}
        print("\n== binlake_archive (dag.test)")
        ar = bag.dags["binlake_archive"].test()
        archived = store_for(settings).list(settings.source)
        new_files = [o.name for o in archived if o.name not in had]
        print(f"   {ar.state}: {len(archived)} file(s) in the archive {archived[0].uri.rsplit('/', 1)[0] if archived else ''}")
        print("\n== binlake_nightly (dag.test: Spark local[2] -> Iceberg -> validation -> publish)")
        nr = bag.dags["binlake_nightly"].test(**nightly_run())
        states = {ti.task_id: str(ti.state) for ti in nr.get_task_instances()}
        print(f"   {nr.state}: " + ", ".join(f"{k} {v}" for k, v in states.items()))
    finally:
        srv.stop()

    after = _counts(settings)
    names = [o.name for o in archived]
    r = report(settings, {"names": names, "run_id": "demo (all archived files)",
                          "mode": "all"})
    print("\n== what landed (main)\n" + report_text(r))
    new = {k: after[k] - before.get(k, 0) for k in after}
    if not any(new.values()):
        print("\nnothing new arrived: no new transactions or row changes; the tables are "
              "unchanged" + (f" ({len(new_files)} new binlog file(s) archived: the rotation "
                             "MariaDB does at every start, no transactions)" if new_files else ""))
    else:
        print("\nnew in this run: " + ", ".join(f"{v} {k}" for k, v in new.items()))
    docs = sorted((STATE / "lake").glob("**/data_docs/**/index.html"))
    print(f"""
== where to look
  archive:   {STATE / 'lake' / 'archive' / settings.source}  (sha256 in _meta/*.json)
  catalog:   {settings.catalog_uri_resolved}
  warehouse: {settings.warehouse_resolved}
  Data Docs: {docs[0] if docs else '(written by the Great Expectations suite when installed)'}
  query:     BINLAKE_HOME={STATE / 'lake'} .venv/bin/python -c "from binlake.config \\
               import load_settings; from binlake.lake.spark import pyiceberg_catalog; \\
               print(pyiceberg_catalog(load_settings()).load_table('binlog.transactions')\\
               .scan().to_pandas())"
  Airflow UI: bash infra/airflow.sh   (same DAGs, http://127.0.0.1:8080, backfills)""")
    return 0 if nr.state == "success" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
