"""Nightly loads given the whole archive directory: the files loaded before are skipped, the
new ones loaded, and the lake ends as one load of every file would leave it.

A load given files it loaded before (``binlake load /archive/db1/`` every night, the skipped
files among the given) builds its schema history from the DDL of every file given; it
stored the versions of the skipped files again beside the ones their own run stored (every
night's load doubled them: ``schema_history`` grew by all of the source's versions a night).

Input: real MariaDB binlogs (conftest's ``alltypes_stream``: every column type, DDL, XA
across rotations), the first half loaded, then the whole directory; compared cell by cell
(``tests/lake_dump.py``) with one load of every file (``alltypes_clean``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from .lake_dump import diff_lakes, dump

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.integration]

pytest.importorskip("pyspark")
pytest.importorskip("pyiceberg")


def _load(home: Path, source: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BINLAKE_")}
    env["BINLAKE_HOME"] = str(home)
    done = subprocess.run([sys.executable, "-m", "binlake.cli", "load", "--master", "local[2]",
                           str(source)], env=env, capture_output=True, text=True, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]


def test_whole_archive_given_each_night(alltypes_stream: Path,
                                        alltypes_clean: tuple[Path, float, Any],
                                        tmp_path: Path) -> None:
    files = sorted(alltypes_stream.iterdir())
    assert len(files) >= 4
    first = tmp_path / "first-half"
    first.mkdir()
    for f in files[:len(files) // 2]:
        shutil.copyfile(f, first / f.name)
    home = tmp_path / "lake"
    _load(home, first)
    _load(home, alltypes_stream)  # the first half skipped, the rest loaded

    got, want = dump(home), alltypes_clean[2]
    history = got["schema_history"]
    keys = Counter(tuple(c for c in row if c[0] in ("db", "tbl", "start_seq", "start_pos",
                                                     "change", "incarnation"))
                   for row in history.elements())
    assert all(n == 1 for n in keys.values()), [k for k, n in keys.items() if n > 1]
    assert history == want["schema_history"]
    # every other table as one load of all files leaves it, but for what depends on where
    # the files were read from and how they were cut into decode ranges
    same = {t: rows for t, rows in got.items()
            if t not in ("files", "stream_facts", "validation_results")}
    assert not diff_lakes({t: want[t] for t in same if t in want}, same)
    assert set(same) == set(want) - {"files", "stream_facts", "validation_results"}
