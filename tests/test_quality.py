"""binlake.quality: the Great Expectations suite, on real binlogs only.

* a private MariaDB server writes four files (FLUSH BINARY LOGS between them, the fourth still
  open): DDL, InnoDB and MyISAM rows, a savepoint, an XA prepared in file 2 and committed in
  file 3, an XA left prepared in file 3 with events two seconds later.  They are loaded into a
  lake (``run_load``, typed tables on: ``binlog_row_metadata=FULL``) and pass every expectation,
  reconciliation included; copies the tests break on purpose (a byte flipped, the middle file
  removed, a file cut short, the XA COMMIT's file alone) each fail only their family;
* the shared corpus (../shared/corpus, MANIFEST.md): the hand-edited crash-recovery files of
  the MySQL test suite (``binlog_recovery/``), a truncated file, a clean MySQL 8 chain, and a
  MySQL 8 file whose transaction_length we edit (CRC32 recomputed).

Every test asserts the exact set of failed expectations, so a missing check and an over-eager
one both fail.  What a removed middle file fails: it breaks two independent things, the file
chain (positions: the Rotate names a file that is not next, a sequence number is missing) and
GTID continuity (gtid: the next file's Gtid_list holds GTIDs no file has; for MariaDB the
domain's seq_no jump is a warning), and the suite reports both -- plus what the lost events
were needed for (here the XA PREPARE whose COMMIT is in the next file).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from binlake.binlog.constants import EventType
from binlake.binlog.reader import BinlogReader

from .binlog_files import copy_files, top_events
from .corpus import CORPUS, require_corpus
from .servers import start_server

pytestmark = [pytest.mark.spark, pytest.mark.slow]

pytest.importorskip("pyspark")
pytest.importorskip("great_expectations")

R = "mysql-8.0/std_data/binlog_recovery/"


# -- fixtures -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def spark(spark_lake: Any) -> Iterator[Any]:
    yield spark_lake


def make_settings(spark: Any, base: Path, name: str, **overrides: Any) -> Any:
    """Settings of a fresh lake (own home and catalog name) registered on the shared session."""
    from binlake.config import load_settings
    from binlake.lake.spark import build_session

    settings = load_settings(env={"BINLAKE_HOME": str(base / name),
                                  "BINLAKE_CATALOG_NAME": f"gx_{name}"}, **overrides)
    build_session(settings, master="local[2]")
    return settings


@pytest.fixture(scope="module")
def stream(tmp_path_factory: pytest.TempPathFactory, mariadb_template: Path) -> dict[str, Any]:
    """Four binlog files of a private MariaDB server (the fourth still open), copied."""
    srv = start_server(tmp_path_factory.mktemp("gx-srv"), mariadb_template)
    out = tmp_path_factory.mktemp("gx-binlogs")
    try:
        srv.execute("SET GLOBAL binlog_row_metadata = 'FULL'")
        srv.execute(["CREATE DATABASE d",
                     "CREATE TABLE d.t (a INT PRIMARY KEY, b VARCHAR(20)) ENGINE=InnoDB",
                     "CREATE TABLE d.m (a INT PRIMARY KEY) ENGINE=MyISAM",
                     "INSERT INTO d.t VALUES (1, 'x'), (2, 'y'), (3, 'z')",
                     "INSERT INTO d.m VALUES (1), (2)"])
        srv.flush_binary_logs()
        srv.execute(["BEGIN", "INSERT INTO d.t VALUES (4, 'v')",
                     "UPDATE d.t SET b = 'w' WHERE a = 1", "SAVEPOINT s",
                     "INSERT INTO d.t VALUES (5, 'u')", "ROLLBACK TO SAVEPOINT s", "COMMIT",
                     "DELETE FROM d.t WHERE a = 2", "DELETE FROM d.m WHERE a = 1",
                     "XA START 'x1'", "INSERT INTO d.t VALUES (10, 'xa')", "XA END 'x1'",
                     "XA PREPARE 'x1'"])
        srv.flush_binary_logs()
        srv.execute(["XA COMMIT 'x1'", "INSERT INTO d.t VALUES (11, 'after')",
                     "XA START 'p1'", "INSERT INTO d.t VALUES (20, 'pending')", "XA END 'p1'",
                     "XA PREPARE 'p1'"])
        time.sleep(2.2)  # the pending XA gets older than 1 s before the file's last event
        srv.execute("INSERT INTO d.m VALUES (3)")
        srv.flush_binary_logs()
        srv.execute("UPDATE d.t SET b = 'open' WHERE a = 3")
        files = srv.binlog_files()
        assert len(files) == 4
        copies = []
        for f in files:
            shutil.copyfile(f, out / f.name)
            copies.append(out / f.name)
        state = {t: srv.execute(f"SELECT count(*) FROM d.{t}")[0][0] for t in ("t", "m")}
    finally:
        srv.stop(timeout=30)
    return {"dir": out, "files": copies, "counts": state}


@pytest.fixture(scope="module")
def lake(spark: Any, stream: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Any:
    from binlake.lake.job import run_load

    settings = make_settings(spark, tmp_path_factory.mktemp("gx-lakes"), "main")
    summary = run_load(spark, settings, [str(stream["dir"])], run_id="load-1")
    assert not summary.failed, summary.files
    return settings


@pytest.fixture(scope="module")
def plain(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Settings for validations without the lake (results still go to this catalog)."""
    return make_settings(spark, tmp_path_factory.mktemp("gx-plain"), "plain")


def run(spark: Any, settings: Any, sources: list[Any], *, lake: bool = False,
        run_id: str = "t", **kw: Any) -> Any:
    from binlake.quality import validate

    return validate(spark, settings, [str(s) for s in sources], run_id=run_id, lake=lake, **kw)


def failed(report: Any, severity: str | None = None) -> set[str]:
    return {r["expectation"] for r in report.failed(severity)}


def show(report: Any) -> str:
    return "\n".join(f"{r['severity']} {r['expectation']}: {r['observed']} "
                     f"{json.dumps(r['details'], default=str)[:400]}" for r in report.failed())


# -- the MariaDB stream -------------------------------------------------------------------------


@pytest.mark.integration
def test_clean_stream_and_lake_pass(spark: Any, lake: Any, stream: dict[str, Any]) -> None:
    from binlake.quality.names import FAMILIES
    from binlake.quality.suite import checks

    # A branch the tables do not have: read from main.
    report = run(spark, lake, [stream["dir"]], lake=True, run_id="clean", branch="no-such")
    assert report.success and not report.failed(), show(report)
    assert {r["expectation"] for r in report.results} == {c.name for c in checks()}
    assert {r["family"] for r in report.results} == set(FAMILIES)
    assert report.files == [f.name for f in stream["files"]]
    # the stream's facts came from the load (stream_facts), no file was read again
    facts = next(r for r in report.results if r["expectation"] == "integrity.events_decode")
    assert facts["details"]["facts_from_load"] == sorted(report.files)
    assert facts["details"]["read_again"] == []
    # every check looked at something real: events, XA groups, GTIDs, transactions, mirrors
    recon = next(r for r in report.results if r["expectation"] == "reconciliation.row_changes")
    assert recon["details"]["element_count"] > 5
    mirrors = next(r for r in report.results
                   if r["expectation"] == "reconciliation.mirror_counts")
    assert mirrors["details"]["element_count"] == 2  # d.t and d.m
    sha = next(r for r in report.results if r["expectation"] == "integrity.archived_sha256")
    assert sha["details"]["not_recorded"] == report.files  # a plain directory records none
    # the results table (on main) and Data Docs
    rows = spark.sql(f"SELECT * FROM {lake.table('validation_results')} "
                     "WHERE run_id = 'clean'").collect()
    assert len(rows) == len(report.results)
    assert {r["expectation"] for r in rows} == {r["expectation"] for r in report.results}
    assert all(r["success"] and r["files"] == report.files for r in rows)
    index = Path(report.data_docs.removeprefix("file://"))
    assert index.is_file() and index.parent == lake.home_path / "data_docs"
    assert "binlake.events" in index.read_text()
    d = report.to_dict()
    assert d["success"] is True and len(d["results"]) == len(report.results)


@pytest.mark.integration
def test_sha256_recorded_at_copy_time(spark: Any, plain: Any, stream: dict[str, Any],
                                      tmp_path: Path) -> None:
    import hashlib

    files = copy_files(stream["files"][:3], tmp_path / "archive")
    meta = tmp_path / "archive" / "_meta"
    meta.mkdir()
    for f in files:
        digest = hashlib.sha256(f.read_bytes()).hexdigest()
        (meta / f"{f.name}.json").write_text(json.dumps({"sha256": digest}))
    # the middle file's bytes are not the ones recorded at copy time
    (meta / f"{files[1].name}.json").write_text(json.dumps({"sha256": "0" * 64}))
    report = run(spark, plain, [tmp_path / "archive"])
    assert failed(report) == {"integrity.archived_sha256"}, show(report)
    sha = next(r for r in report.results if r["expectation"] == "integrity.archived_sha256")
    assert sha["observed"] == 1 and sha["details"]["recorded"] == 3


@pytest.mark.integration
def test_flipped_byte_fails_integrity_only(spark: Any, plain: Any, stream: dict[str, Any],
                                           tmp_path: Path) -> None:
    files = copy_files(stream["files"][:3], tmp_path / "flip")
    commit = next(ev for ev in top_events(files[1])
                  if ev.type_code == EventType.QUERY and ev.data["query"] == "COMMIT")
    data = bytearray(files[1].read_bytes())
    at = commit.pos + commit.length - 4 - 1  # the 'T' of COMMIT, before the CRC32
    assert data[at] == ord("T")
    data[at] ^= 0x20  # 't': the event still decodes (and means the same), only its CRC32 fails
    files[1].write_bytes(bytes(data))
    report = run(spark, plain, files)
    assert failed(report) == {"integrity.event_checksums"}, show(report)
    assert not report.success


@pytest.mark.integration
def test_missing_middle_file_fails_positions_and_gtid(spark: Any, plain: Any,
                                                      stream: dict[str, Any]) -> None:
    f1, _, f3 = stream["files"][:3]
    report = run(spark, plain, [f1, f3])
    # positions and gtid, the two families a missing file always breaks; and, because file 2
    # held the PREPARE of XA 'x1', its XA COMMIT in file 3 now decides nothing known
    assert failed(report, "error") == {"positions.rotate_names_next_file",
                                       "positions.no_missing_file",
                                       "gtid.headers_follow",
                                       "xa.decisions_match_prepares"}, show(report)
    assert failed(report, "warning") == {"gtid.mariadb_no_gaps"}, show(report)
    rot = next(r for r in report.results
               if r["expectation"] == "positions.rotate_names_next_file")
    assert rot["details"]["unexpected_rows"] == [
        {"file": f1.name, "rotate_next": stream["files"][1].name, "next_file": f3.name}]


@pytest.mark.integration
def test_file_cut_short_fails_integrity_only(spark: Any, plain: Any, stream: dict[str, Any],
                                             tmp_path: Path) -> None:
    files = copy_files(stream["files"][:3], tmp_path / "cut")
    last = top_events(files[2])[-1]
    assert last.type_code == EventType.ROTATE
    with open(files[2], "r+b") as fh:
        fh.truncate(files[2].stat().st_size - 10)
    report = run(spark, plain, files)
    assert failed(report) == {"integrity.files_read_to_end"}, show(report)
    row = next(r for r in report.results
               if r["expectation"] == "integrity.files_read_to_end")["details"]["unexpected_rows"]
    assert row[0]["error_kind"] == "truncated" and row[0]["error_offset"] == last.pos


@pytest.mark.integration
def test_xa_commit_without_prepare(spark: Any, plain: Any, stream: dict[str, Any]) -> None:
    # file 3 alone: its XA COMMIT 'x1' decides a PREPARE of file 2, which is not in the input
    f3 = stream["files"][2]
    report = run(spark, plain, [f3])
    assert failed(report) == {"xa.decisions_match_prepares"}, show(report)
    (row,) = next(r for r in report.results if r["expectation"] == "xa.decisions_match_prepares"
                  )["details"]["unexpected_rows"]
    assert row["xa_xid"] == "1:7831:" and row["status"] == "xa_commit"


@pytest.mark.integration
def test_xa_pending_in_the_lake_pairs_with_a_later_commit(spark: Any, lake: Any,
                                                          stream: dict[str, Any]) -> None:
    # the same file against the lake, which holds the PREPARE of file 2 (pending before file 3)
    report = run(spark, lake, [stream["files"][2]], lake=True, run_id="lake-xa")
    assert report.success and not report.failed(), show(report)


@pytest.mark.integration
def test_old_pending_xa_is_a_warning(spark: Any, plain: Any, stream: dict[str, Any]) -> None:
    settings = dataclasses.replace(plain, xa_max_age=1.0)
    report = run(spark, settings, stream["files"][:3])
    assert failed(report) == {"xa.pending_age"}, show(report)
    assert report.success  # a warning does not fail the run
    (row,) = next(r for r in report.results if r["expectation"] == "xa.pending_age"
                  )["details"]["unexpected_rows"]
    assert row["xa_xid"] == "1:7031:" and row["age_seconds"] >= 2


@pytest.mark.integration
def test_cli_validate(spark: Any, plain: Any, stream: dict[str, Any], tmp_path: Path,
                      capsys: pytest.CaptureFixture[str]) -> None:
    from binlake.cli import main

    config = tmp_path / "binlake.toml"
    config.write_text(f'home = "{plain.home}"\ncatalog_name = "{plain.catalog_name}"\n')
    assert main(["validate", "--config", str(config), "--no-lake", "--master", "local[2]",
                 "--run-id", "cli", *map(str, stream["files"][:3])]) == 0
    out = capsys.readouterr().out
    assert "PASSED" in out and "integrity" in out and "reconciliation" not in out
    assert main(["validate", "--config", str(config), "--no-lake", str(stream["files"][2])]) == 1
    assert "xa.decisions_match_prepares" in capsys.readouterr().out
    assert main(["validate", "--no-lake", str(tmp_path / "missing")]) == 2


@pytest.mark.integration
def test_rows_missing_from_row_changes_fail_reconciliation(spark: Any, lake: Any,
                                                           stream: dict[str, Any]) -> None:
    # destructive: runs last on the module's lake
    spark.sql(f"DELETE FROM {lake.table('row_changes')} WHERE db = 'd' AND tbl = 't' "
              "AND op = 'insert' AND after LIKE '%\"a\":4%'")
    report = run(spark, lake, [stream["dir"]], lake=True, run_id="recon")
    assert failed(report, "error") == {"reconciliation.row_changes"}, show(report)
    # the mirror of d.t still has the row: its count is now one above inserts - deletes
    assert failed(report, "warning") == {"reconciliation.mirror_counts"}, show(report)
    (row,) = next(r for r in report.results if r["expectation"] == "reconciliation.row_changes"
                  )["details"]["unexpected"]
    assert list(row) == ["1/1/0", "0/1/0"]  # the transaction inserted 1, updated 1


# -- the corpus ---------------------------------------------------------------------------------

# Expected failures, from the MANIFEST's notes and the MySQL test suite's purpose for each file
# (events removed: positions, transaction_length, often grammar; an event edited without a CRC
# update: integrity; an XA edited: the XA family).
CORPUS_CASES: dict[str, set[str]] = {
    # the Xid of GTID :2 removed (events removed inside a transaction)
    R + "orphan_xid.000001": {"grammar.valid_transitions", "grammar.every_group_ends",
                              "positions.next_pos_chain", "transaction_length.matches"},
    # the second XA_PREPARE edited to prepare 'x' again, without a CRC update: a damaged
    # event, whose group the transaction layer does not build (so no second PREPARE either)
    R + "duplicate_xid_xa_prepare.000001": {"integrity.event_checksums"},
    # the PREPARE group :4 removed before a second XA COMMIT of 'x'
    R + "duplicate_xid_xa_commit.000001": {"positions.next_pos_chain", "gtid.mysql_no_gaps",
                                           "xa.decisions_match_prepares"},
    # the second Xid edited to repeat the first, without a CRC update
    R + "duplicate_xid.000001": {"integrity.event_checksums", "integrity.unique_xids"},
    # TRUNCATED: the Previous_gtids event cut after 9 bytes
    "mysql-8.0/std_data/binlog_truncated_prev_gtid_event.000001": {
        "integrity.files_read_to_end"},
    # two files of one MySQL 8.0.45 server with GTIDs: clean
    "libs/percona-binlog-server/data_80045_gtid/": set(),
}


@pytest.mark.parametrize("rel", sorted(CORPUS_CASES))
def test_corpus_file(rel: str, spark: Any, plain: Any) -> None:
    require_corpus()
    report = run(spark, plain, [CORPUS / rel])
    assert failed(report) == CORPUS_CASES[rel], show(report)
    assert report.success == (not CORPUS_CASES[rel])


def test_tampered_transaction_length(spark: Any, plain: Any, tmp_path: Path) -> None:
    """A MySQL 8 file whose first declared transaction_length is one byte too long (its CRC32
    recomputed, so only the length disagrees)."""
    from .test_checks import _gtid_length_field

    require_corpus()
    src = CORPUS / "libs/percona-binlog-server/data_80045_gtid/binlog.000001"
    data = bytearray(src.read_bytes())
    gtid = next(ev for ev in BinlogReader(src)
                if ev.type_code == EventType.GTID and ev.data.get("transaction_length"))
    raw = bytearray(data[gtid.pos:gtid.pos + gtid.length])
    at, width, value = _gtid_length_field(bytes(raw))
    raw[at:at + width] = (value + 1).to_bytes(width, "little")
    raw[-4:] = zlib.crc32(bytes(raw[:-4])).to_bytes(4, "little")
    data[gtid.pos:gtid.pos + gtid.length] = raw
    copy_ = tmp_path / "binlog.000001"
    copy_.write_bytes(bytes(data))
    report = run(spark, plain, [copy_])
    assert failed(report) == {"transaction_length.matches"}, show(report)
    (row,) = next(r for r in report.results if r["expectation"] == "transaction_length.matches"
                  )["details"]["unexpected_rows"]
    assert row["pos"] == gtid.pos and json.loads(row["detail"])["declared"] == value + 1


# -- the facts the load leaves (stream_facts) against reading the files again ----------------


def _stream_results(report: Any) -> dict[str, tuple[bool, str]]:
    return {r["expectation"]: (r["success"], json.dumps(r["observed"], sort_keys=True))
            for r in report.results if r["family"] != "reconciliation"}


@pytest.mark.integration
@pytest.mark.parametrize("damage", [False, True], ids=["clean", "flipped-byte"])
def test_load_facts_give_the_verdicts_of_reading_again(spark: Any, damage: bool,
                                                       tmp_path_factory: pytest.TempPathFactory
                                                       ) -> None:
    """A real 0.5 MB MariaDB file (1,300 transactions) loaded in 64 KB ranges: validation
    takes its facts from the lake (no task reads the file again) and its verdicts, observed
    values included, are those of reading the file whole.  With a byte flipped in the middle
    (an event that does not decode: the load fails the file, its facts still land), the
    same."""
    require_corpus()
    from binlake.lake.job import run_load

    base = tmp_path_factory.mktemp("gx-ranged")
    src = CORPUS / "mariadb-11.8" / "std_data" / "mdev6020-mysql-bin.000001"
    d = base / "binlogs"
    d.mkdir()
    data = bytearray(src.read_bytes())
    if damage:
        data[len(data) // 2] ^= 0xFF
    (d / src.name).write_bytes(bytes(data))
    settings = make_settings(spark, base, f"ranged{int(damage)}", split_bytes=1 << 16)
    summary = run_load(spark, settings, [str(d)], run_id="ranged-1")
    assert summary.ranges >= 4
    assert bool(summary.failed) == damage
    from_lake = run(spark, settings, [d], lake=True, run_id="from-lake")
    # read again whole (ranges bigger than the file), and in ranges of 64 KB on both cores
    whole = dataclasses.replace(settings, split_bytes=1 << 40)
    again = run(spark, whole, [d], lake=False, run_id="read-again")
    ranged = run(spark, settings, [d], lake=False, run_id="read-again-ranged")
    notes = next(r for r in from_lake.results
                 if r["expectation"] == "integrity.events_decode")["details"]
    assert notes["facts_from_load"] == [src.name] and notes["read_again"] == []
    notes = next(r for r in again.results
                 if r["expectation"] == "integrity.events_decode")["details"]
    assert notes["facts_from_load"] == [] and notes["read_again"] == [src.name]
    assert notes["read_in_ranges"] == {}
    assert notes["events"] > 7000
    cut = next(r for r in ranged.results
               if r["expectation"] == "integrity.events_decode")["details"]
    assert cut["read_again"] == [src.name] and cut["read_in_ranges"][src.name] >= 4, cut
    assert cut["events"] == notes["events"]
    assert _stream_results(from_lake) == _stream_results(again) == _stream_results(ranged)
    assert (not from_lake.success) == damage
    if damage:  # (the file has no CRC32s: the flipped byte breaks an event's body)
        assert "integrity.events_decode" in failed(from_lake)


@pytest.mark.integration
def test_relay_log_read_in_ranges_is_read_whole(spark: Any,
                                                 tmp_path_factory: pytest.TempPathFactory
                                                 ) -> None:
    """A relay log big enough to be cut (MySQL's corrupt-relay-bin, 91 KB, its master's
    positions in the headers from its second event on) is first read in two ranges, whose
    facts cannot stand for the file (the checker stops checking positions where it turns
    into a relay log, which the second range cannot know): it is read again whole, and the
    verdicts are those of reading it whole at once."""
    require_corpus()
    base = tmp_path_factory.mktemp("gx-relay")
    src = CORPUS / "mysql-8.0" / "std_data" / "corrupt-relay-bin.000624"
    d = base / "binlogs"
    d.mkdir()
    shutil.copyfile(src, d / src.name)
    settings = make_settings(spark, base, "relay", split_bytes=1 << 16)
    cut = run(spark, settings, [d], lake=False, run_id="relay-ranged")
    whole = run(spark, dataclasses.replace(settings, split_bytes=1 << 40), [d], lake=False,
                run_id="relay-whole")
    notes = next(r for r in cut.results
                 if r["expectation"] == "integrity.events_decode")["details"]
    assert notes["read_again"] == [src.name] and notes["read_in_ranges"] == {}, notes
    assert notes["events"] == 874
    assert _stream_results(cut) == _stream_results(whole)


@pytest.mark.integration
def test_facts_partly_from_the_lake(spark: Any, tmp_path_factory: pytest.TempPathFactory
                                    ) -> None:
    """Two files, only the first loaded: validation takes the first one's facts from the
    lake and reads the second again, and gives the verdicts of reading both again."""
    require_corpus()
    from binlake.lake.job import run_load

    base = tmp_path_factory.mktemp("gx-partly")
    src = CORPUS / "mariadb-11.8" / "std_data" / "mdev6020-mysql-bin.000001"
    loaded, both = base / "loaded", base / "both"
    loaded.mkdir()
    both.mkdir()
    first, second = (f"mysql-bin.00000{i}" for i in (1, 2))
    (loaded / first).write_bytes(src.read_bytes())
    for name in (first, second):
        (both / name).write_bytes(src.read_bytes())
    settings = make_settings(spark, base, "partly", split_bytes=1 << 16)
    summary = run_load(spark, settings, [str(loaded / first)], run_id="partly-1")
    assert summary.ranges >= 4 and not summary.failed
    # the lake's files rows name the first file under the same name as in ``both``
    mixed = run(spark, settings, [both], lake=True, run_id="partly-lake")
    again = run(spark, dataclasses.replace(settings, split_bytes=1 << 40), [both], lake=False,
                run_id="partly-again")  # (both read whole)
    notes = next(r for r in mixed.results
                 if r["expectation"] == "integrity.events_decode")["details"]
    assert notes["facts_from_load"] == [first] and notes["read_again"] == [second], notes
    # every event of both files checked, each file's counted once (the files' rows)
    counted = next(r for r in again.results
                   if r["expectation"] == "integrity.events_decode")["details"]["events"]
    assert notes["events"] == counted and counted > 2 * 7000, (notes["events"], counted)
    assert _stream_results(mixed) == _stream_results(again)
    # (the second file repeats the first one's GTIDs: the checks do see both files)
    assert "gtid.no_duplicates" in failed(again), failed(again)
    # the second file loaded by a run of its own: both files' facts from the lake, each of
    # the run that loaded it, with the verdicts of reading both again
    assert not run_load(spark, settings, [str(both / second)], run_id="partly-2").failed
    two = run(spark, settings, [both], lake=True, run_id="partly-lake-2")
    notes = next(r for r in two.results
                 if r["expectation"] == "integrity.events_decode")["details"]
    assert notes["facts_from_load"] == [first, second] and notes["read_again"] == [], notes
    assert notes["events"] == counted
    assert _stream_results(two) == _stream_results(again)



def _mirror_result(report: Any) -> tuple[dict[str, Any], list[list[str]]]:
    """(details, the unexpected [expected, actual] pairs) of reconciliation.mirror_counts."""
    result = next(r for r in report.results if r["expectation"] == "reconciliation.mirror_counts")
    return result["details"], [list(p) for p in result["details"]["unexpected"]]


@pytest.mark.integration
def test_mirror_counts_of_a_night_on_a_branch(spark: Any, stream: dict[str, Any],
                                              tmp_path_factory: pytest.TempPathFactory) -> None:
    """Night 1 (files 1-2) on main, night 2 (files 3-4) on a branch.  The branch's check
    compares what the night changed (the mirrors' rows at the branch's head minus at its fork
    point, against the night's inserts - deletes), without reading night 1's row changes: it
    passes when one of them is lost (which the whole-lake check reports), and fails when a
    mirror row the night wrote is lost."""
    from binlake.lake.job import run_load
    from binlake.lake.typed_plan import table_names

    settings = make_settings(spark, tmp_path_factory.mktemp("gx-night"), "night")
    files = stream["files"]
    night1, night2 = files[:2], files[2:]
    assert not run_load(spark, settings, [str(f) for f in night1], run_id="n1").failed
    assert not run_load(spark, settings, [str(f) for f in night2], run_id="n2",
                        branch="n2").failed
    # main moves on after the fork, as when another source's night is published: a row of
    # source "other" in row_changes and in d.t's mirror (the fork points are then older
    # snapshots of main; the other source's rows are not counted)
    from pyspark.sql import functions as F

    mirror = settings.table(table_names("d", "t")[1])
    assert spark.conf.get("spark.wap.branch", None) is None
    for table, column in ((settings.table("row_changes"), "source"), (mirror, "_source")):
        spark.table(table).limit(1).withColumn(column, F.lit("other")).writeTo(table).append()
    night = run(spark, settings, night2, lake=True, run_id="night", branch="n2")
    assert night.success and not night.failed(), show(night)
    details, _ = _mirror_result(night)
    assert details["scope"] == "night" and details["order_seqs"] == [3, 4], details
    # the night's tables: d.t (XA x1's insert committed in file 3, one more insert, an
    # update: +2) and d.m (one insert: +1)
    assert details["element_count"] == 2, details
    assert set(details["fork_points"]) == {"d.t", "d.m"}, details
    # night 1's insert of d.t's row 3 lost from the branch's history
    spark.sql(f"DELETE FROM {settings.table('row_changes')}.branch_n2 WHERE db = 'd' "
              "AND tbl = 't' AND op = 'insert' AND after LIKE '%\"a\":3%'")
    night = run(spark, settings, night2, lake=True, run_id="night-2", branch="n2")
    assert night.success and not night.failed(), show(night)
    whole = run(spark, dataclasses.replace(settings, mirror_counts="lake"), night2, lake=True,
                run_id="whole", branch="n2")
    assert failed(whole) == {"reconciliation.mirror_counts"}, show(whole)
    details, pairs = _mirror_result(whole)
    # d.t: 6 inserts - 1 of them lost - 1 delete = 4, against the mirror's 5 rows
    assert details["scope"] == "lake" and pairs == [["4", "5"]], details
    # a row the night wrote lost from the branch's mirror of d.t: night 2 +2, the mirror +1
    spark.sql(f"DELETE FROM {mirror}.branch_n2 WHERE a = 11")
    broken = run(spark, settings, night2, lake=True, run_id="broken", branch="n2")
    assert failed(broken, "warning") == {"reconciliation.mirror_counts"}, show(broken)
    assert failed(broken) == {"reconciliation.mirror_counts"}, show(broken)
    details, pairs = _mirror_result(broken)
    assert details["scope"] == "night" and pairs == [["2", "1"]], details
