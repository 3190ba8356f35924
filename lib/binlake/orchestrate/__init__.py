"""The pipeline's steps as plain functions; the Airflow DAGs (``dags/``) only wire them.

archive (every 15 minutes) -> plan (which archived files a night loads) -> load (Spark,
``jobs/load_audited.py`` on ``spark-submit``) -> validate (the files gate + the Great
Expectations suite) -> publish -> report.  Nothing here imports Airflow: every step takes
:class:`binlake.config.Settings` and plain values, returns JSON-able dicts (the XComs), and
is testable without a scheduler.  See docs/orchestration.md.

**Write-audit-publish.** A night loads into an Iceberg branch named after its run
(:func:`branch_name`), validates that branch, and publishes by fast-forwarding ``main`` of
every lake table to it, or replaying it onto a ``main`` another source's night moved
(``binlake publish --branch B``, :mod:`binlake.lake.publish`).  Analysts read ``main``, so
they never see a night that failed its checks; the failed night's branch stays for
inspection, and the next night loads its files again from ``main``'s state.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

from ..archive.objectstore import ObjectStore, StoredObject, store_for
from ..config import Settings
from ..txn.files import binlog_file
from ..txn.model import XaXid
from .submit import (  # noqa: F401  (the load step's spark-submit, re-exported)
    DAG_LOCK_WAIT,
    SECRET_ENV,
    airflow_aws_env,
    aws_env,
    default_load_job,
    load_submit_args,
    load_summary_from_line,
    load_summary_text,
    submit_local_conf,
    submit_local_fs_conf,
)

log = logging.getLogger(__name__)

# The lake's tables, published together (the Airflow assets of the nightly DAG).
LAKE_TABLES = ("files", "transactions", "row_changes", "statements", "xa_prepares",
               "xa_pending", "validation_results")


class ValidationFailed(RuntimeError):
    """The night's data did not pass its checks: nothing of it is published."""

    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__("validation failed: " + "; ".join(result.get("problems") or ["?"]))
        self.result = result


# -- names ----------------------------------------------------------------------------------

def branch_name(run_id: str, source: str | None = None) -> str:
    """An Iceberg branch / lake run id from an Airflow run id (``scheduled__2026-11-20T02:00:00
    +00:00`` -> ``af_scheduled_2026_11_20t02_00_00_00_00``): lower-case, ``[a-z0-9_]``.
    With ``source`` (a deployment of many sources, whose nightly DAGs have the same run ids):
    ``af_<source>__<run id>``, so two sources' nights never share a branch."""
    s = re.sub(r"[^a-z0-9]+", "_", run_id.lower()).strip("_")
    if source is not None:
        src = re.sub(r"[^a-z0-9]+", "_", source.lower()).strip("_")
        return (f"af_{src}__" + s)[:120]
    return ("af_" + s)[:120]


# -- what the DAG files may know when they are parsed ---------------------------------------

def dag_config(env: dict[str, str] | None = None) -> dict[str, Any]:
    """The few values the DAGs' *structure* depends on, from the environment only (a DAG file
    is parsed often: no configuration file, no Variable, no connection is read then).
    Everything else is read by the tasks when they run (:func:`binlake.config.load_settings`).
    """
    e = os.environ if env is None else env
    return {
        "source": e.get("BINLAKE_SOURCE") or "default",
        "catalog_name": e.get("BINLAKE_CATALOG_NAME") or "binlake",
        "namespace": e.get("BINLAKE_NAMESPACE") or "binlog",
        "spark_conn_id": e.get("BINLAKE_AIRFLOW_SPARK_CONN_ID") or "binlake_spark",
        "nightly_cron": e.get("BINLAKE_AIRFLOW_NIGHTLY_CRON") or "0 2 * * *",
        "maintain_cron": e.get("BINLAKE_AIRFLOW_MAINTAIN_CRON") or "0 5 * * 0",
        "archive_minutes": int(e.get("BINLAKE_AIRFLOW_ARCHIVE_MINUTES") or 15),
        "catchup": (e.get("BINLAKE_AIRFLOW_CATCHUP") or "").lower() in ("1", "true", "yes"),
        "start_date": e.get("BINLAKE_AIRFLOW_START_DATE") or "2025-01-01",
    }


def dag_configs(env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """One :func:`dag_config` per DAG pair to generate.  Without ``[[sources]]`` (in the
    ``$BINLAKE_CONFIG`` file or ``$BINLAKE_SOURCES``): one, the DAG ids ``binlake_archive`` and
    ``binlake_nightly``, source ``$BINLAKE_SOURCE`` (as before; nothing but the environment
    is read).  With them: one per source, ``binlake_archive__<name>`` and
    ``binlake_nightly__<name>``, ``multi`` true (its tasks use
    ``load_settings().for_source(name)``).  Reads the local configuration file only (no
    connection, no Variable, no network); a bad one raises ConfigError (an import error of
    the DAG files, naming the field)."""
    e = dict(os.environ if env is None else env)
    base = dag_config(e)
    sources: tuple[Any, ...] = ()
    if e.get("BINLAKE_CONFIG") or e.get("BINLAKE_SOURCES"):
        from ..config import load_settings

        sources = load_settings(env=e).sources
    if not sources:
        return [dict(base, multi=False, archive_dag_id="binlake_archive",
                     nightly_dag_id="binlake_nightly")]
    return [dict(base, source=s.name, multi=True, nightly_cron=s.nightly_cron
                 or base["nightly_cron"], archive_dag_id=f"binlake_archive__{s.name}",
                 nightly_dag_id=f"binlake_nightly__{s.name}") for s in sources]


def task_settings(cfg: dict[str, Any]) -> Settings:
    """The settings a DAG's task runs with (read when it runs): those of its source."""
    from ..config import load_settings

    settings = load_settings()
    return settings.for_source(cfg["source"]) if cfg.get("multi") else settings


def table_asset_uri(cfg: dict[str, Any], table: str) -> str:
    """The Airflow asset URI of a lake table: ``iceberg://<catalog>/<namespace>/<table>``."""
    return f"iceberg://{cfg['catalog_name']}/{cfg['namespace']}/{table}"


def archive_asset_uri(cfg: dict[str, Any]) -> str:
    return f"binlake://archive/{cfg['source']}"


# -- archive --------------------------------------------------------------------------------

def run_archive(settings: Settings, *, s3_client: Any = None,
                remote: dict[str, Any] | None = None,
                connect: Any = None) -> dict[str, Any]:
    """Archive the source's closed files (raises ArchiveGapError on a new gap).  With a
    server connection (``remote``), then take a schema snapshot and store it beside the
    binlogs (:func:`schema_snapshot`: its result is the report's ``schema_snapshot``; a
    failure there is a warning, never a failed archive)."""
    from ..archive.archiver import archive, source_from_settings

    store = store_for(settings, client=s3_client)
    report = archive(source_from_settings(settings, remote=remote), store, settings.source)
    log.info("%s", report.text())
    result = report.to_dict()
    if remote:
        result["schema_snapshot"] = schema_snapshot(settings, remote, store, connect=connect)
    return result


def schema_snapshot(settings: Settings, remote: dict[str, Any], store: ObjectStore, *,
                    connect: Any = None) -> dict[str, Any]:
    """Take a schema snapshot of the server ``remote`` names (host/port/user/password) and
    store it under ``<source>/_schema/`` unless the newest stored one has the same schema
    (docs/schema.md, "Snapshots").  Never raises: a failure is logged as a warning and
    returned as ``{"ok": False, "warning": ...}``.  ``connect(remote)``: a DB-API
    connection (default pymysql)."""
    from ..archive.snapshots import store_snapshot
    from ..schema.snapshot import take_snapshot

    try:
        conn = (connect or _pymysql_connect)(remote)
        try:
            snap = take_snapshot(conn)
        finally:
            conn.close()
        stored = store_snapshot(store, settings.source, snap)
    except Exception as exc:  # a snapshot is extra: the archive succeeded
        msg = (f"schema snapshot of {remote.get('host')}:{remote.get('port')} not taken "
               f"(the archive itself succeeded): {type(exc).__name__}: {exc}")
        log.warning("%s", msg)
        return {"ok": False, "warning": msg}
    out: dict[str, Any] = {"ok": True, **stored.to_dict(), "tables": len(snap.versions),
                           "position": str(snap.position) if snap.position else None}
    log.info("schema snapshot at %s: %s %s", out["position"], stored.reason, stored.uri)
    return out


def _pymysql_connect(remote: dict[str, Any]) -> Any:
    import pymysql

    return pymysql.connect(host=remote["host"], port=int(remote.get("port") or 3306),
                           user=remote.get("user") or "root",
                           password=remote.get("password") or "", charset="utf8mb4",
                           connect_timeout=10, autocommit=True)


# -- plan -----------------------------------------------------------------------------------

def _when(value: str | None) -> datetime | None:
    if not value:
        return None
    dt = datetime.fromisoformat(value)
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def _day_start(d: str) -> datetime:
    return datetime.combine(date.fromisoformat(d), time(0), tzinfo=UTC)


def loaded_files(settings: Settings) -> dict[str, str | None]:
    """``file -> sha256`` of the files ``main`` has as ``loaded`` for this source (empty when
    the tables do not exist yet or the catalog is not readable by pyiceberg)."""
    rows = read_table(settings, "files", ["file", "status", "sha256"])
    return {r["file"]: r["sha256"] for r in rows if r["status"] == "loaded"}


def read_table(settings: Settings, table: str, columns: Sequence[str], *,
                branch: str | None = None, files: Iterable[str] | None = None,
                file_col: str = "file") -> list[dict[str, Any]]:
    try:
        from pyiceberg.exceptions import NoSuchTableError

        from ..lake.spark import pyiceberg_catalog
    except ImportError:  # no pyiceberg on this worker
        log.warning("pyiceberg is not installed: cannot read %s", table)
        return []
    uri = settings.sqlalchemy_uri
    if settings.catalog_type == "jdbc" and uri.startswith("sqlite:///") \
            and not Path(uri[len("sqlite:///"):]).exists():
        return []  # no catalog yet: nothing was ever loaded
    try:
        tbl = pyiceberg_catalog(settings).load_table(f"{settings.namespace}.{table}")
    except NoSuchTableError:
        return []
    snapshot_id = None
    if branch:  # a table the run wrote nothing to has no branch: its state is main's
        ref = tbl.metadata.refs.get(branch)
        if ref is not None:
            snapshot_id = ref.snapshot_id
    flt = f"source = {_lit(settings.source)}"
    if files is not None:
        flt += f" AND {file_col} IN ({', '.join(_lit(f) for f in files) or _lit('')})"
    out: list[dict[str, Any]] = tbl.scan(row_filter=flt, selected_fields=tuple(columns),
                                         snapshot_id=snapshot_id).to_arrow().to_pylist()
    return out


def _lit(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def plan(settings: Settings, *, run_id: str, interval_start: str | None = None,
         interval_end: str | None = None, params: dict[str, Any] | None = None,
         s3_client: Any = None) -> dict[str, Any]:
    """Which archived files this run loads, and the arguments of the load job.

    By precedence: ``params["files"]`` (names or URIs), ``params["from_file"]`` ..
    ``params["to_file"]`` (names, inclusive), ``params["from_date"]`` .. ``params["to_date"]``
    (archived on those UTC dates, inclusive); else the data interval: files archived in
    ``[interval_start, interval_end)`` plus older archived files ``main`` does not have as
    loaded (a night that failed validation is retried by the next one; XA state and binlog
    order need every file).  Files archived after the interval wait for their night."""
    params = {k: v for k, v in (params or {}).items() if v not in (None, "", [])}
    store = store_for(settings, client=s3_client)
    archived = sorted(store.list(settings.source),
                      key=lambda o: (binlog_file(o.name).base, o.seq))
    mode, chosen = _choose(settings, archived, params, interval_start, interval_end)
    branch = branch_name(run_id, settings.source if settings.sources else None)
    result: dict[str, Any] = {
        "mode": mode, "run_id": branch, "branch": branch, "source": settings.source, "store": store.root_uri,
        "files": [o.uri for o in chosen], "names": [o.name for o in chosen],
        "sha256": {o.name: o.sha256 for o in chosen},
        "interval": [interval_start, interval_end],
    }
    result.update(load_submit_args(settings, result))
    log.info("plan (%s): %d file(s): %s", mode, len(chosen), ", ".join(result["names"]))
    return result


def _choose(settings: Settings, archived: list[StoredObject], params: dict[str, Any],
            interval_start: str | None, interval_end: str | None
            ) -> tuple[str, list[StoredObject]]:
    if "files" in params:
        wanted = [binlog_file(str(f)).name for f in params["files"]]
        by_name = {o.name: o for o in archived}
        missing = [w for w in wanted if w not in by_name]
        if missing:
            raise ValueError(f"files not in the archive {_store_label(settings)}: {missing}")
        return "files", sorted((by_name[w] for w in set(wanted)), key=lambda o: o.seq)
    if "from_file" in params or "to_file" in params:
        lo = binlog_file(str(params.get("from_file", ""))).seq if "from_file" in params else -1
        hi = binlog_file(str(params["to_file"])).seq if "to_file" in params else 1 << 62
        return "file_range", [o for o in archived if lo <= o.seq <= hi]
    if "from_date" in params or "to_date" in params:
        start = _day_start(params["from_date"]) if "from_date" in params else None
        end = (_day_start(params["to_date"]) + timedelta(days=1)) if "to_date" in params \
            else None
        return "date_range", [o for o in archived if _in(o, start, end)]
    start, end = _when(interval_start), _when(interval_end)
    loaded = loaded_files(settings)
    chosen = [o for o in archived if _in(o, None, end)
              and (_in(o, start, end) or loaded.get(o.name) != o.sha256)]
    return "interval", chosen


def _in(o: StoredObject, start: datetime | None, end: datetime | None) -> bool:
    at = _when(o.archived_at)
    if at is None:
        return start is None
    return (start is None or at >= start) and (end is None or at < end)


def _store_label(settings: Settings) -> str:
    return settings.archive_uri or str(settings.home_path / "archive")


# -- validate -------------------------------------------------------------------------------

def files_gate(settings: Settings, plan_: dict[str, Any]) -> list[str]:
    """Problems with this run's ``files`` rows (on its branch): every planned file loaded,
    with the sha256 recorded when it was archived."""
    rows = {r["file"]: r for r in read_table(
        settings, "files", ["file", "status", "sha256", "error"], branch=plan_.get("branch"),
        files=plan_["names"])}
    problems = []
    for name in plan_["names"]:
        r = rows.get(name)
        if r is None:
            problems.append(f"{name}: no files row (the load did not record it)")
        elif r["status"] != "loaded":
            problems.append(f"{name}: {r['status']}: {r['error']}")
        elif plan_["sha256"].get(name) and r["sha256"] != plan_["sha256"][name]:
            problems.append(f"{name}: loaded sha256 {r['sha256']} != archived "
                            f"{plan_['sha256'][name]}")
    return problems


def validate(settings: Settings, plan_: dict[str, Any], *, master: str | None = None,
             env: dict[str, str] | None = None) -> dict[str, Any]:
    """The files gate, then the Great Expectations suite (``binlake.quality``, run in a
    subprocess of its own: one JVM per step; ``env``: more of its environment, e.g.
    :func:`aws_env`, which reads the archived objects).  Raises :class:`ValidationFailed`."""
    result: dict[str, Any] = {"run_id": plan_["run_id"], "branch": plan_.get("branch"),
                              "files": len(plan_["names"])}
    # the suite's process starts first: its JVM and imports overlap the gate's catalog read
    suite = _start_quality(settings, plan_, master or settings.spark_master, env)
    try:
        problems = files_gate(settings, plan_)
    except BaseException:
        suite.kill()
        suite.wait()
        raise
    result["files_gate"] = "passed" if not problems else "failed"
    gx = _quality_result(suite)
    result["great_expectations"] = gx
    if not gx.get("success"):
        problems.append("Great Expectations suite failed: " + ", ".join(
            gx.get("failed") or [gx.get("error") or "see its results"]))
    result["problems"] = problems
    result["success"] = not problems
    log.info("validation: %s", json.dumps(result, default=str))
    if problems:
        raise ValidationFailed(result)
    return result


def _start_quality(settings: Settings, plan_: dict[str, Any], master: str,
                   extra_env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "binlake.orchestrate", "validate-json", "--master", master,
           "--run-id", plan_["run_id"]]
    if plan_.get("branch"):
        cmd += ["--branch", plan_["branch"]]
    env = {**os.environ, **(extra_env or {}), "BINLAKE_SOURCE": settings.source}
    return subprocess.Popen([*cmd, *plan_["files"]], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                            env=env)


def _quality_result(proc: subprocess.Popen[str]) -> dict[str, Any]:
    stdout, stderr = proc.communicate()
    last = (stdout.strip().splitlines() or [""])[-1]
    try:
        out: dict[str, Any] = json.loads(last)
    except ValueError:
        out = {"success": False, "error": f"validation crashed (exit {proc.returncode}): "
               f"{stderr.strip()[-1500:]}"}
    return out


def _validate_json(argv: Sequence[str]) -> int:
    """``python -m binlake.orchestrate validate-json``: run binlake.quality.validate on a local
    Spark session and print its report as one JSON line."""
    import argparse

    from ..config import load_settings
    from ..lake.spark import build_session

    p = argparse.ArgumentParser()
    p.add_argument("sources", nargs="*")
    p.add_argument("--master")
    p.add_argument("--run-id")
    p.add_argument("--branch")
    a = p.parse_args(argv)
    import importlib

    quality: Any = importlib.import_module("binlake.quality.run")
    # (Great Expectations imported while the JVM starts: quality.run.suite_warm_modules)
    warm = quality.suite_warm_modules()
    settings = load_settings()
    spark = build_session(settings, app_name="binlake-validate", master=a.master, warm=warm)
    report = quality.validate(spark, settings, a.sources, run_id=a.run_id, branch=a.branch)
    d = dict(report.to_dict())
    d["success"] = bool(report.success)
    d["data_docs"] = str(getattr(report, "data_docs", "") or "")
    d["failed"] = [str(r.get("expectation") or r.get("name") or r) for r in
                   (d.get("results") or []) if isinstance(r, dict) and not r.get("success")]
    print(json.dumps(d, default=str))
    return 0


# -- publish --------------------------------------------------------------------------------

def publish(settings: Settings, plan_: dict[str, Any], *,
            env: dict[str, str] | None = None) -> dict[str, Any]:
    """Make the night visible: ``main`` of every lake table gets the run's branch
    (:func:`binlake.lake.publish.publish`) and the branch is dropped (``binlake publish
    --branch B --if-exists``: a retry after it succeeded, or a night that wrote nothing,
    finds no branch and does nothing).  ``env``: more of its environment (:func:`aws_env`:
    an S3 warehouse)."""
    res = run_cli(["publish", "--branch", plan_["branch"], "--if-exists"],
                   {**(env or {}), "BINLAKE_SOURCE": settings.source})
    if res.returncode != 0:
        raise RuntimeError(f"binlake publish --branch {plan_['branch']} failed "
                           f"(exit {res.returncode}): {res.stderr.strip()[-2000:]}")
    return {"published": True, "branch": plan_["branch"], "run_id": plan_["run_id"],
            "output": res.stdout.strip()[-2000:]}


def run_cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``binlake ARGS`` (with ``$BINLAKE_CONFIG``) in a process of its own, ``env`` added
    to this one's environment; its output captured."""
    config = os.environ.get("BINLAKE_CONFIG")
    return subprocess.run([sys.executable, "-m", "binlake.cli", *args,
                           *(["--config", config] if config else [])],
                          capture_output=True, text=True, check=False,
                          env={**os.environ, **env})


# -- report ---------------------------------------------------------------------------------

def report(settings: Settings, plan_: dict[str, Any] | None,
           validation: dict[str, Any] | None = None,
           published: dict[str, Any] | None = None) -> dict[str, Any]:
    """What landed (from ``main``): the run's files, its transactions by status, the XAs
    still pending for the source, the validation result; and where to look."""
    names = (plan_ or {}).get("names") or []
    out: dict[str, Any] = {"source": settings.source, "run_id": (plan_ or {}).get("run_id"),
                           "planned": len(names), "mode": (plan_ or {}).get("mode")}
    if not names:
        out["message"] = "nothing new arrived: no archived file to load"
    files = read_table(settings, "files", ["file", "status", "transactions", "row_changes",
                                            "error"], files=names) if names else []
    out["files"] = sorted(files, key=lambda r: r["file"])
    txns = read_table(settings, "transactions", ["status"], files=names,
                       file_col="end_file") if names else []
    counts: dict[str, int] = {}
    for t in txns:
        counts[t["status"]] = counts.get(t["status"], 0) + 1
    out["transactions"] = counts
    out["pending_xa"] = [
        {k: (str(v) if k == "prepared_ts" else v) for k, v in r.items()}
        for r in read_table(settings, "xa_pending", ["xa_gtrid", "xa_bqual", "xa_format_id",
                                                      "prepare_file", "prepare_pos",
                                                      "prepared_ts"])]
    out["validation"] = validation
    out["published"] = published
    out["where"] = {
        "catalog": settings.catalog_uri_resolved, "warehouse": settings.warehouse_resolved,
        "tables": [f"{settings.catalog_name}.{settings.namespace}.{t}" for t in LAKE_TABLES],
        "data_docs": ((validation or {}).get("great_expectations") or {}).get("data_docs"),
    }
    log.info("%s", report_text(out))
    return out


def report_text(r: dict[str, Any]) -> str:
    lines = [f"binlake night {r.get('run_id')} (source {r['source']}, {r.get('mode')}): "
             f"{r['planned']} file(s)"]
    if r.get("message"):
        lines.append("  " + r["message"])
    for f in r.get("files") or []:
        lines.append(f"  {f['status']:7} {f['file']}: {f['transactions']} transactions, "
                     f"{f['row_changes']} row changes" + (f"  {f['error']}" if f['error'] else ""))
    if r.get("transactions"):
        lines.append("  transactions: " + ", ".join(f"{k} {v}" for k, v in
                                                     sorted(r["transactions"].items())))
    lines.append(f"  pending XA: {len(r.get('pending_xa') or [])}")
    for p in r.get("pending_xa") or []:
        xid = XaXid(p["xa_format_id"], p["xa_gtrid"], p["xa_bqual"])
        lines.append(f"    {xid} prepared at "
                     f"{p['prepare_file']}:{p['prepare_pos']}")
    v = r.get("validation")
    if v:
        gx = v.get("great_expectations") or {}
        lines.append(f"  validation: {'passed' if v.get('success') else 'FAILED'} (files gate "
                     f"{v.get('files_gate')}; Great Expectations "
                     f"{gx.get('skipped') or ('passed' if gx.get('success') else 'failed')})")
    p = r.get("published")
    if p:
        lines.append(f"  published: {p.get('branch') if p.get('published') else p.get('note')}")
    w = r.get("where") or {}
    if w.get("data_docs"):
        lines.append(f"  Data Docs: {w['data_docs']}")
    lines.append(f"  catalog {w.get('catalog')}, tables {', '.join(w.get('tables') or [])}")
    return "\n".join(lines)


def store(settings: Settings, *, s3_client: Any = None) -> ObjectStore:
    return store_for(settings, client=s3_client)
