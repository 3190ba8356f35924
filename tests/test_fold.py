"""The executor-side fold of a mirror's delta (fold.fold_delta / fold_mirror), against a
plain replay of the changes in commit order (an independent model of what the mirror holds
after them)."""

from __future__ import annotations

import random
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from binlake.lake.fold import (
    FOLD_MAX_BYTES,
    FOLD_MAX_PARTS,
    FOLD_MAX_ROWS,
    FoldSpec,
    fold_delta,
    fold_mirror,
    fold_parts,
    fold_staged,
)
from binlake.lake.sink import stage_columns

OLDS = ("__bl_old0", "__bl_old1")


def _table(changes: list[dict[str, Any]], a_type: pa.DataType | None = None) -> pa.Table:
    a_type = a_type or pa.int64()
    schema = pa.schema([("a", a_type), ("b", pa.string()), ("v", pa.decimal128(10, 2)),
                        ("_op", pa.string()), ("_order_seq", pa.int32()),
                        ("_order_pos", pa.int64()), ("_order_idx", pa.int32()),
                        ("_commit_ts", pa.timestamp("us", tz="UTC")),
                        ("__bl_layout", pa.int32()),
                        (OLDS[0], a_type), (OLDS[1], pa.string())])
    return pa.Table.from_pylist(changes, schema=schema)


def _replay(changes: list[dict[str, Any]]) -> dict[tuple[Any, Any], dict[str, Any]]:
    """The mirror after ``changes``, applied one by one in commit order."""
    state: dict[tuple[Any, Any], dict[str, Any]] = {}
    for c in sorted(changes, key=lambda c: (c["_order_seq"], c["_order_pos"],
                                            c["_order_idx"])):
        key = (c["a"], c["b"])
        if c["_op"] == "delete":
            state.pop(key, None)
            continue
        if c["_op"] == "update":
            old = (c[OLDS[0]], c[OLDS[1]])
            if old != key:
                state.pop(old, None)
        state[key] = {"v": c["v"], "order": (c["_order_seq"], c["_order_pos"],
                                             c["_order_idx"])}
    return state


def _random_changes(rng: random.Random, n: int, keys_a: tuple[Any, ...] = (1, 2, 3, None)
                    ) -> list[dict[str, Any]]:
    from datetime import UTC, datetime
    from decimal import Decimal

    keys_b = ["x", "y", None]
    out = []
    orders = rng.sample(range(10 * n), n)  # commit order unrelated to the row order
    for o in orders:
        op = rng.choice(["insert", "update", "update", "delete"])
        a, b = rng.choice(keys_a), rng.choice(keys_b)
        old = (a, b) if rng.random() < 0.6 else (rng.choice(keys_a), rng.choice(keys_b))
        out.append({"a": a, "b": b, "v": Decimal(rng.randint(-999, 999)) / 100,
                    "_op": op, "_order_seq": 1 + o // 50, "_order_pos": (o % 50) // 5,
                    "_order_idx": o % 5,
                    "_commit_ts": datetime(2026, 1, 1, tzinfo=UTC),
                    "__bl_layout": 0,
                    OLDS[0]: old[0] if op == "update" else None,
                    OLDS[1]: old[1] if op == "update" else None})
    return out


def _mirror_of(folded: pa.Table) -> dict[tuple[Any, Any], dict[str, Any]]:
    rows = folded.to_pylist()
    keys = [(r["a"], r["b"]) for r in rows]
    assert len(set(keys)) == len(keys), "one row per key"
    return {(r["a"], r["b"]): {"v": r["v"], "order": (r["_order_seq"], r["_order_pos"],
                                                     r["_order_idx"])}
            for r in rows if r["_op"] != "delete"}


@pytest.mark.parametrize("seed", range(40))
def test_fold_equals_replay(seed: int) -> None:
    rng = random.Random(seed)
    changes = _random_changes(rng, rng.randint(1, 60))
    folded = fold_delta(_table(changes), ("a", "b"), OLDS, ("a", "b", "v"))
    assert _mirror_of(folded) == _replay(changes)


def _model_part(v: Any, k: int) -> int:
    """The part of a first key value, as fold.part_of documents it (an independent model):
    an integer modulo k, a text's UTF-8 byte sum modulo k, a decimal's as its text at its
    scale (Python's fixed-point format of the value, quantized), NULL in part 0."""
    from decimal import Decimal

    if v is None:
        return 0
    if isinstance(v, Decimal):
        v = format(v, "f")
    if isinstance(v, str):
        v = v.encode()
    if isinstance(v, bytes):
        return sum(v) % k
    return int(v) % k


@pytest.mark.parametrize("first", ["int", "text", "decimal"])
@pytest.mark.parametrize("seed", range(30))
def test_fold_in_parts_equals_the_whole_fold(seed: int, first: str, tmp_path: Path) -> None:
    """A delta folded in k parts by the first key column (fold.FoldSpec.part: an integer
    modulo k, a text's byte sum modulo k, a decimal's text's: BIGINT UNSIGNED keys, up to
    2**64 - 1), each task reading every staged file: the parts together are the whole fold,
    row for row (the old keys' deletes included), and no key is in two parts; keys move
    between parts (negative, NULL and non-ASCII first key values too)."""
    from decimal import Decimal

    rng = random.Random(seed)
    keys_a: tuple[Any, ...] = (-7, -2, 0, 1, 2, 3, 5, 8, None)
    a_type = pa.int64()
    if first == "decimal":
        keys_a = (Decimal(0), Decimal(7), Decimal(10**19), Decimal(2**64 - 1),
                  Decimal(2**64 - 2), Decimal(4096), None)
        a_type = pa.decimal128(20, 0)
    changes = _random_changes(rng, rng.randint(1, 80), keys_a=keys_a)
    if first == "text":  # more text keys than the two of _random_changes, some non-ASCII
        texts = ["x", "y", "", "zz", "\u00e9t\u00e9", "order-17", "k" * 40, None]
        for c in changes:
            c["b"] = rng.choice(texts)
            if c["_op"] == "update":
                c[OLDS[1]] = c["b"] if rng.random() < 0.6 else rng.choice(texts)
    t = _table(changes, a_type)
    paths = []
    cut = sorted(rng.sample(range(t.num_rows + 1), 2))
    for j, (lo, hi) in enumerate(zip([0, *cut], [*cut, t.num_rows])):
        path = tmp_path / f"{j}.parquet"
        piece = t.slice(lo, hi - lo)
        pq.write_table(piece.rename_columns(stage_columns(t.column_names)), path)
        paths.append(str(path))
    pk, olds = (("b", "a"), OLDS[::-1]) if first == "text" else (("a", "b"), OLDS)
    spec = FoldSpec(tuple(paths), tuple(t.column_names), pk, olds, ("a", "b", "v"), None)

    def rows(table: pa.Table) -> list[tuple[Any, ...]]:
        return sorted(tuple(map(repr, r.values())) for r in table.to_pylist())

    whole = fold_staged(spec)
    assert _mirror_of(whole) == _replay(changes)
    for k in (2, 3, 5):
        got = [fold_staged(replace(spec, part=(i, k))) for i in range(k)]
        keys = [(r["a"], r["b"]) for g in got for r in g.to_pylist()]
        assert len(keys) == len(set(keys)), "a key in two parts"
        assert rows(pa.concat_tables(got)) == rows(whole), k
        for i, g in enumerate(got):
            assert all(_model_part(v, k) == i for v in g.column(pk[0]).to_pylist())


@pytest.mark.parametrize(("typ", "values"), [
    (pa.int64(), [-9, -1, 0, 1, 7, None, 2**40 + 3]),
    (pa.int32(), [-9, 3, None, 5]),
    (pa.uint64(), [0, 2**64 - 1, None, 12]),
    (pa.string(), ["", "a", "\u00e9", None, "order-000123", "x" * 300]),
    (pa.large_string(), ["", "a", "\u00e9", None, "order-000123"]),
    (pa.binary(), [b"", b"\xff\x00", None, b"abc"]),
    (pa.decimal128(20, 0), [Decimal(0), Decimal(2**64 - 1), None, Decimal(-12), Decimal(99)]),
    (pa.decimal128(9, 2), [Decimal("0.00"), Decimal("-12.50"), Decimal("1234567.89"), None,
                           Decimal("0.05")]),
])
def test_part_of_is_the_same_in_every_file(typ: pa.DataType, values: list[Any]) -> None:
    """fold.part_of against the model (_model_part), for a plain array, a slice of a
    longer one and a chunked array split anywhere: a key's part may not depend on how a
    staged file holds it."""
    from binlake.lake.fold import part_of

    for k in (2, 3, 8):
        want = [_model_part(v, k) for v in values]
        arr = pa.array(values, typ)
        assert part_of(arr, k).tolist() == want
        padded = pa.array([values[0], *values, values[-1]], typ)
        assert part_of(padded.slice(1, len(values)), k).tolist() == want
        for cut in range(len(values) + 1):
            chunked = pa.chunked_array([arr.slice(0, cut), arr.slice(cut)], typ)
            assert part_of(chunked, k).tolist() == want


def test_part_of_dates_and_times_and_other_types() -> None:
    """Dates and timestamps are parted by their number (days, microseconds since the epoch);
    a key type with no parts (floating point) is refused."""
    from datetime import UTC, date, datetime

    from binlake.lake.fold import part_of

    days = [date(2026, 1, 1), date(1969, 12, 31), None]
    assert part_of(pa.array(days, pa.date32()), 7).tolist() == [
        (d - date(1970, 1, 1)).days % 7 if d else 0 for d in days]
    ts = [datetime(2026, 1, 1, 0, 0, 0, 5, tzinfo=UTC), None]
    assert part_of(pa.array(ts, pa.timestamp("us", tz="UTC")), 5).tolist() == [
        (int(ts[0].timestamp()) * 1_000_000 + 5) % 5, 0]
    with pytest.raises(TypeError):
        part_of(pa.array([1.5], pa.float64()), 2)


def test_text_keys_spread_over_the_parts() -> None:
    """Usual text keys (UUIDs, a prefix and a number) fall about evenly into the parts: each
    of 4 parts gets at least a fifth of 20,000 keys (a part is a task's memory)."""
    import uuid

    import numpy as np

    from binlake.lake.fold import part_of

    rng = random.Random(7)
    for keys in ([str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(20_000)],
                 [f"customer-{n:08d}" for n in range(20_000)],
                 [f"user{n}@example.com" for n in range(20_000)]):
        counts = np.bincount(part_of(pa.array(keys), 4), minlength=4).tolist()
        assert min(counts) >= 20_000 // 5, (keys[:2], counts)


@pytest.mark.parametrize(("rows", "nbytes", "part_key", "cores", "want"), [
    (10, 10, True, 2, 1),  # within the bounds: one task
    (10, 10, False, 2, 1),
    (FOLD_MAX_ROWS + 1, 10, True, 1, 2),  # just over: two parts
    (FOLD_MAX_ROWS + 1, 10, True, 4, 4),  # a part per core
    (FOLD_MAX_ROWS + 1, 10, False, 2, None),  # a key with no parts: Spark
    (3 * FOLD_MAX_ROWS, 10, True, 2, 3),
    (10, 3 * FOLD_MAX_BYTES + 1, True, 2, 4),  # the byte bound counts too
    (FOLD_MAX_PARTS * FOLD_MAX_ROWS + 1, 10, True, 2, None),  # too many parts: Spark
    (FOLD_MAX_ROWS + 1, 10, True, 64, FOLD_MAX_PARTS),
])
def test_fold_parts(rows: int, nbytes: int, part_key: bool, cores: int,
                    want: int | None) -> None:
    assert fold_parts(rows, nbytes, part_key, cores) == want


def test_key_move_deletes_the_old_key() -> None:
    from datetime import UTC, datetime

    ts = datetime(2026, 1, 1, tzinfo=UTC)
    base = {"v": None, "_commit_ts": ts, "__bl_layout": 0, OLDS[0]: None, OLDS[1]: None}
    changes = [
        {**base, "a": 1, "b": "x", "_op": "insert", "_order_seq": 1, "_order_pos": 10,
         "_order_idx": 0},
        {**base, "a": 2, "b": "x", "_op": "update", "_order_seq": 1, "_order_pos": 20,
         "_order_idx": 0, OLDS[0]: 1, OLDS[1]: "x"},
    ]
    folded = fold_delta(_table(changes), ("a", "b"), OLDS, ("a", "b", "v"))
    by_key = {(r["a"], r["b"]): r["_op"] for r in folded.to_pylist()}
    # the old key's delete is kept (a MERGE must remove the row already in the mirror)
    assert by_key == {(1, "x"): "delete", (2, "x"): "update"}


def test_fold_mirror_skips_unknown_layouts_and_blocked(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    ts = datetime(2026, 1, 1, tzinfo=UTC)
    base = {"b": "x", "v": None, "_commit_ts": ts, "_op": "insert", "_order_seq": 1,
            "_order_idx": 0, OLDS[0]: None, OLDS[1]: None}
    changes = [{**base, "a": 1, "_order_pos": 10, "__bl_layout": 0},
               {**base, "a": 2, "_order_pos": 20, "__bl_layout": -1},  # no layout
               {**base, "a": 3, "_order_pos": 30, "__bl_layout": 0},
               {**base, "a": 4, "_order_pos": 40, "__bl_layout": 0}]
    t = _table(changes)
    path = tmp_path / "d.parquet"
    pq.write_table(t.rename_columns(stage_columns(t.column_names)), path)
    out = tmp_path / "folded.parquet"
    spec = FoldSpec((str(path),), tuple(t.column_names), ("a", "b"), OLDS, ("a", "b", "v"),
                      (1, 30, 0), out=str(out))
    rec = fold_mirror(spec)
    assert rec == [{"folded": str(out), "rows": 1}]
    got = pq.read_table(out)
    assert got.column(0).to_pylist() == [1]  # a=2: no layout; a=3 and after: blocked


def test_clean_staging_removes_stale_runs_only(tmp_path: Path) -> None:
    """After a run: its own staging directory goes, a killed run's (nothing written for
    longer than STAGE_MAX_AGE) goes, a live run's stays; the parent goes once empty."""
    import os
    import time

    from binlake.lake.staging import STAGE_MAX_AGE, clean_staging

    parent = tmp_path / "_binlake_staging"
    mine, stale, live = (parent / n / "changelog__db__t" for n in ("mine", "stale", "live"))
    for d in (mine, stale, live):
        d.mkdir(parents=True)
        (d / "0-0.parquet").write_bytes(b"x")
    now = time.time()
    old = now - STAGE_MAX_AGE - 60
    for p in (stale / "0-0.parquet", stale, stale.parent):
        os.utime(p, (old, old))
    # a live run: its directory is old, but a file in it was written a minute ago
    os.utime(live.parent, (old, old))
    removed = clean_staging(str(mine.parent), now=now)
    assert removed == [str(stale.parent)]
    assert sorted(p.name for p in parent.iterdir()) == ["live"]
    clean_staging(str(live.parent), now=now)
    assert not parent.exists()


@pytest.mark.parametrize(("warehouse", "local", "staging_dir", "under"), [
    ("", False, "", "/h/warehouse/_binlake_staging"),  # the default: a local warehouse
    ("file:///w", False, "", "/w/_binlake_staging"),
    ("s3://b/w", True, "", "/h/_binlake_staging"),  # one machine: local disk under home
    ("s3://b/w", False, "", None),  # a cluster: nothing they all reach, unless told
    ("s3://b/w", False, "file:///shared/st", "/shared/st"),
    ("/w", False, "/shared/st", "/shared/st"),
])
def test_where_a_run_stages_its_mirror_deltas(warehouse: str, local: bool, staging_dir: str,
                                              under: str | None) -> None:
    """The staging directory (staging._stage_root): ``staging_dir`` when set, else under a
    local warehouse, else under ``home`` for a local master; a run's own, named by its id."""
    from binlake.config import Settings
    from binlake.lake.staging import _stage_root

    got = _stage_root(Settings(home="/h", warehouse=warehouse, staging_dir=staging_dir),
                      "night1", local)
    if under is None:
        assert got is None
    else:
        assert got is not None and got.startswith(f"{under}/night1-"), got
        assert _stage_root(Settings(home="/h", warehouse=warehouse, staging_dir=staging_dir),
                           "night1", local) != got  # (a retried run: a directory of its own)


def test_part_keys_of_typed_tables() -> None:
    """The typed tables whose big deltas are folded in parts (typed_staged._part_key): a first key
    column of a type fold.part_of takes, a DECIMAL key (BIGINT UNSIGNED) among them; a
    floating-point key or no key is Spark's fold."""
    from pyspark.sql.types import (
        DecimalType,
        DoubleType,
        IntegerType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    from binlake.lake.typed_staged import _part_key

    struct = StructType([StructField("id", IntegerType()), StructField("code", StringType()),
                         StructField("at", TimestampType()),
                         StructField("big", DecimalType(20, 0)),
                         StructField("x", DoubleType())])
    assert _part_key(struct, ["id"]) and _part_key(struct, ["code", "id"])
    assert _part_key(struct, ["at"]) and _part_key(struct, ["big", "id"])
    assert not _part_key(struct, ["x", "id"]) and not _part_key(struct, [])


# -- partial row images (binlog_row_image MINIMAL / NOBLOB): fold.fold_partial -------------

PARTIAL_TYPED = ("a", "b", "v", "w")


def _partial_table(changes: list[dict[str, Any]]) -> pa.Table:
    from binlake.lake.typedconv import ORDER

    schema = pa.schema([("a", pa.int64()), ("b", pa.string()), ("v", pa.decimal128(10, 2)),
                        ("w", pa.string()), ("_op", pa.string()),
                        (ORDER[0], pa.int32()), (ORDER[1], pa.int64()), (ORDER[2], pa.int32()),
                        ("_commit_ts", pa.timestamp("us", tz="UTC")),
                        ("__bl_layout", pa.int32()), ("_absent", pa.list_(pa.string())),
                        (OLDS[0], pa.int64()), (OLDS[1], pa.string())])
    return pa.Table.from_pylist(changes, schema=schema)


def _server_changes(rng: random.Random, n: int, start: dict[tuple[Any, Any], dict[str, Any]]
                    ) -> tuple[list[dict[str, Any]], dict[tuple[Any, Any], dict[str, Any]]]:
    """``n`` changes a server could log from the rows ``start``, in commit order, with
    partial images: an insert of a new key (whole), a delete of a row, an update of a row
    that carries some of its value columns only (its image lacks the others: ``_absent``),
    or moves it to a new key (whole, as ``moves.resolve_moves`` leaves it).  Returns them,
    in a random row order, and the rows after them (the server's table: the oracle)."""
    from datetime import UTC, datetime

    rows = {k: dict(v) for k, v in start.items()}
    keys = [(a, b) for a in (1, 2, 3, 4, None) for b in ("x", "y", None)]
    out = []
    for i in range(n):
        live = list(rows)
        base = {"_order_seq": 1 + i // 7, "_order_pos": 100 + (i % 7) * 10, "_order_idx": 0,
                "_commit_ts": datetime(2026, 1, 1, tzinfo=UTC), "__bl_layout": 0,
                OLDS[0]: None, OLDS[1]: None}
        vals = {"v": Decimal(rng.randint(-999, 999)) / 100,
                "w": rng.choice(["p", "q", None, "\u00e9"])}
        free = [k for k in keys if k not in rows]
        kind = rng.choice(["insert", "update", "update", "update", "delete", "move"])
        if not live or (kind == "insert" and free):
            if not free:
                continue
            k = rng.choice(free)
            rows[k] = dict(vals)
            out.append({**base, "a": k[0], "b": k[1], "_op": "insert", **vals, "_absent": []})
        elif kind == "delete":
            k = rng.choice(live)
            del rows[k]
            out.append({**base, "a": k[0], "b": k[1], "_op": "delete", **rows.get(k, vals),
                        "_absent": []})
        elif kind == "move" and free:
            k, new = rng.choice(live), rng.choice(free)
            del rows[k]
            rows[new] = dict(vals)
            out.append({**base, "a": new[0], "b": new[1], "_op": "update", **vals,
                        "_absent": [], OLDS[0]: k[0], OLDS[1]: k[1]})
        else:
            k = rng.choice(live)
            carried = [c for c in ("v", "w") if rng.random() < 0.5]
            rows[k].update({c: vals[c] for c in carried})
            out.append({**base, "a": k[0], "b": k[1], "_op": "update",
                        **{c: (vals[c] if c in carried else None) for c in ("v", "w")},
                        "_absent": [c for c in ("v", "w") if c not in carried],
                        OLDS[0]: k[0], OLDS[1]: k[1]})
    rng.shuffle(out)
    return out, rows


def _merge_model(mirror: dict[tuple[Any, Any], dict[str, Any]], folded: pa.Table
                 ) -> dict[tuple[Any, Any], dict[str, Any]]:
    """The mirror after the MERGE of a partial fold (typed_mirror._apply_mirror, written
    out): a delete removes its key; a row of a key the mirror has sets each value column,
    or keeps the mirror's where its flag says so; a new key's row is inserted as it is."""
    from binlake.lake.fold import kept_flags

    out = {k: dict(v) for k, v in mirror.items()}
    flags = kept_flags(PARTIAL_TYPED, ("a", "b"))
    for r in folded.to_pylist():
        k = (r["a"], r["b"])
        if r["_op"] == "delete":
            out.pop(k, None)
        elif k in out:
            out[k] = {c: out[k][c] if r[f] else r[c] for c, f in flags}
        else:
            out[k] = {c: r[c] for c, _ in flags}
    return out


@pytest.mark.parametrize("seed", range(60))
def test_partial_fold_merged_equals_the_server(seed: int) -> None:
    """fold_partial's result, MERGEd as the mirror MERGE does (_merge_model), gives the
    rows a server holds after the changes (_server_changes), from a mirror with some rows
    already: the value columns an update's image lacks keep the row's latest values, also
    across several updates, deletes and re-inserts of a key and key moves (NULL keys
    too); and one row per key."""
    from binlake.lake.fold import fold_partial

    rng = random.Random(seed)
    start = {(a, b): {"v": Decimal(a or 0), "w": f"start-{a}-{b}"}
             for a in (1, 2, None) for b in ("x", None) if rng.random() < 0.6}
    changes, server = _server_changes(rng, rng.randint(1, 50), start)
    folded = fold_partial(_partial_table(changes), ("a", "b"), OLDS, PARTIAL_TYPED)
    keys = [(r["a"], r["b"]) for r in folded.to_pylist()]
    assert len(keys) == len(set(keys)), "one row per key"
    assert _merge_model(start, folded) == server


def test_partial_fold_in_parts_equals_the_whole_fold(tmp_path: Path) -> None:
    """fold_staged with ``partial``, in parts by the first key column: the parts together
    are the whole fold, row for row, flags included."""
    rng = random.Random(3)
    changes, _ = _server_changes(rng, 120, {})
    t = _partial_table(changes)
    paths = []
    for j, (lo, hi) in enumerate([(0, 50), (50, t.num_rows)]):
        path = tmp_path / f"{j}.parquet"
        pq.write_table(t.slice(lo, hi - lo).rename_columns(stage_columns(t.column_names)),
                       path)
        paths.append(str(path))
    spec = FoldSpec(tuple(paths), tuple(t.column_names), ("a", "b"), OLDS, PARTIAL_TYPED,
                    None, partial=True)

    def rows(table: pa.Table) -> list[tuple[Any, ...]]:
        return sorted(tuple(map(repr, r.values())) for r in table.to_pylist())

    whole = fold_staged(spec)
    assert "__bl_kf0" in whole.column_names and whole.num_rows
    for k in (2, 3):
        got = pa.concat_tables([fold_staged(replace(spec, part=(i, k))) for i in range(k)])
        assert rows(got) == rows(whole), k


def test_partial_fold_refuses_a_floating_point_key() -> None:
    from binlake.lake.fold import fold_partial

    t = pa.table({"a": pa.array([1.5]), "_absent": pa.array([[]], pa.list_(pa.string()))})
    with pytest.raises(TypeError):
        fold_partial(t, ("a",), ("__bl_old0",), ("a",))
