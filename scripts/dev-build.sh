#!/usr/bin/env bash
# Developer build: compiles the C++ layers into build/dev and puts the
# extension next to the Python sources, so that `PYTHONPATH=python` (and the
# test suites' conftest) use the working tree without a pip install.
# Serialized with a lock: several people may build from one checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
exec 9>/tmp/npusim-dev-build.lock
flock 9
if [ ! -f build/dev/build.ninja ]; then
  cmake -S . -B build/dev -G Ninja -DNPUSIM_BUILD_BACKEND=ON -DNPUSIM_BUILD_TESTS=OFF \
    -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$(command -v python3)" >/dev/null
fi
ninja -C build/dev -j"${JOBS:-2}"
# Replace by rename, never in place: a running process keeps its mapping of the old file.
for library in build/dev/csrc/backend/_C*.so build/dev/csrc/backend/libnpusim_backend.so \
    build/dev/csrc/runtime/libnpusim_runtime.so \
    build/dev/csrc/ops/libnpusim_ops.so build/dev/csrc/compile/libnpusim_compile.so \
    build/dev/csrc/distributed/_distributed_C*.so build/dev/csrc/profiler/libnpusim_profiler.so; do
  cp "$library" "python/npusim/.$(basename "$library").new"
  mv -f "python/npusim/.$(basename "$library").new" "python/npusim/$(basename "$library")"
done
# The triage tools (csrc/tools: npu-smi, npusim-inspect) go where the wheel puts them.
mkdir -p python/npusim_tools/bin
for program in build/dev/csrc/tools/npu-smi build/dev/csrc/tools/npusim-inspect; do
  cp "$program" "python/npusim_tools/bin/.$(basename "$program").new"
  mv -f "python/npusim_tools/bin/.$(basename "$program").new" "python/npusim_tools/bin/$(basename "$program")"
done
# The CANN toolkit tree (csrc/acl: headers, libascendcl, set_env.sh) where the wheel puts it,
# python/npusim/cann, so that `npusim cann-home` and the AscendCL tests find it. Replaced whole.
rm -rf python/npusim/.cann.new
cp -r build/dev/cann python/npusim/.cann.new
rm -rf python/npusim/cann
mv python/npusim/.cann.new python/npusim/cann
