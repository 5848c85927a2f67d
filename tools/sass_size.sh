#!/usr/bin/env bash
# SASS instructions per kernel of a model's generated CUDA, here (no GPU):
# genc --emit=cuda, nvcc to an sm_90 cubin, cuobjdump's listing counted.
# Kernels a block runs once (the attention chain's) pay for every
# instruction they fetch (docs/performance.md, session 15), so code size is
# a number to watch beside their timings. cuobjdump is not in the toolkit
# here: it comes from PyPI's nvidia-cuda-cuobjdump wheel, with the
# nvdisasm it runs, unpacked once into CACHE (default ~/.cache/genc-sass).
#
#   bash tools/sass_size.sh tests/fixtures/llama/model.onnx [GENC_FLAGS...]
#   GENC=/tmp/other/genc bash tools/sass_size.sh M.onnx --dtype f16   # another genc
#   KERNELS='attn_0_(decode|merge)' bash tools/sass_size.sh M.onnx   # those only
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: tools/sass_size.sh MODEL [genc flags]" >&2; exit 2; }
model=$1
shift
GENC=${GENC:-build/tools/genc}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
CACHE=${CACHE:-$HOME/.cache/genc-sass}
objdump=$CACHE/nvidia/cu13/bin/cuobjdump
if [ ! -x "$objdump" ] || [ ! -x "${objdump%/*}/nvdisasm" ]; then
  mkdir -p "$CACHE"
  for pkg in cuobjdump nvdisasm; do
    pip download --no-deps -q "nvidia-cuda-$pkg" -d "$CACHE/wheel"
    python3 -m zipfile -e "$CACHE"/wheel/nvidia_cuda_$pkg-*.whl "$CACHE"
  done
  chmod +x "$objdump" "${objdump%/*}/nvdisasm"
fi
export PATH=${objdump%/*}:$PATH
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
[ $# -gt 0 ] || set -- --dtype f16
"$GENC" compile "$model" --emit=cuda -o "$W/k.cu" --quiet "$@"
"$NVCC" -cubin -arch sm_90 -std=c++17 --expt-relaxed-constexpr -w "$W/k.cu" -o "$W/k.cubin"
"$objdump" -sass "$W/k.cubin" > "$W/k.sass"
# A kernel's listing starts at its "Function :" line; an instruction line
# starts with its /*offset*/.
awk -v want="${KERNELS:-.}" '
  /Function :/ { name = $3; if (name ~ want) order[++n] = name; next }
  /^ +\/\*[0-9a-f]+\*\/ / && name ~ want { ins[name]++; if ($0 ~ /CALL\./) calls[name]++ }
  END {
    printf "%-56s %8s %6s\n", "kernel", "instrs", "calls"
    for (i = 1; i <= n; ++i) printf "%-56s %8d %6d\n", order[i], ins[order[i]], calls[order[i]]
  }' "$W/k.sass"
