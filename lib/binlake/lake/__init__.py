"""The lake: binlogs -> Iceberg tables through Spark (decode on the executors), readable with
Spark SQL, pyiceberg, DuckDB and pandas."""
