#!/usr/bin/env bash
# The main job on embedded defaults (see infra/demo.py): set up, then run it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash infra/setup.sh
exec "${BINLAKE_VENV:-.venv}/bin/python" infra/demo.py "$@"
