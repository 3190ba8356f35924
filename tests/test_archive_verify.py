"""``binlake archive --verify`` reads every archived object again and compares its bytes with
the sha256 recorded when it was archived: an object changed in the store (one byte flipped,
same size) is reported on its own line with exit 1, on the local store and on S3 (moto).
Before, --verify hashed the source files again and never looked at the stored bytes.

The sources are corpus binlogs copied into a binlog directory with its .index (the last file
listed is the one "the server still writes", so it is not archived)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from binlake.archive.objectstore import sha256_file

from .corpus import CORPUS, require_corpus
from .s3 import moto_s3

SOURCE = [CORPUS / "mysql-8.0/std_data/replicated-bin.000001",
          CORPUS / "mysql-8.0/std_data/replicated-bin.000002"]


def binlog_dir(tmp_path: Path) -> Path:
    """replicated-bin.000001, .000002 (closed) and .000003 (the one being written)."""
    require_corpus()
    d = tmp_path / "binlogs"
    d.mkdir()
    for i, src in enumerate([*SOURCE, SOURCE[1]], 1):
        shutil.copyfile(src, d / f"replicated-bin.00000{i}")
    (d / "replicated-bin.index").write_text(
        "".join(f"./replicated-bin.00000{i}\n" for i in (1, 2, 3)))
    return d


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    from binlake.cli import main

    for k in list(os.environ):
        if k.startswith("BINLAKE_") and k != "BINLAKE_S3_ENDPOINT_URL":
            monkeypatch.delenv(k)
    monkeypatch.setenv("BINLAKE_HOME", str(tmp_path / "home"))

    def go(*args: object) -> tuple[int, str, str]:
        capsys.readouterr()
        rc = main([str(a) for a in args])
        cap = capsys.readouterr()
        return rc, cap.out, cap.err

    return go


def flip_a_byte(data: bytes, at: int = 200) -> bytes:
    raw = bytearray(data)
    raw[at] ^= 0x01
    return bytes(raw)


def check_verify(run: Any, source: Path, uri_of: Callable[[str], str],
                 tamper: Callable[[str], None]) -> None:
    """Archive, verify (clean), change one stored object, then: a plain run does not read
    it, --verify names it (and only it) and exits 1."""
    rc, out, err = run("archive", "--from-dir", source, "--source-name", "db1")
    assert rc == 0, err
    assert "2 archived" in out
    rc, out, err = run("archive", "--from-dir", source, "--source-name", "db1", "--verify")
    assert rc == 0, err
    assert "verified 2 archived object(s) against their recorded sha256: 0 differ" in out
    tamper("replicated-bin.000001")
    rc, out, err = run("archive", "--from-dir", source, "--source-name", "db1")
    assert rc == 0, err  # (without --verify nothing archived is read again)
    rc, out, err = run("archive", "--from-dir", source, "--source-name", "db1", "--verify",
                       "--json")
    assert rc == 1
    uri = uri_of("replicated-bin.000001")
    recorded = sha256_file(SOURCE[0])[0]
    (line,) = err.splitlines()
    assert line.startswith(f"binlake: error: {uri}: stored bytes have sha256 "), line
    assert f"recorded {recorded} when it was archived" in line, line
    report = json.loads(out)
    assert [c["name"] for c in report["corrupt"]] == ["replicated-bin.000001"]
    assert report["corrupt"][0]["recorded"] == recorded
    assert report["verified"] == ["replicated-bin.000002"]


def test_verify_reads_the_local_store(run: Any, tmp_path: Path) -> None:
    source = binlog_dir(tmp_path)
    store = tmp_path / "home" / "archive" / "db1"

    def tamper(name: str) -> None:
        (store / name).write_bytes(flip_a_byte((store / name).read_bytes()))

    check_verify(run, source, lambda name: str(store / name), tamper)
    # an object whose recorded sha256 is gone cannot be verified: said, exit 1
    (store / "_meta" / "replicated-bin.000002.json").unlink()
    rc, out, err = run("archive", "--from-dir", source, "--source-name", "db1", "--verify")
    assert rc == 1
    assert f"binlake: error: {store / 'replicated-bin.000002'}: no sha256 recorded for it" \
        in err, err
    assert "CORRUPT  replicated-bin.000001: stored bytes have sha256" in out


def test_verify_reads_the_s3_objects(run: Any, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import boto3

    source = binlog_dir(tmp_path)
    with moto_s3("arch-verify", {}) as endpoint:
        monkeypatch.setenv("BINLAKE_ARCHIVE_URI", "s3://arch-verify/binlogs")
        client = boto3.client("s3", endpoint_url=endpoint)

        def tamper(name: str) -> None:
            key = f"binlogs/db1/{name}"
            head = client.head_object(Bucket="arch-verify", Key=key)
            body = client.get_object(Bucket="arch-verify", Key=key)["Body"].read()
            client.put_object(Bucket="arch-verify", Key=key, Body=flip_a_byte(body),
                              Metadata=head["Metadata"])  # the record kept, the bytes not

        check_verify(run, source, lambda name: f"s3://arch-verify/binlogs/db1/{name}", tamper)


def test_verify_object_on_each_store(tmp_path: Path) -> None:
    """The library call: None for an intact object, the sha256s for a changed one."""
    from binlake.archive.archiver import verify_object
    from binlake.archive.objectstore import LocalStore

    require_corpus()
    store = LocalStore(tmp_path / "a")
    sha, size = sha256_file(SOURCE[0])
    obj, _ = store.put("s", SOURCE[0].name, SOURCE[0], sha256=sha, size=size)
    assert verify_object(store, obj) is None
    path = Path(obj.uri)
    path.write_bytes(flip_a_byte(path.read_bytes(), at=size - 1))
    problem: Any = verify_object(store, obj)
    assert problem.startswith(f"stored bytes have sha256 {sha256_file(path)[0]} ({size} "
                              f"bytes), recorded {sha}"), problem
