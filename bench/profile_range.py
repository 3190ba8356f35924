#!/usr/bin/env python3
"""CPU cost of one load decode task, in this process, without Spark.

Runs what an executor runs for one range (``lake/extract.py``: ``decode_range`` with a flush
that calls ``DataSink.write_records``: the record tables' Parquet files and the typed
changelogs, converted by ``typedconv.Converter``, with the mirrors' deltas staged) over the
first range of a binlog: from position 4 to the end of the first Xid event at or past
``--mb`` MiB.  The sink's schemas are built here from ``lake/tables.py``'s DDL and the typed
tables' plan (``lake/typed_plan.py``, ``lake/typed_table.py``), without Iceberg field ids and without a catalog.

Prints the CPU time (``time.process_time``) of each of ``--repeat`` runs and the best.
``--dump DIR`` keeps the last run's output (the records decode_range returned and every data
file written) in DIR; ``--compare DIR`` checks that this run's output equals one dumped
before (same records, same Parquet contents), to prove that a change did not change it.
``--profile N`` prints the top N functions of a cProfile run instead.

    python bench/profile_range.py [--binlog /tmp/perf-corpus-xl/mariadb-bin.000003]
        [--mb 60] [--repeat 3] [--no-typed] [--dump DIR | --compare DIR] [--profile 40]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pickle
import pstats
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "lib"))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from binlake.binlog.constants import EventType as E  # noqa: E402
from binlake.binlog.reader import BinlogReader  # noqa: E402
from binlake.lake import extract as X  # noqa: E402
from binlake.lake import tables as T  # noqa: E402
from binlake.lake.sink import DataSink, TableOut, TypedOut  # noqa: E402
from binlake.lake.survey import survey_scan  # noqa: E402
from binlake.lake.typedconv import file_seq  # noqa: E402


def arrow_type(sql: str) -> Any:
    """A Spark SQL type name as the Arrow type Spark's ``to_arrow_schema`` gives."""
    import pyspark.sql.types as st
    from pyspark.sql.pandas.types import to_arrow_type

    return to_arrow_type(_spark_type(st, sql))


def split_fields(ddl: str) -> list[tuple[str, str]]:
    """``name TYPE, ...`` (names maybe in backticks, types maybe with commas inside)."""
    out, depth, cur = [], 0, ""
    for ch in ddl + ",":
        if ch in "(<":
            depth += 1
        elif ch in ")>":
            depth -= 1
        if ch == "," and depth == 0:
            if cur.strip():
                name, typ = cur.strip().split(None, 1)
                typ = typ.replace("NOT NULL", "").strip()
                out.append((name.strip("`"), typ))
            cur = ""
        else:
            cur += ch
    return out


def schema_of(fields: list[tuple[str, str]]) -> Any:
    return pa.schema([(n, arrow_type(t)) for n, t in fields])


def _partition(spec: str) -> tuple[tuple[str, str], ...]:
    out = []
    for p in spec.split(","):
        p = p.strip()
        m = re.fullmatch(r"days\((\w+)\)", p)
        out.append((m.group(1), "day") if m else (p, "identity"))
    return tuple(out)


def find_end(binlog: str, mb: int) -> int:
    """The end of the first Xid event ending at or past ``mb`` MiB."""
    for ev in BinlogReader(binlog, decode=set()):
        if ev.type_code == E.XID and ev.pos + ev.length >= mb << 20:
            return int(ev.pos + ev.length)
    raise SystemExit(f"{binlog}: no Xid event past {mb} MiB")


_LAYOUTS: dict[str, list[dict[str, Any]]] = {}


def typed_outs(binlog: str, end: int, out: str, tables: dict[str, Any]) -> dict[Any, Any]:
    """The TypedOut of every table the range's layouts name, as ``typed.prepare`` makes them
    for new typed tables (mirror deltas staged under ``out``)."""
    import pyspark.sql.types as st

    from binlake.lake import typed_plan as Y
    from binlake.lake.typed_table import _converter

    def parse(ddl: str) -> Any:  # no JVM here: the few types the converters' schemas use
        return st.StructType([st.StructField(n, _spark_type(st, t))
                              for n, t in split_fields(ddl)])

    st._parse_datatype_string = parse  # used by typed_table._converter
    if binlog not in _LAYOUTS:  # (the survey reads the whole file: once)
        _LAYOUTS[binlog] = survey_scan(binlog, file_seq(Path(binlog).name))[1]
    layouts = _LAYOUTS[binlog]
    by_table: dict[tuple[str, str], list[Any]] = {}
    for r in layouts:
        if r["pos"] < end:
            by_table.setdefault((r["db"], r["tbl"]), []).append(Y.Layout.from_record(r))
    outs = {}
    for (db, tbl), lays in by_table.items():
        named = [lay for lay in lays if lay.has_names]
        if not named:
            continue
        plan = Y.plan_schema([], named)
        slots_of = {id(lay): s for lay, s in zip(named, plan.slots)}
        slots = slots_of[id(named[-1])]
        pk = named[-1].pk
        pk_slots = [slots[c] for c in pk] if pk and all(c in slots for c in pk) else []
        conv, _ = _converter(lays, named, slots_of, plan, None, pk_slots)
        cl = f"cl_{db}_{tbl}"
        tables[cl] = TableOut(f"{out}/{cl}", schema_of(
            [*plan.columns.items(), *Y.CL_META]), (("_commit_ts", "day"),))
        stage = f"{out}/stage_{cl}" if pk_slots else None
        if stage:
            os.makedirs(stage)
        outs[(db, tbl)] = TypedOut(db, tbl, cl, conv, stage, None)
    return outs


def _spark_type(st: Any, sql: str) -> Any:
    sql = sql.strip().lower()
    m = re.fullmatch(r"decimal\((\d+),\s*(\d+)\)", sql)
    if m:
        return st.DecimalType(int(m.group(1)), int(m.group(2)))
    m = re.fullmatch(r"array<(.+)>", sql)
    if m:
        return st.ArrayType(_spark_type(st, m.group(1)))
    return {"string": st.StringType(), "int": st.IntegerType(), "bigint": st.LongType(),
            "boolean": st.BooleanType(), "double": st.DoubleType(), "float": st.FloatType(),
            "date": st.DateType(), "binary": st.BinaryType(),
            "timestamp": st.TimestampType(), "timestamp_ntz": st.TimestampNTZType()}[sql]


def run(binlog: str, end: int, out: str, typed: bool, prof: Any = None
        ) -> tuple[float, list[Any]]:
    """One decode task over [4, end) writing under ``out``: (CPU seconds, its records);
    ``prof``: a cProfile.Profile to run it under."""
    tables = {name: TableOut(f"{out}/{name}", schema_of(split_fields(cols)),
                               _partition(part))
              for name, (cols, part) in T.DDL.items()
              if name in (T.ROW_CHANGES, T.TRANSACTIONS, T.STATEMENTS, T.XA_PREPARES,
                          T.STREAM_FACTS)}
    outs = typed_outs(binlog, end, out, tables) if typed else {}
    sink = DataSink(tables, "bench", "run1", attempt="a", typed=outs)
    name = Path(binlog).name
    task = X.RangeTask(binlog, name, file_seq(name), 4, end, 0, False)
    n = iter(range(1 << 30))

    def flush(recs: list[Any]) -> list[Any]:
        kept = sink.write_records(f"t-{next(n)}", name, recs)
        recs.clear()
        return kept

    gc.collect()
    gc.disable()  # as decode_tasks_arrow does
    t0 = time.process_time()
    if prof is not None:
        prof.enable()
    try:
        records = X.decode_range(task, flush, sink.flush_bytes)
    finally:
        if prof is not None:
            prof.disable()
        gc.enable()
    return time.process_time() - t0, records


def _relative(rec: Any, out: str) -> Any:
    """A record with the run's directory taken out of the paths it names."""
    if isinstance(rec, dict):
        return {k: v.replace(out, "") if isinstance(v, str) else v for k, v in rec.items()}
    return rec


def _files(d: str) -> dict[str, Any]:
    return {str(p.relative_to(d)): p for p in sorted(Path(d).rglob("*.parquet"))}


def compare(a: str, b: str) -> list[str]:
    """What differs between two dumps (empty: the same output)."""
    bad = []
    with open(f"{a}/records.pkl", "rb") as f1, open(f"{b}/records.pkl", "rb") as f2:
        ra, rb = pickle.load(f1), pickle.load(f2)
    if ra != rb:
        bad.append(f"records differ ({len(ra)} vs {len(rb)})")
    fa, fb = _files(a), _files(b)
    if set(fa) != set(fb):
        bad.append(f"files differ: {sorted(set(fa) ^ set(fb))[:5]}")
    for k in sorted(set(fa) & set(fb)):
        ta, tb = pq.read_table(fa[k]), pq.read_table(fb[k])
        if not ta.equals(tb, check_metadata=True):
            bad.append(f"{k}: contents differ")
    return bad


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binlog", default="/tmp/perf-corpus-xl/mariadb-bin.000003")
    ap.add_argument("--mb", type=int, default=60)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-typed", action="store_true")
    ap.add_argument("--dump")
    ap.add_argument("--compare")
    ap.add_argument("--profile", type=int, default=0)
    args = ap.parse_args()
    end = find_end(args.binlog, args.mb)
    print(f"range 4..{end} of {args.binlog}", flush=True)
    times = []
    last = None
    for i in range(1 if args.profile else args.repeat):
        out = tempfile.mkdtemp(prefix="profile-range-")
        prof = cProfile.Profile() if args.profile else None
        secs, records = run(args.binlog, end, out, not args.no_typed, prof)
        if prof is not None:
            pstats.Stats(prof).sort_stats("tottime").print_stats(args.profile)
            pstats.Stats(prof).sort_stats("cumulative").print_stats(args.profile)
        times.append(secs)
        print(f"run {i + 1}: {secs:.2f} s CPU, {len(records)} records", flush=True)
        if last is not None:
            shutil.rmtree(last)
        last = out
        with open(f"{out}/records.pkl", "wb") as f:
            # the records name the data files by their paths: the run's directory out
            pickle.dump([(k, _relative(r, out)) for k, r in records], f)
        del records
    print(f"best of {len(times)}: {min(times):.2f} s CPU")
    assert last is not None
    if args.compare:
        bad = compare(args.compare, last)
        print("output: SAME as " + args.compare if not bad else
              "output DIFFERS:\n  " + "\n  ".join(bad[:20]))
    if args.dump:
        shutil.rmtree(args.dump, ignore_errors=True)
        shutil.move(last, args.dump)
    else:
        shutil.rmtree(last)


if __name__ == "__main__":
    main()
