"""The nightly DAG's steps without Airflow: names, the plan's file choice, parse-time config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from binlake import orchestrate as O
from binlake.archive.objectstore import LocalStore, sha256_file
from binlake.config import load_settings


def test_branch_name_is_a_safe_identifier() -> None:
    assert O.branch_name("scheduled__2026-11-20T02:00:00+00:00") == \
        "af_scheduled_2026_11_20t02_00_00_00_00"
    assert O.branch_name("manual__X Y/Z") == "af_manual_x_y_z"


def test_dag_config_reads_only_the_environment() -> None:
    cfg = O.dag_config({"BINLAKE_SOURCE": "db9", "BINLAKE_AIRFLOW_SPARK_CONN_ID": "spark_k8s"})
    assert cfg["source"] == "db9" and cfg["spark_conn_id"] == "spark_k8s"
    assert O.dag_config({})["nightly_cron"] == "0 2 * * *"
    assert O.table_asset_uri(cfg, "files") == "iceberg://binlake/binlog/files"


def _archive(tmp_path: Path, stamps: dict[str, str]) -> LocalStore:
    store = LocalStore(tmp_path / "home" / "archive")
    for name, at in stamps.items():
        f = tmp_path / name
        f.write_bytes(name.encode())
        sha, size = sha256_file(f)
        store.put("db1", name, f, sha256=sha, size=size, archived_at=at)
    return store


@pytest.fixture
def archived(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    stamps = {"mariadb-bin.000001": "2026-11-18T10:00:00+00:00",
              "mariadb-bin.000002": "2026-11-19T10:00:00+00:00",
              "mariadb-bin.000003": "2026-11-20T10:00:00+00:00",
              "mariadb-bin.000004": "2026-11-21T10:00:00+00:00"}
    _archive(tmp_path, stamps)
    monkeypatch.setenv("BINLAKE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BINLAKE_SOURCE", "db1")
    return stamps


def _names(p: dict) -> list[str]:
    return list(p["names"])


def test_plan_interval_takes_its_files_and_older_unloaded_ones(
        archived: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    settings = load_settings()
    interval = {"interval_start": "2026-11-20T02:00:00+00:00",
                "interval_end": "2026-11-21T02:00:00+00:00"}
    # 000001 is loaded with its sha256; 000002 is not (its night failed): it comes along
    sha1 = O.store_for(settings).head("db1", "mariadb-bin.000001").sha256  # type: ignore
    monkeypatch.setattr(O, "loaded_files", lambda s: {"mariadb-bin.000001": sha1})
    p = O.plan(settings, run_id="scheduled__2026-11-20T02:00:00+00:00", **interval)
    assert _names(p) == ["mariadb-bin.000002", "mariadb-bin.000003"]  # not 000004: later
    assert p["mode"] == "interval" and p["run_id"].startswith("af_scheduled")
    assert p["load_args"][-2:] == p["files"]
    assert p["sha256"]["mariadb-bin.000003"]
    json.dumps(p)  # an XCom


def test_plan_params_for_backfills(archived: dict[str, str]) -> None:
    s = load_settings()
    assert _names(O.plan(s, run_id="r", params={"files": ["mariadb-bin.000003"]})) == \
        ["mariadb-bin.000003"]
    assert _names(O.plan(s, run_id="r", params={"from_file": "mariadb-bin.000002",
                                                "to_file": "mariadb-bin.000003"})) == \
        ["mariadb-bin.000002", "mariadb-bin.000003"]
    assert _names(O.plan(s, run_id="r", params={"from_date": "2026-11-19",
                                                "to_date": "2026-11-20"})) == \
        ["mariadb-bin.000002", "mariadb-bin.000003"]
    # empty params (the trigger form's defaults) mean "the data interval"
    assert O.plan(s, run_id="r", params={"files": [], "from_date": None})["mode"] == "interval"
    with pytest.raises(ValueError, match="not in the archive"):
        O.plan(s, run_id="r", params={"files": ["mariadb-bin.000099"]})




def test_load_submit_args_carry_executor_env_but_no_secret(
        archived: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan's spark conf (on spark-submit's command line, in the task log and the XCom)
    has what executors need that is not secret (executor_env: endpoint, region); the
    credentials are never in it."""
    for k, v in {"AWS_ACCESS_KEY_ID": "AKIAPLANTEST0000001", "AWS_SECRET_ACCESS_KEY":
                 "plan-secret-value", "AWS_SESSION_TOKEN": "plan-token-value",
                 "AWS_REGION": "eu-west-3", "BINLAKE_S3_ENDPOINT_URL": "http://s3.local:9000"
                 }.items():
        monkeypatch.setenv(k, v)
    p = O.plan(load_settings(), run_id="r", params={"files": ["mariadb-bin.000001"]})
    conf = p["spark_conf"]
    assert conf["spark.executorEnv.AWS_REGION"] == "eu-west-3"
    assert conf["spark.executorEnv.BINLAKE_S3_ENDPOINT_URL"] == "http://s3.local:9000"
    text = json.dumps(p)
    for secret in ("AKIAPLANTEST0000001", "plan-secret-value", "plan-token-value"):
        assert secret not in text
    assert O.aws_env(access_key="k", secret_key="s", region="r", endpoint_url="e") == {
        "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "r",
        "AWS_DEFAULT_REGION": "r", "BINLAKE_S3_ENDPOINT_URL": "e"}
