"""ENUM and SET member names in a FULL-metadata Table_map are logged in the column's
character set (the server converts a column's value list to its charset when the table is
created): the decoder reads them in that charset, as it reads the column's text values.

A private MariaDB server writes the binlog: ENUM/SET columns in latin1, cp1251, utf16 and
utf8mb4 with non-ASCII members, a row inserted, updated and deleted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from binlake.binlog.constants import EventType as E
from binlake.binlog.reader import BinlogReader
from binlake.binlog.rowchanges import iter_row_changes

from .servers import start_server

pytestmark = [pytest.mark.integration]

DB = "enum_cs"
# column -> (charset, ENUM or SET, members)
COLUMNS = {
    "e_latin1": ("latin1", "ENUM", ("café", "naïve", "ÿes")),
    "s_latin1": ("latin1", "SET", ("é", "ü", "plain")),
    "e_cp1251": ("cp1251", "ENUM", ("да", "нет", "может")),
    "e_utf16": ("utf16", "ENUM", ("Ωmega", "😀", "ascii")),
    "s_ucs2": ("ucs2", "SET", ("Ω", "Ж", "€")),
    "e_utf8": ("utf8mb4", "ENUM", ("日本", "😀", "x")),
}


def _q(members: tuple[str, ...]) -> str:
    return ", ".join("'" + m.replace("'", "''") + "'" for m in members)


@pytest.fixture(scope="module")
def binlog(tmp_path_factory: pytest.TempPathFactory, mariadb_template: Path) -> Path:
    srv = start_server(tmp_path_factory.mktemp("enum-cs"), mariadb_template)
    try:
        first = srv.current_binlog_file()
        cols = ", ".join(f"{c} {kind}({_q(ms)}) CHARACTER SET {cs}"
                         for c, (cs, kind, ms) in COLUMNS.items())
        conn = srv.connect()
        try:
            with conn.cursor() as cur:
                cur.execute("SET NAMES utf8mb4")
                for stmt in (
                        f"CREATE DATABASE {DB}",
                        f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, {cols}) ENGINE=InnoDB",
                        f"INSERT INTO {DB}.t VALUES (1, 'naïve', 'é,plain', 'нет', '😀', "
                        "'Ω,€', '日本')",
                        f"UPDATE {DB}.t SET e_latin1 = 'ÿes', s_latin1 = 'ü', e_cp1251 = "
                        "'может', e_utf16 = 'Ωmega', s_ucs2 = 'Ж', e_utf8 = '😀' WHERE id = 1",
                        f"DELETE FROM {DB}.t WHERE id = 1"):
                    cur.execute(stmt)
        finally:
            conn.close()
        srv.flush_binary_logs()
        assert first is not None
        return first
    finally:
        srv.stop(timeout=30)


def test_members_are_read_in_the_column_charset(binlog: Path) -> None:
    maps = [ev.data["_table_map"] for ev in BinlogReader(str(binlog))
            if ev.type_code == E.TABLE_MAP and ev.data.get("_table_map") is not None
            and ev.data["_table_map"].table == "t"]
    assert maps, "no Table_map of the table"
    cols = {c.name: c for c in maps[0].columns}
    for name, (_, _, members) in COLUMNS.items():
        assert cols[name].members == members, (name, cols[name].members)


def test_row_values_use_the_member_names(binlog: Path) -> None:
    """(A SET value is its members' names joined by commas, as MySQL shows it.)"""
    changes = [c for c in iter_row_changes(BinlogReader(str(binlog)))
               if c.get("table") == "t"]
    assert [c["op"] for c in changes] == ["insert", "update", "delete"]
    ins, upd, _ = changes
    assert {k: ins["after"][k] for k in COLUMNS} == {
        "e_latin1": "naïve", "s_latin1": "é,plain", "e_cp1251": "нет", "e_utf16": "😀",
        "s_ucs2": "Ω,€", "e_utf8": "日本"}
    assert {k: upd["after"][k] for k in COLUMNS} == {
        "e_latin1": "ÿes", "s_latin1": "ü", "e_cp1251": "может", "e_utf16": "Ωmega",
        "s_ucs2": "Ж", "e_utf8": "😀"}
