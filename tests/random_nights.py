"""Random nights on a real MariaDB server, run through the nightly path, checked against the
server (a differential test of the whole pipeline).

A seeded generator writes a few nights of OLTP-ish work on a private server: tables of
random columns (most MariaDB types), keys (auto-increment, explicit, text, composite, none)
and engines (InnoDB, MyISAM, Aria); inserts (plain, IGNORE, REPLACE, ON DUPLICATE KEY
UPDATE), updates and deletes of random rows, primary-key moves, transactions committed and
rolled back (a MyISAM change inside a rolled-back one stays), XA transactions prepared on a
connection of their own and committed or rolled back later, in the same night or the next,
and DDL between them (ADD / DROP / MODIFY / CHANGE / RENAME COLUMN, TRUNCATE, RENAME TABLE,
DROP and CREATE again, new tables). Binary logs rotate inside nights and at each night's
end.

Each night's closed files go through what the nightly DAG runs: ``run_load`` on a branch,
``validate`` of the same files on that branch, ``publish``. The checks, from the server
only, never from binlake:

* validation passes (a valid stream must never be refused: that would stop a night);
* every table's mirror equals the server's committed ``SELECT *`` (what a prepared XA
  holds is in neither), cell by cell, after every night; the mirrors of tables that no
  longer exist are empty.

``tests/test_random_nights.py`` runs a few seeds in the suite; for a longer soak:

    .venv/bin/python -m tests.random_nights --seeds 1-20 [--nights 3] [--ops 40]
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

DB = "rn"

# How the server logs rows: the harness's servers log FULL images and metadata; MariaDB's own
# defaults log no column names (NO_LOG: the schema history names them); MINIMAL and NOBLOB
# images leave columns out (the mirror keeps their values).
VARIANTS: dict[str, dict[str, str]] = {
    "full": {},
    "no_log": {"binlog-row-metadata": "NO_LOG"},
    "minimal": {"binlog-row-metadata": "MINIMAL", "binlog-row-image": "MINIMAL"},
    "noblob": {"binlog-row-image": "NOBLOB"},
}

# -- values ------------------------------------------------------------------------------------

_TEXT = "abcdefghijklmnopqrstuvwxyz ABC0123456789'\"\\%_-é中😀"
_LATIN1 = "abcdefxyz ABC019'\\éàüß"


def _s(rng: random.Random, alphabet: str, n: int) -> str:
    text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, n)))
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def _hex(rng: random.Random, n: int) -> str:
    k = rng.randint(0, n)
    return f"X'{bytes(rng.randrange(256) for _ in range(k)).hex()}'" if k else "''"


def _dec(rng: random.Random, p: int, s: int) -> str:
    v = Decimal(rng.randint(-(10**p) + 1, 10**p - 1)).scaleb(-s)
    return f"{v:.{s}f}"


def _date(rng: random.Random) -> str:
    return f"{rng.randint(1000, 9999):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _dt(rng: random.Random, fsp: int, lo: int = 1000, hi: int = 9999) -> str:
    d = f"{rng.randint(lo, hi):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    t = f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
    frac = f".{rng.randrange(10**fsp):0{fsp}d}" if fsp else ""
    return f"'{d} {t}{frac}'"


def _time(rng: random.Random) -> str:
    sign = "-" if rng.random() < 0.2 else ""
    return f"'{sign}{rng.randint(0, 838):d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}'"


def _set(rng: random.Random) -> str:
    return "'" + ",".join(m for m in ("x", "y", "z") if rng.random() < 0.5) + "'"


def _json(rng: random.Random) -> str:
    k = rng.choice(["a", "b", "key"])
    v = rng.choice([str(rng.randint(-99, 99)), '"t\\\\u00e9"', "[1, 2]", "null", "true"])
    return f"'{{\"{k}\": {v}}}'"


# (SQL type, a random literal): the palette of non-key columns
TYPES: list[tuple[str, Any]] = [
    ("INT", lambda r: str(r.randint(-2**31, 2**31 - 1))),
    ("INT UNSIGNED", lambda r: str(r.randint(0, 2**32 - 1))),
    ("BIGINT", lambda r: str(r.randint(-2**63, 2**63 - 1))),
    ("BIGINT UNSIGNED", lambda r: str(r.randint(0, 2**64 - 1))),
    ("SMALLINT", lambda r: str(r.randint(-2**15, 2**15 - 1))),
    ("TINYINT UNSIGNED", lambda r: str(r.randint(0, 255))),
    ("MEDIUMINT", lambda r: str(r.randint(-2**23, 2**23 - 1))),
    ("DECIMAL(10,2)", lambda r: _dec(r, 10, 2)),
    ("DECIMAL(20,6)", lambda r: _dec(r, 20, 6)),
    ("DOUBLE", lambda r: repr(r.uniform(-1e9, 1e9))),
    ("FLOAT", lambda r: repr(round(r.uniform(-1e4, 1e4), 2))),
    ("VARCHAR(40)", lambda r: _s(r, _TEXT, 40)),
    ("VARCHAR(20) CHARACTER SET latin1", lambda r: _s(r, _LATIN1, 20)),
    ("CHAR(8)", lambda r: _s(r, _TEXT[:40], 8)),
    ("TEXT", lambda r: _s(r, _TEXT, 200)),
    ("BLOB", lambda r: _hex(r, 60)),
    ("VARBINARY(16)", lambda r: _hex(r, 16)),
    ("DATE", lambda r: f"'{_date(r)}'"),
    ("DATETIME", lambda r: _dt(r, 0)),
    ("DATETIME(6)", lambda r: _dt(r, 6)),
    ("TIMESTAMP(3)", lambda r: _dt(r, 3, 1971, 2037)),
    ("TIME", _time),
    ("YEAR", lambda r: str(r.randint(1901, 2155))),
    ("ENUM('a','b','c')", lambda r: r.choice(["'a'", "'b'", "'c'"])),
    ("SET('x','y','z')", _set),
    ("BIT(5)", lambda r: f"b'{r.randrange(32):05b}'"),
    ("JSON", _json),
]
_LIT = dict(TYPES)
_LIT.update({"DECIMAL(14,2)": lambda r: _dec(r, 12, 2),  # what WIDEN makes of columns
             "VARCHAR(80)": lambda r: _s(r, _TEXT, 80)})
# compatible widenings an ALTER may apply, and one incompatible change
WIDEN = {"INT": "BIGINT", "SMALLINT": "INT", "MEDIUMINT": "BIGINT", "DECIMAL(10,2)": "DECIMAL(14,2)",
         "VARCHAR(40)": "VARCHAR(80)", "FLOAT": "DOUBLE", "TINYINT UNSIGNED": "SMALLINT"}


@dataclass
class Column:
    name: str
    sql: str
    nullable: bool = True

    def literal(self, rng: random.Random) -> str:
        if self.nullable and rng.random() < 0.12:
            return "NULL"
        return _LIT[self.sql](rng)


@dataclass
class Table:
    name: str
    key: str  # auto | int | text | pair | none
    engine: str
    cols: list[Column] = field(default_factory=list)

    @property
    def key_cols(self) -> list[str]:
        return {"auto": ["id"], "int": ["id"], "text": ["k"], "pair": ["a", "b"],
                "none": []}[self.key]

    def key_literals(self, rng: random.Random) -> list[str]:
        if self.key == "int":
            return [str(rng.randint(1, 60))]
        if self.key == "text":
            return [_s(rng, "abcdeABCDE", 3)]
        if self.key == "pair":
            return [str(rng.randint(1, 6)), _s(rng, "xyz", 2)]
        return []


# -- the generator -------------------------------------------------------------------------------


class Night:
    """One seeded workload on a server: the statements it runs and what it keeps track of."""

    def __init__(self, srv: Any, seed: int, log: list[str], *, move_keys: bool = True) -> None:
        self.srv = srv
        self.move_keys = move_keys
        self.rng = random.Random(seed)
        # which columns an INSERT leaves to their defaults: drawn apart, so that the
        # statements of a seed are otherwise what they were before it existed
        self.omit_rng = random.Random(seed * 7919 + 17)
        self.log = log
        self.tables: dict[str, Table] = {}
        self.serial = 0
        self.conn = srv.connect(database=None)
        self.xa_conns: list[tuple[Any, str]] = []  # (connection, xid): prepared, undecided
        self.run("CREATE DATABASE IF NOT EXISTS rn CHARACTER SET utf8mb4")
        self.run("SET SESSION innodb_lock_wait_timeout = 1, lock_wait_timeout = 2")

    # statements
    def run(self, sql: str, conn: Any = None, *, quiet: bool = False) -> bool:
        """Run one statement; False when the server refused it (lock wait, duplicate key...):
        a refused statement changes nothing, the workload goes on."""
        self.log.append(sql)
        try:
            with (conn or self.conn).cursor() as cur:
                cur.execute(sql)
            return True
        except Exception as exc:  # pymysql's errors: the server said no
            code = exc.args[0] if exc.args else None
            if code in (1205, 1062, 1213, 1399, 1397, 1440, 1146, 1054, 1091, 1060, 4025,
                        1292, 1264, 1406, 1366, 1265, 1048, 1364, 1553, 1068, 1075, 1705):
                self.log.append(f"  -- refused: {exc}")
                return False
            raise

    def new_table(self) -> Table:
        self.serial += 1
        rng = self.rng
        key = rng.choice(["auto", "auto", "int", "text", "pair", "none"])
        engine = rng.choice(["InnoDB"] * 6 + ["MyISAM", "Aria"])
        t = Table(f"t{self.serial}", key, engine)
        for i in range(rng.randint(2, 6)):
            sql = rng.choice(TYPES)[0]
            t.cols.append(Column(f"c{i}", sql, nullable=rng.random() < 0.8))
        self.create(t)
        return t

    def create(self, t: Table) -> None:
        defs = {"auto": ["id INT AUTO_INCREMENT"], "int": ["id INT NOT NULL"],
                "text": ["k VARCHAR(10) NOT NULL"], "pair": ["a INT NOT NULL", "b VARCHAR(4) NOT NULL"],
                "none": []}[t.key]
        defs += [f"{c.name} {c.sql}{'' if c.nullable else ' NOT NULL'}" for c in t.cols]
        if t.key_cols:
            defs.append(f"PRIMARY KEY ({', '.join(t.key_cols)})")
        if self.run(f"CREATE TABLE rn.{t.name} ({', '.join(defs)}) ENGINE={t.engine}"):
            self.tables[t.name] = t

    def values(self, t: Table) -> tuple[list[str], list[str]]:
        names = [c for c in t.key_cols if t.key != "auto"] + [c.name for c in t.cols]
        vals = t.key_literals(self.rng) + [c.literal(self.rng) for c in t.cols]
        return names, vals

    def insert(self, t: Table, conn: Any = None) -> None:
        rows = []
        names: list[str] = []
        for _ in range(self.rng.randint(1, 5)):
            names, vals = self.values(t)
            rows.append(vals)
        how = self.rng.random()
        if (t.key in ("auto", "none") or how < 0.3) and self.omit_rng.random() < 0.35:
            # a plain INSERT that names some columns only: the server writes the others'
            # defaults, which a MINIMAL image does not carry
            # (not a TIMESTAMP: its DEFAULT literal is in the DDL session's time zone, which
            # the binlog does not give: the lake leaves it NULL, docs/lake.md)
            keys = set(t.key_cols) | {c.name for c in t.cols if c.sql.startswith("TIMESTAMP")}
            keep = [i for i, n in enumerate(names)
                    if n in keys or self.omit_rng.random() < 0.6]
            names = [names[i] for i in keep]
            rows = [[r[i] for i in keep] for r in rows]
        cols = ", ".join(names)
        rows = [f"({', '.join(vals)})" for vals in rows]
        if t.key in ("auto", "none") or how < 0.3:
            verb = "INSERT IGNORE" if t.key not in ("auto", "none") else "INSERT"
            sql = f"{verb} INTO rn.{t.name} ({cols}) VALUES {', '.join(rows)}"
        elif how < 0.6:
            sql = f"REPLACE INTO rn.{t.name} ({cols}) VALUES {', '.join(rows)}"
        else:
            upd = ", ".join(f"{c.name} = VALUES({c.name})" for c in t.cols) or \
                f"{t.key_cols[0]} = {t.key_cols[0]}"
            sql = (f"INSERT INTO rn.{t.name} ({cols}) VALUES {', '.join(rows)} "
                   f"ON DUPLICATE KEY UPDATE {upd}")
        self.run(sql, conn)

    def update(self, t: Table, conn: Any = None) -> None:
        if not t.cols:
            return
        sets = ", ".join(f"{c.name} = {c.literal(self.rng)}"
                         for c in self.rng.sample(t.cols, self.rng.randint(1, len(t.cols))))
        order = ", ".join(t.key_cols or [t.cols[0].name])
        self.run(f"UPDATE rn.{t.name} SET {sets} ORDER BY {order}"
                 f"{' DESC' if self.rng.random() < 0.5 else ''} LIMIT {self.rng.randint(1, 4)}",
                 conn)

    def move_key(self, t: Table) -> None:
        if t.key in ("auto", "int"):
            if self.rng.random() < 0.5:  # one row somewhere new
                self.run(f"UPDATE IGNORE rn.{t.name} SET id = id + {self.rng.randint(1, 90)} "
                         f"ORDER BY id LIMIT 1")
            else:  # the multi-row shift
                self.run(f"UPDATE rn.{t.name} SET id = id + 1 ORDER BY id DESC")
        elif t.key == "text":
            self.run(f"UPDATE IGNORE rn.{t.name} SET k = CONCAT(k, 'z') ORDER BY k LIMIT 2")
        elif t.key == "pair":
            self.run(f"UPDATE IGNORE rn.{t.name} SET a = a + 10 ORDER BY a, b LIMIT 1")

    def delete(self, t: Table, conn: Any = None) -> None:
        order = ", ".join(t.key_cols or [c.name for c in t.cols[:1]] or ["1"])
        self.run(f"DELETE FROM rn.{t.name} ORDER BY {order}"
                 f"{' DESC' if self.rng.random() < 0.5 else ''} LIMIT {self.rng.randint(1, 3)}",
                 conn)

    def dml(self, t: Table, conn: Any = None) -> None:
        r = self.rng.random()
        if r < 0.45:
            self.insert(t, conn)
        elif r < 0.75:
            self.update(t, conn)
        elif r < 0.9 or conn is not None or not self.move_keys:
            self.delete(t, conn)
        else:
            self.move_key(t)

    # DDL
    def ddl(self) -> None:
        rng = self.rng
        alterable = [t for t in self.tables.values() if t.key != "none"]
        r = rng.random()
        if r < 0.2 or not self.tables:
            self.new_table()
            return
        t = rng.choice(alterable) if alterable and r < 0.8 else rng.choice(list(self.tables.values()))
        r = rng.random()
        if t.key == "none" or r < 0.08:
            self.run(f"TRUNCATE TABLE rn.{t.name}")
        elif r < 0.3:
            self.serial += 1
            sql_type = rng.choice(TYPES)[0]
            c = Column(f"n{self.serial}", sql_type, nullable=rng.random() < 0.6)
            default = ""
            if rng.random() < 0.6 and sql_type not in ("TEXT", "BLOB", "JSON"):
                default = f" DEFAULT {_LIT[sql_type](rng)}"
            where = rng.choice(["", " FIRST", f" AFTER {t.cols[0].name}" if t.cols else ""])
            if self.run(f"ALTER TABLE rn.{t.name} ADD COLUMN {c.name} {c.sql}"
                        f"{'' if c.nullable else ' NOT NULL'}{default}{where}"):
                t.cols.append(c)
        elif r < 0.45 and len(t.cols) > 1:
            c = rng.choice(t.cols)
            if self.run(f"ALTER TABLE rn.{t.name} DROP COLUMN {c.name}"):
                t.cols.remove(c)
        elif r < 0.6:
            widen = [c for c in t.cols if c.sql in WIDEN]
            if widen:
                c = rng.choice(widen)
                if self.run(f"ALTER TABLE rn.{t.name} MODIFY {c.name} {WIDEN[c.sql]}"
                            f"{'' if c.nullable else ' NOT NULL'}"):
                    c.sql = WIDEN[c.sql]
        elif r < 0.7 and t.cols:
            c = rng.choice(t.cols)
            self.serial += 1
            new = f"r{self.serial}"
            sql = (f"ALTER TABLE rn.{t.name} RENAME COLUMN {c.name} TO {new}"
                   if rng.random() < 0.5 else
                   f"ALTER TABLE rn.{t.name} CHANGE {c.name} {new} {c.sql}"
                   f"{'' if c.nullable else ' NOT NULL'}")
            if self.run(sql):
                c.name = new
        elif r < 0.78 and t.cols:  # an incompatible type change: the value as text
            c = rng.choice([c for c in t.cols])
            if c.sql not in ("BLOB", "VARBINARY(16)", "BIT(5)") and \
                    self.run(f"ALTER TABLE rn.{t.name} MODIFY {c.name} TEXT"):
                c.sql, c.nullable = "TEXT", True
        elif r < 0.86:
            self.serial += 1
            new = f"t{self.serial}"
            if self.run(f"RENAME TABLE rn.{t.name} TO rn.{new}"):
                del self.tables[t.name]
                t.name = new
                self.tables[new] = t
        elif r < 0.93 and t.key != "none" and t.engine == "InnoDB":
            self.swap(t)
        else:  # dropped, and maybe made again under its name with other columns
            if self.run(f"DROP TABLE rn.{t.name}"):
                del self.tables[t.name]
                if rng.random() < 0.6:
                    again = Table(t.name, rng.choice(["auto", "int", "text"]), "InnoDB")
                    again.cols = [Column(f"c{i}", rng.choice(TYPES)[0]) for i in range(3)]
                    self.create(again)

    def swap(self, t: Table) -> None:
        """An online schema change as gh-ost makes it: a shadow table with a new column,
        filled from the table, swapped in by one RENAME TABLE of two pairs."""
        rng = self.rng
        self.serial += 1
        gho, old = f"_{t.name}_gho", f"_{t.name}_del"
        if not self.run(f"CREATE TABLE rn.{gho} LIKE rn.{t.name}"):
            return
        # (not a TIMESTAMP: see insert)
        sql_type = rng.choice([t for t, _ in TYPES if not t.startswith("TIMESTAMP")])
        c = Column(f"n{self.serial}", sql_type)
        default = (f" DEFAULT {_LIT[sql_type](rng)}"
                   if sql_type not in ("TEXT", "BLOB", "JSON") else "")
        added = self.run(f"ALTER TABLE rn.{gho} ADD COLUMN {c.name} {c.sql}{default}")
        names = ", ".join([*(k for k in t.key_cols), *(x.name for x in t.cols)])
        if added and self.run(f"INSERT INTO rn.{gho} ({names}) SELECT {names} "
                              f"FROM rn.{t.name}") and \
                self.run(f"RENAME TABLE rn.{t.name} TO rn.{old}, rn.{gho} TO rn.{t.name}"):
            t.cols.append(c)
            self.run(f"DROP TABLE rn.{old}")
        else:
            self.run(f"DROP TABLE IF EXISTS rn.{gho}")

    # transactions
    def txn(self) -> None:
        rng = self.rng
        tables = list(self.tables.values())
        if not tables:
            return
        self.run("BEGIN")
        for _ in range(rng.randint(1, 5)):
            self.dml(rng.choice(tables))
        self.run("ROLLBACK" if rng.random() < 0.12 else "COMMIT")

    def xa_start(self) -> None:
        innodb = [t for t in self.tables.values() if t.engine == "InnoDB"]
        if not innodb:
            return
        self.serial += 1
        xid = f"x{self.serial}"
        conn = self.srv.connect()
        self.run("SET SESSION innodb_lock_wait_timeout = 1", conn)
        self.run(f"XA START '{xid}'", conn)
        ok = True
        for _ in range(self.rng.randint(1, 3)):
            t = self.rng.choice(innodb)
            self.dml(t, conn)
        self.run(f"XA END '{xid}'", conn)
        ok = self.run(f"XA PREPARE '{xid}'", conn)
        if ok:
            self.xa_conns.append((conn, xid))
        else:
            conn.close()

    def xa_finish(self, everything: bool = False) -> None:
        keep = []
        for conn, xid in self.xa_conns:
            if everything or self.rng.random() < 0.5:
                verb = "ROLLBACK" if self.rng.random() < 0.25 else "COMMIT"
                self.run(f"XA {verb} '{xid}'", conn)
                conn.close()
            else:
                keep.append((conn, xid))
        self.xa_conns = keep

    def night(self, ops: int) -> None:
        rng = self.rng
        if not self.tables:
            for _ in range(rng.randint(2, 4)):
                self.new_table()
        self.xa_finish()  # some of last night's prepared XA end now, in this night's files
        for _ in range(ops):
            r = rng.random()
            if r < 0.06:
                self.ddl()
            elif r < 0.14:
                self.xa_start()
            elif r < 0.18:
                self.xa_finish()
            elif r < 0.21:
                self.srv.flush_binary_logs()
            elif r < 0.26:  # a rolled-back transaction with a non-transactional change
                other = [t for t in self.tables.values() if t.engine != "InnoDB"]
                inno = [t for t in self.tables.values() if t.engine == "InnoDB"]
                if other and inno:
                    self.run("BEGIN")
                    self.dml(rng.choice(inno))
                    self.dml(rng.choice(other))
                    self.run("ROLLBACK")
            elif r < 0.6:
                self.txn()
            elif self.tables:
                self.dml(rng.choice(list(self.tables.values())))

    def close(self) -> None:
        for conn, _ in self.xa_conns:
            conn.close()
        self.conn.close()


# -- the oracle: the server's committed rows against the lake's mirrors -----------------------


def server_state(srv: Any) -> dict[str, tuple[list[Any], list[dict[str, Any]]]]:
    from .reference import load_schema, server_text_to_contract

    with srv.connect() as conn:
        schema = load_schema(conn, [DB])
    out: dict[str, tuple[list[Any], list[dict[str, Any]]]] = {}
    with srv.connect(conv={}) as conn, conn.cursor() as cur:
        for (_, t), cols in schema.items():
            cur.execute(f"SELECT * FROM {DB}.{t}")
            out[t] = (cols, [{c.name or "": server_text_to_contract(v, c)
                              for c, v in zip(cols, row)} for row in cur.fetchall()])
    return out


def _mirror_column(columns: list[str], name: str) -> str | None:
    best, version = None, 0
    for c in columns:
        m = re.fullmatch(re.escape(name.lower()) + r"(?:__v(\d+))?", c)
        if m and int(m.group(1) or 1) > version:
            best, version = c, int(m.group(1) or 1)
    return best


def _floats(cols: list[Any], row: list[Any]) -> list[Any]:
    """FLOAT values to the server's six significant digits (the mirror holds the stored
    single, the server prints it rounded)."""
    return [float(f"{float(v):.6g}") if c.sql_type == "FLOAT" and v is not None else v
            for c, v in zip(cols, row)]


def compare(spark: Any, settings: Any, state: dict[str, Any], gone: set[str],
            notes: list[str] | None = None) -> list[str]:
    """Differences between the mirrors and the server's rows: one line each (empty: equal).
    ``notes`` gets what is not compared, and why."""
    notes = [] if notes is None else notes
    from .mirror_oracle import actual, expected

    problems: list[str] = []
    tables = {r[1] for r in spark.sql(
        f"SHOW TABLES IN {settings.catalog_name}.{settings.namespace}").collect()}
    for t, (cols, rows) in sorted(state.items()):
        mirror = f"mirror__{DB}__{t}"
        if mirror not in tables:
            if rows:
                problems.append(f"{t}: no mirror, the server has {len(rows)} row(s)")
            continue
        mcols = spark.table(settings.table(mirror)).columns
        names = [_mirror_column(mcols, c.name or "") for c in cols]
        if None in names:
            # An ALTER reaches the mirror with the table's next row change (docs/lake.md
            # "Table lifecycle"): until then the mirror lacks the columns it added or
            # renamed. Compare the others; a key column must be there.
            lag = [c.name for c, n in zip(cols, names) if n is None]
            if any(c in lag for c in ("id", "k", "a", "b")):
                # a table created again with another key and no row yet: the mirror is
                # emptied by the DROP and keeps the old columns until the first row
                n = spark.sql(f"SELECT count(*) FROM {settings.table(mirror)}").collect()[0][0]
                if rows or n:
                    problems.append(f"{t}: key columns {lag} not in {mcols}")
                else:
                    notes.append(f"{t}: created again, no row yet: {lag} not in the mirror")
                continue
            notes.append(f"{t}: not yet in the mirror: {lag}")
            cols = [c for c, n in zip(cols, names) if n is not None]
            names = [n for n in names if n is not None]
            rows = [{c.name: r[c.name] for c in cols} for r in rows]
        sel = [f"unix_micros(`{n}`)" if c.sql_type == "TIMESTAMP" else f"`{n}`"
               for n, c in zip(names, cols)]
        rows_got = [[actual(c, v) for c, v in zip(cols, r)] for r in spark.sql(
            f"SELECT {', '.join(sel)} FROM {settings.table(mirror)}").collect()]
        rows_want = [[row[c.name] if c.sql_type == "FLOAT" else expected(c, row[c.name])
                      for c in cols] for row in rows]
        got = sorted(repr(_floats(cols, r)) for r in rows_got)
        want = sorted(repr(_floats(cols, r)) for r in rows_want)
        if len(got) != len(want):
            problems.append(f"{t}: mirror {len(got)} row(s), server {len(want)}")
        if got != want:
            missing = sorted(set(want) - set(got))[:3]
            extra = sorted(set(got) - set(want))[:3]
            problems.append(f"{t}: differs; server only {missing}; mirror only {extra}")
    for t in sorted(gone - set(state)):
        mirror = f"mirror__{DB}__{t}"
        if mirror in tables:
            n = spark.sql(f"SELECT count(*) FROM {settings.table(mirror)}").collect()[0][0]
            if n:
                problems.append(f"{t}: dropped or renamed on the server, mirror has {n} row(s)")
    return problems


# -- one seed through the nightly path ---------------------------------------------------------


@dataclass
class Outcome:
    seed: int
    nights: int
    files: int
    problems: list[str]
    statements: list[str]
    seconds: float


class Scripted:
    """A workload of fixed statements, night by night, run as :class:`Night` runs its own
    (``FLUSH BINARY LOGS`` in a night's list rotates there)."""

    def __init__(self, srv: Any, nights: list[list[str]], log: list[str]) -> None:
        self.srv, self.nights, self.log = srv, list(nights), log
        self.conn = srv.connect()
        self.tables: dict[str, Any] = {}

    def night(self, ops: int) -> None:
        for sql in self.nights.pop(0):
            self.log.append(sql)
            if sql.upper() == "FLUSH BINARY LOGS":
                self.srv.flush_binary_logs()
                continue
            with self.conn.cursor() as cur:
                cur.execute(sql)

    def close(self) -> None:
        self.conn.close()


def run_seed(spark: Any, srv: Any, home: Path, seed: int, *, nights: int = 3,
             ops: int = 40, variant: str = "full") -> Outcome:
    """The seed's nights on ``srv`` (a fresh server started with ``VARIANTS[variant]``),
    each through load on a branch, validate and publish into a fresh lake in ``home``; the
    problems found."""
    log: list[str] = []
    work = Night(srv, seed, log)
    return run_nights(spark, srv, home, work, log, seed=seed, nights=nights, ops=ops)


def run_script(spark: Any, srv: Any, home: Path, script: list[list[str]], *, name: int = 0
               ) -> Outcome:
    """:func:`run_seed` for fixed statements, one list per night."""
    log: list[str] = []
    return run_nights(spark, srv, home, Scripted(srv, script, log), log, seed=name,
                      nights=len(script))


def run_nights(spark: Any, srv: Any, home: Path, work: Any, log: list[str], *, seed: int,
               nights: int, ops: int = 0) -> Outcome:
    from binlake.config import load_settings
    from binlake.lake.job import run_load
    from binlake.lake.publish import publish
    from binlake.lake.spark import build_session
    from binlake.quality.run import validate

    t0 = time.monotonic()
    settings = load_settings(env={"BINLAKE_HOME": str(home / "lake"),
                                  "BINLAKE_CATALOG_NAME": f"rn{seed}"})
    build_session(settings, master="local[2]")
    first = srv.current_binlog_file()
    loaded: set[str] = set()
    problems: list[str] = []
    ever: set[str] = set()
    nfiles = 0
    try:
        for n in range(1, nights + 1):
            log.append(f"-- night {n}")
            work.night(ops)
            ever |= set(work.tables)
            srv.flush_binary_logs()
            closed = srv.closed_binlog_files()
            closed = closed[closed.index(first):] if first in closed else closed
            new = [p for p in closed if p.name not in loaded]
            dest = home / "binlogs" / f"night{n}"
            dest.mkdir(parents=True)
            files = []
            for p in new:
                shutil.copyfile(p, dest / p.name)
                files.append(str(dest / p.name))
                loaded.add(p.name)
            nfiles += len(files)
            branch = f"night{n}"
            s = run_load(spark, settings, files, run_id=branch, branch=branch)
            if s.failed:
                problems.append(f"night {n}: load failed: {s.files}")
                break
            report = validate(spark, settings, files, run_id=branch, branch=branch)
            for r in report.failed():
                problems.append(f"night {n}: validation {r['severity']} {r['expectation']}: "
                                f"observed {r['observed']}, {str(r['details'])[:400]}")
            if not report.success:
                break
            publish(spark, settings, branch)
            state = server_state(srv)
            ever |= set(state)
            notes: list[str] = []
            for p in compare(spark, settings, state, ever, notes):
                problems.append(f"night {n}: {p}")
            log.extend(f"-- night {n}: {x}" for x in notes)
            if problems:
                break
    finally:
        work.close()
    return Outcome(seed, nights, nfiles, problems, log, time.monotonic() - t0)


def _seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out


def main(argv: list[str] | None = None) -> int:
    from binlake.config import load_settings
    from binlake.lake.spark import build_session
    from binlake_dev.mariadb import MariaDBServer, free_port

    from .servers import start_server

    ap = argparse.ArgumentParser(prog="python -m tests.random_nights")
    ap.add_argument("--seeds", default="1-5")
    ap.add_argument("--nights", type=int, default=3)
    ap.add_argument("--ops", type=int, default=40)
    ap.add_argument("--keep", action="store_true", help="keep the work directories")
    ap.add_argument("--variant", choices=["cycle", *VARIANTS], default="cycle",
                    help="the server's row logging (cycle: each seed the next one)")
    args = ap.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="random-nights-"))
    template = MariaDBServer(base / "template", port=free_port())
    template.init()
    boot = load_settings(env={"BINLAKE_HOME": str(base / "boot"), "BINLAKE_CATALOG_NAME": "boot"})
    spark = build_session(boot, master="local[2]")
    bad = 0
    for seed in _seeds(args.seeds):
        home = base / f"seed{seed}"
        variant = (list(VARIANTS)[seed % len(VARIANTS)] if args.variant == "cycle"
                   else args.variant)
        srv = start_server(home / "srv", template.datadir, options=VARIANTS[variant])
        try:
            out = run_seed(spark, srv, home, seed, nights=args.nights, ops=args.ops,
                           variant=variant)
        finally:
            srv.stop(timeout=30)
        print(f"seed {seed} ({variant}): {out.files} file(s), {len(out.statements)} statement(s), "
              f"{out.seconds:.0f} s: {'OK' if not out.problems else 'PROBLEMS'}", flush=True)
        for p in out.problems:
            print("   ", p, flush=True)
        if out.problems:
            bad += 1
            (home / "statements.sql").write_text("\n".join(out.statements) + "\n")
            print(f"    statements: {home / 'statements.sql'}", flush=True)
        elif not args.keep:
            shutil.rmtree(home, ignore_errors=True)
    spark.stop()
    print(f"{bad} seed(s) with problems; work in {base}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
