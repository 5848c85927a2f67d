#!/usr/bin/env bash
# Packs the built tools for the GPU machine (Ubuntu 24.04, CUDA 13, no LLVM or
# protobuf installed): checks they link neither dynamically, then tars them.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
bash tools/build.sh
mkdir -p dist
bins=()
for b in genc genrun; do
  [ -x "$BUILD/tools/$b" ] || continue
  if ldd "$BUILD/tools/$b" | grep -E 'libLLVM|libprotobuf|libonnx'; then
    echo "pack: $b links LLVM/protobuf/onnx dynamically" >&2
    exit 1
  fi
  bins+=("$BUILD/tools/$b")
done
tar -czf dist/genc-linux-x86_64.tar.gz --transform 's|.*/||' "${bins[@]}"
echo "pack: dist/genc-linux-x86_64.tar.gz (${bins[*]##*/})"
