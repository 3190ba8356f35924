"""The jars and catalog options a Spark session gets (binlake.lake.spark), without a JVM."""

from __future__ import annotations

from pathlib import Path

import pytest

from binlake.config import load_settings

pytest.importorskip("pyspark")

from binlake.lake import spark as S


def settings(tmp_path: Path, uri: str = "", **kw: object):  # type: ignore[no-untyped-def]
    return load_settings(env={"BINLAKE_HOME": str(tmp_path), "BINLAKE_CATALOG_URI": uri}, **kw)


def test_postgresql_driver_found_like_sqlite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    pg = "postgresql+psycopg2://binlake:secret@127.0.0.1:5432/lake"
    jar = tmp_path / "postgresql.jar"
    jar.write_bytes(b"PK")
    monkeypatch.setattr(S, "POSTGRESQL_JARS", ("/nonexistent/pg.jar", str(jar)))
    jars = S.jars_for(settings(tmp_path, pg))
    assert jars[-1] == str(jar) and "iceberg-spark-runtime-3.5_2.12-1.10.2" in jars[0]
    assert not any("sqlite" in j for j in jars)
    # SQLite: its driver, not PostgreSQL's
    assert not any(j == str(jar) for j in S.jars_for(settings(tmp_path)))
    # missing: a clear error naming the Debian package and the settings
    monkeypatch.setattr(S, "POSTGRESQL_JARS", ("/nonexistent/pg.jar",))
    with pytest.raises(S.SparkSetupError, match=r"libpostgresql-jdbc-java.*spark_jars"):
        S.jars_for(settings(tmp_path, pg))
    # spark_jars (every jar, as given) or spark_packages (Maven) replace the discovery
    assert S.jars_for(settings(tmp_path, pg, spark_jars="/a.jar, /b.jar")) == ["/a.jar", "/b.jar"]
    assert S.jars_for(settings(tmp_path, pg, spark_packages="org.postgresql:postgresql:42.5.5")
                      ) == []


def test_sqlite_catalog_options(tmp_path: Path) -> None:
    """One JDBC connection per JVM on SQLite, the catalog's tables made by prepare_catalog
    (docs/reliability.md: the busy catalog)."""
    conf = S.catalog_conf(settings(tmp_path))
    p = "spark.sql.catalog.binlake"
    assert conf[f"{p}.clients"] == "1"
    assert conf[f"{p}.jdbc.init-catalog-tables"] == "false"
    assert conf[f"{p}.jdbc.busy_timeout"] == "60000"
    pg = S.catalog_conf(settings(tmp_path, "postgresql+psycopg2://u@127.0.0.1/lake"))
    assert f"{p}.clients" not in pg and pg[f"{p}.jdbc.init-catalog-tables"] == "false"


def test_executors_get_s3_settings_and_credentials(tmp_path: Path) -> None:
    """On a cluster the executors read the S3 archive with boto3 in processes that do not
    inherit the driver's environment: endpoint, credentials and region go as executorEnv."""
    env = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "s3cr3t",
           "AWS_REGION": "eu-west-1", "HOME": "/root", "AWS_SESSION_TOKEN": ""}
    conf = S.executor_env(settings(tmp_path, s3_endpoint_url="http://127.0.0.1:9000"), env)
    assert conf == {"spark.executorEnv.AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
                    "spark.executorEnv.AWS_SECRET_ACCESS_KEY": "s3cr3t",
                    "spark.executorEnv.AWS_REGION": "eu-west-1",
                    "spark.executorEnv.BINLAKE_S3_ENDPOINT_URL": "http://127.0.0.1:9000"}
    import re

    # Spark redacts these keys' values in its UI and event log
    redact = re.compile(S.REDACTION_REGEX)
    assert all(redact.search(k) for k in conf if "AWS_" in k and "REGION" not in k)
    assert not redact.search("spark.executorEnv.AWS_REGION")
