"""The schema history: DDL in the binlog -> versioned table schemas (docs/schema.md)."""

from .build import BuildResult, build_history
from .ddl import apply_ddl
from .jsonl import SchemaFileError, load_history
from .model import Finding, SchemaColumn, SchemaHistory, Version
from .names import TableMapNamer
from .seed import from_information_schema, from_mysqldump
from .types import binlog_type, check_table_map

__all__ = ["BuildResult", "Finding", "SchemaColumn", "SchemaFileError", "SchemaHistory",
           "TableMapNamer", "Version", "apply_ddl", "binlog_type", "build_history",
           "check_table_map", "from_information_schema", "from_mysqldump", "load_history"]
