#!/usr/bin/env bash
# The decode-step kernel's code size, registers and spills for a model, on a
# machine with the CUDA toolkit and no GPU: the kernel walks from routine to
# routine item after item, and code beyond what an SM's instruction cache
# holds is fetched again (docs/step-kernel.md, "The kernel's code size").
#
#   bash bench/step_code_size.sh [MODEL.onnx] [GENC FLAGS...]
#   # default: tests/fixtures/llama/model.onnx --dtype f16
#
# Prints one line: the size of the kernel's .text section (the routines it
# calls included), its registers, stack and spills (ptxas -v). Needs build/tools/genc (tools/build.sh), nvcc
# and readelf.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-tests/fixtures/llama/model.onnx}
shift || true
[ $# -gt 0 ] || set -- --dtype f16
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
build/tools/genc compile "$model" "$@" --gpu-arch sm_90 --emit=cuda -o "$W/k.cu"
grep -q "genc_step(const GencStepParams" "$W/k.cu" || { echo "step_code_size: the plan has no step kernel (genc inspect says why)" >&2; exit 1; }
"$NVCC" -arch=sm_90 -cubin -O3 --expt-relaxed-constexpr -Xptxas -v "$W/k.cu" -o "$W/k.cubin" > "$W/ptxas.log" 2>&1 ||
  { tail -20 "$W/ptxas.log" >&2; exit 1; }
text=$(readelf -S -W "$W/k.cubin" 2>/dev/null | awk '$2 == ".text.genc_step" || $3 == ".text.genc_step"' |
  python3 -c "import sys; l = sys.stdin.read(); print(int(l.split(']', 1)[1].split()[4], 16))")
regs=$(grep -A2 "for genc_step$" "$W/ptxas.log" | tail -2 | tr '\n' ' ' | sed 's/ptxas info *: //; s/  */ /g; s/^ //; s/ $//')
echo "genc_step: $text bytes of code; $regs"
