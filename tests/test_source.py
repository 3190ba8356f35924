"""Where binlog bytes come from (``binlake.binlog.source``): local paths, gzip/zstd containers and
``s3://`` objects (a moto server on 127.0.0.1), checked through the real ``binlake decode``
command against the plain local decode of the same corpus file, plus the source API itself.

Compressed copies are made in tmp_path with the gzip and zstandard modules; corpus files are
only read.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import zstandard

from binlake.binlog import source
from binlake.binlog.errors import SourceError
from binlake.binlog.source import open_binlog, parse_location, reset_s3_client, s3_client, size_of

from .corpus import CORPUS, corpus_files, require_corpus
from .s3 import moto_s3

MARIADB = "libs/rust_mysql_common/mariadb-bin.000001"  # 10.5, CRC32, 13 events
MARIADB_BIG = "mariadb-11.8/std_data/mdev6020-mysql-bin.000001"  # 10.0, 516 KB, 7754 events
MYSQL8 = "libs/percona-binlog-server/data_80045_gtid/binlog.000001"  # 8.0.45, GTID
MYSQL8_PAYLOAD = "mariadb-11.8/std_data/mdev35643_mysql_80_binlog.000001"  # TRX_PAYLOAD
SAKILA_GZ = "libs/mysql-binlog-connector-java/mysql-bin.sakila.gz"  # a real gzip binlog
FILES = [MARIADB, MARIADB_BIG, MYSQL8, MYSQL8_PAYLOAD]
GROUP_START = ("GTID", "ANONYMOUS_GTID", "GTID_TAGGED", "MARIADB_GTID")

CODECS = {
    "gzip": (".gz", gzip.compress),
    "zstd": (".zst", lambda data: zstandard.ZstdCompressor(level=3).compress(data)),
}


@pytest.fixture(autouse=True)
def _corpus() -> None:
    require_corpus()


def cpath(rel: str) -> Path:
    return CORPUS / rel


def run(*args: str | os.PathLike[str], env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "binlake.cli", *map(os.fspath, args)],
                          capture_output=True, timeout=120, env=env)


def parse(stdout: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.decode("utf-8").splitlines()]


@cache
def local(rel: str, *opts: str) -> tuple[dict[str, Any], ...]:
    p = run("decode", *opts, cpath(rel))
    assert p.returncode == 0, p.stderr.decode()
    return tuple(parse(p.stdout))


def without_file(objs: Any) -> list[dict[str, Any]]:
    return [{k: v for k, v in o.items() if k != "file"} for o in objs]


def no_traceback(p: subprocess.CompletedProcess[bytes]) -> None:
    assert b"Traceback" not in p.stderr, p.stderr.decode()[-2000:]


def compressed_copy(tmp_path: Path, rel: str, codec: str) -> Path:
    suffix, compress = CODECS[codec]
    out = tmp_path / (Path(rel).name + suffix)
    out.write_bytes(compress(cpath(rel).read_bytes()))
    return out


def group_starts(rel: str) -> list[int]:
    return [ev["pos"] for ev in local(rel) if ev["type"] in GROUP_START]


# --- locations -----------------------------------------------------------------------------


@pytest.mark.parametrize(("uri", "scheme", "name"), [
    ("/data/binlogs/mariadb-bin.000042", "file", "mariadb-bin.000042"),
    ("/data/binlogs/mariadb-bin.000042.gz", "file", "mariadb-bin.000042"),
    ("/data/binlogs/mariadb-bin.000042.zst", "file", "mariadb-bin.000042"),
    ("/data/binlogs/mariadb-bin.000042.zstd", "file", "mariadb-bin.000042"),
    ("relative/mysql-bin.000001", "file", "mysql-bin.000001"),
    ("mysql-bin.000001", "file", "mysql-bin.000001"),
    ("file:///data/mysql-bin.000003.gz", "file", "mysql-bin.000003"),
    ("s3://bucket/db1/mysql-bin.000042.zst", "s3", "mysql-bin.000042"),
    ("s3://bucket/mysql-bin.000042", "s3", "mysql-bin.000042"),
])
def test_location_name_strips_compression_suffix(uri: str, scheme: str, name: str) -> None:
    loc = parse_location(uri)
    assert loc.scheme == scheme
    assert loc.name == name
    if scheme == "s3":
        assert loc.bucket == "bucket" and loc.key == uri.split("/", 3)[3]
    else:
        assert loc.path is not None and loc.path.endswith(Path(uri).name)


def test_location_accepts_pathlike() -> None:
    loc = parse_location(Path("/tmp/x.000001.gz"))
    assert (loc.scheme, loc.path, loc.name) == ("file", "/tmp/x.000001.gz", "x.000001")


@pytest.mark.parametrize("uri", ["s3://bucket", "s3://bucket/", "s3:///key", "http://h/x.000001",
                                 "ftp://h/x.000001"])
def test_bad_locations_raise_source_error(uri: str) -> None:
    with pytest.raises(SourceError) as ei:
        parse_location(uri)
    assert ei.value.file == uri
    assert uri in str(ei.value)


def test_open_missing_local_file_is_a_source_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing.000001"
    with pytest.raises(SourceError) as ei:
        open_binlog(missing)
    assert ei.value.file == str(missing)
    assert "No such file" in str(ei.value)


# --- compression detected from the bytes ---------------------------------------------------


@pytest.mark.parametrize("codec", [None, "gzip", "zstd"])
def test_open_binlog_detects_compression_from_magic(tmp_path: Path, codec: str | None) -> None:
    raw = cpath(MARIADB).read_bytes()
    # Misleading names on purpose: a gzip file without .gz, a plain file named .gz.
    path = tmp_path / "mariadb-bin.000001.gz"
    if codec is not None:
        path = tmp_path / "mariadb-bin.000001"
        path.write_bytes(CODECS[codec][1](raw))
    else:
        path.write_bytes(raw)
    opened = open_binlog(path)
    try:
        assert opened.compression == codec
        assert opened.seekable_ranges == (codec is None)
        assert opened.stream.read() == raw
    finally:
        opened.close()
    start = 476
    opened = open_binlog(path, start)
    try:
        assert opened.stream.read() == raw[start:]
    finally:
        opened.close()
    p = run("decode", path)
    assert p.returncode == 0, p.stderr.decode()
    assert without_file(parse(p.stdout)) == without_file(local(MARIADB))


# --- gzip / zstd copies decode like the plain file -----------------------------------------


@pytest.mark.parametrize("codec", sorted(CODECS))
@pytest.mark.parametrize("rel", FILES)
def test_compressed_copy_decodes_like_plain(tmp_path: Path, rel: str, codec: str) -> None:
    copy = compressed_copy(tmp_path, rel, codec)
    for opts in ((), ("--rows",))[: 1 if rel == MYSQL8 else 2]:
        p = run("decode", *opts, copy)
        assert p.returncode == 0, p.stderr.decode()
        assert p.stderr == b""
        got = parse(p.stdout)
        assert without_file(got) == without_file(local(rel, *opts))
        assert {o["file"] for o in got} <= {copy.name, Path(rel).name}


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_compressed_copy_reports_the_binlog_name(tmp_path: Path, codec: str) -> None:
    copy = compressed_copy(tmp_path, MARIADB, codec)
    assert parse_location(copy).name == "mariadb-bin.000001"
    p = run("decode", copy)
    assert p.returncode == 0
    assert parse(p.stdout) == list(local(MARIADB))


@pytest.mark.parametrize("codec", sorted(CODECS))
@pytest.mark.parametrize("rel", [MARIADB_BIG, MYSQL8_PAYLOAD])
def test_compressed_copy_with_start_and_stop(tmp_path: Path, rel: str, codec: str) -> None:
    copy = compressed_copy(tmp_path, rel, codec)
    groups = group_starts(rel)
    events = local(rel)
    for start, stop in ((groups[len(groups) // 2], None),
                        (groups[1], groups[len(groups) // 3] + 1),
                        (groups[-1], groups[-1])):
        opts = ["--start-position", str(start)]
        if stop is not None:
            opts += ["--stop-position", str(stop)]
        p = run("decode", *opts, copy)
        assert p.returncode == 0, (start, stop, p.stderr.decode())
        expected = [ev for ev in events
                    if ev["pos"] >= start and (stop is None or ev["pos"] < stop)]
        assert without_file(parse(p.stdout)) == without_file(expected)
    rows_opts = ("--rows", "--start-position", str(groups[len(groups) // 2]))
    p = run("decode", *rows_opts, copy)
    assert p.returncode == 0
    assert without_file(parse(p.stdout)) == without_file(local(rel, *rows_opts))


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_compressed_copy_start_not_a_boundary(tmp_path: Path, codec: str) -> None:
    copy = compressed_copy(tmp_path, MARIADB, codec)
    p = run("decode", "--start-position", "477", copy)
    no_traceback(p)
    assert p.returncode == 1
    assert p.stdout == b""
    assert p.stderr.decode().startswith(
        f"binlake: error: {copy} at byte 477: start position is not an event boundary")


def test_corpus_gzip_binlog_matches_its_decompressed_copy(tmp_path: Path) -> None:
    """mysql-bin.sakila.gz is gzip as found in the wild (MANIFEST: 1462 events)."""
    gz = cpath(SAKILA_GZ)
    plain = tmp_path / "mysql-bin.sakila"
    plain.write_bytes(gzip.decompress(gz.read_bytes()))
    p_gz = run("decode", gz)
    p_plain = run("decode", plain)
    assert p_gz.returncode == 0 and p_plain.returncode == 0, p_gz.stderr.decode()
    events = parse(p_gz.stdout)
    manifest = {f.rel: f.events for f in corpus_files()}
    assert len(events) == manifest[SAKILA_GZ] == len(parse(p_plain.stdout))
    assert without_file(events) == without_file(parse(p_plain.stdout))
    assert events[-1]["pos"] + events[-1]["length"] == plain.stat().st_size


# --- damaged compressed files --------------------------------------------------------------


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_corrupt_compressed_stream_exit_1(tmp_path: Path, codec: str) -> None:
    copy = compressed_copy(tmp_path, MARIADB_BIG, codec)
    data = bytearray(copy.read_bytes())
    for i in range(len(data) // 3, len(data) // 3 + 64):
        data[i] ^= 0x5A
    copy.write_bytes(bytes(data))
    p = run("decode", copy)
    no_traceback(p)
    assert p.returncode == 1
    assert p.stderr.decode().startswith(f"binlake: error: {copy} at byte ")


def test_truncated_gzip_exit_1(tmp_path: Path) -> None:
    copy = compressed_copy(tmp_path, MARIADB_BIG, "gzip")
    copy.write_bytes(copy.read_bytes()[: copy.stat().st_size // 2])
    p = run("decode", copy)
    no_traceback(p)
    assert p.returncode == 1
    err = p.stderr.decode()
    assert err.startswith(f"binlake: error: {copy} at byte ")
    # the decompressed events before the cut were read: the error is the event cut short
    assert "ends inside an event" in err or "ends before its end marker" in err


def test_truncated_gzip_keeps_the_events_before_the_break(tmp_path: Path) -> None:
    copy = compressed_copy(tmp_path, MARIADB_BIG, "gzip")
    copy.write_bytes(copy.read_bytes()[: copy.stat().st_size // 2])
    p = run("decode", copy)
    assert p.returncode == 1
    events = parse(p.stdout)
    assert len(events) > 1000
    assert without_file(events) == without_file(local(MARIADB_BIG)[: len(events)])
    assert f"{copy} at byte 0:" not in p.stderr.decode()


def _zstd_flushed_per_event(rel: str) -> tuple[bytes, list[tuple[int, int]]]:
    """A zstd stream with a block flush after every event (as a streaming archiver writes),
    and for each event (its end offset in the binlog, the compressed size up to its flush)."""
    raw = cpath(rel).read_bytes()
    comp = zstandard.ZstdCompressor().compressobj()
    out = bytearray(comp.compress(raw[:4]))
    cuts = []
    for ev in local(rel):
        end = ev["pos"] + ev["length"]
        out += comp.compress(raw[ev["pos"]:end])
        out += comp.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
        cuts.append((end, len(out)))
    out += comp.flush()
    return bytes(out), cuts


def test_zstd_block_flushed_stream_decodes(tmp_path: Path) -> None:
    data, _ = _zstd_flushed_per_event(MARIADB)
    copy = tmp_path / "mariadb-bin.000001.zst"
    copy.write_bytes(data)
    p = run("decode", copy)
    assert p.returncode == 0, p.stderr.decode()
    assert without_file(parse(p.stdout)) == without_file(local(MARIADB))


def test_truncated_zstd_mid_event_exit_1(tmp_path: Path) -> None:
    copy = compressed_copy(tmp_path, MARIADB_BIG, "zstd")
    copy.write_bytes(copy.read_bytes()[: copy.stat().st_size // 2])
    p = run("decode", copy)
    no_traceback(p)
    assert p.returncode == 1
    assert p.stderr.decode().startswith(f"binlake: error: {copy} at byte ")
    events = parse(p.stdout)
    assert events and without_file(events) == without_file(local(MARIADB_BIG)[: len(events)])


def test_truncated_zstd_at_block_boundary_is_an_error(tmp_path: Path) -> None:
    data, cuts = _zstd_flushed_per_event(MARIADB)
    end, n = cuts[6]
    assert end == 671
    copy = tmp_path / "mariadb-bin.000001.zst"
    copy.write_bytes(data[:n])
    p = run("decode", copy)
    assert len(parse(p.stdout)) == 7
    assert p.returncode == 1


# --- S3 (moto) -----------------------------------------------------------------------------

BUCKET = "binlake-test"
S3_OBJECTS = {
    "plain/mariadb-bin.000001": (MARIADB, None),
    "plain/mdev6020-mysql-bin.000001": (MARIADB_BIG, None),
    "plain/binlog.000001": (MYSQL8, None),
    "plain/mdev35643_mysql_80_binlog.000001": (MYSQL8_PAYLOAD, None),
    "zstd/mdev6020-mysql-bin.000001.zst": (MARIADB_BIG, "zstd"),
    "zstd/mariadb-bin.000001.zst": (MARIADB, "zstd"),
    "gzip/binlog.000001.gz": (MYSQL8, "gzip"),
}


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    require_corpus()
    objects = {}
    for key, (rel, codec) in S3_OBJECTS.items():
        data = cpath(rel).read_bytes()
        objects[key] = CODECS[codec][1](data) if codec is not None else data
    with moto_s3(BUCKET, objects) as endpoint:
        yield endpoint


def s3uri(key: str) -> str:
    return f"s3://{BUCKET}/{key}"


@pytest.mark.parametrize("key", [k for k, (_, c) in S3_OBJECTS.items() if c is None])
def test_s3_plain_object_decodes_like_local(s3_endpoint: str, key: str) -> None:
    rel = S3_OBJECTS[key][0]
    opts = ("--rows",) if rel in (MARIADB, MARIADB_BIG) else ()
    p = run("decode", *opts, s3uri(key))
    assert p.returncode == 0, p.stderr.decode()
    assert p.stderr == b""
    assert parse(p.stdout) == list(local(rel, *opts))  # same name, so `file` is equal too


@pytest.mark.parametrize("key", [k for k, (_, c) in S3_OBJECTS.items() if c is not None])
def test_s3_compressed_object_decodes_like_local(s3_endpoint: str, key: str,
                                                 tmp_path: Path) -> None:
    rel, codec = S3_OBJECTS[key]
    assert codec is not None
    p = run("decode", s3uri(key))
    assert p.returncode == 0, p.stderr.decode()
    got = parse(p.stdout)
    assert without_file(got) == without_file(local(rel))
    # The same name as a local copy of the same object.
    copy = compressed_copy(tmp_path, rel, codec)
    assert {o["file"] for o in got} == {o["file"] for o in parse(run("decode", copy).stdout)}


@pytest.mark.parametrize("key", ["plain/mdev6020-mysql-bin.000001",
                                 "zstd/mdev6020-mysql-bin.000001.zst",
                                 "plain/mdev35643_mysql_80_binlog.000001"])
def test_s3_ranged_read(s3_endpoint: str, key: str) -> None:
    rel = S3_OBJECTS[key][0]
    groups = group_starts(rel)
    for opts in (("--start-position", str(groups[len(groups) // 2])),
                 ("--rows", "--start-position", str(groups[1]),
                  "--stop-position", str(groups[len(groups) // 3]))):
        p = run("decode", *opts, s3uri(key))
        assert p.returncode == 0, (opts, p.stderr.decode())
        got = parse(p.stdout)
        assert got and without_file(got) == without_file(local(rel, *opts))


def test_s3_ranged_read_with_stop_inside_an_event(s3_endpoint: str) -> None:
    opts = ("--start-position", "476", "--stop-position", "700")
    p = run("decode", *opts, s3uri("plain/mariadb-bin.000001"))
    assert p.returncode == 0, p.stderr.decode()
    assert parse(p.stdout) == list(local(MARIADB, *opts))


def test_s3_start_not_a_boundary(s3_endpoint: str) -> None:
    p = run("decode", "--start-position", "477", s3uri("plain/mariadb-bin.000001"))
    no_traceback(p)
    assert p.returncode == 1
    assert p.stderr.decode().startswith(
        f"binlake: error: {s3uri('plain/mariadb-bin.000001')} at byte 477: ")


@pytest.mark.parametrize(("uri", "what"), [
    (f"s3://{BUCKET}/plain/missing.000001", "NoSuchKey"),
    ("s3://no-such-bucket-binlake/x.000001", "NoSuchBucket"),
])
def test_s3_missing_object(s3_endpoint: str, uri: str, what: str) -> None:
    p = run("decode", uri)
    no_traceback(p)
    assert p.returncode == 1
    assert p.stdout == b""
    err = p.stderr.decode().strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"binlake: error: {uri}: cannot read object: "), err
    assert what in err[0]


def test_s3_missing_object_among_others(s3_endpoint: str) -> None:
    missing = s3uri("plain/missing.000001")
    p = run("decode", s3uri("plain/mariadb-bin.000001"), missing, cpath(MYSQL8))
    no_traceback(p)
    assert p.returncode == 1
    assert p.stderr.decode().startswith(f"binlake: error: {missing}: cannot read object")
    assert parse(p.stdout) == list(local(MARIADB)) + list(local(MYSQL8))


def test_s3_invalid_uri(s3_endpoint: str) -> None:
    p = run("decode", f"s3://{BUCKET}")
    no_traceback(p)
    assert p.returncode == 1
    assert f"binlake: error: s3://{BUCKET}: not a valid s3 URI" in p.stderr.decode()


def test_s3_endpoint_from_aws_endpoint_url(s3_endpoint: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "BINLAKE_S3_ENDPOINT_URL"}
    env["AWS_ENDPOINT_URL"] = s3_endpoint
    p = run("decode", "--rows", s3uri("plain/mariadb-bin.000001"), env=env)
    assert p.returncode == 0, p.stderr.decode()
    assert parse(p.stdout) == list(local(MARIADB, "--rows"))


def test_s3_source_api(s3_endpoint: str) -> None:
    reset_s3_client()
    raw = cpath(MARIADB_BIG).read_bytes()
    assert size_of(s3uri("plain/mdev6020-mysql-bin.000001")) == len(raw)
    start = group_starts(MARIADB_BIG)[100]
    opened = open_binlog(s3uri("plain/mdev6020-mysql-bin.000001"), start, start + 5000)
    try:
        assert (opened.compression, opened.seekable_ranges) == (None, True)
        assert opened.location.bucket == BUCKET
        assert opened.stream.read() == raw[start:start + 5000]
    finally:
        opened.close()
    opened = open_binlog(s3uri("zstd/mdev6020-mysql-bin.000001.zst"), start)
    try:
        assert (opened.compression, opened.seekable_ranges) == ("zstd", False)
        assert opened.stream.read() == raw[start:]
    finally:
        opened.close()
    with pytest.raises(SourceError) as ei:
        size_of(s3uri("plain/missing.000001"))
    assert ei.value.file == s3uri("plain/missing.000001")
    with pytest.raises(SourceError) as ei:
        open_binlog(s3uri("plain/missing.000001"))
    assert ei.value.file == s3uri("plain/missing.000001")


def test_reset_s3_client_picks_up_a_new_endpoint(s3_endpoint: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    reset_s3_client()
    try:
        client = s3_client()
        assert s3_client() is client  # cached
        assert client.meta.endpoint_url == s3_endpoint
        other = "http://127.0.0.1:9"
        monkeypatch.setenv("BINLAKE_S3_ENDPOINT_URL", other)
        assert s3_client() is client  # still the cached one until reset
        reset_s3_client()
        assert source._S3_CLIENT is None
        assert s3_client().meta.endpoint_url == other
    finally:
        monkeypatch.undo()
        reset_s3_client()
    assert s3_client().meta.endpoint_url == s3_endpoint


# --- the survey's sha256 from its own read (HashTap) ------------------------------------------


def _damaged(data: bytes) -> dict[str, bytes]:
    """Copies of a binlog's bytes that a scan stops reading early or at once."""
    mid = len(data) // 2
    bogus = bytearray(data)
    bogus[mid:mid + 64] = b"\xff" * 64  # whatever event lies there: a bogus header or body
    return {"truncated": data[:mid + 7], "corrupt": bytes(bogus), "not-a-binlog":
            b"hello, world\n" * 1000, "empty": b"", "magic-only": data[:4]}


def _survey_sha(uri: str) -> tuple[str, int]:
    from binlake.lake.discover import _survey

    sha, size, _ = _survey(uri, 1 << 20)["sha"]
    return sha, size


def _truth(data: bytes) -> tuple[str, int]:
    import hashlib

    return hashlib.sha256(data).hexdigest(), len(data)


@pytest.mark.parametrize("rel", [MARIADB, MARIADB_BIG, MYSQL8_PAYLOAD])
def test_survey_sha256_is_the_stored_bytes(tmp_path: Path, rel: str) -> None:
    """Whatever the file (whole, compressed, cut, damaged, not a binlog at all), the
    sha256/size the survey takes from its scan's read is that of the stored bytes."""
    data = cpath(rel).read_bytes()
    cases = {"plain": data, **_damaged(data)}
    for codec, (suffix, compress) in CODECS.items():
        cases[codec + suffix] = compress(data)
        cases["cut-" + codec + suffix] = compress(data)[:len(compress(data)) // 2]
    for name, blob in cases.items():
        path = tmp_path / name / Path(rel).name
        path.parent.mkdir()
        path.write_bytes(blob)
        assert _survey_sha(str(path)) == _truth(blob), name


def test_hash_tap_needs_the_whole_object(tmp_path: Path) -> None:
    from binlake.binlog.source import HashTap

    with pytest.raises(ValueError):
        open_binlog(cpath(MARIADB), 4, tap=HashTap())
    tap = HashTap()
    assert tap.finish(cpath(MARIADB)) == _truth(cpath(MARIADB).read_bytes())


def test_s3_survey_reads_an_object_about_once_less(s3_endpoint: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """On S3 the survey's sha256 comes from the bytes its scan downloads: the stored bytes'
    hash, for whole, compressed and damaged objects (a damaged one: the rest fetched with a
    ranged GET), with about one download of the object fewer than a separate hash pass."""
    reset_s3_client()
    data = cpath(MARIADB_BIG).read_bytes()
    extra = {f"survey/{k}/mdev6020-mysql-bin.000001": v for k, v in _damaged(data).items()}
    extra["survey/gz/mdev6020-mysql-bin.000001.gz"] = gzip.compress(data)
    for key, blob in extra.items():
        s3_client().put_object(Bucket=BUCKET, Key=key, Body=blob)
    served = [0]
    real = source._S3Stream.readinto

    def counted(self: Any, b: Any) -> int:
        n: int = real(self, b)
        served[0] += n
        return n

    monkeypatch.setattr(source._S3Stream, "readinto", counted)
    for key, blob in {"plain/mdev6020-mysql-bin.000001": data, **extra}.items():
        served[0] = 0
        assert _survey_sha(s3uri(key)) == _truth(blob), key
        if key.startswith("plain/"):
            # the split's header walk (ranged reads) plus one read for the scan and the hash
            assert served[0] < 2.2 * len(blob), (key, served[0], len(blob))
    # a tap that has every byte but never saw the end: the ranged GET from the object's end
    # is refused, and the object is hashed again whole
    from binlake.binlog.source import HashTap

    tap = HashTap()
    tap.update(data)
    assert tap.finish(s3uri("plain/mdev6020-mysql-bin.000001")) == _truth(data)
    tap = HashTap()
    tap.update(data[:100])
    assert tap.finish(s3uri("plain/mdev6020-mysql-bin.000001")) == _truth(data)
