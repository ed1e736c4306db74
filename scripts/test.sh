#!/usr/bin/env bash
# The whole test suite: sets up what it needs (idempotent), checks style (ruff for Python,
# clang-format for C/C++), then runs pytest, which also drives the native tests (ctest
# under mpiexec). Extra arguments go to pytest, e.g. scripts/test.sh -k netbench.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test --quiet
VENV=${PETACOMM_VENV:-$PWD/.venv}
# Everything setup.sh --test installs must be there: a test whose tool is missing fails
# instead of skipping (tests/prerequisites.py). PETACOMM_REQUIRE_ALL=0 lets them skip.
export PETACOMM_REQUIRE_ALL=${PETACOMM_REQUIRE_ALL:-1}
# Open MPI refuses to run as root without these; the test scripts (never the library) set them.
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
echo "== style: ruff, clang-format"
"$VENV/bin/ruff" check python tests
"$VENV/bin/ruff" format --check python tests
git ls-files -co --exclude-standard -- '*.c' '*.cpp' '*.h' '*.hpp' | grep -v '^build/' |
  xargs -r "$VENV/bin/clang-format" --dry-run --Werror
echo "== tests"
"$VENV/bin/python" -m pytest tests "$@"
