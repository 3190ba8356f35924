"""What an ALTER TABLE does to the rows a mirror already holds (docs/lake.md "Table
lifecycle").

The server rewrites every row of the table on ``ALTER TABLE`` but logs no row change for
it: a mirror row that no later change touched still has the columns of its last change.
This module replays the rewrite on those rows (the mirror's rows whose order key is before
the statement), from the schema history's versions before and after it and the typed
columns the load's layouts map them to:

* a renamed column (``RENAME COLUMN``, ``CHANGE old new``) whose typed column changes: the
  new typed column gets the old one's value;
* a column whose type changed into another typed column (``b`` -> ``b__v2``: an
  incompatible change): the new typed column gets the old value, cast (Spark's cast);
* an added column: its ``DEFAULT`` when that is a constant, else (NOT NULL without a
  default) the type's implicit default (0, the empty string, an ENUM's first member); NULL
  otherwise (what the typed column holds anyway);
* the typed columns the table no longer fills (a dropped column's, and the old column of a
  renamed or retyped one) become NULL, as in the rows a later change writes.

Applied once a layout after the ALTER is known (the typed columns it maps to), to the
ALTERs after the mirror's ``binlake.altered.<source>`` property: every ALTER at or before
that position has been replayed on the mirror (:func:`altered_through`).  Only for mirrors
with a primary key.

A replay is not idempotent (a retyped column's value moves to its new typed column and the
old one becomes NULL: a second replay would move the NULL), and the load may be killed at
any point, so every replay is fenced by two property commits: before its UPDATE, the
mirror's ``binlake.replaying.<source>`` names the ALTER and the snapshot the UPDATE starts
from; after it, ``binlake.altered.<source>`` moves to the ALTER (and ``replaying`` goes) in
one commit.  A rerun that finds ``replaying`` tells from the mirror's snapshots whether the
UPDATE committed (:func:`binlake.lake.commit.fence_committed`).  The property is set before the typed step
commits the mirror's rows and watermark (:func:`fence_pending`), so a run killed between
those commits and its replays replays them when it runs again (the watermark, past the
ALTERs by then, does not decide it).
"""

from __future__ import annotations

import re
from typing import Any

from ..config import Settings
from ..schema.model import SchemaColumn, SchemaHistory, Version
from .commit import fence_committed, fence_what, set_fence
from .typed_ddl import TableState, _exists, watermark_key, watermark_keys
from .typed_plan import ALTERED, REPLAYING, lit, older_than, q, table_names

_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_STRING = re.compile(r"^'(?:[^'\\]|\\.|'')*'$", re.S)
_BITS = re.compile(r"^[bB]'([01]*)'$")
_HEX = re.compile(r"^[xX]'([0-9a-fA-F]*)'$|^0x([0-9a-fA-F]+)$")
_TIME = re.compile(r"^(-)?(\d+):(\d{1,2}):(\d{1,2})(?:\.(\d+))?$")
_INTEGERS = ("tinyint", "smallint", "mediumint", "int", "integer", "bigint", "decimal",
             "numeric", "float", "double", "bit", "year")
_TEXTS = ("char", "varchar", "tinytext", "text", "mediumtext", "longtext", "json")
_BINARIES = ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob")


def default_sql(c: SchemaColumn) -> str | None:
    """The Spark SQL literal of what the server writes into an added column ``c`` of the
    existing rows (as the typed column holds it: a BIT's number, a TIME's text, a SET's
    members in their defined order), or None when that is NULL or not known: an expression
    (``CURRENT_TIMESTAMP``, a function) is not replayed."""
    d = getattr(c, "default", None)
    if d is None:
        return None if c.nullable or c.generated else _implicit(c)
    text = str(d).strip()
    if text.upper() == "NULL":
        return None
    if text.upper() in ("TRUE", "FALSE"):
        text = "1" if text.upper() == "TRUE" else "0"
    m = _BITS.match(text)
    h = _HEX.match(text)
    if m is not None or h is not None:
        raw = (int(m.group(1) or "0", 2).to_bytes((len(m.group(1)) + 7) // 8, "big")
               if m is not None else bytes.fromhex(h.group(1) or h.group(2)) if h else b"")
        if c.base in _BINARIES:
            return _binary(c, raw)
        if c.base in _INTEGERS:
            return str(int.from_bytes(raw, "big"))
        text = "'" + raw.decode("utf-8", "replace").replace("'", "''") + "'"
    if _NUMBER.match(text):
        if c.base == "year":  # two digits: 1-69 are 2001-2069, 70-99 1970-1999
            n = int(float(text))
            return str(n + 2000 if 1 <= n <= 69 else n + 1900 if 70 <= n <= 99 else n)
        if c.base == "time":
            return None  # a number as a time (HHMMSS): not replayed
        return text
    if not _STRING.match(text):
        return None
    body = text[1:-1].replace("''", "'")
    if "\\" in body:
        body = body.encode("utf-8").decode("unicode_escape")
    if c.base == "time":
        return _time(c, body)
    if c.base == "set" and c.members:
        chosen = {v.lower() for v in body.split(",") if v}
        return lit(",".join(v for v in c.members if v.lower() in chosen))
    if c.base == "enum" and c.members:
        return next((lit(v) for v in c.members if v.lower() == body.lower()), None)
    if c.base in _BINARIES:
        return _binary(c, body.encode("utf-8"))
    if c.base == "char":  # CHAR values are read without their trailing spaces
        body = body.rstrip(" ")
    if c.base == "year" and _NUMBER.match(body):  # '99': as a string, 2-digit years too
        n = int(float(body))
        return str(2000 + n if 0 <= n <= 69 else 1900 + n if 70 <= n <= 99 else n)
    return lit(body)


def _implicit(c: SchemaColumn) -> str | None:
    """What a NOT NULL column added without a DEFAULT holds in the existing rows: the
    type's implicit default (zero dates are NULL in the typed tables)."""
    if c.base in _INTEGERS:
        return "0"
    if c.base in _TEXTS or c.base == "set":
        return "''"
    if c.base == "enum" and c.members:
        return lit(c.members[0])
    if c.base in _BINARIES:
        return _binary(c, b"")
    if c.base == "time":
        return _time(c, "00:00:00")
    return None


def _binary(c: SchemaColumn, raw: bytes) -> str:
    if c.base == "binary" and c.length:  # BINARY(n) pads with zero bytes
        raw = raw.ljust(c.length, b"\0")
    return f"X'{raw.hex()}'"


def _time(c: SchemaColumn, text: str) -> str | None:
    """A TIME literal as the decoder renders the column: ``[-]HH:MM:SS`` and the column's
    fractional digits."""
    m = _TIME.match(text.strip())
    if not m:
        return None
    sign, h, mi, se, frac = m.groups()
    fsp = c.scale or 0
    out = f"{sign or ''}{int(h):02d}:{int(mi):02d}:{int(se):02d}"
    if fsp:
        out += "." + (frac or "").ljust(6, "0")[:fsp]
    return lit(out)


def alter_steps(history: SchemaHistory, job: Any) -> list[tuple[tuple[int, int], dict[str, str]]]:
    """The ALTERs of a run's table to replay on its mirror: (statement position, typed column
    -> SQL expression), in order; those at or before ``job.altered_through``
    (:func:`altered_through`) are done already."""
    if job.plan is None or not job.pk_slots or not job.named:
        return []
    versions = history.versions.get((job.db.lower(), job.tbl.lower()), [])
    done = job.altered_through
    steps = []
    for i, v in enumerate(versions):
        if v.change != "alter" or v.columns is None or i == 0:
            continue
        if done is not None and (v.start[0], v.start[1]) <= done:
            continue
        prev = versions[i - 1]
        if prev.columns is None or not prev.exists:
            continue
        sets = _sets(job, prev, v)
        if sets:
            steps.append(((int(v.start[0]), int(v.start[1])), sets))
    return steps


def apply_alters(spark: Any, settings: Settings, jobs: list[Any]) -> dict[str, Any]:
    """Replay the ALTERs of the run's tables (``job.alters``: :func:`alter_steps`) on their
    mirrors' older rows, where the typed step has not replayed them itself between the
    run's changes (``job.altered``: a partial-image delta, see
    :func:`binlake.lake.typed_table._fill`); returns per ``db.tbl`` the statements'
    positions and the typed columns set."""
    out: dict[str, Any] = {}
    for job in jobs:
        if job.altered is not None:
            done = job.altered
        else:
            mirror = settings.table(table_names(job.db, job.tbl)[1])
            done = [d for pos, sets in job.alters
                    if (d := replay_alter(spark, settings, mirror, pos, sets)) is not None]
        if done:
            out[f"{job.db}.{job.tbl}"] = done
    return out


def replay_alter(spark: Any, settings: Settings, mirror: str, pos: tuple[int, int],
                 sets: dict[str, str]) -> dict[str, Any] | None:
    """One ALTER's rewrite of the mirror's rows older than the statement at ``pos``, fenced
    by the mirror's ``replaying`` and ``altered`` properties (see the module doc)."""
    if not _exists(spark, mirror):
        return None
    set_fence(spark, mirror, watermark_key(spark, settings, REPLAYING), f"{pos[0]},{pos[1]}")
    assign = ", ".join(f"{q(k)} = {e}" for k, e in sets.items())
    spark.sql(f"UPDATE {mirror} SET {assign} WHERE _source = {lit(settings.source)} AND "
              f"{older_than(pos)}")
    _mark_replayed(spark, settings, mirror, pos)
    return {"pos": f"{pos[0]},{pos[1]}", "set": sorted(sets)}


def _mark_replayed(spark: Any, settings: Settings, mirror: str, pos: tuple[int, int]) -> None:
    """After a replay's UPDATE: ``altered`` moves to its ALTER, ``replaying`` goes."""
    _set_altered(spark, settings, mirror, pos)


def _set_altered(spark: Any, settings: Settings, mirror: str, pos: tuple[int, int]) -> None:
    """``altered`` := ``pos``, and any ``replaying`` fence removed, in one commit."""
    from .commit import java_table, refresh_table, set_properties

    set_properties(java_table(spark, mirror),
                   {watermark_key(spark, settings, ALTERED): f"{pos[0]},{pos[1]}"},
                   remove=(watermark_key(spark, settings, REPLAYING),))
    refresh_table(spark, mirror)


def marker_keys(spark: Any, settings: Settings) -> tuple[str, ...]:
    """The mirror properties :func:`altered_through` reads (each on the current branch, and
    main's): for :func:`binlake.lake.typed_ddl.look`."""
    return (*watermark_keys(spark, settings, ALTERED),
            *watermark_keys(spark, settings, REPLAYING))


def _position(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    seq, pos = text.split(",")[:2]
    return int(seq), int(pos)


def altered_through(spark: Any, settings: Settings, mirror: str, state: TableState,
                    wm: tuple[int, int, int] | None) -> tuple[int, int] | None:
    """The position up to which every ALTER has been replayed on ``mirror`` (None: none
    has been): its ``altered`` property (``state``: :func:`look` with :func:`marker_keys`);
    past it, the ALTER a ``replaying`` property names (``seq,pos@snapshot@application``)
    when that replay's UPDATE committed (a run killed between the UPDATE and the
    ``altered`` commit: :func:`binlake.lake.commit.fence_committed`).  A mirror that has
    neither property was last written by a binlake that replayed every ALTER up to its
    watermark ``wm`` before the run could end."""
    props = state.properties

    def read(prefix: str) -> str | None:
        branch_key, main_key = watermark_keys(spark, settings, prefix)
        return props.get(branch_key) or props.get(main_key)

    done = _position(read(ALTERED))
    replaying = read(REPLAYING)
    if replaying:
        pos = _position(fence_what(replaying))
        if pos is not None and (done is None or pos > done) and fence_committed(
                spark, mirror, replaying):
            done = pos
            # (recorded now: the snapshots that tell it may be expired by a later run)
            _mark_replayed(spark, settings, mirror, pos)
    if done is None and replaying is None and wm is not None:
        done = (wm[0], wm[1])
    return done


def fence_pending(spark: Any, settings: Settings, mirror: str, job: Any) -> None:
    """Before the typed step commits ``job``'s mirror (its rows, its watermark past the
    run's ALTERs): when the run has ALTERs to replay on it, the mirror's ``altered``
    property says how far replays went (:func:`altered_through`), so that a run killed
    before the replays does them when it runs again."""
    if not job.alters or not _exists(spark, mirror):
        return
    _set_altered(spark, settings, mirror, job.altered_through or (0, 0))


def _converted(old: SchemaColumn, src: str, to: str) -> str:
    """SQL: the typed column ``src`` of ``old`` as the server converts it to a column of
    typed type ``to`` (Spark's cast, except a DATETIME or TIMESTAMP to text: the server
    writes all of the column's fractional digits, Spark's cast drops trailing zeros)."""
    if old.base in ("datetime", "timestamp") and to.upper() == "STRING":
        frac = "." + "S" * old.scale if old.scale else ""
        return f"date_format({src}, 'yyyy-MM-dd HH:mm:ss{frac}')"
    return f"CAST({src} AS {to})"


def _sets(job: Any, prev: Version, v: Version) -> dict[str, str]:
    """typed column -> SQL expression, for one ALTER (``prev`` -> ``v``)."""
    at = v.start
    # a layout at the statement's own position is the one the history names from it on
    # (schemas.name_layouts: a RENAME COLUMN changes no Table_map under MINIMAL / NO_LOG
    # metadata), not one before it: no Table_map sits where a Query event is
    before = [lay for lay in job.named if (lay.seq, lay.pos) < at]
    after = [lay for lay in job.named if (lay.seq, lay.pos) >= at]
    if not before or not after:
        return {}
    sb, sa = job.slots_of[id(before[-1])], job.slots_of[id(after[0])]
    types = job.plan.columns
    renamed = {new.lower(): old for old, new in getattr(v, "renamed", ()) or ()}
    sets: dict[str, str] = {}
    for c in v.columns or ():
        dst = sa.get(c.name)
        if dst is None or dst not in types:
            continue
        old = prev.column(renamed.get(c.name.lower(), c.name))
        if old is None:  # added by this statement
            val = default_sql(c)
            if val is not None:
                sets[dst] = f"CAST({val} AS {types[dst]})"
            continue
        if old.name == c.name and old.type == c.type:
            continue  # unchanged by this statement
        src = sb.get(old.name)
        if src is not None and src != dst and src in types:
            sets[dst] = _converted(old, q(src), types[dst])
    # the typed columns the table no longer fills (a dropped, renamed or retyped column's
    # old one) are NULL in the rewritten rows, as in rows a later change wrote
    now = {c.name.lower(): c for c in v.columns or ()}
    was_renamed = {old.lower() for old in renamed.values()}
    used = {sa[c.name] for c in v.columns or () if c.name in sa}
    for p in prev.columns or ():
        kept = now.get(p.name.lower())
        if kept is not None and p.name.lower() not in was_renamed and kept.type == p.type:
            continue  # this statement left the column as it was
        slot = sb.get(p.name)
        if slot is not None and slot in types and slot not in used and slot not in sets:
            sets[slot] = f"CAST(NULL AS {types[slot]})"
    return sets
