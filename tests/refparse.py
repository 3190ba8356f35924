"""Parsers for the reference decodings stored next to the binlogs of the shared corpus.

Everything here reads text written by *other* tools -- ``mysqlbinlog`` (5.5 .. 8.2, with or
without ``--hexdump`` / ``-v`` / ``-vv`` / ``--short-form``), ``mariadb-binlog``, ``SHOW BINLOG
EVENTS`` tables, zalora/binlog-parser's JSON -- and turns it into plain Python data.  It knows
nothing about binlake: the comparison (and the normalisation of each printer's quirks to the
binlake value contract) is done by the tests.

``parse_mysqlbinlog(text)`` returns one :class:`Output` per ``DELIMITER /*!*/;`` ...
``DELIMITER ;`` block (MTR ``.result`` files hold several), each with the events it printed
(:class:`RefEvent`: ``# at`` position, header fields, hexdump header, description, the SQL
statements and the ``###`` row images printed for it) and, for ``--short-form`` output that
prints no event headers, the flat statement list.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "HexHeader",
    "Output",
    "RefEvent",
    "RefRow",
    "RefValue",
    "Statement",
    "output_after",
    "parse_binlog_parser_json",
    "parse_mysqlbinlog",
    "parse_row_lines",
    "parse_show_binlog_events",
    "read_text",
    "unquote_mysql",
]


def read_text(path: Any) -> str:
    """A reference text file: UTF-8, or UTF-16 with a BOM (the mysql-cdc-rs 8.0 dumps)."""
    data = path.read_bytes()
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return data.decode("utf-16")
    return data.decode("utf-8", "replace").lstrip("\ufeff")


# ------------------------------------------------------------------------------------------
# mysqlbinlog / mariadb-binlog text


@dataclass
class HexHeader:
    """The 19-byte common header as ``--hexdump`` prints it (``# Position  Timestamp ...``)."""

    pos: int
    timestamp: int
    type_code: int
    server_id: int
    size: int
    log_pos: int
    flags: int


@dataclass
class RefValue:
    """One ``###   @N=value /* TYPE meta=M nullable=N is_null=I */`` line (type part optional)."""

    col: int
    raw: str
    type: str | None = None
    meta: int | None = None
    nullable: bool | None = None
    is_null: bool | None = None


@dataclass
class RefRow:
    op: str  # insert / update / delete
    db: str
    table: str
    before: dict[int, RefValue] | None
    after: dict[int, RefValue] | None
    # positions of the rows events whose images mysqlbinlog printed together with this row
    # (it prints a statement's rows after the header of its last, STMT_END_F, event)
    candidates: list[int] = field(default_factory=list)


@dataclass
class Statement:
    text: str
    db: str | None  # the database of the last ``use`` printed before it in this output


@dataclass
class RefEvent:
    pos: int | None
    end_log_pos: int | None
    server_id: int | None
    time_text: str | None  # "200730 15:22:48": local time of the machine that ran the tool
    crc: int | None
    description: str = ""
    hex: HexHeader | None = None
    hex_body_at: int | None = None  # offset printed on the first hexdump line after the header
    comments: list[str] = field(default_factory=list)
    statements: list[Statement] = field(default_factory=list)
    rows: list[RefRow] = field(default_factory=list)
    base64: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        """First word of the description: Query, Xid, GTID, Table_map, Write_rows, Start ..."""
        d = self.description.strip()
        if d.startswith("#"):
            d = d.lstrip("#").strip()
        m = re.match(r"[A-Za-z_\-]+", d)
        return m.group(0) if m else ""

    @property
    def fields(self) -> dict[str, str]:
        """``key=value`` pairs of the description (``thread_id=1``, ``Xid = 10`` ...)."""
        out = {}
        for m in re.finditer(r"(\w+)\s*=\s*(\S+)", self.description):
            out[m.group(1)] = m.group(2)
        return out


@dataclass
class Output:
    """One run of the tool (one ``DELIMITER /*!*/;`` .. ``DELIMITER ;`` block)."""

    start_line: int
    events: list[RefEvent] = field(default_factory=list)
    statements: list[Statement] = field(default_factory=list)  # all, in order, events or not
    rows: list[RefRow] = field(default_factory=list)


_AT = re.compile(r"^# at (\d+|#)\s*$")
_HEADER = re.compile(
    r"^# ?(\d{6} +\d{1,2}:\d\d:\d\d|#) server id (\d+|#) +end_log_pos (\d+|#)"
    r"(?: CRC32 (0x[0-9a-f]+|#))? *(?:\t(.*))?$"
)
_ROW_START = re.compile(r"^### (INSERT INTO|UPDATE|DELETE FROM) `(.*)`\.`(.*)`$")
_VALUE = re.compile(r"^###   @(\d+)=(.*)$", re.S)
_TYPE_COMMENT = re.compile(r"^(.*) /\* (.*?) meta=(\d+) nullable=(\d) is_null=(\d) \*/$", re.S)
_ROWS_KINDS = {"Write_rows", "Update_rows", "Delete_rows", "Write_rows_v1", "Update_rows_v1",
               "Delete_rows_v1", "Write_rows_compressed", "Update_rows_compressed",
               "Delete_rows_compressed", "Write_rows_compressed_v1", "Update_rows_compressed_v1",
               "Delete_rows_compressed_v1", "Partial_update_rows"}  # fmt: skip
_OPS = {"INSERT INTO": "insert", "UPDATE": "update", "DELETE FROM": "delete"}


def _hex_tokens(body: str) -> list[str]:
    return [t for t in body.replace("|", " ").split() if re.fullmatch(r"[0-9a-f]{2}", t)]


class _MysqlbinlogParser:
    def __init__(self) -> None:
        self.outputs: list[Output] = []
        self.out: Output | None = None
        self.cur: RefEvent | None = None
        self.pending_at: list[int | None] = []
        self.buf: list[str] = []
        self.in_base64 = False
        self.hex_state = ""  # "" / "title" (saw the title line) / "body"
        self.db: str | None = None
        self.row: RefRow | None = None
        self.img = "after"
        self.group: list[int] = []
        self.group_flushed = False

    def feed(self, text: str) -> list[Output]:
        for n, line in enumerate(text.splitlines(), 1):
            self.line(n, line.rstrip("\r"))
        return self.outputs

    def new_output(self, n: int) -> None:
        self.out = Output(n)
        self.outputs.append(self.out)
        self.cur = None
        self.pending_at = []
        self.buf = []
        self.in_base64 = False
        self.hex_state = ""
        self.db = None
        self.row = None
        self.group = []
        self.group_flushed = False

    def line(self, n: int, line: str) -> None:
        if line.startswith("DELIMITER /*!*/;"):
            self.new_output(n)
            return
        out = self.out
        if out is None:
            return
        if line.startswith("DELIMITER ;"):
            self.out = None
            return
        if self.in_base64:
            if line.startswith("'"):
                self.in_base64 = False
            elif self.cur is not None:
                self.cur.base64.append(line)
            return
        if line.startswith("###"):
            self.row_line(line)
            return
        if self.hex_line(line):
            return
        m = _AT.match(line)
        if m:
            self.pending_at.append(int(m.group(1)) if m.group(1) != "#" else None)
            return
        if line.startswith("<#>"):
            # a line masked by MTR (binlog_base64_flag.result): the event header when a
            # "# at" is pending, else a session line such as pseudo_thread_id
            if self.pending_at:
                self.new_event(None, None, None, None, "")
            line = line[3:]
            if not line:
                return
        m = _HEADER.match(line)
        if m:
            def num(s: str | None, base: int = 10) -> int | None:
                return None if s is None or s == "#" else int(s, base)

            crc = m.group(4)
            self.new_event(num(m.group(2)), num(m.group(3)),
                           None if m.group(1) == "#" else m.group(1),
                           None if crc is None or crc == "#" else int(crc, 16),
                           (m.group(5) or "").rstrip())
            if not m.group(5):
                self.hex_state = "await"
            return
        if line.startswith("#"):
            cur = self.cur
            if cur is not None:
                body = line[1:]
                if self.hex_state == "await-desc" or (
                    self.hex_state == "await" and not cur.description
                    and (body.startswith(" \t") or body.startswith(" Event: \t"))
                ):
                    desc = body.split("\t", 1)[1] if "\t" in body else body.strip()
                    cur.description = desc.rstrip()
                    self.hex_state = ""
                    return
                if self.hex_state == "await-desc" and body.strip() == "":
                    return
                cur.comments.append(line)
            return
        if line.startswith("BINLOG '"):
            self.in_base64 = True
            rest = line[len("BINLOG '"):]
            if rest and self.cur is not None:
                self.cur.base64.append(rest)
            return
        if not line.strip() and not self.buf:
            return
        if line.startswith("--- ") and not self.buf:
            # notes the mysql-cdc-rs authors typed into two of their dumps (SQL comments)
            return
        self.buf.append(line)
        if line.endswith("/*!*/;"):
            text = "\n".join(self.buf)[: -len("/*!*/;")]
            self.buf = []
            self.statement(text.rstrip("\n"))

    def hex_line(self, line: str) -> bool:
        """Lines of a ``--hexdump`` block (MySQL or MariaDB layout)."""
        cur = self.cur
        if cur is None or self.hex_state == "":
            return False
        if line.startswith("# Position"):
            self.hex_state = "title" if "Timestamp" in line else "title-mariadb"
            return True
        if self.hex_state == "title-mariadb" and "|Timestamp" in line:
            self.hex_state = "title"
            return True
        if self.hex_state == "title":
            toks = line[1:].replace("|", " ").split()
            if len(toks) == 20:
                b = bytes(int(t, 16) for t in toks[1:])
                cur.hex = HexHeader(
                    pos=int(toks[0], 16),
                    timestamp=int.from_bytes(b[0:4], "little"),
                    type_code=b[4],
                    server_id=int.from_bytes(b[5:9], "little"),
                    size=int.from_bytes(b[9:13], "little"),
                    log_pos=int.from_bytes(b[13:17], "little"),
                    flags=int.from_bytes(b[17:19], "little"),
                )
                self.hex_state = "body"
                return True
        if self.hex_state == "body":
            m = re.match(r"^#\s+([0-9a-f]+)\s+((?:[0-9a-f]{2}\s+)+)", line + " ")
            if m and _hex_tokens(m.group(2)):
                if cur.hex_body_at is None:
                    cur.hex_body_at = int(m.group(1), 16)
                return True
            if line.strip() == "#":
                return True
            self.hex_state = "await-desc"
            return False
        return False

    def new_event(self, server_id: int | None, end: int | None, time_text: str | None,
                  crc: int | None, desc: str) -> None:
        assert self.out is not None
        pos = self.pending_at.pop(0) if self.pending_at else None
        ev = RefEvent(pos, end, server_id, time_text, crc, desc)
        self.cur = ev
        self.out.events.append(ev)
        self.hex_state = ""
        self.row = None
        kind = ev.kind
        if kind in _ROWS_KINDS:
            if self.group_flushed:
                self.group = []
                self.group_flushed = False
            if ev.pos is not None:
                self.group.append(ev.pos)
        elif kind != "Table_map":
            self.group = []
            self.group_flushed = False

    def statement(self, text: str) -> None:
        assert self.out is not None
        m = re.fullmatch(r"use `(.*)`", text.strip(), re.S)
        if m:
            self.db = m.group(1)
        st = Statement(text, self.db)
        self.out.statements.append(st)
        if self.cur is not None:
            self.cur.statements.append(st)

    def row_line(self, line: str) -> None:
        assert self.out is not None
        m = _ROW_START.match(line)
        if m:
            op = _OPS[m.group(1)]
            self.row = RefRow(op, m.group(2), m.group(3),
                              {} if op != "insert" else None, {} if op != "delete" else None,
                              list(self.group))
            self.group_flushed = True
            self.out.rows.append(self.row)
            if self.cur is not None:
                self.cur.rows.append(self.row)
            self.img = "after" if op == "insert" else "before"
            return
        if line.strip() == "### SET":
            self.img = "after"
            return
        if line.strip() == "### WHERE":
            self.img = "before"
            return
        m = _VALUE.match(line)
        if not m or self.row is None:
            raise ValueError(f"cannot parse row line {line!r}")
        col, rest = int(m.group(1)), m.group(2)
        v = RefValue(col, rest)
        t = _TYPE_COMMENT.match(rest)
        if t:
            v = RefValue(col, t.group(1), t.group(2), int(t.group(3)), t.group(4) == "1",
                         t.group(5) == "1")
        img = self.row.after if self.img == "after" else self.row.before
        if img is None:
            raise ValueError(f"{self.img} image in a {self.row.op} row: {line!r}")
        img[col] = v


def parse_mysqlbinlog(text: str) -> list[Output]:
    return _MysqlbinlogParser().feed(text)


def unquote_mysql(raw: str) -> bytes:
    """The bytes of a string value as ``mysqlbinlog -v`` / ``mariadb-binlog -v`` quote it.

    MySQL 5.6/5.7 print bytes < 0x20, ``'`` and ``\\`` as ``\\xNN``; MySQL 8.0 prints ``\\'``
    and ``\\\\`` for the last two; MariaDB prints only bytes < 0x20 as ``\\xNN``.  The values in
    the corpus references contain no literal backslash, so reading all three back is exact.
    """
    s = raw.strip()
    if not (len(s) >= 2 and s[0] == "'" and s[-1] == "'"):
        raise ValueError(f"not a quoted value: {raw!r}")
    body = s[1:-1].encode("utf-8", "surrogateescape")
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c == 0x5C and i + 3 < len(body) and body[i + 1 : i + 2] == b"x" and re.fullmatch(
            rb"[0-9a-f]{2}", body[i + 2 : i + 4]
        ):
            out.append(int(body[i + 2 : i + 4], 16))
            i += 4
        elif c == 0x5C and i + 1 < len(body) and body[i + 1] in b"'\\":
            out.append(body[i + 1])
            i += 2
        else:
            out.append(c)
            i += 1
    return bytes(out)


# ------------------------------------------------------------------------------------------
# SHOW BINLOG EVENTS (mysql client table)


@dataclass
class ShowRow:
    log_name: str
    pos: int
    event_type: str
    server_id: int
    end_log_pos: int
    info: str  # whitespace-normalised (the client pads and the capture wrapped long lines)


def parse_show_binlog_events(text: str) -> list[ShowRow]:
    rows: list[list[str]] = []
    for line in text.splitlines():
        if re.match(r"^\| \S+ +\| +\d+ \|", line):
            rows.append([line])
        elif line.startswith("+-") or line.startswith("| Log_name") or not rows:
            continue
        elif re.match(r"^\d+ rows? in set", line):
            break
        else:
            rows[-1].append(line)
    out = []
    for lines in rows:
        joined = "\n".join(lines).rstrip()
        cells = joined.split("|", 6)
        info = cells[6]
        if info.rstrip().endswith("|"):
            info = info.rstrip()[:-1]
        out.append(ShowRow(cells[1].strip(), int(cells[2]), cells[3].strip(), int(cells[4]),
                           int(cells[5]), " ".join(info.split())))
    return out


# ------------------------------------------------------------------------------------------
# zalora/binlog-parser JSON (a stream of pretty-printed objects)


def parse_binlog_parser_json(text: str) -> list[dict[str, Any]]:
    dec = json.JSONDecoder()
    i, out = 0, []
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return out
        obj, i = dec.raw_decode(text, i)
        out.append(obj)


def parse_row_lines(lines: list[str]) -> list[RefRow]:
    """Rows from bare ``###`` lines (an MTR test that kept only those of a ``-v`` output)."""
    p = _MysqlbinlogParser()
    p.new_output(0)
    for line in lines:
        if line.startswith("###"):
            p.row_line(line.rstrip("\r"))
    assert p.out is not None
    return p.out.rows


def output_after(outputs: list[Output], text: str, marker: str, skip: int = 0) -> Output:
    """The ``skip``-th output that starts after the first line equal to ``marker``."""
    lines = text.splitlines()
    at = next(i for i, ln in enumerate(lines, 1) if ln.strip() == marker.strip())
    return [o for o in outputs if o.start_line > at][skip]
