"""``python -m binlake.orchestrate validate-json [...]``: the nightly DAG's validate step's own
process (:func:`binlake.orchestrate._validate_json`)."""

from __future__ import annotations

import sys

from . import _validate_json

if sys.argv[1:2] == ["validate-json"]:
    sys.exit(_validate_json(sys.argv[2:]))
print("usage: python -m binlake.orchestrate validate-json [...]", file=sys.stderr)
sys.exit(2)
