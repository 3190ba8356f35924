"""Export the suite as Great Expectations JSON, one file per family, for review and for GX
tooling: ``python -m binlake.quality.export expectations/``.  The code in
:mod:`binlake.quality.suite` is the source; ``tests/test_quality_suite.py`` checks the files
are current."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from .names import FAMILIES
from .suite import checks


def family_suites() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for fam in FAMILIES:
        exps = []
        for c in checks():
            if c.family != fam:
                continue
            e = c.expectation()
            cfg = e.configuration.to_json_dict()
            cfg.pop("id", None)
            cfg.pop("rendered_content", None)
            cfg["description"] = e.description
            if hasattr(e, "unexpected_rows_query"):
                cfg["kwargs"]["unexpected_rows_query"] = e.unexpected_rows_query
            cfg["meta"] = {**cfg.get("meta", {}), "dataset": c.dataset,
                           "class": type(e).__name__}
            exps.append(cfg)
        out[fam] = {"name": f"binlake.{fam}", "expectations": exps,
                    "meta": {"generated_by": "python -m binlake.quality.export"}}
    return out


def write(dest: Path) -> list[Path]:
    dest.mkdir(parents=True, exist_ok=True)
    paths = []
    for fam, suite in family_suites().items():
        p = dest / f"{fam}.json"
        p.write_text(json.dumps(suite, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        paths.append(p)
    return paths


if __name__ == "__main__":
    for p in write(Path(sys.argv[1] if len(sys.argv) > 1 else "expectations")):
        print(p)
