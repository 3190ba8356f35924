"""The lake: binlogs -> Iceberg tables through Spark (decode on the executors), readable with
Spark SQL, pyiceberg, DuckDB and pandas."""

from .worker import tune_worker

tune_worker()  # in a Spark Python worker: no archive re-read before every task
