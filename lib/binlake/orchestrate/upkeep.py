"""The lake's weekly upkeep as a DAG step: ``binlake maintain`` (:mod:`binlake.lake.maintain`)
in a process of its own, its report back."""

from __future__ import annotations

import json
from typing import Any

from . import run_cli


class LakeBusy(RuntimeError):
    """A load holds the lake's lock: maintenance did not start (try again later)."""


def maintain(*, env: dict[str, str] | None = None) -> dict[str, Any]:
    """The weekly upkeep of the whole lake (``binlake maintain --json``, a process of its own:
    its Spark session is not the task's): per table, compaction and snapshot expiry
    (:mod:`binlake.lake.maintain`).  Returns its report; :class:`LakeBusy` when a load holds
    the lock (exit 75), RuntimeError when it or a table's upkeep failed.  ``env``: more of
    its environment (:func:`aws_env`: an S3 warehouse)."""
    res = run_cli(["maintain", "--json"], env or {})
    if res.returncode == 75:
        raise LakeBusy(f"binlake maintain: {res.stderr.strip()[-1000:]}")
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("{")]
    report_ = json.loads(lines[-1]) if lines else None
    if res.returncode != 0 or report_ is None:
        failed = [f"{t['table']}: {t['error']}" for t in (report_ or {}).get("tables", [])
                  if t.get("error")]
        raise RuntimeError(f"binlake maintain failed (exit {res.returncode}): "
                           + ("; ".join(failed) or res.stderr.strip()[-2000:]))
    return report_
