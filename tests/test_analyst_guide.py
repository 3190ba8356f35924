"""docs/analysts.md, run: every ``sql`` and ``python`` example of the guide against a real lake.

A fresh MariaDB server runs a small shop workload on ``shop.orders`` whose commit times are
placed with ``SET timestamp``: two days ago, yesterday morning (before the noon cut the guide
uses), yesterday afternoon.  It has a multi-statement transaction, a rolled-back one, a delete,
an UPDATE that changes the primary key, an XA prepared before noon and committed after it,
and an XA left prepared at the end.  The binary logs are loaded with ``run_load`` in two runs
(one per ``FLUSH BINARY LOGS``), so the tables have two snapshots and the first XA spans the
runs.

Then every fenced ``sql``/``python`` block of docs/analysts.md runs, in document order, in one
namespace (python blocks with ``exec``, sql blocks through ``spark.sql``), and its result is
compared with what the workload did.  Expected values come from the workload's bookkeeping
(each statement's affected-row count is checked against the server), the server's own
``SELECT`` at the cut time and at the end, ``@@last_gtid`` and ``XA RECOVER`` -- never from
binlake.  Each runnable block carries ``title="..."`` and an ``Expect:`` comment; every title
needs a checker here and every checker a block, so an example that stops working, or one
added without a check, fails.

The Spark session is private to this module: an active session (with another catalog) is
stopped first, and ours is stopped at the end.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from datetime import time as dtime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from .conftest import SHARED

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "analysts.md"
FENCE = re.compile(r"^```(?P<lang>[A-Za-z]+)(?P<info>[^\n]*)\n(?P<code>.*?)^```[ \t]*$",
                   re.M | re.S)
TITLE = re.compile(r'title="(?P<title>[^"]+)"')
RUNNABLE = ("python", "sql")
XA_STATE_ERRORS = (1397, 1399, 1440)  # XAER_NOTA, XAER_RMFAIL, XAER_DUPID: still attached
# a statement longer than row_changes.statement keeps (the guide joins `statements`)
TRACE = "trace " + "0123456789abcdef" * 80


# -- the guide's blocks ------------------------------------------------------------------------


@dataclass
class Block:
    lang: str
    title: str
    code: str


def guide_blocks() -> list[Block]:
    """The runnable blocks of the guide, in order (an untitled python/sql block is an error)."""
    out = []
    for m in FENCE.finditer(GUIDE.read_text(encoding="utf-8")):
        lang = m["lang"].lower()
        if lang not in RUNNABLE:
            continue
        t = TITLE.search(m["info"])
        if t is None:
            raise AssertionError(f"a ```{lang} block of {GUIDE.name} has no title=\"...\": "
                                 f"{m['code'][:60]!r}")
        if "Expect:" not in m["code"]:
            raise AssertionError(f"block {t['title']!r} has no 'Expect:' comment line")
        out.append(Block(lang, t["title"], m["code"]))
    titles = [b.title for b in out]
    assert len(titles) == len(set(titles)), f"duplicate titles: {titles}"
    return out


# -- the workload ------------------------------------------------------------------------------


@dataclass
class Change:
    op: str
    before_id: int | None
    after_id: int | None
    statement: str
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None


@dataclass
class Txn:
    label: str
    at: datetime  # commit time (UTC)
    changes: list[Change]
    status: str = "committed"
    kind: str = "dml"
    gtid: str = ""
    run: int = 0  # which load brought it


@dataclass
class World:
    """What the workload did, as the client and the server saw it."""

    yesterday: date
    noon: datetime
    txns: list[Txn] = field(default_factory=list)  # decided, in commit order (DDL included)
    states: dict[str, dict[int, dict[str, Any]]] = field(default_factory=dict)
    recover: dict[int, set[tuple[int, bytes, bytes]]] = field(default_factory=dict)
    prepared: dict[tuple[int, bytes, bytes], tuple[datetime, int]] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)


def _image(row: dict[str, Any]) -> dict[str, Any]:
    """A server row as binlake's JSON contract writes it (DECIMAL as its exact string)."""
    return {k: (str(v) if isinstance(v, Decimal) else v) for k, v in row.items()}


def _ts(when: datetime) -> int:
    return int(when.timestamp())


class Shop:
    def __init__(self, srv: Any, world: World) -> None:
        self.srv = srv
        self.world = world
        self.conn = srv.connect()

    def state(self) -> dict[int, dict[str, Any]]:
        import pymysql

        with self.srv.connect(cursorclass=pymysql.cursors.DictCursor) as c, c.cursor() as cur:
            cur.execute("SELECT id, customer, status, amount FROM shop.orders ORDER BY id")
            return {r["id"]: _image(r) for r in cur.fetchall()}

    @staticmethod
    def at(conn: Any, when: datetime) -> None:
        with conn.cursor() as cur:
            cur.execute("SET timestamp = %s", (_ts(when),))

    @staticmethod
    def run(conn: Any, sql: str, changes: list[tuple[str, int | None, int | None]]
            ) -> list[Change]:
        with conn.cursor() as cur:
            n = cur.execute(sql)
        assert n == len(changes), f"{sql!r} changed {n} rows, the workload expected {changes}"
        return [Change(op, b, a, sql) for op, b, a in changes]

    @staticmethod
    def last_gtid(conn: Any) -> str:
        with conn.cursor() as cur:
            cur.execute("SELECT @@last_gtid")
            return str(cur.fetchone()[0])

    def ddl(self, when: datetime, sql: str) -> None:
        self.at(self.conn, when)
        with self.conn.cursor() as cur:
            cur.execute(sql)
        self.world.txns.append(Txn(sql, when, [], kind="ddl", gtid=self.last_gtid(self.conn)))

    def txn(self, label: str, when: datetime,
            statements: list[tuple[str, list[tuple[str, int | None, int | None]]]],
            rollback: bool = False) -> None:
        """One transaction on the main connection (BEGIN ... COMMIT or ROLLBACK)."""
        before = self.state()
        self.at(self.conn, when)
        self.conn.begin()
        changes = [c for sql, ch in statements for c in self.run(self.conn, sql, ch)]
        if rollback:
            self.conn.rollback()
            assert self.state() == before
            return  # InnoDB only: nothing is logged
        self.conn.commit()
        self._images(changes, before, self.state())
        self.world.txns.append(Txn(label, when, changes, gtid=self.last_gtid(self.conn)))

    @staticmethod
    def _images(changes: list[Change], before: dict[int, dict[str, Any]],
                after: dict[int, dict[str, Any]]) -> None:
        for c in changes:  # no row changes twice in one transaction of this workload
            c.before = before[c.before_id] if c.before_id is not None else None
            c.after = after[c.after_id] if c.after_id is not None else None

    def xa_prepare(self, conn: Any, xid_sql: str, when: datetime, sql: str,
                   changes: list[tuple[str, int | None, int | None]],
                   key: tuple[int, bytes, bytes]) -> tuple[list[Change], dict[int, Any]]:
        before = self.state()
        self.at(conn, when)
        with conn.cursor() as cur:
            cur.execute(f"XA START {xid_sql}")
        done = self.run(conn, sql, changes)
        with conn.cursor() as cur:
            cur.execute(f"XA END {xid_sql}")
            cur.execute(f"XA PREPARE {xid_sql}")
        self.world.prepared[key] = (when, len(done))
        return done, before

    def xa_recover(self) -> set[tuple[int, bytes, bytes]]:
        return {(int(fmt), bytes(data[:g]), bytes(data[g:g + b]))
                for fmt, g, b, data in self.srv.execute("XA RECOVER")}

    def flush(self) -> list[str]:
        """Rotate; return the closed files not listed before."""
        self.srv.flush_binary_logs()
        new = [str(f) for f in self.srv.closed_binlog_files() if str(f) not in self.world.files]
        self.world.files += new
        return new


def disconnect(srv: Any, conn: Any) -> None:
    """Close ``conn`` and wait until the server has ended its session (a prepared XA it held
    is then detached)."""
    with conn.cursor() as cur:
        cur.execute("SELECT CONNECTION_ID()")
        tid = cur.fetchone()[0]
    conn.close()
    deadline = time.monotonic() + 30
    while srv.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = %s",
                      (tid,))[0][0]:
        assert time.monotonic() < deadline, f"connection {tid} did not go away"
        time.sleep(0.02)


# -- the lake ----------------------------------------------------------------------------------


@dataclass
class Lake:
    world: World
    srv: Any
    spark: Any
    settings: Any
    results: dict[str, Any]  # title -> the rows of a sql block / the namespace after a python one
    errors: dict[str, BaseException]  # title -> what a block raised
    run1: dict[str, Any]  # in-doubt-xa rows after the first load
    seconds: dict[str, float]


def _start_server(base: Path, template: Path) -> Any:
    from binlake_dev.mariadb import MariaDBServer, ServerError, free_port

    for attempt in range(3):
        srv = MariaDBServer(base / f"s{attempt}", port=free_port())
        srv.init(template=template)
        try:
            return srv.start()
        except ServerError as exc:
            srv.kill()
            if "already in use" not in str(exc) or attempt == 2:
                raise
    raise AssertionError("unreachable")


def _stop_active_spark() -> None:
    """Stop the process's session, so the guide starts one as an analyst does; but not the
    suite's shared one (conftest ``spark_lake``: the later modules of this process use it,
    as they do under pytest-xdist, where a worker may run this module after them). The
    guide then registers its catalog on that session, as ``build_session`` does."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession() or SparkSession._instantiatedSession
    if active is not None and not getattr(active, SHARED, False):
        active.stop()


def _run_block(block: Block, spark: Any, ns: dict[str, Any]) -> Any:
    if block.lang == "sql":
        return spark.sql(block.code).collect()
    exec(compile(block.code, f"{GUIDE.name}:{block.title}", "exec"), ns)
    return dict(ns)  # the namespace as this block left it


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory, mariadb_template: Path) -> Iterator[Lake]:
    from binlake.config import load_settings
    from binlake.lake.job import run_load
    from binlake.lake.spark import build_session

    t_start = time.monotonic()
    now = datetime.now(UTC)
    midnight = datetime.combine(now.date() + timedelta(days=1), dtime(0), tzinfo=UTC)
    if (midnight - now).total_seconds() < 180:  # "yesterday" must not move during the test
        time.sleep((midnight - now).total_seconds() + 1)
    today = datetime.now(UTC).date()
    yesterday = today - timedelta(days=1)
    y = datetime.combine(yesterday, dtime(0), tzinfo=UTC)
    d2 = y - timedelta(days=1)
    world = World(yesterday, y + timedelta(hours=12))
    seconds: dict[str, float] = {}

    base = tmp_path_factory.mktemp("guide")
    home = base / "lake"
    srv = _start_server(base / "db", mariadb_template)
    mp = pytest.MonkeyPatch()
    try:
        for k in list(os.environ):
            if k.startswith("BINLAKE_"):
                mp.delenv(k)
        mp.setenv("BINLAKE_HOME", str(home))
        settings = load_settings()
        shop = Shop(srv, world)
        H = timedelta(hours=1)

        # -- two days ago ----------------------------------------------------------------------
        shop.ddl(d2 + 10 * H, "CREATE DATABASE shop")
        shop.ddl(d2 + 10 * H, "CREATE TABLE shop.orders (id INT PRIMARY KEY, customer "
                 "VARCHAR(40) NOT NULL, status VARCHAR(16) NOT NULL, amount DECIMAL(10,2))")
        shop.txn("A", d2 + 10 * H + timedelta(minutes=5), [(
            "INSERT INTO shop.orders VALUES (1, 'ann', 'new', 10.50), (2, 'bob', 'new', 20), "
            "(3, 'cy', 'new', 7.25), (4, 'dee', 'new', 99.99)",
            [("insert", None, 1), ("insert", None, 2), ("insert", None, 3),
             ("insert", None, 4)])])
        shop.txn("B", d2 + 16 * H, [(
            "UPDATE shop.orders SET amount = 89.99 WHERE id = 4", [("update", 4, 4)])])
        world.states["d2"] = shop.state()

        # -- yesterday morning -----------------------------------------------------------------
        shop.txn("rolled back", y + 9 * H, [(
            "UPDATE shop.orders SET status = 'lost' WHERE id = 2", [("update", 2, 2)])],
            rollback=True)
        shop.txn("C", y + 9 * H + timedelta(minutes=15), [
            ("UPDATE shop.orders SET status = 'paid' WHERE id IN (1, 2) "
             f"/* {TRACE} */", [("update", 1, 1), ("update", 2, 2)]),
            ("INSERT INTO shop.orders VALUES (5, 'eve', 'new', NULL)", [("insert", None, 5)])])
        shop.txn("D", y + 10 * H, [
            ("DELETE FROM shop.orders WHERE id = 3", [("delete", 3, None)])])
        shop.txn("E", y + 10 * H + timedelta(minutes=30), [
            ("UPDATE shop.orders SET id = 7 WHERE id = 4", [("update", 4, 7)])])
        xa1 = srv.connect()
        ship_key = (1, b"ship-5", b"")
        ship, ship_before = shop.xa_prepare(
            xa1, "'ship-5'", y + 11 * H,
            "UPDATE shop.orders SET status = 'shipped' WHERE id = 5", [("update", 5, 5)],
            ship_key)
        world.states["noon"] = shop.state()
        for t in world.txns:
            t.run = 1
        shop.flush()
        world.recover[1] = shop.xa_recover()
        assert world.recover[1] == {ship_key}

        _stop_active_spark()
        t0 = time.monotonic()
        spark = build_session(settings)
        seconds["spark session"] = time.monotonic() - t0
        t0 = time.monotonic()
        s1 = run_load(spark, settings, [str(srv.binlog_dir)])  # the in-use file too
        seconds["load 1"] = time.monotonic() - t0
        assert not s1.failed, s1.files
        blocks = {b.title: b for b in guide_blocks()}
        run1 = {"rows": _run_block(blocks["in-doubt-xa"], spark, {})} \
            if "in-doubt-xa" in blocks else {}

        # -- yesterday afternoon ---------------------------------------------------------------
        shop.at(xa1, y + 13 * H)
        with xa1.cursor() as cur:
            cur.execute("XA COMMIT 'ship-5'")
        shop._images(ship, ship_before, shop.state())
        world.txns.append(Txn("XA ship-5", y + 13 * H, ship, status="xa_committed", kind="xa",
                              gtid=shop.last_gtid(xa1), run=2))
        xa1.close()
        shop.txn("F", y + 14 * H, [(
            "INSERT INTO shop.orders VALUES (8, 'fay', 'new', 42.00)", [("insert", None, 8)])])
        shop.txn("G", y + 14 * H + timedelta(minutes=30), [(
            "UPDATE shop.orders SET status = 'refunded', amount = 0 WHERE id = 1",
            [("update", 1, 1)])])
        xa2 = srv.connect()
        refund_key = (7, b"refund-8", b"b1")
        shop.xa_prepare(xa2, "'refund-8','b1',7", y + 15 * H,
                        "UPDATE shop.orders SET status = 'refunding' WHERE id = 8",
                        [("update", 8, 8)], refund_key)
        disconnect(srv, xa2)  # the XA stays prepared, detached
        world.states["end"] = shop.state()
        for t in world.txns:
            t.run = t.run or 2
        rotated = shop.flush()
        world.recover[2] = shop.xa_recover()
        assert world.recover[2] == {refund_key}
        shop.conn.close()

        t0 = time.monotonic()  # the nightly pattern: only the newly rotated files
        s2 = run_load(spark, settings, rotated)
        seconds["load 2"] = time.monotonic() - t0
        assert not s2.failed, s2.files

        # -- the guide -------------------------------------------------------------------------
        t0 = time.monotonic()
        ns: dict[str, Any] = {"__name__": "analysts_guide", "spark": spark,
                              "settings": settings}
        results: dict[str, Any] = {}
        errors: dict[str, BaseException] = {}
        for block in blocks.values():
            try:
                results[block.title] = _run_block(block, spark, ns)
            except Exception as exc:  # reported by that block's test
                errors[block.title] = exc
        seconds["guide"] = time.monotonic() - t0
        seconds["fixture total"] = time.monotonic() - t_start
        print("timings:", {k: round(v, 1) for k, v in seconds.items()})
        yield Lake(world, srv, spark, settings, results, errors, run1, seconds)
    finally:
        mp.undo()
        _stop_active_spark()
        srv.stop(timeout=30)


# -- the checks --------------------------------------------------------------------------------


def _local(when: datetime) -> datetime:
    """A UTC time as PySpark's collect() returns a TIMESTAMP (naive, the process's zone)."""
    return when.astimezone().replace(tzinfo=None)


def _changes(world: World, pred: Callable[[Txn], bool]) -> list[tuple[Txn, Change]]:
    return [(t, c) for t in world.txns if pred(t) for c in t.changes]


def check_connect(lake: Lake, ns: Any) -> None:
    assert ns["spark"] is lake.spark  # the session the lake was loaded with
    assert ns["spark"].conf.get("spark.sql.session.timeZone") == "UTC"
    assert ns["settings"].home_path == lake.settings.home_path
    assert ns["catalog"].name == "binlake"
    assert {t[1] for t in ns["catalog"].list_tables("binlog")} >= {
        "files", "transactions", "row_changes", "xa_prepares", "xa_pending"}


def check_changed_yesterday(lake: Lake, rows: Any) -> None:
    w = lake.world
    want = _changes(w, lambda t: t.at.date() == w.yesterday)
    assert [(r.op, r.statement) for r in rows] == [(c.op, c.statement) for _, c in want]
    for r, (t, c) in zip(rows, want):
        assert r.commit_ts == _local(t.at), (r, t.label)
        assert r.txn_id == t.gtid, (r, t.label)
        assert r.status == t.status, (r, t.label)
        assert (json.loads(r.before) if r.before else None) == c.before, (r, t.label)
        assert (json.loads(r.after) if r.after else None) == c.after, (r, t.label)
        key = c.after_id if c.after_id is not None else c.before_id
        assert json.loads(r.pk) == {"id": key}
        assert r.new_status == (c.after["status"] if c.after else None)
    # the rolled-back transaction left nothing
    assert all(r.after is None or json.loads(r.after)["status"] != "lost" for r in rows)


def _check_in_doubt(rows: Any, recover: set[tuple[int, bytes, bytes]], world: World) -> None:
    got = {(r.xa_format_id, r.gtrid.encode(), r.bqual.encode()) for r in rows}
    assert got == recover
    for r in rows:
        key = (r.xa_format_id, r.gtrid.encode(), r.bqual.encode())
        prepared_at, n = world.prepared[key]
        assert r.prepared_ts == _local(prepared_at)
        assert r.rows == n
        assert r.xid_sql == (f"X'{key[1].hex()}',X'{key[2].hex()}',{key[0]}")


def check_in_doubt_xa(lake: Lake, rows: Any) -> None:
    _check_in_doubt(lake.run1["rows"], lake.world.recover[1], lake.world)  # after load 1
    _check_in_doubt(rows, lake.world.recover[2], lake.world)  # after load 2
    # xid_sql is what the server's XA statements take: decide the XA with it
    (r,) = rows
    deadline = time.monotonic() + 30
    while True:
        try:
            lake.srv.execute(f"XA ROLLBACK {r.xid_sql}")
            break
        except Exception as exc:
            code = exc.args[0] if exc.args else None
            if code not in XA_STATE_ERRORS or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    assert lake.srv.execute("XA RECOVER") == []


def check_orders_as_of(lake: Lake, ns: Any) -> None:
    w = lake.world
    assert ns["noon"] == w.noon
    assert ns["orders_at_noon"] == w.states["noon"]
    as_of = ns["orders_as_of"]
    y = datetime.combine(w.yesterday, dtime(0), tzinfo=UTC)
    assert as_of(y - timedelta(seconds=1)) == w.states["d2"]
    assert as_of(datetime.now(UTC)) == w.states["end"]
    assert as_of(y - timedelta(days=1)) == {}  # before anything was inserted


def check_orders_as_of_pandas(lake: Lake, ns: Any) -> None:
    assert ns["orders_replayed"] == lake.world.states["noon"]


def check_pyiceberg_pandas(lake: Lake, ns: Any) -> None:
    want = Counter((t.kind, t.status) for t in lake.world.txns)
    assert ns["catalog"].name == "binlake"
    assert ns["by_kind"] == dict(want)
    arrow = ns["arrow"]
    assert arrow.column("txn_id").to_pylist() == [
        t.gtid for t in lake.world.txns if t.status == "xa_committed"]


def check_duckdb_per_day(lake: Lake, ns: Any) -> None:
    want = Counter((t.at.date(), c.op) for t, c in _changes(lake.world, lambda t: True))
    assert ns["per_day"] == [(d, op, n) for (d, op), n in sorted(want.items())]


def _rows_per_run(world: World) -> tuple[int, int]:
    n1 = len(_changes(world, lambda t: t.run == 1))
    return n1, len(_changes(world, lambda t: True))


def check_snapshots(lake: Lake, rows: Any) -> None:
    n1, total = _rows_per_run(lake.world)
    assert [(r.added, r.total) for r in rows] == [(str(n1), str(n1)),
                                                 (str(total - n1), str(total))]
    assert rows[0].committed_at < rows[1].committed_at


def check_time_travel(lake: Lake, ns: Any) -> None:
    n1, total = _rows_per_run(lake.world)
    assert (ns["n_first"], ns["n_first_by_time"], ns["n_first_pyiceberg"]) == (n1, n1, n1)
    assert ns["n_now"] == total


def check_files_loaded(lake: Lake, rows: Any) -> None:
    assert [r.file for r in rows] == [Path(f).name for f in lake.world.files]
    assert {r.status for r in rows} == {"loaded"}
    gtids = [t.gtid for t in lake.world.txns]
    assert rows[0].first_gtid == gtids[0]


def _typed(image: dict[str, Any]) -> dict[str, Any]:
    """A JSON-contract image as the typed tables hold it (DECIMAL as Decimal)."""
    return {k: (Decimal(v) if k == "amount" and v is not None else v)
            for k, v in image.items()}


def check_mirror(lake: Lake, rows: Any) -> None:
    got = {r.id: {"id": r.id, "customer": r.customer, "status": r.status, "amount": r.amount}
           for r in rows}
    want = {k: _typed(v) for k, v in lake.world.states["end"].items()}
    assert got == want
    assert [r.id for r in rows] == sorted(want)
    last = {}  # the commit time of the change that wrote each row
    for t, c in _changes(lake.world, lambda t: True):
        if c.after_id is not None:
            last[c.after_id] = t.at
    assert {r.id: r._commit_ts for r in rows} == {k: _local(last[k]) for k in want}


def check_changelog_yesterday(lake: Lake, rows: Any) -> None:
    w = lake.world
    want = _changes(w, lambda t: t.at.date() == w.yesterday)
    assert len(rows) == len(want)
    for r, (t, c) in zip(rows, want):
        image = c.after if c.after is not None else c.before
        assert r._op == c.op
        assert (r._commit_ts, r._txn_id) == (_local(t.at), t.gtid)
        assert {"id": r.id, "customer": r.customer, "status": r.status,
                "amount": r.amount} == _typed(image)


CHECKS: dict[str, Callable[[Lake, Any], None]] = {
    "connect": check_connect,
    "changed-yesterday": check_changed_yesterday,
    "in-doubt-xa": check_in_doubt_xa,
    "orders-as-of": check_orders_as_of,
    "orders-as-of-pandas": check_orders_as_of_pandas,
    "pyiceberg-pandas": check_pyiceberg_pandas,
    "duckdb-per-day": check_duckdb_per_day,
    "snapshots": check_snapshots,
    "time-travel": check_time_travel,
    "files-loaded": check_files_loaded,
    "mirror": check_mirror,
    "changelog-yesterday": check_changelog_yesterday,
}


def _titles() -> list[str]:
    try:
        return [b.title for b in guide_blocks()]
    except (OSError, AssertionError):
        return []  # test_every_example_is_checked reports it


def test_every_example_is_checked() -> None:
    titles = [b.title for b in guide_blocks()]
    assert set(titles) == set(CHECKS), (
        f"examples without a check: {sorted(set(titles) - set(CHECKS))}; "
        f"checks without an example: {sorted(set(CHECKS) - set(titles))}")


@pytest.mark.parametrize("title", _titles())
def test_example(lake: Lake, title: str) -> None:
    if title in lake.errors:
        raise AssertionError(f"the example {title!r} of docs/analysts.md failed: "
                             f"{lake.errors[title]!r}") from lake.errors[title]
    CHECKS[title](lake, lake.results.get(title))
