"""The ``binlake`` command line: one module per family of verbs (:mod:`.decode`, :mod:`.schema`,
:mod:`.lake`, :mod:`.validate`, :mod:`.archive`), this one builds the parser and runs a verb.

Every failure ends as one line on stderr, never a traceback (``--debug`` adds the stack):
the library's typed errors say what and where themselves (a binlog's file and byte offset, a
setting's key, an archive's path), and :func:`exit_code` maps them to the exit status:

==========================================================  ======
``UsageError`` (``binlake: usage error: ...``)              2
``ConfigError``: a setting, named by its key                2
``BinlogError`` (``SourceError``, ...): a file or object    1
``ArchiveError``, ``ObjectStoreError``, ``SparkSetupError``  1
``CliError``: what a verb says itself                       its own
anything else (last resort: type and first line)           1
==========================================================  ======
"""

from __future__ import annotations

import argparse
import logging
import sys
import traceback
from collections.abc import Sequence

from .. import __version__
from . import archive, decode, lake, schema, validate
from .common import CliError, Parser, UsageError, is_spark_error, one_line


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="binlake", description="MySQL/MariaDB binary logs to an Iceberg lakehouse.")
    p.add_argument("--version", action="version", version=f"binlake {__version__}")
    p.add_argument("-q", "--quiet", action="store_true", help="no warnings on stderr")
    p.add_argument("--debug", action="store_true",
                   help="on an error, print the Python stack as well as the one-line message")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    decode.add_parsers(sub)
    schema.add_parsers(sub)
    lake.add_parsers(sub)
    validate.add_parsers(sub)
    archive.add_parsers(sub)
    return p


def exit_code(exc: BaseException) -> tuple[int, str]:
    """(exit status, the one line after ``binlake: error: ``) for an error a verb raised."""
    from ..archive import ArchiveError
    from ..archive.objectstore import ObjectStoreError
    from ..binlog.errors import BinlogError
    from ..config import ConfigError
    from ..lake.spark import SparkSetupError

    if isinstance(exc, CliError):
        return exc.code, str(exc)
    if isinstance(exc, ConfigError):
        return 2, str(exc)
    if isinstance(exc, (BinlogError, ArchiveError, ObjectStoreError, SparkSetupError)):
        return 1, (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if is_spark_error(exc):
        return 1, f"Spark: {one_line(exc)}"
    if isinstance(exc, OSError) and exc.strerror:
        where = f"{exc.filename}: " if exc.filename else ""
        return 1, f"{where}{exc.strerror}"
    return 1, (f"unexpected {type(exc).__name__}: {one_line(exc)} (a bug: please report it "
               "with the output of binlake --debug ...)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR if args.quiet else logging.WARNING,
                        format="binlake: warning: %(message)s")
    try:
        return int(args.func(args))
    except UsageError as exc:
        print(f"binlake: usage error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader of our stdout went away (e.g. `| head`): not an error of ours.
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        code, line = exit_code(exc)
        if args.debug:
            traceback.print_exc()
        print(f"binlake: error: {line}", file=sys.stderr)
        return code
