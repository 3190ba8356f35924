"""Transaction scenarios on a real MariaDB server, and what the server says about them.

Each scenario is a function ``run(server) -> Truth`` that drives one or more connections of a
:class:`binlake_dev.mariadb.MariaDBServer` and returns the server's own account of the outcome:

``state``
    ``{"db.table": [row, ...]}`` -- the final ``SELECT *`` of every table of the scenario, rows
    sorted by primary key, as ``{column name: value}`` in binlake's value contract (the server's
    text through ``reference.server_text_to_contract``, as ``workloads.read_state`` does), so
    they compare with ``RowChange`` images.
``xa_recover``
    the rows of ``XA RECOVER`` at the end (only the XIDs this scenario left prepared).
``committed``
    every transaction the binary log records, as the workload knows it from the client side, in
    the order the server decided them (ROLLBACK'ed groups and XA ROLLBACKs included), followed by
    the XA transactions still prepared at the end (status ``xa_prepared``).  Each one carries a
    label, its status, the row changes that took effect and the logged ones that were undone
    (``("db.table", op, primary key)``: the after-image key of an insert, the before-image key of
    an update or delete), its XA id, the statements it should contain.  Row counts are checked
    against the server's affected-row counts as the workload runs.
``files``
    the closed binary logs the scenario wrote (every scenario ends with FLUSH BINARY LOGS).

The bookkeeping follows how MariaDB 10.11 logs transactions (measured here, and WL#2687 for the
non-transactional rules), which the scenarios exercise on purpose:

* ROW format: rows of a non-transactional table (MyISAM, Aria) go to the statement cache and are
  written when the *statement* ends, as a group of their own (``GTID``, ``BEGIN``, rows,
  ``Query COMMIT``) -- also inside BEGIN ... ROLLBACK, inside an XA transaction and inside a
  multi-table UPDATE of an InnoDB and a MyISAM table.  Rows of InnoDB tables are written at
  COMMIT (``Xid``) or thrown away at ROLLBACK (nothing logged) ...
* ... unless the transaction must be logged anyway: after ``CREATE TEMPORARY TABLE`` inside the
  transaction, or on ``ROLLBACK TO SAVEPOINT`` to a savepoint set while nothing was cached yet
  with a non-transactional change made in the transaction, the InnoDB rows are written in a group
  ending with ``Query ROLLBACK`` (rows that never took effect).
* ``SAVEPOINT`` is logged once something is in the transaction cache; ``ROLLBACK TO`` is logged
  only when the transaction changed a non-transactional table (anywhere in it): then the rows
  between the SAVEPOINT and the ROLLBACK TO are in the binlog but undone.  Without such a
  change the undone rows are dropped from the cache and never logged.  RELEASE is never logged.
* XA: ``XA PREPARE`` writes ``GTID`` (flag prepared_xa, the XID in the GTID event), rows,
  ``Query XA END``, ``XA_PREPARE``; ``XA COMMIT`` / ``XA ROLLBACK`` later write ``GTID`` (flag
  completed_xa) + ``Query XA COMMIT|ROLLBACK X'..',X'..',n`` -- possibly in another file, from
  another connection.  An XA with no changes, and XA ROLLBACK of an XA that was never prepared,
  are not logged at all.  ``XA COMMIT ... ONE PHASE`` is logged as an ordinary transaction.
* STATEMENT format: a non-transactional statement after a transactional one in a transaction is
  delayed into the transaction and ROLLBACK writes the group with ``Query ROLLBACK``; one before
  any transactional statement is written on its own; once a non-transactional table changed,
  a ROLLBACK writes the transactional statements too, ending in ``Query ROLLBACK``.

:func:`run_all` runs every scenario on one server (FLUSH BINARY LOGS between them) and returns
the combined truth with ``scenarios`` holding each one's own.  ``python -m tests.txn_workloads
[scenario ...]`` (from the repository root) runs them on a throw-away server and prints each
scenario's record and a one-line-per-event summary of what the server logged.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .reference import ColumnDef, load_schema, server_text_to_contract

# statuses (the values of binlake.txn.model, spelled out: the truth does not import binlake)
COMMITTED = "committed"
ROLLED_BACK = "rolled_back"
XA_COMMITTED = "xa_committed"
XA_ROLLED_BACK = "xa_rolled_back"
XA_PREPARED = "xa_prepared"

ROW_KINDS = ("dml",)
STATEMENT_KINDS = ("dml", "statement")  # statement-format DML: either is a fair name for it
DDL_KINDS = ("ddl",)
XA_KINDS = ("xa",)

NONTRANSACTIONAL_ENGINES = {"MYISAM", "ARIA", "MEMORY", "CSV", "MRG_MYISAM", "ARCHIVE"}

Change = tuple[str, str, int]  # ("db.table", "insert" | "update" | "delete", primary key)

XA_ERRORS = (1397, 1399, 1440)  # XAER_NOTA, XAER_RMFAIL, XAER_DUPID: the XID still attached


# -- data ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Xid:
    """An XA id as the client used it; ``literal`` overrides the SQL spelling."""

    format_id: int
    gtrid: bytes
    bqual: bytes = b""
    literal: str | None = None

    @property
    def sql(self) -> str:
        if self.literal is not None:
            return self.literal
        return f"X'{self.gtrid.hex()}',X'{self.bqual.hex()}',{self.format_id}"

    @property
    def key(self) -> tuple[int, str, str]:
        """``(formatID, gtrid hex, bqual hex)``: compares with binlake's ``XaXid``."""
        return (self.format_id, self.gtrid.hex(), self.bqual.hex())


@dataclass
class Expected:
    """One transaction the binary log records, as the workload knows it."""

    scenario: str
    label: str
    status: str
    kinds: tuple[str, ...]
    applied: list[Change] = field(default_factory=list)  # took effect
    undone: list[Change] = field(default_factory=list)  # logged, never took effect
    xa: Xid | None = None
    statements: tuple[str, ...] = ()  # normalised (see norm_sql) texts the group must contain
    # rolled back, yet holds non-transactional (MyISAM/Aria) changes that happened (WL#2687)
    nontransactional: bool = False
    # where the server wrote it (@@gtid_binlog_pos and the current binlog file right after the
    # client action that wrote it): the deciding group, and for XA the XA PREPARE group
    gtid: str | None = None
    file: str | None = None
    prepare_gtid: str | None = None
    prepare_file: str | None = None

    def describe(self) -> str:
        xa = f" xa={self.xa.key} prepared {self.prepare_gtid}" if self.xa else ""
        return (
            f"{self.scenario}/{self.label}: {self.gtid} {self.file} "
            f"{self.status} {'|'.join(self.kinds)}{xa} "
            f"applied={sorted(self.applied)} undone={sorted(self.undone)} "
            f"statements={list(self.statements)}"
        )


@dataclass
class Truth:
    name: str
    committed: list[Expected]
    state: dict[str, list[dict[str, Any]]]
    columns: dict[str, list[ColumnDef]]
    xa_recover: list[dict[str, Any]]
    files: list[Path]
    row_tables: set[str]  # every change to them was row-logged: replaying rows gives `state`
    renames: dict[str, str] = field(default_factory=dict)  # old "db.table" -> final name
    dropped: set[str] = field(default_factory=set)
    engines: dict[str, str] = field(default_factory=dict)  # "db.table" (old names too) -> ENGINE
    scenarios: dict[str, Truth] = field(default_factory=dict)  # run_all: each scenario's own

    @property
    def decided(self) -> list[Expected]:
        return [e for e in self.committed if e.status != XA_PREPARED]

    @property
    def pending(self) -> list[Expected]:
        return [e for e in self.committed if e.status == XA_PREPARED]


def norm_sql(sql: str) -> str:
    """Lower case, no backticks, single spaces: for matching logged statement texts."""
    return re.sub(r"\s+", " ", sql.replace("`", "")).strip().lower()


# -- rows of the standard test table -------------------------------------------------------------

STD_COLUMNS = (
    "id INT NOT NULL PRIMARY KEY, v INT, s VARCHAR(40), d DECIMAL(10,2), "
    "dt DATETIME(6), b VARBINARY(16), n INT NULL"
)

STD_NAMES = "id, v, s, d, dt, b, n"


def row_sql(pk: int, seed: int = 0) -> str:
    """Deterministic values for (id, v, s, d, dt, b, n) of the standard table."""
    s = f"'r{pk}-{seed} é'"
    d = f"'{pk}.{seed % 100:02d}'"
    dt = f"'2024-{pk % 12 + 1:02d}-{seed % 28 + 1:02d} 12:34:56.{pk * 1000 + seed:06d}'"
    b = f"X'{(pk % 256):02x}00ff{(seed % 256):02x}27'"
    n = "NULL" if (pk + seed) % 3 == 0 else str(pk * seed)
    return f"({pk}, {pk * 10 + seed}, {s}, {d}, {dt}, {b}, {n})"


# -- the recorder ------------------------------------------------------------------------------


class Session:
    """One client connection of a scenario."""

    def __init__(self, run: Run, conn: Any) -> None:
        self.run = run
        self.conn = conn
        self.format = "ROW"
        with conn.cursor() as cur:
            cur.execute("SELECT CONNECTION_ID()")
            self.thread_id = int(cur.fetchone()[0])

    def sql(self, sql: str) -> list[tuple[Any, ...]]:
        with self.conn.cursor() as cur:
            cur.execute(sql)
            rows = list(cur.fetchall()) if cur.description else []
        m = re.match(r"\s*SET\s+SESSION\s+binlog_format\s*=\s*'?(\w+)", sql, re.I)
        if m:
            self.format = m.group(1).upper()
        return rows

    def _dml(self, sql: str, table: str, op: str, pks: Sequence[int]) -> list[Change]:
        with self.conn.cursor() as cur:
            n = cur.execute(sql)
        if n != len(pks):
            raise AssertionError(f"{sql!r} changed {n} rows, the workload expected {len(pks)}")
        self.run.touch(table, self.format)
        return [(table, op, pk) for pk in pks]

    def insert(self, table: str, pks: Sequence[int], seed: int = 0) -> list[Change]:
        sql = f"INSERT INTO {table} ({STD_NAMES}) VALUES " + ", ".join(
            row_sql(pk, seed) for pk in pks
        )
        return self._dml(sql, table, "insert", pks)

    def update(self, table: str, pks: Sequence[int], sets: str = "") -> list[Change]:
        sets = sets or "v = v + 1000, s = CONCAT(s, '+'), n = IFNULL(n, 0) + 1"
        ids = ", ".join(map(str, pks))
        return self._dml(f"UPDATE {table} SET {sets} WHERE id IN ({ids})", table, "update", pks)

    def delete(self, table: str, pks: Sequence[int]) -> list[Change]:
        ids = ", ".join(map(str, pks))
        return self._dml(f"DELETE FROM {table} WHERE id IN ({ids})", table, "delete", pks)

    def statement(self, sql: str, table: str, rows: int) -> str:
        """Statement-format DML changing ``rows`` rows; returns its text for the record."""
        with self.conn.cursor() as cur:
            n = cur.execute(sql)
        if n != rows:
            raise AssertionError(f"{sql!r} changed {n} rows, the workload expected {rows}")
        self.run.touch(table, self.format)
        return norm_sql(sql)

    def close(self) -> None:
        """Disconnect and wait until the server has ended the session (so that a prepared XA
        it held is detached and can be finished from another connection)."""
        self.conn.close()
        deadline = time.monotonic() + 30
        while self.run.server.execute(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = %s",
            (self.thread_id,),
        )[0][0]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"connection {self.thread_id} did not go away")
            time.sleep(0.02)


class Run:
    """Bookkeeping of one scenario: what it logged, in the order the server decided it."""

    def __init__(self, server: Any, name: str, db: str) -> None:
        self.server = server
        self.name = name
        self.db = db
        self.decided: list[Expected] = []
        self.prepared: dict[tuple[int, str, str], Expected] = {}
        self.engines: dict[str, str] = {}
        self.formats: dict[str, set[str]] = {}
        self.renames: dict[str, str] = {}
        self.dropped: set[str] = set()
        self.sessions: list[Session] = []
        self.observer = server.connect()
        self.first_file = server.current_binlog_file()
        self.xa_before = {r["key"] for r in xa_recover(server)}

    # connections

    def session(self) -> Session:
        s = Session(self, self.server.connect())
        self.sessions.append(s)
        return s

    def where(self) -> tuple[str, str]:
        """The last GTID the server wrote and the current binlog file name."""
        with self.observer.cursor() as cur:
            cur.execute("SELECT @@GLOBAL.gtid_binlog_pos")
            pos = str(cur.fetchone()[0])
        return pos, self.server.current_binlog_file().name

    def touch(self, table: str, fmt: str) -> None:
        self.formats.setdefault(table, set()).add(fmt)

    def nontrans(self, *tables: str) -> bool:
        return any(self.engines.get(t, "INNODB") in NONTRANSACTIONAL_ENGINES for t in tables)

    # records

    def record(
        self,
        label: str,
        changes: Iterable[Change] = (),
        *,
        undone: Iterable[Change] = (),
        status: str = COMMITTED,
        kinds: tuple[str, ...] = ROW_KINDS,
        statements: Iterable[str] = (),
        nontransactional: bool | None = None,
        xa: Xid | None = None,
        back: int = 0,
    ) -> Expected:
        """Record the group the last client action wrote (``back=1``: the one before it)."""
        applied, undone = list(changes), list(undone)
        if nontransactional is None:  # docs/transactions-format.md: a rolled-back transaction
            # whose non-transactional changes happened anyway
            nontransactional = status == ROLLED_BACK and self.nontrans(*(c[0] for c in applied))
        gtid, file = self.where()
        if back:
            domain, server_id, seq = gtid.split("-")
            gtid = f"{domain}-{server_id}-{int(seq) - back}"
        e = Expected(
            self.name,
            label,
            status,
            kinds,
            applied,
            undone,
            xa,
            tuple(statements),
            nontransactional,
            gtid,
            file,
        )
        self.decided.append(e)
        return e

    def nt(self, label: str, changes: list[Change]) -> list[Change]:
        """A change to a non-transactional table made inside a transaction (ROW format): it is
        logged at once, as its own committed group (WL#2687)."""
        assert self.nontrans(*(c[0] for c in changes)), changes
        self.record(label, changes)
        return changes

    def ddl(self, s: Session, sql: str, expect: str | None = None) -> None:
        s.sql(sql)
        m = re.match(r"\s*CREATE\s+TABLE\s+(\S+)\s.*?ENGINE\s*=\s*(\w+)", sql, re.I | re.S)
        if m:
            self.engines[m.group(1).replace("`", "")] = m.group(2).upper()
        m = re.match(r"\s*RENAME\s+TABLE\s+(\S+)\s+TO\s+(\S+)", sql, re.I)
        if m:
            old, new = m.group(1), m.group(2)
            self.engines[new] = self.engines.get(old, "INNODB")
            for k, v in list(self.renames.items()):
                if v == old:
                    self.renames[k] = new
            self.renames[old] = new
            self.formats[new] = self.formats.pop(old, set())
        m = re.match(r"\s*DROP\s+TABLE\s+(\S+)", sql, re.I)
        if m:
            self.dropped.add(m.group(1))
        self.record(
            f"ddl: {sql[:40]}",
            kinds=DDL_KINDS,
            statements=[norm_sql(expect or sql)],
            nontransactional=False,
        )

    def create_table(
        self, s: Session, name: str, engine: str = "InnoDB", columns: str = STD_COLUMNS
    ) -> str:
        table = f"{self.db}.{name}"
        self.ddl(s, f"CREATE TABLE {table} ({columns}) ENGINE={engine} DEFAULT CHARSET=utf8mb4")
        return table

    # XA

    def xa_prepare(
        self, s: Session, xid: Xid, label: str, changes: list[Change], *, end: bool = True
    ) -> None:
        """``XA END`` (unless ``end=False``: already ended) and ``XA PREPARE`` on ``s``."""
        if end:
            s.sql(f"XA END {xid.sql}")
        s.sql(f"XA PREPARE {xid.sql}")
        assert xid.key not in self.prepared
        gtid, file = self.where()
        self.prepared[xid.key] = Expected(
            self.name,
            label,
            XA_PREPARED,
            XA_KINDS,
            list(changes),
            [],
            xid,
            (),
            False,
            gtid,
            file,
            gtid,
            file,
        )

    def xa_finish(self, s: Session | None, xid: Xid, verb: str) -> None:
        """``XA COMMIT`` / ``XA ROLLBACK`` on session ``s``, or (``s`` None) from a new
        connection, retrying while the server still has the XID attached to its old one."""
        sql = f"XA {verb} {xid.sql}"
        if s is not None:
            s.sql(sql)
        else:
            deadline = time.monotonic() + 30
            while True:
                try:
                    self.server.execute(sql)
                    break
                except Exception as exc:  # pymysql errors: retry only the XA-state ones
                    code = exc.args[0] if exc.args else None
                    if code not in XA_ERRORS or time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
        e = self.prepared.pop(xid.key)
        e.gtid, e.file = self.where()
        if verb.upper() == "COMMIT":
            e.status = XA_COMMITTED
        else:
            e.status = XA_ROLLED_BACK
            e.undone, e.applied = e.applied, []
        self.decided.append(e)

    # end

    def finish(self) -> Truth:
        for s in self.sessions:
            if s.conn.open:
                s.conn.close()
        self.observer.close()
        self.server.flush_binary_logs()
        files = self.server.binlog_files()
        first = files.index(self.first_file) if self.first_file in files else 0
        state, columns = read_state(self.server, [self.db])
        recover = [r for r in xa_recover(self.server) if r["key"] not in self.xa_before]
        keys = {r["key"] for r in recover}
        if keys != set(self.prepared):
            raise AssertionError(f"XA RECOVER {sorted(keys)} != prepared {sorted(self.prepared)}")
        row_tables = {t for t, f in self.formats.items() if f == {"ROW"}} - self.dropped
        row_tables |= {t for t in state if t not in self.formats}  # created, never changed
        return Truth(
            self.name,
            self.decided + list(self.prepared.values()),
            state,
            columns,
            recover,
            files[first:-1],
            row_tables,
            dict(self.renames),
            set(self.dropped),
            dict(self.engines),
        )


# -- server state ----------------------------------------------------------------------------------


def read_state(
    server: Any, dbs: Sequence[str]
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[ColumnDef]]]:
    """``SELECT *`` of every table of ``dbs`` (rows sorted by ``id``) in contract form."""
    with server.connect() as conn:
        schema = load_schema(conn, list(dbs))
    state: dict[str, list[dict[str, Any]]] = {}
    columns: dict[str, list[ColumnDef]] = {}
    with server.connect(conv={}) as conn, conn.cursor() as cur:
        for (db, table), cols in sorted(schema.items()):
            cur.execute(f"SELECT * FROM `{db}`.`{table}` ORDER BY id")
            rows = [
                {c.name or "": server_text_to_contract(v, c) for c, v in zip(cols, row)}
                for row in cur.fetchall()
            ]
            state[f"{db}.{table}"] = rows
            columns[f"{db}.{table}"] = cols
    return state, columns


def xa_recover(server: Any) -> list[dict[str, Any]]:
    """``XA RECOVER``: formatID, gtrid_length, bqual_length, data; plus gtrid/bqual hex."""
    out = []
    for fmt, glen, blen, data in server.execute("XA RECOVER"):
        data = bytes(data) if not isinstance(data, str) else data.encode("latin-1")
        gtrid, bqual = data[:glen], data[glen : glen + blen]
        out.append(
            {
                "format_id": int(fmt),
                "gtrid_length": int(glen),
                "bqual_length": int(blen),
                "data": data,
                "gtrid": gtrid.hex(),
                "bqual": bqual.hex(),
                "key": (int(fmt), gtrid.hex(), bqual.hex()),
            }
        )
    return out


# -- scenarios -----------------------------------------------------------------------------------


def xa_across_rotations(server: Any) -> Truth:
    """Two XAs prepared, the log rotated twice with ordinary transactions in between, then one
    committed by the connection that prepared it and one -- after that connection went away --
    recovered and committed by another connection."""
    r = Run(server, "xa_across_rotations", "xa_rot")
    a, b, c = r.session(), r.session(), r.session()
    r.ddl(b, "CREATE DATABASE xa_rot")
    t = r.create_table(b, "t")
    r.record("seed", b.insert(t, [1, 2, 3]))

    x1 = Xid(1, b"rot-same", b"q1")
    a.sql(f"XA START {x1.sql}")
    ch1 = a.insert(t, [10, 11]) + a.update(t, [1])
    r.xa_prepare(a, x1, "x1 same connection", ch1)

    x2 = Xid(1, b"rot-other", b"")
    c.sql(f"XA START {x2.sql}")
    ch2 = c.insert(t, [20]) + c.delete(t, [2])
    r.xa_prepare(c, x2, "x2 other connection", ch2)

    server.flush_binary_logs()
    r.record("between 1", b.insert(t, [30]))
    b.sql("BEGIN")
    ch = b.update(t, [3]) + b.insert(t, [31])
    b.sql("COMMIT")
    r.record("between 2", ch)
    server.flush_binary_logs()
    r.record("between 3", b.insert(t, [32]))

    r.xa_finish(a, x1, "COMMIT")
    c.close()
    assert x2.key in {row["key"] for row in xa_recover(server)}
    r.xa_finish(None, x2, "COMMIT")
    r.record("after", b.update(t, [10, 20]))
    return r.finish()


def xa_rollback_later_file(server: Any) -> Truth:
    """XA PREPARE (with a MyISAM change inside: logged at once on its own), rotate, XA ROLLBACK
    in a later file."""
    r = Run(server, "xa_rollback_later_file", "xa_rb")
    a, b = r.session(), r.session()
    r.ddl(b, "CREATE DATABASE xa_rb")
    t = r.create_table(b, "t")
    m = r.create_table(b, "m", "MyISAM")
    r.record("seed", b.insert(t, [1, 2]))

    x = Xid(1, b"rb-1", b"branch")
    a.sql(f"XA START {x.sql}")
    ch = a.insert(t, [10, 11]) + a.update(t, [1, 10])
    r.nt("myisam inside XA", a.insert(m, [10]))
    ch += a.delete(t, [2])
    r.xa_prepare(a, x, "xa to roll back", ch)
    server.flush_binary_logs()
    r.record("between", b.insert(t, [20]))
    server.flush_binary_logs()
    r.xa_finish(a, x, "ROLLBACK")
    r.record("after", b.update(t, [1, 2]))
    return r.finish()


def interleaved_xa(server: Any) -> Truth:
    """Two connections interleave XA START/DML/END/PREPARE; commits in crossed order; a third
    XA rolled back from its own connection; an empty XA and an XA rolled back before PREPARE
    (neither is logged); one XA left prepared at the end (it appears in XA RECOVER)."""
    r = Run(server, "interleaved_xa", "xa_il")
    a, b, c = r.session(), r.session(), r.session()
    r.ddl(c, "CREATE DATABASE xa_il")
    t = r.create_table(c, "t")
    r.record("seed", c.insert(t, [1, 2, 3]))

    xa_, xb = Xid(1, b"il-a", b"1"), Xid(1, b"il-b", b"2")
    a.sql(f"XA START {xa_.sql}")
    b.sql(f"XA START {xb.sql}")
    cha = a.insert(t, [10])
    chb = b.insert(t, [20])
    cha += a.update(t, [1])
    chb += b.update(t, [2])
    cha += a.insert(t, [11])
    chb += b.delete(t, [3])
    a.sql(f"XA END {xa_.sql}")
    b.sql(f"XA END {xb.sql}")
    r.xa_prepare(b, xb, "b prepared first", chb, end=False)
    r.xa_prepare(a, xa_, "a prepared second", cha, end=False)
    r.record("plain between", c.insert(t, [30]))
    r.xa_finish(a, xa_, "COMMIT")  # a: committed first, prepared second

    xc = Xid(3, b"il-c", b"")
    c.sql(f"XA START {xc.sql}")
    chc = c.insert(t, [40]) + c.update(t, [30])
    r.xa_prepare(c, xc, "c rolled back", chc)
    server.flush_binary_logs()
    r.xa_finish(c, xc, "ROLLBACK")

    empty = Xid(1, b"il-empty", b"")
    a.sql(f"XA START {empty.sql}")
    a.sql(f"XA END {empty.sql}")
    a.sql(f"XA PREPARE {empty.sql}")
    a.sql(f"XA COMMIT {empty.sql}")  # read-only XA: nothing is logged
    unprepared = Xid(1, b"il-unprepared", b"")
    a.sql(f"XA START {unprepared.sql}")
    a.insert(t, [50])
    a.sql(f"XA END {unprepared.sql}")
    a.sql(f"XA ROLLBACK {unprepared.sql}")  # never prepared: nothing is logged
    r.record("plain after", a.insert(t, [31]))
    b.close()  # xb stays prepared without its connection
    return r.finish()


def binary_xid(server: Any) -> Truth:
    """XIDs with binary gtrid/bqual and non-default formatIDs (0x00, 0xff, quote, backslash,
    64-byte parts, formatID 2^31-1) and a quoted-string XID."""
    r = Run(server, "binary_xid", "xa_bin")
    a, b = r.session(), r.session()
    r.ddl(b, "CREATE DATABASE xa_bin")
    t = r.create_table(b, "t")

    x = Xid(7, b"\x00\xff\x7f", b"\x01")
    a.sql(f"XA START {x.sql}")
    r.xa_prepare(a, x, "X'00ff7f',X'01',7", a.insert(t, [1, 2]))
    r.xa_finish(a, x, "COMMIT")

    big = Xid(2147483647, bytes.fromhex("275c00ff") * 16, bytes.fromhex("5c27") * 32)
    a.sql(f"XA START {big.sql}")
    r.xa_prepare(a, big, "64+64 bytes, formatID 2^31-1", a.insert(t, [3]) + a.update(t, [1]))
    a.close()
    r.xa_finish(None, big, "COMMIT")

    quoted = Xid(1, b"q'\\x", b"", literal="'q''\\\\x'")
    b.sql(f"XA START {quoted.sql}")
    r.xa_prepare(
        b, quoted, "string literal with quote and backslash", b.insert(t, [4]) + b.delete(t, [2])
    )
    server.flush_binary_logs()
    r.xa_finish(b, quoted, "ROLLBACK")

    zero = Xid(0, b"\x00", b"\x00\x00")
    b.sql(f"XA START {zero.sql}")
    r.xa_prepare(b, zero, "formatID 0, NUL bytes", b.insert(t, [5]))
    r.xa_finish(b, zero, "COMMIT")
    return r.finish()


def one_phase(server: Any) -> Truth:
    """XA START .. END; XA COMMIT .. ONE PHASE: logged as an ordinary transaction."""
    r = Run(server, "one_phase", "xa_1p")
    a = r.session()
    r.ddl(a, "CREATE DATABASE xa_1p")
    t = r.create_table(a, "t")
    r.record("seed", a.insert(t, [1]))
    x = Xid(1, b"one-phase", b"")
    a.sql(f"XA START {x.sql}")
    ch = a.insert(t, [2, 3]) + a.update(t, [1])
    a.sql(f"XA END {x.sql}")
    a.sql(f"XA COMMIT {x.sql} ONE PHASE")
    r.record("XA COMMIT ONE PHASE", ch)  # an ordinary START TRANSACTION ... Xid group
    y = Xid(1, b"one-phase-rb", b"")
    a.sql(f"XA START {y.sql}")
    a.insert(t, [4])
    a.sql(f"XA END {y.sql}")
    a.sql(f"XA ROLLBACK {y.sql}")  # not prepared: nothing logged
    r.record("after", a.delete(t, [3]))
    return r.finish()


def mixed_engines_rollback(server: Any) -> Truth:
    """InnoDB + MyISAM + Aria in one transaction, rolled back and committed, in ROW format (the
    non-transactional rows are logged as groups of their own when their statement ends; a
    temporary table makes the rolled-back InnoDB rows logged in a ROLLBACK group) and in
    STATEMENT format (BEGIN ... ROLLBACK groups with a MyISAM statement in them)."""
    r = Run(server, "mixed_engines_rollback", "mix")
    s = r.session()
    r.ddl(s, "CREATE DATABASE mix")
    i = r.create_table(s, "i")
    m = r.create_table(s, "m", "MyISAM")
    a = r.create_table(s, "a", "Aria")
    r.record("seed i", s.insert(i, [1, 2]))
    r.record("seed m", s.insert(m, [1, 2]))
    r.record("seed a", s.insert(a, [1, 2]))

    # InnoDB first, MyISAM second, ROLLBACK: only the MyISAM row is logged (its own group)
    s.sql("BEGIN")
    s.insert(i, [10])
    r.nt("rb1 myisam", s.insert(m, [10]))
    s.update(i, [1])
    s.sql("ROLLBACK")
    # MyISAM first
    s.sql("BEGIN")
    r.nt("rb2 myisam first", s.insert(m, [11]))
    r.nt("rb2 myisam update", s.update(m, [1]))  # a second statement: a second group
    s.insert(i, [11])
    s.delete(i, [2])
    s.sql("ROLLBACK")
    # Aria and MyISAM after InnoDB
    s.sql("BEGIN")
    s.insert(i, [12])
    r.nt("rb3 aria", s.insert(a, [12]))
    r.nt("rb3 myisam delete", s.delete(m, [2]))
    s.sql("ROLLBACK")
    # a multi-table UPDATE of an InnoDB and a MyISAM table, rolled back
    s.sql("BEGIN")
    with s.conn.cursor() as cur:
        n = cur.execute(
            f"UPDATE {i} JOIN {m} USING (id) SET {i}.v = {i}.v + 7, {m}.v = {m}.v + 7 WHERE id = 1"
        )
    assert n == 2, n
    r.touch(i, "ROW")
    r.touch(m, "ROW")
    r.record("rb4 multi-table update: the MyISAM row", [(m, "update", 1)])
    s.sql("ROLLBACK")
    # a COMMIT of a mixed transaction
    s.sql("BEGIN")
    ch = s.insert(i, [13])
    r.nt("commit myisam", s.insert(m, [13]))
    r.nt("commit aria", s.update(a, [1]))
    ch += s.insert(i, [14]) + s.update(i, [1])
    s.sql("COMMIT")
    r.record("commit innodb part", ch)
    # a temporary table created in the transaction: the InnoDB rows are logged, then ROLLBACK
    s.sql("BEGIN")
    ch = s.insert(i, [15]) + s.update(i, [14])
    s.sql("CREATE TEMPORARY TABLE mix.tmp (x INT) ENGINE=InnoDB")  # not logged (ROW format)
    r.nt("temp rb myisam", s.insert(m, [15]))
    ch += s.delete(i, [13])
    s.sql("ROLLBACK")
    r.record("temp table ROLLBACK group", undone=ch, status=ROLLED_BACK)
    s.sql("DROP TEMPORARY TABLE mix.tmp")
    s.sql("BEGIN")
    ch = s.insert(i, [16])
    s.sql("CREATE TEMPORARY TABLE mix.tmp2 (x INT) ENGINE=InnoDB")
    s.sql("ROLLBACK")
    r.record("temp table ROLLBACK group, InnoDB only", undone=ch, status=ROLLED_BACK)
    s.sql("DROP TEMPORARY TABLE mix.tmp2")

    # STATEMENT format
    si = r.create_table(s, "si")
    sm = r.create_table(s, "sm", "MyISAM")
    s.sql("SET SESSION binlog_format = 'STATEMENT'")
    s.sql("BEGIN")
    t1 = s.statement(f"INSERT INTO {si} ({STD_NAMES}) VALUES {row_sql(1)}", si, 1)
    # unsafe (a non-transactional statement after a transactional one): delayed
    t2 = s.statement(f"INSERT INTO {sm} ({STD_NAMES}) VALUES {row_sql(1)}", sm, 1)
    s.sql("ROLLBACK")
    # the MyISAM insert in it happened (the row is in mix.sm): nontransactional
    r.record(
        "stmt ROLLBACK with myisam",
        status=ROLLED_BACK,
        kinds=STATEMENT_KINDS,
        statements=[t1, t2],
        nontransactional=True,
    )
    s.sql("BEGIN")
    # before any transactional statement: written at once, a group of its own
    t3 = s.statement(f"INSERT INTO {sm} ({STD_NAMES}) VALUES {row_sql(2)}", sm, 1)
    r.record("stmt myisam first", kinds=STATEMENT_KINDS, statements=[t3])
    t4 = s.statement(f"INSERT INTO {si} ({STD_NAMES}) VALUES {row_sql(2)}", si, 1)
    s.sql("ROLLBACK")
    r.record(
        "stmt ROLLBACK after myisam",
        status=ROLLED_BACK,
        kinds=STATEMENT_KINDS,
        statements=[t4],
        nontransactional=False,
    )
    t5 = s.statement(f"INSERT INTO {sm} ({STD_NAMES}) VALUES {row_sql(3)}", sm, 1)
    r.record("stmt myisam autocommit", kinds=STATEMENT_KINDS, statements=[t5])
    s.sql("BEGIN")
    t6 = s.statement(f"INSERT INTO {si} ({STD_NAMES}) VALUES {row_sql(4)}", si, 1)
    t7 = s.statement(f"UPDATE {sm} SET v = v + 1 WHERE id = 1", sm, 1)
    s.sql("COMMIT")
    r.record("stmt mixed COMMIT", kinds=STATEMENT_KINDS, statements=[t6, t7])
    s.sql("SET SESSION binlog_format = 'ROW'")
    return r.finish()


def savepoints_with_myisam(server: Any) -> Truth:
    """SAVEPOINT / ROLLBACK TO with a MyISAM change in the transaction (ROLLBACK TO is logged,
    the InnoDB rows between SAVEPOINT and ROLLBACK TO are in the binlog but undone), nested
    savepoints, the MyISAM change before the savepoint, no MyISAM change (nothing undone is
    logged), and a savepoint set before anything was cached (MariaDB then writes the undone rows
    as a separate ROLLBACK group and the rest of the transaction as a new group)."""
    r = Run(server, "savepoints_with_myisam", "svp")
    s = r.session()
    r.ddl(s, "CREATE DATABASE svp")
    i = r.create_table(s, "i")
    m = r.create_table(s, "m", "MyISAM")
    r.record("seed", s.insert(i, [90, 91, 92, 93]))

    s.sql("BEGIN")
    ok = s.insert(i, [1])
    s.sql("SAVEPOINT s1")
    bad = s.insert(i, [2]) + s.update(i, [90])
    r.nt("sp1 myisam", s.insert(m, [2]))
    s.sql("ROLLBACK TO SAVEPOINT s1")
    ok += s.insert(i, [3])
    s.sql("COMMIT")
    r.record("sp1 ROLLBACK TO s1", ok, undone=bad)

    s.sql("BEGIN")
    ok = s.insert(i, [10])
    s.sql("SAVEPOINT s1")
    bad = s.update(i, [91])
    s.sql("SAVEPOINT s2")
    bad += s.insert(i, [11])
    r.nt("sp2 myisam", s.insert(m, [11]))
    s.sql("ROLLBACK TO SAVEPOINT s2")
    bad += s.delete(i, [92])
    s.sql("ROLLBACK TO SAVEPOINT s1")
    ok += s.insert(i, [12]) + s.update(i, [93])
    s.sql("COMMIT")
    r.record("sp2 nested savepoints", ok, undone=bad)

    s.sql("BEGIN")
    r.nt("sp3 myisam first", s.insert(m, [20]))
    ok = s.insert(i, [20])
    s.sql("SAVEPOINT s1")
    bad = s.insert(i, [21])
    s.sql("ROLLBACK TO SAVEPOINT s1")
    ok += s.insert(i, [22])
    s.sql("COMMIT")
    r.record("sp3 myisam before the savepoint", ok, undone=bad)

    s.sql("BEGIN")
    ok = s.insert(i, [30])
    s.sql("SAVEPOINT s1")
    s.insert(i, [31])  # dropped from the cache: never logged
    s.sql("ROLLBACK TO SAVEPOINT s1")
    ok += s.insert(i, [32])
    s.sql("COMMIT")
    r.record("sp4 no myisam", ok)

    s.sql("BEGIN")
    s.sql("SAVEPOINT s0")  # nothing cached yet: not logged
    bad = s.insert(i, [40]) + s.update(i, [30])
    r.nt("sp5 myisam", s.insert(m, [40]))
    s.sql("ROLLBACK TO SAVEPOINT s0")
    r.record("sp5 undone rows as a ROLLBACK group", undone=bad, status=ROLLED_BACK)
    ok = s.insert(i, [41])
    s.sql("SAVEPOINT s3")
    s.sql("RELEASE SAVEPOINT s3")
    s.sql("COMMIT")
    r.record("sp5 the rest", ok)
    return r.finish()


def statement_format(server: Any) -> Truth:
    """binlog_format=STATEMENT: AUTO_INCREMENT (Intvar), RAND() (Rand), user variables
    (User_var), UPDATE; autocommit and inside BEGIN .. COMMIT; then ROW format again."""
    r = Run(server, "statement_format", "stm")
    s = r.session()
    r.ddl(s, "CREATE DATABASE stm")
    st = r.create_table(
        s, "s", columns="id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, r DOUBLE, u VARCHAR(20), n INT"
    )
    rt = r.create_table(s, "r")
    s.sql("SET SESSION binlog_format = 'STATEMENT'")
    s.sql("SET @u = 'hello', @n = 42")
    q1 = s.statement(f"INSERT INTO {st} (r, u) VALUES (RAND(), @u)", st, 1)
    r.record("autocommit insert", kinds=STATEMENT_KINDS, statements=[q1])
    s.sql("BEGIN")
    q2 = s.statement(f"INSERT INTO {st} (r, u, n) VALUES (RAND(), @u, @n)", st, 1)
    q3 = s.statement(f"INSERT INTO {st} (u) VALUES ('x'), ('y')", st, 2)
    q4 = s.statement(f"UPDATE {st} SET n = @n + id WHERE id <= 3", st, 3)
    s.sql("COMMIT")
    r.record("BEGIN..COMMIT", kinds=STATEMENT_KINDS, statements=[q2, q3, q4])
    q5 = s.statement(f"UPDATE {st} SET u = CONCAT(u, '!') WHERE id IN (1, 2)", st, 2)
    r.record("autocommit update", kinds=STATEMENT_KINDS, statements=[q5])
    q6 = s.statement(f"DELETE FROM {st} WHERE id = 4", st, 1)
    r.record("autocommit delete", kinds=STATEMENT_KINDS, statements=[q6])
    s.sql("SET SESSION binlog_format = 'ROW'")
    r.record("row format again", s.insert(rt, [1, 2]))
    s.sql("BEGIN")
    ch = s.update(rt, [1])
    s.sql("SET @v = 5")
    ch += s.insert(rt, [3])
    s.sql("COMMIT")
    r.record("row format transaction", ch)
    return r.finish()


def ddl_between_dml(server: Any) -> Truth:
    """CREATE TABLE, INSERTs, ALTER TABLE ADD COLUMN, more INSERT/UPDATE (a primary-key change
    too), DROP of another table, RENAME, DML under the new name, and a DDL that implicitly
    commits an open transaction."""
    r = Run(server, "ddl_between_dml", "ddl")
    s = r.session()
    r.ddl(s, "CREATE DATABASE ddl")
    t = r.create_table(s, "t")
    gone = r.create_table(s, "gone")
    r.record("insert t", s.insert(t, [1, 2, 3]))
    r.record("insert gone", s.insert(gone, [1]))
    s.sql("BEGIN")
    ch = s.update(t, [1]) + s.insert(gone, [2])
    s.sql("COMMIT")
    r.record("txn t+gone", ch)
    r.ddl(s, f"ALTER TABLE {t} ADD COLUMN extra VARCHAR(20) DEFAULT 'dflt'")
    r.record(
        "insert after ALTER",
        s._dml(f"INSERT INTO {t} (id, v, s, extra) VALUES (4, 40, 'four', 'x4')", t, "insert", [4]),
    )
    r.record("update all old rows", s.update(t, [1, 2, 3], "extra = CONCAT('u', id), v = v + 1"))
    r.ddl(s, f"DROP TABLE {gone}", expect=f"DROP TABLE {gone}")
    r.ddl(s, f"RENAME TABLE {t} TO ddl.t2")
    t2 = "ddl.t2"
    s.sql("BEGIN")
    ch = s.update(t2, [1, 2, 3, 4], "v = v * 2") + s.insert(t2, [5]) + s.delete(t2, [2])
    s.sql("COMMIT")
    r.record("DML under the new name", ch)
    r.record(
        "primary key change", s._dml(f"UPDATE {t2} SET id = 50 WHERE id = 5", t2, "update", [5])
    )
    s.sql("BEGIN")
    ch = s._dml(f"INSERT INTO {t2} (id, v) VALUES (6, 60)", t2, "insert", [6])
    # a DDL inside a transaction commits it first (implicit commit), then is logged itself
    later = f"{r.db}.later"
    s.sql(f"CREATE TABLE {later} ({STD_COLUMNS}) ENGINE=InnoDB")
    r.record("implicitly committed by CREATE TABLE", ch, back=1)
    r.engines[later] = "INNODB"
    r.record(
        "ddl: CREATE TABLE later", kinds=DDL_KINDS, statements=[norm_sql(f"CREATE TABLE {later}")]
    )
    r.record("insert later", s.insert(later, [1]))
    return r.finish()


SCENARIOS: dict[str, Callable[[Any], Truth]] = {
    "xa_across_rotations": xa_across_rotations,
    "xa_rollback_later_file": xa_rollback_later_file,
    "interleaved_xa": interleaved_xa,
    "binary_xid": binary_xid,
    "one_phase": one_phase,
    "mixed_engines_rollback": mixed_engines_rollback,
    "savepoints_with_myisam": savepoints_with_myisam,
    "statement_format": statement_format,
    "ddl_between_dml": ddl_between_dml,
}


def run_all(server: Any, names: Sequence[str] | None = None) -> Truth:
    """Every scenario on one server, one after the other (each ends with FLUSH BINARY LOGS);
    the combined truth: all decided transactions in order, then the XAs still prepared; the
    final state of every scenario database read again at the end; every closed file."""
    first = server.current_binlog_file()
    xa_before = {r["key"] for r in xa_recover(server)}
    parts = {name: SCENARIOS[name](server) for name in (names or SCENARIOS)}
    files = server.binlog_files()
    start = files.index(first) if first in files else 0
    dbs = sorted({t.split(".", 1)[0] for p in parts.values() for t in (*p.state, *p.dropped)})
    state, columns = read_state(server, dbs)
    committed = [e for p in parts.values() for e in p.decided]
    committed += [e for p in parts.values() for e in p.pending]
    recover = [r for r in xa_recover(server) if r["key"] not in xa_before]
    return Truth(
        "all",
        committed,
        state,
        columns,
        recover,
        files[start:-1],
        set().union(*(p.row_tables for p in parts.values())),
        {k: v for p in parts.values() for k, v in p.renames.items()},
        set().union(*(p.dropped for p in parts.values())),
        {k: v for p in parts.values() for k, v in p.engines.items()},
        parts,
    )


# -- a look at what the server logged (for people; the tests do not need it) -----------------------


def binlog_summary(files: Sequence[Path]) -> str:
    """One line per event of ``mariadb-binlog -vv`` (row values left out): file, position,
    event type and its text (the GTID and its flags, the statement, Xid, XID of XA_PREPARE)."""
    import subprocess

    out = []
    for f in files:
        text = subprocess.run(
            ["mariadb-binlog", "-vv", "--base64-output=decode-rows", str(f)],
            capture_output=True,
            check=True,
        ).stdout.decode("utf-8", "replace")
        out.append(f"== {Path(f).name}")
        pos = ""
        for line in text.splitlines():
            if line.startswith("# at "):
                pos = line[5:]
            elif re.match(r"#\d{6} ", line):
                what = line.split("\t", 1)[-1].strip()
                if what.startswith(("Start:", "Gtid list", "Binlog checkpoint")):
                    continue
                out.append(f"  {pos:>6} {what[:150]}")
            elif (
                line.startswith("#Q> ")
                or line.startswith("### INSERT")
                or line.startswith("### UPDATE")
                or line.startswith("### DELETE")
            ):
                out.append(f"         {line[:150]}")
            elif (
                line
                and not line.startswith(("#", "/*", "SET ", "DELIMITER", "ROLLBACK /*"))
                and not line.startswith("### ")
            ):
                out.append(f"         > {line[:150]}")
    return "\n".join(out)


def _main() -> None:  # pragma: no cover - a manual check of the server truth
    import sys
    import tempfile

    from binlake_dev.mariadb import MariaDBServer, free_port

    names = sys.argv[1:] or list(SCENARIOS)
    with tempfile.TemporaryDirectory(prefix="txn-wl-") as tmp:
        srv = MariaDBServer(Path(tmp) / "srv", port=free_port())
        srv.init()
        with srv:
            truth = run_all(srv, names)
            for name, part in truth.scenarios.items():
                print(
                    f"### {name}: {len(part.files)} files, {len(part.committed)} transactions, "
                    f"XA RECOVER {[r['key'] for r in part.xa_recover]}"
                )
                for e in part.committed:
                    print("   ", e.describe())
                print(binlog_summary(part.files))
            print(
                f"all: {len(truth.files)} files, {len(truth.committed)} transactions, "
                f"pending {[e.label for e in truth.pending]}, "
                f"row tables {sorted(truth.row_tables)}"
            )


if __name__ == "__main__":  # pragma: no cover
    _main()
