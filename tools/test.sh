#!/usr/bin/env bash
# Builds and runs every test (lit suites: IR, importer, passes, interpreter,
# parity with the Hugging Face fixtures). GPU tests skip without a GPU.
#
#   tools/test.sh               the regular build (build/, $BUILD_DIR)
#   tools/test.sh --sanitize    the unit and lit tests in the ASan + UBSan
#                               build (clang-14, build-fuzz/, $FUZZ_DIR; the
#                               fuzz targets live there too), every report
#                               fatal; the Python package is left out (a
#                               sanitized extension needs the ASan runtime
#                               preloaded into python)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1-}" = --sanitize ]; then
  SAN=${FUZZ_DIR:-build-fuzz}
  cmake -S . -B "$SAN" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-14 \
    -DCMAKE_CXX_COMPILER=clang++-14 -DGENC_FUZZ=ON -DGENC_PYTHON=OFF >/dev/null
  ninja -C "$SAN"
  cd "$SAN"
  # genc's kernel cache for the run's compiles: in the build tree, not $HOME.
  export GENC_KERNEL_CACHE=${GENC_KERNEL_CACHE:-$PWD/tests/kernel-cache}
  # A report aborts (SIGABRT), so that tests/tools/not.py counts it as the
  # crash it is rather than as a clean error exit; a leak exits 134 alike.
  export ASAN_OPTIONS=abort_on_error=1:exitcode=134:detect_leaks=1:${ASAN_OPTIONS-}
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1:${UBSAN_OPTIONS-}
  ctest --output-on-failure
  exit
fi
bash tools/build.sh
cd "${BUILD_DIR:-build}"
# genc's kernel cache for the run's compiles (lit, pytest): in the build tree,
# not $HOME; a fixture's kernels are compiled once for the whole run.
export GENC_KERNEL_CACHE=${GENC_KERNEL_CACHE:-$PWD/tests/kernel-cache}
ctest --output-on-failure
