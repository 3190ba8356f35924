#!/usr/bin/env python3
"""The perf corpus's workload logged with another row image (MINIMAL or NOBLOB).

``../shared/perf/make_perf_corpus.py`` logs with ``binlog_row_image=FULL``.  Many production
servers log MINIMAL (an UPDATE's before image is its key, its after image the changed
columns; a DELETE's image its key) or NOBLOB, and the lake merges such partial images into
its mirrors differently (``binlake.lake.mirror_merge``, ``binlake.lake.moves``).  This runs
the same seeded generator with that one server option changed, so that ``bench_lake.py
--corpus`` can measure the load on it:

    .venv/bin/python bench/make_image_corpus.py --image MINIMAL --out /tmp/perf-corpus-minimal
    .venv/bin/python bench/bench_lake.py --corpus /tmp/perf-corpus-minimal --skip-1core

Other arguments go to the generator (``--txns``; its default makes about 460 MB with FULL
images).  It uses the generator's own work directory and port, so it cannot run beside it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GENERATOR = ROOT.parent / "shared" / "perf" / "make_perf_corpus.py"


def main() -> int:
    args = sys.argv[1:]
    image = "MINIMAL"
    if "--image" in args:
        i = args.index("--image")
        image = args[i + 1].upper()
        del args[i:i + 2]
    if image not in ("FULL", "MINIMAL", "NOBLOB"):
        sys.exit(f"--image: FULL, MINIMAL or NOBLOB, not {image}")
    if not GENERATOR.exists():
        sys.exit(f"{GENERATOR}: not found (the shared perf generator)")
    spec = importlib.util.spec_from_file_location("make_perf_corpus", GENERATOR)
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    opts = gen.BASE_OPTS
    at = [i for i, o in enumerate(opts) if o.startswith("--binlog-row-image=")]
    if len(at) != 1:
        sys.exit(f"{GENERATOR}: no single --binlog-row-image option to replace")
    opts[at[0]] = f"--binlog-row-image={image}"
    sys.argv = [str(GENERATOR), *args]
    gen.main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
