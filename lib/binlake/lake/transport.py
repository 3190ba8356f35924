"""Arrow transport of a decode task's records (mapInArrow): the wide record batches
(``WIDE_FIELDS``: a row change as typed columns, any other record as JSON text in ``meta``)
that leave the executors' Python workers (:func:`wide_batches`), and the schema of the decode
tasks' rows (``TASK_SCHEMA``).
"""

from __future__ import annotations

from typing import Any

import orjson

from .records import (
    CHANGE,
    XA_PREPARE,
)

# Row changes (the bulk) travel as typed columns; every other kind rides as JSON text in
# `meta` (parsed in Spark with from_json or on the driver): few columns, few Python appends.
CHANGE_FIELDS: list[tuple[str, str]] = [
    ("txn_id", "string"), ("gtid", "string"), ("order_seq", "int"), ("order_pos", "bigint"),
    ("order_idx", "int"), ("commit_us", "bigint"), ("db", "string"), ("tbl", "string"),
    ("op", "string"), ("before", "string"), ("after", "string"), ("pk", "string"),
    ("statement", "string"), ("statement_pos", "bigint"), ("file", "string"),
    ("pos", "bigint"), ("row", "int"), ("payload_index", "int"),
    ("statement_payload_index", "int"),
]


WIDE_FIELDS: list[tuple[str, str]] = [("kind", "string"), *CHANGE_FIELDS, ("meta", "string")]


WIDE_SCHEMA = ", ".join(f"`{n}` {t}" for n, t in WIDE_FIELDS)


TASK_SCHEMA = ("uri STRING, file STRING, seq INT, start BIGINT, `end` BIGINT, `index` INT, "
               "last_in_file BOOLEAN, nontransactional ARRAY<STRING>, engines ARRAY<STRING>, "
               "last_of_file BOOLEAN, newest BOOLEAN")


_BATCH_ROWS = 8192


_BATCH_BYTES = 32 << 20  # also cut a batch at ~32 MB of text (Arrow buffers stay small)


_CHANGE_NAMES = [n for n, _ in CHANGE_FIELDS]


def _arrow_schema() -> Any:
    import pyarrow as pa

    types = {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64()}
    return pa.schema([(n, types[t]) for n, t in WIDE_FIELDS])


# where an XA PREPARE's changes (``state``), primary keys (``pks``), file and position ride
_PREP_SLOTS = {n: i for i, n in enumerate(n for n, _ in CHANGE_FIELDS)
               if n in ("before", "after", "file", "pos")}


def wide_batches(records: Any) -> Any:
    """(kind, record) pairs -> Arrow record batches of WIDE_FIELDS.  A CHANGE record is a
    :func:`change_tuple` or a :func:`change_record` dict; any other kind rides as JSON in
    ``meta``, but an XA_PREPARE's ``state`` and ``pks``, which ride in ``before`` and
    ``after`` (where a change's images go), with its ``prepare_file`` and ``prepare_pos`` in
    ``file`` and ``pos``: the driver reads every PREPARE's metadata and a few PREPAREs'
    changes, which Spark then finds without parsing JSON (:func:`prepares_frame`).  Rows are
    built as tuples and transposed once per batch (zip(*rows)), not appended column by
    column."""
    import pyarrow as pa

    schema = _arrow_schema()
    types = [schema.field(i).type for i in range(len(schema))]
    dumps = orjson.dumps
    blank = (None,) * len(CHANGE_FIELDS)

    def batch(rows: list[tuple[Any, ...]]) -> Any:
        return pa.RecordBatch.from_arrays(
            [pa.array(col, type=typ) for col, typ in zip(zip(*rows), types)], schema=schema)

    rows: list[tuple[Any, ...]] = []
    size = 0
    for kind, rec in records:
        if kind == CHANGE:
            if isinstance(rec, dict):
                rec = tuple(rec[c] for c in _CHANGE_NAMES)
            rows.append((kind, *rec, None))
            size += len(rec[9] or "") + len(rec[10] or "")
        elif kind == XA_PREPARE:
            slots = [None] * len(CHANGE_FIELDS)
            slots[_PREP_SLOTS["before"]] = rec["state"]
            slots[_PREP_SLOTS["after"]] = rec["pks"]
            slots[_PREP_SLOTS["file"]] = rec["prepare_file"]
            slots[_PREP_SLOTS["pos"]] = rec["prepare_pos"]
            m = dumps({k: v for k, v in rec.items() if k not in ("state", "pks")},
                      default=str).decode()
            rows.append((kind, *slots, m))
            size += len(m) + len(rec["state"] or "") + len(rec["pks"] or "")
        else:
            m = dumps(rec, default=str).decode()
            rows.append((kind, *blank, m))
            size += len(m)
        if len(rows) >= _BATCH_ROWS or size >= _BATCH_BYTES:
            yield batch(rows)
            rows = []
            size = 0
    if rows:
        yield batch(rows)


def meta_of(row: Any) -> dict[str, Any]:
    return dict(orjson.loads(row["meta"]))


def prepares_frame(records: Any) -> Any:
    """The XA PREPAREs of a DataFrame of wide records (:func:`wide_batches`): their
    ``prepare_file``, ``prepare_pos``, ``state`` and ``pks`` columns."""
    from pyspark.sql import functions as F

    return records.where(F.col("kind") == XA_PREPARE).select(
        F.col("file").alias("prepare_file"), F.col("pos").alias("prepare_pos"),
        F.col("before").alias("state"), F.col("after").alias("pks"))


def prepare_of(batch: Any, i: int, meta: dict[str, Any]) -> dict[str, Any]:
    """The whole XA_PREPARE record of row ``i`` of a wide record batch (``meta``: its
    parsed ``meta``), as the decode task made it."""
    return {**meta, "state": batch.column("before")[i].as_py(),
            "pks": batch.column("after")[i].as_py()}
