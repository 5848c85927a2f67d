#!/usr/bin/env bash
# Configures and builds genc/genrun into build/ (Release, Ninja), then
# installs the Python package genc for python3 ($PYTHON) as a wheel, unless
# that build is installed already (GENC_PY_INSTALL=0: never).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
PY=${PYTHON:-python3}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$(command -v "$PY")" >/dev/null
ninja -C "$BUILD" -j"$(nproc)"
if [ -d "$BUILD/python/genc" ] && [ "${GENC_PY_INSTALL:-1}" != 0 ]; then
  "$PY" tools/make_wheel.py "$BUILD/python" "$BUILD/dist" --install
fi
