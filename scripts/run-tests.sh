#!/usr/bin/env bash
# Every test: the GoogleTest suites of the C++ runtime, performance model and triage tools
# (CTest), then the Python suites (pytest). Sets up first (scripts/setup-tests.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-tests.sh
PYTHON="${PYTHON:-python3}"

for layer in runtime perf tools; do
  cmake -S "csrc/$layer" -B "build/$layer-tests" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "build/$layer-tests" -j2
  ctest --test-dir "build/$layer-tests" --output-on-failure -j2
done

# Run from the tests directory so that the installed npusim is imported. Test files run side by
# side, one worker per core (pytest-xdist; a file's tests stay together on one worker, since many
# share module fixtures); PYTEST_WORKERS=0 runs them in this process.
WORKERS="${PYTEST_WORKERS:-$(nproc)}"
if [ "$WORKERS" = 0 ]; then
  cd tests && exec "$PYTHON" -m pytest -q -p no:cacheprovider "$@"
fi
cd tests && exec "$PYTHON" -m pytest -q -p no:cacheprovider -n "$WORKERS" --dist loadfile "$@"
