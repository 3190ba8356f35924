"""Bad input and unreachable things: every verb answers with ONE line ``binlake: error: ...``
naming the file, byte offset or settings key, and exit 1 or 2, never a traceback (``--debug``
adds the stack).  Each case is one a user reproduced (docs/reliability.md, "Bad input and
unreachable things").

The verbs run in-process (``binlake.cli.main`` with settings from the environment) and, where
nothing should need Spark, with ``build_session`` replaced by a failure: the error must come
before a JVM starts.  The lake cases that do need Spark (a read-only or full warehouse, a
publish of a branch nobody wrote) share the test session's Spark (one JVM).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .corpus import CORPUS, require_corpus

MARIADB = "libs/rust_mysql_common/mariadb-bin.000001"  # MariaDB 10.5, FULL row metadata
CLEAN = "mysql-8.0/std_data/replicated-bin.000001"


def one_error_line(err: str) -> str:
    """The only line of ``err``: ``binlake: error: ...`` (no traceback, nothing else)."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("binlake: error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """Run ``binlake ARGS`` in-process with a fresh home and no other BINLAKE_* settings;
    starting Spark fails the test.  Returns (exit status, stdout, stderr)."""
    import binlake.lake.spark as lake_spark
    from binlake.binlog.source import reset_s3_client
    from binlake.cli import main

    def no_spark(*a: object, **k: object) -> None:
        raise AssertionError("Spark was started")

    monkeypatch.setattr(lake_spark, "build_session", no_spark)
    for k in list(os.environ):
        if k.startswith("BINLAKE_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("BINLAKE_HOME", str(tmp_path / "home"))
    reset_s3_client()

    def go(*args: object) -> tuple[int, str, str]:
        capsys.readouterr()
        rc = main([str(a) for a in args])
        cap = capsys.readouterr()
        return rc, cap.out, cap.err

    return go


@pytest.fixture
def endpoint_down(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """An S3 endpoint nobody listens on (an unused 127.0.0.1 port), with credentials set so
    that boto3 gets as far as connecting."""
    from binlake.binlog.source import reset_s3_client
    from binlake_dev.mariadb import free_port

    url = f"http://127.0.0.1:{free_port()}"
    for var in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("BINLAKE_S3_ENDPOINT_URL", url)
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # (boto3 retries a refused connection)
    reset_s3_client()
    yield url
    reset_s3_client()


# -- inputs: s3:// alone, missing paths, an empty directory, an S3 endpoint that is down ------

@pytest.mark.parametrize("verb", [["transactions"], ["verify"], ["load"]])
def test_s3_scheme_alone(run: Any, verb: list[str]) -> None:
    rc, out, err = run(*verb, "s3://")
    assert rc == 1 and out == ""
    assert one_error_line(err) == ("binlake: error: s3://: not a valid s3 URI 's3://'; "
                                   "expected s3://bucket/key")


def test_validate_s3_scheme_alone_is_an_input_error(run: Any) -> None:
    rc, _, err = run("validate", "--no-lake", "s3://")
    assert rc == 2
    assert "s3://: not a valid s3 URI" in one_error_line(err)


def test_load_missing_path(run: Any, tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "mysql-bin.000001"
    rc, _, err = run("load", missing)
    assert rc == 1
    assert one_error_line(err) == (f"binlake: error: {missing}: cannot open: No such file or "
                                   "directory")


def test_load_empty_directory_says_nothing_was_found(run: Any, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "mysql-bin.index").write_text("./mysql-bin.000001\n")  # an index only
    rc, _, err = run("load", empty)
    assert rc == 1
    line = one_error_line(err)
    assert line.startswith(f"binlake: error: {empty}: no binlog files here"), line


def test_s3_endpoint_down(run: Any, endpoint_down: str) -> None:
    uri = "s3://bucket/binlogs/mysql-bin.000001"
    for verb in ("load", "transactions"):
        rc, _, err = run(verb, uri)
        assert rc == 1, verb
        line = one_error_line(err)
        assert line.startswith(f"binlake: error: {uri}: cannot read object: cannot reach the "
                               "S3 endpoint"), line
        assert endpoint_down in line
    rc, _, err = run("load", "s3://bucket/binlogs/")  # a prefix: listed
    assert rc == 1
    assert "s3://bucket/binlogs/: cannot list objects: cannot reach the S3 endpoint" in \
        one_error_line(err)


# -- settings: --master, spark_master, warehouse ---------------------------------------------

def test_bad_master_stops_before_spark(run: Any, tmp_path: Path) -> None:
    require_corpus()
    rc, _, err = run("load", "--master", "bogus", CORPUS / MARIADB)
    assert rc == 2
    assert one_error_line(err).startswith("binlake: error: --master: 'bogus' is not a Spark "
                                          "master")


@pytest.mark.parametrize(("toml", "key", "what"), [
    ("spark_master = 42", "spark_master", "expected a string (quoted in TOML), not an integer"),
    ('spark_master = "bogus"', "spark_master", "'bogus' is not a Spark master"),
    ("warehouse = 17", "warehouse", "expected a string (quoted in TOML), not an integer"),
    ('warehouse = "17"', "warehouse", "'17' is a relative path"),
    ('staging_dir = "s3://b/stage"', "staging_dir", "is not an absolute local path"),
    ('staging_dir = "17"', "staging_dir", "is not an absolute local path"),
    ("split_bytes = true", "split_bytes", "expected an integer, not a boolean"),
])
def test_config_file_values_are_checked(run: Any, tmp_path: Path, toml: str, key: str,
                                        what: str) -> None:
    require_corpus()
    config = tmp_path / "binlake.toml"
    config.write_text(toml + "\n")
    for verb in (["load", CORPUS / MARIADB], ["publish", "--branch", "b"],
                 ["archive", "--from-dir", tmp_path]):
        rc, _, err = run(verb[0], "--config", config, *verb[1:])
        assert rc == 2, (verb, err)
        line = one_error_line(err)
        assert line.startswith(f"binlake: error: {key}: ") and what in line, line
    assert not (tmp_path / "17").exists() and not Path("17").exists()


# -- archive --from-dir ------------------------------------------------------------------------

def test_archive_from_a_regular_file(run: Any, tmp_path: Path) -> None:
    require_corpus()
    for f in (CORPUS / MARIADB, tmp_path / "notes.txt"):
        if not f.exists():
            f.write_text("mysql-bin.000001\n")
        rc, _, err = run("archive", "--from-dir", f)
        assert rc == 1
        assert one_error_line(err) == (
            f"binlake: error: {f}: not a binlog directory or .index file (the source is the "
            "server's binlog directory, or the .index file in it)")


def test_archive_index_not_utf8(run: Any, tmp_path: Path) -> None:
    index = tmp_path / "mysql-bin.index"
    index.write_bytes(b"./mysql-bin.000001\n./mysql-bin.\xff\xfe0002\n")
    for source in (index, tmp_path):  # named, or found in its directory
        rc, _, err = run("archive", "--from-dir", source)
        assert rc == 1
        assert one_error_line(err) == (f"binlake: error: {index} at byte 31: not a binlog "
                                       "index (not UTF-8 text: b'\\xff\\xfe00')")


# -- the last resort and --debug -------------------------------------------------------------

def test_unexpected_error_is_one_line_and_debug_shows_the_stack(
        run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import binlake.cli.decode as decode_cli

    def boom(args: Any) -> int:
        raise RuntimeError("something broke\nsecond line")

    monkeypatch.setattr(decode_cli, "cmd_verify", boom)
    from binlake.cli import build_parser

    # (the parser binds the function when it is built: rebuild after patching)
    assert build_parser().parse_args(["verify", "x"]).func is boom
    rc, _, err = run("verify", "x")
    assert rc == 1
    assert one_error_line(err) == ("binlake: error: unexpected RuntimeError: something broke "
                                   "(a bug: please report it with the output of binlake "
                                   "--debug ...)")
    rc, _, err = run("--debug", "verify", "x")
    assert rc == 1 and "Traceback" in err and "RuntimeError: something broke" in err
    assert err.splitlines()[-1].startswith("binlake: error: unexpected RuntimeError")


def test_real_command_line_no_traceback_unless_debug() -> None:
    """The console entry point itself (a subprocess, no JVM): one line; --debug: the stack."""
    cmd = [sys.executable, "-m", "binlake.cli"]
    p = subprocess.run([*cmd, "transactions", "s3://"], capture_output=True, text=True,
                       timeout=120, check=False)
    assert p.returncode == 1
    one_error_line(p.stderr)
    p = subprocess.run([*cmd, "--debug", "transactions", "s3://"], capture_output=True,
                       text=True, timeout=120, check=False)
    assert p.returncode == 1
    assert "Traceback" in p.stderr and "SourceError" in p.stderr
    assert p.stderr.splitlines()[-1].startswith("binlake: error: s3://: not a valid s3 URI")


def test_java_error_text_in_one_line() -> None:
    """What a read-only warehouse's Py4J error says, cut to its first and innermost
    exceptions (binlake.cli.common.one_line)."""
    from binlake.cli.common import one_line

    text = ("An error occurred while calling o61.sql.\n"
            ": org.apache.iceberg.exceptions.RuntimeIOException: Failed to create file: "
            "file:/ro/wh/binlog/files/metadata/00000-a.metadata.json\n"
            "\tat org.apache.iceberg.hadoop.HadoopOutputFile.createOrOverwrite("
            "HadoopOutputFile.java:87)\n"
            "Caused by: java.io.IOException: Mkdirs failed to create "
            "file:/ro/wh/binlog/files/metadata (exists=false, cwd=file:/tmp)\n"
            "\tat org.apache.hadoop.fs.ChecksumFileSystem.create(ChecksumFileSystem.java:715)\n"
            "\t... 61 more\n")
    assert one_line(RuntimeError(text)) == (
        "Failed to create file: file:/ro/wh/binlog/files/metadata/00000-a.metadata.json "
        "(caused by IOException: Mkdirs failed to create file:/ro/wh/binlog/files/metadata "
        "(exists=false, cwd=file:/tmp))")
    worker = ("An exception was thrown from the Python worker. Please see the stack trace "
              "below.\nTraceback (most recent call last):\n  File \"x.py\", line 1, in f\n"
              "OSError: [Errno 28] No space left on device: '/full/wh/data/x.parquet'\n")
    assert one_line(RuntimeError(worker)) == ("[Errno 28] No space left on device: "
                                              "'/full/wh/data/x.parquet'")


# -- the lake: a read-only or full warehouse, a branch nobody wrote (Spark) -------------------

@pytest.fixture
def lake_cli(spark_lake: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
             request: pytest.FixtureRequest) -> Callable[..., tuple[int, str]]:
    """``binlake ...`` in-process on the shared Spark session, in a fresh lake (its own home
    and catalog name); returns (exit status, everything on stdout and stderr, the JVM's
    output included)."""
    from binlake.cli import main

    capfd = request.getfixturevalue("capfd")
    for k in list(os.environ):
        if k.startswith("BINLAKE_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("BINLAKE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BINLAKE_CATALOG_NAME", f"errors_{request.node.name[:20]}".replace(
        "[", "_").replace("]", "_").replace("-", "_"))

    def go(*args: object) -> tuple[int, str]:
        capfd.readouterr()
        rc = main([str(a) for a in args])
        cap = capfd.readouterr()
        return rc, cap.err

    return go


def _mount_tmpfs(path: Path, options: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
                          capture_output=True, check=False).returncode == 0


def _umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


@pytest.mark.spark
def test_load_into_a_read_only_warehouse(lake_cli: Any, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    require_corpus()
    ro = tmp_path / "ro"
    mounted = _mount_tmpfs(ro, "ro,size=1m")
    if not mounted:
        if os.geteuid() == 0:
            pytest.skip("root without mount: no read-only directory to be had")
        ro.chmod(0o555)
    try:
        monkeypatch.setenv("BINLAKE_WAREHOUSE", (ro / "wh").as_uri())
        rc, err = lake_cli("load", CORPUS / MARIADB)
    finally:
        if mounted:
            _umount(ro)
        else:
            ro.chmod(0o755)
    assert rc == 1
    line = one_error_line(err)
    assert line.startswith(f"binlake: error: the load failed (warehouse {(ro / 'wh').as_uri()}"
                           ), line
    assert f"Mkdirs failed to create file:{ro}/wh" in line, line
    assert (f"{ro} is on a read-only file system" if mounted
            else f"no permission to write in {ro}") in line


# what the driver JVM of every local Spark session prints as it starts (lake/spark.py), before
# binlake has a say: not part of any error
JVM_START = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d WARN (Utils|NativeCodeLoader): |"
                       r"^Setting default log level to|^To adjust logging level use")


@pytest.mark.spark
def test_load_into_a_full_warehouse(tmp_path: Path) -> None:
    """A subprocess, so that the JVM's own output is seen too: a decode task that fails
    writing its data files makes Spark log the task's stack; binlake turns that off, and
    says it in one line."""
    require_corpus()
    pytest.importorskip("pyspark")
    full = tmp_path / "full"
    if not _mount_tmpfs(full, "size=96k"):
        pytest.skip("a small file system needs mount (root)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BINLAKE_")}
    env.update(BINLAKE_HOME=str(tmp_path / "home"), BINLAKE_WAREHOUSE=(full / "wh").as_uri(),
               BINLAKE_SPARK_MASTER="local[2]")
    try:
        # 3.7 MB of binlog: the catalog's metadata fits, the row changes' data files do not
        p = subprocess.run([sys.executable, "-m", "binlake.cli", "load", CORPUS / (
            "libs/mariadb-poc/binlogs/domain_id_0/mariadb-repl-bin.000002")],
            capture_output=True, text=True, env=env, timeout=600, check=False)
    finally:
        _umount(full)
    assert p.returncode == 1, p.stderr
    line = one_error_line("\n".join(x for x in p.stderr.splitlines() if not JVM_START.match(x)))
    assert line.startswith(f"binlake: error: the load failed (warehouse "
                           f"{(full / 'wh').as_uri()}"), line
    assert "No space left on device" in line, line


@pytest.mark.spark
def test_publish_a_branch_nobody_wrote(lake_cli: Any) -> None:
    require_corpus()
    rc, err = lake_cli("load", CORPUS / CLEAN)
    assert rc == 0, err
    for verb in (["publish", "--branch", "nosuch"], ["publish", "--discard", "--branch", "x"]):
        rc, err = lake_cli(*verb)
        assert rc == 1
        line = one_error_line(err)
        assert line.startswith(f"binlake: error: branch {verb[-1]}: no table of the lake has "
                               "it"), line
        # --if-exists (the nightly DAG: a retry, a night that wrote nothing): not an error
        rc, err = lake_cli(*verb, "--if-exists")
        assert rc == 0, err
