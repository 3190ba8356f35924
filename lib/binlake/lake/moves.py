"""UPDATEs that move a row to another primary key with a partial after image
(``binlog_row_image`` MINIMAL / NOBLOB), made whole before a mirror's fold
(:func:`resolve_moves`, called by ``typed_mirror._merge_mirror``).

The fold takes a partial update's missing columns from the row at its key.  A key move has
no row at its new key: on the server the row keeps the values it had at its old key, which
are the mirror's row there, changed by the run's earlier changes of that key (and that key
may have been reached by an earlier move, and so on).  So the run's changes of the keys the
moves touch are replayed in order on the driver, from the mirror's rows at those keys, and
each move gets the values its image lacks from the row it moved; it then goes into the fold
as a whole row.  The replay holds those changes and rows in the driver's memory: beyond
``MOVES_MAX`` of them it is not done, and the report says so (the moved rows then lack those
columns, NULL in the mirror, as before).
"""

from __future__ import annotations

from typing import Any

from ..config import Settings
from .typed_plan import INTERNAL, Plan, lit, q
from .typedconv import ORDER

# changes and mirror rows the driver replays at most, per mirror (a few hundred bytes each)
MOVES_MAX = 1_000_000


def resolve_moves(spark: Any, settings: Settings, delta: Any, mirror: str, plan: Plan,
                  pk_slots: list[str], empty: bool, notes: list[str] | None = None) -> Any:
    """``delta`` (converted changes: the typed columns, the old key ``__bl_old<i>``,
    ``_op``, the order columns, ``_commit_ts``, ``_absent``) with each key-moving update's
    missing columns filled from the row it moved, and its ``_absent`` emptied (see the
    module doc).  ``empty``: the mirror holds none of the source's rows yet.  Returns
    ``delta`` itself when no update moves a key with a partial image."""
    from pyspark.sql import functions as F

    typed = list(plan.columns)
    others = [c for c in typed if c not in set(pk_slots)]
    olds = [f"{INTERNAL}old{i}" for i in range(len(pk_slots))]
    cols = [*typed, *olds, "_op", *ORDER, "_commit_ts", "_absent"]
    is_move = (F.col("_op") == "update") & ~same_key(pk_slots, olds) & (
        F.size("_absent") > 0)
    moves = [_key(r) for r in delta.where(is_move).select(
        *[F.col(q(c)) for c in pk_slots], *olds).limit(MOVES_MAX + 1).collect()]
    if not moves:
        return delta
    n = len(pk_slots)
    if len(moves) > MOVES_MAX:
        if notes is not None:
            notes.append(f"more than {MOVES_MAX} updates move a key with a partial row image: "
                         "the columns their images lack are NULL in the moved rows")
        return delta
    keys = {m[:n] for m in moves} | {m[n:] for m in moves}
    kschema = ", ".join(f"{INTERNAL}k{i} {plan.columns[c]}" for i, c in enumerate(pk_slots))
    kdf = spark.createDataFrame(sorted(keys, key=repr), kschema)

    def at_keys(df: Any, key_cols: list[str]) -> Any:
        on = None
        for i, c in enumerate(key_cols):
            e = df[q(c)].eqNullSafe(kdf[f"{INTERNAL}k{i}"])
            on = e if on is None else on & e
        return df.join(kdf, on, "left_semi")

    body = delta.select(*[F.col(q(c)) for c in cols])
    related = at_keys(body, pk_slots).unionByName(at_keys(body, olds)).distinct()
    changes = related.limit(MOVES_MAX + 1).collect()
    rows = [] if empty else at_keys(
        spark.table(mirror).where(f"_source = {lit(settings.source)}"), pk_slots
    ).select(*[F.col(q(c)) for c in typed]).limit(MOVES_MAX + 1).collect()
    if len(changes) + len(rows) > MOVES_MAX:
        if notes is not None:
            notes.append(f"the keys that updates with partial row images move have more than "
                         f"{MOVES_MAX} changes and rows: the columns those images lack are "
                         "NULL in the moved rows")
        return delta

    state: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in rows:
        state[_key(r[c] for c in pk_slots)] = {c: r[c] for c in others}
    whole: list[tuple[Any, ...]] = []
    for r in sorted(changes, key=lambda r: tuple(r[c] for c in ORDER)):
        key = _key(r[c] for c in pk_slots)
        op = r["_op"]
        if op == "delete":
            state.pop(key, None)
            continue
        absent = set(r["_absent"] or ())
        old = _key(r[o] for o in olds)
        moved = op == "update" and old != key
        base = (state.pop(old, None) if moved else state.get(key)) or {}
        state[key] = now = {c: base.get(c) if c in absent else r[c] for c in others}
        if moved and absent:
            d = r.asDict()
            d.update(now)
            d["_absent"] = []
            whole.append(tuple(d[c] for c in cols))
    made = spark.createDataFrame(whole, body.schema)
    return body.where(~is_move).unionByName(made)


def same_key(pk_slots: list[str], olds: list[str]) -> Any:
    """Column: the change's key (``pk_slots``) is its old key (``olds``), NULLs equal; of
    an update, that it did not move its row."""
    from pyspark.sql import functions as F

    same = F.lit(True)
    for c, o in zip(pk_slots, olds):
        same = same & F.col(q(c)).eqNullSafe(F.col(o))
    return same


def _key(values: Any) -> tuple[Any, ...]:
    """Key values as a dict key (Spark gives a BINARY value as a bytearray: unhashable)."""
    return tuple(bytes(v) if isinstance(v, bytearray) else v for v in values)
