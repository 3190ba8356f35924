"""The checks' severities and families: what the report needs of the suite, without
importing Great Expectations (seconds of imports, done meanwhile:
:func:`binlake.quality.run.validate`)."""

ERROR = "error"
WARNING = "warning"
FAMILIES = ("grammar", "positions", "integrity", "gtid", "transaction_length", "xa",
            "reconciliation")
