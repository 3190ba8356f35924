"""Statement text before parsing: versioned comments, statement splitting, and the
statement's leading keywords.

Versioned comments (MySQL "Comments" manual page): ``/*! text */`` is executed by every
MySQL/MariaDB server, ``/*!NNNNN text */`` by servers whose version (major*10000 + minor*100
+ patch) is >= NNNNN, ``/*M!NNNNN text */`` (``/*M! text */``) by MariaDB only.  Anything else
is a plain comment.  ``expand_versioned`` keeps the text a given server executes."""

from __future__ import annotations

import re

ANY_VERSION = 999999  # e.g. mysqldump text: take every versioned comment


def version_number(version: tuple[int, int, int]) -> int:
    return version[0] * 10000 + version[1] * 100 + version[2]


_VERSIONED = re.compile(r"(M?)!(\d{5,6})?")


def expand_versioned(sql: str, server_version: int = ANY_VERSION,
                     mariadb: bool = False) -> str:
    """The statement as the server runs it: executed versioned comments become their content,
    other comments stay (they are comments), strings and quoted names are untouched."""
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c in "'\"`":
            j = _end_quote(sql, i)
            out.append(sql[i:j])
            i = j
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            end = n if end < 0 else end
            m = _VERSIONED.match(sql, i + 2)
            if m and m.end() > i + 2:
                num = int(m.group(2)) if m.group(2) else 0
                runs = num <= server_version and (mariadb or not m.group(1))
                if runs:
                    # the content may itself hold strings with "*/": rescan it
                    out.append(" " + expand_versioned(sql[m.end():end], server_version,
                                                      mariadb) + " ")
                else:
                    out.append(" ")
            else:
                out.append(sql[i:end + 2])
            i = end + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _end_quote(sql: str, i: int) -> int:
    q = sql[i]
    j = i + 1
    n = len(sql)
    while j < n:
        c = sql[j]
        if c == "\\" and q != "`":
            j += 2
            continue
        if c == q:
            if j + 1 < n and sql[j + 1] == q:
                j += 2
                continue
            return j + 1
        j += 1
    return n


def split_statements(text: str) -> list[str]:
    """Statements of a script (mysqldump output): split at ``;`` outside strings, quoted
    names and comments; ``DELIMITER`` lines are honoured; ``--`` and ``#`` comment lines
    are dropped."""
    stmts: list[str] = []
    delim = ";"
    cur: list[str] = []
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        if at_line_start:
            j = i
            while j < n and text[j] in " \t":
                j += 1
            line_end = text.find("\n", j)
            line_end = n if line_end < 0 else line_end
            line = text[j:line_end]
            if line.upper().startswith("DELIMITER ") and not "".join(cur).strip():
                delim = line.split(None, 1)[1].strip() or ";"
                i = line_end + 1
                continue
            if line.startswith("-- ") or line == "--" or line.startswith("#"):
                i = line_end + 1
                continue
            at_line_start = False
        c = text[i]
        if c in "'\"`":
            j = _end_quote(text, i)
            cur.append(text[i:j])
            i = j
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            cur.append(text[i:end])
            i = end
        elif text.startswith(delim, i):
            s = "".join(cur).strip()
            if s:
                stmts.append(s)
            cur = []
            i += len(delim)
        else:
            cur.append(c)
            if c == "\n":
                at_line_start = True
            i += 1
    s = "".join(cur).strip()
    if s:
        stmts.append(s)
    return stmts


_LEAD = re.compile(r"^(?:\s+|/\*.*?\*/|--[^\n]*\n|#[^\n]*\n)*", re.S)
_WORD = re.compile(r"[A-Za-z_]+")


def leading_words(sql: str, count: int = 4) -> list[str]:
    """The first words of a statement (comments skipped), upper-case."""
    s = _LEAD.sub("", sql, count=1)
    words: list[str] = []
    for m in re.finditer(r"`(?:[^`]|``)*`|'[^']*'|\(|[^\s(]+", s):
        w = m.group(0)
        if _WORD.fullmatch(w):
            words.append(w.upper())
        else:
            break
        if len(words) >= count:
            break
    return words


DDL_FIRST = frozenset({"CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE"})
def ddl_kind(sql: str) -> str | None:
    """'table', 'database', 'index', 'other' (DDL of other objects) or None (not DDL).
    The text must already be versioned-comment expanded."""
    w = leading_words(sql, 6)
    if not w or w[0] not in DDL_FIRST:
        return None
    rest = w[1:]
    if w[0] == "TRUNCATE":
        return "table"
    if w[0] == "RENAME":
        return "table" if rest and rest[0] in ("TABLE", "TABLES") else "other"
    while rest and rest[0] in ("OR", "REPLACE", "TEMPORARY", "ONLINE", "OFFLINE", "IGNORE",
                               "UNIQUE", "FULLTEXT", "SPATIAL"):
        rest = rest[1:]
    if not rest:
        return "other"
    if rest[0] == "TABLE":
        return "table"
    if rest[0] in ("DATABASE", "SCHEMA"):
        return "database"
    if rest[0] == "INDEX":
        return "index"
    return "other"


def is_temporary(sql: str) -> bool:
    w = leading_words(sql, 5)
    return "TEMPORARY" in w[:4]
