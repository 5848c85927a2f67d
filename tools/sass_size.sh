#!/usr/bin/env bash
# SASS instructions per kernel of a model's plan, here (no GPU): genc's own
# sm_90 cubin (NVRTC, the plan's options) taken out of the plan, and
# cuobjdump's listing of it counted.
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
"$GENC" compile "$model" --gpu-arch sm_90 -o "$W/m.plan" --quiet "$@"
# The plan: a 48-byte header (JSON and blob offsets and sizes), the JSON
# (kernels.cubins: arch, offset into the blob, bytes), the blob.
python3 - "$W/m.plan" "$W/k.cubin" <<'PY'
import json, struct, sys
d = open(sys.argv[1], "rb").read()
json_off, json_size, blob_off, _ = struct.unpack("<4Q", d[16:48])
cubins = [c for c in json.loads(d[json_off:json_off + json_size]).get("kernels", {}).get("cubins", []) if c["arch"] == "sm_90"]
if not cubins:
    sys.exit("sass_size: the plan has no sm_90 cubin (genc without NVRTC?)")
c = cubins[0]
open(sys.argv[2], "wb").write(d[blob_off + c["offset"]:blob_off + c["offset"] + c["bytes"]])
PY
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
