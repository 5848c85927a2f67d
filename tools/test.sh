#!/usr/bin/env bash
# Builds and runs every test (lit suites: IR, importer, passes, interpreter,
# parity with the Hugging Face fixtures). GPU tests skip without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure
