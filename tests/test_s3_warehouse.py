"""A lake whose warehouse is on S3 (issue 24, item 1), end to end, offline.

The S3 store is a moto server on 127.0.0.1 that checks every request's SigV4 signature (moto's
IAM mode, ``INITIAL_NO_AUTH_ACTION_COUNT``): a request signed wrong is refused as real S3
would refuse it.  Spark's Iceberg catalog reaches the warehouse through binlake's JDK-only S3
FileIO (``lib/binlake/lake/jvm/HttpS3FileIO.java``: Iceberg's own S3FileIO needs the AWS
SDK bundle, which no package here ships), the executors write their data files through
pyarrow: the same commit path as a local warehouse.

Input: real MariaDB binlogs (conftest's alltypes_stream: every column type, XA across rotations
and a pending XA, mixed engines, DDL), archived on S3.  The nightly path runs as the DAG runs
it (load on a branch, validate the branch, publish), each step a ``binlake`` process; the
published tables, read back with pyiceberg from S3 and with DuckDB over Arrow, equal a
``local[2]`` load of the same files into a local warehouse, cell by cell.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .lake_dump import diff_lakes, dump
from .s3 import signing_moto

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.integration]

pytest.importorskip("pyspark")
pytest.importorskip("pyiceberg")

BINLAKE = [sys.executable, "-m", "binlake.cli"]
ARCHIVE, LAKE = "binlake-archive", "binlake-lake"


class S3:
    def __init__(self, endpoint: str, key: str, secret: str) -> None:
        self.endpoint, self.key, self.secret = endpoint, key, secret

    def client(self) -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id=self.key, aws_secret_access_key=self.secret)

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket,
                                                                         Prefix=prefix)
        return [o["Key"] for p in pages for o in p.get("Contents", [])]


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3]:
    """A moto server that checks signatures (tests/s3.py ``signing_moto``) with the two
    buckets."""
    with signing_moto(tmp_path_factory.mktemp("moto")) as (endpoint, key, secret):
        store = S3(endpoint, key, secret)
        for bucket in (ARCHIVE, LAKE):
            store.client().create_bucket(Bucket=bucket)
        yield store


def _config(path: Path, home: Path, s3: S3, prefix: str) -> Path:
    path.write_text(f'home = "{home}"\nwarehouse = "s3://{LAKE}/{prefix}"\n'
                    f's3_endpoint_url = "{s3.endpoint}"\n')
    return path


def _env(s3: S3, secret: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("BINLAKE_", "AWS_"))}
    env.update(AWS_ACCESS_KEY_ID=s3.key, AWS_SECRET_ACCESS_KEY=secret or s3.secret,
               AWS_DEFAULT_REGION="us-east-1", AWS_CONFIG_FILE=os.devnull,
               AWS_SHARED_CREDENTIALS_FILE=os.devnull)
    return env


def binlake(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*BINLAKE, *args], env=env, capture_output=True, text=True,
                          timeout=900, check=False)


def s3_catalog(home: Path, s3: S3, prefix: str) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog("binlake", uri=f"sqlite:///{home}/catalog.db",
                      warehouse=f"s3://{LAKE}/{prefix}", **{
                          "s3.endpoint": s3.endpoint, "s3.access-key-id": s3.key,
                          "s3.secret-access-key": s3.secret, "s3.region": "us-east-1"})


@pytest.fixture(scope="module")
def nightly(s3: S3, alltypes_stream: Path, tmp_path_factory: pytest.TempPathFactory
            ) -> tuple[Path, dict[str, Any]]:
    """The stream archived on S3 in two nights (the first half of its files, then the
    rest), each loaded on a branch, validated and published into an S3 warehouse: each
    step's summary (``load``, ``validate``: the second night's; ``load1``: the first's)."""
    client = s3.client()
    files = sorted(alltypes_stream.iterdir())
    half = max(1, len(files) // 2)
    home = tmp_path_factory.mktemp("s3-lake")
    cfg = _config(home / "binlake.toml", home, s3, "lake")
    env = _env(s3)
    src = f"s3://{ARCHIVE}/binlogs/db1/"
    steps: dict[str, Any] = {}
    for night, names in (("night1", files[:half]), ("night2", files[half:])):
        for f in names:
            client.upload_file(str(f), ARCHIVE, f"binlogs/db1/{f.name}")
        load = binlake(env, "load", "--config", str(cfg), "--master", "local[2]", "--json",
                       "--run-id", night, "--branch", night, src)
        assert load.returncode == 0, load.stderr[-3000:]
        steps["load1" if night == "night1" else "load"] = json.loads(load.stdout)
        val = binlake(env, "validate", "--config", str(cfg), "--master", "local[2]", "--json",
                      "--run-id", night, "--branch", night, src)
        assert val.returncode == 0, (val.stdout[-3000:], val.stderr[-3000:])
        steps["validate"] = json.loads(val.stdout)
        pub = binlake(env, "publish", "--config", str(cfg), "--master", "local[2]",
                      "--branch", night)
        assert pub.returncode == 0, pub.stderr[-3000:]
    return home, steps


def test_mirrors_on_s3_are_folded_from_staged_deltas(nightly: tuple[Path, dict[str, Any]]
                                                    ) -> None:
    """With a local master, the decode tasks stage the mirrors' deltas on local disk (under
    ``home``) though the warehouse is on S3: no mirror is filled from ``row_changes`` by
    Spark ("spark"), and the second night MERGEs into mirrors the first one made."""
    home, steps = nightly
    made = set(steps["load1"]["typed"]["created"])
    folds: dict[str, list[tuple[str, bool]]] = {}
    for night in ("load1", "load"):
        for rep in steps[night]["typed"]["tables"].values():
            if rep.get("mirror_rows"):
                folds.setdefault(night, []).append(
                    (str(rep.get("mirror_fold")), rep.get("mirror") in made))
    assert folds.get("load1") and folds.get("load"), (folds, steps["load"]["typed"])
    assert all(where != "spark" for night in folds.values() for where, _ in night), folds
    assert any(existed for _, existed in folds["load"]), folds  # a MERGE on S3
    assert not (home / "_binlake_staging").exists() or \
        not any((home / "_binlake_staging").iterdir())  # removed after each run


def test_nightly_on_s3_equals_local_load(nightly: tuple[Path, dict[str, Any]], s3: S3,
                                         alltypes_clean: tuple[Path, float, Any]
                                         ) -> None:
    home, steps = nightly
    _, _, local = alltypes_clean
    loaded = [f["file"] for night in ("load1", "load") for f in steps[night]["files"]
              if f["status"] == "loaded"]
    assert sorted(loaded) == sorted({f["file"] for f in steps["load"]["files"]}), \
        (steps["load1"]["files"], steps["load"]["files"])  # each file once, in one night
    got = dump(None, cat=s3_catalog(home, s3, "lake"))
    assert set(got) - {"validation_results"} == set(local) - {"validation_results"}
    # ``files.uri`` is where each file was read from: the S3 archive here, a directory there
    uris = {dict(r)["file"]: dict(r)["uri"] for r in got["files"]}
    assert uris == {f: f"s3://{ARCHIVE}/binlogs/db1/{f}" for f in uris} and uris
    # (stream_facts' range rows say where each decode range began and ended: two nights cut
    # the files into other ranges than one load of them all)
    problems = diff_lakes(*({k: v for k, v in _without_uri(lake).items() if k != "stream_facts"}
                            for lake in (local, got)))
    assert not problems, problems
    assert any(t.startswith("mirror__") and got[t] for t in got)


def _without_uri(tables: dict[str, Counter[Any]]) -> dict[str, Counter[Any]]:
    out = {k: v for k, v in tables.items() if k not in ("validation_results", "files")}
    out["files"] = Counter(tuple(c for c in row if c[0] != "uri")
                           for row in tables["files"].elements())
    return out


def test_tables_live_on_s3(nightly: tuple[Path, dict[str, Any]], s3: S3) -> None:
    """Every table's metadata and data are objects in the lake bucket; nothing of the
    warehouse is on local disk; no branch is left after the publish; every data object is
    referenced by a snapshot."""
    home, _ = nightly
    assert not (home / "warehouse").exists()
    cat = s3_catalog(home, s3, "lake")
    keys = set(s3.keys(LAKE, "lake/"))
    unreferenced = []
    for ident in cat.list_tables("binlog"):
        table = cat.load_table(ident)
        assert table.metadata.location.startswith(f"s3://{LAKE}/lake/"), table.metadata.location
        assert set(table.metadata.refs) == {"main"}, (ident, set(table.metadata.refs))
        meta = table.metadata_location
        assert meta.startswith(f"s3://{LAKE}/") and meta[len(f"s3://{LAKE}/"):] in keys
        referenced = set()
        for snap in table.metadata.snapshots:
            for manifest in snap.manifests(table.io):
                referenced |= {e.data_file.file_path for e in manifest.fetch_manifest_entry(
                    table.io, discard_deleted=False)}
        prefix = table.metadata.location[len(f"s3://{LAKE}/"):].rstrip("/") + "/data/"
        data = {k for k in keys if k.startswith(prefix)}
        unreferenced += sorted(k for k in data if f"s3://{LAKE}/{k}" not in referenced)
        assert {r[len(f"s3://{LAKE}/"):] for r in referenced} <= keys, ident
    assert not unreferenced, unreferenced[:10]


def test_duckdb_reads_the_published_tables(nightly: tuple[Path, dict[str, Any]], s3: S3,
                                           alltypes_clean: tuple[Path, float, Any]
                                           ) -> None:
    """The analyst's route: pyiceberg plans the scan on S3, DuckDB queries the Arrow."""
    duckdb = pytest.importorskip("duckdb")
    home, _ = nightly
    _, _, local = alltypes_clean
    cat = s3_catalog(home, s3, "lake")
    con = duckdb.connect()
    counted = {}
    for ident in cat.list_tables("binlog"):
        con.register(ident[-1], cat.load_table(ident).scan().to_arrow())
        counted[ident[-1]] = con.sql(f'SELECT count(*) FROM "{ident[-1]}"').fetchall()[0][0]
    assert counted["row_changes"] == sum(local["row_changes"].values()) > 0
    for name, rows in local.items():
        if name not in ("validation_results", "stream_facts"):  # (ranges: see above)
            assert counted[name] == sum(rows.values()), name
    by_op = dict(con.sql("SELECT op, count(*) FROM row_changes GROUP BY op").fetchall())
    want = Counter(dict(row)["op"] for row in local["row_changes"].elements())
    assert by_op == dict(want)


def test_wrong_secret_is_one_line_naming_the_object(s3: S3, alltypes_stream: Path,
                                                    tmp_path: Path) -> None:
    """A key the store refuses: the load exits 1 with one line that names the S3 object and
    the store's reason; no traceback."""
    cfg = _config(tmp_path / "binlake.toml", tmp_path / "home", s3, "refused")
    done = binlake(_env(s3, secret=s3.secret + "x"), "load", "--config", str(cfg),
                   "--master", "local[1]", str(alltypes_stream))
    assert done.returncode == 1, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("binlake: error:"), done.stderr[-2000:]
    assert f"s3://{LAKE}/refused/" in last and "SignatureDoesNotMatch" in last, last
    assert "Traceback" not in done.stderr
    assert not s3.keys(LAKE, "refused/")


def test_session_conf_names_the_fileio_without_secrets(tmp_path: Path) -> None:
    """Which FileIO an S3 warehouse gets, and that no credential is in Spark's conf."""
    from binlake.config import Settings
    from binlake.lake.jvm import BINLAKE_S3_IO, ICEBERG_S3_IO
    from binlake.lake.spark import catalog_conf, jars_for, s3_fileio

    local = Settings(home=str(tmp_path))
    assert s3_fileio(local) is None
    assert not any(k.endswith(".io-impl") for k in catalog_conf(local))
    s3w = Settings(home=str(tmp_path), warehouse="s3://b/w", s3_endpoint_url="http://h:1")
    conf = catalog_conf(s3w)
    assert conf["spark.sql.catalog.binlake.io-impl"] == BINLAKE_S3_IO
    assert conf["spark.sql.catalog.binlake.s3.endpoint"] == "http://h:1"
    assert conf["spark.sql.catalog.binlake.s3.path-style-access"] == "true"
    assert not any("secret" in k or "access-key" in k for k in conf)
    jar = [j for j in jars_for(s3w) if "binlake-s3fileio" in j]
    assert len(jar) == 1 and os.path.getsize(jar[0]) > 0
    import zipfile

    assert "binlake/iceberg/HttpS3FileIO.class" in zipfile.ZipFile(jar[0]).namelist()
    online = Settings(home=str(tmp_path), warehouse="s3://b/w",
                      spark_packages="org.apache.iceberg:iceberg-aws-bundle:1.10.2")
    assert s3_fileio(online) == ICEBERG_S3_IO
    assert not any("binlake-s3fileio" in j for j in jars_for(online))
    chosen = Settings(home=str(tmp_path), warehouse="s3://b/w",
                      catalog_properties={"io-impl": "x.Y"})
    assert catalog_conf(chosen)["spark.sql.catalog.binlake.io-impl"] == "x.Y"


class _Throttle:
    """An HTTP proxy in front of the S3 endpoint that answers every ``every``-th request
    with S3's throttling replies, 429 SlowDown and 503 SlowDown in turn, and forwards the
    others (Host header kept: the signatures stay valid)."""

    def __init__(self, target: str, every: int) -> None:
        import http.client
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from urllib.parse import urlsplit

        self.faults: Counter[int] = Counter()
        self.requests = 0
        lock = threading.Lock()
        up = urlsplit(target)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _any(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                with lock:
                    outer.requests += 1
                    k = outer.requests
                if k % every == 0:
                    status = 429 if (k // every) % 2 else 503
                    outer.faults[status] += 1
                    err = (b"<?xml version=\"1.0\"?><Error><Code>SlowDown</Code><Message>"
                           b"Please reduce your request rate.</Message></Error>")
                    self.send_response(status)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(err)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(err)
                    return
                conn = http.client.HTTPConnection(up.hostname, up.port, timeout=120)
                try:
                    conn.request(self.command, self.path, body=body,
                                 headers={k: v for k, v in self.headers.items()})
                    r = conn.getresponse()
                    data = r.read()
                    self.send_response(r.status)
                    for k, v in r.getheaders():
                        if k.lower() not in ("transfer-encoding", "connection",
                                             "content-length"):
                            self.send_header(k, v)
                    # (a HEAD's Content-Length is the object's size, with no body)
                    self.send_header("Content-Length", r.getheader("Content-Length", "0")
                                     if self.command == "HEAD" else str(len(data)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(data)
                finally:
                    conn.close()

            do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = _any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("throttled", [False, True], ids=["direct", "throttled"])
def test_fileio_operations(s3: S3, tmp_path: Path, throttled: bool) -> None:
    """binlake's S3 FileIO on its own (tests/java/FileIOCheck.java), against the signing
    moto: a 9 MB object under a key with a space, '=', '+' and non-ASCII characters, written
    in pieces and read back at 200 random positions and lengths (byte reads, block reads
    across chunks, readFully, readTail); create() refuses an existing object; a missing one
    is NotFoundException / exists() false; a listing past one page (1,000 keys); deletePrefix;
    deleteFile twice.  The bytes boto3 reads under that key are the bytes written.
    ``throttled``: the same through a proxy that answers every 25th request with S3's
    throttling replies (429 and 503 SlowDown): every operation is retried and succeeds."""
    import hashlib
    import shutil

    from binlake.lake.jvm import fileio_jar
    from binlake.lake.spark import iceberg_runtime_jar

    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None or java is None:
        pytest.skip("no JDK")
    runtime = iceberg_runtime_jar()
    assert runtime is not None
    cp = f"{runtime}:{fileio_jar(runtime)}"
    src = Path(__file__).with_name("java") / "FileIOCheck.java"
    subprocess.run([javac, "-nowarn", "-cp", cp, "-d", str(tmp_path), str(src)], check=True,
                   capture_output=True)
    client = s3.client()
    prefix = "fio-throttled/" if throttled else "fio/"
    for i in range(1005):
        client.put_object(Bucket=LAKE, Key=f"{prefix}many/{i:05d}", Body=b"abc")
    proxy = _Throttle(s3.endpoint, 25) if throttled else None
    endpoint = proxy.endpoint if proxy is not None else s3.endpoint
    env = {**_env(s3), "BINLAKE_S3_ENDPOINT_URL": endpoint, "AWS_REGION": "us-east-1"}
    try:
        done = subprocess.run([java, "-cp", f"{cp}:{tmp_path}", "FileIOCheck",
                               f"s3://{LAKE}/{prefix}", "1005"], env=env, capture_output=True,
                              text=True, timeout=300, check=False)
    finally:
        if proxy is not None:
            proxy.close()
    assert done.returncode == 0, done.stderr[-3000:]
    if proxy is not None:
        assert proxy.faults[429] >= 10 and proxy.faults[503] >= 10, proxy.faults
    out = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert out["create-again"] == "refused"
    assert out["length"] == f"{9 * 1024 * 1024 + 123} exists true"
    assert out["missing-exists"] == "false"
    assert out["missing-length"] == "NotFoundException"
    assert out["read-mismatches"] == "0"
    assert out["listed"] == "1005" and out["list-mismatches"] == "0"
    assert out["left-after-delete"] == "0"
    assert out["deleted-exists"] == "false"
    assert done.stdout.rstrip().endswith("done")
    key = f"{prefix}odd key/day=2024-01-01/a+b ü.bin"
    body = client.get_object(Bucket=LAKE, Key=key)["Body"].read()
    assert hashlib.sha256(body).hexdigest() == out["sha256"]
    assert s3.keys(LAKE, prefix) == [key]


def test_scale_out_examples_parse_and_pick_the_bundle() -> None:
    """infra/scale-out's example configurations load, and the PostgreSQL one (online, with
    the AWS bundle) gets Iceberg's S3FileIO for its s3:// warehouse."""
    from binlake.config import load_settings
    from binlake.lake.jvm import ICEBERG_S3_IO
    from binlake.lake.spark import catalog_conf, s3_fileio

    root = Path(__file__).resolve().parents[1] / "infra" / "scale-out"
    pg = load_settings(str(root / "binlake.toml"))
    assert pg.source_names == ("orders-db-1",) and pg.warehouse_resolved.startswith("s3://")
    assert s3_fileio(pg) == ICEBERG_S3_IO
    assert catalog_conf(pg)["spark.sql.catalog.binlake.io-impl"] == ICEBERG_S3_IO
    rest = load_settings(str(root / "binlake-rest.toml"))
    assert rest.catalog_type == "rest" and s3_fileio(rest) is None  # the server's FileIO
