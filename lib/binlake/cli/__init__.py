"""The ``binlake`` command line: one module per family of verbs (:mod:`.decode`,
:mod:`.lake`, :mod:`.validate`, :mod:`.archive`), this one builds the parser and runs a verb."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from .. import __version__
from . import archive, decode, lake, validate
from .common import Parser, UsageError


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="binlake", description="MySQL/MariaDB binary logs to an Iceberg lakehouse.")
    p.add_argument("--version", action="version", version=f"binlake {__version__}")
    p.add_argument("-q", "--quiet", action="store_true", help="no warnings on stderr")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    decode.add_parsers(sub)
    lake.add_parsers(sub)
    validate.add_parsers(sub)
    archive.add_parsers(sub)
    return p


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
