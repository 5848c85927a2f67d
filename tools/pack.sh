#!/usr/bin/env bash
# Packs the built tools for the GPU machine (Ubuntu 24.04, CUDA 13, no LLVM or
# protobuf installed): checks they link neither dynamically, then tars them.
# --no-nvrtc leaves NVRTC out (~45 MB gzipped, less in xz) for a machine whose CUDA toolkit
# has it (run there with LD_LIBRARY_PATH=/usr/local/cuda/lib64).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
ship_nvrtc=1
[ "${1-}" = "--no-nvrtc" ] && ship_nvrtc=0
bash tools/build.sh
mkdir -p dist
bins=()
for b in genc genrun gpucheck genppl; do
  [ -x "$BUILD/tools/$b" ] || continue
  if ldd "$BUILD/tools/$b" | grep -E 'libLLVM|libprotobuf|libonnx'; then
    echo "pack: $b links LLVM/protobuf/onnx dynamically" >&2
    exit 1
  fi
  bins+=("$BUILD/tools/$b")
done
# NVRTC: where the toolkit has no static NVRTC, genc and gpucheck load the
# shared one; ship it beside them (their RPATH has $ORIGIN).
libs=()
for b in "${bins[@]}"; do
  while read -r lib; do
    [ -n "$lib" ] && [[ " ${libs[*]-} " != *" $lib "* ]] && libs+=("$lib")
  done < <(ldd "$b" | awk '/libnvrtc/ {print $3}')
done
[ $ship_nvrtc = 1 ] || libs=()
if [ ${#libs[@]} -gt 0 ]; then
  for l in "${libs[@]}"; do
    builtins=$(ls "$(dirname "$l")"/libnvrtc-builtins.so.* 2>/dev/null | grep -v alt | head -1 || true)
    [ -n "$builtins" ] && [[ " ${libs[*]} " != *" $builtins "* ]] && libs+=("$builtins")
  done
fi
# xz: the four tools take 12 MB rather than gzip's 34 (2026-12-07), a third of
# what the GPU machine's 64 MiB of carried files allows.
rm -f dist/genc-linux-x86_64.tar.gz
tar -cf dist/genc-linux-x86_64.tar.xz -I 'xz -T0' --transform 's|.*/||' "${bins[@]}" ${libs[@]+"${libs[@]}"}
# bench/trace_step.sh's kernel tracer (a CUPTI injection library, with the
# CUPTI it was built against), where the toolkit has CUPTI.
CUDA=${CUDA_HOME:-/usr/local/cuda}
cupti=$(ls "$CUDA"/lib64/libcupti.so.* "$CUDA"/lib/libcupti.so.* 2>/dev/null | head -1 || true)
if [ -f "$CUDA/include/cupti.h" ] && [ -n "$cupti" ]; then
  mkdir -p dist/trace
  g++ -shared -fPIC -O2 -Wall -I"$CUDA/include" bench/kernel_trace.cpp "$cupti" -Wl,-rpath,'$ORIGIN' \
    -o dist/trace/libgenc_trace.so
  cp "$cupti" dist/trace/
fi
# The GGUF reader's package for gpu_test.sh's GGUF row (the GPU machine has
# numpy, pyyaml, tqdm and requests, not gguf, and no network), where pip can
# fetch it.
python3 -m pip download -q --no-deps -d dist/wheels "gguf>=0.10" 2>/dev/null ||
  echo "pack: no gguf wheel (no network?): gpu_test.sh's GGUF row will say skipped" >&2
echo "pack: dist/genc-linux-x86_64.tar.xz (${bins[*]##*/} ${libs[*]+${libs[*]##*/}})"
