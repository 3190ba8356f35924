"""Running the suite: datasets -> Great Expectations (Spark datasource) -> report, Data Docs
and the ``validation_results`` Iceberg table."""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..config import Settings
from ..lake.discover import discover
from ..lake.spark import local_frame
from ..lake.tables import METADATA_RETENTION, sql_properties
from . import datasets as D
from .names import ERROR, FAMILIES

if TYPE_CHECKING:
    from .suite import Check

log = logging.getLogger("binlake.quality")

RESULTS_TABLE = "validation_results"
RESULTS_DDL = """
    run_id STRING NOT NULL, source STRING NOT NULL, validated_at TIMESTAMP, suite STRING,
    expectation STRING, family STRING, severity STRING, success BOOLEAN,
    observed_value STRING, details STRING, files ARRAY<STRING>, branch STRING"""
_DETAIL_ROWS = 20  # unexpected rows kept per result (GX itself stops at 200)


# Packages both the suite's import (Great Expectations) and the validation's own path import:
# imported first, in the main thread (half a second), by :func:`suite_warm_modules`
_SHARED = ("numpy", "pandas", "pyarrow", "pyarrow.parquet", "sqlalchemy", "pydantic",
           "pyspark.sql", "pyspark.sql.functions")


def suite_warm_modules() -> tuple[str, ...]:
    """What a validating process gives ``build_session(warm=...)``: the session's own warm
    imports and the suite's.  Great Expectations takes seconds to import (5-6 s of CPU
    here): imported in a thread while the JVM starts and the datasets are computed;
    :func:`validate` imports the suite (waiting for that import: Python's import lock) only
    when it runs the expectations.  The packages both sides import are imported here
    first: two threads importing one package's modules at once can meet in its circular
    imports, which Python reports as a deadlock (ImportError) instead of waiting."""
    import importlib

    from ..lake.spark import WARM_MODULES

    for shared in _SHARED:
        importlib.import_module(shared)
    return (*WARM_MODULES, "binlake.quality.suite")


class InputError(ValueError):
    """The sources name no binlog file (or cannot be listed)."""


@dataclass
class ValidationReport:
    run_id: str
    source: str
    files: list[str]
    results: list[dict[str, Any]] = field(default_factory=list)
    data_docs: str | None = None
    branch: str | None = None
    seconds: float = 0.0

    @property
    def success(self) -> bool:
        """False iff an error-severity expectation failed (warnings do not count)."""
        return all(r["success"] for r in self.results if r["severity"] == ERROR)

    def failed(self, severity: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self.results
                if not r["success"] and (severity is None or r["severity"] == severity)]

    def families(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for r in self.results:
            f = out.setdefault(r["family"], {"checks": 0, "failed_errors": 0,
                                             "failed_warnings": 0})
            f["checks"] += 1
            if not r["success"]:
                f["failed_errors" if r["severity"] == ERROR else "failed_warnings"] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "source": self.source, "success": self.success,
                "files": self.files, "branch": self.branch, "data_docs": self.data_docs,
                "seconds": self.seconds, "families": self.families(), "results": self.results}

    def summary_text(self) -> str:
        lines = [f"binlake validate {self.run_id} (source {self.source}): {len(self.files)} "
                 f"file(s), {len(self.results)} expectation(s): "
                 f"{'PASSED' if self.success else 'FAILED'}"]
        fams = self.families()
        for fam in [*FAMILIES, *(f for f in fams if f not in FAMILIES)]:
            if fam not in fams:
                continue
            c = fams[fam]
            state = "ok" if not c["failed_errors"] else "FAILED"
            extra = f", {c['failed_warnings']} warning(s)" if c["failed_warnings"] else ""
            lines.append(f"  {fam:<19} {state:<6} {c['checks']} check(s), "
                         f"{c['failed_errors']} failed{extra}")
        for r in self.failed():
            lines.append(f"  {r['severity'].upper():7} {r['expectation']}: "
                         f"observed {r['observed']}")
        if self.data_docs:
            lines.append(f"Data Docs: {self.data_docs}")
        return "\n".join(lines)


# -- Great Expectations -----------------------------------------------------------------------

def data_docs_dir(settings: Settings) -> str:
    return settings.data_docs_dir or str(settings.home_path / "data_docs")


def _context(docs: str) -> Any:
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    logging.getLogger("great_expectations").setLevel(logging.ERROR)
    ctx = gx.get_context(mode="ephemeral")
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
    for name in list(ctx.get_site_names()):  # the ephemeral default site lives in a tmp dir
        ctx.delete_data_docs_site(name)
    if docs.startswith("s3://"):
        bucket, _, prefix = docs[5:].partition("/")
        backend: dict[str, Any] = {"class_name": "TupleS3StoreBackend", "bucket": bucket,
                                   "prefix": prefix.rstrip("/")}
        if os.environ.get("BINLAKE_S3_ENDPOINT_URL"):
            backend["boto3_options"] = {"endpoint_url": os.environ["BINLAKE_S3_ENDPOINT_URL"]}
    else:
        os.makedirs(docs, exist_ok=True)
        backend = {"class_name": "TupleFilesystemStoreBackend",
                   "base_directory": os.path.abspath(docs)}
    ctx.add_data_docs_site(site_name="binlake", site_config={
        "class_name": "SiteBuilder", "store_backend": backend,
        "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"}})
    return ctx


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if hasattr(v, "asDict"):
        return _jsonable(v.asDict())
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return str(v)


def _result_of(check: Check, er: Any, notes: dict[str, Any]) -> dict[str, Any]:
    res = er.result or {}
    details: dict[str, Any] = {}
    if "observed_value" in res:
        observed = res["observed_value"]
        rows = (res.get("details") or {}).get("unexpected_rows") or []
        details["unexpected_rows"] = _jsonable(list(rows)[:_DETAIL_ROWS])
    else:
        observed = res.get("unexpected_count", 0)
        details["element_count"] = res.get("element_count")
        details["unexpected"] = _jsonable((res.get("partial_unexpected_list") or [])
                                          [:_DETAIL_ROWS])
    if er.exception_info and er.exception_info.get("raised_exception"):
        details["exception"] = er.exception_info.get("exception_message")
    details.update(notes.get(check.name, {}))
    exp = er.expectation_config
    return {"expectation": check.name, "suite": f"binlake.{check.dataset}",
            "family": check.family, "severity": check.severity,
            "success": bool(er.success), "observed": _jsonable(observed),
            "description": exp.description or getattr(check.make(), "description", None),
            "type": exp.type, "details": details}


def run_suites(spark: Any, frames: dict[str, Any], selected: list[Check], docs: str,
               notes: dict[str, Any], run_name: str) -> tuple[list[dict[str, Any]], str]:
    """Validate each dataset with the checks on it (one GX checkpoint per dataset, each
    updating the Data Docs site); results in catalogue order, and the Data Docs index."""
    import great_expectations as gx
    from great_expectations.core.run_identifier import RunIdentifier

    ctx = _context(docs)
    # (persist=False: the datasets are pinned already, _pin; a second, cached copy of each
    # would cost its first query seconds)
    source = ctx.data_sources.add_spark("binlake", persist=False)
    by_check: dict[str, dict[str, Any]] = {}
    for dataset, df in frames.items():
        chosen = [c for c in selected if c.dataset == dataset]
        if not chosen or df is None:
            continue
        batch = source.add_dataframe_asset(dataset).add_batch_definition_whole_dataframe("run")
        suite = ctx.suites.add(gx.ExpectationSuite(name=f"binlake.{dataset}"))
        for c in chosen:
            suite.add_expectation(c.expectation())
        vd = ctx.validation_definitions.add(gx.ValidationDefinition(
            name=f"binlake.{dataset}", data=batch, suite=suite))
        cp = ctx.checkpoints.add(gx.Checkpoint(
            name=f"binlake.{dataset}", validation_definitions=[vd],
            actions=[],
            result_format={"result_format": "COMPLETE"}))
        out = cp.run(batch_parameters={"dataframe": df},
                     run_id=RunIdentifier(run_name=run_name))
        for vr in out.run_results.values():
            for er in vr.results:
                name = str((er.expectation_config.meta or {}).get("check"))
                check = next(c for c in chosen if c.name == name)
                by_check[name] = _result_of(check, er, notes)
    ctx.build_data_docs(site_names=["binlake"])  # once, with every dataset's results
    urls = ctx.get_docs_sites_urls(site_name="binlake")
    index = urls[0]["site_url"] if urls else None
    return [by_check[c.name] for c in selected if c.name in by_check], index or docs


# -- the results table --------------------------------------------------------------------------

def write_results(spark: Any, settings: Settings, report: ValidationReport) -> None:
    """Append the report to ``<catalog>.<namespace>.validation_results`` on main (never on the
    WAP branch being validated)."""
    table = settings.table(RESULTS_TABLE)
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {settings.catalog_name}.{settings.namespace}")
    spark.sql(f"CREATE TABLE IF NOT EXISTS {table} ({RESULTS_DDL}) USING iceberg "
              "PARTITIONED BY (source, days(validated_at)) "
              f"TBLPROPERTIES ('format-version'='2', {sql_properties(METADATA_RETENTION)})")
    rows = [(report.run_id, report.source, r["suite"],
             r["expectation"], r["family"], r["severity"], r["success"],
             json.dumps(r["observed"], default=str),
             json.dumps({"description": r["description"], **r["details"]}, default=str),
             report.files, report.branch) for r in report.results]
    if not rows:
        return
    df = local_frame(spark, rows, "run_id STRING, source STRING, suite STRING, "
                                     "expectation STRING, family STRING, severity STRING, "
                                     "success BOOLEAN, observed_value STRING, details STRING, "
                                     "files ARRAY<STRING>, branch STRING")
    from pyspark.sql import functions as F

    df = df.withColumn("validated_at", F.current_timestamp())
    cols = [f.name for f in spark.table(table).schema.fields]
    conf = spark.conf
    wap = conf.get("spark.wap.branch", None)
    if wap is not None:
        conf.unset("spark.wap.branch")
    try:
        df.select(*cols).writeTo(table).append()
    finally:
        if wap is not None:
            conf.set("spark.wap.branch", wap)


def _pin(df: Any) -> Any:
    """``df`` computed once and kept by the executors (a local checkpoint, freed with the
    session's garbage): each expectation queries its dataset a few times (count, rows), and
    the datasets are filters, joins and windows over the stream facts and the lake's tables,
    which would otherwise be computed again for every query."""
    if df is None:
        return None
    return df.localCheckpoint(eager=True)


def check_sources(sources: list[str]) -> None:
    """Local sources must exist (s3:// ones are listed by discover())."""
    if not sources:
        raise InputError("no source given")
    for src in sources:
        if "://" not in src and not os.path.exists(src):
            raise InputError(f"{src}: no such file or directory")


# -- the API ------------------------------------------------------------------------------------

def validate(spark: Any, settings: Settings, sources: list[str], *, run_id: str,
             branch: str | None = None, lake: bool = True,
             write: bool = True) -> ValidationReport:
    """Validate the binlog files of ``sources`` (files, directories, ``s3://`` objects or
    prefixes, as ``binlake load``) and, with ``lake``, what the lake (as of ``branch``) holds of
    them.  Writes Data Docs and, with ``write``, the ``validation_results`` rows."""
    t0 = time.time()
    check_sources(sources)
    files = discover(sources)
    if not files:
        raise InputError(f"no binlog files in {', '.join(sources) or '(nothing given)'}")
    report = ValidationReport(run_id, settings.source, [f.name for f in files], branch=branch)
    read = D.table_reader(spark, settings, branch) if lake else None
    lake_groups = []
    with ThreadPoolExecutor(max_workers=1) as beside:
        # the mirrors' counts (a Spark job and driver reads, nothing of the stream) while
        # the stream's datasets are planned: both mostly wait on the JVM
        mirrors_f = (beside.submit(D.build_mirrors, spark, settings, read,
                                   sorted({f.seq for f in files}))
                     if read is not None else None)
        if read is not None:
            lake_groups = D.lake_pending_groups(spark, settings, min(f.seq for f in files),
                                                {f.name for f in files}, read)
        stream = D.build_stream(spark, settings, files, lake_groups=lake_groups, read=read)
        log.info("validate: stream facts of %d file(s) from the lake, %d read again",
                 len(stream.notes["integrity.events_decode"]["facts_from_load"]),
                 len(stream.notes["integrity.events_decode"]["read_again"]))
        try:
            frames = stream.frames()
            notes = dict(stream.notes)
            if read is not None and mirrors_f is not None:
                recon, lake_notes = D.build_reconciliation(spark, settings, stream, read)
                mirrors, mirror_notes = mirrors_f.result()
                frames.update(reconciliation=recon, mirrors=mirrors)
                notes.update(lake_notes)
                notes.update(mirror_notes)
            t1 = time.time()
            with ThreadPoolExecutor(max_workers=4) as pool:  # small jobs: keep cores busy
                frames = dict(zip(frames, pool.map(_pin, frames.values())))
            log.info("validate: datasets computed in %.1f s", time.time() - t1)
            # The suite (Great Expectations: seconds of imports) only now: a caller may be
            # importing it meanwhile (python -m binlake.orchestrate validate-json), while
            # the datasets above are computed, mostly in the JVM.
            from .suite import checks

            selected = [c for c in checks(xa_max_age=settings.xa_max_age)
                        if lake or c.family != "reconciliation"]
            run_name = f"{run_id}-{uuid.uuid4().hex[:4]}"
            report.results, report.data_docs = run_suites(
                spark, frames, selected, data_docs_dir(settings), notes, run_name)
        finally:
            stream.records.unpersist()
    if write:
        write_results(spark, settings, report)
    report.seconds = time.time() - t0
    return report
