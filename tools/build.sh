#!/usr/bin/env bash
# Configures and builds genc/genrun into build/ (Release, Ninja).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$BUILD" -j"$(nproc)"
