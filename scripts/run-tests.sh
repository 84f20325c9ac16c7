#!/usr/bin/env bash
# Every test: the C++ runtime's GoogleTest suite (CTest), then the Python
# suite (pytest). Sets up first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
PYTHON="${PYTHON:-python3}"

cmake -S csrc/runtime -B build/runtime-tests -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/runtime-tests -j2
ctest --test-dir build/runtime-tests --output-on-failure -j2

# Run from the tests directory so that the installed npusim is imported.
cd tests && exec "$PYTHON" -m pytest -q -p no:cacheprovider "$@"
