"""Reading a schema history back from the JSON Lines ``binlake schema`` writes.

``binlake schema`` prints one ``{"version": {...}}`` line per version (position order), then
one ``{"finding": ...}`` line per finding.  :func:`load_history` reads the version lines into
a :class:`SchemaHistory` (:meth:`Version.from_dict`, the inverse of ``to_dict``); finding
lines and blank lines are skipped.  A line that is not JSON, not an object, neither a
version nor a finding, or a version that cannot be read is a :class:`SchemaFileError` naming
the file and the line number."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable

from .model import SchemaHistory, Version


class SchemaFileError(ValueError):
    """A line of a schema history file that cannot be read: ``file``, ``line`` (1-based;
    None when the file itself could not be opened) and what is wrong."""

    def __init__(self, message: str, file: str | None, line: int | None = None) -> None:
        where = file or "<lines>"
        if line is not None:
            where = f"{where}:{line}"
        super().__init__(f"{where}: {message}")
        self.file = file
        self.line = line
        self.reason = message


def load_history(source: str | os.PathLike[str] | Iterable[str], *,
                 name: str | None = None) -> SchemaHistory:
    """The :class:`SchemaHistory` of a ``binlake schema`` output: a path, or an iterable of
    lines (``name`` then names it in errors).  Versions are added in position order (lines
    at the same position keep the order they have in the file: a RENAME swap's versions of
    one table share its position)."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        try:
            with open(path, encoding="utf-8") as fh:
                return _read(fh, name or path)
        except OSError as exc:
            raise SchemaFileError(f"cannot read the file ({exc.strerror or exc})",
                                  name or path) from None
        except UnicodeDecodeError as exc:
            raise SchemaFileError(f"not UTF-8 text ({exc.reason})", name or path) from None
    return _read(source, name)


def _read(lines: Iterable[str], name: str | None) -> SchemaHistory:
    versions: list[tuple[int, Version]] = []
    for n, line in enumerate(lines, 1):
        text = line.strip()
        if not text:
            continue
        try:
            obj = json.loads(text)
        except ValueError as exc:
            raise SchemaFileError(f"not a JSON line ({exc})", name, n) from None
        if not isinstance(obj, dict):
            raise SchemaFileError(f"not a JSON object but {type(obj).__name__}", name, n)
        if "version" in obj:
            d = obj["version"]
            if not isinstance(d, dict):
                raise SchemaFileError("\"version\" is not an object", name, n)
            try:
                v = Version.from_dict(d)
            except KeyError as exc:
                raise SchemaFileError(f"version without {exc.args[0]!r}", name, n) from None
            except (TypeError, ValueError, AttributeError) as exc:
                raise SchemaFileError(f"not a readable version ({exc})", name, n) from None
            versions.append((n, v))
        elif "finding" in obj:
            continue
        else:
            raise SchemaFileError("neither a \"version\" nor a \"finding\" line (is this "
                                  "the output of binlake schema?)", name, n)
    versions.sort(key=lambda nv: nv[1].start)  # stable: a position's lines keep their order
    h = SchemaHistory()
    for n, v in versions:
        try:
            h.add(v)
        except ValueError as exc:  # (cannot happen after the sort; kept as a typed error)
            raise SchemaFileError(str(exc), name, n) from None
    return h
