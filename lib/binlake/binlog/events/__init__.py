"""Event body decoders, one module per family, dispatched through a table.

A decoder is ``decode(ctx, body, pos) -> dict``: ``body`` is exactly the event body (common
header and checksum already stripped), ``pos`` the absolute file offset of ``body[0]`` (for
error messages).  Decoders never see the stream, so a bug in one can never misalign the
reader: the reader always resumes at the next event boundary.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..context import DecodeContext

Decoder = Callable[[DecodeContext, bytes, int], dict[str, Any]]

DECODERS: dict[int, Decoder] = {}


def register(*codes: int) -> Callable[[Decoder], Decoder]:
    def wrap(fn: Decoder) -> Decoder:
        for code in codes:
            if code in DECODERS:
                raise RuntimeError(f"event type {code} registered twice")
            DECODERS[code] = fn
        return fn

    return wrap


MODULES = ("control", "gtid", "load", "payload", "query", "rows")


def load_all() -> dict[int, Decoder]:
    """Import every decoder module (each registers itself) and return the table."""
    import importlib

    for name in MODULES:
        try:
            importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:  # TEMPORARY while the modules are being written
            if exc.name != f"{__name__}.{name}":
                raise
    return DECODERS
