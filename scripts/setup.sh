#!/usr/bin/env bash
# Installs what npusim itself needs on a fresh Debian machine, then builds and installs npusim.
# Only what the main job runs: the test extras are installed by scripts/setup-tests.sh.
# Idempotent and quick when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v ninja >/dev/null || need_apt+=(ninja-build)
command -v cmake >/dev/null || need_apt+=(cmake)
command -v ccache >/dev/null || need_apt+=(ccache)
command -v g++ >/dev/null || need_apt+=(g++)
if ((${#need_apt[@]})); then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}"
fi

PYTHON="${PYTHON:-python3}"
# torch is pinned exactly: a looser pin would download a multi-GB CUDA build.
if ! "$PYTHON" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '2.13.0')" 2>/dev/null; then
  "$PYTHON" -m pip install -q "torch==2.13.0"
fi
"$PYTHON" -c "import scikit_build_core" 2>/dev/null || "$PYTHON" -m pip install -q "scikit-build-core>=0.10"
# plotly draws the HTML report (npusim report); libcst runs npusim migrate; numpy is PyTorch's
# optional companion (without it every `import torch` warns "Failed to initialize NumPy").
for module in plotly libcst numpy; do
  "$PYTHON" -c "import $module" 2>/dev/null || "$PYTHON" -m pip install -q "$module"
done

# Rebuild only when the sources changed since the last install (ninja and
# ccache make the rebuild incremental anyway; this skips pip entirely).
stamp="build/.installed-$(git rev-parse HEAD 2>/dev/null || echo unknown)-$(git status --porcelain 2>/dev/null | md5sum | cut -c1-8)"
if [ ! -f "$stamp" ] || ! "$PYTHON" -c "import npusim._C" 2>/dev/null; then
  "$PYTHON" -m pip install -q --no-build-isolation --no-deps .
  mkdir -p build && rm -f build/.installed-* && touch "$stamp"
fi
