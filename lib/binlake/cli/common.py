"""What every verb of the command line shares: the usage error, the parser class, stdout."""

from __future__ import annotations

import argparse
import re
import sys
from typing import IO


class UsageError(Exception):
    """A bad argument or setting: ``binlake: usage error: ...``, exit 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"binlake: usage error: {message}", file=sys.stderr)
        raise SystemExit(2)


def out() -> IO[bytes]:
    return sys.stdout.buffer


class CliError(Exception):
    """A failure the command line reports on one line, ``binlake: error: ...``, exiting
    with ``code`` (1 unless said otherwise)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


# A Java exception as Py4J / PySpark render it: "org.apache...SomeException: message", at a
# line start or after ": " / "Caused by: "; and the last line of a Python worker's traceback.
_JAVA = re.compile(r"^(?:: |Caused by: )?((?:[a-z][\w$]*\.)+[A-Z][\w$]*): ?(.*)$")
_PYTHON = re.compile(r"^([A-Z]\w*(?:Error|Exception|Exit|Interrupt)): (.*)$")


def is_spark_error(exc: BaseException) -> bool:
    """An error raised through Py4J or PySpark (the JVM's, or a Python worker's)."""
    return any(c.__module__.split(".")[0] in ("py4j", "pyspark") for c in type(exc).__mro__)


def one_line(exc: BaseException) -> str:
    """``exc`` in one line: its own message's first line; for a Java or Spark error (whose
    text is a stack trace) the outermost Java exception's message and the innermost cause,
    or a Python worker's last exception line."""
    text = str(exc).strip()
    found: list[tuple[str, str]] = []
    for line in text.splitlines():
        line = line.strip()
        m = _JAVA.match(line) or _PYTHON.match(line)
        if m and m.group(2).strip():
            found.append((m.group(1).rsplit(".", 1)[-1], m.group(2).strip()))
    if not found:
        first = text.splitlines()[0].strip() if text else ""
        return first or type(exc).__name__
    (_, top), (cls, cause) = found[0], found[-1]
    if cause == top or cause in top:
        return top
    return f"{top} (caused by {cls}: {cause})"
