"""Two sources' nights that overlap in time, on one lake (docs/orchestration.md, "Many
sources"): A loads on its branch, B loads on its branch (both made from the same ``main``),
A publishes (a fast-forward), B publishes (``main`` moved: B's changes are replayed onto it,
lib/binlake/lake/publish.py).  Both sources' rows must be on ``main`` as their branches had
them.  A broken source (a corrupt file: its night fails its files gate and is discarded)
does not stop the others' nights, and two overlapping nights of the *same* source still
fail loudly at the second publish.

In-process loads (``run_load``) on the shared local[2] session (``spark_lake``), typed
tables off as in tests/test_lake_job.py: a few seconds a load.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from binlake_dev.mariadb import MariaDBServer

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.slow]

pytest.importorskip("pyspark")

CORE = ("files", "transactions", "row_changes", "statements", "xa_prepares", "xa_pending")


@pytest.fixture(scope="module")
def spark(spark_lake: Any) -> Iterator[Any]:
    typed: Any
    try:
        import binlake.lake.typed as typed
    except ImportError:
        typed = None
    with pytest.MonkeyPatch.context() as mp:
        if typed is not None:  # the core tables are the subject here (see the module doc)
            mp.setattr(typed, "prepare", lambda *a, **k: typed.Prepared([], {}, {}))
        yield spark_lake


def _rows(spark: Any, settings: Any, table: str, source: str,
          branch: str | None = None) -> Counter[str]:
    from pyspark.sql import functions as F

    name = settings.table(table)
    if branch and branch not in {r[0] for r in spark.sql(
            f"SELECT name FROM {name}.refs").collect()}:
        branch = None  # the run wrote nothing there: the branch's state is main's
    reader = spark.read.option("branch", branch) if branch else spark.read
    df = reader.table(name).where(F.col("source") == source)
    return Counter(json.dumps(r.asDict(recursive=True), sort_keys=True, default=str)
                   for r in df.collect())


def _state(spark: Any, settings: Any, source: str, branch: str | None = None
           ) -> dict[str, Counter[str]]:
    return {t: _rows(spark, settings, t, source, branch) for t in CORE}


def _binlogs(srv: MariaDBServer, out: Path, sql: list[str]) -> list[Path]:
    srv.execute(sql)
    srv.flush_binary_logs()
    out.mkdir(parents=True, exist_ok=True)
    got = []
    for f in srv.closed_binlog_files():
        if not (out / f.name).exists():
            shutil.copyfile(f, out / f.name)
            got.append(out / f.name)
    return got


def test_overlapping_nights_of_two_sources(spark: Any, fresh_mariadb: MariaDBServer,
                                           tmp_path: Path) -> None:
    from binlake.config import load_settings
    from binlake.lake.job import run_load
    from binlake.lake.publish import _publish_table, publish, publish_or_discard
    from binlake.lake.spark import build_session
    from binlake.orchestrate import files_gate

    srv = fresh_mariadb
    # the binlogs of "server a" (its first night, then its second) and of "server b": one
    # server serves as both, the source label is what tells their rows apart
    night1 = _binlogs(srv, tmp_path / "bin1", [
        "CREATE DATABASE shop", "CREATE TABLE shop.t (id INT PRIMARY KEY, v VARCHAR(20))",
        "INSERT INTO shop.t VALUES (1, 'one'), (2, 'two')",
        "UPDATE shop.t SET v = 'uno' WHERE id = 1"])
    night2 = _binlogs(srv, tmp_path / "bin2", ["DELETE FROM shop.t WHERE id = 2",
                                               "INSERT INTO shop.t VALUES (3, 'three')"])
    assert night1 and night2
    corrupt = tmp_path / "corrupt" / night2[-1].name
    corrupt.parent.mkdir()
    raw = bytearray(night2[-1].read_bytes())
    raw[len(raw) - 120] ^= 0xFF
    corrupt.write_bytes(bytes(raw))

    env = {"BINLAKE_HOME": str(tmp_path / "home"), "BINLAKE_CATALOG_NAME": "lake_multi",
           "BINLAKE_SOURCES": json.dumps([{"name": n} for n in ("a", "b", "c")])}
    base = load_settings(env=env)
    sa, sb, sc = (base.for_source(n) for n in ("a", "b", "c"))
    build_session(sa, master="local[2]")  # registers the lake's catalog on the session

    def load(settings: Any, files: list[Path], branch: str) -> Any:
        return run_load(spark, settings, [str(f) for f in files], run_id=branch,
                        branch=branch)

    def finish(settings: Any, branch: str, keep: bool = True) -> tuple[list[str], bool]:
        """As ``binlake publish [--discard]``: the catalog's fast-forwards, Spark for the
        rest (this session); then the session sees the catalog's commits."""
        out = publish_or_discard(settings, branch, keep, lambda: spark)
        for t in spark.sql(f"SHOW TABLES IN {settings.catalog_name}."
                           f"{settings.namespace}").collect():
            spark.sql(f"REFRESH TABLE {settings.table(t['tableName'])}")
        return out

    # -- the night: A and B load, A publishes, B publishes ---------------------------------
    assert not load(sa, night1, "af_a__n1").failed
    assert not load(sb, night1 + night2, "af_b__n1").failed
    on_a, on_b = _state(spark, sa, "a", "af_a__n1"), _state(spark, sb, "b", "af_b__n1")
    assert on_a["row_changes"] and on_b["row_changes"]
    assert sum(on_b["row_changes"].values()) > sum(on_a["row_changes"].values())
    done, spark_used = finish(sa, "af_a__n1")
    assert "files" in done and not spark_used  # main had not moved: fast-forwards, no Spark
    # B's branch was made from the main before A's publish: B's changes are replayed. One
    # table first, as a publish that crashed after that table's commit would leave it: the
    # publish then finds the replay done and does not apply it twice.
    assert _publish_table(spark, sb, "row_changes", "af_b__n1") == "replayed"
    assert _publish_table(spark, sb, "row_changes", "af_b__n1") == "done"
    done, spark_used = finish(sb, "af_b__n1")
    assert done[-1] == "files" and spark_used  # the replays, through Spark
    assert finish(sb, "af_b__n1") == ([], False)  # published: the branch is gone
    assert _state(spark, sa, "a") == on_a
    assert _state(spark, sb, "b") == on_b

    # -- a broken source: C's night fails its files gate and is discarded; A's next night,
    # loaded and published meanwhile, is not held up -------------------------------------
    c_run = load(sc, [corrupt], "af_c__n2")
    assert [f["status"] for f in c_run.files] == ["failed"]
    assert not load(sa, night2, "af_a__n2").failed
    on_a2 = _state(spark, sa, "a", "af_a__n2")
    gate_c = files_gate(sc, {"names": [corrupt.name], "sha256": {}, "branch": "af_c__n2"})
    assert gate_c and "failed" in gate_c[0]
    assert files_gate(sa, {"names": [f.name for f in night2], "sha256": {},
                           "branch": "af_a__n2"}) == []
    assert "files" in finish(sa, "af_a__n2")[0]
    done, spark_used = finish(sc, "af_c__n2", keep=False)
    assert "files" in done and not spark_used  # a discard drops branches only: no Spark
    assert _state(spark, sa, "a") == on_a2
    assert sum(on_a2["row_changes"].values()) > sum(on_a["row_changes"].values())
    assert _state(spark, sb, "b") == on_b  # B's rows untouched by A's second night
    assert not any(_state(spark, sc, "c").values())  # nothing of C on main

    # -- two overlapping nights of the same source: the second publish fails, main keeps
    # the first ---------------------------------------------------------------------------
    for x in ("af_b__x1", "af_b__x2"):  # both from the same main; reloads: every table
        assert not run_load(spark, sb, [str(f) for f in night2], run_id=x, branch=x,
                            reload=True).failed
    assert finish(sb, "af_b__x1")[1] is False
    before = _state(spark, sb, "b")
    with pytest.raises(Exception, match=r"(?i)conflict"):
        finish(sb, "af_b__x2")  # main moved: left to Spark's replay, which finds the overlap
    with pytest.raises(Exception, match=r"(?i)conflict"):
        publish(spark, sb, "af_b__x2")
    assert _state(spark, sb, "b") == before
    refs = {r[0] for r in spark.sql(
        f"SELECT name FROM {sb.table('row_changes')}.refs").collect()}
    assert refs == {"main", "af_b__x2"}  # the failed night's branch stays for inspection
