#!/usr/bin/env bash
# Server soak: 10,000 requests (streamed, plain, abandoned mid-stream, bad)
# through one `genrun serve` process on the bundled model (models/tiny-gpt2),
# on the CPU: every answer checked, resident memory flat within 5% after the
# first 1,000 requests, no slot or queue entry left at the end, SIGTERM ends
# it with status 0. The checks and figures: tests/soak/serve_soak.py.
#
#   tests/soak/serve_soak.sh [serve_soak.py options: --requests N --clients N --seed N]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD_DIR:-build}
[ -x "$BUILD/tools/genrun" ] || bash tools/build.sh
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
"$BUILD/tools/genc" compile models/tiny-gpt2 -o "$W/tiny.plan" --max-batch 16 --max-beams 2 --max-length 128 --quiet
python3 tests/soak/serve_soak.py "$BUILD/tools/genrun" "$W/tiny.plan" "$@"
