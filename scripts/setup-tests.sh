#!/usr/bin/env bash
# Installs what the tests need beyond npusim itself (scripts/setup.sh): GoogleTest for the C++
# suites, a headless browser for the HTML report's rendering test, pytest and its helpers, and
# transformers for the Hugging Face tests, diffusers for the Stable Diffusion estimate. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

need_apt=()
[ -f /usr/include/gtest/gtest.h ] || need_apt+=(libgtest-dev)
# Headless browser for tests/profiler/test_html_report.py; no recommended packages (they bring a desktop).
command -v chromium >/dev/null || need_apt+=(chromium fonts-dejavu-core)
if ((${#need_apt[@]})); then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}"
fi

PYTHON="${PYTHON:-python3}"
for module in pytest expecttest numpy; do
  "$PYTHON" -c "import $module" 2>/dev/null || "$PYTHON" -m pip install -q "$module"
done
# pytest-xdist runs the test files on every core (scripts/run-tests.sh).
"$PYTHON" -c "import xdist" 2>/dev/null || "$PYTHON" -m pip install -q "pytest-xdist>=3.5"
# transformers' NPU flash-attention path and the tiny Hugging Face models run in tests/ops.
"$PYTHON" -c "import transformers" 2>/dev/null || "$PYTHON" -m pip install -q "transformers==5.23.0" \
  || echo "setup-tests: transformers not installed; its tests in tests/ops are skipped"
# diffusers builds Stable Diffusion 2.1's UNet and VAE for examples/sd21_estimate.py (the Diffusion row of
# bench/validate_performance.py and tests/perf/test_sd21_estimate.py; both skip without it).
"$PYTHON" -c "import diffusers" 2>/dev/null || "$PYTHON" -m pip install -q "diffusers==0.42.1" \
  || echo "setup-tests: diffusers not installed; the Diffusion validation row and its test are skipped"
