"""One source table's typed step: what the driver prepares for it (:class:`_TableJob`,
:func:`_prepare_table`: layouts, plan, created or evolved tables) and how its changelog and
mirror are filled (:func:`_fill_table`, :func:`_fill`), with the converter of its row images
to typed columns (:func:`_converter`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..config import Settings
from .alters import altered_through, marker_keys
from .commit import fork_branch, java_table, refresh_table, set_properties
from .spark import read_table
from .tables import ROW_CHANGES, delete_where
from .typed_ddl import (
    _create,
    _evolve,
    _typed_columns,
    look,
    read_watermark,
    watermark_key,
    watermark_keys,
)
from .typed_mirror import _merge_mirror
from .typed_plan import (
    ALTERED,
    CL_META,
    INTERNAL,
    MAX_POINTS,
    MIRROR_META,
    Layout,
    Plan,
    _after,
    _Group,
    lit,
    older_than,
    plan_schema,
    q,
    table_names,
)
from .typedconv import NO_LAYOUT, NO_NAMES, ORDER


@dataclass
class _TableJob:
    """One source table's typed step: its schema done (:func:`_prepare_table`), its rows to
    convert and merge (:func:`_fill_table`)."""

    db: str
    tbl: str
    rep: dict[str, Any]
    layouts: list[Layout]
    named: list[Layout] = field(default_factory=list)
    plan: Plan | None = None  # None: nothing to fill (skipped)
    slots_of: dict[int, dict[str, str]] = field(default_factory=dict)
    pk_slots: list[str] = field(default_factory=list)
    full: bool = False
    wm: tuple[int, int, int] | None = None
    seqs: list[int] | None = None
    mirror_new: bool = False  # the mirror was created by this run: it is empty
    # the changelog has never been written (no snapshot when the run prepared it: only this
    # run writes the lake): it holds nothing for a retried write to replace
    cl_new: bool = False
    # the ALTERs to replay on the mirror (alters.alter_steps), and those the fill replayed
    # itself between the run's changes (a partial-image delta: _fill), None when it did not
    alters: list[tuple[tuple[int, int], dict[str, str]]] = field(default_factory=list)
    altered: list[dict[str, Any]] | None = None
    # every ALTER at or before this position has been replayed on the mirror (None: none;
    # alters.altered_through)
    altered_through: tuple[int, int] | None = None


def _prepare_table(spark: Any, settings: Settings, db: str, tbl: str,
                   layouts: list[Layout], seqs: list[int] | None) -> _TableJob:
    cl_name, m_name = table_names(db, tbl)
    cl, mirror = settings.table(cl_name), settings.table(m_name)
    rep: dict[str, Any] = {"changelog": cl, "mirror": None, "created": [], "evolved": [],
                           "changelog_rows": 0, "mirror_rows": 0, "skipped": None,
                           "notes": []}
    named = [lay for lay in layouts if lay.has_names]
    if not named:
        rep["changelog"] = None
        rep["skipped"] = ("the binlog does not name the columns (binlog_row_metadata is not "
                          "FULL): no typed tables")
        return _TableJob(db, tbl, rep, layouts)

    # Schema: plan on the changelog, then bring the mirror to the same typed columns.  (Each
    # table read once from the catalog: a night may meet hundreds.)
    cl_state = look(spark, cl)
    m_state = look(spark, mirror, (*watermark_keys(spark, settings),
                                   *marker_keys(spark, settings)))
    cl_exists = cl_state.exists
    mirror_existed = m_state.exists
    # created but never written (no snapshot: the typed tables are created before the files
    # are decoded, and that run may have been killed): built like new ones
    cl_filled = cl_exists and cl_state.written
    existing = _typed_columns(spark, cl, CL_META, cl_state) if cl_exists else []
    plan = plan_schema(existing, named)
    if not cl_exists:
        _create(spark, cl, list(plan.columns.items()), plan.comments, CL_META,
                "days(_commit_ts)")
        rep["created"].append(cl)
    elif plan.actions:
        rep["evolved"] += _evolve(spark, cl, plan.columns, plan.comments, CL_META, cl_state)
    slots_of = {id(lay): s for lay, s in zip(named, plan.slots)}
    newest = named[-1]
    slots = slots_of[id(newest)]
    pk_slots = [slots[c] for c in newest.pk] if newest.pk and all(
        c in slots for c in newest.pk) else []
    # Only the run's files' changes, unless a typed table is new (then all of row_changes).
    mirror_filled = mirror_existed and bool(pk_slots) and m_state.written
    full = seqs is None or not cl_filled or bool(pk_slots and not mirror_filled)
    if pk_slots:
        rep["mirror"] = mirror
        if not mirror_existed:
            _create(spark, mirror, list(plan.columns.items()), plan.comments, MIRROR_META,
                    None)
            rep["created"].append(mirror)
        else:
            rep["evolved"] += _evolve(spark, mirror, plan.columns, plan.comments, MIRROR_META,
                                      m_state)
    else:
        rep["notes"].append("no primary key: changelog only (no mirror)"
                            + (f"; {mirror} is no longer maintained"
                               if mirror_existed else ""))
    # (a mirror created just now has no watermark)
    wm = read_watermark(spark, settings, mirror, m_state) if pk_slots and mirror_existed \
        else None
    return _TableJob(db, tbl, rep, layouts, named, plan, slots_of, pk_slots, full, wm, seqs,
                     bool(pk_slots) and not mirror_filled, cl_new=not cl_filled,
                     altered_through=altered_through(spark, settings, mirror, m_state, wm)
                     if pk_slots and mirror_existed else None)


def _fill_table(spark: Any, settings: Settings, job: _TableJob) -> None:
    from pyspark import StorageLevel

    db, tbl, rep, layouts, named, plan = (job.db, job.tbl, job.rep, job.layouts, job.named,
                                          job.plan)
    assert plan is not None
    slots_of, pk_slots, full, wm, seqs = job.slots_of, job.pk_slots, job.full, job.wm, job.seqs
    cl, mirror = rep["changelog"], rep["mirror"] or settings.table(table_names(db, tbl)[1])
    # Candidates: the changes of the run's files (the changelog's rows for those files are
    # replaced; the mirror takes those newer than its watermark).
    src = lit(settings.source)
    scope = "" if full else f" AND order_seq IN ({', '.join(str(n) for n in seqs or [])})"
    cand = _candidates(spark, settings, db, tbl, scope)
    cl_delete = f"_source = {src}" + ("" if full else scope.replace("order_seq", "_order_seq"))
    cand_seqs: set[int] | None = None
    if len({lay.seq for lay in layouts}) > MAX_POINTS:  # only the candidates' files
        cand = cand.persist(StorageLevel.MEMORY_AND_DISK)
        cand_seqs = {r[0] for r in cand.select(f"{INTERNAL}seq").distinct().collect()}
    try:
        conv = _convert(cand, layouts, named, slots_of, plan, cand_seqs, pk_slots)
        conv = conv.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            job.altered = _fill(spark, settings, conv, cl, cl_delete, mirror, plan, pk_slots,
                                wm, rep, mirror_new=job.mirror_new, alters=job.alters,
                                altered=job.altered_through)
        finally:
            conv.unpersist()
    finally:
        cand.unpersist()


def _candidates(spark: Any, settings: Settings, db: str, tbl: str, more: str) -> Any:
    """The table's ``row_changes`` of the source (and ``more``: `` AND ...``), as the
    converter takes them: with ``__bl_in_cl`` (NULL) and ``__bl_seq`` (the file's
    sequence number, from its name)."""
    from pyspark.sql import functions as F

    cand = read_table(spark, settings.table(ROW_CHANGES)).where(
        f"source = {lit(settings.source)} AND db = {lit(db)} AND tbl = {lit(tbl)}{more}"
    ).select("txn_id", "order_seq", "order_pos", "order_idx", "commit_ts", "op", "before",
             "after", "file", "pos", F.lit(None).cast("boolean").alias(f"{INTERNAL}in_cl"))
    return cand.withColumn(f"{INTERNAL}seq", F.expr(
        "coalesce(try_cast(regexp_extract(file, '\\\\.([0-9]+)$', 1) AS INT), -1)"))


def _converted_after(spark: Any, settings: Settings, job: _TableJob, seq: int, pos: int,
                     ops: tuple[str, ...]) -> Any:
    """The table's ``row_changes`` of ``ops`` after ``(seq, pos)``, converted
    (:func:`_convert`)."""
    assert job.plan is not None
    cand = _candidates(spark, settings, job.db, job.tbl, (
        f" AND op IN ({', '.join(lit(o) for o in ops)}) AND (order_seq > {int(seq)} OR "
        f"(order_seq = {int(seq)} AND order_pos > {int(pos)}))"))
    return _convert(cand, job.layouts, job.named, job.slots_of, job.plan, None, job.pk_slots)


def keys_left_after(spark: Any, settings: Settings, job: _TableJob, seq: int, pos: int
                    ) -> Any | None:
    """The primary-key values (typed, named as the mirror's key columns) that the table's
    changes after ``(seq, pos)`` took away: a delete's key, and the key an UPDATE had before
    it; None when the table has no key.  The changelog holds an update's new key only, so
    an UPDATE that moves a row to another key leaves the old key in no changelog row."""
    from pyspark.sql import functions as F

    if job.plan is None or not job.pk_slots:
        return None
    conv = _converted_after(spark, settings, job, seq, pos, ("update", "delete"))
    return conv.select(*[
        F.when(F.col("_op") == "update", F.col(f"{INTERNAL}old{i}")).otherwise(F.col(q(c)))
        .alias(c) for i, c in enumerate(job.pk_slots)])


def partial_keys_after(spark: Any, settings: Settings, job: _TableJob, seq: int, pos: int,
                       columns: list[str],
                       alters: Sequence[tuple[tuple[int, int], dict[str, str]]] = ()
                       ) -> Any | None:
    """The primary-key values (named as the mirror's key columns) whose every change after
    ``(seq, pos)`` is an UPDATE that kept its key, some with a partial image (MINIMAL /
    NOBLOB), each with a flag ``__bl_a<i>`` (1 or 0) per column of ``columns``: 1 where the
    mirror's value is owed to no image, only to the NULL a row the MERGE made from a
    partial image starts with: no image after the last of ``alters`` (the ALTERs after
    ``(seq, pos)`` replayed on the mirror: position, typed column -> SQL) that rewrote the
    column carries it, and that ALTER computed it from columns with the flag (a retyped or
    renamed column) rather than a constant (an added column's default).  Such a row was
    not in the mirror at the MERGE (a row a RENAME TABLE moves in afterwards:
    lifecycle._move_in).  None when the table has no key."""
    from pyspark.sql import functions as F

    from .moves import same_key

    if job.plan is None or not job.pk_slots:
        return None
    conv = _converted_after(spark, settings, job, seq, pos, ("insert", "update", "delete"))
    olds = [f"{INTERNAL}old{i}" for i in range(len(job.pk_slots))]
    kept = (F.col(f"{INTERNAL}layout") >= 0) & (F.col("_op") == "update") & same_key(
        job.pk_slots, olds)
    steps = sorted(((int(at[0]), int(at[1])), sets) for at, sets in alters
                   if (int(at[0]), int(at[1])) > (seq, pos))
    slots = list(job.plan.columns)
    aggs: dict[tuple[str, int], str] = {}  # (column, segment) -> its "carried" aggregate

    def carried(col: str, k: int) -> str:
        """SQL over the aggregates: an image of segment ``k`` (the changes between ALTER
        k-1 and ALTER k, the last one open) carries ``col``."""
        name = aggs.setdefault((col, k), f"{INTERNAL}w{len(aggs)}")
        return f"({name} = 1)"

    def owed(col: str, k: int, depth: int = 0) -> str:
        """SQL: ``col``'s value at the end of segment ``k`` is owed to no image."""
        not_here = f"NOT {carried(col, k)}"
        for j in range(k - 1, -1, -1):  # the ALTERs before segment k, newest first
            expr = steps[j][1].get(col)
            if expr is None:
                not_here += f" AND NOT {carried(col, j)}"
                continue
            # the ALTER rewrote the row when the key's first change came before it: a
            # constant (an added column's default) is then the row's value, a conversion
            # owes what its source columns owe; else the row was not there yet
            srcs = [c for c in slots if q(c) in expr and c != col]
            by_alter = ("false" if not srcs or depth > 16 else " AND ".join(
                f"({owed(c, j, depth + 1)})" for c in srcs))
            return f"({not_here} AND ({first} > {j} OR ({by_alter})))"
        return f"({not_here})"

    first = f"{INTERNAL}first"  # the segment of the key's first change
    flags = [owed(c, len(steps)) for c in columns]

    def segment(k: int) -> Any:
        cond = F.lit(True)
        if k > 0:
            cond = cond & ~F.expr(older_than(steps[k - 1][0]))
        if k < len(steps):
            cond = cond & F.expr(older_than(steps[k][0]))
        return cond

    seg_of: Any = F.lit(len(steps))
    for k in range(len(steps) - 1, -1, -1):
        seg_of = F.when(F.expr(older_than(steps[k][0])), F.lit(k)).otherwise(seg_of)

    carries = [F.max(F.when(segment(k) & (F.col("_op") == "update") & ~F.coalesce(
        F.array_contains("_absent", c), F.lit(False)), 1).otherwise(0)).alias(name)
        for (c, k), name in aggs.items()]
    return conv.groupBy(*[q(c) for c in job.pk_slots]).agg(
        F.min(F.coalesce(kept, F.lit(False)).cast("int")).alias(f"{INTERNAL}only"),
        F.max(F.coalesce(F.size("_absent") > 0, F.lit(False)).cast("int")).alias(
            f"{INTERNAL}some"), F.min(seg_of).alias(first), *carries
    ).where(f"{INTERNAL}only = 1 AND {INTERNAL}some = 1").select(
        *[q(c) for c in job.pk_slots],
        *[F.expr(f"CASE WHEN {f} THEN 1 ELSE 0 END").alias(f"{INTERNAL}a{i}")
          for i, f in enumerate(flags)])


def _convert(cand: Any, layouts: list[Layout], named: list[Layout], slots_of: dict[int, Any],
             plan: Plan, seqs: set[int] | None, pk_slots: list[str]) -> Any:
    """The candidates with their typed columns, converted in Python on the executors
    (:mod:`binlake.lake.typedconv`): ``_txn_id``, ``_op``, the order key, ``_commit_ts``,
    the layout group in force, the typed columns, ``_absent``, a mismatch flag and, for
    updates of a table with a key, the key's values before the change."""
    conv, ddl = _converter(layouts, named, slots_of, plan, seqs, pk_slots)
    return cand.mapInArrow(conv, ddl)


def _converter(layouts: list[Layout], named: list[Layout], slots_of: dict[int, Any],
               plan: Plan, seqs: set[int] | None, pk_slots: list[str]) -> tuple[Any, str]:
    """The :class:`typedconv.Converter` of :func:`_convert` and its output schema (DDL)."""
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType, _parse_datatype_string

    from .typedconv import Converter

    # Layout groups (layouts converting identically) and the change points of the files
    # the candidates come from (the layout in force: the last one before the row, same file).
    groups: dict[Any, _Group] = {}
    gid_of: dict[int, int] = {}
    for lay in named:
        slots = slots_of[id(lay)]
        sig = (lay.columns, tuple(sorted(slots.items())), lay.defaults)
        if sig not in groups:
            groups[sig] = _Group(len(groups), lay, slots)
        gid_of[id(lay)] = groups[sig].gid
    points: list[tuple[int, int, int]] = []
    for lay in layouts:
        if seqs is not None and lay.seq not in seqs:
            continue
        gi = gid_of[id(lay)] if lay.has_names else NO_NAMES
        if points and points[-1][0] == lay.seq and points[-1][2] == gi:
            continue
        points.append((lay.seq, lay.pos, gi))
    by_seq: dict[int, list[tuple[int, int]]] = {}
    for ps, pp, gi in points:
        by_seq.setdefault(ps, []).append((pp, gi))
    used = {gi for _, _, gi in points}
    conv_groups = {}
    defaults: dict[int, dict[str, Any]] = {}
    for g in groups.values():
        if g.gid not in used:
            continue
        cols, taken = [], set()
        for src, m in g.layout.columns:
            if g.slots[src] not in taken:  # the first source of a typed column fills it
                taken.add(g.slots[src])
                cols.append((src, m.kind, m.sql, g.slots[src]))
        kinds = dict(g.layout.columns)
        inv: dict[str, str] = {}
        for src, c in g.slots.items():
            inv.setdefault(c, src)
        keys = [(inv[c], kinds[inv[c]].kind, kinds[inv[c]].sql, i)
                for i, c in enumerate(pk_slots) if c in inv]
        conv_groups[g.gid] = (cols, keys)
        if g.layout.defaults:
            defaults[g.gid] = {src: orjson.loads(v) for src, v in g.layout.defaults}
    fields = [("_txn_id", "string"), ("_op", "string"), ("_order_seq", "int"),
              ("_order_pos", "bigint"), ("_order_idx", "int"), ("_commit_ts", "timestamp"),
              (f"{INTERNAL}layout", "int"), (f"{INTERNAL}in_cl", "boolean"),
              *plan.columns.items(), ("_absent", "array<string>"),
              (f"{INTERNAL}mismatch", "boolean"),
              *[(f"{INTERNAL}old{i}", plan.columns[c]) for i, c in enumerate(pk_slots)]]
    ddl = ", ".join(f"{q(n)} {t}" for n, t in fields)
    struct = _parse_datatype_string(ddl)
    assert isinstance(struct, StructType)
    conv = Converter(by_seq, conv_groups, list(plan.columns.items()), list(pk_slots),
                     to_arrow_schema(struct), defaults)
    return conv, ddl


def _fill(spark: Any, settings: Settings, conv: Any, cl: str, cl_delete: str, mirror: str,
          plan: Plan, pk_slots: list[str], wm: tuple[int, int, int] | None,
          rep: dict[str, Any], stats: dict[str, Any] | None = None,
          write_changelog: Any = None, mirror_new: bool = False, fold: Any = None,
          alters: list[tuple[tuple[int, int], dict[str, str]]] | None = None,
          altered: tuple[int, int] | None = None) -> list[dict[str, Any]] | None:
    """Fill the changelog (its rows of the run's files replaced: ``cl_delete``) and MERGE the
    mirror.  Tables are filled in threads; their commits queue for the catalog's connection
    (one per JVM on SQLite: see :func:`binlake.lake.spark.jdbc_catalog_properties`).
    ``fold(blocked, props)``, when given, applies the delta to the mirror in place of
    :func:`_merge_mirror` (see :func:`_fold_fast`; it returns where the delta was folded,
    and whether its commit set the watermark, table properties ``props``).

    ``alters``: the ALTERs to replay on the mirror's older rows (alters.alter_steps).  The
    load replays them after the typed step (alters.apply_alters), except where the delta's
    updates carry partial images (``binlog_row_image`` MINIMAL / NOBLOB) and an ALTER falls
    among the run's changes: an update after the ALTER keeps the columns its image lacks
    from the row before it, which must be rewritten by the ALTER first (a retyped column's
    value in its new typed column, an added column's default).  Then the delta is MERGEd in
    segments, the changes before each ALTER, that ALTER replayed, and so on; returns the
    replays done (None: none here, the load's to do).  ``altered``: how far the mirror's
    ALTER replays went before the run (alters.altered_through); with no ALTER to replay,
    the watermark's commit moves it to the watermark."""
    from pyspark.sql import functions as F

    t0 = time.time()
    steps = rep.setdefault("steps", {})

    def step(name: str) -> None:
        nonlocal t0
        steps[name] = round(time.time() - t0, 3)
        t0 = time.time()

    L = f"{INTERNAL}layout"
    new_cl = f"{INTERNAL}in_cl IS NULL AND {L} >= 0"
    delta = _after(wm) if pk_slots else "false"
    okey = "struct(_order_seq, _order_pos, _order_idx)"
    if stats is None:
        stats = _stats(conv, new_cl, delta, okey, pk_slots)
    rep["partial_images"] = bool(stats.get("partial"))  # (lifecycle._partial_fill)
    step("convert")
    if stats["no_layout"]:
        rep["notes"].append(f"{stats['no_layout']} change(s) in files whose layouts are not "
                            "recorded: left for a load of those files")
    if stats["no_names"]:
        rep["notes"].append(f"{stats['no_names']} change(s) logged without column names: "
                            "not in the typed tables")
    if stats["mismatch"]:
        rep["notes"].append(f"{stats['mismatch']} change(s) whose image has columns the layout "
                            "in force does not name")
    typed = list(plan.columns)

    def changelog() -> None:
        if write_changelog is not None:
            write_changelog()
            return
        delete_where(spark, cl, cl_delete)
        if stats["cl"]:
            cols = [f.name for f in spark.table(cl).schema.fields]
            fork_branch(spark, cl)
            conv.where(new_cl).select(
                *[F.col(q(c)) for c in typed], "_op", *ORDER, "_commit_ts", "_txn_id",
                F.lit(settings.source).alias("_source"), "_absent").select(
                *[F.col(q(c)) for c in cols]).writeTo(cl).append()

    changelog()
    rep["changelog_rows"] = int(stats["cl"] or 0)
    step("changelog")
    if not pk_slots or not stats["delta"]:
        return None
    last = stats["last"]
    replayed = None
    cond = delta
    if stats["blocked"] is not None:
        b = tuple(stats["blocked"])
        rep["notes"].append(f"mirror stopped before change {b[0]},{b[1]},{b[2]}: its file's "
                            "layouts are not recorded (rerun the load of that file)")
        cond += f" AND NOT {_after(b, strict=False)}"
        last, n = conv.where(cond).agg(
            F.max(F.expr(okey)), F.sum(F.expr(f"CASE WHEN {L} >= 0 THEN 1 ELSE 0 END"))
        ).collect()[0]
    else:
        n = stats["todo"]
    # the watermark: set by the mirror's own commit where the fold's commit is ours; with
    # no ALTER to replay after it, every ALTER up to it is done (alters.py)
    props = ({watermark_key(spark, settings): f"{last[0]},{last[1]},{last[2]}"}
             if last is not None else None)
    if props is not None and not alters:
        through = max(altered or (0, 0), (int(last[0]), int(last[1])))
        props[watermark_key(spark, settings, ALTERED)] = f"{through[0]},{through[1]}"
    marked = False
    if n and fold is not None:
        blocked = tuple(stats["blocked"]) if stats["blocked"] is not None else None
        where, marked = fold(blocked, props)
        rep["mirror_fold"] = where or "executor"
    elif n:
        rep["mirror_fold"] = "spark"
        todo = conv.where(cond).where(f"{L} >= 0")
        if stats["partial"] and alters:
            replayed = _merge_in_segments(spark, settings, todo, mirror, plan, pk_slots,
                                          mirror_new, alters, rep["notes"], stats.get("moves"))
        else:
            _merge_mirror(spark, settings, todo, mirror, plan, pk_slots,
                          bool(stats["partial"]), mirror_new, notes=rep["notes"],
                          moves=stats.get("moves"))
    step("mirror")
    rep["mirror_rows"] = int(n or 0)
    if props and not marked:
        # (Iceberg's own property update: about half an ALTER TABLE statement's time)
        set_properties(java_table(spark, mirror), props)
        refresh_table(spark, mirror)
        step("watermark")
    return replayed


def _merge_in_segments(spark: Any, settings: Settings, todo: Any, mirror: str, plan: Plan,
                       pk_slots: list[str], mirror_new: bool,
                       alters: list[tuple[tuple[int, int], dict[str, str]]],
                       notes: list[str], moves: int | None = None) -> list[dict[str, Any]]:
    """A partial-image delta MERGEd the changes before each ALTER of ``alters`` at a time,
    each ALTER replayed on the mirror's older rows after them (see :func:`_fill`;
    ``moves``: as :func:`typed_mirror._merge_mirror` takes it)."""
    from .alters import replay_alter

    done: list[dict[str, Any]] = []
    since = "true"
    for pos, sets in alters:
        part = todo.where(f"{since} AND {older_than(pos)}")
        if part.take(1):
            _merge_mirror(spark, settings, part, mirror, plan, pk_slots, True, mirror_new,
                          notes=notes, moves=moves)
            mirror_new = False
        d = replay_alter(spark, settings, mirror, pos, sets)
        if d is not None:
            done.append(d)
        since = f"NOT {older_than(pos)}"
    rest = todo.where(since)
    if rest.take(1):
        _merge_mirror(spark, settings, rest, mirror, plan, pk_slots, True, mirror_new,
                      notes=notes, moves=moves)
    return done


def _stats(conv: Any, new_cl: str, delta: str, okey: str, pk_slots: list[str]
           ) -> dict[str, Any]:
    """What :func:`_fill` needs to know of the converted candidates (one Spark job)."""
    from pyspark.sql import functions as F

    from .moves import same_key

    L = f"{INTERNAL}layout"
    lacking = F.expr(f"{delta} AND {L} >= 0 AND _op = 'update' AND size(_absent) > 0")
    olds = [f"{INTERNAL}old{i}" for i in range(len(pk_slots))]
    moves = (F.sum(F.when(lacking & ~same_key(pk_slots, olds), 1).otherwise(0)) if pk_slots
             else F.lit(0))
    return conv.agg(
        moves.alias("moves"),
        F.sum(F.expr(f"CASE WHEN {new_cl} THEN 1 ELSE 0 END")).alias("cl"),
        F.sum(F.expr(f"CASE WHEN {delta} THEN 1 ELSE 0 END")).alias("delta"),
        F.sum(F.expr(f"CASE WHEN {delta} AND {L} >= 0 THEN 1 ELSE 0 END")).alias("todo"),
        F.max(F.expr(f"{delta} AND {L} >= 0 AND _op = 'update' AND size(_absent) > 0"))
        .alias("partial"),
        F.min(F.expr(f"CASE WHEN {delta} AND {L} = {NO_LAYOUT} THEN {okey} END"))
        .alias("blocked"),
        F.max(F.expr(f"CASE WHEN {delta} THEN {okey} END")).alias("last"),
        F.sum(F.expr(f"CASE WHEN {L} = {NO_LAYOUT} THEN 1 ELSE 0 END")).alias("no_layout"),
        F.sum(F.expr(f"CASE WHEN {L} = {NO_NAMES} THEN 1 ELSE 0 END")).alias("no_names"),
        F.sum(F.expr(f"CASE WHEN {INTERNAL}mismatch THEN 1 ELSE 0 END")).alias("mismatch"),
    ).collect()[0].asDict()
