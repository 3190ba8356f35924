"""What every verb of the command line shares: the usage error, the parser class, stdout."""

from __future__ import annotations

import argparse
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
