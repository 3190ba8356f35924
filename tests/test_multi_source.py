"""Many sources in one deployment: ``[[sources]]`` in the configuration, one DAG pair per
source, each source's settings (``Settings.for_source``), and a broken source that does not
stop the others (docs/orchestration.md, "Many sources")."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from binlake import orchestrate as O
from binlake.archive.objectstore import LocalStore, sha256_file
from binlake.config import ConfigError, Settings, load_settings
from binlake_dev.mariadb import MariaDBServer

ROOT = Path(__file__).resolve().parents[1]

TOML = """
source = "legacy"
archive_uri = "s3://bucket/binlogs"
airflow_s3_conn_id = "aws_default"
schema_snapshots = ["/snap/top.jsonl"]

[[sources]]
name = "shop1"
archive_source_dir = "/var/lib/mysql-shop1"
schema_snapshots = ["/snap/shop1.sql"]
nontransactional = ["shop.log"]

[[sources]]
name = "crm"
airflow_source_conn_id = "crm_mysql"
archive_uri = "s3://other/crm-binlogs"
nightly_cron = "30 3 * * *"
xa_max_age = 600
"""


def _load(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> Settings:
    cfg = tmp_path / "binlake.toml"
    cfg.write_text(text)
    return load_settings(cfg, env={"BINLAKE_HOME": str(tmp_path / "home"), **(env or {})})


# -- configuration --------------------------------------------------------------------------

def test_sources_table_and_for_source(tmp_path: Path) -> None:
    s = _load(tmp_path, TOML)
    assert s.source_names == ("shop1", "crm")
    assert s.source == "legacy" and s.archive_source_dir == ""  # the top level, untouched
    shop1 = s.for_source("shop1")
    assert shop1.source == "shop1"
    assert shop1.archive_source_dir == "/var/lib/mysql-shop1"
    assert shop1.schema_snapshots == ("/snap/shop1.sql",)
    assert shop1.nontransactional == ("shop.log",)
    assert shop1.archive_uri == "s3://bucket/binlogs"  # inherited
    assert shop1.airflow_s3_conn_id == "aws_default" and shop1.airflow_source_conn_id == ""
    crm = shop1.for_source("crm")  # from another source's settings: that one's overrides go
    assert crm.source == "crm" and crm.archive_source_dir == ""
    assert crm.schema_snapshots == ("/snap/top.jsonl",) and crm.nontransactional == ()
    assert crm.airflow_source_conn_id == "crm_mysql"
    assert crm.archive_uri == "s3://other/crm-binlogs" and crm.xa_max_age == 600.0
    assert s.source_settings("crm").nightly_cron == "30 3 * * *"
    # shared: the lake
    assert crm.catalog_uri_resolved == shop1.catalog_uri_resolved == s.catalog_uri_resolved
    with pytest.raises(ConfigError, match=r"no source named 'nope'.*shop1, crm"):
        s.for_source("nope")


def test_settings_rebuilt_from_asdict(tmp_path: Path) -> None:
    """lake/warmup.py rebuilds Settings from dataclasses.asdict() through JSON."""
    import dataclasses

    s = _load(tmp_path, TOML).for_source("shop1")
    raw = json.loads(json.dumps(dataclasses.asdict(s)))
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()}
    back = Settings(**values).validate()
    assert back == s and back.sources == s.sources
    assert back.for_source("crm") == s.for_source("crm")


def test_source_label_selects_its_settings(tmp_path: Path) -> None:
    """BINLAKE_SOURCE / --source-name naming a configured source (as the DAG's load job,
    validation and publish subprocesses get it) gives that source's settings."""
    s = _load(tmp_path, TOML, {"BINLAKE_SOURCE": "shop1"})
    assert s.source == "shop1" and s.archive_source_dir == "/var/lib/mysql-shop1"
    assert s.schema_snapshots == ("/snap/shop1.sql",)
    cfg = tmp_path / "binlake.toml"
    s2 = load_settings(cfg, env={}, source="crm")
    assert s2.airflow_source_conn_id == "crm_mysql" and s2.schema_snapshots == \
        ("/snap/top.jsonl",)


def test_without_sources_nothing_changes(tmp_path: Path) -> None:
    s = _load(tmp_path, 'source = "db7"\narchive_source_dir = "/x"\n')
    assert s.sources == () and s.source_names == ("db7",)
    assert s.for_source("db7") is s
    with pytest.raises(ConfigError, match="no source named 'other'"):
        s.for_source("other")
    assert load_settings(env={}) == Settings().validate()


def test_sources_from_the_environment(tmp_path: Path) -> None:
    env = {"BINLAKE_SOURCES": json.dumps([{"name": "a", "archive_source_dir": "/a"},
                                          {"name": "b", "schema_snapshots": "/s1,/s2"}])}
    s = load_settings(env=env)
    assert s.source_names == ("a", "b")
    assert s.for_source("b").schema_snapshots == ("/s1", "/s2")
    # the environment's list replaces the file's
    assert _load(tmp_path, TOML, env).source_names == ("a", "b")


@pytest.mark.parametrize(("text", "match"), [
    ('[[sources]]\nname = "a"\n[[sources]]\nname = "A"\n',
     r"sources\[1\]\.name: 'A' is configured twice"),
    ('[[sources]]\nname = "a/b"\n', r"sources\[0\]\.name: 'a/b' is not a source name"),
    ('[[sources]]\nname = "a.b"\n', r"sources\[0\]\.name: 'a.b' is not a source name"),
    ('[[sources]]\nname = ""\n', r"sources\[0\]\.name: '' is not a source name"),
    ('[[sources]]\nname = 7\n', r"sources\[0\]\.name: 7 is not a source name"),
    ('[[sources]]\narchive_source_dir = "/x"\n', r"sources\[0\]\.name: missing"),
    ('[[sources]]\nname = "a"\ncatalog_uri = "x"\n',
     r"sources\[0\]\.catalog_uri: not a per-source setting"),
    ('[[sources]]\nname = "a"\nnontransactional = ["nodot"]\n',
     r"nontransactional: 'nodot' is not db.table"),
    ('[[sources]]\nname = "a"\nxa_max_age = "soon"\n', r"sources\[0\]\.xa_max_age: invalid"),
    ('[[sources]]\nname = "a"\nnightly_cron = "daily"\n',
     r"sources\[0\]\.nightly_cron: 'daily' is not a 5-field cron"),
    ('sources = "a"\n', r"sources: expected a list of tables"),
])
def test_sources_validation(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        _load(tmp_path, text)


def test_sources_env_bad_json() -> None:
    with pytest.raises(ConfigError, match=r"sources: invalid JSON \(from \$BINLAKE_SOURCES\)"):
        load_settings(env={"BINLAKE_SOURCES": "[{"})


# -- what the DAG files see, names, the plan -------------------------------------------------

def test_dag_configs(tmp_path: Path) -> None:
    one = O.dag_configs({"BINLAKE_SOURCE": "db9"})
    assert [(c["archive_dag_id"], c["nightly_dag_id"], c["source"], c["multi"]) for c in one] \
        == [("binlake_archive", "binlake_nightly", "db9", False)]
    cfg = tmp_path / "binlake.toml"
    cfg.write_text(TOML)
    many = O.dag_configs({"BINLAKE_CONFIG": str(cfg)})
    assert [(c["archive_dag_id"], c["nightly_dag_id"], c["source"], c["nightly_cron"])
            for c in many] == [
        ("binlake_archive__shop1", "binlake_nightly__shop1", "shop1", "0 2 * * *"),
        ("binlake_archive__crm", "binlake_nightly__crm", "crm", "30 3 * * *")]
    assert all(c["multi"] for c in many)
    assert O.archive_asset_uri(many[1]) == "binlake://archive/crm"


def test_branch_names_are_per_source() -> None:
    run = "scheduled__2026-11-20T02:00:00+00:00"
    assert O.branch_name(run) == "af_scheduled_2026_11_20t02_00_00_00_00"
    a, b = O.branch_name(run, "shop1"), O.branch_name(run, "Shop-2")
    assert a == "af_shop1__scheduled_2026_11_20t02_00_00_00_00"
    assert b == "af_shop_2__scheduled_2026_11_20t02_00_00_00_00" and a != b


def test_plan_of_each_source_reads_its_own_files(tmp_path: Path) -> None:
    env = {"BINLAKE_HOME": str(tmp_path / "home"),
           "BINLAKE_SOURCES": json.dumps([{"name": "s1"}, {"name": "s2"}])}
    store = LocalStore(tmp_path / "home" / "archive")
    for src, names in (("s1", ["mariadb-bin.000001", "mariadb-bin.000002"]),
                       ("s2", ["mysql-bin.000007"])):
        for name in names:
            f = tmp_path / name
            f.write_bytes(f"{src}:{name}".encode())
            sha, size = sha256_file(f)
            store.put(src, name, f, sha256=sha, size=size,
                      archived_at="2026-11-20T10:00:00+00:00")
    base = load_settings(env=env)
    plans = {n: O.plan(base.for_source(n), run_id="manual__x", params={"to_date": "2026-11-30"},
                       ) for n in ("s1", "s2")}
    assert plans["s1"]["names"] == ["mariadb-bin.000001", "mariadb-bin.000002"]
    assert plans["s2"]["names"] == ["mysql-bin.000007"]
    assert plans["s1"]["branch"] == "af_s1__manual_x" != plans["s2"]["branch"]
    assert plans["s2"]["load_args"][:2] == ["--source-name", "s2"]
    assert plans["s2"]["spark_env"]["BINLAKE_SOURCE"] == "s2"


# -- a broken source does not stop the others -----------------------------------------------

def _server_with_closed_files(srv: MariaDBServer) -> list[str]:
    srv.execute(["CREATE DATABASE m", "CREATE TABLE m.t (id INT PRIMARY KEY)",
                 "INSERT INTO m.t VALUES (1)"])
    srv.flush_binary_logs()
    return [f.name for f in srv.closed_binlog_files()]


@pytest.mark.integration
def test_archive_step_of_two_sources_one_broken(fresh_mariadb: MariaDBServer,
                                                tmp_path: Path) -> None:
    closed = _server_with_closed_files(fresh_mariadb)
    env = {"BINLAKE_HOME": str(tmp_path / "home"), "BINLAKE_SOURCES": json.dumps([
        {"name": "good", "archive_source_dir": str(fresh_mariadb.binlog_dir)},
        {"name": "broken", "archive_source_dir": str(tmp_path / "unmounted")}])}
    base = load_settings(env=env)
    with pytest.raises(Exception, match="unmounted"):
        O.run_archive(base.for_source("broken"))
    rep = O.run_archive(base.for_source("good"))
    assert [a["name"] for a in rep["archived"]] == closed
    store = LocalStore(tmp_path / "home" / "archive")
    assert [o.name for o in store.list("good")] == closed
    assert list(store.list("broken")) == []


DAG_SCRIPT = textwrap.dedent("""
    import json, sys
    from datetime import UTC, datetime
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=sys.argv[1])
    out = {"errors": {k: str(v) for k, v in bag.import_errors.items()},
           "dags": sorted(bag.dags), "runs": {}, "tags": {}}
    for dag_id, dag in bag.dags.items():
        out["tags"][dag_id] = sorted(dag.tags)
    for dag_id in ("binlake_archive__broken", "binlake_archive__good"):
        dag = bag.dags[dag_id]
        dag.get_task("archive").retries = 0  # no minute-long retry delay in a test
        dr = dag.test(logical_date=datetime.now(UTC))
        out["runs"][dag_id] = {"state": str(dr.state), "tasks": {
            ti.task_id: str(ti.state) for ti in dr.get_task_instances()}}
    print("RESULT " + json.dumps(out))
""")


@pytest.mark.integration
@pytest.mark.slow
def test_dags_of_two_sources_one_broken(fresh_mariadb: MariaDBServer, tmp_path: Path) -> None:
    """The DagBag with two sources has both DAG pairs; the broken source's archive run fails
    and the other's succeeds (dag.test() in a subprocess with a private AIRFLOW_HOME)."""
    if shutil.which("airflow", path=os.path.dirname(sys.executable)) is None:
        pytest.importorskip("airflow")
    closed = _server_with_closed_files(fresh_mariadb)
    cfg = tmp_path / "binlake.toml"
    cfg.write_text(textwrap.dedent(f"""
        [[sources]]
        name = "good"
        archive_source_dir = "{fresh_mariadb.binlog_dir}"

        [[sources]]
        name = "broken"
        archive_source_dir = "{tmp_path / 'unmounted'}"
        nightly_cron = "0 4 * * *"
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BINLAKE_", "AIRFLOW"))}
    env.update({"AIRFLOW_HOME": str(tmp_path / "airflow"),
                "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
                "BINLAKE_HOME": str(tmp_path / "home"), "BINLAKE_CONFIG": str(cfg)})
    res = subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"],
                         capture_output=True, text=True, env=env, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    res = subprocess.run([sys.executable, "-c", DAG_SCRIPT, str(ROOT / "dags")],
                         capture_output=True, text=True, env=env, check=False, timeout=300)
    line = [x for x in res.stdout.splitlines() if x.startswith("RESULT ")]
    assert line, (res.stdout[-3000:], res.stderr[-3000:])
    out: dict[str, Any] = json.loads(line[-1][len("RESULT "):])
    assert out["errors"] == {}
    assert out["dags"] == ["binlake_archive__broken", "binlake_archive__good",
                           "binlake_maintain",  # one for the lake, whatever the sources
                           "binlake_nightly__broken", "binlake_nightly__good"]
    assert "source:good" in out["tags"]["binlake_nightly__good"]
    runs = out["runs"]
    assert runs["binlake_archive__broken"]["state"] == "failed", runs
    assert runs["binlake_archive__good"]["state"] == "success", runs
    store = LocalStore(tmp_path / "home" / "archive")
    assert [o.name for o in store.list("good")] == closed
    assert list(store.list("broken")) == []


def test_mirror_counts_setting() -> None:
    assert Settings().mirror_counts == "night"
    assert load_settings(env={"BINLAKE_MIRROR_COUNTS": "lake"}).mirror_counts == "lake"
    with pytest.raises(ConfigError, match="mirror_counts: 'all' is not night or lake"):
        load_settings(env={"BINLAKE_MIRROR_COUNTS": "all"})
