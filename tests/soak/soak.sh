#!/usr/bin/env bash
# Soak: 20,000 prompts of random lengths and options through genrun on the
# bundled model (models/tiny-gpt2), on the CPU; every output line checked
# (there, valid, in order) and resident memory flat within 5% after the
# first 1,000 prompts. The checks and figures: tests/soak/soak.py.
#
#   tests/soak/soak.sh [soak.py options: --prompts N --batch N --seed N]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD_DIR:-build}
[ -x "$BUILD/tools/genrun" ] || bash tools/build.sh
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
"$BUILD/tools/genc" compile models/tiny-gpt2 -o "$W/tiny.plan" --max-batch 8 --max-beams 4 --max-length 128 --quiet
python3 tests/soak/soak.py "$BUILD/tools/genrun" "$W/tiny.plan" "$W" "$@"
