"""The staging area of load runs: the per-run directory executors write data files under before
the commits, and the cleanup of stale staging directories left by dead runs.
"""

from __future__ import annotations

import os
import time
import uuid
from typing import Any

from ..config import Settings


def _stage_root(settings: Settings, run_id: str, local_master: bool = False) -> str | None:
    """A directory for this run's staged mirror deltas (removed after the run): under
    ``staging_dir`` when set; else under a local warehouse, or, for a local master
    (``local_master``: driver and executors on this machine) with a remote warehouse, under
    ``home``; else None (nothing staged: Spark here reads no s3, and a cluster's
    executors share no local directory)."""
    from .sink import fs_path  # (a local path or file: URI as a path)

    base = fs_path(settings.staging_dir) if settings.staging_dir else None
    if base is None:
        wh = settings.warehouse_resolved
        if "://" not in wh or wh.startswith("file:"):
            base = os.path.join(fs_path(wh), "_binlake_staging")
        elif local_master:
            base = os.path.join(str(settings.home_path), "_binlake_staging")
        else:
            return None
    return os.path.join(base, f"{run_id}-{uuid.uuid4().hex[:8]}")


def local_master(spark: Any) -> bool:
    """Whether ``spark`` runs its executors in the driver's JVM (``local``, ``local[N]``)."""
    return str(spark.sparkContext.master).startswith("local")


# A staging directory nothing has written to for this long is a killed run's: removed.
STAGE_MAX_AGE = 2 * 86400.0


def clean_staging(stage_root: str, now: float | None = None) -> list[str]:
    """Remove this run's staging directory, the ones killed runs left next to it (nothing
    in them written for ``STAGE_MAX_AGE`` seconds: a live run writes there while it
    decodes) and their parent when that leaves it empty.  Best effort; returns the
    directories removed besides this run's."""
    import contextlib
    import shutil

    shutil.rmtree(stage_root, ignore_errors=True)
    parent = os.path.dirname(stage_root.rstrip("/"))
    now = time.time() if now is None else now
    removed: list[str] = []
    try:
        siblings = os.listdir(parent)
    except OSError:
        return removed
    for name in siblings:
        path = os.path.join(parent, name)
        try:
            newest = max([os.path.getmtime(path)] + [
                os.path.getmtime(os.path.join(d, f))
                for d, dirs, files in os.walk(path) for f in (*dirs, *files)])
        except OSError:
            continue
        if now - newest > STAGE_MAX_AGE:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    with contextlib.suppress(OSError):
        os.rmdir(parent)  # only when empty
    return removed
