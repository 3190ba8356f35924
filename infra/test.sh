#!/usr/bin/env bash
# The test command: set up (idempotent), lint, type-check, then the whole test suite,
# including the tests marked integration/slow (they start private MariaDB servers on
# 127.0.0.1 and need ../shared/corpus next to the checkout).
set -euo pipefail
cd "$(dirname "$0")/.."
bash infra/setup.sh
VENV="${BINLAKE_VENV:-.venv}"
echo "== ruff" >&2
"$VENV/bin/ruff" check lib tests bench jobs infra dags
echo "== mypy" >&2
"$VENV/bin/mypy"
echo "== pytest" >&2
set +e
# Two worker processes, each taking whole test files (a module's fixtures stay in one
# process): most tests wait on servers, JVMs and subprocesses, so two share the two cores
# (on 2026-11-28: 38 min against 63 in one process). BINLAKE_TEST_WORKERS=0 runs them in this process.
"$VENV/bin/python" -m pytest -q -p no:cacheprovider \
  -n "${BINLAKE_TEST_WORKERS:-2}" --dist loadfile "$@"
rc=$?
set -e
if [ "$rc" = 5 ]; then
  echo "pytest collected no tests" >&2
  exit 1
fi
exit "$rc"
