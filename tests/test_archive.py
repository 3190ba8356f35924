"""Archiving closed binlogs (binlake.archive) to the local and S3 object stores."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from binlake.archive import (
    ArchiveGapError,
    LocalBinlogSource,
    RemoteBinlogSource,
    archive,
    fde_in_use,
)
from binlake.archive.objectstore import (
    LocalStore,
    ObjectConflictError,
    ObjectStoreError,
    S3Store,
    recorded_sha256,
    sha256_file,
)
from binlake.cli import main as cli_main
from binlake_dev.mariadb import MariaDBServer

from .s3 import moto_s3

pytestmark = pytest.mark.integration


def _workload(srv: MariaDBServer, n: int = 2) -> None:
    srv.execute(["CREATE DATABASE IF NOT EXISTS a",
                 "CREATE TABLE IF NOT EXISTS a.t (id INT PRIMARY KEY, v VARCHAR(20))"])
    for _ in range(n):
        srv.execute("INSERT INTO a.t SELECT coalesce(max(id), 0) + 1, 'x' FROM a.t")
        srv.flush_binary_logs()


def _copy_binlogs(srv: MariaDBServer, dest: Path, names: list[str] | None = None) -> Path:
    """A binlog directory of copies (a "mount"), its index listing ``names`` (default all)."""
    dest.mkdir(parents=True, exist_ok=True)
    files = srv.binlog_files()
    keep = names or [f.name for f in files]
    for f in files:
        if f.name in keep:
            shutil.copy2(f, dest / f.name)
    (dest / "mariadb-bin.index").write_text("".join(f"./{n}\n" for n in keep))
    return dest


def test_local_archive_closed_files_once(fresh_mariadb: MariaDBServer, tmp_path: Path) -> None:
    srv = fresh_mariadb
    _workload(srv)
    store = LocalStore(tmp_path / "archive")
    src = LocalBinlogSource(srv.binlog_dir)
    files = srv.binlog_files()
    rep = archive(src, store, "db1")
    assert [a["name"] for a in rep.archived] == [f.name for f in files[:-1]]
    assert files[-1].name in rep.skipped  # the file being written is never copied
    assert not (tmp_path / "archive" / "db1" / files[-1].name).exists()
    for a in rep.archived:
        obj = tmp_path / "archive" / "db1" / a["name"]
        assert sha256_file(obj)[0] == a["sha256"] == recorded_sha256(str(obj))
        meta = json.loads((obj.parent / "_meta" / f"{a['name']}.json").read_text())
        assert meta["sha256"] == a["sha256"] and meta["source"] == "db1"
    again = archive(src, store, "db1")
    assert again.archived == [] and sorted(again.already) == [a["name"] for a in rep.archived]
    srv.execute("INSERT INTO a.t VALUES (100, 'new')")
    srv.flush_binary_logs()
    third = archive(src, store, "db1")
    assert [a["name"] for a in third.archived] == [files[-1].name]
    assert not list((tmp_path / "archive" / "db1" / "_tmp").iterdir())


def test_in_use_flag_is_not_archived(fresh_mariadb: MariaDBServer, tmp_path: Path) -> None:
    srv = fresh_mariadb
    _workload(srv, 1)
    mount = _copy_binlogs(srv, tmp_path / "mount")
    first = mount / srv.binlog_files()[0].name
    raw = bytearray(first.read_bytes())
    raw[4 + 17] |= 0x01  # FDE header flags (offset 17 of the event): LOG_EVENT_BINLOG_IN_USE_F
    first.write_bytes(bytes(raw))
    assert fde_in_use(first) is True
    rep = archive(LocalBinlogSource(mount / "mariadb-bin.index"), LocalStore(tmp_path / "a"), "s")
    assert "in-use" in rep.skipped[first.name]
    assert rep.archived == []


def test_conflict_is_never_overwritten(fresh_mariadb: MariaDBServer, tmp_path: Path) -> None:
    srv = fresh_mariadb
    _workload(srv, 1)
    store = LocalStore(tmp_path / "archive")
    mount = _copy_binlogs(srv, tmp_path / "mount")
    archive(LocalBinlogSource(mount), store, "s")
    name = srv.binlog_files()[0].name
    stored = (tmp_path / "archive" / "s" / name).read_bytes()
    # the source now has other bytes under the same name (a reset server): size differs
    (mount / name).write_bytes(stored + b"\0")
    with pytest.raises(ObjectConflictError):
        archive(LocalBinlogSource(mount), store, "s")
    # same size, other bytes, caught with verify
    (mount / name).write_bytes(stored[:-1] + bytes([stored[-1] ^ 1]))
    with pytest.raises(ObjectConflictError):
        archive(LocalBinlogSource(mount), store, "s", verify=True)
    assert (tmp_path / "archive" / "s" / name).read_bytes() == stored


def test_purged_file_is_a_gap_reported_once(fresh_mariadb: MariaDBServer,
                                            tmp_path: Path) -> None:
    srv = fresh_mariadb
    _workload(srv, 3)
    names = [f.name for f in srv.binlog_files()]  # 000001..000004
    store = LocalStore(tmp_path / "archive")
    archive(LocalBinlogSource(_copy_binlogs(srv, tmp_path / "m1", names[:2])),
            store, "s")  # 000001 archived; 000002 was the current file
    # later: 000002 was purged before any run saw it; 000003 is still there
    mount = _copy_binlogs(srv, tmp_path / "m2", names[2:])
    with pytest.raises(ArchiveGapError) as info:
        archive(LocalBinlogSource(mount), store, "s")
    assert info.value.report.new_gaps == [names[1]]
    assert [a["name"] for a in info.value.report.archived] == [names[2]]  # still archived
    rep = archive(LocalBinlogSource(mount), store, "s")  # known now: reported, not raised
    assert rep.gaps == [names[1]] and rep.new_gaps == []


def test_partial_local_copy_is_never_visible(fresh_mariadb: MariaDBServer,
                                            tmp_path: Path) -> None:
    srv = fresh_mariadb
    _workload(srv, 1)
    store = LocalStore(tmp_path / "archive")
    f = srv.binlog_files()[0]
    _sha, size = sha256_file(f)
    with pytest.raises(ObjectStoreError):  # the bytes copied are not the bytes hashed
        store.put("s", f.name, f, sha256="0" * 64, size=size)
    assert store.head("s", f.name) is None
    assert not list((tmp_path / "archive" / "s" / "_tmp").iterdir())


def test_s3_archive_multipart_metadata_and_conflict(fresh_mariadb: MariaDBServer,
                                                     tmp_path: Path) -> None:
    import boto3

    srv = fresh_mariadb
    srv.execute(["CREATE DATABASE b", "CREATE TABLE b.blobs (id INT PRIMARY KEY, v LONGBLOB)",
                 "INSERT INTO b.blobs VALUES (1, REPEAT('x', 6 * 1024 * 1024))"])
    srv.flush_binary_logs()
    big = srv.binlog_files()[0]
    assert big.stat().st_size > 5 << 20
    with moto_s3("arch", {}) as endpoint:
        client = boto3.client("s3", endpoint_url=endpoint)
        store = S3Store("arch", "binlogs", client=client, multipart_bytes=5 << 20)
        rep = archive(LocalBinlogSource(srv.binlog_dir), store, "db1")
        assert [a["name"] for a in rep.archived] == [big.name]
        head = client.head_object(Bucket="arch", Key=f"binlogs/db1/{big.name}")
        assert head["ETag"].strip('"').endswith("-2")  # two parts: a multipart upload
        assert head["Metadata"]["sha256"] == sha256_file(big)[0]
        assert recorded_sha256(f"s3://arch/binlogs/db1/{big.name}") == sha256_file(big)[0]
        assert [o.name for o in store.list("db1")] == [big.name]
        assert archive(LocalBinlogSource(srv.binlog_dir), store, "db1").archived == []
        # a failing part: the upload is aborted, nothing becomes visible
        srv.execute("INSERT INTO b.blobs VALUES (2, REPEAT('y', 6 * 1024 * 1024))")
        srv.flush_binary_logs()
        second = srv.binlog_files()[1]

        def boom(**kw: object) -> None:
            raise RuntimeError("network down")

        client.meta.events.register("before-call.s3.UploadPart", boom)
        with pytest.raises(ObjectStoreError):
            archive(LocalBinlogSource(srv.binlog_dir), store, "db1")
        client.meta.events.unregister("before-call.s3.UploadPart", boom)
        assert store.head("db1", second.name) is None
        assert not client.list_multipart_uploads(Bucket="arch").get("Uploads")
        # another object under the name: refused, not overwritten
        client.put_object(Bucket="arch", Key=f"binlogs/db1/{second.name}", Body=b"other",
                          Metadata={"sha256": "f" * 64})
        with pytest.raises(ObjectConflictError):
            archive(LocalBinlogSource(srv.binlog_dir), store, "db1")
        assert client.get_object(Bucket="arch",
                                 Key=f"binlogs/db1/{second.name}")["Body"].read() == b"other"


def test_remote_source_fetches_closed_files(fresh_mariadb: MariaDBServer, tmp_path: Path) -> None:
    srv = fresh_mariadb
    _workload(srv, 2)
    store = LocalStore(tmp_path / "archive")
    rep = archive(RemoteBinlogSource("127.0.0.1", srv.port, "root", ""), store, "r")
    closed = srv.closed_binlog_files()
    assert [a["name"] for a in rep.archived] == [f.name for f in closed]
    for f in closed:  # --raw over the replication protocol gives the file's own bytes
        assert store.head("r", f.name).sha256 == sha256_file(f)[0]  # type: ignore[union-attr]


def test_cli_archive(fresh_mariadb: MariaDBServer, tmp_path: Path,
                     capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    srv = fresh_mariadb
    _workload(srv, 1)
    monkeypatch.setenv("BINLAKE_HOME", str(tmp_path / "home"))
    assert cli_main(["archive", "--from-dir", str(srv.binlog_dir), "--source-name", "c",
                     "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert [a["name"] for a in rep["archived"]] == [srv.binlog_files()[0].name]
    assert (tmp_path / "home" / "archive" / "c" / rep["archived"][0]["name"]).exists()
    assert cli_main(["archive", "--from-dir", str(srv.binlog_dir), "--source-name", "c"]) == 0
    assert "0 archived" in capsys.readouterr().out
    assert cli_main(["archive", "--from-dir", str(tmp_path / "nope.index")]) == 1
