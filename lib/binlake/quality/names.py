"""The checks' severities and families, and the datasets they run on: what the report and
the datasets need of the suite, without importing Great Expectations (seconds of imports,
done meanwhile: :func:`binlake.quality.run.validate`)."""

ERROR = "error"
WARNING = "warning"
FAMILIES = ("grammar", "positions", "integrity", "gtid", "transaction_length", "xa",
            "reconciliation")
STREAM_DATASETS = ("events", "files", "groups", "findings", "gtids")
LAKE_DATASETS = ("reconciliation", "mirrors")
