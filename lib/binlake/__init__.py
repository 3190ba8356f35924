"""binlake: MySQL and MariaDB binary logs into an analyst-ready Iceberg lakehouse."""

__version__ = "0.1.0"
