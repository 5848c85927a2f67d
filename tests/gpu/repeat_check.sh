#!/usr/bin/env bash
# Run-to-run determinism of one genrun configuration on the GPU: the tiny
# Llama with a 151,936-token vocabulary of gpu_test.sh's token checks, six
# prompts, the given genrun flags, N runs under each environment variant;
# prints each variant's distinct output checksums (one = deterministic).
# On the GPU machine after tools/pack.sh here.
#
#   N=4 bash tests/gpu/repeat_check.sh "--sequence-bias ..." "" "GENC_CUDA_GEMV_FUSION=0"
#   PLAN_ARGS="--max-batch 1" N=4 bash tests/gpu/repeat_check.sh "" ""
set -u
cd "$(dirname "$0")/../.."
. tools/packed.sh
W=$(mktemp -d)
ARGS=$1
shift
[ $# -gt 0 ] || set -- ""
python3 tools/export.py --arch llama --tiny --set vocab_size=151936 --scale 2 --seed 4 --out "$W/m" > "$W/export.log" 2>&1
# shellcheck disable=SC2086
"$BIN/genc" compile "$W/m/model.onnx" -o "$W/m.plan" ${PLAN_ARGS:---max-batch 8 --max-beams 3} > /dev/null 2>&1
printf '{"input_ids": [5, 6, 7]}\n{"input_ids": [9, 10]}\n{"input_ids": [11, 12, 13, 14]}\n{"input_ids": [20]}\n{"input_ids": [30, 31]}\n{"input_ids": [40, 41, 42]}\n' > "$W/p.jsonl"
set -f
for v in "$@"; do
  sums=()
  for ((i = 0; i < ${N:-4}; i++)); do
    # shellcheck disable=SC2086
    env $v "$BIN/genrun" "$W/m.plan" --device cuda --input "$W/p.jsonl" --max-new-tokens 24 $ARGS > "$W/out.$i" 2>&1
    sums+=("$(md5sum < "$W/out.$i" | cut -c1-8)")
  done
  printf '%-40s %s\n' "${v:-(default)}" "$(printf '%s\n' "${sums[@]}" | sort | uniq -c | tr '\n' ' ')"
  [ -n "${SHOW-}" ] && cat "$W/out.0" "$W/out.1" | cut -c1-200
done
