"""What an INSERT that leaves a column out writes there (binlake.lake.schemas.image_default),
in the form the decoder writes row images: the typed tables' value for a column a MINIMAL
INSERT image lacks.  The defaults come from the schema history (CREATE TABLE, ALTER TABLE
ADD COLUMN, ALTER COLUMN SET / DROP DEFAULT)."""

from __future__ import annotations

from typing import Any

import pytest

from binlake.lake.defaults import image_default
from binlake.lake.schemas import with_defaults
from binlake.schema.ddl import apply_ddl
from binlake.schema.model import SchemaHistory


def _history(*sql: str) -> SchemaHistory:
    h = SchemaHistory()
    for i, s in enumerate(sql):
        apply_ddl(h, s, db="d", pos=(1, 100 * (i + 1)), file="b.000001",
                  server_version=101100, mariadb=True)
    assert not h.findings, h.findings
    return h


CREATE = ("CREATE TABLE d.t (id INT PRIMARY KEY, i INT DEFAULT 5, s VARCHAR(10) "
          "DEFAULT 'it''s', e ENUM('a','b') DEFAULT 'B', m DECIMAL(8,3) DEFAULT 1.5, "
          "f DOUBLE DEFAULT '-2.5', n INT NULL, c CHAR(4) DEFAULT 'ab', "
          "b BOOLEAN DEFAULT TRUE, ts TIMESTAMP NULL DEFAULT CURRENT_TIMESTAMP, "
          "x INT NOT NULL, dt DATE DEFAULT '2020-01-02', bin VARBINARY(4) DEFAULT 'ab', "
          "g INT AS (i + 1) VIRTUAL, esc VARCHAR(8) DEFAULT 'a\\\\b', "
          "bits BIT(5) DEFAULT b'00101', st SET('x','y','z') DEFAULT 'z,X', "
          "d3 DATETIME(3) DEFAULT '2020-01-02 03:04:05.1', d0 DATETIME DEFAULT '2020-01-02', "
          "tm TIME DEFAULT '-5:06:07', y YEAR DEFAULT 2020, bn BINARY(3) DEFAULT X'0a', "
          "neg SMALLINT DEFAULT -3, num VARCHAR(4) DEFAULT 12, "
          "t3 TIMESTAMP(3) NULL DEFAULT '2020-01-02 03:04:05', "
          "long_frac DATETIME(1) DEFAULT '2020-01-02 03:04:05.25', "
          "u DECIMAL(4,1) DEFAULT 2.25, fn INT DEFAULT (1 + 1), j TEXT DEFAULT NULL)")


def _defaults(h: SchemaHistory, at: int) -> dict[str, tuple[bool, Any]]:
    v = h.at("d", "t", (1, at))
    assert v is not None and v.columns is not None
    return {c.name: image_default(c) for c in v.columns}


def test_defaults_by_type() -> None:
    got = _defaults(_history(CREATE), 100)
    assert got == {
        "id": (True, 0),  # NOT NULL, no DEFAULT: refused in strict mode, else 0
        "i": (True, 5), "s": (True, "it's"), "e": (True, "b"), "m": (True, "1.500"),
        "f": (True, -2.5), "n": (True, None), "c": (True, "ab"), "b": (True, 1),
        "ts": (False, None),  # an expression
        "x": (True, 0), "dt": (True, "2020-01-02"), "bin": (True, {"hex": "6162"}),
        "g": (False, None), "esc": (True, "a\\b"), "bits": (True, 5),
        "st": (True, "x,z"), "d3": (True, "2020-01-02 03:04:05.100"),
        "d0": (True, "2020-01-02 00:00:00"), "tm": (True, "-05:06:07"), "y": (True, 2020),
        "bn": (True, {"hex": "0a0000"}), "neg": (True, -3), "num": (True, "12"),
        "t3": (False, None),  # in the DDL session's time zone
        "long_frac": (False, None),  # more digits than the column keeps
        "u": (True, "2.3"), "fn": (False, None), "j": (True, None)}


def test_implicit_defaults_of_not_null_columns() -> None:
    got = _defaults(_history(
        "CREATE TABLE d.t (id INT PRIMARY KEY, m DECIMAL(6,2) NOT NULL, f FLOAT NOT NULL, "
        "s VARCHAR(4) NOT NULL, e ENUM('q','r') NOT NULL, st SET('a') NOT NULL, "
        "b BINARY(2) NOT NULL, d DATE NOT NULL, dt DATETIME(2) NOT NULL, "
        "tm TIME(1) NOT NULL, y YEAR NOT NULL, bt BIT(3) NOT NULL, "
        "ts TIMESTAMP NOT NULL, j JSON NOT NULL)"), 100)
    assert got == {
        "id": (True, 0), "m": (True, "0.00"), "f": (True, 0.0), "s": (True, ""),
        "e": (True, "q"), "st": (True, ""), "b": (True, {"hex": "0000"}),
        "d": (True, "0000-00-00"), "dt": (True, "0000-00-00 00:00:00.00"),
        "tm": (True, "00:00:00.0"), "y": (True, 0), "bt": (True, 0),
        "ts": (False, None),  # maybe the implicit CURRENT_TIMESTAMP
        "j": (False, None)}  # (MariaDB's JSON: LONGTEXT with a JSON_VALID check: not certain)


def test_set_and_drop_default() -> None:
    h = _history(CREATE, "ALTER TABLE d.t ALTER COLUMN i SET DEFAULT 9, "
                         "ALTER COLUMN s DROP DEFAULT, ALTER COLUMN e SET DEFAULT 'a'",
                 "ALTER TABLE d.t ADD COLUMN z SMALLINT DEFAULT 3")
    before, after, added = _defaults(h, 100), _defaults(h, 200), _defaults(h, 300)
    assert before["i"] == (True, 5) and after["i"] == (True, 9)
    assert after["s"] == (True, None) and after["e"] == (True, "a")
    assert "z" not in after and added["z"] == (True, 3)


@pytest.mark.parametrize("named", [True, False])
def test_layout_records_carry_them(named: bool) -> None:
    h = _history("CREATE TABLE d.t (id INT PRIMARY KEY, i INT DEFAULT 5, ts TIMESTAMP "
                 "NULL DEFAULT CURRENT_TIMESTAMP)")
    v = h.at("d", "t", (1, 100))
    assert v is not None
    rec = {"db": "d", "tbl": "t", "seq": 1, "pos": 150, "has_names": named,
           "columns": [{"index": i, "name": n if named else None}
                       for i, n in enumerate(["id", "i", "ts"])]}
    out = with_defaults(rec, v)
    cols = out["columns"]
    if named:
        assert cols[0]["default"] == 0 and cols[1]["default"] == 5 \
            and "default" not in cols[2]
    else:  # (records without names are named first: schemas.name_layouts)
        assert all("default" not in c for c in cols)
    assert "default" not in rec["columns"][1]  # a copy
